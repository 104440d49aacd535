//! What a run is asked to do: the [`Scenario`] (workload, cluster, strategy and the
//! engine's switches), its validation before anything is built, and the progress hook a
//! long run reports through.

use crate::collectives::Collective;
use crate::error::{Error, Result};
use crate::network::ModelKind;
use crate::strategy::{Algorithm, Family, Placement, Strategy};
use crate::topology::TopologySpec;
use crate::units::seconds_to_nanos;
use crate::workload::Workload;

use super::{Failure, Variability};

/// Everything a simulation needs.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The model.
    pub workload: Workload,
    /// Number of workers (data-parallel ranks), >= 1.
    pub workers: usize,
    /// Topology builder.
    pub topology: TopologySpec,
    /// Host link rate each way, bytes/s.
    pub bandwidth: f64,
    /// Latency per hop, s.
    pub latency: f64,
    /// Synchronisation strategy.
    pub strategy: Strategy,
    /// Network model.
    pub network: ModelKind,
    /// Iterations to simulate (the first is warm-up when there are several).
    pub iterations: u32,
    /// Seed of the simulation's random streams.
    pub seed: u64,
    /// Host overhead per message, s (added to its latency).
    pub per_message_overhead: f64,
    /// Host copy bandwidth limiting each flow, bytes/s; `None` for no limit.
    pub copy_bandwidth: Option<f64>,
    /// Compute-time variability.
    pub variability: Variability,
    /// Host of each rank (a permutation of `0..workers`); `None` for the identity.
    pub rank_to_host: Option<Vec<usize>>,
    /// Allow folding symmetric scenarios (results are the same; it is only faster).
    pub allow_folding: bool,
    /// Allow timing collectives whose messages each have links of their own by their
    /// step recurrence instead of message by message (`lanes.rs`: the same results, only
    /// faster); off, every message is a flow of the network model.
    pub allow_lanes: bool,
    /// Record the spans of one iteration (period) into [`Report::timeline`](crate::metrics::Report::timeline).
    pub record_timeline: bool,
    /// Refuse runs that need more than this many flows (a guard against runs that would
    /// take hours or exhaust memory; messages timed by lanes count 1/64 of a flow each:
    /// they cost no memory and a few nanoseconds). Checked up front against an upper
    /// bound of the run's work (`estimate.rs`), and while running; `None` for no limit
    /// ([`DEFAULT_MAX_FLOWS`](super::estimate::DEFAULT_MAX_FLOWS) is what the CLI and the Python API use by default).
    pub max_flows: Option<u64>,
    /// Called every [`PROGRESS_EVERY`] events (or messages timed without one, by lanes)
    /// and at least every 0.2 s of wall-clock time; returning `false` stops the run.
    pub progress: Option<ProgressHook>,
    /// Link and node failures during the run (a scenario with failures is not folded).
    pub failures: Vec<Failure>,
    /// Keep failures timed after the run's end (they change nothing; `Report::
    /// failures_applied` counts the others) instead of refusing them. For baselines that
    /// share another run's failures, such as each job of a multi-job run alone.
    pub allow_failures_after_end: bool,
}

/// How far a running simulation has got.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Iterations completed on every worker.
    pub iterations_done: u32,
    /// Iterations asked for.
    pub iterations: u32,
    /// Simulated time so far, s.
    pub simulated_s: f64,
    /// Events processed.
    pub events: u64,
    /// Flows started.
    pub flows: u64,
}

/// Events between two progress reports (and flow-budget checks).
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// A progress callback (see [`Scenario::progress`]).
#[derive(Clone)]
pub struct ProgressHook(pub std::sync::Arc<dyn Fn(&Progress) -> bool + Send + Sync>);

impl std::fmt::Debug for ProgressHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHook")
    }
}

/// Iterations a scenario simulates unless told otherwise: one warm-up and two measured, so
/// that the steady state is measured between two iteration ends.
pub const DEFAULT_ITERATIONS: u32 = 3;

/// Latency of one hop unless told otherwise, seconds (5 us; docs/simulator.md, "Latency").
pub const DEFAULT_LATENCY_S: f64 = 5e-6;

