//! Runs: `Scenario` (one job: `check()` what its run would refuse before running,
//! `simulate()`), `simulate_jobs` (several on one fabric), `check` (whether a strategy runs on a fabric),
//! and the placements of ranks on hosts. Strategies and topologies arrive parsed
//! (`Strategy`, `Topology`); placements cross by name.

use pyo3::prelude::*;

use tensorwire_core::topology::{self, TopologySpec};
use tensorwire_core::{Error, Failure, Job, JobSeat, Progress, ProgressHook, Scenario};

use crate::cluster::PyTopology;
use crate::conversion;
use crate::error::guarded;
use crate::report::PyReport;
use crate::strategy::PyStrategy;
use crate::workload::PyWorkload;

/// Where the progress callback's own exception waits while the run stops, to be raised
/// in place of the run's "interrupted" once the core returns.
type CallbackError = std::sync::Arc<std::sync::Mutex<Option<PyErr>>>;

/// Calls `callback(iterations_done, iterations, simulated_s, events, flows)` (if any) with
/// the GIL; a result of exactly `False`, an exception (kept in the returned slot, raised
/// when the run has stopped: a bug in a callback is not an interruption) or a pending
/// signal (Ctrl-C) stops the run. Any other result, `None` included, lets it go on.
fn progress_hook(callback: Option<PyObject>) -> (ProgressHook, CallbackError) {
    let raised: CallbackError = Default::default();
    let slot = raised.clone();
    let hook = ProgressHook(std::sync::Arc::new(move |p: &Progress| {
        Python::with_gil(|py| {
            if py.check_signals().is_err() {
                return false;
            }
            let Some(c) = callback.as_ref() else { return true };
            match c.call1(py, (p.iterations_done, p.iterations, p.simulated_s, p.events, p.flows)) {
                Ok(r) => !matches!(r.bind(py).downcast::<pyo3::types::PyBool>(), Ok(b) if !b.is_true()),
                Err(e) => {
                    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
                    false
                }
            }
        })
    }));
    (hook, raised)
}

/// (target, at s, rate) of each failure.
type FailureTuple = (String, f64, f64);

fn failures_from(failures: Option<Vec<FailureTuple>>) -> Vec<Failure> {
    failures.unwrap_or_default().into_iter().map(|(target, at_s, rate)| Failure { at_s, target, rate }).collect()
}

/// Host of each of `workers` ranks under placement `kind` (`None` for `packed`: rank r on
/// host r, which the engine assumes without a map).
fn rank_to_host(topology: &TopologySpec, workers: usize, kind: &str, seed: u64) -> Result<Option<Vec<usize>>, Error> {
    if kind == "packed" {
        return Ok(None);
    }
    let topo = topology.build(workers, 0, 1e9, 0)?;
    topology::placement(kind, &topo.layout(workers), seed).map(Some)
}

/// The settings of a run that one job (`Scenario`) and several (`simulate_jobs`) share:
/// the fabric's latency, topology and network model, the iterations, the seed, the flow
/// budget and the failures.
struct FabricSettings<'a> {
    latency: f64,
    topology: &'a TopologySpec,
    network: &'a str,
    iterations: i64,
    seed: u64,
    per_message_overhead: f64,
    copy_bandwidth: Option<f64>,
    max_flows: Option<u64>,
    failures: Option<Vec<FailureTuple>>,
}

impl FabricSettings<'_> {
    /// Checks the settings (iterations >= 1, durations >= 0) and writes them into `sc`.
    fn apply(self, sc: &mut Scenario) -> Result<(), Error> {
        if self.iterations < 1 {
            return Err(Error::invalid("iterations", format!("{} is not allowed; need at least 1", self.iterations)));
        }
        if !(self.latency.is_finite() && self.latency >= 0.0) {
            return Err(Error::invalid("latency", "must be a duration >= 0"));
        }
        if !(self.per_message_overhead.is_finite() && self.per_message_overhead >= 0.0) {
            return Err(Error::invalid("per_message_overhead", "must be a duration >= 0"));
        }
        sc.latency = self.latency;
        sc.topology = self.topology.clone();
        sc.network = conversion::network(self.network)?;
        sc.iterations = self.iterations.min(u32::MAX as i64) as u32;
        sc.seed = self.seed;
        sc.per_message_overhead = self.per_message_overhead;
        sc.copy_bandwidth = self.copy_bandwidth;
        sc.max_flows = self.max_flows;
        sc.failures = failures_from(self.failures);
        Ok(())
    }
}

