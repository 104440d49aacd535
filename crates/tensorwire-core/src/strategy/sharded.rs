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

/// How the collectives of a sharded strategy are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comm {
    /// NCCL's model (`crate::nccl::choose`), in closed form per collective over its group's
    /// fabric, no flows: what FSDP and DeepSpeed run on GPU clusters.
    Nccl,
    /// Every message a flow of the network model (the seeds' behaviour).
    Flows,
}

/// DeepSpeed ZeRO's default `reduce_bucket_size` and `allgather_bucket_size`, in elements
/// (`deepspeed/runtime/zero/config.py`, deepspeedai/DeepSpeed @1b88ac36; docs/design/nccl-research.md §5).
pub const ZERO_BUCKET_ELEMENTS: f64 = 5e8;

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
    /// ZeRO-1/2: gradient elements per reduce bucket (DeepSpeed `reduce_bucket_size`).
    pub reduce_bucket_elements: u64,
    /// ZeRO-1/2: parameter elements per all-gather bucket (DeepSpeed `allgather_bucket_size`).
    pub allgather_bucket_elements: u64,
    /// ZeRO-1/2: `bucket=SIZE` in listed bytes, overriding both bucket sizes.
    pub bucket_override: Option<u64>,
    /// ZeRO-1/2: DeepSpeed's `overlap_comm`: gradient buckets reduced on a stream of their
    /// own while the backward pass goes on. Off (DeepSpeed's default below stage 3): zero1
    /// reduces after the backward pass, zero2 reduces each bucket as it fills while the
    /// backward pass waits for it.
    pub overlap_comm: bool,
    /// How the collectives are timed (`None`: by fabric, see [`Comm`]).
    pub comm: Option<Comm>,
    /// fsdp/hsdp: NCCL communicators for all-gathers and reduce-scatters: 1 (FSDP2's
    /// default: one shard process group, so they serialise with each other) or 2 (each on
    /// its own, overlapping each other).
    pub communicators: usize,
    /// Fraction by which compute slows while a collective of its rank is in flight
    /// (`None`: `nccl::DEFAULT_COMPUTE_SLOWDOWN` with comm=nccl, 0 with flows).
    pub compute_slowdown: Option<f64>,
    /// NCCL's transport (`transport=tcp`: sockets; else RDMA).
    pub nccl_transport: crate::nccl::Transport,
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
        default: "",
        help: "zero1/zero2: both buckets in bytes, overriding the element counts",
        aliases: &[],
    },
    OptionInfo {
        name: "reduce_bucket",
        kind: OptionKind::Real,
        default: "5e8",
        help: "zero1/zero2: gradient elements per bucket (DeepSpeed reduce_bucket_size)",
        aliases: &[],
    },
    OptionInfo {
        name: "allgather_bucket",
        kind: OptionKind::Real,
        default: "5e8",
        help: "zero1/zero2: parameter elements per all-gather (DeepSpeed allgather_bucket_size)",
        aliases: &[],
    },
    OptionInfo {
        name: "overlap_comm",
        kind: OptionKind::Flag,
        default: "false",
        help: "zero1/zero2: reduce buckets on a stream of their own during backward (DeepSpeed overlap_comm; false: zero1 after backward, zero2 blocking)",
        aliases: &[],
    },
    OptionInfo {
        name: "comm",
        kind: OptionKind::Choice(&["nccl", "flows"]),
        default: "",
        help: "timing: NCCL's model, no flows (nccl; default on rail and nodes) or network flows (flows; default elsewhere)",
        aliases: &[],
    },
    OptionInfo {
        name: "communicators",
        kind: OptionKind::Count,
        default: "1",
        help: "fsdp/hsdp: 1: all-gather and reduce-scatter serialised on one communicator (FSDP2); 2: overlapping",
        aliases: &[],
    },
    OptionInfo {
        name: "compute_slowdown",
        kind: OptionKind::NonNegativeReal,
        default: "",
        help: "compute this fraction slower while a collective runs (default 0.189 with nccl, arXiv 2507.03114; none with flows)",
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

impl ShardedConfig {
    /// ZeRO-1/2: listed bytes per (reduce bucket, all-gather bucket) for elements of
    /// `dtype_bytes` bytes (the workload's listed element size): DeepSpeed counts buckets
    /// in elements; `bucket=SIZE` gives both in bytes.
    pub fn bucket_bytes(&self, dtype_bytes: u32) -> (u64, u64) {
        let of = |elements: u64| elements.saturating_mul(u64::from(dtype_bytes.max(1)));
        match self.bucket_override {
            Some(b) => (b, b),
            None => (of(self.reduce_bucket_elements), of(self.allgather_bucket_elements)),
        }
    }
}

/// Options of [`SHARDED_OPTIONS`] that only fsdp and hsdp take.
const FSDP_ONLY: [&str; 6] =
    ["prefetch", "backward_prefetch", "reshard_after_forward", "unit", "min_unit", "communicators"];

/// Options of [`SHARDED_OPTIONS`] that only zero1 and zero2 take.
const ZERO_ONLY: [&str; 4] = ["bucket", "reduce_bucket", "allgather_bucket", "overlap_comm"];

/// Whether `option` (one of [`SHARDED_OPTIONS`]) applies to `stage`; [`config`] refuses the
/// others, and the strategy listing leaves them out.
pub fn applies(stage: Stage, option: &str) -> bool {
    let fsdp_like = matches!(stage, Stage::Fsdp | Stage::Hsdp);
    match option {
        o if FSDP_ONLY.contains(&o) => fsdp_like,
        o if ZERO_ONLY.contains(&o) => !fsdp_like,
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
    for name in ZERO_ONLY {
        if !applies(stage, name) && spec.get(name).is_some() {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("applies to zero1 and zero2, not {}; fsdp and hsdp move one unit at a time", spec.name),
            ));
        }
    }
    if !applies(stage, "shard_group") && spec.get("shard_group").is_some() {
        return Err(Error::invalid("strategy.shard_group", format!("applies to hsdp, not {}", spec.name)));
    }
    let bucket = spec.bytes("bucket");
    if bucket.is_some_and(|b| b < 1.0) {
        return Err(Error::invalid("strategy.bucket", "must be at least 1 byte"));
    }
    let elements = |name: &str| -> Result<u64> {
        let v = spec.real(name).unwrap_or(ZERO_BUCKET_ELEMENTS);
        if !(1.0..=1e15).contains(&v) {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("{v} elements; allowed: 1 to 1e15 elements (DeepSpeed's default 5e8)"),
            ));
        }
        Ok(v.round() as u64)
    };
    let communicators = spec.count("communicators").unwrap_or(1) as usize;
    if communicators > 2 {
        return Err(Error::invalid(
            "strategy.communicators",
            format!("{communicators}; allowed: 1 (all-gather and reduce-scatter serialised on one communicator, FSDP2's default) or 2 (each its own)"),
        ));
    }
    let compute_slowdown = super::nccl::compute_slowdown(spec)?;
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
        reduce_bucket_elements: elements("reduce_bucket")?,
        allgather_bucket_elements: elements("allgather_bucket")?,
        bucket_override: bucket.map(|b| b.round() as u64),
        overlap_comm: spec.flag("overlap_comm").unwrap_or(false),
        comm: match spec.choice("comm") {
            Some("nccl") => Some(Comm::Nccl),
            Some("flows") => Some(Comm::Flows),
            _ => None,
        },
        communicators,
        compute_slowdown,
        nccl_transport: super::nccl::transport(spec),
        shard_group: spec.count("shard_group").map(|g| g as usize),
    })
}
