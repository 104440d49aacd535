//! Sharded data parallelism compiled into stream programs (see `program.rs`).
//!
//! Rules, each from the system it models (docs/simulator.md gives the sources):
//!
//! - **zero1** (DeepSpeed ZeRO stage 1): the backward pass runs without communication;
//!   then the gradients are reduce-scattered in buckets of `bucket` bytes, each rank
//!   steps its optimizer shard, and the updated parameters are all-gathered in buckets
//!   before the next forward pass. Bytes per rank: Psi (gradients) + Psi (parameters),
//!   the same as an all-reduce (ZeRO paper, section 7).
//! - **zero2** (stage 2): the same, but each bucket is reduce-scattered as soon as the
//!   backward pass has filled it (DeepSpeed's `overlap_comm`, `reduce_bucket_size`).
//! - **fsdp** (ZeRO-3, PyTorch FSDP FULL_SHARD): per unit, an all-gather of its
//!   parameters before its forward (issued `prefetch` units ahead on the all-gather
//!   stream), again before its backward (`backward_prefetch` ahead; not with
//!   `reshard_after_forward=false`), and a reduce-scatter of its gradients after its
//!   backward on the reduce-scatter stream. Bytes per rank: 3 Psi (ZeRO paper: 1.5x DDP).
//! - **hsdp** (FSDP HYBRID_SHARD): fsdp inside each shard group of `shard_group` ranks,
//!   and after each unit's reduce-scatter an all-reduce of its 1/G gradient shard among
//!   the ranks holding the same shard in every group, on the reduce-scatter stream.
//!
//! Parameters travel at `param_dtype`, gradients at `reduce_dtype` (default: as the
//! workload lists them), gradients divided by `compression`.

use super::program::{Instr, Program, Runner};
use super::step::{StepCollective, StepSettings};
use super::{build_core, build_report, estimate, variability, Scenario};
use crate::collectives::{
    split_layout, AcrossGroups, AllGather, HalvingDoubling, InGroups, LevelPhase, Levels, ReduceScatter, Ring,
    StepSchedule,
};
use crate::error::{Error, Result};
use crate::metrics::Report;
use crate::strategy::{ShardAlgorithm, ShardedConfig, Stage, Strategy};
use crate::topology::{Shape, Topology};
use crate::units::seconds_to_nanos;
use crate::workload::Workload;

/// Simulates a sharded strategy (see the module documentation).
pub(super) fn simulate(sc: &Scenario, cfg: &ShardedConfig) -> Result<Report> {
    let n = sc.workers;
    let latency = seconds_to_nanos("latency", sc.latency)?;
    let topo = sc.topology.build(n, 0, sc.bandwidth, latency)?;
    let group = shard_group(cfg, &topo, n)?;
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
    let rank_fold = digit_fold.map(|f| {
        core.link_fold = Some(f.links);
        f.ranks
    });
    let ranks = rank_fold.as_ref().map_or(if folded { 1 } else { n }, |f| f.reps.len());
    let settings = StepSettings {
        wire_factor: 1.0,
        reduce_ns_per_byte: sc.strategy.reduce_bytes_per_s.map_or(0.0, |r| 1e9 / r),
        pipeline_bytes: sc.strategy.pipeline_chunk,
        max_pipeline: 256,
    };
    let relabel = rank_fold.clone();
    let program = program(&sc.workload, cfg, WireFactors::of(&sc.strategy, &sc.workload), group, n);
    // Up front: every collective of the program, once per iteration, at the simulated ranks.
    let simulated = estimate::simulated_ranks(ranks, rank_fold.as_ref().map(|f| &f.reps[..]));
    let per_op: Vec<estimate::PerOp> =
        schedules.iter().map(|s| estimate::PerOp::new(s.as_ref(), n, &simulated)).collect();
    let per_iteration = program.collectives.iter().fold(0u64, |sum, c| {
        sum.saturating_add(per_op[c.schedule].of(c.bytes as f64, settings.pipeline_bytes, settings.max_pipeline))
    });
    let flows = per_iteration.saturating_mul(u64::from(sc.iterations));
    drop(per_op);
    estimate::check(sc, estimate::Work { flows, lane_messages: 0, weight: 1 }, star)?;
    let exec = StepCollective::with_schedules(schedules, settings, n, folded, rank_fold);
    let sampler = variability::Sampler::new(sc.variability.clone(), n, sc.seed);
    let mut measured = Runner::new(sc, program, ranks, 0, exec, sampler).run(&mut core)?;
    if let Some(fold) = relabel {
        fold.relabel(&mut measured.compute_spans);
    }
    Ok(build_report(sc, &mut core, measured))
}

