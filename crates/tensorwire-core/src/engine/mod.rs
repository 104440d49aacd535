//! The discrete-event engine. Time is integer nanoseconds; the event queue is keyed by
//! (time, sequence number) and the network model's events at equal times come first, so
//! the same scenario and seed give byte-identical results.
//!
//! Each worker runs its compute as one sequential stream: forward layers in order (layer
//! `i` of iteration `k` waits until its parameters of iteration `k-1` are synchronised:
//! per layer for parameter servers, whose workers pipeline the forward pass with the
//! distribution phase; for the whole model for all-reduce, as in DDP and Horovod), then
//! backward layers in reverse, handing each layer's gradient pieces to the worker's
//! [`Scheduler`], which releases them to the strategy's protocol.
//! When a released collective starts, and on which ranks (coordinated release, partial
//! collectives, dispatch and stream pacing), is `coordination.rs`.
//!
//! **Folding** (DESIGN.md principle 5). When every worker computes alike, the topology
//! looks the same from every rank (a star, or a physical ring for neighbour-only
//! schedules) and the strategy is rank-symmetric, every rank does the same thing at the
//! same time. The engine then simulates rank 0 only; its flows carry weight 1 on links
//! that each rank has a copy of and weight N on links all ranks share. Tests check that
//! the folded and the full simulation agree.
//!
//! Beyond that, **digit folding** (`fold.rs`) uses the translations of the rank layout's
//! digits that both the topology and the schedule are invariant under (e.g. the rail
//! groups of a rail-optimised fat-tree for ring all-reduce) and simulates one
//! representative rank per orbit.

mod check;
mod coordination;
mod driver;
mod estimate;
mod failures;
mod fold;
mod interference;
mod jobs;
mod lag;
mod lanes;
mod nccl_times;
mod program;
mod ps;
mod report;
mod scenario;
mod sharded;
mod slab;
mod state;
mod step;
mod timed;
mod variability;

pub use check::{check, network_model as check_network_model};
pub use estimate::DEFAULT_MAX_FLOWS;
pub use failures::Failure;
pub use jobs::{place_jobs, simulate_jobs, Job, JobSeat, BACKGROUND_FACTOR};
pub(crate) use report::{build_report, Measured};
pub use scenario::{Progress, ProgressHook, Scenario, DEFAULT_ITERATIONS, DEFAULT_LATENCY_S, PROGRESS_EVERY};
pub(crate) use sharded::{peak_gathered_bytes, shard_group as hsdp_shard_group};
pub use variability::{Variability, MAX_SPREAD};

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use self::driver::SimulatedJob;
use self::interference::{Added, InFlight, Interference, Piece};
use self::slab::Slab;
use self::state::{Note, Protocol, SimState};
use crate::collectives::StepSchedule;
use crate::error::Result;
use crate::metrics::Report;
use crate::sched::{partition, Group, Policy, Scheduler, Task, TaskRef};
use crate::strategy::Family;
use crate::topology::Shape;
use crate::units::{nanos_to_seconds, seconds_to_nanos, Nanos};
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Forward(usize),
    Backward(usize),
    /// Waiting for parameters before the forward pass of this layer.
    Gate(usize),
    Finished,
}

struct Worker {
    iteration: u32,
    op: Op,
    /// Per layer: the iteration whose forward pass may use its current parameters.
    version: Vec<u32>,
    /// Per layer: pieces of the pending synchronisation still to arrive.
    pieces_left: Vec<u32>,
    /// Per iteration: layers whose synchronisation is complete.
    synced_layers: Vec<u32>,
    /// Iterations whose backward pass is over.
    backward_done: u32,
    /// Iterations complete (backward over and every parameter synchronised).
    complete: u32,
    /// When each iteration completed on this worker, ns.
    completed_at: Vec<Nanos>,
    /// Compute multiplier of the current iteration.
    slowdown: f64,
    /// Compute time interference added so far (`compute_slowdown`), ns.
    added: Added,
    /// The compute running now, when compute interference is modelled.
    running: Option<Running>,
    /// Stamp of the latest compute event scheduled (older ones are stale).
    generation: u32,
}

/// A compute piece under interference (`compute_slowdown`, `interference.rs`).
#[derive(Debug, Clone, Copy)]
struct Running {
    piece: Piece,
    /// Its entry in the recorded compute spans, if recording.
    span: Option<usize>,
}

/// A scheduler and the fusion timer it has pending.
struct SchedSlot {
    sched: Scheduler,
    timer_at: Option<Nanos>,
}

/// A released operation: its tasks, its bytes, whose scheduler released it, and how many
/// ranks have finished their part.
struct OpState {
    tasks: Vec<TaskRef>,
    bytes: u64,
    scope: usize,
    done: usize,
}

/// A recorded compute interval: rank, layer, backward?, start, end.
pub(crate) type ComputeSpan = (usize, usize, bool, Nanos, Nanos);

/// Queue entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// The worker's current compute finished (the worker, the stamp it was scheduled
    /// with: a piece rescheduled by interference leaves a stale event behind).
    Compute(usize, u32),
    /// A scheduler's fusion deadline.
    Timer(usize),
    /// A partial collective's activation reaches a rank: it starts the op.
    Activate { rank: usize, op: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Forward waits for the whole model (all-reduce with a global barrier).
    Global,
    /// Forward of layer i waits for layer i (parameter servers; crossing the barrier).
    PerLayer,
}

