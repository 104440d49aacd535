//! Option tables: each option defined once, with its help text.

use super::Transport;
use crate::spec::{self, Alias, OptionInfo, OptionKind, OptionValue, Spec};

/// The default of option `name` in `table`, parsed from its `default` string (the one
/// place a default is written: listings print it, the parser applies it). Panics if the
/// table has no such option or its default is empty or malformed: a programming error,
/// which `table_defaults_parse_and_are_read_by_the_parser` catches.
fn default_of(table: &[OptionInfo], name: &str) -> OptionValue {
    let o = table.iter().find(|o| o.name == name).expect("the option is in its table");
    spec::parse_value(o.name, o.kind, o.default).expect("the table's defaults parse")
}

/// The default of a number-valued option (bytes, bytes/s, s, count or real), as f64.
pub(super) fn default_number(table: &[OptionInfo], name: &str) -> f64 {
    match default_of(table, name) {
        OptionValue::Bytes(v) | OptionValue::Rate(v) | OptionValue::Duration(v) | OptionValue::Real(v) => v,
        OptionValue::Count(c) => c as f64,
        OptionValue::Flag(_) | OptionValue::Choice(_) => panic!("{name} is not a number-valued option"),
    }
}

/// The default of a flag option.
pub(super) fn default_flag(table: &[OptionInfo], name: &str) -> bool {
    match default_of(table, name) {
        OptionValue::Flag(b) => b,
        _ => panic!("{name} is not a flag"),
    }
}

pub(super) const CHUNK: OptionInfo = OptionInfo {
    name: "chunk",
    kind: OptionKind::Bytes,
    default: "1MiB",
    help: "pipeline piece size: each collective is cut into pieces that flow through the trees one step apart",
    aliases: &[],
};

/// `compute_slowdown=` of the flow-level all-reduce strategies: no single default (see
/// [`super::Strategy::compute_slowdown_on`]).
pub(super) const ALL_REDUCE_COMPUTE_SLOWDOWN: OptionInfo = OptionInfo {
    name: "compute_slowdown",
    kind: OptionKind::NonNegativeRealAtMost(super::nccl::MAX_COMPUTE_SLOWDOWN),
    default: "",
    help: "compute runs this much slower while a collective is in flight (a fraction in [0, 10]); default 0.189 (arXiv 2507.03114) on GPU fabrics (rail, nodes), where collectives are kernels on the GPUs that compute, as for nccl and ddp; 0 on the seeds' fabrics (star, ring, leaf-spine)",
    aliases: &[],
};

pub(super) const GPUS_PER_NODE: OptionInfo = OptionInfo {
    name: "gpus_per_node",
    kind: OptionKind::Count,
    default: "",
    help: "ranks per machine (default: the machines of --topology nodes, else 8)",
    aliases: &[],
};

pub(super) const TREES: OptionInfo = OptionInfo {
    name: "trees",
    kind: OptionKind::Count,
    default: "",
    help: "trees inside a machine (default one per GPU); tree elsewhere is one binomial tree and refuses it",
    aliases: &[],
};

pub(super) const PENALTY: OptionInfo = OptionInfo {
    name: "penalty",
    kind: OptionKind::RealAtMost(1.0),
    default: "0.7",
    help:
        "link-usage penalty inside a machine: weights of links used by a tree are multiplied by this for the next tree",
    aliases: &[],
};

/// Options of the parameter-server family.
pub static PS_OPTIONS: &[OptionInfo] = &[
    OptionInfo { name: "num_ps", kind: OptionKind::Count, default: "1", help: "parameter servers, on hosts of their own (or on the workers' with colocated=true)", aliases: &[] },
    OptionInfo {
        name: "colocated",
        kind: OptionKind::Flag,
        default: "false",
        help: "server k runs on worker k's host, as BytePS and TensorFlow run them (num_ps <= workers): a worker's traffic with its own server stays on the host (a host copy at the transport's copy rate), the rest shares the host's links",
        aliases: &[],
    },
    OptionInfo {
        name: "placement",
        kind: OptionKind::Choice(&["round-robin", "balanced", "sharded"]),
        default: "round-robin",
        help: "tensor to server: round-robin by tensor (TensorFlow), balanced by bytes (greedy), or sharded: every tensor split evenly over all servers",
        aliases: &[],
    },
    OptionInfo {
        name: "distribution",
        kind: OptionKind::Choice(&["round-robin", "block", "concurrent"]),
        default: "round-robin",
        help: "parameters sent back, one message at a time per server: one tensor to every worker in turn (round-robin), the whole model to one worker at a time (block); or every pull at once, sharing the server's link, as a TCP server with a connection per worker sends (concurrent)",
        aliases: &[],
    },
    OptionInfo { name: "barrier", kind: OptionKind::Flag, default: "true", help: "global barrier: nothing is sent back until every update of the iteration arrived", aliases: &[] },
    OptionInfo { name: "pipeline", kind: OptionKind::Bytes, default: "", help: "message pipelining: split tensors into messages of at most this size, forwarded when ready (Chang et al. 2020, seed 000 section 9.2); add credit=SIZE, or all pieces go at once and share the link", aliases: &[] },
    OptionInfo { name: "switch_memory", kind: OptionKind::Bytes, default: "", help: "in-network aggregation: switch memory for partial aggregates (default unlimited; a piece larger than it is aggregated alone; partition= cuts pieces to fit)", aliases: &[] },
];