/// All-gathers of parameters run on this stream, reduce-scatters (and HSDP's all-reduces) on the next.
const GATHER: usize = 0;
const REDUCE: usize = 1;

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
    /// From the strategy's dtypes and compression and the workload's listed element size.
    pub fn of(strategy: &Strategy, workload: &Workload) -> WireFactors {
        let listed = f64::from(workload.dtype_bytes);
        let params = strategy.param_dtype.map_or(1.0, |d| f64::from(d.bytes()) / listed);
        let grads = strategy.reduce_dtype.map_or(1.0, |d| f64::from(d.bytes()) / listed) / strategy.compression;
        WireFactors { params, grads }
    }
}

/// Units of consecutive layers: `unit` layers each, or (size-based wrap) layers added
/// until the unit holds at least `min_unit` parameter bytes. Returns layer ranges.
pub(super) fn units(workload: &Workload, cfg: &ShardedConfig) -> Vec<std::ops::Range<usize>> {
    let layers = workload.layers.len();
    let mut bytes = vec![0u64; layers];
    for t in &workload.tensors {
        bytes[t.layer] += t.bytes;
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut held = 0;
    for (l, b) in bytes.iter().enumerate() {
        held += b;
        let full = match cfg.min_unit_bytes {
            Some(min) => held >= min,
            None => l + 1 - start >= cfg.unit_layers,
        };
        if full || l + 1 == layers {
            out.push(start..l + 1);
            start = l + 1;
            held = 0;
        }
    }
    out
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
        Stage::Fsdp | Stage::Hsdp => fsdp_program(workload, cfg, wire_factors, group, ranks),
    }
}

fn zero_program(workload: &Workload, cfg: &ShardedConfig, f: WireFactors) -> Program {
    let mut p = Program::default();
    let bytes = layer_bytes(workload);
    let layers = workload.layers.len();
    p.instrs.extend((0..layers).map(|layer| Instr::Compute { layer, backward: false }));
    // Gradient buckets in the order the backward pass fills them.
    let mut buckets = Vec::new();
    let mut filling = 0u64;
    let mut reduces = Vec::new();
    for layer in (0..layers).rev() {
        p.instrs.push(Instr::Compute { layer, backward: true });
        filling += bytes[layer];
        if filling >= cfg.bucket_bytes {
            buckets.push(filling);
            if cfg.stage == Stage::Zero2 {
                reduces.push(p.issue(RS, wire(filling, f.grads), REDUCE));
            }
            filling = 0;
        }
    }
    if filling > 0 {
        buckets.push(filling);
        if cfg.stage == Stage::Zero2 {
            reduces.push(p.issue(RS, wire(filling, f.grads), REDUCE));
        }
    }
    if cfg.stage == Stage::Zero1 {
        for &b in &buckets {
            reduces.push(p.issue(RS, wire(b, f.grads), REDUCE));
        }
    }
    p.instrs.extend(reduces.iter().map(|&c| Instr::Wait(c)));
    // The optimizer steps on its shard; the updated parameters are all-gathered in
    // buckets (DeepSpeed's allgather_bucket_size) before the next forward pass.
    let total: u64 = bytes.iter().sum();
    let mut gathers = Vec::new();
    let mut left = total;
    while left > 0 {
        let b = left.min(cfg.bucket_bytes);
        gathers.push(p.issue(AG, wire(b, f.params), GATHER));
        left -= b;
    }
    p.instrs.extend(gathers.iter().map(|&c| Instr::Wait(c)));
    p.streams = 2;
    p
}

