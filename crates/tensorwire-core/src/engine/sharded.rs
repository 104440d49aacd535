//! Sharded data parallelism compiled into stream programs (see `program.rs`).
//!
//! Rules, each from the system it models (docs/simulator.md gives the sources):
//!
//! - **zero1** (DeepSpeed ZeRO stage 1): the backward pass runs without communication;
//!   then the gradients are reduce-scattered in buckets of `reduce_bucket` elements, each
//!   rank steps its optimizer shard, and the updated parameters are all-gathered in
//!   `max(1, elements / allgather_bucket)` equal pieces before the next forward pass.
//!   Bytes per rank: Psi (gradients) + Psi (parameters), the same as an all-reduce (ZeRO
//!   paper, section 7).
//! - **zero2** (stage 2): the same, but each bucket is reduced as soon as the backward pass
//!   has filled it: the backward pass waits for it (DeepSpeed's default `overlap_comm`
//!   false below stage 3), or goes on while it runs on its own stream (`overlap_comm=true`,
//!   which also gives zero1 these hooks). A bucket is reduced before the gradient that
//!   would overflow it is added (`stage_1_and_2.py`, `reduce_independent_p_g_buckets_and_remove_grads`).
//!   Sizes in elements: `deepspeed/runtime/zero/config.py` (`reduce_bucket_size`,
//!   `allgather_bucket_size` = 5e8; `overlap_comm` None, resolved to `stage == 3`).
//! - **zero3** (DeepSpeed stage 3): per parameter, fetched as its module runs, the next
//!   `prefetch_bucket` elements prefetched per fetch, `param_persistence` ones never
//!   partitioned, gradients in `reduce_bucket` element buckets ([`zero3_program`]).
//!   DeepSpeed hooks every module that owns parameters, so it fetches, counts against
//!   `max_live` and releases them submodule by submodule: each workload tensor is one
//!   submodule ([`zero3_trace`]; an LLM block's tensors are its `nn.Linear`s), released
//!   after its own step, not after its layer's compute. The compute stays per layer (a
//!   block is one piece that waits for all its parameters), so a prefetch DeepSpeed decides
//!   inside the block that uses it is issued one layer earlier, to overlap the previous
//!   layer's compute as it would the block's earlier submodules ([`issue_pass`]); fetches on
//!   demand (DeepSpeed's stalls) stay where they are.
//! - **fsdp** (PyTorch FSDP2 FULL_SHARD): per unit ([`units`]: blocks, and the root unit of
//!   the layers outside them), an all-gather of its parameters before its forward (issued
//!   `prefetch` units ahead), again before its backward (`backward_prefetch` ahead; not with
//!   `reshard_after_forward=false`, nor for the root, which FSDP2 keeps), and a
//!   reduce-scatter of its gradients after its backward ([`fsdp_plan`]). All-gathers and
//!   reduce-scatters share one NCCL communicator (`communicators=1`, PyTorch FSDP2's
//!   default: both use the shard process group,
//!   `torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py`, `FSDPCommContext`), so
//!   they run one at a time in issue order; `communicators=2` puts them on two, overlapping
//!   each other. Bytes per rank: 3 Psi (ZeRO paper: 1.5x DDP) less the root's backward
//!   all-gather.
//! - **hsdp** (FSDP HYBRID_SHARD): fsdp inside each shard group of `shard_group` ranks
//!   (default: a machine's GPUs, or every rank where fewer, [`shard_group`]),
//!   and after each unit's reduce-scatter an all-reduce of its 1/G gradient shard among
//!   the ranks holding the same shard in every group, on the replicate process group's
//!   communicator (FSDP2's `all_reduce_stream`: concurrent with all-gathers and
//!   reduce-scatters), once that reduce-scatter has finished.
//!
//! **Timing** (`comm=`): with `nccl` (the default on GPU fabrics: `rail`, `nodes`) each
//! collective is timed by NCCL's model ([`crate::nccl::choose`]) over its group's fabric
//! ([`nccl_fabrics`]) in closed form, no flow (`timed.rs`: collectives in flight at once
//! on different communicators share the network or NVLink, whichever their fabric is
//! bound by), and compute slows while a
//! collective runs (`interference.rs`, default [`crate::nccl::DEFAULT_COMPUTE_SLOWDOWN`]);
//! with `flows` every message is a flow of the network model (the seeds' behaviour).
//!
//! Parameters travel at `param_dtype`, gradients at `reduce_dtype`, else at `param_dtype`
//! as PyTorch's mixed precision reduces (else as the workload lists them), gradients
//! divided by `compression` ([`WireFactors::of`]).

use super::interference::Interference;
use super::nccl_times::{NcclGroup, NcclTimes};
use super::program::{Instr, Program, Runner};
use super::state::SimState;
use super::step::{StepCollective, StepSettings};
use super::timed::TimedCollective;
use super::{build_core, build_report, estimate, variability, Measured, Mode, Scenario};
use crate::collectives::{
    split_layout, AcrossGroups, AllGather, Collective, HalvingDoubling, InGroups, LevelPhase, Levels, ReduceScatter,
    Ring, StepSchedule,
};
use crate::error::{Error, Result};
use crate::metrics::Report;
use crate::nccl::{self, NcclFabric, NcclOptions};
use crate::strategy::{Comm, ShardAlgorithm, ShardedConfig, Stage, Strategy};
use crate::topology::{Shape, Topology};
use crate::units::seconds_to_nanos;
use crate::workload::Workload;

/// Bytes per element in a sharded program's executor settings
/// ([`StepSettings::element_bytes`]): the workload's listed size. Its payloads are already
/// on the wire (`wire_factor` 1), parameters and gradients possibly of different types,
/// so the count is only nominal; none of its schedules (rings, halving-doubling, levels)
/// chooses its plan by element count.
pub(super) fn sharded_element_bytes(workload: &Workload) -> f64 {
    f64::from(workload.dtype_bytes)
}

/// The up-front estimate of `program` on flows over `iterations`: every collective once per
/// iteration, at the `simulated` ranks of `n` (`estimate.rs`).
pub(super) fn program_work(
    program: &Program,
    schedules: &[Box<dyn StepSchedule>],
    n: usize,
    simulated: &[usize],
    settings: &StepSettings,
    iterations: u32,
) -> estimate::Work {
    let per_op: Vec<estimate::PerOp> =
        schedules.iter().map(|s| estimate::PerOp::new(s.as_ref(), n, simulated)).collect();
    let per_iteration = program.collectives.iter().fold(0u64, |sum, c| {
        let (bytes, elements) = (c.bytes as f64, c.bytes as f64 / settings.element_bytes);
        sum.saturating_add(per_op[c.schedule].of(bytes, elements, settings.pipeline_bytes, settings.max_pipeline))
    });
    estimate::Work {
        flows: per_iteration.saturating_mul(u64::from(iterations)),
        lane_messages: 0,
        weight: 1,
        rank_events: 0,
    }
}

/// Simulates a sharded strategy (see the module documentation); under [`Mode::Check`]
/// stops once everything is built and checked, before simulating.
pub(super) fn simulate(sc: &Scenario, cfg: &ShardedConfig, mode: Mode) -> Result<Option<Report>> {
    let n = sc.workers;
    let latency = seconds_to_nanos("latency", sc.latency)?;
    let topo = sc.topology.build(n, 0, sc.bandwidth, latency)?;
    let group = shard_group(cfg, &topo, n)?;
    let comm = cfg.comm_on(&sc.topology);
    if comm == Comm::Nccl {
        return simulate_nccl(sc, cfg, topo, group, mode);
    }
    let schedules = schedules(cfg, &topo, n, group);
    let star = matches!(topo.shape(), Shape::Star);
    let folded = sc.allow_folding
        && n > 1
        && sc.failures.is_empty()
        && sc.variability.is_uniform()
        && sc.rank_to_host.is_none()
        && topo.rotation_symmetric(n)
        && all_symmetric(&schedules, n, star);
    let digit_fold = if !folded
        && sc.allow_folding
        && n > 1
        && sc.failures.is_empty()
        && sc.variability.is_uniform()
        && sc.rank_to_host.is_none()
    {
        let all: Vec<&dyn StepSchedule> = schedules.iter().map(|s| s.as_ref()).collect();
        super::fold::DigitFold::for_all(&topo, n, &all)
    } else {
        None
    };
    let mut core = build_core(sc, topo, folded)?;
    let rank_fold = digit_fold.map(|f| core.fold_by_digits(f));
    let ranks = rank_fold.as_ref().map_or(if folded { 1 } else { n }, |f| f.reps.len());
    let settings = StepSettings {
        wire_factor: 1.0,
        reduce_ns_per_byte: sc.strategy.reduce_bytes_per_s.map_or(0.0, |r| 1e9 / r),
        pipeline_bytes: sc.strategy.pipeline_chunk,
        max_pipeline: 256,
        element_bytes: sharded_element_bytes(&sc.workload),
    };
    let relabel = rank_fold.clone();
    let program = program(&sc.workload, cfg, WireFactors::of(&sc.strategy, &sc.workload), group, n);
    let simulated = estimate::simulated_ranks(ranks, rank_fold.as_ref().map(|f| &f.reps[..]));
    let work = program_work(&program, &schedules, n, &simulated, &settings, sc.iterations);
    estimate::check(sc, work, star)?;
    if mode == Mode::Check {
        return Ok(None);
    }
    let exec = StepCollective::with_schedules(schedules, settings, n, folded, rank_fold);
    let sampler = variability::Sampler::new(sc.variability.clone(), n, sc.seed);
    let (mut measured, compute_factor) =
        Runner::new(sc, program, ranks, 0, exec, sampler).with_interference(Interference::of(sc)).run(&mut core)?;
    if let Some(fold) = relabel {
        fold.relabel(&mut measured.compute_spans);
    }
    Ok(Some(measured_report(sc, &mut core, measured, compute_factor)))
}

/// The NCCL collective of each schedule index.
fn collective_of(schedule: usize) -> Collective {
    match schedule {
        AG => Collective::AllGather,
        RS => Collective::ReduceScatter,
        _ => Collective::AllReduce,
    }
}

