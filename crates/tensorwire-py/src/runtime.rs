//! Runtime services: the same state machines and plans the simulator runs, for the torch
//! runtime and the testbed: the task `Scheduler`, `partition` of tensors into pieces,
//! `step_schedule` of an all-reduce algorithm and the `activation_tree` of a partial one.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use tensorwire_core::collectives::Collective;
use tensorwire_core::sched::{self, Limits, TaskRef};
use tensorwire_core::units;
use tensorwire_core::workload::{Layer, Tensor, Workload};
use tensorwire_core::Error;

use crate::conversion;
use crate::error::{guarded, to_nanos, to_py, InputError};

/// The core's task scheduler (seed 004's task API), for runtimes: the same state machine
/// the simulator runs. Tasks are identified by (iteration, task index); times are seconds
/// on any monotonic clock the caller chooses.
#[pyclass(module = "tensorwire._core")]
pub struct Scheduler {
    inner: sched::Scheduler,
    out: Vec<sched::Group>,
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
        let policy = conversion::policy("mode", policy).map_err(to_py)?;
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
pub(crate) type PieceTuple = (usize, usize, u64, u64, usize);

/// A workload of tensors of `sizes` bytes owned by layers `layers` (one index per tensor),
/// no compute: what the runtime and the testbed cut into pieces.
pub(crate) fn sizes_workload(sizes: &[u64], layers: &[usize]) -> Result<Workload, Error> {
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
            .zip(layers)
            .enumerate()
            .map(|(i, (&bytes, &layer))| Tensor { name: i.to_string(), bytes, layer })
            .collect(),
        dtype_bytes: 4,
        collective: Collective::AllReduce,
    };
    w.validate()?;
    Ok(w)
}

/// Splits tensors (sizes in bytes, owning layer indices) into pieces of at most
/// `piece_bytes`; returns (tensor, piece, offset, bytes, layer) in parameters() order.
#[pyfunction]
#[pyo3(signature = (sizes, layers, piece_bytes = None))]
pub fn partition(sizes: Vec<u64>, layers: Vec<usize>, piece_bytes: Option<u64>) -> PyResult<Vec<PieceTuple>> {
    guarded(|| {
        let w = sizes_workload(&sizes, &layers)?;
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
pub fn step_schedule(algorithm: &str, n: usize, rank: usize, pipeline: usize) -> PyResult<(usize, Vec<StepTuple>)> {
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

/// The old name of [`step_schedule`] (the torch runtime's partial collectives call it so).
#[pyfunction]
#[pyo3(signature = (algorithm, n, rank, pipeline = 1))]
pub fn collective_schedule(
    algorithm: &str,
    n: usize,
    rank: usize,
    pipeline: usize,
) -> PyResult<(usize, Vec<StepTuple>)> {
    step_schedule(algorithm, n, rank, pipeline)
}

/// Activation tree of a partial collective: (parent, children) of `rank` when
/// `initiator` starts it (seed 002).
#[pyfunction]
pub fn activation_tree(rank: usize, n: usize, initiator: usize) -> PyResult<(Option<usize>, Vec<usize>)> {
    if n == 0 || rank >= n || initiator >= n {
        return Err(InputError::new_err((
            "rank",
            format!("need 0 <= rank, initiator < n (got {rank}, {initiator}, {n})"),
        )));
    }
    use tensorwire_core::collectives::{activation_children, activation_parent};
    Ok((activation_parent(rank, n, initiator), activation_children(rank, n, initiator)))
}