struct Engine<'a> {
    sc: &'a Scenario,
    /// What the run will simulate, counted up front (`estimate.rs`).
    work: estimate::Work,
    /// Ranks the protocol simulates: 1 when folded, else every worker. Workers whose
    /// compute differs are simulated one by one even then (`workers`).
    net_ranks: usize,
    /// This job's index in the core (its flows and its rank 0's host; 0 alone).
    job: usize,
    /// Hosts of the ranks when not the core's (a job of a multi-job run).
    hosts: Option<Vec<usize>>,
    protocol: Box<dyn Protocol>,
    tasks: Vec<Task>,
    /// Per layer: its task ids in release order (tensors reversed, pieces in order).
    layer_tasks: Vec<Vec<u32>>,
    layer_pieces: Vec<u32>,
    syncable_layers: u32,
    gate: Gate,
    workers: Vec<Worker>,
    sampler: variability::Sampler,
    /// One scheduler per simulated worker, or one coordinator for all (all-reduce).
    scheds: Vec<SchedSlot>,
    coordinated: bool,
    /// Ranks on which each task instance is ready (coordinated scheduling).
    ready_on: HashMap<TaskRef, usize>,
    ops: Slab<OpState>,
    queue: BinaryHeap<Reverse<(Nanos, u64, Event)>>,
    seq: u64,
    events: u64,
    /// Iterations each worker runs: `sc.iterations`, or more in a multi-job run, where a
    /// job that has finished its measured iterations goes on as background load for the
    /// others ([`Engine::run_until`]).
    limit: u32,
    /// Per iteration: workers that completed it (grows with the iterations run).
    completed: Vec<u32>,
    /// When each of the measured iterations (`sc.iterations`) completed on every worker,
    /// and the counters the report's window starts and ends at (the rest of it is filled
    /// in by [`SimulatedJob::report`]).
    out: Measured,
    /// Rank 0's (communication busy time, bytes sent) at its own first and last
    /// completions (see [`Measured::rank0`]).
    rank0: [Option<(Nanos, f64)>; 2],
    released: Vec<Group>,
    /// Partial collectives: the stream drawing majority initiators, each task's drawn
    /// initiator, the initiator of each task the coordinator may schedule (its round, once
    /// the scheduler releases it), and (iteration, active ranks) per round.
    initiators: rand_pcg::Pcg64,
    designated: HashMap<TaskRef, usize>,
    round_of: HashMap<TaskRef, usize>,
    active: Vec<(u32, usize)>,
    /// Partial rounds released while some ranks were not yet ready, by their first task:
    /// (index in `active`, release time, initiator). A rank ready by the time the activation
    /// reaches it contributes too.
    open_rounds: HashMap<TaskRef, (usize, Nanos, usize)>,
    /// Partial collectives with `max_lag`: what each rank has ready, and the activations
    /// waiting for it.
    lag: Option<lag::Lag>,
    /// Coordinator's dispatch cost per collective, ns, and when it may start the next one.
    dispatch: Nanos,
    dispatch_free: Nanos,
    /// `execution=stream`: released collectives waiting for the stream, each with the
    /// time its dispatch ends, and whether one runs (or waits for its dispatch) now.
    stream: Option<VecDeque<(Nanos, u64)>>,
    stream_busy: bool,
    /// `execution=stream`: when the last collective started on the stream; the next starts
    /// at least `dispatch` later (the per-collective cost paces the stream).
    stream_started: Option<Nanos>,
    /// Compute spans (rank, layer, backward?, start, end), when recording.
    compute_spans: Option<Vec<ComputeSpan>>,
    /// Digit folding: which rank each simulated worker is.
    rank_fold: Option<fold::RankFold>,
    /// Compute slowdown while a collective is in flight.
    interference: Interference,
    /// Collectives in flight (interference: compute is slow while there is one; every
    /// rank takes part in each), per op the simulated ranks that have started it (until
    /// all have), and the ops that count as in flight (started on every simulated rank, or
    /// a partial round's initiator started it), until they end.
    comm_active: InFlight,
    started: HashMap<u64, usize>,
    communicating: std::collections::HashSet<u64>,
}

/// The engine state shared with protocols, for `topo` (folded or not).
fn build_core(sc: &Scenario, topo: crate::topology::Topology, folded: bool) -> Result<SimState> {
    let strategy = &sc.strategy;
    // The transport's goodput share of every link's line rate (1 without a preset).
    let transport = sc.host_transport();
    let efficiency = transport.map_or(1.0, |t| t.efficiency);
    let caps = topo.links().iter().map(|l| l.bytes_per_ns * efficiency).collect();
    let net = sc.network.build(caps);
    let (overhead_s, copy) = match transport {
        Some(t) => (t.overhead_s, t.copy_bytes_per_s),
        None => (sc.per_message_overhead, sc.copy_bandwidth),
    };
    let overhead = seconds_to_nanos("per_message_overhead", overhead_s)?;
    let copy_cap = copy.map_or(f64::INFINITY, |c| c / 1e9);
    let host_of_rank = sc.rank_to_host.clone().unwrap_or_else(|| (0..sc.workers).collect());
    let failures = failures::Pending::resolve(&sc.failures, &topo)?;
    let mut core = SimState::new(net, topo, host_of_rank, folded, overhead, copy_cap);
    core.failures = failures;
    core.efficiency = efficiency;
    core.ordered_pairs = strategy.ordered_streams;
    core.pipelined_segments = strategy.pipelined_segments;
    if sc.record_timeline {
        core.recorded = Some(Vec::new());
        core.recorded_timed = Some(Vec::new());
    }
    Ok(core)
}

/// The step schedule of an all-reduce strategy for `n` ranks on `topo` (`None` for the
/// other families): the strategy's choice for the workload's collective
/// ([`crate::strategy::Strategy::schedule`]).
pub(crate) fn allreduce_schedule(
    sc: &Scenario,
    n: usize,
    topo: &crate::topology::Topology,
) -> Result<Option<Box<dyn StepSchedule>>> {
    sc.strategy.schedule(sc.workload.collective, &sc.topology, n, topo)
}

