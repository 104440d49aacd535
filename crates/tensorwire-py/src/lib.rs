//! PyO3 glue for `tensorwire._core`: converts Python values to core types and back, maps
//! core errors to `InputError`, and stops any panic at the boundary. No logic lives here.

mod catalog;
mod strategy;

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use tensorwire_core::collectives::Collective;
use tensorwire_core::gputopo::{self, GpuTopology};
use tensorwire_core::metrics::SpanKind;
use tensorwire_core::network::ModelKind;
use tensorwire_core::sched::{self, Limits, Policy, TaskRef};
use tensorwire_core::spec::OptionInfo;
use tensorwire_core::strategy::{applies, Strategy, ALIASES, HOST_OPTIONS, STRATEGIES};
use tensorwire_core::topology::spec::TOPOLOGIES;
use tensorwire_core::topology::TopologySpec;
use tensorwire_core::units::{self, seconds_to_nanos};
use tensorwire_core::workload::{collective_benchmark, Layer, Tensor, Workload};
use tensorwire_core::{Error, Failure, Job, JobSeat, Progress, ProgressHook, Report, Scenario, Variability};

// Named `tensorwire.InputError`, where users import it from (it lives in `_core`).
create_exception!(
    tensorwire,
    InputError,
    PyValueError,
    "Invalid input: ``InputError(field, message)``; ``field`` names the input (``args[0]``), ``message`` says what is allowed (``args[1]``)."
);

/// Gives `InputError` its `field` and `message` attributes: read-only views of `args[0]`
/// and `args[1]` (None when missing), so `args` stays the one place they are kept.
fn add_input_error_fields(py: Python<'_>) -> PyResult<()> {
    let ty = py.get_type::<InputError>();
    let property = py.import("builtins")?.getattr("property")?;
    for (name, i, doc) in [("field", 0, "The input that is wrong."), ("message", 1, "What is allowed.")] {
        let code = std::ffi::CString::new(format!("lambda e: e.args[{i}] if len(e.args) > {i} else None"))
            .expect("no NUL in the code");
        let get = py.eval(&code, None, None)?;
        ty.setattr(name, property.call1((get, py.None(), py.None(), doc))?)?;
    }
    Ok(())
}

fn to_py(e: Error) -> PyErr {
    let Error::Invalid { field, message } = e;
    InputError::new_err((field, message))
}

fn guarded<T>(f: impl FnOnce() -> Result<T, Error>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(to_py),
        Err(_) => Err(PyRuntimeError::new_err("internal error in the tensorwire core (please report it)")),
    }
}

/// A workload as it crosses the boundary, the same way into `simulate`, `simulate_jobs` and
/// out of `collective`: (name, batch_size, [(layer name, forward s, backward s)],
/// [(tensor name, bytes, layer)], element size in bytes, collective name). Every part of
/// the workload is in it, so no path can leave one at a default.
type WorkloadTuple = (String, u32, Vec<(String, f64, f64)>, Vec<(String, u64, usize)>, u32, String);