/// The fabric NCCL sees for each schedule index ([`AG`], [`RS`], [`AR_ACROSS`] with
/// replicas) of `n` ranks in shard groups of `group`:
///
/// - all-gathers and reduce-scatters: the shard group, one node's `group` GPUs when it
///   fits in a node, else `group / gpus_per_node` whole nodes (`NcclFabric::from_topology`
///   for `group` ranks);
/// - hsdp's all-reduce across replicas: the ranks holding the same shard, one GPU per node
///   when a shard group fills whole nodes (`gpus_per_node / group` per node when it does
///   not), each node's NICs shared by the replica groups on it: each on its own NIC on
///   `rail` (one NIC per GPU), an eighth of the machine's one NIC on an 8-GPU `nodes` machine.
pub(super) fn nccl_fabrics(sc: &Scenario, cfg: &ShardedConfig, n: usize, group: usize) -> Result<Vec<NcclFabric>> {
    let from = |ranks: usize| {
        NcclFabric::from_topology(&sc.topology, ranks, sc.bandwidth, sc.topology.nccl_transport(cfg.nccl_transport))
    };
    let shard = from(group)?;
    let mut list = vec![shard.clone(), shard];
    if group < n {
        let full = from(n)?;
        let gpn = full.gpus_per_node.max(1);
        let replicas = n / group;
        let per_node = if group < gpn { (gpn / group).max(1) } else { 1 };
        let groups_on_node = (gpn / per_node).max(1);
        let nics = (full.nics_per_node * per_node / gpn).max(1);
        let nic_total = full.nics_per_node as f64 * full.nic_bytes_per_s;
        // The `group` replica communicators (one rank of each shard group, `group` ranks
        // apart) run at once: a cut of `c` consecutive ranks holds `c / group` ranks of each
        // (at least one) and carries all of them (`HostCut`).
        let cut = full.cut.map(|c| nccl::HostCut {
            ranks: (c.ranks / group).max(1),
            bytes_per_s: c.bytes_per_s / group.min(c.ranks) as f64,
        });
        list.push(NcclFabric {
            nodes: (replicas / per_node).max(1),
            gpus_per_node: per_node.min(replicas),
            ranks: replicas,
            nics_per_node: nics,
            nic_bytes_per_s: nic_total / groups_on_node as f64 / nics as f64,
            cut: cut.filter(|c| c.ranks < replicas),
            ..full
        });
    }
    Ok(list)
}

/// NCCL's times for `program`'s collectives over `fabrics` (by schedule index), with
/// [`nccl::choose`] on the whole buffer (the program's bytes are on the wire already) and
/// NCCL's defaults: every (schedule, bytes) of the program up front.
fn nccl_times(fabrics: Vec<NcclFabric>, program: &Program) -> Result<NcclTimes> {
    let groups = fabrics
        .into_iter()
        .enumerate()
        .map(|(s, fabric)| NcclGroup {
            fabric,
            collective: collective_of(s),
            options: NcclOptions::default(),
            wire_factor: 1.0,
        })
        .collect();
    NcclTimes::new(groups, program.collectives.iter().map(|c| (c.schedule, c.bytes)))
}

/// The program of `sc`'s sharded strategy `cfg` (shard groups of `group`) and NCCL's time
/// for each of its collectives ([`nccl_times`] over [`nccl_fabrics`]): what a `comm=nccl`
/// run needs before it starts, alone ([`simulate_nccl`]) or beside other jobs
/// (`jobs::job_sim`), refusals included.
pub(super) fn nccl_program(sc: &Scenario, cfg: &ShardedConfig, group: usize) -> Result<(Program, NcclTimes)> {
    let n = sc.workers;
    let program = program(&sc.workload, cfg, WireFactors::of(&sc.strategy, &sc.workload), group, n);
    let times = nccl_times(nccl_fabrics(sc, cfg, n, group)?, &program)?;
    Ok((program, times))
}

/// Job `job` of `sc` running `program` on `ranks` simulated ranks, every collective timed
/// by `times` (no flow), compute slowed as NCCL's kernels slow it.
pub(super) fn nccl_runner<'a>(
    sc: &'a Scenario,
    (program, times): (Program, NcclTimes),
    ranks: usize,
    job: usize,
) -> Runner<'a, TimedCollective> {
    let exec = TimedCollective::new(times.into_durations(), ranks);
    let sampler = variability::Sampler::new(sc.variability.clone(), sc.workers, sc.seed);
    Runner::new(sc, program, ranks, job, exec, sampler).with_interference(Interference::of(sc))
}

/// [`simulate`] with every collective timed by NCCL's model (no flow).
fn simulate_nccl(
    sc: &Scenario,
    cfg: &ShardedConfig,
    topo: crate::topology::Topology,
    group: usize,
    mode: Mode,
) -> Result<Option<Report>> {
    let n = sc.workers;
    super::check_nccl_timed(sc, Some(cfg))?;
    if !sc.failures.is_empty() {
        return Err(Error::invalid(
            "strategy.comm",
            "comm=nccl times collectives in closed form and cannot see link failures; give comm=flows to simulate failures",
        ));
    }
    let timed = nccl_program(sc, cfg, group)?;
    // Every rank ends each collective at the same instant: one stands for all when they
    // compute alike.
    let folded = sc.allow_folding && n > 1 && sc.variability.is_uniform();
    let ranks = if folded { 1 } else { n };
    let events = estimate::rank_events(ranks, sc.workload.layers.len(), timed.0.collectives.len(), sc.iterations);
    estimate::check(sc, estimate::Work { flows: 0, lane_messages: 0, weight: 1, rank_events: events }, false)?;
    let mut core = build_core(sc, topo, folded)?;
    if mode == Mode::Check {
        return Ok(None);
    }
    let (measured, compute_factor) = nccl_runner(sc, timed, ranks, 0).run(&mut core)?;
    Ok(Some(measured_report(sc, &mut core, measured, compute_factor)))
}

/// The report of a sharded run: with stragglers, the compute per iteration is what an
/// iteration waits for, `compute_factor` x the workload's (`Sampler::compute_factor`; as
/// the gradient engine's and a job's reports give it).
fn measured_report(sc: &Scenario, core: &mut SimState, measured: Measured, compute_factor: f64) -> Report {
    let mut report = build_report(sc, core, measured);
    report.scale_compute(compute_factor);
    report
}

/// Streams (NCCL communicators) of the all-gathers, reduce-scatters and hsdp's
/// all-reduces for `communicators` (1: FSDP2's shard process group carries both
/// all-gathers and reduce-scatters; 2: each its own); the all-reduce has its own (the
/// replicate process group).
fn streams(communicators: usize) -> (usize, usize, usize) {
    if communicators >= 2 {
        (0, 1, 2)
    } else {
        (0, 0, 1)
    }
}

/// Schedule indices in the executor's list.
pub(super) const AG: usize = 0;
pub(super) const RS: usize = 1;
pub(super) const AR_ACROSS: usize = 2;

/// The executor's schedules, indexed by [`AG`], [`RS`] and (with replicas, `group < n`)
/// [`AR_ACROSS`], for `n` ranks in shard groups of `group` on `topo`.
pub(super) fn schedules(cfg: &ShardedConfig, topo: &Topology, n: usize, group: usize) -> Vec<Box<dyn StepSchedule>> {
    let layout = topo.layout(n);
    let levelled = layout.iter().filter(|&&r| r > 1).count() > 1;
    let algorithm = match cfg.algorithm {
        ShardAlgorithm::Auto if levelled => ShardAlgorithm::Hierarchical,
        ShardAlgorithm::Auto => ShardAlgorithm::Ring,
        a => a,
    };
    // The layouts of one shard group and of the groups: whole leading digits of the
    // fabric's layout, and possibly part of the next (groups of 16 on 8-GPU nodes span 2
    // nodes and run a ring per level, like NCCL's rings per rail, not one flat ring
    // through a single NIC).
    let split = split_layout(&layout, group);
    let inner_levels = |digits: &[usize]| digits[..digits.len().saturating_sub(1)].to_vec();
    let sharded = |phase: LevelPhase| -> Box<dyn StepSchedule> {
        match (algorithm, phase, &split) {
            (ShardAlgorithm::HalvingDoubling, LevelPhase::ReduceScatter, _) => Box::new(ReduceScatter(HalvingDoubling)),
            (ShardAlgorithm::HalvingDoubling, _, _) => Box::new(AllGather(HalvingDoubling)),
            (ShardAlgorithm::Hierarchical, _, Some((own, _))) => Box::new(Levels { levels: inner_levels(own), phase }),
            (_, LevelPhase::ReduceScatter, _) => Box::new(ReduceScatter(Ring)),
            _ => Box::new(AllGather(Ring)),
        }
    };
    let in_group = |schedule: Box<dyn StepSchedule>| -> Box<dyn StepSchedule> {
        if group == n {
            schedule
        } else {
            Box::new(InGroups { inner: schedule, size: group })
        }
    };
    let mut list = vec![in_group(sharded(LevelPhase::AllGather)), in_group(sharded(LevelPhase::ReduceScatter))];
    if group == n {
        return list; // no replicas, nothing to all-reduce across them
    }
    let across: Box<dyn StepSchedule> = match (algorithm, &split) {
        (ShardAlgorithm::Hierarchical, Some((_, groups))) if !groups.is_empty() => Box::new(AcrossGroups {
            inner: Box::new(Levels { levels: inner_levels(groups), phase: LevelPhase::AllReduce }),
            size: group,
        }),
        (ShardAlgorithm::HalvingDoubling, _) => {
            Box::new(AcrossGroups { inner: Box::new(HalvingDoubling), size: group })
        }
        _ => Box::new(AcrossGroups { inner: Box::new(Ring), size: group }),
    };
    list.push(across);
    list
}

/// Bytes on the wire per listed byte, for parameters and for gradients.
#[derive(Debug, Clone, Copy)]
pub(super) struct WireFactors {
    pub params: f64,
    pub grads: f64,
}

impl WireFactors {
    /// From the strategy's dtypes and compression and the workload's listed element size:
    /// parameters in `param_dtype`, gradients as [`Strategy::gradient_dtype_factor`] says,
    /// then compressed.
    pub fn of(strategy: &Strategy, workload: &Workload) -> WireFactors {
        let params = strategy.param_dtype.map_or(1.0, |d| f64::from(d.bytes()) / f64::from(workload.dtype_bytes));
        let grads = strategy.gradient_dtype_factor(workload.dtype_bytes) / strategy.compression;
        WireFactors { params, grads }
    }
}

/// FSDP's units: the layers each `fully_shard` call wraps.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Units {
    /// Each unit's layers, units in forward order of their first layer.
    pub layers: Vec<Vec<usize>>,
    /// The root unit (`fully_shard(model)`): the layers outside the wrapped blocks; `None`
    /// where every layer is wrapped.
    pub root: Option<usize>,
}