/// Options every strategy takes: scheduling, fusion, compression, reduction cost, transport.
pub static HOST_OPTIONS: &[OptionInfo] = &[
    OptionInfo { name: "partition", kind: OptionKind::Bytes, default: "", help: "split each tensor into pieces of at most this size, synchronised separately", aliases: &[] },
    OptionInfo {
        name: "schedule",
        kind: OptionKind::Choice(&["fifo", "priority"]),
        default: "fifo",
        help: "release order: as ready, or lowest layer first with the next forward pass waiting per layer (ByteScheduler)",
        aliases: &[],
    },
    OptionInfo { name: "credit", kind: OptionKind::Bytes, default: "", help: "bytes in flight at most (default: one collective at a time for all-reduce)", aliases: &[] },
    OptionInfo {
        name: "inflight",
        kind: OptionKind::Count,
        default: "",
        help: "collectives in flight at most, with or without a credit (e.g. 2: Gloo runs two per process group at once); default 1 for all-reduce without a credit",
        aliases: &[],
    },
    OptionInfo { name: "fusion", kind: OptionKind::Bytes, default: "", help: "fusion buffer (Horovod): ready tensors are fused until this size...", aliases: &[] },
    OptionInfo { name: "cycle", kind: OptionKind::Duration, default: "5ms", help: "...or until the oldest has waited this long", aliases: &[] },
    OptionInfo { name: "compression", kind: OptionKind::RealAtLeast(1.0), default: "1", help: "gradient compression ratio: gradient bytes on the wire divided by this (Zhang et al. 2020, seed 001)", aliases: &[] },
    OptionInfo { name: "reduce", kind: OptionKind::Rate, default: "", help: "rate at which hosts add received gradients (Zhang et al. 2020's AddEst), e.g. 800Gbps; default free", aliases: &[] },
    OptionInfo {
        name: "transport",
        kind: OptionKind::Choice(&["tcp", "rdma", "rdma-optimized"]),
        default: "",
        help: "host transport preset: per-message overhead (Guo 2019, seed 004), one core's copy rate, goodput as a fraction of line rate (tcp 0.544: nccl-tests#83; rdma 0.96: nccl-tests#119); default: the GPU fabric's transport=, else the cluster's overhead and line rate",
        aliases: &[],
    },
    OptionInfo { name: "overhead", kind: OptionKind::Duration, default: "", help: "per-message host overhead, overriding the transport's", aliases: &[] },
    OptionInfo {
        name: "connections",
        kind: OptionKind::Choice(&["shared", "ordered-pairs"]),
        default: "shared",
        help: "messages between the same two hosts: each its own flow, sharing links max-min (shared), or one ordered connection per pair of hosts, each message after the one before (ordered-pairs: Gloo's TCP pairs)",
        // The old name, one letter from `execution=stream`; kept so that old specs run.
        aliases: &[Alias { name: "streams", values: &[("fair", "shared"), ("ordered", "ordered-pairs")] }],
    },
    OptionInfo {
        name: "segments",
        kind: OptionKind::Choice(&["serial", "pipelined"]),
        default: "serial",
        help: "all-reduce only: each message's host overhead in series with its transfer (serial), or hidden behind it as when an implementation keeps two segments in flight (pipelined, Gloo's ring: a step costs latency + max(overhead, transfer))",
        aliases: &[],
    },
    OptionInfo {
        name: "execution",
        kind: OptionKind::Choice(&["concurrent", "stream"]),
        default: "concurrent",
        help: "all-reduce only: released collectives run at once, sharing the network (concurrent), or one at a time in release order, as on one NCCL stream or a one-thread Gloo group (stream: everything ready is released at once unless credit or inflight bound it; a dispatch cost overlaps the collective before, and collectives start at least one dispatch apart)",
        aliases: &[],
    },
    OptionInfo {
        name: "dispatch",
        kind: OptionKind::Duration,
        default: "0s",
        help: "all-reduce only: a coordinator's cost to start each collective (e.g. a leader sending its decision to every follower); collectives start one dispatch apart",
        aliases: &[],
    },
    OptionInfo {
        name: "partial",
        kind: OptionKind::Choice(&["solo", "majority"]),
        default: "",
        help: "partial collective (Li et al. 2019, seed 002): a round starts when its initiator is ready (solo: the first rank; majority: a seeded random rank); all-reduce only",
        aliases: &[],
    },
    OptionInfo {
        name: "max_lag",
        kind: OptionKind::Natural,
        default: "",
        help: "with partial: a rank joins round k only once it has called for round k - max_lag (the runtime's max_lag, EagerSGD's staleness); 0 is a synchronous all-reduce; default unbounded, as Li et al. 2019",
        aliases: &[],
    },
    OptionInfo { name: "copy", kind: OptionKind::Rate, default: "", help: "host copy bandwidth per message, overriding the transport's", aliases: &[] },
    OptionInfo {
        name: "param_dtype",
        kind: OptionKind::Choice(crate::dtype::DTYPE_NAMES),
        default: "",
        help: "element type of parameters on the wire (all-gathers of sharded strategies); default: as the workload lists them",
        aliases: &[],
    },
    OptionInfo {
        name: "reduce_dtype",
        kind: OptionKind::Choice(crate::dtype::DTYPE_NAMES),
        default: "",
        help: "element type of gradients on the wire (all-reduces, reduce-scatters); default: param_dtype where set (as PyTorch's MixedPrecision reduces), else as the workload lists them",
        aliases: &[],
    },
];