impl Scenario {
    /// A scenario with defaults: star, [`DEFAULT_LATENCY_S`] per hop, flow model,
    /// [`DEFAULT_ITERATIONS`] iterations, seed 0.
    pub fn new(workload: Workload, workers: usize, bandwidth: f64, strategy: Strategy) -> Self {
        Scenario {
            workload,
            workers,
            topology: TopologySpec::parse("star").expect("built-in"),
            bandwidth,
            latency: DEFAULT_LATENCY_S,
            strategy,
            network: ModelKind::Flow,
            iterations: DEFAULT_ITERATIONS,
            seed: 0,
            per_message_overhead: 0.0,
            copy_bandwidth: None,
            variability: Variability::None,
            rank_to_host: None,
            allow_folding: true,
            allow_lanes: true,
            record_timeline: false,
            max_flows: None,
            progress: None,
            failures: Vec::new(),
            allow_failures_after_end: false,
        }
    }

    /// The host transport of its flow-level messages: the strategy's `transport=`, else the
    /// fabric's, with the strategy's `overhead=`/`copy=` over it
    /// ([`crate::strategy::TransportChoice::resolve`]); `None`: the cluster's
    /// `per_message_overhead` and `copy_bandwidth`, links at line rate.
    pub(crate) fn host_transport(&self) -> Option<crate::strategy::Transport> {
        host_transport(&self.strategy, &self.topology)
    }