/// The model's repeated blocks: the longest run of at least two consecutive layers with
/// the same parameter sizes in the same order (instances of one block class, as the LLM
/// workloads list a transformer block: one layer each), if it holds more than half of the
/// parameter bytes. `None` for the zoo's module-level lists (its runs of equal modules,
/// such as BERT's query, key and value, hold a few percent).
fn repeated_blocks(workload: &Workload) -> Option<std::ops::Range<usize>> {
    let layers = workload.layers.len();
    let mut sizes: Vec<Vec<u64>> = vec![Vec::new(); layers];
    for t in &workload.tensors {
        sizes[t.layer].push(t.bytes);
    }
    let mut best: Option<std::ops::Range<usize>> = None;
    let mut start = 0;
    while start < layers {
        let mut end = start + 1;
        while end < layers && !sizes[start].is_empty() && sizes[end] == sizes[start] {
            end += 1;
        }
        if end - start >= 2 && best.as_ref().is_none_or(|b| end - start > b.len()) {
            best = Some(start..end);
        }
        start = end;
    }
    let bytes = |r: std::ops::Range<usize>| -> u64 { sizes[r].iter().flatten().sum() };
    let total = bytes(0..layers);
    best.filter(|b| 2 * bytes(b.clone()) > total)
}

/// Wraps `layers` (consecutive, in order) into units: `unit` layers each, or (size-based
/// wrap) layers added until the unit holds at least `min_unit` parameter bytes; the last
/// unit takes what is left.
fn wrap(layers: &[usize], bytes: &[u64], cfg: &ShardedConfig) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut unit = Vec::new();
    let mut held = 0;
    for (i, &l) in layers.iter().enumerate() {
        unit.push(l);
        held += bytes[l];
        let full = match cfg.min_unit_bytes {
            Some(min) => held >= min,
            None => unit.len() >= cfg.unit_layers,
        };
        if full || i + 1 == layers.len() {
            out.push(std::mem::take(&mut unit));
            held = 0;
        }
    }
    out
}

/// FSDP's units as a per-block wrap gives them: where the workload lists repeated blocks
/// ([`repeated_blocks`]: the LLM workloads, one layer per transformer block), `unit` blocks
/// (or blocks up to `min_unit` bytes) per unit, and the layers outside the blocks
/// (embeddings, final norm, output head) in the root unit, as `fully_shard` on each block
/// then on the model leaves them (torchtitan's `apply_fsdp`; `transformer_auto_wrap_policy`);
/// elsewhere `unit` consecutive layers (or layers up to `min_unit` bytes) per unit and no
/// root parameters.
pub(super) fn units(workload: &Workload, cfg: &ShardedConfig) -> Units {
    let bytes = layer_bytes(workload);
    let all: Vec<usize> = (0..workload.layers.len()).collect();
    let Some(blocks) = repeated_blocks(workload) else {
        return Units { layers: wrap(&all, &bytes, cfg), root: None };
    };
    let root: Vec<usize> = all.iter().copied().filter(|l| !blocks.contains(l)).collect();
    let mut layers = wrap(&blocks.collect::<Vec<_>>(), &bytes, cfg);
    if root.is_empty() {
        return Units { layers, root: None };
    }
    let first = root[0];
    layers.push(root);
    layers.sort_by_key(|u| u[0]);
    let root = layers.iter().position(|u| u[0] == first);
    Units { layers, root }
}

/// Listed parameter bytes of each layer.
fn layer_bytes(workload: &Workload) -> Vec<u64> {
    let mut bytes = vec![0u64; workload.layers.len()];
    for t in &workload.tensors {
        bytes[t.layer] += t.bytes;
    }
    bytes
}

fn wire(bytes: u64, factor: f64) -> u64 {
    (bytes as f64 * factor).round() as u64
}

/// Issues the reduce-scatter of a ZeRO gradient bucket of `bytes` (listed) on `stream`.
/// With DeepSpeed's `overlap_comm` it runs beside the backward pass and is waited for at
/// the end (pushed to `overlapped`); without, the backward pass waits for it on the
/// compute stream.
fn issue_reduce(
    p: &mut Program,
    overlapped: &mut Vec<usize>,
    bytes: u64,
    stream: usize,
    cfg: &ShardedConfig,
    f: WireFactors,
) {
    let c = p.issue(RS, wire(bytes, f.grads), stream);
    if cfg.overlap_comm {
        overlapped.push(c);
    } else {
        p.instrs.push(Instr::Wait(c));
    }
}

/// The program of one iteration for `cfg` on `ranks` ranks (shard groups of `group` for hsdp).
pub(super) fn program(
    workload: &Workload,
    cfg: &ShardedConfig,
    wire_factors: WireFactors,
    group: usize,
    ranks: usize,
) -> Program {
    match cfg.stage {
        Stage::Zero1 | Stage::Zero2 => zero_program(workload, cfg, wire_factors),
        Stage::Zero3 => zero3_program(workload, cfg, wire_factors),
        Stage::Fsdp | Stage::Hsdp => fsdp_program(workload, cfg, wire_factors, group, ranks),
    }
}

fn zero_program(workload: &Workload, cfg: &ShardedConfig, f: WireFactors) -> Program {
    // One data-parallel process group: one communicator for every collective.
    const STREAM: usize = 0;
    let mut p = Program { streams: 1, ..Program::default() };
    let (reduce_bucket, gather_bucket) = cfg.bucket_bytes(workload.dtype_bytes);
    let layers = workload.layers.len();
    p.instrs.extend((0..layers).map(|layer| Instr::Compute { layer, backward: false }));
    let mut grads: Vec<Vec<u64>> = vec![Vec::new(); layers];
    for t in &workload.tensors {
        grads[t.layer].push(t.bytes);
    }
    // Gradient buckets in the order the backward pass fills them (DeepSpeed: a bucket is
    // reduced before the gradient that would overflow it joins; one gradient larger than a
    // bucket is a bucket of its own).
    let hooks = cfg.stage == Stage::Zero2 || cfg.overlap_comm;
    let mut buckets = Vec::new();
    let mut reduces = Vec::new();
    let mut filling = 0u64;
    for layer in (0..layers).rev() {
        p.instrs.push(Instr::Compute { layer, backward: true });
        for &g in grads[layer].iter().rev() {
            if filling > 0 && filling.saturating_add(g) > reduce_bucket {
                buckets.push(filling);
                if hooks {
                    issue_reduce(&mut p, &mut reduces, filling, STREAM, cfg, f);
                }
                filling = 0;
            }
            filling += g;
        }
    }
    if filling > 0 {
        buckets.push(filling);
        if hooks {
            issue_reduce(&mut p, &mut reduces, filling, STREAM, cfg, f);
        }
    }
    if !hooks {
        for &b in &buckets {
            reduces.push(p.issue(RS, wire(b, f.grads), STREAM));
        }
    }
    p.instrs.extend(reduces.iter().map(|&c| Instr::Wait(c)));
    // The optimizer steps on its shard; the updated parameters are all-gathered in
    // max(1, total / allgather_bucket) equal pieces before the next forward pass
    // (DeepSpeed `all_gather_dp_groups`, deepspeed/runtime/utils.py).
    let total: u64 = grads.iter().flatten().sum();
    let pieces = (total / gather_bucket.max(1)).max(1);
    let mut gathers = Vec::new();
    for i in 0..pieces {
        let b = total / pieces + u64::from(i < total % pieces);
        if b > 0 {
            gathers.push(p.issue(AG, wire(b, f.params), STREAM));
        }
    }
    p.instrs.extend(gathers.iter().map(|&c| Instr::Wait(c)));
    p
}

/// One all-gather call of DeepSpeed's coordinator (`__all_gather_params`): what it carries
/// and where in the trace it was decided.
#[derive(Debug, Clone, PartialEq)]
struct GatherCall {
    /// Listed bytes of the parameters it coalesces.
    bytes: u64,
    /// The pass (index into [`Zero3Trace::passes`]) whose fetch step issued it.
    issued_in: usize,
    /// The first pass that uses one of its parameters.
    first_use: usize,
    /// Fetched on demand: the module waits for it at once (no prefetch had taken it).
    on_demand: bool,
}

/// DeepSpeed stage 3's coordinator replayed over one iteration's trace, one parameter (a
/// workload tensor) per submodule: the all-gather calls it makes and the gathered elements
/// it counts (`__n_available_params`).
#[derive(Debug, Clone)]
struct Zero3Trace {
    /// The compute passes in order: (layer, backward, its parameters in step order).
    passes: Vec<(usize, bool, Vec<usize>)>,
    /// The all-gather calls in the order DeepSpeed issues them.
    calls: Vec<GatherCall>,
    /// Per pass: the calls its parameters come from (each once, in step order).
    waits: Vec<Vec<usize>>,
    /// Per tensor: partitioned (false: kept whole on every rank, `param_persistence`).
    partitioned: Vec<bool>,
    /// Most elements counted as gathered at once (DeepSpeed's `__n_available_params`),
    /// persistent parameters excluded as DeepSpeed excludes them.
    peak_live: u64,
}

