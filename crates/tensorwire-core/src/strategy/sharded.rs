//! Sharded data parallelism: ZeRO stages 1, 2 and 3 (DeepSpeed), fully sharded data
//! parallelism (PyTorch FSDP2) and hybrid sharding (HSDP). Each rank holds a 1/N shard
//! of the optimizer state (all), gradients (zero2, zero3, fsdp) and parameters (zero3, fsdp);
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
    /// ZeRO-3 (DeepSpeed stage 3): parameters too; each parameter all-gathered as its
    /// module runs, upcoming ones prefetched by elements (`prefetch_bucket`), gradients
    /// reduce-scattered in buckets of `reduce_bucket` elements.
    Zero3,
    /// FSDP (PyTorch FSDP2): parameters too; all-gathered per unit before its forward and backward.
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

/// DeepSpeed ZeRO stage 3's defaults, in elements (`deepspeed/runtime/zero/config.py`,
/// deepspeedai/DeepSpeed @1b88ac36; <https://www.deepspeed.ai/docs/config-json/>;
/// docs/design/nccl-research.md §5): `stage3_prefetch_bucket_size`.
pub const ZERO3_PREFETCH_BUCKET_ELEMENTS: f64 = 5e7;
/// `stage3_param_persistence_threshold`: parameters of at most this many elements are not
/// partitioned (`mark_persistent_parameters`: `ds_numel <= threshold`).
pub const ZERO3_PERSISTENCE_ELEMENTS: f64 = 1e5;
/// `stage3_max_live_parameters`: prefetching stops where the gathered parameters would exceed it.
pub const ZERO3_MAX_LIVE_ELEMENTS: f64 = 1e9;
/// `stage3_max_reuse_distance`: a parameter used again within this many elements of
/// fetched parameters is kept, not released and gathered again.
pub const ZERO3_MAX_REUSE_ELEMENTS: f64 = 1e9;

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
    /// ZeRO-1/2/3: gradient elements per reduce bucket (DeepSpeed `reduce_bucket_size`).
    pub reduce_bucket_elements: u64,
    /// ZeRO-1/2: parameter elements per all-gather bucket (DeepSpeed `allgather_bucket_size`).
    pub allgather_bucket_elements: u64,
    /// ZeRO-1/2: `bucket=SIZE` in listed bytes, overriding both bucket sizes.
    pub bucket_override: Option<u64>,
    /// ZeRO-1/2/3: DeepSpeed's `overlap_comm`: gradient buckets reduced on a stream of their
    /// own while the backward pass goes on. Off (DeepSpeed's default below stage 3): zero1
    /// reduces after the backward pass, zero2 and zero3 reduce each bucket as it fills
    /// while the backward pass waits for it. On by default for zero3 (DeepSpeed resolves
    /// `overlap_comm: None` to `stage == 3`).
    pub overlap_comm: bool,
    /// ZeRO-3: parameter elements prefetched per module fetch (`stage3_prefetch_bucket_size`;
    /// 0: no prefetch).
    pub prefetch_bucket_elements: u64,
    /// ZeRO-3: parameters of at most this many elements stay whole on every rank
    /// (`stage3_param_persistence_threshold`).
    pub persistence_elements: u64,
    /// ZeRO-3: most parameter elements gathered at once (`stage3_max_live_parameters`).
    pub max_live_elements: u64,
    /// ZeRO-3: reuse distance in elements under which a parameter is kept (`stage3_max_reuse_distance`).
    pub max_reuse_elements: u64,
    /// How the collectives are timed (`None`: by fabric, see [`Comm`]).
    pub comm: Option<Comm>,
    /// fsdp/hsdp: NCCL communicators for all-gathers and reduce-scatters: 1 (FSDP2's
    /// default: one shard process group, so they serialise with each other) or 2 (each on
    /// its own, overlapping each other).
    pub communicators: usize,
    /// Fraction by which compute slows while a collective of its rank is in flight
    /// (`None`: `nccl::DEFAULT_COMPUTE_SLOWDOWN` with comm=nccl, 0 with flows).
    pub compute_slowdown: Option<f64>,
    /// NCCL's transport as given (`transport=tcp`: sockets; `rdma`: verbs; `None`: the
    /// fabric's, `TopologySpec::nccl_transport`).
    pub nccl_transport: Option<crate::nccl::Transport>,
    /// HSDP: ranks per shard group (`None`: the topology's machine size, else 8, at most the workers).
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
        help: "fsdp/hsdp: consecutive layers per FSDP unit (the LLM zoo: blocks, one per layer; the layers around them are the root unit)",
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
        help: "zero1/zero2/zero3: gradient elements per bucket (DeepSpeed reduce_bucket_size)",
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
        default: "",
        help: "zero1/zero2/zero3: reduce buckets on a stream of their own during backward (DeepSpeed overlap_comm: default false for zero1/zero2, true for zero3; false: zero1 after backward, zero2/zero3 blocking)",
        aliases: &[],
    },
    OptionInfo {
        name: "prefetch_bucket",
        kind: OptionKind::NonNegativeReal,
        default: "5e7",
        help: "zero3: parameter elements all-gathered ahead at each module fetch (DeepSpeed stage3_prefetch_bucket_size; 0: no prefetch)",
        aliases: &[],
    },
    OptionInfo {
        name: "param_persistence",
        kind: OptionKind::NonNegativeReal,
        default: "1e5",
        help: "zero3: parameters of at most this many elements are not partitioned, gathered once after the step (DeepSpeed stage3_param_persistence_threshold)",
        aliases: &[],
    },
    OptionInfo {
        name: "max_live",
        kind: OptionKind::NonNegativeReal,
        default: "1e9",
        help: "zero3: prefetch stops where gathered parameter elements would exceed this (DeepSpeed stage3_max_live_parameters)",
        aliases: &[],
    },
    OptionInfo {
        name: "max_reuse",
        kind: OptionKind::NonNegativeReal,
        default: "1e9",
        help: "zero3: a parameter used again within this many fetched elements is kept, not gathered again (DeepSpeed stage3_max_reuse_distance)",
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
        kind: OptionKind::CountAtMost(2),
        default: "1",
        help: "fsdp/hsdp/zero3: 1: all-gather and reduce-scatter serialised on one communicator (one process group, FSDP2 and DeepSpeed); 2: overlapping",
        aliases: &[],
    },
    OptionInfo {
        name: "compute_slowdown",
        kind: OptionKind::NonNegativeRealAtMost(super::nccl::MAX_COMPUTE_SLOWDOWN),
        default: "",
        help: "compute this fraction slower while a collective runs (default 0.189, arXiv 2507.03114, with nccl and on GPU fabrics (rail, nodes); none with flows on the seeds' fabrics)",
        aliases: &[],
    },
    OptionInfo {
        name: "shard_group",
        kind: OptionKind::Count,
        default: "",
        help: "hsdp: ranks per shard group, replicated across groups (default: GPUs per machine, else 8; all the workers where fewer)",
        aliases: &[],
    },
];