/// Simulates the scenario and reports its steady state. A failure timed after the run
/// ended is refused (see [`Scenario::allow_failures_after_end`]).
pub fn simulate(sc: &Scenario) -> Result<Report> {
    let report = prepare(sc, Mode::Simulate)?.expect("a simulation reports");
    failures::refuse_after_end(sc, std::slice::from_ref(&report))?;
    Ok(report)
}

/// Refuses `sc` as [`simulate`] would before simulating anything: the scenario, the
/// fabric, the strategy on it with the workload (pieces, schedules, NCCL's restrictions)
/// and the flow budget (`max_flows`), in the same order and with the same errors. Builds
/// the fabric and the engine, runs no event: for checking every point of a sweep up front.
/// What only a run can find (a time past the horizon, a failure timed after the end, the
/// flow budget's check while running) is not checked.
pub fn check_scenario(sc: &Scenario) -> Result<()> {
    prepare(sc, Mode::Check).map(|_| ())
}

/// Iterations a parameter-server job starts beyond its measured ones: one. Its workers
/// run ahead of each other (a worker's next push as soon as its pulls are in), so each
/// iteration's pulls share the links with the next one's pushes; the last measured
/// iteration needs its successor to do the same, or it runs alone on the links and the
/// steady state comes out fast (servers on the workers' hosts, 64 MiB on 8 workers at 100
/// Gbit/s: 20.4 ms at 3 iterations, 23.7 at 10, 24.7 between completions in the steady
/// state). A run alone completes that iteration too and reports the measured ones (its links
/// per iteration from all of them); a job of a multi-job run goes on past its measured
/// iterations anyway. The other strategies' iterations do not overlap on the links (the
/// next forward pass waits for every layer's synchronisation).
pub(crate) fn iterations_beyond(sc: &Scenario) -> u32 {
    u32::from(matches!(sc.strategy.family, Family::ParameterServer(_)))
}

/// What [`prepare`] does once a scenario is built and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Runs it: the report.
    Simulate,
    /// Stops there: no report.
    Check,
}

/// Refuses what NCCL's closed-form timing does not see, for a strategy it times (`nccl`,
/// `ddp`, or `sharded`'s strategy on `comm=nccl`): a host overhead per message
/// (`--overhead`), a host copy rate (`copy_bandwidth`), a host reduction rate (`reduce=`), a sharded strategy's flow-level
/// algorithm (`algorithm=`), a rank placement other than packed and a network model other
/// than the default (`analytical`). Each changes only
/// messages simulated as flows, so it would be accepted and change nothing.
pub(super) fn check_nccl_timed(sc: &Scenario, sharded: Option<&crate::strategy::ShardedConfig>) -> Result<()> {
    let spec = &sc.strategy.spec;
    let refuse = |field: &str, what: &str| Err(check::unseen_by_nccl(&sc.strategy, field, what));
    if sc.per_message_overhead > 0.0 {
        return refuse("overhead", "has its own latencies (calibrate them on the topology: inter_latency=)");
    }
    if sc.copy_bandwidth.is_some() {
        return refuse(
            "copy_bandwidth",
            "moves data at its links' and protocols' rates (calibrate: inter_efficiency=)",
        );
    }
    if sc.strategy.reduce_bytes_per_s.is_some() {
        return refuse("strategy.reduce", "reduces on the GPUs at its own bandwidths (calibrate: intra_efficiency=)");
    }
    if sharded.is_some_and(|c| c.algorithm != crate::strategy::ShardAlgorithm::Auto) {
        return refuse("strategy.algorithm", "chooses its own algorithm (nccl's algo= restricts it for nccl and ddp)");
    }
    if sc.rank_to_host.is_some() {
        return refuse("rank_placement", "places ranks as NCCL's communicators do, a node's GPUs together (packed)");
    }
    check::network_model(&sc.strategy, &sc.topology, sc.network)?;
    if let Family::Nccl(cfg) = &sc.strategy.family {
        if cfg.options.pxn && sc.workload.collective != crate::collectives::Collective::AllToAll {
            // Accepted, it changed nothing: PXN routes point-to-point sends (all-to-all).
            return Err(crate::error::Error::invalid(
                "strategy.pxn",
                format!(
                    "applies to all-to-all (NCCL routes point-to-point sends through PXN); {spec} runs {}s here, \
                     which it does not change",
                    sc.workload.collective.name()
                ),
            ));
        }
    }
    Ok(())
}

