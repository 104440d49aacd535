//! `tensorwire._core.Strategy`: a parsed strategy spec held as the core's object, so that
//! Python asks it questions (servers, scheduler settings, tensor placement) instead of
//! parsing the spec again or copying the core's defaults.

use pyo3::prelude::*;

use crate::conversion::policy_name;
use tensorwire_core::spec;
use tensorwire_core::strategy::{Distribution, Family, Strategy};
use tensorwire_core::units::nanos_to_seconds;

use crate::guarded;

/// A parameter server's piece: (tensor, piece, offset, bytes, layer, server).
type ServerPiece = (usize, usize, u64, u64, usize, usize);

/// A validated strategy spec (`NAME[:key=value,...]`), parsed once by the core.
#[pyclass(name = "Strategy", module = "tensorwire._core", frozen)]
pub struct PyStrategy {
    pub inner: Strategy,
    name: String,
    options: Vec<(String, String)>,
}

#[pymethods]
impl PyStrategy {
    #[new]
    fn new(spec: &str) -> PyResult<Self> {
        guarded(|| {
            let inner = Strategy::parse(spec)?;
            let (name, options) = spec::split("strategy", &inner.spec)?;
            Ok(PyStrategy { inner, name, options })
        })
    }

    /// The spec, trimmed.
    #[getter]
    fn spec(&self) -> &str {
        &self.inner.spec
    }

    /// The strategy's name (before any options).
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The options as written, `[(key, value), ...]`.
    #[getter]
    fn options(&self) -> Vec<(String, String)> {
        self.options.clone()
    }