impl ShardedConfig {
    /// How the collectives are timed on `topology`: `comm=`, else NCCL's model on GPU
    /// fabrics (`rail` nodes, `nodes` machines) and flows elsewhere (the seeds' fabrics).
    pub fn comm_on(&self, topology: &crate::topology::TopologySpec) -> Comm {
        self.comm.unwrap_or(if topology.gpu_machines() { Comm::Nccl } else { Comm::Flows })
    }

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
const FSDP_ONLY: [&str; 5] = ["prefetch", "backward_prefetch", "reshard_after_forward", "unit", "min_unit"];

/// Options of [`SHARDED_OPTIONS`] that only zero1 and zero2 take.
const ZERO12_ONLY: [&str; 2] = ["bucket", "allgather_bucket"];

/// Options of [`SHARDED_OPTIONS`] that only zero3 takes.
const ZERO3_ONLY: [&str; 4] = ["prefetch_bucket", "param_persistence", "max_live", "max_reuse"];

/// Whether `option` (one of [`SHARDED_OPTIONS`]) applies to `stage`; [`config`] refuses the
/// others, and the strategy listing leaves them out.
pub fn applies(stage: Stage, option: &str) -> bool {
    let fsdp_like = matches!(stage, Stage::Fsdp | Stage::Hsdp);
    match option {
        o if FSDP_ONLY.contains(&o) => fsdp_like,
        o if ZERO12_ONLY.contains(&o) => matches!(stage, Stage::Zero1 | Stage::Zero2),
        o if ZERO3_ONLY.contains(&o) => stage == Stage::Zero3,
        "reduce_bucket" | "overlap_comm" => !fsdp_like,
        "communicators" => stage != Stage::Zero1 && stage != Stage::Zero2,
        "shard_group" => stage == Stage::Hsdp,
        _ => true,
    }
}

/// Reads the sharded options of `spec`; refuses options that do not apply to the stage.
pub fn config(stage: Stage, spec: &Spec) -> Result<ShardedConfig> {
    for name in FSDP_ONLY {
        if !applies(stage, name) && spec.get(name).is_some() {
            let why = if stage == Stage::Zero3 {
                match name {
                    "prefetch" | "backward_prefetch" => "; zero3 prefetches by elements as DeepSpeed does: give prefetch_bucket=ELEMENTS (stage3_prefetch_bucket_size)",
                    "reshard_after_forward" => "; zero3 keeps a parameter for its backward only within max_reuse elements (stage3_max_reuse_distance)",
                    _ => "; zero3 fetches each parameter as its module runs, as DeepSpeed does",
                }
            } else {
                ""
            };
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("applies to fsdp and hsdp, not {}{why}", spec.name),
            ));
        }
    }
    for name in ZERO12_ONLY {
        if !applies(stage, name) && spec.get(name).is_some() {
            let why = if stage == Stage::Zero3 {
                "; zero3 gathers by prefetch_bucket elements (DeepSpeed stage 3 does not use allgather_bucket_size)"
            } else {
                "; fsdp and hsdp move one unit at a time"
            };
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("applies to zero1 and zero2, not {}{why}", spec.name),
            ));
        }
    }
    for name in ["reduce_bucket", "overlap_comm"] {
        if !applies(stage, name) && spec.get(name).is_some() {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("applies to zero1, zero2 and zero3, not {}; fsdp and hsdp move one unit at a time", spec.name),
            ));
        }
    }
    for name in ZERO3_ONLY {
        if !applies(stage, name) && spec.get(name).is_some() {
            return Err(Error::invalid(format!("strategy.{name}"), format!("applies to zero3, not {}", spec.name)));
        }
    }
    if !applies(stage, "communicators") && spec.get("communicators").is_some() {
        return Err(Error::invalid(
            "strategy.communicators",
            format!(
                "applies to fsdp, hsdp and zero3, not {}; zero1 and zero2 run every collective on one communicator",
                spec.name
            ),
        ));
    }
    if !applies(stage, "shard_group") && spec.get("shard_group").is_some() {
        return Err(Error::invalid("strategy.shard_group", format!("applies to hsdp, not {}", spec.name)));
    }
    let bucket = spec.bytes("bucket");
    if bucket.is_some_and(|b| b < 1.0) {
        return Err(Error::invalid("strategy.bucket", "must be at least 1 byte"));
    }
    // Element counts: `min` to 1e15 elements, DeepSpeed's `default` when not given.
    let elements = |name: &str, default: f64, min: f64| -> Result<u64> {
        let v = spec.real(name).unwrap_or(default);
        if !(min..=1e15).contains(&v) {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!(
                    "{} elements; allowed: {min} to 1e15 elements (DeepSpeed's default {default:e})",
                    crate::units::format_number(v)
                ),
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
        reduce_bucket_elements: elements("reduce_bucket", ZERO_BUCKET_ELEMENTS, 1.0)?,
        allgather_bucket_elements: elements("allgather_bucket", ZERO_BUCKET_ELEMENTS, 1.0)?,
        bucket_override: bucket.map(|b| b.round() as u64),
        overlap_comm: spec.flag("overlap_comm").unwrap_or(stage == Stage::Zero3),
        prefetch_bucket_elements: elements("prefetch_bucket", ZERO3_PREFETCH_BUCKET_ELEMENTS, 0.0)?,
        persistence_elements: elements("param_persistence", ZERO3_PERSISTENCE_ELEMENTS, 0.0)?,
        max_live_elements: elements("max_live", ZERO3_MAX_LIVE_ELEMENTS, 0.0)?,
        max_reuse_elements: elements("max_reuse", ZERO3_MAX_REUSE_ELEMENTS, 0.0)?,
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