/// DeepSpeed ZeRO stage 3's fetch, prefetch and release rules
/// (`deepspeed/runtime/zero/partitioned_param_coordinator.py`, deepspeedai/DeepSpeed
/// @00a31c99) over the trace of `workload`: each parameter (a workload tensor) is a step,
/// forward in parameter order, then backward in reverse. DeepSpeed hooks every module that
/// owns parameters (`iter_params(module, recurse=False)`), so a step is a submodule; the
/// LLM workloads list a transformer block as one layer of several tensors, each standing
/// for one of its parameterised submodules (an `nn.Linear`, a norm). At each step:
///
/// 1. `fetch_sub_module`: its all-gather is issued unless it is gathered or in flight
///    (persistent parameters, `param_persistence`, always are);
/// 2. prefetch: the trace's next entries are taken, and those not gathered all-gathered
///    together in one coalesced call, until they add up to at least
///    `min(max_live - gathered, prefetch_bucket)` elements (the first one always,
///    `numel_prefetching < max` before each);
/// 3. `release_sub_module` after the submodule's compute, before the next step: the
///    parameter is released unless persistent, used again at a step a prefetch already
///    passed (`__params_to_release`), or used again within `max_reuse` elements of the trace.
///
/// The gathered count (`__n_available_params`: up by a parameter's elements when its
/// all-gather is issued, down when it is released) is therefore per submodule, as in
/// DeepSpeed: a block larger than `max_live` does not stop its successor's prefetch, a
/// single submodule at least `max_live` (or parameters kept for reuse up to it) does.
fn zero3_trace(workload: &Workload, cfg: &ShardedConfig) -> Zero3Trace {
    let layers = workload.layers.len();
    let dtype = u64::from(workload.dtype_bytes.max(1));
    let bytes: Vec<u64> = workload.tensors.iter().map(|t| t.bytes).collect();
    let numel: Vec<u64> = bytes.iter().map(|b| b.div_ceil(dtype)).collect();
    let persistent: Vec<bool> = numel.iter().map(|&e| e <= cfg.persistence_elements).collect();
    let mut of_layer: Vec<Vec<usize>> = vec![Vec::new(); layers];
    for (i, t) in workload.tensors.iter().enumerate() {
        if t.bytes > 0 {
            of_layer[t.layer].push(i);
        }
    }
    // The trace: (layer, backward) passes and the parameter of each step.
    let mut passes: Vec<(usize, bool, Vec<usize>)> = (0..layers).map(|l| (l, false, of_layer[l].clone())).collect();
    passes.extend((0..layers).rev().map(|l| (l, true, of_layer[l].iter().rev().copied().collect())));
    let trace: Vec<usize> = passes.iter().flat_map(|(_, _, ts)| ts.iter().copied()).collect();
    let pass_of_step: Vec<usize> =
        passes.iter().enumerate().flat_map(|(i, (_, _, ts))| std::iter::repeat_n(i, ts.len())).collect();
    let mut queue: std::collections::VecDeque<usize> = (0..trace.len()).collect();
    // Per parameter: the call that holds it (None: released), and the last step a
    // prefetch passed for it (DeepSpeed's `__most_recent_step_id_param_fetched_for`).
    let mut held: Vec<Option<usize>> = vec![None; bytes.len()];
    let mut passed: Vec<Option<usize>> = vec![None; bytes.len()];
    let mut calls: Vec<GatherCall> = Vec::new();
    let mut waits: Vec<Vec<usize>> = vec![Vec::new(); passes.len()];
    let (mut live, mut peak_live) = (0u64, 0u64);
    let mut step = 0usize;
    for (pass, (_, _, params)) in passes.iter().enumerate() {
        for &t in params {
            if !persistent[t] && held[t].is_none() {
                held[t] = Some(calls.len());
                calls.push(GatherCall { bytes: bytes[t], issued_in: pass, first_use: pass, on_demand: true });
                live += numel[t];
            }
            if let Some(c) = held[t] {
                if !waits[pass].contains(&c) {
                    waits[pass].push(c);
                }
            }
            // This step's own entry leaves the queue unless a prefetch took it already.
            if passed[t].is_none_or(|s| s < step) {
                if let Some(s) = queue.pop_front() {
                    passed[trace[s]] = Some(s);
                }
            }
            if cfg.prefetch_bucket_elements > 0 {
                let max = cfg.max_live_elements.saturating_sub(live).min(cfg.prefetch_bucket_elements);
                let mut taken: Vec<usize> = Vec::new();
                let mut first_step = None;
                let mut elements = 0u64;
                while elements < max {
                    let Some(s) = queue.pop_front() else { break };
                    let q = trace[s];
                    passed[q] = Some(passed[q].map_or(s, |old| old.max(s)));
                    if !persistent[q] && held[q].is_none() && !taken.contains(&q) {
                        taken.push(q);
                        first_step.get_or_insert(s);
                        elements += numel[q];
                    }
                }
                if let Some(s) = first_step {
                    let total: u64 = taken.iter().map(|&q| bytes[q]).sum();
                    for &q in &taken {
                        held[q] = Some(calls.len());
                    }
                    calls.push(GatherCall {
                        bytes: total,
                        issued_in: pass,
                        first_use: pass_of_step[s],
                        on_demand: false,
                    });
                    live += elements;
                }
            }
            peak_live = peak_live.max(live);
            step += 1;
            // `release_sub_module` at step id `step`, after this submodule's compute.
            if released(t, step, &trace, &numel, &persistent, &held, &passed, cfg.max_reuse_elements) {
                held[t] = None;
                live -= numel[t];
            }
        }
    }
    Zero3Trace { passes, calls, waits, partitioned: persistent.iter().map(|p| !p).collect(), peak_live }
}

/// Whether DeepSpeed releases parameter `t` after its submodule, the trace being at step
/// `next` (`__params_to_release`): not if persistent or not gathered, not if a prefetch
/// already passed a later use of it, not if it is used again within `max_reuse` elements
/// of the trace.
#[allow(clippy::too_many_arguments)]
fn released(
    t: usize,
    next: usize,
    trace: &[usize],
    numel: &[u64],
    persistent: &[bool],
    held: &[Option<usize>],
    passed: &[Option<usize>],
    max_reuse: u64,
) -> bool {
    if persistent[t] || held[t].is_none() || passed[t].is_some_and(|s| s > next) {
        return false;
    }
    let mut traversed = 0u64;
    for &u in &trace[next.min(trace.len())..] {
        if traversed >= max_reuse {
            break;
        }
        if u == t {
            return false;
        }
        traversed += numel[u];
    }
    true
}

/// Where the block-granular program issues call `c` of a [`Zero3Trace`]: before the
/// compute of the pass at the returned index. DeepSpeed issues a prefetch at a submodule's
/// fetch, so it overlaps the submodules computing until its parameters' use; a prefetch
/// decided inside the pass that uses it overlaps that pass's earlier submodules, which
/// this simulator computes as one piece (the workload's compute is per layer) that must
/// wait for all of its parameters: such a prefetch is issued one pass earlier, before the
/// previous pass's compute, about the same length of overlap at the granularity of passes
/// (a block's compute, where DeepSpeed has its submodules'). A
/// fetch on demand (the module waits for it in DeepSpeed: a stall) and a prefetch for a
/// later pass are issued where they were decided.
fn issue_pass(c: &GatherCall) -> usize {
    if !c.on_demand && c.first_use == c.issued_in {
        c.issued_in.saturating_sub(1)
    } else {
        c.issued_in
    }
}

/// DeepSpeed ZeRO stage 3 as a stream program: the all-gathers of [`zero3_trace`], each
/// issued before the compute of the pass [`issue_pass`] gives (in DeepSpeed's order within
/// a pass), every pass waiting for the calls that carry its parameters, then computing
/// (the layer computes once all its parameters are gathered: the workload's compute is per
/// layer, where DeepSpeed interleaves fetches with each module inside it).
///
/// Gradients join the reduce bucket in the order backward produces them; a bucket is
/// reduce-scattered before the gradient that would overflow `reduce_bucket` elements
/// joins (`stage3.py`, `reduce_independent_p_g_buckets_and_remove_grads`), the rest at the
/// end of backward; with `overlap_comm=false` on the compute stream (the backward pass
/// waits). After the step the persistent parameters are all-gathered in one call
/// (`_post_step`).
fn zero3_program(workload: &Workload, cfg: &ShardedConfig, f: WireFactors) -> Program {
    let (gather_stream, reduce_stream, _) = streams(cfg.communicators);
    let mut p = Program { streams: reduce_stream + 1, ..Program::default() };
    let dtype = u64::from(workload.dtype_bytes.max(1));
    let trace = zero3_trace(workload, cfg);
    let mut at: Vec<Vec<usize>> = vec![Vec::new(); trace.passes.len()];
    for (c, call) in trace.calls.iter().enumerate() {
        at[issue_pass(call)].push(c);
    }
    let mut collective: Vec<Option<usize>> = vec![None; trace.calls.len()];
    let mut bucket = 0u64;
    let mut bucket_bytes = 0u64;
    let mut reduces = Vec::new();
    for (pass, (layer, backward, params)) in trace.passes.iter().enumerate() {
        for &c in &at[pass] {
            collective[c] = Some(p.issue(AG, wire(trace.calls[c].bytes, f.params), gather_stream));
        }
        for &c in &trace.waits[pass] {
            p.instrs.push(Instr::Wait(collective[c].expect("issued before its first use")));
        }
        p.instrs.push(Instr::Compute { layer: *layer, backward: *backward });
        if *backward {
            for &t in params {
                let b = workload.tensors[t].bytes;
                let numel = b.div_ceil(dtype);
                if bucket > 0 && bucket + numel > cfg.reduce_bucket_elements {
                    issue_reduce(&mut p, &mut reduces, bucket_bytes, reduce_stream, cfg, f);
                    (bucket, bucket_bytes) = (0, 0);
                }
                bucket += numel;
                bucket_bytes += b;
            }
        }
    }
    if bucket > 0 {
        issue_reduce(&mut p, &mut reduces, bucket_bytes, reduce_stream, cfg, f);
    }
    p.instrs.extend(reduces.iter().map(|&c| Instr::Wait(c)));
    // After the step: the persistent parameters, all-gathered in one call.
    let kept: u64 = workload.tensors.iter().zip(&trace.partitioned).filter(|(_, &p)| !p).map(|(t, _)| t.bytes).sum();
    if kept > 0 {
        let c = p.issue(AG, wire(kept, f.params), gather_stream);
        p.instrs.push(Instr::Wait(c));
    }
    p
}

/// PyTorch FSDP2 (hsdp: HYBRID_SHARD) as a stream program; see [`fsdp_plan`].
fn fsdp_program(workload: &Workload, cfg: &ShardedConfig, f: WireFactors, group: usize, ranks: usize) -> Program {
    fsdp_plan(workload, cfg, f, group, ranks).0
}