/// The one conversion of a [`WorkloadTuple`] into a validated [`Workload`].
fn workload_from(w: WorkloadTuple) -> Result<Workload, Error> {
    let (name, batch_size, layers, tensors, dtype_bytes, collective) = w;
    let layers = layers
        .into_iter()
        .enumerate()
        .map(|(i, (name, f, b))| {
            Ok(Layer {
                name,
                forward: seconds_to_nanos(&format!("workload.layers[{i}].forward_s"), f)?,
                backward: seconds_to_nanos(&format!("workload.layers[{i}].backward_s"), b)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let tensors = tensors.into_iter().map(|(name, bytes, layer)| Tensor { name, bytes, layer }).collect();
    let collective = Collective::parse("workload.collective", &collective)?;
    let w = Workload { name, batch_size, layers, tensors, dtype_bytes, collective };
    w.validate()?;
    Ok(w)
}

/// The inverse of [`workload_from`].
fn workload_to(w: Workload) -> WorkloadTuple {
    (
        w.name,
        w.batch_size,
        w.layers
            .into_iter()
            .map(|l| (l.name, units::nanos_to_seconds(l.forward), units::nanos_to_seconds(l.backward)))
            .collect(),
        w.tensors.into_iter().map(|t| (t.name, t.bytes, t.layer)).collect(),
        w.dtype_bytes,
        w.collective.name().to_string(),
    )
}

fn variability_from(kind: &str, spread: f64, slowdowns: Option<Vec<f64>>) -> Result<Variability, Error> {
    Ok(match kind {
        "none" => Variability::None,
        "normal" => Variability::Normal { cv: spread },
        "lognormal" => Variability::LogNormal { sigma: spread },
        "fixed" => Variability::Slowdowns(slowdowns.unwrap_or_default()),
        _ => {
            return Err(Error::invalid("stragglers", format!("{kind:?} is not one of none, normal, lognormal, fixed")))
        }
    })
}

fn report_to_dict<'py>(py: Python<'py>, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("iteration_time_s", r.iteration_time_s)?;
    d.set_item("completions_s", r.completions_s.clone())?;
    d.set_item("throughput_samples_per_s", r.throughput_samples_per_s)?;
    d.set_item("scaling_factor", r.scaling_factor)?;
    d.set_item("compute_time_s", r.compute_time_s)?;
    d.set_item("comm_time_s", r.comm_time_s)?;
    d.set_item("exposed_comm_s", r.exposed_comm_s)?;
    d.set_item("sent_bytes_per_worker", r.sent_bytes_per_worker)?;
    d.set_item("link_utilization", r.link_utilization.clone())?;
    d.set_item("events", r.events)?;
    d.set_item("flows", r.flows)?;
    d.set_item("folded", r.folded)?;
    d.set_item("simulated_ranks", r.simulated_ranks)?;
    d.set_item("failures_applied", r.failures_applied)?;
    d.set_item("network_model", r.network_model.clone())?;
    d.set_item("nap", r.nap)?;
    let spans = PyList::empty(py);
    for s in &r.timeline {
        let kind = match s.kind {
            SpanKind::Forward => "forward",
            SpanKind::Backward => "backward",
            SpanKind::Flow => "flow",
        };
        spans.append((kind, s.host, s.to.clone(), s.label.clone(), s.links.clone(), s.start_s, s.end_s, s.bytes))?;
    }
    d.set_item("timeline", spans)?;
    Ok(d)
}

/// Calls `callback(iterations_done, iterations, simulated_s, events, flows)` (if any) with
/// the GIL; a false result, an exception or a pending signal (Ctrl-C) stops the run.
fn progress_hook(callback: Option<PyObject>) -> ProgressHook {
    ProgressHook(std::sync::Arc::new(move |p: &Progress| {
        Python::with_gil(|py| {
            if py.check_signals().is_err() {
                return false;
            }
            callback.as_ref().is_none_or(|c| {
                c.call1(py, (p.iterations_done, p.iterations, p.simulated_s, p.events, p.flows))
                    .and_then(|r| r.is_truthy(py))
                    .unwrap_or(false)
            })
        })
    }))
}

/// Runs one simulation; returns a dict of metrics (see `tensorwire.Result`).
#[pyfunction]
#[pyo3(signature = (
    workload, workers, strategy, bandwidth, latency, topology = "star", network = "flow", iterations = 3,
    seed = 0, per_message_overhead = 0.0, copy_bandwidth = None, stragglers = "none", spread = 0.0,
    slowdowns = None, rank_to_host = None, allow_folding = true, timeline = false, max_flows = None,
    progress = None, failures = None, allow_lanes = true
))]
#[allow(clippy::too_many_arguments)]
fn simulate<'py>(
    py: Python<'py>,
    workload: WorkloadTuple,
    workers: i64,
    strategy: &str,
    bandwidth: f64,
    latency: f64,
    topology: &str,
    network: &str,
    iterations: i64,
    seed: u64,
    per_message_overhead: f64,
    copy_bandwidth: Option<f64>,
    stragglers: &str,
    spread: f64,
    slowdowns: Option<Vec<f64>>,
    rank_to_host: Option<Vec<usize>>,
    allow_folding: bool,
    timeline: bool,
    max_flows: Option<u64>,
    progress: Option<PyObject>,
    failures: Option<Vec<(String, f64, f64)>>,
    allow_lanes: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let build = || -> Result<Scenario, Error> {
        if workers < 1 {
            return Err(Error::invalid("workers", format!("{workers} is not allowed; need at least 1")));
        }
        if iterations < 1 {
            return Err(Error::invalid("iterations", format!("{iterations} is not allowed; need at least 1")));
        }
        if !(latency.is_finite() && latency >= 0.0) {
            return Err(Error::invalid("latency", "must be a duration >= 0"));
        }
        if !(per_message_overhead.is_finite() && per_message_overhead >= 0.0) {
            return Err(Error::invalid("per_message_overhead", "must be a duration >= 0"));
        }
        let w = workload_from(workload)?;
        let mut sc = Scenario::new(w, workers as usize, bandwidth, Strategy::parse(strategy)?);
        sc.latency = latency;
        sc.topology = TopologySpec::parse(topology)?;
        sc.network = ModelKind::parse(network)?;
        sc.iterations = iterations.min(u32::MAX as i64) as u32;
        sc.seed = seed;
        sc.per_message_overhead = per_message_overhead;
        sc.copy_bandwidth = copy_bandwidth;
        sc.variability = variability_from(stragglers, spread, slowdowns)?;
        sc.rank_to_host = rank_to_host;
        sc.allow_folding = allow_folding;
        sc.allow_lanes = allow_lanes;
        sc.record_timeline = timeline;
        sc.max_flows = max_flows;
        sc.progress = Some(progress_hook(progress));
        sc.failures = failures
            .unwrap_or_default()
            .into_iter()
            .map(|(target, at_s, rate)| Failure { at_s, target, rate })
            .collect();
        Ok(sc)
    };
    let scenario = guarded(build)?;
    let report = py.allow_threads(|| guarded(|| tensorwire_core::simulate(&scenario)))?;
    report_to_dict(py, &report)
}

