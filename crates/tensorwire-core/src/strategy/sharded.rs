//! Sharded data parallelism: ZeRO stages 1 and 2 (DeepSpeed), fully sharded data
//! parallelism (PyTorch FSDP = ZeRO-3) and hybrid sharding (HSDP). Each rank holds a
//! 1/N shard of the optimizer state (all), gradients (zero2, fsdp) and parameters (fsdp);
//! what must move, and when, follows from that (docs/simulator.md, "Sharded data
//! parallelism", names the source of every rule).

use crate::error::{Error, Result};
use crate::spec::{OptionInfo, OptionKind, Spec};

/// Which system's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// ZeRO-1: optimizer state sharded; gradients reduce-scattered after the backward pass.
    Zero1,
    /// ZeRO-2: gradients too; reduce-scattered per bucket during the backward pass.
    Zero2,
    /// ZeRO-3 / FSDP: parameters too; all-gathered per unit before its forward and backward.
    Fsdp,
    /// FSDP inside a shard group, replicas across groups (all-reduce of the shards).
    Hsdp,
}

/// Algorithm of the reduce-scatters and all-gathers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardAlgorithm {
    /// `hierarchical` on topologies with machine levels (rail, nodes, leaf-spine), else
    /// `ring`: what NCCL's topology-aware rings amount to.
    Auto,
    /// Ring: N-1 steps of S/N.
    Ring,
    /// Recursive halving (reduce-scatter) and doubling (all-gather).
    HalvingDoubling,
    /// A ring inside each level of the topology (machine, rail group, spine), innermost
    /// first for reduce-scatters, outermost first for all-gathers.
    Hierarchical,
}

/// A parsed sharded strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardedConfig {
    /// Which rules.
    pub stage: Stage,
    /// Algorithm of the collectives.
    pub algorithm: ShardAlgorithm,
    /// FSDP: all-gathers issued ahead of the forward pass, in units (0: each just before its unit).
    pub forward_prefetch: usize,
    /// FSDP: all-gathers issued ahead of the backward pass, in units (1: PyTorch's BACKWARD_PRE).
    pub backward_prefetch: usize,
    /// FSDP: parameters freed after each unit's forward pass and all-gathered again for
    /// its backward pass (FULL_SHARD); `false` keeps them (SHARD_GRAD_OP).
    pub reshard_after_forward: bool,
    /// FSDP: consecutive layers wrapped into one unit (`None` with `min_unit`).
    pub unit_layers: usize,
    /// FSDP: wrap consecutive layers until a unit holds at least this many bytes of
    /// parameters (PyTorch's size-based auto-wrap policy); overrides `unit_layers`.
    pub min_unit_bytes: Option<u64>,
    /// ZeRO-1/2: gradient bytes per reduce-scatter bucket and parameter bytes per
    /// all-gather bucket (as listed in the workload).
    pub bucket_bytes: u64,
    /// HSDP: ranks per shard group (`None`: the topology's machine size, else 8).
    pub shard_group: Option<usize>,
}