/// PyTorch FSDP2 per unit ([`units`]), on `ranks` ranks in shard groups of `group`:
///
/// - forward: before a unit's first layer, its all-gather and those of the next `prefetch`
///   units are issued and the unit's waited for; after its last layer it is resharded
///   (`reshard_after_forward`), except the root, which FSDP2 keeps unsharded through
///   backward ("the root FSDP state has its value specially set to False as a heuristic
///   since its parameters would typically be immediately all-gathered for backward",
///   `torch/distributed/fsdp/_fully_shard/_fully_shard.py`, `fully_shard`;
///   `FSDPState._lazy_init` clears the root's `post_forward_mesh_info`);
/// - backward, units by their last layer, descending: before a unit's first backward layer
///   its all-gather (unless kept) and those of the next `backward_prefetch` units are
///   issued (the root's pre-backward prefetches the last block) and the unit's waited for;
///   after its last backward layer its gradients are reduce-scattered (the root's at the
///   end of backward, with the embeddings'), then for hsdp all-reduced across replicas.
///
/// Returns the program and the most listed parameter bytes a rank holds unsharded at once
/// (an all-gather's output counted from its issue, when FSDP2 allocates it, to the reshard
/// after the unit's forward, or after its backward where it was kept or gathered again).
fn fsdp_plan(workload: &Workload, cfg: &ShardedConfig, f: WireFactors, group: usize, ranks: usize) -> (Program, u64) {
    let (gather_stream, reduce_stream, across_stream) = streams(cfg.communicators);
    let mut p = Program { streams: reduce_stream + 1, ..Program::default() };
    let bytes = layer_bytes(workload);
    let Units { layers: units, root } = units(workload, cfg);
    let count = units.len();
    let unit_bytes: Vec<u64> = units.iter().map(|ls| ls.iter().map(|&l| bytes[l]).sum()).collect();
    let mut unit_of = vec![0usize; workload.layers.len()];
    for (u, ls) in units.iter().enumerate() {
        for &l in ls {
            unit_of[l] = u;
        }
    }
    let first = |u: usize| units[u][0];
    let last = |u: usize| units[u][units[u].len() - 1];
    // Kept unsharded from forward through backward: every unit with
    // reshard_after_forward=false (SHARD_GRAD_OP), else the root.
    let kept = |u: usize| !cfg.reshard_after_forward || Some(u) == root;
    let (mut held, mut peak) = (0u64, 0u64);
    let gather = |p: &mut Program, gathered: &mut Vec<Option<usize>>, held: &mut u64, u: usize| {
        if gathered[u].is_none() && unit_bytes[u] > 0 {
            gathered[u] = Some(p.issue(AG, wire(unit_bytes[u], f.params), gather_stream));
            *held += unit_bytes[u];
        }
    };
    let mut gathered: Vec<Option<usize>> = vec![None; count];
    for (layer, &u) in unit_of.iter().enumerate() {
        if layer == first(u) {
            for ahead in u..(u + 1 + cfg.forward_prefetch).min(count) {
                gather(&mut p, &mut gathered, &mut held, ahead);
            }
            peak = peak.max(held);
            if let Some(c) = gathered[u] {
                p.instrs.push(Instr::Wait(c));
            }
        }
        p.instrs.push(Instr::Compute { layer, backward: false });
        if layer == last(u) && !kept(u) && gathered[u].is_some() {
            held -= unit_bytes[u];
        }
    }
    // Backward: all-gather again (FULL_SHARD) unless kept, compute, reduce-scatter.
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_key(|&u| std::cmp::Reverse(last(u)));
    let mut regathered: Vec<Option<usize>> = vec![None; count];
    let mut reduces = Vec::new();
    for (layer, &u) in unit_of.iter().enumerate().rev() {
        if layer == last(u) {
            let at = order.iter().position(|&o| o == u).expect("every unit is in the order");
            for &ahead in &order[at..(at + 1 + cfg.backward_prefetch).min(count)] {
                if !kept(ahead) {
                    gather(&mut p, &mut regathered, &mut held, ahead);
                }
            }
            peak = peak.max(held);
            if let Some(c) = regathered[u] {
                p.instrs.push(Instr::Wait(c));
            }
        }
        p.instrs.push(Instr::Compute { layer, backward: true });
        if layer == first(u) && unit_bytes[u] > 0 {
            held -= unit_bytes[u];
            let rs = p.issue(RS, wire(unit_bytes[u], f.grads), reduce_stream);
            reduces.push(rs);
            if cfg.stage == Stage::Hsdp && group < ranks {
                // The 1/G shard of this unit's gradients, all-reduced across the replicas
                // once its reduce-scatter has produced it.
                let shard = (unit_bytes[u] as f64 / group as f64 * f.grads).round() as u64;
                reduces.push(p.issue_after(AR_ACROSS, shard, across_stream, Some(rs)));
            }
        }
    }
    p.instrs.extend(reduces.iter().map(|&c| Instr::Wait(c)));
    (p, peak)
}

/// The most parameter bytes (in `param_dtype`) a rank holds unsharded at once under
/// `strategy` (its sharded config `cfg`) running `workload` on `n` ranks in shard groups of
/// `group`, each on top of its own shard (ZeRO's count holds that):
///
/// - fsdp/hsdp: the all-gathered units held at once in [`fsdp_plan`]: with
///   `reshard_after_forward=false` every unit (from its forward to its backward), otherwise
///   the root, the unit computing and the ones prefetched (`prefetch`, `backward_prefetch`);
/// - zero3: the most elements DeepSpeed's coordinator counts as gathered
///   ([`Zero3Trace::peak_live`]: the parameters fetched, prefetched and kept for reuse, which
///   `max_live` and `max_reuse` bound) plus the persistent ones (`param_persistence`),
///   never released;
/// - zero1/zero2: none (their weights are whole on every rank, counted already).
pub(crate) fn peak_gathered_bytes(
    strategy: &Strategy,
    cfg: &ShardedConfig,
    workload: &Workload,
    group: usize,
    n: usize,
) -> f64 {
    let f = WireFactors::of(strategy, workload);
    let listed = match cfg.stage {
        Stage::Zero1 | Stage::Zero2 => 0,
        Stage::Zero3 => {
            let trace = zero3_trace(workload, cfg);
            let persistent: u64 =
                workload.tensors.iter().zip(&trace.partitioned).filter(|(_, &p)| !p).map(|(t, _)| t.bytes).sum();
            trace.peak_live.saturating_mul(u64::from(workload.dtype_bytes)).saturating_add(persistent)
        }
        Stage::Fsdp | Stage::Hsdp => fsdp_plan(workload, cfg, f, group, n).1,
    };
    listed as f64 * f.params
}

/// Ranks per shard group of `n` ranks on `topo`: all of them, but for `hsdp` its
/// `shard_group`, by default the GPUs of a machine (8 on a fabric without machines), or
/// all `n` where fewer (one shard group: FSDP with one replica), which must divide `n`.
pub(crate) fn shard_group(cfg: &ShardedConfig, topo: &Topology, n: usize) -> Result<usize> {
    match cfg.stage {
        Stage::Hsdp => match cfg.shard_group {
            Some(g) => {
                check_group(g, n)?;
                Ok(g)
            }
            None => match topo.gpus_per_node() {
                Some(machine) => default_group(machine, n, true),
                None => default_group(8, n, false),
            },
        },
        _ => Ok(n),
    }
}

/// HSDP's default shard group for `n` workers on machines of `machine` GPUs (`machines`:
/// the fabric has machines; else 8 ranks stand for one): a machine, or all `n` where
/// fewer; refused, naming the shard groups one could give, where a machine does not divide
/// `n`.
fn default_group(machine: usize, n: usize, machines: bool) -> Result<usize> {
    let g = machine.min(n);
    if g == 0 || !n.is_multiple_of(g) {
        // A star or leaf-spine has no machines: 8 ranks stand for one (HSDP's usual node).
        let group = if machines {
            format!("a machine's {g} GPUs")
        } else {
            format!("{g} ranks (a machine's GPUs, where a fabric without machines counts 8)")
        };
        let shown = crate::spec::divisors_shown(n);
        return Err(Error::invalid(
            "strategy.shard_group",
            format!(
                "hsdp shards within a machine by default, and {group} do not divide {n} workers; \
                 give a shard group that does, hsdp:shard_group=G with G one of {shown}"
            ),
        ));
    }
    Ok(g)
}

/// Checks that `group` ranks per shard group divide `workers`.
fn check_group(group: usize, workers: usize) -> Result<()> {
    if group == 0 || !workers.is_multiple_of(group) {
        let shown = crate::spec::divisors_shown(workers);
        return Err(Error::invalid(
            "strategy.shard_group",
            format!("{group} ranks per shard group do not divide {workers} workers; choose a divisor: {shown}"),
        ));
    }
    Ok(())
}