/// Builds and checks `sc`, then simulates it under [`Mode::Simulate`] (without the check
/// of failures after the end) or stops under [`Mode::Check`].
fn prepare(sc: &Scenario, mode: Mode) -> Result<Option<Report>> {
    sc.validate()?;
    let n = sc.workers;
    let strategy = &sc.strategy;
    if let Family::Sharded(cfg) = &strategy.family {
        return sharded::simulate(sc, cfg, mode);
    }
    if matches!(strategy.family, Family::Nccl(_)) {
        check_nccl_timed(sc, None)?;
    }
    if matches!(strategy.family, Family::Nccl(_)) && !sc.failures.is_empty() {
        return Err(crate::error::Error::invalid(
            "failures",
            format!(
                "{} times its collectives with NCCL's model, without links to fail; simulate failures under ring, hierarchical or fsdp:comm=flows",
                strategy.spec
            ),
        ));
    }
    let latency = seconds_to_nanos("latency", sc.latency)?;
    let (topo, schedule) = check::fabric(strategy, &sc.topology, sc.workload.collective, n, sc.bandwidth, latency)?;
    // What every folding needs: allowed, ranks to merge, nothing that changes over time
    // or singles out hosts.
    let may_fold = sc.allow_folding && n > 1 && sc.failures.is_empty() && sc.rank_to_host.is_none();
    // Stragglers do not prevent folding the network of a coordinated all-reduce: every
    // rank starts each collective at the same instant (when the last is ready), so the
    // collective itself stays symmetric; compute is then simulated per worker.
    // NCCL's timed collectives end on every rank at once, without flows: one rank stands
    // for all (compute per worker with stragglers).
    let timed = matches!(strategy.family, Family::Nccl(_));
    let folded = may_fold
        && strategy.partial.is_none()
        && (timed
            || (sc.variability.is_uniform() || matches!(strategy.family, Family::AllReduce(_)))
                && match &schedule {
                    Some(s) => {
                        s.rank_symmetric(n)
                            && topo.rotation_symmetric(n)
                            && (matches!(topo.shape(), Shape::Star) || s.neighbours_only())
                    }
                    None => false,
                });
    // Digit folding where the star/ring folding does not apply (same conditions otherwise).
    let digit_fold = match &schedule {
        Some(s) if !folded && may_fold && strategy.partial.is_none() && sc.variability.is_uniform() => {
            fold::DigitFold::new(&topo, n, s.as_ref())
        }
        _ => None,
    };
    // Parameter servers fold by server class (`ps.rs`) on a star whose workers are alike
    // and send every piece of a tensor as soon as it is ready (no credit or in-flight limit;
    // one connection per pair would serialise what the folding runs side by side).
    let star = matches!(topo.shape(), Shape::Star);
    let server_classes = match &strategy.family {
        Family::ParameterServer(c) => {
            let allowed = may_fold
                && sc.variability.is_uniform()
                && star
                && !strategy.ordered_streams
                && strategy.limits.credit_bytes.is_none()
                && strategy.limits.max_tasks.is_none()
                && strategy.partition.is_none();
            let classes = ps::ServerClasses::new(c, &sc.workload, n, allowed);
            // Counted before the run's state is built (`estimate::ps_work`).
            let tasks = c.tasks(&sc.workload, strategy.partition)?.len();
            estimate::check(sc, estimate::ps_work(sc, c.num_ps, tasks, classes.is_some()), star)?;
            classes
        }
        _ => None,
    };
    let mut core = build_core(sc, topo, folded)?;
    let rank_fold = digit_fold.map(|f| core.fold_by_digits(f));
    if let Some(classes) = server_classes {
        core.link_fold = Some(classes.links(&core.topo, n));
    }
    let folding = Folding { folded, rank_fold, server_classes, lanes: sc.allow_lanes };
    let mut engine = Engine::new(sc, &mut core, schedule, folding, 0, None)?;
    estimate::check(sc, engine.work, matches!(core.topo.shape(), Shape::Star))?;
    if mode == Mode::Check {
        return Ok(None);
    }
    driver::drive(sc, &mut [&mut engine], &mut core)?;
    Ok(Some(engine.report(&mut core)))
}

/// How a run is folded (see [`simulate`]); a job of a multi-job run is not.
#[derive(Default)]
struct Folding {
    /// Star/ring folding: one simulated rank.
    folded: bool,
    /// Digit folding: which rank each simulated worker is.
    rank_fold: Option<fold::RankFold>,
    /// Parameter servers folded by server class.
    server_classes: Option<ps::ServerClasses>,
    /// Whether lanes may time the collectives (`lanes.rs`; they also need conditions of
    /// the strategy, checked here).
    lanes: bool,
}

/// Fabric hosts of a job's workers and parameter servers (multi-job runs; a run alone
/// uses the core's placement and the topology's server hosts).
#[derive(Debug, Clone)]
pub(crate) struct JobHosts {
    pub workers: Vec<usize>,
    pub servers: Vec<usize>,
}