/// Options of the sharded strategies.
pub static SHARDED_OPTIONS: &[OptionInfo] = &[
    OptionInfo {
        name: "algorithm",
        kind: OptionKind::Choice(&["auto", "ring", "halving-doubling", "hierarchical"]),
        default: "auto",
        help: "reduce-scatter / all-gather algorithm: ring, recursive halving and doubling, or a ring per level of the topology (machine, rail group, spine); auto: hierarchical where the topology has levels, else ring",
        aliases: &[],
    },
    OptionInfo {
        name: "prefetch",
        kind: OptionKind::Natural,
        default: "1",
        help: "fsdp/hsdp: units whose all-gather is issued ahead of the forward pass (0: each just before its unit)",
        aliases: &[],
    },
    OptionInfo {
        name: "backward_prefetch",
        kind: OptionKind::Natural,
        default: "1",
        help: "fsdp/hsdp: units whose all-gather is issued ahead of the backward pass (1: PyTorch's BACKWARD_PRE)",
        aliases: &[],
    },
    OptionInfo {
        name: "reshard_after_forward",
        kind: OptionKind::Flag,
        default: "true",
        help: "fsdp/hsdp: free parameters after each unit's forward and all-gather them again for its backward (FULL_SHARD); false keeps them (SHARD_GRAD_OP)",
        aliases: &[],
    },
    OptionInfo {
        name: "unit",
        kind: OptionKind::Count,
        default: "1",
        help: "fsdp/hsdp: consecutive layers per FSDP unit (one transformer block per layer in the LLM zoo)",
        aliases: &[],
    },
    OptionInfo {
        name: "min_unit",
        kind: OptionKind::Bytes,
        default: "",
        help: "fsdp/hsdp: wrap layers until a unit holds this many parameter bytes (size-based auto-wrap); overrides unit",
        aliases: &[],
    },
    OptionInfo {
        name: "bucket",
        kind: OptionKind::Bytes,
        default: "500MB",
        help: "zero1/zero2: bytes per reduce-scatter and all-gather bucket (DeepSpeed reduce_bucket_size / allgather_bucket_size)",
        aliases: &[],
    },
    OptionInfo {
        name: "shard_group",
        kind: OptionKind::Count,
        default: "",
        help: "hsdp: ranks per shard group, replicated across groups (default: GPUs per machine, else 8)",
        aliases: &[],
    },
];

/// Options of [`SHARDED_OPTIONS`] that only fsdp and hsdp take.
const FSDP_ONLY: [&str; 5] = ["prefetch", "backward_prefetch", "reshard_after_forward", "unit", "min_unit"];

/// Whether `option` (one of [`SHARDED_OPTIONS`]) applies to `stage`; [`config`] refuses the
/// others, and the strategy listing leaves them out.
pub fn applies(stage: Stage, option: &str) -> bool {
    let fsdp_like = matches!(stage, Stage::Fsdp | Stage::Hsdp);
    match option {
        o if FSDP_ONLY.contains(&o) => fsdp_like,
        "bucket" => !fsdp_like,
        "shard_group" => stage == Stage::Hsdp,
        _ => true,
    }
}

/// Reads the sharded options of `spec`; refuses options that do not apply to the stage.
pub fn config(stage: Stage, spec: &Spec) -> Result<ShardedConfig> {
    for name in FSDP_ONLY {
        if !applies(stage, name) && spec.get(name).is_some() {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("applies to fsdp and hsdp, not {}", spec.name),
            ));
        }
    }
    if !applies(stage, "bucket") && spec.get("bucket").is_some() {
        return Err(Error::invalid(
            "strategy.bucket",
            "applies to zero1 and zero2; fsdp and hsdp move one unit at a time",
        ));
    }
    if !applies(stage, "shard_group") && spec.get("shard_group").is_some() {
        return Err(Error::invalid("strategy.shard_group", format!("applies to hsdp, not {}", spec.name)));
    }
    let bucket = spec.bytes("bucket").unwrap_or(500e6);
    if bucket < 1.0 {
        return Err(Error::invalid("strategy.bucket", "must be at least 1 byte"));
    }
    Ok(ShardedConfig {
        stage,
        algorithm: match spec.choice("algorithm") {
            Some("halving-doubling") => ShardAlgorithm::HalvingDoubling,
            Some("hierarchical") => ShardAlgorithm::Hierarchical,
            Some("ring") => ShardAlgorithm::Ring,
            _ => ShardAlgorithm::Auto,
        },
        forward_prefetch: spec.count("prefetch").unwrap_or(1) as usize,
        backward_prefetch: spec.count("backward_prefetch").unwrap_or(1) as usize,
        reshard_after_forward: spec.flag("reshard_after_forward").unwrap_or(true),
        unit_layers: spec.count("unit").unwrap_or(1) as usize,
        min_unit_bytes: spec.bytes("min_unit").map(|b| b.round().max(1.0) as u64),
        bucket_bytes: bucket.round() as u64,
        shard_group: spec.count("shard_group").map(|g| g as usize),
    })
}