    pub(crate) fn validate(&self) -> Result<()> {
        self.workload.validate()?;
        if self.workload.collective != Collective::AllReduce
            && !matches!(self.strategy.family, Family::AllReduce(_) | Family::Nccl(_))
        {
            return Err(Error::invalid(
                "strategy",
                format!(
                    "{} workloads run under {}, not {}",
                    self.workload.collective.name(),
                    crate::strategy::algorithm::strategies_for(self.workload.collective),
                    self.strategy.spec
                ),
            ));
        }
        if self.workload.collective != Collective::AllReduce && self.strategy.partial.is_some() {
            return Err(Error::invalid(
                "strategy.partial",
                format!(
                    "partial collectives are all-reduces (seed 002); {} workloads cannot use them",
                    self.workload.collective.name()
                ),
            ));
        }
        if self.workers < 1 {
            return Err(Error::invalid("workers", "must be at least 1"));
        }
        if !(self.bandwidth.is_finite() && self.bandwidth > 0.0) {
            return Err(Error::invalid("bandwidth", "must be a rate greater than 0"));
        }
        if self.iterations < 1 {
            return Err(Error::invalid("iterations", "must be at least 1"));
        }
        if let Some(c) = self.copy_bandwidth {
            if !(c.is_finite() && c > 0.0) {
                return Err(Error::invalid("copy_bandwidth", "must be a rate greater than 0"));
            }
        }
        self.check_host_transport()?;
        self.variability.validate(self.workers)?;
        self.check_bounds()?;
        if let Some(p) = &self.rank_to_host {
            let mut seen = vec![false; self.workers];
            if p.len() != self.workers || p.iter().any(|&h| h >= self.workers || std::mem::replace(&mut seen[h], true))
            {
                return Err(Error::invalid("rank_to_host", "must be a permutation of 0..workers"));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// Refuses a cluster's per-message overhead or copy rate where the host transport comes
    /// from the strategy or the fabric ([`Scenario::host_transport`]): one of the two would
    /// be ignored, so the cluster's is refused, naming where to give it instead.
    fn check_host_transport(&self) -> Result<()> {
        if self.host_transport().is_none() {
            return Ok(());
        }
        let from = match (self.strategy.transport.preset, self.topology.transport_option()) {
            (Some(p), _) => format!("its transport={p}"),
            (None, Some(p)) => format!("the fabric's transport={p}"),
            (None, None) => "its overhead= and copy=".to_string(),
        };
        for (field, given) in
            [("overhead", self.per_message_overhead > 0.0), ("copy_bandwidth", self.copy_bandwidth.is_some())]
        {
            if given {
                let option = if field == "copy_bandwidth" { "copy" } else { "overhead" };
                return Err(Error::invalid(
                    field,
                    format!(
                        "{} takes its host transport from {from}, which sets the {}; give {option}= in the strategy instead (it overrides the transport's)",
                        self.strategy.spec,
                        if option == "copy" { "copy rate" } else { "per-message overhead" },
                    ),
                ));
            }
        }
        Ok(())
    }

    /// What a run stopped at the horizon names as its likely cause: the rates given that
    /// would hold the workload's bytes past it if every byte crossed them (`topology.uplink`,
    /// a failure's rate), and a fusion cycle that would pass it if a buffer waited it every
    /// iteration. None is refused up front: a link holds only the messages that cross it,
    /// and a buffer that fills does not wait.
    pub(crate) fn horizon_suspects(&self) -> Vec<String> {
        let bytes = self.workload.total_bytes() as f64;
        let failed = self.failures.iter().filter(|f| f.rate > 0.0).map(|f| f.rate).fold(f64::INFINITY, f64::min);
        let mut out: Vec<String> = self
            .topology
            .given_rates()
            .into_iter()
            .map(|(name, r)| (format!("topology.{name}"), r))
            .chain(failed.is_finite().then(|| ("failures (rate)".to_string(), self.bandwidth * failed)))
            .filter(|(_, r)| bytes / r >= crate::limits::HORIZON_S)
            .map(|(f, r)| {
                format!("{f} at {} bytes/s would hold the workload's bytes that long", crate::units::format_number(r))
            })
            .collect();
        if let Some(f) = &self.strategy.fusion {
            if f.cycle as f64 * (f64::from(self.iterations) + 1.0) >= crate::limits::HORIZON_NS as f64 {
                out.push(format!(
                    "strategy.cycle of {} s, waited every iteration, would pass it",
                    crate::units::format_number(f.cycle as f64 / 1e9)
                ));
            }
        }
        out
    }

    /// Refuses, naming the input, what would pass the memory limits or the simulation
    /// horizon (`limits.rs`) before anything is built.
    fn check_bounds(&self) -> Result<()> {
        use crate::limits::{at_most, HORIZON_S, MAX_ITERATIONS, MAX_PIECES, MAX_WORKERS, MAX_WORKER_ITERATIONS};
        at_most("workers", self.workers as u64, MAX_WORKERS as u64, "workers")?;
        at_most("iterations", u64::from(self.iterations), u64::from(MAX_ITERATIONS), "iterations")?;
        let pairs = self.workers as u64 * u64::from(self.iterations);
        if pairs > MAX_WORKER_ITERATIONS {
            return Err(Error::invalid(
                "iterations",
                format!(
                    "{} iterations of {} workers are more than the {MAX_WORKER_ITERATIONS} worker-iterations a run can hold; simulate fewer iterations",
                    self.iterations, self.workers
                ),
            ));
        }
        // Durations: each below the horizon, and so far below it that a collective's chain
        // of steps (up to 2 per worker, a few hops each) cannot pass it within one event.
        let strategy = &self.strategy;
        let (overhead, copy) = match self.host_transport() {
            Some(t) => (("strategy.overhead", t.overhead_s), ("strategy.copy", t.copy_bytes_per_s)),
            None => (("per_message_overhead", self.per_message_overhead), ("copy_bandwidth", self.copy_bandwidth)),
        };
        check_step_durations(strategy, self.workers, ("latency", self.latency), overhead)?;
        // Transfers: the workload's bytes at each rate every message is held to (the hosts'
        // links, a host copy, the adds of `reduce=`), named by the option that set it: past
        // the horizon the run would stop there and could only say "horizon". (A fabric's own
        // links and a failure's rate hold only the messages that cross them: the run decides,
        // and `horizon_suspects` names them if it stops at the horizon.)
        let bytes = self.workload.total_bytes() as f64;
        // (`reduce=` under NCCL's timing is refused where the run is built, saying why.)
        let timed = matches!(&strategy.family, Family::Sharded(_)) && strategy.timed_by_nccl(&self.topology);
        let reduce = strategy.reduce_bytes_per_s.filter(|_| !timed);
        let rates = [("bandwidth", Some(self.bandwidth)), copy, ("strategy.reduce", reduce)];
        for (field, rate) in rates {
            if let Some(rate) = rate {
                if bytes / rate >= HORIZON_S {
                    return Err(Error::invalid(
                        field,
                        format!(
                            "at {} bytes/s the workload's {bytes} bytes take past the simulation horizon of {HORIZON_S:.0} s (2^53 ns, 104 days); use a rate that moves them far faster",
                            crate::units::format_number(rate)
                        ),
                    ));
                }
            }
        }
        // Compute under fixed slowdowns.
        if let Variability::Slowdowns(s) = &self.variability {
            let worst = s.iter().copied().fold(1.0, f64::max);
            if self.workload.compute_time() as f64 * worst >= crate::limits::HORIZON_NS as f64 {
                return Err(Error::invalid(
                    "slowdowns",
                    format!(
                        "a slowdown of {} makes an iteration's compute pass the simulation horizon of {HORIZON_S:.0} s (2^53 ns, 104 days)",
                        crate::units::format_number(worst)
                    ),
                ));
            }
        }
        // Pieces per iteration (each a task with its own state).
        let pieces = |size: u64| -> u64 { self.workload.tensors.iter().map(|t| t.bytes.div_ceil(size).max(1)).sum() };
        let too_many = |field: &str, size: u64, n: u64| {
            Error::invalid(
                field,
                format!(
                    "{size} bytes cut the workload into {n} pieces per iteration, more than the {MAX_PIECES} a run can hold; use larger pieces"
                ),
            )
        };
        if let Some(size) = strategy.partition {
            let n = pieces(size.max(1));
            if n > MAX_PIECES {
                let field =
                    if strategy.spec.contains("pipeline=") { "strategy.pipeline" } else { "strategy.partition" };
                return Err(too_many(field, size, n));
            }
        }
        if let Family::ParameterServer(c) = &strategy.family {
            if c.placement == Placement::Sharded {
                // Every piece (or tensor) split once more over every server.
                let n = strategy.partition.map_or(self.workload.tensors.len() as u64, |p| pieces(p.max(1)));
                let n = n.saturating_mul(c.num_ps as u64);
                if n > MAX_PIECES {
                    return Err(Error::invalid(
                        "strategy.num_ps",
                        format!(
                            "{} servers with placement=sharded cut the workload into {n} pieces per iteration, more than the {MAX_PIECES} a run can hold",
                            c.num_ps
                        ),
                    ));
                }
            }
        }
        if let Family::AllReduce(Algorithm::DoubleTree) = strategy.family {
            let chunk = strategy.pipeline_chunk.max(1.0) as u64;
            let n = pieces(chunk);
            if n > MAX_PIECES {
                return Err(too_many("strategy.chunk", chunk, n));
            }
        }
        if let Family::Sharded(cfg) = &strategy.family {
            let (reduce, gather) = cfg.bucket_bytes(self.workload.dtype_bytes);
            let bucket = reduce.min(gather);
            let n = self.workload.total_bytes().div_ceil(bucket.max(1));
            if n > MAX_PIECES {
                // The option the user set: bucket= sets both; else the smaller of the two.
                let field = match (cfg.bucket_override, reduce <= gather) {
                    (Some(_), _) => "strategy.bucket",
                    (None, true) => "strategy.reduce_bucket",
                    (None, false) => "strategy.allgather_bucket",
                };
                return Err(too_many(field, bucket, n));
            }
        }
        strategy.check_workers(self.workers)?;
        self.topology.check_size(self.workers, strategy.servers())
    }
}

/// Refuses a per-message duration, s, so long that the chain of steps of one collective
/// on `workers` workers (up to 2 per worker, a few hops each) could pass the simulation
/// horizon within one event: `latency` and `overhead` as (field, seconds), then the
/// strategy's dispatch cost. Shared by [`Scenario::validate`] and [`super::check`], which
/// must refuse alike.
pub(crate) fn check_step_durations(
    strategy: &Strategy,
    workers: usize,
    latency: (&str, f64),
    overhead: (&str, f64),
) -> Result<()> {
    use crate::limits::HORIZON_S;
    let chain = 8 * (workers as u64 + 4);
    // `nccl`/`ddp` take the per-call cost as launch=, paid once per NCCL call whatever the
    // ranks (a few calls' worth bounds it); the flow-level strategies take dispatch=, paid on
    // each step's messages.
    let nccl = matches!(strategy.family, Family::Nccl(_));
    let dispatch = if nccl { "strategy.launch" } else { "strategy.dispatch" };
    let per_call = (dispatch, strategy.dispatch_s, nccl);
    for (field, seconds, once_per_call) in [(latency.0, latency.1, false), (overhead.0, overhead.1, false), per_call] {
        let ns = seconds_to_nanos(field, seconds)?;
        if ns.saturating_mul(if once_per_call { 8 } else { chain }) >= crate::limits::HORIZON_NS {
            let what = if once_per_call {
                "per NCCL call makes a few calls".to_string()
            } else {
                format!("per message makes the steps of a collective on {workers} workers")
            };
            return Err(Error::invalid(
                field,
                format!(
                    "{} s {what} pass the simulation horizon of {HORIZON_S:.0} s (2^53 ns, 104 days)",
                    crate::units::format_number(seconds),
                ),
            ));
        }
    }
    Ok(())
}

/// The host transport of `strategy`'s flow-level messages on `topology`: the strategy's
/// `transport=`, else the fabric's, with the strategy's `overhead=`/`copy=` over it
/// ([`crate::strategy::TransportChoice::resolve`]); `None`: the cluster's own
/// `per_message_overhead` and `copy_bandwidth`. What a run ([`Scenario::host_transport`])
/// and the run-free check ([`super::check::check`]) both use.
pub(crate) fn host_transport(
    strategy: &crate::strategy::Strategy,
    topology: &crate::topology::TopologySpec,
) -> Option<crate::strategy::Transport> {
    strategy.transport.resolve(topology.transport_option())
}