impl<'a> Engine<'a> {
    /// The engine of `sc` as job `job` on `core`, folded by `folding`, its ranks on
    /// `hosts` where given. `schedule` is the all-reduce's (see [`allreduce_schedule`]).
    fn new(
        sc: &'a Scenario,
        core: &mut SimState,
        schedule: Option<Box<dyn StepSchedule>>,
        folding: Folding,
        job: usize,
        hosts: Option<JobHosts>,
    ) -> Result<Self> {
        let n = sc.workers;
        let strategy = &sc.strategy;
        let Folding { folded, rank_fold, server_classes, lanes } = folding;
        let tasks = match &strategy.family {
            Family::ParameterServer(c) => c.tasks(&sc.workload, strategy.partition)?,
            Family::Nccl(crate::strategy::NcclConfig { buckets: Some(b), .. }) => {
                crate::strategy::nccl::ddp_buckets(&sc.workload, *b)
            }
            _ => partition(&sc.workload, strategy.partition)?,
        };
        let layers = sc.workload.layers.len();
        let mut layer_tasks = vec![Vec::new(); layers];
        for t in tasks.iter().rev() {
            layer_tasks[t.layer].push(t.id as u32);
        }
        for list in &mut layer_tasks {
            // Tensors in reverse, but the pieces of one tensor in order.
            list.sort_by_key(|&id| (std::cmp::Reverse(tasks[id as usize].tensor), tasks[id as usize].piece));
        }
        let layer_pieces: Vec<u32> = layer_tasks.iter().map(|l| l.len() as u32).collect();
        let syncable_layers = layer_pieces.iter().filter(|&&p| p > 0).count() as u32;
        // Gradients on the wire: at reduce_dtype (default: as listed), then compressed.
        let wire_factor = strategy.gradient_dtype_factor(sc.workload.dtype_bytes) / strategy.compression;
        let reduce_ns_per_byte = strategy.reduce_bytes_per_s.map_or(0.0, |r| 1e9 / r);
        let work: estimate::Work;
        let (protocol, gate): (Box<dyn Protocol>, Gate) = match (&strategy.family, schedule) {
            (Family::ParameterServer(c), _) => {
                work = estimate::ps_work(sc, c.num_ps, tasks.len(), server_classes.is_some());
                let sizes: Vec<u64> = sc.workload.tensors.iter().map(|t| t.bytes).collect();
                let settings = ps::PsSettings { wire_factor, reduce_ns_per_byte };
                (
                    Box::new(
                        ps::ParameterServer::new(c.clone(), settings, tasks.clone(), &sizes, n)
                            .folded_by(server_classes)
                            .on_hosts(hosts.clone()),
                    ),
                    Gate::PerLayer,
                )
            }
            // NCCL: each collective timed by NCCL's tuning model, no flow; one communicator
            // (the strategy's stream) runs them in release order.
            (Family::Nccl(cfg), _) => {
                let ranks = if folded { 1 } else { n };
                let ops = (tasks.len() as u64).saturating_mul(ranks as u64).saturating_mul(u64::from(sc.iterations));
                // One rank stands for all in the collectives (`ops`); stragglers still
                // compute apart.
                let computing = if sc.variability.is_uniform() { ranks } else { n };
                work = estimate::Work {
                    flows: ops,
                    lane_messages: 0,
                    weight: estimate::TIMED_COLLECTIVE_WEIGHT,
                    rank_events: estimate::rank_events(computing, sc.workload.layers.len(), 0, sc.iterations),
                };
                let sizes: Vec<u64> = tasks.iter().map(|t| t.bytes).collect();
                let durations = nccl_durations(sc, cfg, wire_factor, &sizes)?;
                (Box::new(timed::TimedCollective::new(durations, ranks)), Gate::Global)
            }
            // Crossing the global barrier comes with priority scheduling (ByteScheduler, seed 004).
            (_, Some(schedule)) => {
                let settings = step::StepSettings {
                    wire_factor,
                    reduce_ns_per_byte,
                    pipeline_bytes: strategy.pipeline_chunk,
                    max_pipeline: 256,
                    element_bytes: f64::from(sc.workload.dtype_bytes),
                };
                // One collective at a time over the whole fabric (the coordinator releases the
                // next once every rank finished), nothing else on the network, flows timed by
                // a model that can time them alone, capacities fixed from the start (failures
                // only as slow links from time 0, applied before anything starts): lanes, if
                // the schedule and fabric have them.
                let lanes = if lanes
                    && !folded
                    && sc.failures.iter().all(|f| f.at_s == 0.0 && f.rate > 0.0)
                    && !sc.record_timeline
                    && !core.ordered_pairs
                    && core.net.alone().is_some()
                    && strategy.limits.max_tasks == Some(1)
                    && strategy.partial.is_none()
                    && !strategy.stream
                {
                    let simulated = rank_fold.as_ref().map_or(n, |f| f.reps.len());
                    lanes::Lanes::plan(core, schedule.as_ref(), n, rank_fold.as_ref(), simulated)
                } else {
                    None
                };
                // At most one collective per task and iteration (fusion only merges them).
                let simulated = if folded { 1 } else { n };
                let ranks = estimate::simulated_ranks(simulated, rank_fold.as_ref().map(|f| &f.reps[..]));
                let per_op = estimate::PerOp::new(schedule.as_ref(), n, &ranks);
                let per_iteration = tasks.iter().fold(0u64, |sum, t| {
                    sum.saturating_add(per_op.of(
                        t.bytes as f64 * wire_factor,
                        t.bytes as f64 / settings.element_bytes,
                        settings.pipeline_bytes,
                        settings.max_pipeline,
                    ))
                });
                let messages = per_iteration.saturating_mul(u64::from(sc.iterations));
                work = if lanes.is_some() {
                    estimate::Work { flows: 0, lane_messages: messages, weight: 1, rank_events: 0 }
                } else {
                    let weight = estimate::step_weight(sc, schedule.as_ref(), n, folded || rank_fold.is_some());
                    estimate::Work { flows: messages, lane_messages: 0, weight, rank_events: 0 }
                };
                (
                    Box::new(
                        step::StepCollective::new(schedule, settings, n, folded, rank_fold.clone())
                            .with_lanes(lanes)
                            .on_hosts(hosts.as_ref().map(|h| h.workers.clone())),
                    ),
                    if strategy.policy == Policy::Priority { Gate::PerLayer } else { Gate::Global },
                )
            }
            _ => unreachable!("every all-reduce has a schedule"),
        };
        let net_ranks = match (&rank_fold, server_classes) {
            (Some(f), _) => f.reps.len(),
            (None, Some(classes)) => classes.stride,
            (None, None) if folded => 1,
            (None, None) => n,
        };
        // Folded on a star with stragglers: one network rank, every worker's compute.
        let simulated = if folded && !sc.variability.is_uniform() { n } else { net_ranks };
        let workers = (0..simulated)
            .map(|_| Worker {
                iteration: 0,
                op: Op::Gate(0),
                version: vec![0; layers],
                pieces_left: layer_pieces.clone(),
                synced_layers: vec![0; sc.iterations as usize],
                backward_done: 0,
                complete: 0,
                completed_at: Vec::new(),
                slowdown: 1.0,
                added: Added::default(),
                running: None,
                generation: 0,
            })
            .collect();
        // All-reduce ranks must issue collectives in one order (or deadlock, as NCCL would):
        // one coordinator releases a task once every rank has it ready. Parameter-server
        // workers push independently, each with its own scheduler.
        let coordinated = matches!(sc.strategy.family, Family::AllReduce(_) | Family::Nccl(_));
        let scheds = (0..if coordinated { 1 } else { simulated })
            .map(|_| SchedSlot {
                sched: Scheduler::with_fusion(sc.strategy.policy, sc.strategy.limits, sc.strategy.fusion),
                timer_at: None,
            })
            .collect();
        let lag = sc.strategy.max_lag.map(|bound| lag::Lag::new(bound, simulated, tasks.len()));
        Ok(Engine {
            sc,
            work,
            job,
            hosts: hosts.map(|h| h.workers),
            net_ranks,
            protocol,
            tasks,
            layer_tasks,
            layer_pieces,
            syncable_layers,
            gate,
            workers,
            sampler: variability::Sampler::new(sc.variability.clone(), n, sc.seed),
            scheds,
            coordinated,
            ready_on: HashMap::new(),
            ops: Slab::default(),
            queue: BinaryHeap::new(),
            seq: 0,
            events: 0,
            limit: sc.iterations + iterations_beyond(sc),
            completed: vec![0; sc.iterations as usize],
            out: Measured { job, ..Measured::default() },
            rank0: [None, None],
            released: Vec::new(),
            compute_spans: sc.record_timeline.then(Vec::new),
            rank_fold,
            dispatch: seconds_to_nanos("strategy.dispatch", sc.strategy.dispatch_s)?,
            dispatch_free: 0,
            stream: sc.strategy.stream.then(VecDeque::new),
            stream_busy: false,
            stream_started: None,
            initiators: rand::SeedableRng::seed_from_u64(sc.seed ^ 0x5EED_1417_1A70_0001),
            designated: HashMap::new(),
            round_of: HashMap::new(),
            open_rounds: HashMap::new(),
            lag,
            active: Vec::new(),
            interference: Interference::of(sc),
            comm_active: InFlight::default(),
            started: HashMap::new(),
            communicating: std::collections::HashSet::new(),
        })
    }
}