/// (name, workload, workers, strategy, hosts or None) of one job.
type JobTuple = (String, WorkloadTuple, usize, String, Option<Vec<usize>>);

/// Runs several jobs on one fabric of `hosts` hosts; returns one metrics dict per job.
#[pyfunction]
#[pyo3(signature = (
    jobs, hosts, bandwidth, latency, topology = "star", network = "flow", iterations = 3, seed = 0,
    per_message_overhead = 0.0, copy_bandwidth = None, placement = "packed", failures = None, max_flows = None,
    allow_failures_after_end = false
))]
#[allow(clippy::too_many_arguments)]
fn simulate_jobs<'py>(
    py: Python<'py>,
    jobs: Vec<JobTuple>,
    hosts: usize,
    bandwidth: f64,
    latency: f64,
    topology: &str,
    network: &str,
    iterations: i64,
    seed: u64,
    per_message_overhead: f64,
    copy_bandwidth: Option<f64>,
    placement: &str,
    failures: Option<Vec<(String, f64, f64)>>,
    max_flows: Option<u64>,
    allow_failures_after_end: bool,
) -> PyResult<Bound<'py, PyList>> {
    let build = || -> Result<(Scenario, Vec<Job>), Error> {
        if iterations < 1 {
            return Err(Error::invalid("iterations", format!("{iterations} is not allowed; need at least 1")));
        }
        if !(latency.is_finite() && latency >= 0.0 && per_message_overhead.is_finite() && per_message_overhead >= 0.0) {
            return Err(Error::invalid("latency", "latency and overhead must be durations >= 0"));
        }
        let mut list = Vec::with_capacity(jobs.len());
        for (i, (name, workload, workers, strategy, job_hosts)) in jobs.into_iter().enumerate() {
            let w = workload_from(workload).map_err(|e| e.within(&format!("jobs[{i}]")))?;
            let strategy = Strategy::parse(&strategy).map_err(|e| e.within(&format!("jobs[{i}]")))?;
            list.push(Job { name, workload: w, workers, strategy, hosts: job_hosts });
        }
        let first = list.first().ok_or_else(|| Error::invalid("jobs", "give at least one job"))?;
        let mut sc = Scenario::new(first.workload.clone(), hosts.max(1), bandwidth, first.strategy.clone());
        sc.latency = latency;
        sc.topology = TopologySpec::parse(topology)?;
        sc.network = ModelKind::parse(network)?;
        sc.iterations = iterations.min(u32::MAX as i64) as u32;
        sc.seed = seed;
        sc.per_message_overhead = per_message_overhead;
        sc.copy_bandwidth = copy_bandwidth;
        sc.max_flows = max_flows;
        sc.failures = failures
            .unwrap_or_default()
            .into_iter()
            .map(|(target, at_s, rate)| Failure { at_s, target, rate })
            .collect();
        sc.allow_failures_after_end = allow_failures_after_end;
        Ok((sc, list))
    };
    let (fabric, list) = guarded(build)?;
    let reports = py.allow_threads(|| guarded(|| tensorwire_core::simulate_jobs(&fabric, &list, placement)))?;
    let out = PyList::empty(py);
    for r in &reports {
        out.append(report_to_dict(py, r)?)?;
    }
    Ok(out)
}