/// Goodput of collectives over kernel TCP as a fraction of the line rate: NCCL's socket
/// transport peaked at 1.7 GB/s bus bandwidth on Azure VMs whose 25 Gb/s (3.125 GB/s) NICs
/// ntttcp measured at line rate one way and 21 Gb/s both ways, with 2 channels, 4 socket
/// threads and 2 sockets per thread (NVIDIA/nccl-tests#83,
/// <https://github.com/NVIDIA/nccl-tests/issues/83>): 1.7 / 3.125 = 0.544. NCCL's reply
/// there names the cause: a collective advances at the slowest of its synchronised sockets,
/// not at the sum a bulk benchmark reports. A measurement independent of the Horovod
/// RDMA-vs-TCP result it is checked against (docs/fidelity.md).
pub const TCP_GOODPUT_EFFICIENCY: f64 = 1.7e9 / (25e9 / 8.0);

/// Goodput of RDMA (InfiniBand, RoCE) as a fraction of the line rate: NCCL's maintainers
/// take 12 GB/s per 100 Gb/s NIC and 24 GB/s per 200 Gb/s NIC as the peak
/// (NVIDIA/nccl-tests#119, <https://github.com/NVIDIA/nccl-tests/issues/119>): 12 / 12.5 =
/// 0.96.
pub const RDMA_GOODPUT_EFFICIENCY: f64 = 12e9 / (100e9 / 8.0);

/// One core's copy rate on the host data path, bytes/s: 40 Gb/s, single-threaded memcpy
/// (Guo 2019, seed 004, slide 21); Cai et al., "Understanding Host Network Stack
/// Overheads" (SIGCOMM 2021), find the kernel TCP receiver's copy to user space the
/// bottleneck, one core carrying about 40 Gb/s of one flow (a core saturates a 40 Gb/s
/// link, not a 100 Gb/s one).
const ONE_CORE_COPY_BYTES_PER_S: f64 = 40e9 / 8.0;

/// The transport preset named `name` (`tcp`, `rdma`, `rdma-optimized`; see below), for a
/// strategy's `transport=` and a GPU fabric's (`TopologySpec::transport_option`).
pub(crate) fn preset(name: &str) -> Option<Transport> {
    match name {
        "tcp" => Some(Transport {
            overhead_s: 20e-6,
            copy_bytes_per_s: Some(ONE_CORE_COPY_BYTES_PER_S),
            efficiency: TCP_GOODPUT_EFFICIENCY,
        }),
        "rdma" => Some(Transport {
            overhead_s: 15e-6,
            copy_bytes_per_s: Some(ONE_CORE_COPY_BYTES_PER_S),
            efficiency: RDMA_GOODPUT_EFFICIENCY,
        }),
        "rdma-optimized" => {
            Some(Transport { overhead_s: 2e-6, copy_bytes_per_s: None, efficiency: RDMA_GOODPUT_EFFICIENCY })
        }
        _ => None,
    }
}