/// One job's run as the core will simulate it: `simulate`'s arguments, checked as far as
/// the arguments go when it is made. `check()` refuses what the run would refuse before
/// simulating anything; `simulate()` runs it. One constructor serves both, so the check
/// and the run cannot drift apart.
#[pyclass(name = "Scenario", module = "tensorwire._core", frozen)]
pub struct PyScenario {
    inner: Scenario,
}

#[pymethods]
impl PyScenario {
    #[new]
    #[pyo3(signature = (
        workload, workers, strategy, bandwidth, latency, topology, network = "flow", iterations = 3,
        seed = 0, per_message_overhead = 0.0, copy_bandwidth = None, stragglers = "none", spread = 0.0,
        slowdowns = None, placement = "packed", allow_folding = true, max_flows = None, failures = None,
        allow_lanes = true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        workload: PyRef<'_, PyWorkload>,
        workers: i64,
        strategy: PyRef<'_, PyStrategy>,
        bandwidth: f64,
        latency: f64,
        topology: PyRef<'_, PyTopology>,
        network: &str,
        iterations: i64,
        seed: u64,
        per_message_overhead: f64,
        copy_bandwidth: Option<f64>,
        stragglers: &str,
        spread: f64,
        slowdowns: Option<Vec<f64>>,
        placement: &str,
        allow_folding: bool,
        max_flows: Option<u64>,
        failures: Option<Vec<FailureTuple>>,
        allow_lanes: bool,
    ) -> PyResult<Self> {
        let build = || -> Result<Scenario, Error> {
            let rank_to_host = rank_to_host(&topology.inner, workers.max(0) as usize, placement, seed)?;
            if workers < 1 {
                return Err(Error::invalid("workers", format!("{workers} is not allowed; need at least 1")));
            }
            let mut sc = Scenario::new(workload.inner.clone(), workers as usize, bandwidth, strategy.inner.clone());
            let fabric = FabricSettings {
                latency,
                topology: &topology.inner,
                network,
                iterations,
                seed,
                per_message_overhead,
                copy_bandwidth,
                max_flows,
                failures,
            };
            fabric.apply(&mut sc)?;
            sc.variability = conversion::variability(stragglers, spread, slowdowns)?;
            sc.rank_to_host = rank_to_host;
            sc.allow_folding = allow_folding;
            sc.allow_lanes = allow_lanes;
            Ok(sc)
        };
        Ok(PyScenario { inner: guarded(build)? })
    }

    /// Refuses (an `InputError`) what `simulate()` would refuse before simulating anything
    /// ([`tensorwire_core::check_scenario`]: the strategy on the fabric with the workload,
    /// the flow budget), without running it.
    fn check(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| guarded(|| tensorwire_core::check_scenario(&self.inner)))
    }

    /// Runs the simulation; returns its `Report`. `timeline` records every span;
    /// `progress(iterations_done, iterations, simulated_s, events, flows)` is called while
    /// it runs, and a false result (or Ctrl-C) stops it.
    #[pyo3(signature = (timeline = false, progress = None))]
    fn simulate(&self, py: Python<'_>, timeline: bool, progress: Option<PyObject>) -> PyResult<PyReport> {
        let mut scenario = self.inner.clone();
        scenario.record_timeline = timeline;
        let (hook, raised) = progress_hook(progress);
        scenario.progress = Some(hook);
        let run = py.allow_threads(|| guarded(|| tensorwire_core::simulate(&scenario)));
        if let Some(e) = raised.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            return Err(e);
        }
        Ok(PyReport { inner: run? })
    }
}

/// (name, workload, workers, strategy, hosts or None) of one job.
type JobTuple<'py> = (String, PyRef<'py, PyWorkload>, usize, PyRef<'py, PyStrategy>, Option<Vec<usize>>);