/// The hosts of each job's ranks, then of its parameter servers, on a fabric of `hosts`
/// hosts (`simulate_jobs` places them so): `jobs` as (name, workers, strategy spec, fixed
/// hosts or None), `kind` the placement of the others.
#[pyfunction]
#[pyo3(signature = (topology, hosts, jobs, kind = "packed", seed = 0))]
fn place_jobs(
    topology: &str,
    hosts: usize,
    jobs: Vec<(String, usize, String, Option<Vec<usize>>)>,
    kind: &str,
    seed: u64,
) -> PyResult<Vec<Vec<usize>>> {
    guarded(|| {
        let mut seats: Vec<JobSeat<'_>> = Vec::with_capacity(jobs.len());
        for (i, (name, workers, strategy, h)) in jobs.iter().enumerate() {
            let servers = Strategy::parse(strategy).map_err(|e| e.within(&format!("jobs[{i}]")))?.servers();
            seats.push(JobSeat { name, workers: *workers, servers, hosts: h.as_deref() });
        }
        tensorwire_core::place_jobs(&TopologySpec::parse(topology)?, hosts, kind, seed, &seats)
    })
}

/// Validates a topology spec; returns its builder name.
#[pyfunction]
fn check_topology(spec: &str) -> PyResult<String> {
    guarded(|| TopologySpec::parse(spec).map(|t| t.name().to_string()))
}

/// The host link rate, bytes/s, to simulate `topology` with, from the one given
/// (`--bandwidth`), if any: see `TopologySpec::host_rate` (on `rail` the given rate is each
/// GPU's NIC rate, and without one the node preset's or `nic=`).
#[pyfunction]
#[pyo3(signature = (topology, bandwidth = None))]
fn host_rate(topology: &str, bandwidth: Option<f64>) -> PyResult<f64> {
    guarded(|| TopologySpec::parse(topology)?.host_rate(bandwidth))
}

/// Host of each rank of `workers` ranks on `topology` under placement `kind` (`packed`,
/// `spread`, `random` with `seed`).
#[pyfunction]
#[pyo3(signature = (topology, workers, kind, seed = 0))]
fn placement(topology: &str, workers: usize, kind: &str, seed: u64) -> PyResult<Vec<usize>> {
    guarded(|| {
        let topo = TopologySpec::parse(topology)?.build(workers, 0, 1e9, 0)?;
        tensorwire_core::topology::placement(kind, &topo.layout(workers), seed)
    })
}

fn options_list<'py>(py: Python<'py>, options: &[OptionInfo]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for o in options {
        let d = PyDict::new(py);
        d.set_item("name", o.name)?;
        d.set_item("accepts", o.kind.describe())?;
        d.set_item("default", o.default)?;
        d.set_item("help", o.help)?;
        list.append(d)?;
    }
    Ok(list)
}

