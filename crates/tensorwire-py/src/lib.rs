//! PyO3 glue for `tensorwire._core`: converts Python values to core types and back, maps
//! core errors to `InputError`, and stops any panic at the boundary. No logic lives here.
//! One file per concept (the tokenizers/polars habit); this file only registers them:
//!
//! - `error`: `InputError` and the panic guard;
//! - `conversion`: the one place text becomes a core enum;
//! - `workload`, `strategy` (`Strategy`), `cluster` (`Topology`), `report` (`Report`);
//! - `simulate`: `Scenario` (one run: `check()`, `simulate()`), `simulate_jobs`, `check` and placements;
//! - `catalog`: name lists, defaults, option tables and unit parsers;
//! - `runtime`: the scheduler and plans the torch runtime and testbed run;
//! - `gputopo`: GPU trees;
//! - `nccl`: NCCL's choice and time for one collective (`nccl_predict`).

mod catalog;
mod cluster;
mod conversion;
mod error;
mod gputopo;
mod nccl;
mod report;
mod runtime;
mod simulate;
mod strategy;
mod workload;

use pyo3::prelude::*;

pub(crate) use error::guarded;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    error::add_input_error_fields(m.py())?;
    m.add("InputError", m.py().get_type::<error::InputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<strategy::PyStrategy>()?;
    m.add_class::<cluster::PyTopology>()?;
    m.add_class::<report::PyReport>()?;
    m.add_class::<workload::PyWorkload>()?;
    m.add_class::<simulate::PyScenario>()?;
    m.add_function(wrap_pyfunction!(simulate::simulate_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::check, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::place_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(simulate::placement, m)?)?;
    m.add_function(wrap_pyfunction!(cluster::check_topology, m)?)?;
    m.add_function(wrap_pyfunction!(cluster::host_rate, m)?)?;
    m.add_function(wrap_pyfunction!(workload::collective, m)?)?;
    m.add_class::<runtime::Scheduler>()?;
    m.add_function(wrap_pyfunction!(runtime::partition, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::step_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::collective_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(runtime::activation_tree, m)?)?;
    m.add_function(wrap_pyfunction!(gputopo::gpu_topology, m)?)?;
    m.add_function(wrap_pyfunction!(gputopo::gpu_trees, m)?)?;
    m.add_function(wrap_pyfunction!(gputopo::tree_allreduce_plan, m)?)?;
    m.add_function(wrap_pyfunction!(nccl::nccl_predict, m)?)?;
    m.add("NCCL_VERSION", tensorwire_core::nccl::NCCL_VERSION)?;
    catalog::register(m)?;
    Ok(())
}