/// NCCL's time for each collective of `sc` under `cfg` (by payload bytes, as listed, times
/// `wire_factor` on the wire), one schedule (index 0): the task sizes up front, with their
/// errors; a fused size on first use ([`nccl_times::NcclTimes`]).
fn nccl_durations(
    sc: &Scenario,
    cfg: &crate::strategy::NcclConfig,
    wire_factor: f64,
    sizes: &[u64],
) -> Result<timed::Durations> {
    let group = nccl_times::NcclGroup {
        fabric: check::nccl_fabric(cfg, &sc.topology, sc.workers, sc.bandwidth)?,
        collective: sc.workload.collective,
        options: cfg.options.clone(),
        wire_factor,
    };
    Ok(nccl_times::NcclTimes::new(vec![group], sizes.iter().map(|&b| (0, b)))?.into_durations())
}

impl Engine<'_> {
    /// Runs `limit` (>= `sc.iterations`) iterations, measuring the first `sc.iterations`
    /// (multi-job runs: the others go on as background load).
    fn run_until(mut self, limit: u32) -> Self {
        self.limit = limit.max(self.sc.iterations + iterations_beyond(self.sc));
        self
    }

    fn schedule_compute(&mut self, core: &mut SimState, w: usize, duration: Nanos) {
        if self.interference.is_on() {
            return self.schedule_compute_slowed(core, w, duration);
        }
        let worker = &mut self.workers[w];
        // Clamped at the horizon: the event loop stops a run that reaches it.
        let d = crate::limits::nanos_clamped((duration as f64 * worker.slowdown).round());
        if let Some(spans) = self.compute_spans.as_mut() {
            let (layer, backward) = match worker.op {
                Op::Forward(l) => (l, false),
                Op::Backward(l) => (l, true),
                _ => unreachable!("compute is scheduled for a forward or backward op"),
            };
            spans.push((w, layer, backward, core.now, core.now + d));
        }
        self.seq += 1;
        self.queue.push(Reverse((core.now + d, self.seq, Event::Compute(w, 0))));
    }

    /// [`Engine::schedule_compute`] under compute interference (`compute_slowdown`,
    /// `interference.rs`): the piece ends later while a collective is in flight.
    fn schedule_compute_slowed(&mut self, core: &mut SimState, w: usize, duration: Nanos) {
        let worker = &mut self.workers[w];
        let work = (duration as f64 * worker.slowdown).round();
        let piece = self.interference.start(core.now, work, self.comm_active.any(), &mut worker.added);
        let span = self.compute_spans.as_mut().map(|spans| {
            let (layer, backward) = match worker.op {
                Op::Forward(l) => (l, false),
                Op::Backward(l) => (l, true),
                _ => unreachable!("compute is scheduled for a forward or backward op"),
            };
            spans.push((w, layer, backward, core.now, piece.due));
            spans.len() - 1
        });
        worker.running = Some(Running { piece, span });
        worker.generation = worker.generation.wrapping_add(1);
        self.seq += 1;
        self.queue.push(Reverse((piece.due, self.seq, Event::Compute(w, worker.generation))));
    }

    /// Collective `op` starts now (on every rank, or a partial round's initiator): under
    /// interference, compute slows from now until it ends.
    fn collective_started(&mut self, core: &mut SimState, op: u64) {
        if self.interference.is_on() && self.communicating.insert(op) {
            self.comm_changed(core, true);
        }
    }

    /// A collective started (`started`) or ended on every rank at `core.now`: when that
    /// starts or ends communication, every running compute piece goes on at its new pace
    /// (interference).
    fn comm_changed(&mut self, core: &mut SimState, started: bool) {
        if !self.comm_active.change(started) || !self.interference.is_on() {
            return;
        }
        let (now, communicating) = (core.now, self.comm_active.any());
        for w in 0..self.workers.len() {
            let worker = &mut self.workers[w];
            let Some(r) = worker.running.as_mut() else { continue };
            self.interference.switch(&mut r.piece, now, communicating, &mut worker.added);
            let due = r.piece.due;
            if let (Some(i), Some(spans)) = (r.span, self.compute_spans.as_mut()) {
                spans[i].4 = due;
            }
            worker.generation = worker.generation.wrapping_add(1);
            self.seq += 1;
            self.queue.push(Reverse((due, self.seq, Event::Compute(w, worker.generation))));
        }
    }

    fn start_iteration(&mut self, core: &mut SimState, w: usize) {
        if self.workers[w].iteration == self.limit {
            self.workers[w].op = Op::Finished;
            return;
        }
        self.workers[w].slowdown = self.sampler.draw(w);
        self.try_forward(core, w, 0);
    }

    fn gate_open(&self, w: usize, layer: usize) -> bool {
        let worker = &self.workers[w];
        let k = worker.iteration;
        match self.gate {
            Gate::Global => layer > 0 || worker.complete >= k,
            Gate::PerLayer => self.layer_pieces[layer] == 0 || worker.version[layer] >= k,
        }
    }

    fn try_forward(&mut self, core: &mut SimState, w: usize, layer: usize) {
        if self.gate_open(w, layer) {
            self.workers[w].op = Op::Forward(layer);
            self.schedule_compute(core, w, self.sc.workload.layers[layer].forward);
        } else {
            self.workers[w].op = Op::Gate(layer);
        }
    }

    fn start_backward(&mut self, core: &mut SimState, w: usize, layer: usize) {
        self.workers[w].op = Op::Backward(layer);
        self.schedule_compute(core, w, self.sc.workload.layers[layer].backward);
    }

    fn compute_done(&mut self, core: &mut SimState, w: usize) {
        let layers = self.sc.workload.layers.len();
        match self.workers[w].op {
            Op::Forward(l) if l + 1 < layers => self.try_forward(core, w, l + 1),
            Op::Forward(_) => self.start_backward(core, w, layers - 1),
            Op::Backward(l) => {
                let k = self.workers[w].iteration;
                self.gradients_ready(core, w, l, k);
                if l > 0 {
                    self.start_backward(core, w, l - 1);
                } else {
                    self.workers[w].backward_done = k + 1;
                    self.check_complete(core, w, k);
                    self.workers[w].iteration += 1;
                    self.start_iteration(core, w);
                }
            }
            op => unreachable!("compute finished while {op:?}"),
        }
    }

    fn drain_notes(&mut self, core: &mut SimState) {
        while !core.notes.is_empty() {
            let notes = std::mem::take(&mut core.notes);
            for note in notes {
                match note {
                    Note::OpDone { rank, op, synced } => {
                        if synced {
                            // Folded with per-worker compute: rank 0's completion is every worker's.
                            let holders = if self.net_ranks < self.workers.len() {
                                0..self.workers.len()
                            } else {
                                rank..rank + 1
                            };
                            let tasks = self.ops.get(op as usize).tasks.clone();
                            for task in tasks {
                                for w in holders.clone() {
                                    self.piece_synced(core, w, task);
                                }
                            }
                        }
                        // The collective ends on every rank at once (interference: compute
                        // speeds up again as its last simulated rank ends it).
                        // (A collective that never started, e.g. on one worker, never slowed compute.)
                        let ending = self.interference.is_on()
                            && self.ops.get(op as usize).done + 1 == if self.coordinated { self.net_ranks } else { 1 };
                        if ending && self.communicating.remove(&op) {
                            self.comm_changed(core, false);
                        }
                        self.op_done_on_rank(core, op);
                    }
                    Note::TaskSynced { rank, task } => self.piece_synced(core, rank, task),
                }
            }
        }
    }

    fn piece_synced(&mut self, core: &mut SimState, w: usize, task: TaskRef) {
        let layer = self.tasks[task.task as usize].layer;
        let worker = &mut self.workers[w];
        worker.pieces_left[layer] -= 1;
        if worker.pieces_left[layer] > 0 {
            return;
        }
        worker.pieces_left[layer] = self.layer_pieces[layer];
        worker.version[layer] = task.iteration + 1;
        let k = task.iteration as usize;
        if k >= worker.synced_layers.len() {
            worker.synced_layers.resize(k + 1, 0);
        }
        worker.synced_layers[k] += 1;
        self.check_complete(core, w, task.iteration);
        if let Op::Gate(l) = self.workers[w].op {
            if self.gate_open(w, l) {
                self.try_forward(core, w, l);
            }
        }
    }

    fn check_complete(&mut self, core: &mut SimState, w: usize, k: u32) {
        let worker = &mut self.workers[w];
        let synced = worker.synced_layers.get(k as usize).copied().unwrap_or(0);
        if worker.complete != k || worker.backward_done <= k || synced < self.syncable_layers {
            return;
        }
        worker.complete = k + 1;
        worker.completed_at.push(core.now);
        if w == 0 {
            // Rank 0's own iterations bound what it sends and how long its links are busy:
            // a parameter-server worker runs ahead of the slowest, so a window between two
            // completions of every worker would cut its pushes at a point that moves.
            let done = worker.completed_at.len();
            let snapshot = || Some((core.comm_busy_of(self.job), core.watched_host(self.job).sent));
            if done == 1 && self.sc.iterations > 1 {
                self.rank0[0] = snapshot();
            }
            if done == self.sc.iterations as usize {
                self.rank0[1] = snapshot();
            }
        }
        if k as usize >= self.completed.len() {
            self.completed.resize(k as usize + 1, 0);
        }
        self.completed[k as usize] += 1;
        if self.completed[k as usize] as usize == self.workers.len() {
            let added = self.workers[0].added;
            self.out.iteration_completed(core, self.sc.iterations, self.limit, added);
        }
        // Under the global gate the next forward pass may have been waiting for this.
        if self.workers[w].op == Op::Gate(0) && self.gate_open(w, 0) {
            self.try_forward(core, w, 0);
        }
    }
}