/// Runs several jobs on one fabric of `hosts` hosts; returns one `Report` per job.
#[pyfunction]
#[pyo3(signature = (
    jobs, hosts, bandwidth, latency, topology, network = "flow", iterations = 3, seed = 0,
    per_message_overhead = 0.0, copy_bandwidth = None, placement = "packed", failures = None, max_flows = None,
    allow_failures_after_end = false
))]
#[allow(clippy::too_many_arguments)]
pub fn simulate_jobs(
    py: Python<'_>,
    jobs: Vec<JobTuple<'_>>,
    hosts: usize,
    bandwidth: f64,
    latency: f64,
    topology: PyRef<'_, PyTopology>,
    network: &str,
    iterations: i64,
    seed: u64,
    per_message_overhead: f64,
    copy_bandwidth: Option<f64>,
    placement: &str,
    failures: Option<Vec<FailureTuple>>,
    max_flows: Option<u64>,
    allow_failures_after_end: bool,
) -> PyResult<Vec<PyReport>> {
    let build = || -> Result<(Scenario, Vec<Job>), Error> {
        let mut list = Vec::with_capacity(jobs.len());
        for (name, workload, workers, strategy, job_hosts) in jobs.iter() {
            let w = workload.inner.clone();
            let (name, strategy, hosts) = (name.clone(), strategy.inner.clone(), job_hosts.clone());
            list.push(Job { name, workload: w, workers: *workers, strategy, hosts });
        }
        let first = list.first().ok_or_else(|| Error::invalid("jobs", "give at least one job"))?;
        let mut sc = Scenario::new(first.workload.clone(), hosts.max(1), bandwidth, first.strategy.clone());
        let fabric = FabricSettings {
            latency,
            topology: &topology.inner,
            network,
            iterations,
            seed,
            per_message_overhead,
            copy_bandwidth,
            max_flows,
            failures,
        };
        fabric.apply(&mut sc)?;
        sc.allow_failures_after_end = allow_failures_after_end;
        Ok((sc, list))
    };
    let (fabric, list) = guarded(build)?;
    let reports = py.allow_threads(|| guarded(|| tensorwire_core::simulate_jobs(&fabric, &list, placement)))?;
    Ok(reports.into_iter().map(|inner| PyReport { inner }).collect())
}

/// Refuses (an `InputError`, as a run would) a strategy that does not run with `workers`
/// workers on `topology` under `network`: the strategy's needs of the fabric (a multi-GPU
/// machine, switches that replicate, ...) and of the worker count, checked by the core
/// without a workload or a simulation ([`tensorwire_core::engine::check`]), and a network
/// model the strategy's timing does not use ([`tensorwire_core::engine::check_network_model`]).
#[pyfunction]
#[pyo3(signature = (strategy, topology, workers, network = "flow"))]
pub fn check(
    strategy: PyRef<'_, PyStrategy>,
    topology: PyRef<'_, PyTopology>,
    workers: usize,
    network: &str,
) -> PyResult<()> {
    guarded(|| {
        let model = conversion::network(network)?;
        tensorwire_core::engine::check(&strategy.inner, &topology.inner, workers)?;
        tensorwire_core::engine::check_network_model(&strategy.inner, &topology.inner, model)
    })
}

/// The hosts of each job's ranks, then of its parameter servers, on a fabric of `hosts`
/// hosts (`simulate_jobs` places them so): `jobs` as (name, workers, strategy spec, fixed
/// hosts or None), `kind` the placement of the others.
#[pyfunction]
#[pyo3(signature = (topology, hosts, jobs, kind = "packed", seed = 0))]
pub fn place_jobs(
    topology: &str,
    hosts: usize,
    jobs: Vec<(String, usize, String, Option<Vec<usize>>)>,
    kind: &str,
    seed: u64,
) -> PyResult<Vec<Vec<usize>>> {
    guarded(|| {
        let mut seats: Vec<JobSeat<'_>> = Vec::with_capacity(jobs.len());
        for (i, (name, workers, strategy, h)) in jobs.iter().enumerate() {
            let servers = tensorwire_core::strategy::Strategy::parse(strategy)
                .map_err(|e| e.within(&format!("jobs[{i}]")))?
                .servers();
            seats.push(JobSeat { name, workers: *workers, servers, hosts: h.as_deref() });
        }
        tensorwire_core::place_jobs(&TopologySpec::parse(topology)?, hosts, kind, seed, &seats)
    })
}

/// Host of each rank of `workers` ranks on `topology` under placement `kind` (`packed`,
/// `spread`, `random` with `seed`).
#[pyfunction]
#[pyo3(signature = (topology, workers, kind, seed = 0))]
pub fn placement(topology: &str, workers: usize, kind: &str, seed: u64) -> PyResult<Vec<usize>> {
    guarded(|| {
        let topo = TopologySpec::parse(topology)?.build(workers, 0, 1e9, 0)?;
        topology::placement(kind, &topo.layout(workers), seed)
    })
}
