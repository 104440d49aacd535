//! Errors at the boundary: core errors become `tensorwire._core.InputError(field, message)`,
//! and a panic is stopped here (a `RuntimeError`, never a crashed interpreter).

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use tensorwire_core::units::seconds_to_nanos;
use tensorwire_core::Error;

// Named `tensorwire.InputError`, where users import it from (it lives in `_core`).
create_exception!(
    tensorwire,
    InputError,
    PyValueError,
    "Invalid input: ``InputError(field, message)``; ``field`` names the input (``args[0]``), ``message`` says what is allowed (``args[1]``)."
);

/// Gives `InputError` its `field` and `message` attributes: read-only views of `args[0]`
/// and `args[1]` (None when missing), so `args` stays the one place they are kept; and a
/// `str()` of `field: message`, the line the CLI prints, where `ValueError`'s would be the
/// tuple `('field', 'message')`.
pub fn add_input_error_fields(py: Python<'_>) -> PyResult<()> {
    let ty = py.get_type::<InputError>();
    let property = py.import("builtins")?.getattr("property")?;
    for (name, i, doc) in [("field", 0, "The input that is wrong."), ("message", 1, "What is allowed.")] {
        let code = std::ffi::CString::new(format!("lambda e: e.args[{i}] if len(e.args) > {i} else None"))
            .expect("no NUL in the code");
        let get = py.eval(&code, None, None)?;
        ty.setattr(name, property.call1((get, py.None(), py.None(), doc))?)?;
    }
    let text = c"lambda e: f'{e.args[0]}: {e.args[1]}' if len(e.args) == 2 else ValueError.__str__(e)";
    ty.setattr("__str__", py.eval(text, None, None)?)?;
    Ok(())
}

/// The core's error as an `InputError`.
pub fn to_py(e: Error) -> PyErr {
    let Error::Invalid { field, message } = e;
    InputError::new_err((field, message))
}

/// Runs `f`, turning its error into an `InputError` and a panic into a `RuntimeError`.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(to_py),
        Err(_) => Err(PyRuntimeError::new_err("internal error in the tensorwire core (please report it)")),
    }
}

/// `seconds` as integer nanoseconds, refused (naming `field`) when negative or too large.
pub fn to_nanos(field: &str, seconds: f64) -> PyResult<u64> {
    seconds_to_nanos(field, seconds).map_err(to_py)
}