impl SimulatedJob for Engine<'_> {
    fn start(&mut self, core: &mut SimState) {
        core.job = self.job;
        for w in 0..self.workers.len() {
            self.start_iteration(core, w);
        }
        self.drain_notes(core);
    }

    fn completed(&self) -> usize {
        self.out.completions.len()
    }

    fn stopped_at(&self) -> Option<Nanos> {
        self.out.stopped_at
    }

    fn finishing(&self) -> bool {
        // A run alone completes the iterations it started beyond the measured ones
        // (`iterations_beyond`); a multi-job run's jobs go on as background load instead.
        self.hosts.is_none()
            && self.limit > self.sc.iterations
            && self.completed.get(self.limit as usize - 1).is_none_or(|&c| (c as usize) < self.workers.len())
    }

    fn queue_head(&self) -> Option<Nanos> {
        self.queue.peek().map(|e| e.0 .0)
    }

    fn on_queue(&mut self, core: &mut SimState, t: Nanos) {
        let Reverse((_, _, event)) = self.queue.pop().expect("peeked");
        core.now = t;
        core.job = self.job;
        match event {
            Event::Compute(w, stamp) => {
                if self.interference.is_on() {
                    if self.workers[w].generation != stamp || self.workers[w].running.is_none() {
                        return; // rescheduled by interference
                    }
                    self.workers[w].running = None;
                }
                self.compute_done(core, w)
            }
            Event::Timer(scope) => self.fusion_timer(core, scope, t),
            Event::Activate { rank, op } => {
                if let Some(lag) = self.lag.as_mut().filter(|l| l.holds_back(rank, &self.ops.get(op as usize).tasks)) {
                    // Behind by more than max_lag: joins once its call for round k - S arrives.
                    lag.park(rank, op);
                    self.drain_notes(core);
                    return;
                }
                if self.interference.is_on() {
                    // The last simulated rank to start it starts the collective.
                    // (A partial round started with its initiator: its activations count no more.)
                    if !self.communicating.contains(&op) {
                        let started = self.started.entry(op).or_insert(0);
                        *started += 1;
                        if *started == self.net_ranks {
                            self.started.remove(&op);
                            self.collective_started(core, op);
                        }
                    }
                }
                self.activate(core, rank, op)
            }
        }
        self.drain_notes(core);
    }

    fn on_flow(&mut self, core: &mut SimState, user: u64, delivered: bool) {
        self.protocol.on_flow(core, user, delivered);
        self.drain_notes(core);
    }

    fn on_timer(&mut self, core: &mut SimState, user: u64) {
        self.protocol.on_timer(core, user);
        self.drain_notes(core);
    }

    fn count_event(&mut self) {
        self.events += 1;
    }

    fn report(&mut self, core: &mut SimState) -> Report {
        let sc = self.sc;
        if let Some(fold) = &self.rank_fold {
            fold.relabel(&mut self.compute_spans);
        }
        let measured = Measured {
            rank0: match self.rank0 {
                [first, Some(last)] => Some((first.unwrap_or((0, 0.0)), last)),
                _ => None,
            },
            links_per_iteration: self.hosts.is_none(),
            iterations_run: if self.hosts.is_none() { self.limit } else { sc.iterations },
            flowless: matches!(sc.strategy.family, Family::Nccl(_)),
            compute_spans: self.compute_spans.take(),
            events: self.events,
            simulated_ranks: self.net_ranks,
            ..std::mem::take(&mut self.out)
        };
        let mut report = build_report(sc, core, measured);
        // Stragglers: the compute an iteration waits for (exposed communication and the
        // scaling factor are about communication, not the stragglers).
        report.scale_compute(self.sampler.compute_factor(sc.strategy.partial.is_none(), sc.iterations as usize));
        if sc.strategy.partial.is_none() {
            return report;
        }
        // With partial collectives fast workers run ahead (eager-SGD): each worker's own
        // pace is what it achieves, and the job's rate is the sum of the workers' rates.
        let paces: Vec<f64> = self
            .workers
            .iter()
            .map(|w| {
                // Its own measured iterations (a multi-job run's background ones are not).
                let t = &w.completed_at[..w.completed_at.len().min(sc.iterations as usize)];
                if t.len() > 1 {
                    nanos_to_seconds(t[t.len() - 1] - t[0]) / (t.len() - 1) as f64
                } else {
                    nanos_to_seconds(t[0])
                }
            })
            .collect();
        let iteration_time = paces.iter().sum::<f64>() / paces.len() as f64;
        let samples_per_s: f64 = paces.iter().map(|p| sc.workload.batch_size as f64 / p).sum();
        report.set_iteration_time(iteration_time, samples_per_s);
        // The rounds of the measured iterations after the first (warm-up), as the paces
        // above: a window between completions of every worker can hold none of the fast
        // workers' rounds (eager-SGD runs them ahead: 3 iterations of 8 ranks with one 4x
        // straggler reported 0 active processes).
        let first = u32::from(sc.iterations > 1);
        let rounds: Vec<usize> =
            self.active.iter().filter(|&&(k, _)| k >= first && k < sc.iterations).map(|&(_, a)| a).collect();
        report.nap =
            Some(if rounds.is_empty() { 0.0 } else { rounds.iter().sum::<usize>() as f64 / rounds.len() as f64 });
        report
    }
}

#[cfg(test)]
mod bounds_tests;
#[cfg(test)]
mod nccl_tests;
#[cfg(test)]
mod tests;