/// Transport presets. Per-message overheads are seed 004's illustrative values (calibrate
/// `overhead` and `copy` for a real cluster, as the testbed does); copy rate and goodput
/// efficiency are the measured figures above.
/// - `tcp`: 20 us per message in the kernel stack, data copied by one core
///   ([`ONE_CORE_COPY_BYTES_PER_S`]), and goodput [`TCP_GOODPUT_EFFICIENCY`] of the line
///   rate (collectives over sockets).
/// - `rdma`: vanilla verbs: memory registration and a rendezvous per message (15 us), the
///   copies on the data path (one core), goodput [`RDMA_GOODPUT_EFFICIENCY`].
/// - `rdma-optimized`: tensor buffers registered once, one-way writes (2 us), zero copy,
///   goodput [`RDMA_GOODPUT_EFFICIENCY`].
///
/// `overhead=` and `copy=` override the preset's; without a preset (the strategy's or the
/// fabric's, [`TransportChoice::resolve`]) they leave the links at line rate (efficiency 1).
pub(super) fn transport(spec: &Spec) -> TransportChoice {
    TransportChoice {
        preset: spec.choice("transport"),
        overhead_s: spec.duration("overhead"),
        copy_bytes_per_s: spec.rate("copy"),
    }
}

/// The host transport a strategy asks for: a preset by name (`transport=`) and overrides of
/// its per-message overhead (`overhead=`) and copy rate (`copy=`), each `None` where not
/// given.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TransportChoice {
    /// `transport=`: `tcp`, `rdma` or `rdma-optimized`.
    pub preset: Option<&'static str>,
    /// `overhead=`, seconds.
    pub overhead_s: Option<f64>,
    /// `copy=`, bytes/s.
    pub copy_bytes_per_s: Option<f64>,
}

impl TransportChoice {
    /// The transport of flow-level messages on a fabric whose own transport is `fabric`
    /// (a GPU fabric's `transport=`, if given): the strategy's preset, else the fabric's,
    /// with the strategy's overrides over it; `None` where neither names a preset and no
    /// override is given (the cluster's per-message overhead and copy rate apply, links at
    /// line rate).
    pub fn resolve(&self, fabric: Option<&str>) -> Option<Transport> {
        let preset = self.preset.or(fabric).and_then(preset);
        if preset.is_none() && self.overhead_s.is_none() && self.copy_bytes_per_s.is_none() {
            return None;
        }
        let base = preset.unwrap_or(Transport { overhead_s: 0.0, copy_bytes_per_s: None, efficiency: 1.0 });
        Some(Transport {
            overhead_s: self.overhead_s.unwrap_or(base.overhead_s),
            copy_bytes_per_s: self.copy_bytes_per_s.or(base.copy_bytes_per_s),
            efficiency: base.efficiency,
        })
    }
}

// --- NCCL strategies (`nccl`, `ddp`; settings in `nccl.rs`) ---

const NCCL_ALGO: OptionInfo = OptionInfo {
    name: "algo",
    kind: OptionKind::Choice(&["tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"]),
    default: "",
    help: "NCCL algorithms allowed, +-separated as NCCL_ALGO (e.g. ring+tree); default: NCCL 2.30.7's tuning model picks per collective and size",
    aliases: &[],
};

const NCCL_PROTO: OptionInfo = OptionInfo {
    name: "proto",
    kind: OptionKind::Choice(&["ll", "ll128", "simple"]),
    default: "",
    help: "NCCL protocols allowed, +-separated as NCCL_PROTO; default: NCCL's tuning model picks",
    aliases: &[],
};

const NCCL_CHANNELS: OptionInfo = OptionInfo {
    name: "channels",
    kind: OptionKind::Count,
    default: "",
    help: "channels per collective (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS); default: NCCL's choice",
    aliases: &[],
};

const NCCL_PXN: OptionInfo = OptionInfo {
    name: "pxn",
    kind: OptionKind::Flag,
    default: "false",
    help: "PXN, for all-to-all: cross-rail traffic first hops over NVLink to the GPU on the destination's rail",
    aliases: &[],
};

const NCCL_LAUNCH: OptionInfo = OptionInfo {
    name: "launch",
    kind: OptionKind::Duration,
    default: "0s",
    help: "host cost of enqueuing each NCCL collective, overlapping the one before; default 0: NCCL's tuning model (tuning.cc baseLat, 6.6-14 us per ring or tree call, NCCL 2.30.7) already charges each call its launch",
    aliases: &[],
};

