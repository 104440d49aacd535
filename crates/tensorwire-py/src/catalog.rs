//! The core's name lists and defaults as module constants, so that Python's `Literal`s,
//! click choices and sweep grids derive from them instead of copying them (one table per
//! concept; `tests/unit/test_catalog.py` checks every Python list against these).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use tensorwire_core::collectives::COLLECTIVE_NAMES;
use tensorwire_core::dtype::DTYPE_NAMES;
use tensorwire_core::engine::{DEFAULT_ITERATIONS, DEFAULT_LATENCY_S};
use tensorwire_core::gputopo;
use tensorwire_core::network::ModelKind;
use tensorwire_core::topology::{NODE_PRESETS, PLACEMENTS};

fn names<'py>(py: Python<'py>, list: &[&str]) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, list)
}

/// The node presets as `(dict, ...)` with `name`, `gpus`, `nvlink_bytes_per_s` and
/// `nic_bytes_per_s` (per GPU, per direction), the figures the simulator uses.
fn node_presets(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    let dicts = NODE_PRESETS
        .iter()
        .map(|p| {
            let d = PyDict::new(py);
            d.set_item("name", p.name)?;
            d.set_item("gpus", p.gpus)?;
            d.set_item("nvlink_bytes_per_s", p.nvlink_bytes_per_s)?;
            d.set_item("nic_bytes_per_s", p.nic_bytes_per_s)?;
            Ok(d)
        })
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, dicts)
}

/// Adds the constants to the module `m`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NETWORK_MODELS", names(py, ModelKind::NAMES)?)?;
    m.add("PLACEMENTS", names(py, PLACEMENTS)?)?;
    m.add("COLLECTIVES", names(py, COLLECTIVE_NAMES)?)?;
    m.add("DTYPES", names(py, DTYPE_NAMES)?)?;
    m.add("NODE_PRESETS", node_presets(py)?)?;
    let gpu_presets: Vec<&str> = gputopo::PRESETS.iter().map(|(name, _)| *name).collect();
    m.add("GPU_PRESETS", names(py, &gpu_presets)?)?;
    m.add("DEFAULT_ITERATIONS", DEFAULT_ITERATIONS)?;
    m.add("DEFAULT_LATENCY_S", DEFAULT_LATENCY_S)?;
    Ok(())
}