    /// `parameter-server`, `all-reduce` (also `nccl` and `ddp`, whose all-reduces NCCL
    /// runs) or `sharded`.
    #[getter]
    fn family(&self) -> &'static str {
        match self.inner.family {
            Family::ParameterServer(_) => "parameter-server",
            Family::AllReduce(_) | Family::Nccl(_) => "all-reduce",
            Family::Sharded(_) => "sharded",
        }
    }

    /// Whether NCCL's closed-form model times its collectives on `topology` (a topology
    /// spec): `nccl`, `ddp`, sharded strategies under `comm=nccl` (their default on GPU
    /// fabrics). Such a run takes no per-hop latency, host overhead or rank placement.
    fn timed_by_nccl(&self, topology: &str) -> PyResult<bool> {
        guarded(|| Ok(self.inner.timed_by_nccl(&tensorwire_core::topology::TopologySpec::parse(topology)?)))
    }

    /// An option given that changes nothing here, `(field, why)`, for a warning
    /// (`Strategy::option_without_effect`); None where every option given has an effect.
    #[getter]
    fn option_without_effect(&self) -> Option<(&'static str, &'static str)> {
        self.inner.option_without_effect()
    }

    /// Parameter servers it runs on hosts of their own (0 for the other families).
    #[getter]
    fn servers(&self) -> usize {
        self.inner.servers()
    }

    /// Largest piece a tensor is cut into, bytes (`None`: whole tensors).
    #[getter]
    fn partition_bytes(&self) -> Option<u64> {
        self.inner.partition
    }

    /// Release order of ready pieces: `fifo` or `priority`.
    #[getter]
    fn policy(&self) -> &'static str {
        policy_name(self.inner.policy)
    }

    /// Most bytes in flight (`None`: no credit).
    #[getter]
    fn credit_bytes(&self) -> Option<u64> {
        self.inner.limits.credit_bytes
    }

    /// Most collectives in flight (`None`: unbounded), after the core's rule: without a
    /// credit an all-reduce runs one at a time unless it runs on a stream.
    #[getter]
    fn max_in_flight(&self) -> Option<usize> {
        self.inner.limits.max_tasks
    }

    /// Fusion buffer threshold, bytes (`None`: no fusion).
    #[getter]
    fn fusion_bytes(&self) -> Option<u64> {
        self.inner.fusion.map(|f| f.threshold_bytes)
    }

    /// Longest a ready task waits in the fusion buffer, s (`None`: no fusion).
    #[getter]
    fn fusion_cycle_s(&self) -> Option<f64> {
        self.inner.fusion.map(|f| nanos_to_seconds(f.cycle))
    }

    /// Released collectives run one at a time in release order (`execution=stream`).
    #[getter]
    fn stream(&self) -> bool {
        self.inner.stream
    }

    /// A coordinator's dispatch cost per collective, s.
    #[getter]
    fn dispatch_s(&self) -> f64 {
        self.inner.dispatch_s
    }

    /// Parameter servers: `(placement, distribution, barrier)` as written in specs, with
    /// the core's defaults; `None` for the other families.
    #[getter]
    fn ps_settings(&self) -> Option<(&'static str, &'static str, bool)> {
        match &self.inner.family {
            Family::ParameterServer(c) => Some((
                c.placement.name(),
                match c.distribution {
                    Distribution::RoundRobin => "round-robin",
                    Distribution::Block => "block",
                    Distribution::Concurrent => "concurrent",
                },
                c.barrier,
            )),
            _ => None,
        }
    }

    /// Parameter servers: the server of each tensor, given the tensors' sizes in bytes in
    /// `parameters()` order (the simulator's rule). Refused for the other families.
    fn place_tensors(&self, sizes: Vec<u64>) -> PyResult<Vec<usize>> {
        guarded(|| match &self.inner.family {
            Family::ParameterServer(c) => Ok(c.placement.assign(&sizes, c.num_ps)),
            _ => Err(tensorwire_core::Error::invalid("strategy", "tensor placement applies to parameter servers")),
        })
    }

    /// Parameter servers: the pieces a run synchronises, `(tensor, piece, offset, bytes,
    /// layer, server)` in `parameters()` order, for tensors of `sizes` bytes owned by layers
    /// `layers` (the simulator's rule: `placement=sharded` cuts each tensor into `num_ps`
    /// even pieces, piece `p` on server `p`; else `partition=` pieces on their tensor's
    /// server). Refused for the other families.
    fn ps_tasks(&self, sizes: Vec<u64>, layers: Vec<usize>) -> PyResult<Vec<ServerPiece>> {
        guarded(|| {
            let Family::ParameterServer(c) = &self.inner.family else {
                return Err(tensorwire_core::Error::invalid("strategy", "server tasks apply to parameter servers"));
            };
            let w = crate::runtime::sizes_workload(&sizes, &layers)?;
            let tasks = c.tasks(&w, self.inner.partition)?;
            let servers = c.servers_of(&tasks, &sizes);
            Ok(tasks.iter().zip(servers).map(|(t, s)| (t.tensor, t.piece, t.offset, t.bytes, t.layer, s)).collect())
        })
    }

    /// Bytes of model state (weights, gradients, mixed-precision Adam's optimizer state) each
    /// of `workers` ranks holds for `params` parameters of `weight_bytes` bytes on `topology`
    /// (ZeRO's count: `tensorwire_core::strategy::Strategy::model_state_bytes`).
    fn model_state_bytes(
        &self,
        params: f64,
        weight_bytes: f64,
        topology: PyRef<'_, crate::cluster::PyTopology>,
        workers: usize,
    ) -> PyResult<f64> {
        guarded(|| self.inner.model_state_bytes(params, weight_bytes, &topology.inner, workers))
    }

    /// Parameter bytes each of `workers` ranks holds unsharded at once, at the peak of an
    /// iteration of `workload` on `topology`, beside its shards (what the sharded
    /// strategies gather to compute; 0 for the others:
    /// `tensorwire_core::strategy::Strategy::gathered_parameter_bytes`).
    fn gathered_parameter_bytes(
        &self,
        workload: PyRef<'_, crate::workload::PyWorkload>,
        topology: PyRef<'_, crate::cluster::PyTopology>,
        workers: usize,
    ) -> PyResult<f64> {
        guarded(|| self.inner.gathered_parameter_bytes(&workload.inner, &topology.inner, workers))
    }

    /// Parameter servers: the order in which server `server` sends to `workers` workers in
    /// a distribution round (the simulator's: from worker `server x workers / num_ps`,
    /// servers sharing a start by different strides). Refused for the other families.
    fn ps_worker_round(&self, server: usize, workers: usize) -> PyResult<Vec<usize>> {
        guarded(|| match &self.inner.family {
            Family::ParameterServer(c) if server < c.num_ps && workers > 0 => Ok(c.worker_round(server, workers)),
            Family::ParameterServer(c) => Err(tensorwire_core::Error::invalid(
                "server",
                format!("need 0 <= server < num_ps ({}) and workers >= 1 (got {server}, {workers})", c.num_ps),
            )),
            _ => Err(tensorwire_core::Error::invalid("strategy", "server rounds apply to parameter servers")),
        })
    }

    fn __repr__(&self) -> String {
        format!("Strategy({:?})", self.inner.spec)
    }
}
