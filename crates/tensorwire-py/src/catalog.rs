//! The core's name lists and defaults as module constants, so that Python's `Literal`s,
//! click choices and sweep grids derive from them instead of copying them (one table per
//! concept; `tests/unit/test_catalog.py` checks every Python list against these).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use tensorwire_core::collectives::COLLECTIVE_NAMES;
use tensorwire_core::dtype::DTYPE_NAMES;
use tensorwire_core::engine::{DEFAULT_ITERATIONS, DEFAULT_LATENCY_S};
use tensorwire_core::gputopo;
use tensorwire_core::network::ModelKind;
use tensorwire_core::spec::OptionInfo;
use tensorwire_core::strategy::{applies, ALIASES, HOST_OPTIONS, STRATEGIES};
use tensorwire_core::topology::spec::TOPOLOGIES;
use tensorwire_core::topology::{NODE_PRESETS, PLACEMENTS};
use tensorwire_core::units;

use crate::error::guarded;

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

fn options_list<'py>(py: Python<'py>, options: &[OptionInfo]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for o in options {
        let d = PyDict::new(py);
        d.set_item("name", o.name)?;
        d.set_item("accepts", o.kind.describe())?;
        d.set_item("default", o.default)?;
        d.set_item("help", o.help)?;
        d.set_item("aliases", o.aliases.iter().map(|a| a.describe()).collect::<Vec<_>>())?;
        list.append(d)?;
    }
    Ok(list)
}

/// Every built-in strategy: name, summary, options (name, accepts, default, help, old
/// spellings still accepted as `aliases`, e.g. `streams=fair|ordered`) that it
/// takes, the host options it takes (names), and the strategy it is another name for (or None).
#[pyfunction]
pub fn strategies(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for s in STRATEGIES {
        let d = PyDict::new(py);
        d.set_item("name", s.name)?;
        d.set_item("summary", s.summary)?;
        let own: Vec<OptionInfo> = s.options.iter().filter(|o| applies(s.name, o.name)).copied().collect();
        d.set_item("options", options_list(py, &own)?)?;
        let host: Vec<&str> = HOST_OPTIONS.iter().filter(|o| applies(s.name, o.name)).map(|o| o.name).collect();
        d.set_item("host_options", host)?;
        d.set_item("alias_of", ALIASES.iter().find(|(a, _)| *a == s.name).map(|(_, t)| *t))?;
        list.append(d)?;
    }
    Ok(list)
}

/// Options every strategy takes (scheduling, fusion, compression, transport, ...).
#[pyfunction]
pub fn host_options(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    options_list(py, HOST_OPTIONS)
}

/// Every topology builder: name, summary, options.
#[pyfunction]
pub fn topologies(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for (name, summary, tables) in TOPOLOGIES {
        let d = PyDict::new(py);
        d.set_item("name", *name)?;
        d.set_item("summary", *summary)?;
        let options: Vec<OptionInfo> = tables.iter().flat_map(|t| t.iter().cloned()).collect();
        d.set_item("options", options_list(py, &options)?)?;
        list.append(d)?;
    }
    Ok(list)
}

/// Size in bytes from text such as `4MiB`.
#[pyfunction]
pub fn parse_bytes(field: &str, text: &str) -> PyResult<f64> {
    guarded(|| units::parse_bytes(field, text))
}

/// Rate in bytes/s from text such as `25Gbps`.
#[pyfunction]
pub fn parse_rate(field: &str, text: &str) -> PyResult<f64> {
    guarded(|| units::parse_rate(field, text))
}

/// Duration in seconds from text such as `5us`.
#[pyfunction]
pub fn parse_duration(field: &str, text: &str) -> PyResult<f64> {
    guarded(|| units::parse_duration(field, text))
}

/// Adds the constants, the option tables and the unit parsers to the module `m`.
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
    m.add("DEFAULT_MAX_FLOWS", tensorwire_core::engine::DEFAULT_MAX_FLOWS)?;
    m.add("BACKGROUND_FACTOR", tensorwire_core::engine::BACKGROUND_FACTOR)?;
    m.add("HORIZON_S", tensorwire_core::limits::HORIZON_S)?;
    m.add("MAX_WORKERS", tensorwire_core::limits::MAX_WORKERS)?;
    m.add("MAX_LAYERS", tensorwire_core::limits::MAX_LAYERS)?;
    m.add("MAX_SPREAD", tensorwire_core::engine::MAX_SPREAD)?;
    m.add("MAX_TREES", tensorwire_core::limits::MAX_TREES)?;
    m.add_function(wrap_pyfunction!(strategies, m)?)?;
    m.add_function(wrap_pyfunction!(topologies, m)?)?;
    m.add_function(wrap_pyfunction!(host_options, m)?)?;
    m.add_function(wrap_pyfunction!(parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    Ok(())
}