/// Whether every schedule lets one rank stand for all (see the engine's folding).
pub(super) fn all_symmetric(schedules: &[Box<dyn StepSchedule>], n: usize, star: bool) -> bool {
    schedules.iter().all(|s| s.rank_symmetric(n) && (star || s.neighbours_only()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(sizes: &[u64]) -> Workload {
        Workload::one_tensor_per_layer(sizes, 10, 20)
    }

    fn cfg(text: &str) -> ShardedConfig {
        match Strategy::parse(text).unwrap().family {
            crate::strategy::Family::Sharded(c) => c,
            _ => unreachable!(),
        }
    }

    fn moved(p: &Program, schedule: usize) -> u64 {
        p.collectives.iter().filter(|c| c.schedule == schedule).map(|c| c.bytes).sum()
    }

    #[test]
    fn fsdp_gathers_twice_and_reduces_once_zero_moves_each_once() {
        let w = workload(&[100, 0, 300, 50]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let fsdp = program(&w, &cfg("fsdp"), f, 1, 1);
        assert_eq!((moved(&fsdp, AG), moved(&fsdp, RS)), (900, 450));
        let keep = program(&w, &cfg("fsdp:reshard_after_forward=false"), f, 1, 1);
        assert_eq!((moved(&keep, AG), moved(&keep, RS)), (450, 450));
        for stage in ["zero1", "zero2"] {
            let z = program(&w, &cfg(&format!("{stage}:bucket=200B")), f, 1, 1);
            assert_eq!((moved(&z, AG), moved(&z, RS)), (450, 450), "{stage}");
        }
    }

    /// The LLM workloads' layout ([`Workload::stem_blocks_head`]).
    fn stem_blocks_head() -> Workload {
        Workload::stem_blocks_head()
    }

    #[test]
    fn fsdp_keeps_the_root_unit_through_backward() {
        // FSDP2 on each block, then on the model: the stem, norm and head are the root's,
        // which is not resharded after forward, so it is gathered once.
        let w = stem_blocks_head();
        let u = units(&w, &cfg("fsdp"));
        assert_eq!(u.layers, vec![vec![0, 5, 6], vec![1], vec![2], vec![3], vec![4]]);
        assert_eq!(u.root, Some(0));
        let (psi, root) = (4408u64, 2008u64);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        for spec in ["fsdp", "hsdp", "fsdp:prefetch=0,backward_prefetch=0", "fsdp:unit=2"] {
            let p = program(&w, &cfg(spec), f, 4, 8);
            assert_eq!((moved(&p, AG), moved(&p, RS)), (2 * psi - root, psi), "{spec}");
            // The root's all-gather comes first (its pre-forward), its reduce-scatter last
            // (its post-backward, after the stem's gradients).
            assert_eq!((sizes_of(&p, AG)[0], *sizes_of(&p, RS).last().unwrap()), (root, root), "{spec}");
        }
        assert_eq!(units(&w, &cfg("fsdp:unit=2")).layers, vec![vec![0, 5, 6], vec![1, 2], vec![3, 4]]);
        let keep = program(&w, &cfg("fsdp:reshard_after_forward=false"), f, 1, 1);
        assert_eq!(moved(&keep, AG), psi);
        // Backward: the root's pre-backward prefetches the last block (no gather of its own).
        let p = program(&w, &cfg("fsdp"), f, 1, 1);
        let head = p.instrs.iter().position(|i| *i == Instr::Compute { layer: 6, backward: true }).unwrap();
        let before: Vec<u64> = p.instrs[compute_at(&p, 6, false)..head]
            .iter()
            .filter_map(|i| match i {
                Instr::Issue(c) => Some(p.collectives[*c].bytes),
                _ => None,
            })
            .collect();
        assert_eq!(before, vec![600]);
    }

    #[test]
    fn only_repeated_blocks_holding_most_parameters_leave_a_root() {
        // Every layer different (the zoo's module lists): every layer a unit, no root.
        let w = workload(&[100, 0, 300, 50]);
        assert_eq!(units(&w, &cfg("fsdp")).root, None);
        // A run of equal layers holding less than half of the parameters (BERT's query,
        // key and value): not the model's blocks.
        let w = workload(&[100, 100, 100, 400]);
        assert_eq!(units(&w, &cfg("fsdp")), Units { layers: vec![vec![0], vec![1], vec![2], vec![3]], root: None });
        // Blocks with nothing around them: no root either.
        let w = workload(&[100; 4]);
        assert_eq!(units(&w, &cfg("fsdp")).root, None);
    }

    #[test]
    fn gradients_are_reduced_in_param_dtype_unless_reduce_dtype_says_otherwise() {
        // PyTorch's MixedPrecision(param_dtype=bf16) reduces in bf16 when reduce_dtype is
        // None; reduce_dtype=fp32 keeps the reduction at full precision. fp32 workload (4 B).
        let w = Workload { dtype_bytes: 4, ..workload(&[100]) };
        let factors = |spec: &str| {
            let f = WireFactors::of(&Strategy::parse(spec).unwrap(), &w);
            (f.params, f.grads)
        };
        assert_eq!(factors("fsdp"), (1.0, 1.0));
        assert_eq!(factors("fsdp:param_dtype=bf16"), (0.5, 0.5));
        assert_eq!(factors("fsdp:param_dtype=bf16,reduce_dtype=fp32"), (0.5, 1.0));
        assert_eq!(factors("zero3:reduce_dtype=bf16"), (1.0, 0.5));
        assert_eq!(factors("hsdp:param_dtype=fp16,compression=2"), (0.5, 0.25));
    }

    #[test]
    fn zero2_reduces_during_the_backward_pass_and_zero1_after_it() {
        let w = workload(&[100, 100, 100, 100]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let first_issue_after_backward = |p: &Program| {
            let first_issue = p.instrs.iter().position(|i| matches!(i, Instr::Issue(_))).unwrap();
            let last_backward =
                p.instrs.iter().rposition(|i| matches!(i, Instr::Compute { backward: true, .. })).unwrap();
            first_issue > last_backward
        };
        assert!(!first_issue_after_backward(&program(&w, &cfg("zero2:bucket=200B"), f, 1, 1)));
        assert!(first_issue_after_backward(&program(&w, &cfg("zero1:bucket=200B"), f, 1, 1)));
    }

    #[test]
    fn size_based_wrapping_groups_layers_until_the_threshold() {
        let w = workload(&[100, 0, 300, 50, 10]);
        let layers = |spec: &str| units(&w, &cfg(spec)).layers;
        assert_eq!(layers("fsdp:min_unit=300B"), vec![vec![0, 1, 2], vec![3, 4]]);
        assert_eq!(layers("fsdp:unit=2"), vec![vec![0, 1], vec![2, 3], vec![4]]);
    }

    #[test]
    fn prefetch_issues_the_next_units_gather_before_computing_this_one() {
        let w = workload(&[100, 100, 100]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let p = program(&w, &cfg("fsdp:prefetch=1"), f, 1, 1);
        // Issue AG0, Issue AG1, Wait AG0, Compute l0, ...
        assert_eq!(
            &p.instrs[..4],
            &[Instr::Issue(0), Instr::Issue(1), Instr::Wait(0), Instr::Compute { layer: 0, backward: false }]
        );
        let p0 = program(&w, &cfg("fsdp:prefetch=0"), f, 1, 1);
        assert_eq!(&p0.instrs[..3], &[Instr::Issue(0), Instr::Wait(0), Instr::Compute { layer: 0, backward: false }]);
    }

    /// Per forward layer: how many all-gathers were issued before its compute.
    fn gathers_before_forward(p: &Program, layers: usize) -> Vec<usize> {
        (0..layers)
            .map(|l| {
                let at = p.instrs.iter().position(|i| *i == Instr::Compute { layer: l, backward: false }).unwrap();
                p.instrs[..at]
                    .iter()
                    .filter(|i| matches!(i, Instr::Issue(c) if p.collectives[*c].schedule == AG))
                    .count()
            })
            .collect()
    }

    #[test]
    fn zero3_with_a_tiny_prefetch_bucket_gathers_one_unit_ahead_as_fsdp_prefetch_1() {
        // Eight uniform parameters of 100 elements (fp32), one per layer, none persistent,
        // released at once (max_reuse=0): the fetches fsdp:prefetch=1 issues, in its order.
        let w = workload(&[400; 8]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let tiny = program(&w, &cfg("zero3:prefetch_bucket=1,param_persistence=0,max_reuse=0"), f, 1, 1);
        let fsdp = program(&w, &cfg("fsdp:prefetch=1,backward_prefetch=1"), f, 1, 1);
        assert_eq!(gathers_before_forward(&fsdp, 8), vec![2, 3, 4, 5, 6, 7, 8, 8]);
        // DeepSpeed's trace runs on into the backward pass: at the last forward layer it
        // prefetches layer 6's backward all-gather, where FSDP's backward issues it.
        assert_eq!(gathers_before_forward(&tiny, 8), vec![2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(sizes_of(&tiny, AG), sizes_of(&fsdp, AG));
        assert_eq!(moved(&tiny, AG), 2 * 8 * 400, "gathered for forward and again for backward");
        // No prefetch at all: each all-gather just before its own layer.
        let none = program(&w, &cfg("zero3:prefetch_bucket=0,param_persistence=0,max_reuse=0"), f, 1, 1);
        assert_eq!(gathers_before_forward(&none, 8), (1..=8).collect::<Vec<_>>());
    }

    #[test]
    fn zero3_prefetches_by_elements_and_a_huge_bucket_gathers_everything_up_front() {
        let w = workload(&[400; 8]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let ahead = |spec: &str| gathers_before_forward(&program(&w, &cfg(spec), f, 1, 1), 8);
        // 250 elements: each fetch takes parameters until it holds 250 (three of 100): the
        // frontier runs ahead by three per step until the trace's forward part is out.
        assert_eq!(ahead("zero3:prefetch_bucket=250,param_persistence=0,max_reuse=0")[..3], [2, 3, 4]);
        let g = program(&w, &cfg("zero3:prefetch_bucket=250,param_persistence=0,max_reuse=0"), f, 1, 1);
        assert_eq!(sizes_of(&g, AG)[..4], [400, 1200, 1200, 1200], "one coalesced call per prefetch");
        // A huge bucket: the first fetch prefetches every other parameter in one call.
        let all = program(&w, &cfg("zero3:prefetch_bucket=1e12,max_live=1e12,param_persistence=0"), f, 1, 1);
        assert_eq!(gathers_before_forward(&all, 8), vec![2; 8]);
        assert_eq!(sizes_of(&all, AG)[..2], [400, 7 * 400]);
        // With the default reuse distance (1e9 elements) nothing is released before its
        // backward use: every parameter moves once, not twice.
        assert_eq!(moved(&all, AG), 8 * 400);
        // max_live bounds it: 300 live elements, one fetched, so at most 200 more.
        let capped = program(&w, &cfg("zero3:prefetch_bucket=1e12,max_live=300,param_persistence=0"), f, 1, 1);
        assert_eq!(sizes_of(&capped, AG)[..2], [400, 800]);
    }

    /// `blocks` layers of `per_block` tensors of `elements` fp32 elements each (a transformer
    /// block listed as one layer of several `nn.Linear` weights), `forward_ns` forward and
    /// twice that backward.
    fn blocks(blocks: usize, per_block: usize, elements: u64, forward_ns: u64) -> Workload {
        let mut w = Workload::one_tensor_per_layer(&vec![0; blocks], forward_ns, 2 * forward_ns);
        w.tensors = (0..blocks * per_block)
            .map(|i| crate::workload::Tensor { name: format!("t{i}"), bytes: 4 * elements, layer: i / per_block })
            .collect();
        w
    }

    /// Per all-gather: the index of its issue instruction; per (layer, backward) pass: the
    /// index of its compute instruction.
    fn issue_at(p: &Program, c: usize) -> usize {
        p.instrs.iter().position(|i| *i == Instr::Issue(c)).unwrap()
    }

    fn compute_at(p: &Program, layer: usize, backward: bool) -> usize {
        p.instrs.iter().position(|i| *i == Instr::Compute { layer, backward }).unwrap()
    }

    /// The all-gathers forward layer `l` waits for.
    fn waited_by_forward(p: &Program, l: usize) -> Vec<usize> {
        let at = compute_at(p, l, false);
        let from = p.instrs[..at].iter().rposition(|i| matches!(i, Instr::Compute { .. })).map_or(0, |i| i + 1);
        p.instrs[from..at]
            .iter()
            .filter_map(|i| match i {
                Instr::Wait(c) if p.collectives[*c].schedule == AG => Some(*c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn zero3_prefetches_the_next_block_when_a_block_holds_more_than_max_live() {
        // Blocks of 4 parameters of 300 elements (1,200 per block) with max_live=1,000:
        // DeepSpeed counts and releases per submodule, so at any fetch about two parameters
        // are live and the prefetch goes on. Counting a whole block until its compute ended
        // saturated max_live (1,200 - 1,000 = 0 to prefetch) and every block after the first
        // was gathered on demand, after the previous block's compute.
        let w = blocks(6, 4, 300, 1_000_000);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let spec = "zero3:max_live=1000,prefetch_bucket=1,param_persistence=0,max_reuse=0";
        let p = program(&w, &cfg(spec), f, 1, 1);
        for l in 1..6 {
            let gathers = waited_by_forward(&p, l);
            assert_eq!(gathers.len(), 4, "layer {l}: one all-gather per parameter");
            for c in gathers {
                assert!(issue_at(&p, c) < compute_at(&p, l - 1, false), "layer {l}'s gathers overlap layer {}", l - 1);
            }
        }
        // DeepSpeed's count: one parameter and the one prefetched (600 elements), three at
        // the turn to backward, where the last parameter is kept for its reuse (a prefetch
        // passed it), never the 1,200 of a block and the next.
        assert_eq!(zero3_trace(&w, &cfg(spec)).peak_live, 900);
        // Every parameter moves twice (forward and backward, max_reuse=0), in 1,200-byte calls.
        assert_eq!((moved(&p, AG), sizes_of(&p, AG).iter().max().copied()), (2 * 24 * 1200, Some(1200)));
    }

    #[test]
    fn zero3_hides_every_prefetched_gather_behind_compute_in_closed_form() {
        use crate::topology::TopologySpec;
        // Closed form on NCCL's timing (no interference): exposed are the first block's four
        // all-gathers (nothing computes before them), the last forward parameter's, fetched
        // again on demand for its backward (max_reuse=0 released it, as DeepSpeed does), and
        // the last two reduce-scatter buckets of a block each (4 x 300 elements: a bucket
        // is closed when the next gradient would overflow it, so block 1's goes after block
        // 0's backward); all the other gathers hide behind compute.
        let w = blocks(6, 4, 300, 1_000_000);
        let spec = "zero3:max_live=1000,prefetch_bucket=1,param_persistence=0,max_reuse=0,reduce_bucket=1200,compute_slowdown=0";
        let mut sc = Scenario::new(w, 8, 50e9, Strategy::parse(spec).unwrap());
        sc.topology = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        sc.iterations = 2;
        let r = super::super::simulate(&sc).unwrap();
        let fabric = &nccl_fabrics(&sc, &cfg(spec), 8, 8).unwrap()[AG];
        let ns = |c: Collective| {
            let s = nccl::choose(
                fabric,
                c,
                1200.0 * if c == Collective::AllGather { 1.0 } else { 4.0 },
                &NcclOptions::default(),
            );
            (s.unwrap().seconds * 1e9).round() * 1e-9
        };
        let compute = 6.0 * 3e-3;
        let want = 5.0 * ns(Collective::AllGather) + compute + 2.0 * ns(Collective::ReduceScatter);
        assert!((r.iteration_time_s - want).abs() < 1e-8, "{} vs {want}", r.iteration_time_s);
        assert!(r.exposed_comm_s < 0.2 * r.comm_time_s, "{} of {}", r.exposed_comm_s, r.comm_time_s);
    }

    #[test]
    fn zero3_stalls_where_deepspeeds_rule_does() {
        let f = WireFactors { params: 1.0, grads: 1.0 };
        // A parameter of max_live elements or more leaves nothing to prefetch at its fetch
        // (`min(max_live - live, bucket)` = 0): each all-gather is fetched on demand, issued
        // right before the compute waits for it.
        let w = blocks(4, 2, 1000, 1_000_000);
        let p = program(&w, &cfg("zero3:max_live=1000,param_persistence=0,max_reuse=0"), f, 1, 1);
        for (i, instr) in p.instrs.iter().enumerate() {
            if let Instr::Issue(c) = *instr {
                if p.collectives[c].schedule == AG {
                    assert!(p.instrs[i + 1..].iter().take_while(|j| matches!(j, Instr::Issue(_))).count() <= 1);
                }
            }
        }
        assert_eq!(sizes_of(&p, AG), vec![4000; 16], "one on-demand call per parameter and pass");
        // Parameters kept for their reuse count as live: with max_reuse covering the whole
        // trace nothing is released, and once 2,000 elements are live (the first two blocks,
        // fetched and prefetched one parameter ahead) the prefetch stops; the rest is
        // fetched on demand.
        let w = blocks(4, 2, 500, 1_000_000);
        let p = program(&w, &cfg("zero3:max_live=2000,prefetch_bucket=1,param_persistence=0,max_reuse=1e12"), f, 1, 1);
        let t = zero3_trace(&w, &cfg("zero3:max_live=2000,prefetch_bucket=1,param_persistence=0,max_reuse=1e12"));
        let on_demand: Vec<bool> = t.calls.iter().map(|c| c.on_demand).collect();
        assert_eq!(on_demand, [true, false, false, false, true, true, true, true]);
        assert_eq!(t.peak_live, 4000, "every parameter live at the end of forward");
        assert_eq!(moved(&p, AG), 8 * 2000, "each parameter moves once: kept for its backward");
    }

    #[test]
    fn zero3_reduce_scatters_ceil_of_units_per_bucket() {
        // n uniform gradients of s elements in buckets of B: floor(B/s) per bucket, so
        // ceil(n / floor(B/s)) reduce-scatters, ceil(total/B) when B is a multiple of s.
        let w = workload(&[400; 8]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        for (bucket, want) in [(100u64, 8usize), (250, 4), (300, 3), (800, 1), (5e8 as u64, 1), (1, 8)] {
            let p = program(&w, &cfg(&format!("zero3:reduce_bucket={bucket}")), f, 1, 1);
            let per = (bucket / 100).max(1) as usize;
            assert_eq!(sizes_of(&p, RS).len(), want, "{bucket}");
            assert_eq!(want, 8usize.div_ceil(per), "{bucket}");
            assert_eq!(moved(&p, RS), 8 * 400);
        }
        // overlap_comm (DeepSpeed's default for stage 3): the backward pass does not wait;
        // false: it waits for each bucket.
        let p = program(&w, &cfg("zero3:reduce_bucket=200"), f, 1, 1);
        let first = p.instrs.iter().position(|i| matches!(i, Instr::Issue(c) if p.collectives[*c].schedule == RS));
        assert!(!matches!(p.instrs[first.unwrap() + 1], Instr::Wait(_)));
        let p = program(&w, &cfg("zero3:reduce_bucket=200,overlap_comm=false"), f, 1, 1);
        let i = p.instrs.iter().position(|i| matches!(i, Instr::Issue(c) if p.collectives[*c].schedule == RS)).unwrap();
        assert_eq!(
            p.instrs[i + 1],
            Instr::Wait(match p.instrs[i] {
                Instr::Issue(c) => c,
                _ => unreachable!(),
            })
        );
    }

    #[test]
    fn zero3_keeps_parameters_under_the_persistence_threshold_whole() {
        // Layers of 100, 10, 100, 10 elements: with the threshold at 10 the small ones are
        // never gathered in forward or backward, only once, together, after the step.
        let w = workload(&[400, 40, 400, 40]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let p = program(&w, &cfg("zero3:param_persistence=10,prefetch_bucket=0,max_reuse=0"), f, 1, 1);
        let ag = sizes_of(&p, AG);
        assert_eq!(ag, vec![400, 400, 400, 400, 80]);
        assert_eq!(*p.instrs.last().unwrap(), Instr::Wait(p.collectives.len() - 1));
        // Their gradients are still reduce-scattered.
        assert_eq!(moved(&p, RS), 880);
        // Below the threshold (DeepSpeed: ds_numel <= threshold): 9 keeps none.
        let p = program(&w, &cfg("zero3:param_persistence=9,prefetch_bucket=0,max_reuse=0"), f, 1, 1);
        assert_eq!(moved(&p, AG), 2 * 880);
    }

    #[test]
    fn zero3_options_are_its_own_and_fsdp_is_unchanged() {
        for (spec, field) in [
            ("zero3:prefetch=2", "strategy.prefetch"),
            ("zero3:unit=2", "strategy.unit"),
            ("zero3:allgather_bucket=1e6", "strategy.allgather_bucket"),
            ("fsdp:prefetch_bucket=1e6", "strategy.prefetch_bucket"),
            ("zero2:param_persistence=10", "strategy.param_persistence"),
            ("zero3:prefetch_bucket=-1", "strategy.prefetch_bucket"),
            ("zero3:max_live=2e15", "strategy.max_live"),
        ] {
            assert_eq!(Strategy::parse(spec).unwrap_err().field(), field, "{spec}");
        }
        let e = Strategy::parse("zero3:prefetch=2").unwrap_err();
        assert!(e.to_string().contains("prefetch_bucket"), "{e}");
        let c = cfg("zero3");
        assert_eq!(c.stage, Stage::Zero3);
        assert!(c.overlap_comm, "DeepSpeed resolves overlap_comm to stage == 3");
        assert_eq!(
            (c.prefetch_bucket_elements, c.persistence_elements, c.max_live_elements, c.reduce_bucket_elements),
            (50_000_000, 100_000, 1_000_000_000, 500_000_000)
        );
        assert!(!cfg("zero2").overlap_comm);
        assert_eq!(cfg("fsdp").stage, Stage::Fsdp);
    }

    #[test]
    fn shard_groups_must_divide_the_workers() {
        assert!(check_group(8, 64).is_ok());
        let e = check_group(3, 16).unwrap_err();
        assert_eq!(e.field(), "strategy.shard_group");
        assert!(e.to_string().contains("1, 2, 4, 8, 16"));
    }

    #[test]
    fn hsdp_shards_within_a_machine_or_all_the_workers_when_fewer() {
        use crate::topology::TopologySpec;
        let group = |spec: &str, n: usize| {
            let topo = TopologySpec::parse("rail:node=dgx-h100").unwrap().build(n, 0, 50e9, 0).unwrap();
            shard_group(&cfg(spec), &topo, n)
        };
        // 4 GPUs of an 8-GPU machine: one shard group of 4 (FSDP with one replica), where
        // the machine's 8 were refused for not dividing 4.
        assert_eq!(group("hsdp", 4).unwrap(), 4);
        assert_eq!(group("hsdp", 1).unwrap(), 1);
        assert_eq!(group("hsdp", 64).unwrap(), 8);
        // 12 GPUs: a machine's 8 do not divide them; the message names what does.
        let e = group("hsdp", 12).unwrap_err();
        assert_eq!(e.field(), "strategy.shard_group");
        assert!(e.to_string().contains("hsdp:shard_group=G with G one of 1, 2, 3, 4, 6, 12"), "{e}");
        assert_eq!(group("hsdp:shard_group=6", 12).unwrap(), 6);
        // Given explicitly, it must divide the workers whatever the machine.
        assert_eq!(group("hsdp:shard_group=8", 4).unwrap_err().field(), "strategy.shard_group");
    }

    fn sizes_of(p: &Program, schedule: usize) -> Vec<u64> {
        p.collectives.iter().filter(|c| c.schedule == schedule).map(|c| c.bytes).collect()
    }

    #[test]
    fn zero_buckets_are_counted_in_elements_and_close_before_overflowing() {
        // bf16: 2 bytes per element; four gradients of 50 elements, filled in reverse.
        let mut w = workload(&[100, 100, 100, 100]);
        w.dtype_bytes = 2;
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let rs = |spec: &str| sizes_of(&program(&w, &cfg(spec), f, 1, 1), RS);
        // 120 elements hold two gradients (100 of them); the third would overflow.
        assert_eq!(rs("zero2:reduce_bucket=120"), vec![200, 200]);
        assert_eq!(rs("zero2:reduce_bucket=100"), vec![200, 200]);
        assert_eq!(rs("zero2:reduce_bucket=99"), vec![100, 100, 100, 100]);
        assert_eq!(rs("zero1:reduce_bucket=150"), vec![300, 100]);
        // DeepSpeed's default, 5e8 elements: one bucket.
        assert_eq!(rs("zero2"), vec![400]);
        // A gradient larger than a bucket is a bucket of its own.
        assert_eq!(rs("zero2:reduce_bucket=10"), vec![100, 100, 100, 100]);
        // All-gathers: max(1, elements / allgather_bucket) equal pieces of the 200 elements.
        let ag = |spec: &str| sizes_of(&program(&w, &cfg(spec), f, 1, 1), AG);
        assert_eq!(ag("zero1:allgather_bucket=60"), vec![134, 133, 133]);
        assert_eq!(ag("zero1:allgather_bucket=300"), vec![400]);
        assert_eq!(ag("zero1"), vec![400]);
        // bucket=SIZE still gives both in bytes.
        assert_eq!(rs("zero2:bucket=200B"), vec![200, 200]);
    }

    #[test]
    fn overlap_comm_decides_whether_the_backward_pass_waits_for_each_bucket() {
        let w = workload(&[100, 100, 100, 100]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        // Instruction after each reduce-scatter issue: a wait (blocking) or more backward.
        let waits_at_once = |spec: &str| {
            let p = program(&w, &cfg(spec), f, 1, 1);
            let first = p.instrs.iter().position(|i| matches!(i, Instr::Issue(c) if p.collectives[*c].schedule == RS));
            first.map(|i| {
                p.instrs[i + 1]
                    == Instr::Wait(match p.instrs[i] {
                        Instr::Issue(c) => c,
                        _ => unreachable!(),
                    })
            })
        };
        assert_eq!(waits_at_once("zero2:bucket=200B"), Some(true), "DeepSpeed's default below stage 3");
        assert_eq!(waits_at_once("zero2:bucket=200B,overlap_comm=true"), Some(false));
        // zero1 with overlap_comm gets the backward hooks too (reduces during backward).
        let p = program(&w, &cfg("zero1:bucket=200B,overlap_comm=true"), f, 1, 1);
        let first_issue = p.instrs.iter().position(|i| matches!(i, Instr::Issue(_))).unwrap();
        let last_backward = p.instrs.iter().rposition(|i| matches!(i, Instr::Compute { backward: true, .. })).unwrap();
        assert!(first_issue < last_backward);
    }

    #[test]
    fn communicators_put_gathers_and_reduce_scatters_on_one_stream_or_two_and_all_reduces_on_their_own() {
        let w = workload(&[100, 100]);
        let f = WireFactors { params: 1.0, grads: 1.0 };
        let streams = |spec: &str| {
            let p = program(&w, &cfg(spec), f, 4, 8);
            let of = |s: usize| p.collectives.iter().find(|c| c.schedule == s).map(|c| c.stream).unwrap();
            (of(AG), of(RS), of(AR_ACROSS), p.streams)
        };
        assert_eq!(streams("hsdp"), (0, 0, 1, 2));
        assert_eq!(streams("hsdp:communicators=2"), (0, 1, 2, 3));
        // Each all-reduce waits for its own reduce-scatter's output.
        let p = program(&w, &cfg("hsdp"), f, 4, 8);
        for (i, c) in p.collectives.iter().enumerate() {
            if c.schedule == AR_ACROSS {
                let rs = c.after.expect("after its reduce-scatter");
                assert_eq!(p.collectives[rs].schedule, RS);
                assert!(rs < i);
            }
        }
    }

    #[test]
    fn hsdp_all_reduces_over_one_gpu_per_node_on_its_own_nic_share() {
        use crate::topology::TopologySpec;
        let sc = |topology: &str, n: usize| {
            let mut sc = Scenario::new(workload(&[100]), n, 50e9, Strategy::parse("hsdp").unwrap());
            sc.topology = TopologySpec::parse(topology).unwrap();
            sc
        };
        let rail = sc("rail:node=dgx-h100", 64);
        let full = NcclFabric::from_topology(&rail.topology, 64, 50e9, nccl::Transport::Rdma).unwrap();
        let f = nccl_fabrics(&rail, &cfg("hsdp"), 64, 8).unwrap();
        assert_eq!((f[AG].nodes, f[AG].gpus_per_node), (1, 8), "shard group: one node");
        assert_eq!((f[AR_ACROSS].nodes, f[AR_ACROSS].gpus_per_node, f[AR_ACROSS].nics_per_node), (8, 1, 1));
        assert_eq!(f[AR_ACROSS].nic_bytes_per_s, full.nic_bytes_per_s, "each replica group its own rail");
        let f = nccl_fabrics(&rail, &cfg("hsdp"), 64, 16).unwrap();
        assert_eq!((f[RS].nodes, f[RS].gpus_per_node, f[AR_ACROSS].nodes), (2, 8, 4));
        // Shard groups of 4: two members of a replica group per node, on two NICs.
        let f = nccl_fabrics(&rail, &cfg("hsdp"), 64, 4).unwrap();
        assert_eq!((f[AR_ACROSS].nodes, f[AR_ACROSS].gpus_per_node, f[AR_ACROSS].nics_per_node), (8, 2, 2));
        assert_eq!(f[AR_ACROSS].nic_bytes_per_s, full.nic_bytes_per_s);
        // One NIC per machine: the 8 replica groups of a node share it.
        let nodes = sc("nodes:machine=p3.16xlarge", 32);
        let full = NcclFabric::from_topology(&nodes.topology, 32, 50e9, nccl::Transport::Rdma).unwrap();
        let f = nccl_fabrics(&nodes, &cfg("hsdp"), 32, 8).unwrap();
        assert_eq!((f[AR_ACROSS].nodes, f[AR_ACROSS].gpus_per_node), (4, 1));
        let share = full.nic_bytes_per_s * full.nics_per_node as f64 / 8.0;
        assert!((f[AR_ACROSS].nic_bytes_per_s - share).abs() < 1e-6);
    }

    #[test]
    fn nccl_runs_count_no_flow_up_front() {
        use crate::topology::TopologySpec;
        let mut sc = Scenario::new(workload(&[1 << 20, 1 << 20]), 1024, 50e9, Strategy::parse("fsdp").unwrap());
        sc.topology = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        estimate::LAST.with(|l| l.set(None));
        let r = super::super::simulate(&sc).unwrap();
        let work = estimate::LAST.with(|l| l.get()).unwrap();
        assert_eq!((work.flows, work.lane_messages, r.flows), (0, 0, 0));
        assert_eq!(r.simulated_ranks, 1);
    }

    #[test]
    fn nccl_timed_runs_report_rank_0s_communication_and_bus_bytes_but_no_links() {
        use crate::topology::TopologySpec;
        // One unit: all-gather (forward), all-gather (backward), reduce-scatter, one after
        // the other; rank 0 sends (n-1)/n of the buffer for each.
        let (n, bytes) = (16usize, 64u64 << 20);
        let mut sc = Scenario::new(workload(&[bytes]), n, 50e9, Strategy::parse("fsdp").unwrap());
        sc.topology = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        sc.latency = 0.0;
        sc.iterations = 3;
        let r = super::super::simulate(&sc).unwrap();
        let fabric = &nccl_fabrics(&sc, &cfg("fsdp"), n, n).unwrap()[AG];
        let time = |c: Collective| nccl::choose(fabric, c, bytes as f64, &NcclOptions::default()).unwrap().seconds;
        let bus = (n as f64 - 1.0) / n as f64 * bytes as f64;
        assert!((r.sent_bytes_per_worker - 3.0 * bus).abs() < 1e-6, "{}", r.sent_bytes_per_worker);
        let want = 2.0 * time(Collective::AllGather) + time(Collective::ReduceScatter);
        assert!((r.comm_time_s - want).abs() < 3e-9, "{} vs {want}", r.comm_time_s);
        assert!(r.link_utilization.is_empty());
    }

    #[test]
    fn compute_slowdown_zero_turns_interference_off() {
        let c = cfg("fsdp:compute_slowdown=0");
        assert_eq!(c.compute_slowdown, Some(0.0));
        let rail = crate::topology::TopologySpec::parse("rail:node=dgx-h100").unwrap();
        let slowdown = |s: &str| Strategy::parse(s).unwrap().compute_slowdown_on(&rail);
        assert_eq!(slowdown("fsdp:compute_slowdown=0"), 0.0);
        assert_eq!(slowdown("hsdp"), nccl::DEFAULT_COMPUTE_SLOWDOWN);
        for bad in ["-0.1", "11", "x"] {
            let e = Strategy::parse(&format!("zero2:compute_slowdown={bad}")).unwrap_err();
            assert_eq!(e.field(), "strategy.compute_slowdown", "{bad}");
        }
        // The same kind for nccl and ddp.
        for s in ["nccl", "ddp"] {
            assert!(Strategy::parse(&format!("{s}:compute_slowdown=0")).is_ok());
            assert!(Strategy::parse(&format!("{s}:compute_slowdown=11")).is_err());
        }
    }
}