/// Every built-in strategy: name, summary, options (name, accepts, default, help) that it
/// takes, the host options it takes (names), and the strategy it is another name for (or None).
#[pyfunction]
fn strategies(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
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
fn host_options(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    options_list(py, HOST_OPTIONS)
}

/// Every topology builder: name, summary, options.
#[pyfunction]
fn topologies(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for (name, summary, options) in TOPOLOGIES {
        let d = PyDict::new(py);
        d.set_item("name", *name)?;
        d.set_item("summary", *summary)?;
        d.set_item("options", options_list(py, options)?)?;
        list.append(d)?;
    }
    Ok(list)
}

/// `allreduce:SIZE[xCOUNT]` as a workload tuple.
#[pyfunction]
fn collective(spec: &str) -> PyResult<WorkloadTuple> {
    guarded(|| collective_benchmark(spec).map(workload_to))
}

/// Size in bytes from text such as `4MiB`.
#[pyfunction]
fn parse_bytes(field: &str, text: &str) -> PyResult<f64> {
    guarded(|| units::parse_bytes(field, text))
}

/// Rate in bytes/s from text such as `25Gbps`.
#[pyfunction]
fn parse_rate(field: &str, text: &str) -> PyResult<f64> {
    guarded(|| units::parse_rate(field, text))
}

/// Duration in seconds from text such as `5us`.
#[pyfunction]
fn parse_duration(field: &str, text: &str) -> PyResult<f64> {
    guarded(|| units::parse_duration(field, text))
}

/// The core's task scheduler (seed 004's task API), for runtimes: the same state machine
/// the simulator runs. Tasks are identified by (iteration, task index); times are seconds
/// on any monotonic clock the caller chooses.
#[pyclass(module = "tensorwire._core")]
struct Scheduler {
    inner: sched::Scheduler,
    out: Vec<sched::Group>,
}

fn to_nanos(field: &str, seconds: f64) -> PyResult<u64> {
    seconds_to_nanos(field, seconds).map_err(to_py)
}

/// A group as a list of (iteration, task, bytes).
type GroupTuple = Vec<(u32, u32, u64)>;

#[pymethods]
impl Scheduler {
    /// `policy` is "fifo" or "priority"; `credit_bytes` bounds bytes in flight and
    /// `max_tasks` groups in flight (None: unbounded); `fusion_bytes` and
    /// `fusion_cycle_s` turn on Horovod-style fusion.
    #[new]
    #[pyo3(signature = (policy = "fifo", credit_bytes = None, max_tasks = None, fusion_bytes = None, fusion_cycle_s = None))]
    fn new(
        policy: &str,
        credit_bytes: Option<u64>,
        max_tasks: Option<usize>,
        fusion_bytes: Option<u64>,
        fusion_cycle_s: Option<f64>,
    ) -> PyResult<Self> {
        let policy = match policy {
            "fifo" => Policy::Fifo,
            "priority" => Policy::Priority,
            _ => {
                return Err(InputError::new_err((
                    "mode",
                    format!("{policy:?} is not a policy; choose fifo or priority"),
                )))
            }
        };
        if credit_bytes == Some(0) {
            return Err(InputError::new_err(("credit", "must be at least 1 byte")));
        }
        if max_tasks == Some(0) {
            return Err(InputError::new_err(("max_tasks", "must be at least 1")));
        }
        let fusion = match (fusion_bytes, fusion_cycle_s) {
            (None, None) => None,
            (Some(0), _) => return Err(InputError::new_err(("fusion_bytes", "must be at least 1 byte"))),
            (Some(b), c) => {
                Some(sched::Fusion { threshold_bytes: b, cycle: to_nanos("fusion_cycle_s", c.unwrap_or(0.005))? })
            }
            (None, Some(_)) => {
                return Err(InputError::new_err(("fusion_bytes", "needed when fusion_cycle_s is given")))
            }
        };
        Ok(Scheduler {
            inner: sched::Scheduler::with_fusion(policy, Limits { credit_bytes, max_tasks }, fusion),
            out: Vec::new(),
        })
    }

    /// The task's data is ready at `now_s`; `layer` orders priority (lower first).
    #[pyo3(signature = (iteration, task, layer, nbytes, now_s = 0.0))]
    fn notify_ready(&mut self, iteration: u32, task: u32, layer: usize, nbytes: u64, now_s: f64) -> PyResult<()> {
        self.inner.notify_ready(to_nanos("now_s", now_s)?, TaskRef { iteration, task }, layer, nbytes);
        Ok(())
    }

    /// Groups to start now, in order; each is one communication operation over
    /// its tasks' concatenated payloads: a list of (iteration, task, bytes).
    #[pyo3(signature = (now_s = 0.0))]
    fn poll(&mut self, now_s: f64) -> PyResult<Vec<GroupTuple>> {
        self.out.clear();
        self.inner.poll(to_nanos("now_s", now_s)?, &mut self.out);
        Ok(self.out.iter().map(|g| g.tasks.iter().map(|(t, b)| (t.iteration, t.task, *b)).collect()).collect())
    }

    /// When to poll again for a fusion flush (seconds), if anything is buffered.
    fn next_deadline(&self) -> Option<f64> {
        self.inner.next_deadline().map(units::nanos_to_seconds)
    }

    /// A started group of `nbytes` finished; returns its credit.
    fn notify_finish(&mut self, nbytes: u64) -> PyResult<()> {
        if !self.inner.can_finish(nbytes) {
            return Err(PyRuntimeError::new_err("notify_finish without a matching started group"));
        }
        self.inner.notify_finish(nbytes);
        Ok(())
    }

    /// Tasks ready but not started.
    fn waiting(&self) -> usize {
        self.inner.waiting()
    }
}

/// A piece: (tensor, piece, offset, bytes, layer).
type PieceTuple = (usize, usize, u64, u64, usize);

/// Splits tensors (sizes in bytes, owning layer indices) into pieces of at most
/// `piece_bytes`; returns (tensor, piece, offset, bytes, layer) in parameters() order.
#[pyfunction]
#[pyo3(signature = (sizes, layers, piece_bytes = None))]
fn partition(sizes: Vec<u64>, layers: Vec<usize>, piece_bytes: Option<u64>) -> PyResult<Vec<PieceTuple>> {
    guarded(|| {
        if sizes.len() != layers.len() {
            return Err(Error::invalid("layers", "needs one layer index per tensor"));
        }
        let w = Workload {
            name: "partition".into(),
            batch_size: 1,
            layers: (0..=layers.iter().copied().max().unwrap_or(0))
                .map(|i| Layer { name: i.to_string(), forward: 0, backward: 0 })
                .collect(),
            tensors: sizes
                .iter()
                .zip(&layers)
                .enumerate()
                .map(|(i, (&bytes, &layer))| Tensor { name: i.to_string(), bytes, layer })
                .collect(),
            dtype_bytes: 4,
            collective: Collective::AllReduce,
        };
        w.validate()?;
        Ok(sched::partition(&w, piece_bytes)?
            .into_iter()
            .map(|t| (t.tensor, t.piece, t.offset, t.bytes, t.layer))
            .collect())
    })
}

/// (sends: [(to ranks, first chunk, end chunk)], receives: [(from, first chunk, end chunk, reduce)])
type StepTuple = (Vec<(Vec<usize>, usize, usize)>, Vec<(usize, usize, usize, bool)>);

/// The all-reduce step schedule of `rank` among `n` ranks: (chunk count, steps).
#[pyfunction]
#[pyo3(signature = (algorithm, n, rank, pipeline = 1))]
fn collective_schedule(algorithm: &str, n: usize, rank: usize, pipeline: usize) -> PyResult<(usize, Vec<StepTuple>)> {
    guarded(|| {
        let Some(schedule) = tensorwire_core::collectives::by_name(algorithm) else {
            return Err(Error::invalid("algorithm", format!("{algorithm:?} has no step schedule; choose ring, ring+multicast, recursive-doubling, halving-doubling, tree or double-tree")));
        };
        if n == 0 || rank >= n || pipeline == 0 {
            return Err(Error::invalid(
                "rank",
                format!("need 0 <= rank < n, n >= 1 and pipeline >= 1 (got rank {rank}, n {n}, pipeline {pipeline})"),
            ));
        }
        let steps = (0..schedule.steps(n, pipeline))
            .map(|s| {
                let st = schedule.step(rank, n, pipeline, s);
                (
                    st.sends.into_iter().map(|m| (m.to.to_vec(), m.chunks.start, m.chunks.end)).collect(),
                    st.recvs.into_iter().map(|m| (m.from, m.chunks.start, m.chunks.end, m.reduce)).collect(),
                )
            })
            .collect();
        Ok((schedule.chunk_count(n, pipeline), steps))
    })
}

/// Activation tree of a partial collective: (parent, children) of `rank` when
/// `initiator` starts it (seed 002).
#[pyfunction]
fn activation_tree(rank: usize, n: usize, initiator: usize) -> PyResult<(Option<usize>, Vec<usize>)> {
    if n == 0 || rank >= n || initiator >= n {
        return Err(InputError::new_err((
            "rank",
            format!("need 0 <= rank, initiator < n (got {rank}, {initiator}, {n})"),
        )));
    }
    use tensorwire_core::collectives::{activation_children, activation_parent};
    Ok((activation_parent(rank, n, initiator), activation_children(rank, n, initiator)))
}

fn gpu_topology_from(preset: Option<&str>, adjacency: Option<Vec<Vec<i64>>>) -> Result<GpuTopology, Error> {
    match (preset, adjacency) {
        (Some(p), None) => GpuTopology::preset(p),
        (None, Some(a)) => GpuTopology::from_adjacency(&a),
        _ => Err(Error::invalid("topology", "give exactly one of a preset name or an adjacency matrix")),
    }
}

/// A GPU topology: (gpus, links as (i, j, weight)); weights 3 double NVLink, 2 NVLink, 1 PCIe.
#[pyfunction]
#[pyo3(signature = (preset = None, adjacency = None))]
#[allow(clippy::type_complexity)]
fn gpu_topology(preset: Option<&str>, adjacency: Option<Vec<Vec<i64>>>) -> PyResult<(usize, Vec<(usize, usize, u32)>)> {
    guarded(|| gpu_topology_from(preset, adjacency).map(|t| (t.gpus(), t.links())))
}

/// Trees for tree all-reduce (seed 003): each (root, [(parent, child, level)], method, weight).
#[pyfunction]
#[pyo3(signature = (preset = None, adjacency = None, count = 1, penalty = 0.7))]
#[allow(clippy::type_complexity)]
fn gpu_trees(
    preset: Option<&str>,
    adjacency: Option<Vec<Vec<i64>>>,
    count: usize,
    penalty: f64,
) -> PyResult<Vec<(usize, Vec<(usize, usize, usize)>, String, u64)>> {
    guarded(|| {
        let topology = gpu_topology_from(preset, adjacency)?;
        Ok(gputopo::generate_trees(&topology, count, penalty)?
            .into_iter()
            .map(|g| {
                let edges = g.tree.edges().iter().map(|e| (e.parent, e.child, e.level)).collect();
                let method = match g.method {
                    gputopo::Method::KernighanLin => "kernighan-lin",
                    gputopo::Method::Exhaustive => "exhaustive",
                };
                (g.tree.root(), edges, method.to_string(), g.tree.weight(&topology))
            })
            .collect())
    })
}

/// Tree all-reduce plan for `elements` elements: one tree below `array_bound` elements,
/// all trees (one slice each) above it. Returns (slices as (start, end), rounds of
/// (slice, from, to, reduce)).
#[pyfunction]
#[pyo3(signature = (elements, preset = None, adjacency = None, count = 0, penalty = 0.7, array_bound = 10_000_000))]
#[allow(clippy::type_complexity)]
fn tree_allreduce_plan(
    elements: usize,
    preset: Option<&str>,
    adjacency: Option<Vec<Vec<i64>>>,
    count: usize,
    penalty: f64,
    array_bound: usize,
) -> PyResult<(Vec<(usize, usize)>, Vec<Vec<(usize, usize, usize, bool)>>)> {
    guarded(|| {
        let topology = gpu_topology_from(preset, adjacency)?;
        let count = if count == 0 { topology.gpus() } else { count };
        let trees: Vec<gputopo::Tree> =
            gputopo::generate_trees(&topology, count, penalty)?.into_iter().map(|g| g.tree).collect();
        let plan = gputopo::Schedule::plan(&trees, elements, array_bound)?;
        Ok((
            plan.slices().iter().map(|r| (r.start, r.end)).collect(),
            plan.rounds()
                .iter()
                .map(|round| {
                    round.iter().map(|t| (t.slice, t.from, t.to, matches!(t.op, gputopo::Op::Reduce))).collect()
                })
                .collect(),
        ))
    })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_input_error_fields(m.py())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("DEFAULT_MAX_FLOWS", tensorwire_core::engine::DEFAULT_MAX_FLOWS)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_class::<Scheduler>()?;
    m.add_function(wrap_pyfunction!(partition, m)?)?;
    m.add_function(wrap_pyfunction!(check_topology, m)?)?;
    m.add_function(wrap_pyfunction!(host_rate, m)?)?;
    m.add_function(wrap_pyfunction!(placement, m)?)?;
    m.add_function(wrap_pyfunction!(place_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(strategies, m)?)?;
    m.add_function(wrap_pyfunction!(topologies, m)?)?;
    m.add_function(wrap_pyfunction!(host_options, m)?)?;
    m.add_function(wrap_pyfunction!(collective_schedule, m)?)?;
    m.add_function(wrap_pyfunction!(activation_tree, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_topology, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_trees, m)?)?;
    m.add_function(wrap_pyfunction!(tree_allreduce_plan, m)?)?;
    m.add_function(wrap_pyfunction!(collective, m)?)?;
    m.add_function(wrap_pyfunction!(parse_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(parse_rate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration, m)?)?;
    m.add("HORIZON_S", tensorwire_core::limits::HORIZON_S)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<strategy::PyStrategy>()?;
    catalog::register(m)?;
    Ok(())
}