const NCCL_COMPUTE_SLOWDOWN: OptionInfo = OptionInfo {
    name: "compute_slowdown",
    kind: OptionKind::NonNegativeRealAtMost(super::nccl::MAX_COMPUTE_SLOWDOWN),
    default: "0.189",
    help: "compute runs this much slower while a collective is in flight (a fraction in [0, 10]; 0 for none); default 0.189, the average measured by arXiv 2507.03114 (GPT and LLaMA on A100, H100, MI250, MI210)",
    aliases: &[],
};

const DDP_BUCKET: OptionInfo = OptionInfo {
    name: "bucket",
    kind: OptionKind::Bytes,
    default: "25MiB",
    help: "bucket cap (DDP's bucket_cap_mb, in MiB): gradients in reverse registration order fill a bucket until it holds at least this much",
    aliases: &[],
};

const DDP_FIRST_BUCKET: OptionInfo = OptionInfo {
    name: "first_bucket",
    kind: OptionKind::Bytes,
    default: "1MiB",
    help:
        "cap of the first bucket (DDP's kDefaultFirstBucketBytes): the first gradients of the backward pass start early",
    aliases: &[],
};

/// Options of `nccl`.
pub static NCCL_OPTIONS: &[OptionInfo] =
    &[NCCL_ALGO, NCCL_PROTO, NCCL_CHANNELS, NCCL_PXN, NCCL_LAUNCH, NCCL_COMPUTE_SLOWDOWN];

/// Options of `ddp`: its buckets and the NCCL options.
pub static DDP_OPTIONS: &[OptionInfo] =
    &[DDP_BUCKET, DDP_FIRST_BUCKET, NCCL_ALGO, NCCL_PROTO, NCCL_CHANNELS, NCCL_PXN, NCCL_LAUNCH, NCCL_COMPUTE_SLOWDOWN];

#[cfg(test)]
mod tests {
    use super::super::{Family, Strategy, STRATEGIES};
    use super::*;

    #[test]
    fn table_defaults_parse_and_are_read_by_the_parser() {
        for o in STRATEGIES.iter().flat_map(|s| s.options.iter()).chain(HOST_OPTIONS) {
            if !o.default.is_empty() {
                spec::parse_value(o.name, o.kind, o.default).unwrap_or_else(|e| panic!("{}: {e}", o.name));
            }
        }
        // The values the parser applied as literals before reading the table.
        assert_eq!(Strategy::parse("double-tree").unwrap().pipeline_chunk, 1048576.0);
        assert_eq!(Strategy::parse("tree").unwrap().tree_penalty(), 0.7);
        assert_eq!(Strategy::parse("ring:fusion=1MiB").unwrap().fusion.unwrap().cycle, 5_000_000);
        let ring = Strategy::parse("ring").unwrap();
        assert_eq!((ring.compression, ring.dispatch_s), (1.0, 0.0));
        let Family::ParameterServer(ps) = Strategy::parse("ps").unwrap().family else { panic!("ps") };
        assert_eq!((ps.num_ps, ps.barrier, ps.colocated), (1, true, false));
    }

    #[test]
    fn transport_presets_carry_their_sourced_figures() {
        let t = |spec: &str| Strategy::parse(spec).unwrap().transport.resolve(None).unwrap();
        // nccl-tests#83: 1.7 GB/s of 3.125 GB/s; nccl-tests#119: 12 of 12.5 GB/s.
        assert!((t("ring:transport=tcp").efficiency - 0.544).abs() < 1e-12);
        assert!((t("ring:transport=rdma").efficiency - 0.96).abs() < 1e-12);
        assert_eq!(t("ring:transport=rdma-optimized").efficiency, t("ring:transport=rdma").efficiency);
        assert_eq!(t("ring:transport=tcp").copy_bytes_per_s, Some(5e9));
        // Overrides keep the preset's efficiency; overrides alone keep the line rate.
        assert_eq!(t("ring:transport=tcp,overhead=1us").efficiency, TCP_GOODPUT_EFFICIENCY);
        assert_eq!(t("ring:overhead=1us").efficiency, 1.0);
        assert!(Strategy::parse("ring").unwrap().transport.resolve(None).is_none());
        // A GPU fabric's transport= is the preset of a strategy that names none; its own wins.
        let on = |spec: &str, fabric| Strategy::parse(spec).unwrap().transport.resolve(Some(fabric)).unwrap();
        assert_eq!(on("ring", "tcp"), t("ring:transport=tcp"));
        assert_eq!(on("ring:overhead=1us", "tcp"), t("ring:transport=tcp,overhead=1us"));
        assert_eq!(on("ring:transport=rdma-optimized", "tcp"), t("ring:transport=rdma-optimized"));
    }
}