fn fsdp_program(workload: &Workload, cfg: &ShardedConfig, f: WireFactors, group: usize, ranks: usize) -> Program {
    let mut p = Program { streams: 2, ..Program::default() };
    let bytes = layer_bytes(workload);
    let units = units(workload, cfg);
    let unit_bytes: Vec<u64> = units.iter().map(|r| bytes[r.clone()].iter().sum()).collect();
    let count = units.len();
    // Forward: all-gather unit u (and up to `prefetch` units ahead) before computing it.
    let mut gathered: Vec<Option<usize>> = vec![None; count];
    let gather = |p: &mut Program, gathered: &mut Vec<Option<usize>>, u: usize| {
        if gathered[u].is_none() && unit_bytes[u] > 0 {
            gathered[u] = Some(p.issue(AG, wire(unit_bytes[u], f.params), GATHER));
        }
    };
    for u in 0..count {
        for ahead in u..(u + 1 + cfg.forward_prefetch).min(count) {
            gather(&mut p, &mut gathered, ahead);
        }
        if let Some(c) = gathered[u] {
            p.instrs.push(Instr::Wait(c));
        }
        p.instrs.extend(units[u].clone().map(|layer| Instr::Compute { layer, backward: false }));
    }
    // Backward: all-gather again (FULL_SHARD), compute, reduce-scatter the gradients.
    let mut regathered: Vec<Option<usize>> = vec![None; count];
    let mut reduces = Vec::new();
    for u in (0..count).rev() {
        if cfg.reshard_after_forward {
            for ahead in (u.saturating_sub(cfg.backward_prefetch)..=u).rev() {
                gather(&mut p, &mut regathered, ahead);
            }
            if let Some(c) = regathered[u] {
                p.instrs.push(Instr::Wait(c));
            }
        }
        p.instrs.extend(units[u].clone().rev().map(|layer| Instr::Compute { layer, backward: true }));
        if unit_bytes[u] > 0 {
            reduces.push(p.issue(RS, wire(unit_bytes[u], f.grads), REDUCE));
            if cfg.stage == Stage::Hsdp && group < ranks {
                // The 1/G shard of this unit's gradients, all-reduced across the replicas.
                let shard = (unit_bytes[u] as f64 / group as f64 * f.grads).round() as u64;
                reduces.push(p.issue(AR_ACROSS, shard, REDUCE));
            }
        }
    }
    p.instrs.extend(reduces.iter().map(|&c| Instr::Wait(c)));
    p
}

/// Ranks per shard group of `n` ranks on `topo`: all of them, but for `hsdp` its
/// `shard_group` (default: the GPUs of a node, else up to 8), which must divide `n`.
pub(super) fn shard_group(cfg: &ShardedConfig, topo: &Topology, n: usize) -> Result<usize> {
    match cfg.stage {
        Stage::Hsdp => {
            let g = cfg.shard_group.or(topo.gpus_per_node()).unwrap_or(8.min(n));
            check_group(g, n)?;
            Ok(g)
        }
        _ => Ok(n),
    }
}

/// Checks that `group` ranks per shard group divide `workers`.
pub(super) fn check_group(group: usize, workers: usize) -> Result<()> {
    if group == 0 || !workers.is_multiple_of(group) {
        let divisors: Vec<String> =
            (1..=workers).filter(|&d| workers.is_multiple_of(d)).map(|d| d.to_string()).collect();
        let shown =
            if divisors.len() > 12 { format!("{} ...", divisors[..12].join(", ")) } else { divisors.join(", ") };
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
        assert_eq!(units(&w, &cfg("fsdp:min_unit=300B")), vec![0..3, 3..5]);
        assert_eq!(units(&w, &cfg("fsdp:unit=2")), vec![0..2, 2..4, 4..5]);
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

    #[test]
    fn shard_groups_must_divide_the_workers() {
        assert!(check_group(8, 64).is_ok());
        let e = check_group(3, 16).unwrap_err();
        assert_eq!(e.field(), "strategy.shard_group");
        assert!(e.to_string().contains("1, 2, 4, 8, 16"));
    }
}
