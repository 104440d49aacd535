//! `tensorwire._core.Report`: the core's [`Report`] held as is, its fields read by getters.
//! This file and `metrics.rs` are where the fields are named; `tensorwire.Result` takes
//! them by name (`api._result`; `tests/unit/api/test_report_fields.py` checks that each
//! reaches it or is dropped on purpose).

use pyo3::prelude::*;

use tensorwire_core::metrics::{NcclPick, SpanKind};
use tensorwire_core::Report;

/// NCCL's choice as it crosses: (collective, algorithm, protocol, channels, channels per
/// peer of an all-to-all or None).
type PickTuple = (&'static str, &'static str, &'static str, usize, Option<usize>);

/// A span as it crosses: (kind, host, to hosts, label, links, start s, end s, bytes, NCCL's
/// choice for a timed collective).
type SpanTuple = (&'static str, usize, Vec<usize>, String, Vec<String>, f64, f64, f64, Option<PickTuple>);

fn pick(p: &NcclPick) -> PickTuple {
    (p.collective, p.algorithm, p.protocol, p.channels, p.peer_channels)
}

/// What one simulated job reports (see `tensorwire.Result` for the meaning of each field).
#[pyclass(name = "Report", module = "tensorwire._core", frozen)]
pub struct PyReport {
    pub inner: Report,
}

#[pymethods]
impl PyReport {
    /// Mean time per steady-state iteration, s.
    #[getter]
    fn iteration_time_s(&self) -> f64 {
        self.inner.iteration_time_s
    }
    /// When each iteration ended, s.
    #[getter]
    fn completions_s(&self) -> Vec<f64> {
        self.inner.completions_s.clone()
    }
    /// Samples per second of the whole job.
    #[getter]
    fn throughput_samples_per_s(&self) -> f64 {
        self.inner.throughput_samples_per_s
    }
    /// T_n / (n T_1) (seed 001): throughput over n times that of one worker computing the
    /// workload alone (its nominal compute; stragglers and interference lower it).
    #[getter]
    fn scaling_factor(&self) -> f64 {
        self.inner.scaling_factor
    }
    /// Compute an iteration waits for, s (stragglers' multiplier included, interference not).
    #[getter]
    fn compute_time_s(&self) -> f64 {
        self.inner.compute_time_s
    }
    /// Compute time rank 0 lost per iteration to communication kernels beside it, s.
    #[getter]
    fn compute_interference_s(&self) -> f64 {
        self.inner.compute_interference_s
    }
    /// Multi-job runs: when another job stopped as background load before this job's
    /// measured iterations ended, s (`None`: the others ran all along).
    #[getter]
    fn background_stopped_s(&self) -> Option<f64> {
        self.inner.background_stopped_s
    }
    /// Time rank 0 had any message in flight per iteration, s.
    #[getter]
    fn comm_time_s(&self) -> f64 {
        self.inner.comm_time_s
    }
    /// Time per iteration not covered by compute (iteration - compute - interference), s.
    #[getter]
    fn exposed_comm_s(&self) -> f64 {
        self.inner.exposed_comm_s
    }
    /// Gradient bytes each worker reduces per iteration, in the type they are reduced in.
    #[getter]
    fn gradient_bytes_per_worker(&self) -> f64 {
        self.inner.gradient_bytes_per_worker
    }
    /// Bytes rank 0's host put on the wire per iteration.
    #[getter]
    fn sent_bytes_per_worker(&self) -> f64 {
        self.inner.sent_bytes_per_worker
    }
    /// Each directed link's utilisation, `[(link, fraction)]`: bytes carried over the bytes
    /// it could have carried in the steady-state window (its mean rate over its capacity).
    #[getter]
    fn link_utilization(&self) -> Vec<(String, f64)> {
        self.inner.link_utilization.clone()
    }
    /// Events simulated.
    #[getter]
    fn events(&self) -> u64 {
        self.inner.events
    }
    /// Flows simulated.
    #[getter]
    fn flows(&self) -> u64 {
        self.inner.flows
    }
    /// Whether ranks that behave alike were folded.
    #[getter]
    fn folded(&self) -> bool {
        self.inner.folded
    }
    /// Ranks whose network part was simulated.
    #[getter]
    fn simulated_ranks(&self) -> usize {
        self.inner.simulated_ranks
    }
    /// Failures that took effect.
    #[getter]
    fn failures_applied(&self) -> usize {
        self.inner.failures_applied
    }
    /// Indices of the failures timed after the run ended.
    #[getter]
    fn failures_unreached(&self) -> Vec<usize> {
        self.inner.failures_unreached.clone()
    }
    /// The network model that ran.
    #[getter]
    fn network_model(&self) -> &str {
        &self.inner.network_model
    }
    /// Partial collectives: mean number of active processes per round (seed 002).
    #[getter]
    fn nap(&self) -> Option<f64> {
        self.inner.nap
    }
    /// Recorded spans (empty unless asked for), as [`SpanTuple`]s.
    #[getter]
    fn timeline(&self) -> Vec<SpanTuple> {
        self.inner
            .timeline
            .iter()
            .map(|s| {
                let kind = match s.kind {
                    SpanKind::Forward => "forward",
                    SpanKind::Backward => "backward",
                    SpanKind::Flow => "flow",
                    SpanKind::Collective => "collective",
                };
                let nccl = s.nccl.as_ref().map(pick);
                (kind, s.host, s.to.clone(), s.label.clone(), s.links.clone(), s.start_s, s.end_s, s.bytes, nccl)
            })
            .collect()
    }
    /// What NCCL chose for the collectives of one iteration: `[((collective, algorithm,
    /// protocol, channels, peer_channels), count, bytes, seconds, fastest_seconds, faster)]`,
    /// the most used first; `seconds` their times alone, `fastest_seconds` had each run the
    /// pair tensorwire times fastest, `faster` the (algorithm, protocol) saving the most of
    /// the difference, or None.
    #[getter]
    #[allow(clippy::type_complexity)]
    fn nccl_choices(&self) -> Vec<(PickTuple, u64, f64, f64, f64, Option<(&'static str, &'static str)>)> {
        self.inner
            .nccl_choices
            .iter()
            .map(|u| (pick(&u.pick), u.count, u.bytes, u.seconds, u.fastest_seconds, u.faster))
            .collect()
    }
}
