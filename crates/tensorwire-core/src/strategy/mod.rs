//! Strategies: how gradients are synchronised, written `NAME[:key=value,...]`.
//! The table [`STRATEGIES`] is the single definition of every strategy and option: the
//! parser validates against it and the `strategies` listing prints it.

pub mod algorithm;
mod fabric;
mod memory;
pub mod nccl;
mod options;
mod ps_placement;
mod sharded;

pub use algorithm::{Algorithm, Kind};
pub use nccl::{Buckets, NcclConfig};
pub use options::{
    TransportChoice, DDP_OPTIONS, HOST_OPTIONS, NCCL_OPTIONS, PS_OPTIONS, RDMA_GOODPUT_EFFICIENCY,
    TCP_GOODPUT_EFFICIENCY,
};
pub use sharded::{
    Comm, ShardAlgorithm, ShardedConfig, Stage, SHARDED_OPTIONS, ZERO3_MAX_LIVE_ELEMENTS, ZERO3_MAX_REUSE_ELEMENTS,
    ZERO3_PERSISTENCE_ELEMENTS, ZERO3_PREFETCH_BUCKET_ELEMENTS, ZERO_BUCKET_ELEMENTS,
};

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::sched::{Fusion, Limits, Policy};
use crate::spec::{self, OptionInfo, Spec};
use crate::units::seconds_to_nanos;

/// Description of a strategy for listings.
#[derive(Debug, Clone, Copy)]
pub struct StrategyInfo {
    /// Name as written in a spec.
    pub name: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Options specific to this strategy (the host options apply too, see [`HOST_OPTIONS`]).
    pub options: &'static [OptionInfo],
    /// What it is: its family, and its algorithm or stage (read by the parser).
    pub kind: Kind,
}

static NONE: &[OptionInfo] = &[options::ALL_REDUCE_COMPUTE_SLOWDOWN];
static PIPELINED: &[OptionInfo] = &[options::CHUNK, options::ALL_REDUCE_COMPUTE_SLOWDOWN];
static HIERARCHICAL: &[OptionInfo] = &[options::GPUS_PER_NODE, options::ALL_REDUCE_COMPUTE_SLOWDOWN];
static TREES: &[OptionInfo] = &[options::TREES, options::PENALTY, options::ALL_REDUCE_COMPUTE_SLOWDOWN];

/// Every built-in strategy.
pub static STRATEGIES: &[StrategyInfo] = &[
    StrategyInfo { name: "ps", summary: "parameter servers: workers push gradients, servers aggregate and send parameters back (Chang et al. 2020, seed 000)", options: PS_OPTIONS, kind: Kind::ParameterServer { multicast: false, ina: false } },
    StrategyInfo { name: "ps+multicast", summary: "parameter servers that send each parameter once, replicated by the switch (IP multicast)", options: PS_OPTIONS, kind: Kind::ParameterServer { multicast: true, ina: false } },
    StrategyInfo { name: "ps+ina", summary: "parameter servers with in-network aggregation: the switch forwards a chunk once every worker's copy arrived", options: PS_OPTIONS, kind: Kind::ParameterServer { multicast: false, ina: true } },
    StrategyInfo { name: "ps+multicast+ina", summary: "in-network aggregation and multicast distribution together", options: PS_OPTIONS, kind: Kind::ParameterServer { multicast: true, ina: true } },
    StrategyInfo { name: "nccl", summary: "NCCL 2.30.7 as it runs: each gradient tensor (or a microbenchmark's collective) one NCCL call, algorithm x protocol x channels from NCCL's tuning model, one communicator (calls in issue order); fusion=SIZE for Horovod over NCCL", options: NCCL_OPTIONS, kind: Kind::Nccl { ddp: false } },
    StrategyInfo { name: "ddp", summary: "PyTorch DDP: gradients in buckets (1 MiB first, then 25 MiB) in reverse parameter order, each bucket's all-reduce launched when all its gradients are ready, one NCCL communicator, timed as nccl", options: DDP_OPTIONS, kind: Kind::Nccl { ddp: true } },
    StrategyInfo { name: "ring", summary: "ring all-reduce: reduce-scatter then all-gather, 2(N-1) steps of S/N bytes; one unfused all-reduce per gradient tensor, one at a time (ring:fusion=25MiB for DDP-like buckets)", options: NONE, kind: Kind::AllReduce(Algorithm::Ring) },
    StrategyInfo { name: "ring+multicast", summary: "ring reduce-scatter, then every rank multicasts its reduced chunk (Chang et al. 2020, seed 000 section 8.4)", options: NONE, kind: Kind::AllReduce(Algorithm::RingMulticast) },
    StrategyInfo { name: "butterfly", summary: "butterfly mixing: whole tensor exchanged with rank XOR 2^k in log2 N phases, tensors pipelined (Chang et al. 2020, seed 000 section 3.3.2)", options: NONE, kind: Kind::AllReduce(Algorithm::Butterfly) },
    StrategyInfo { name: "recursive-doubling", summary: "recursive doubling all-reduce, one collective at a time (MPI)", options: NONE, kind: Kind::AllReduce(Algorithm::RecursiveDoubling) },
    StrategyInfo { name: "halving-doubling", summary: "Rabenseifner: reduce-scatter by recursive halving, all-gather by recursive doubling", options: NONE, kind: Kind::AllReduce(Algorithm::HalvingDoubling) },
    StrategyInfo { name: "tree", summary: "binomial tree reduce then broadcast; inside one multi-GPU machine (--topology nodes) the heaviest such tree on its links (the MXNet multi-tree proposal, seed 003)", options: TREES, kind: Kind::AllReduce(Algorithm::Tree) },
    StrategyInfo { name: "multitree", summary: "the MXNet multi-tree proposal's multi-tree all-reduce inside one multi-GPU machine: one slice per tree, link reuse penalised", options: TREES, kind: Kind::AllReduce(Algorithm::MultiTree) },
    StrategyInfo { name: "double-tree", summary: "NCCL-style double binary tree, each tree half the data, pipelined in chunks", options: PIPELINED, kind: Kind::AllReduce(Algorithm::DoubleTree) },
    StrategyInfo { name: "hierarchical", summary: "reduce inside each machine, ring across machines, broadcast inside each machine", options: HIERARCHICAL, kind: Kind::AllReduce(Algorithm::Hierarchical) },
    StrategyInfo { name: "zero1", summary: "ZeRO-1 (DeepSpeed): optimizer state sharded; gradients reduce-scattered after the backward pass, updated parameters all-gathered after the step", options: SHARDED_OPTIONS, kind: Kind::Sharded(Stage::Zero1) },
    StrategyInfo { name: "zero2", summary: "ZeRO-2 (DeepSpeed): gradients sharded too, reduce-scattered per bucket during the backward pass; parameters all-gathered after the step", options: SHARDED_OPTIONS, kind: Kind::Sharded(Stage::Zero2) },
    StrategyInfo { name: "fsdp", summary: "FSDP (PyTorch FSDP2): parameters sharded, all-gathered per unit before its forward and again before its backward, gradients reduce-scattered per unit", options: SHARDED_OPTIONS, kind: Kind::Sharded(Stage::Fsdp) },
    StrategyInfo { name: "zero3", summary: "ZeRO-3 (DeepSpeed stage 3): parameters sharded too, each all-gathered as its module runs with prefetch_bucket (5e7) elements prefetched ahead, small ones (param_persistence, 1e5) kept whole; gradients reduce-scattered in reduce_bucket (5e8) element buckets during backward", options: SHARDED_OPTIONS, kind: Kind::Sharded(Stage::Zero3) },
    StrategyInfo { name: "hsdp", summary: "hybrid sharding: fsdp inside each shard group (a machine), shards all-reduced across groups", options: SHARDED_OPTIONS, kind: Kind::Sharded(Stage::Hsdp) },
];

/// Strategy names that are another strategy under a second name: (alias, target).
pub static ALIASES: &[(&str, &str)] = &[];

/// Host options that only all-reduce strategies take (a parameter server refuses fusion,
/// stream execution, a dispatch cost and partial collectives).
const ALL_REDUCE_ONLY: [&str; 6] = ["fusion", "cycle", "execution", "dispatch", "partial", "max_lag"];

/// Host options only the sharded strategies read, and why the others have no use for them.
const SHARDED_ONLY: [(&str, &str); 1] = [(
    "param_dtype",
    "only the sharded strategies (zero1-3, fsdp, hsdp) move parameters; reduce_dtype sets the gradients' element type",
)];

/// Host options that sharded strategies refuse, and why.
const NOT_FOR_SHARDED: [(&str, &str); 10] = [
    ("partition", "sharded strategies move whole units or buckets; use unit/min_unit (fsdp) or bucket (zero)"),
    ("schedule", "sharded strategies run their collectives in program order on one all-gather and one reduce-scatter stream, as FSDP and DeepSpeed do"),
    ("credit", "the all-gather and reduce-scatter streams run one collective at a time each"),
    ("inflight", "the all-gather and reduce-scatter streams run one collective at a time each"),
    ("fusion", "zero1/zero2 bucket gradients with bucket=SIZE"),
    ("cycle", "zero1/zero2 bucket gradients with bucket=SIZE"),
    ("execution", "sharded strategies always run on streams"),
    ("dispatch", "a coordinator's dispatch cost applies to all-reduce strategies"),
    ("partial", "partial collectives apply to all-reduce strategies"),
    ("max_lag", "partial collectives apply to all-reduce strategies"),
];

/// Whether strategy `name` takes `option` (one of its own options or a host option): the
/// parser refuses the options for which this is false, and listings leave them out.
pub fn applies(name: &str, option: &str) -> bool {
    match STRATEGIES.iter().find(|s| s.name == name).map(|s| s.kind) {
        Some(Kind::Sharded(stage)) => {
            sharded::applies(stage, option) && !NOT_FOR_SHARDED.iter().any(|(o, _)| *o == option)
        }
        _ if SHARDED_ONLY.iter().any(|(o, _)| *o == option) => false,
        Some(Kind::ParameterServer { ina, .. }) => {
            !ALL_REDUCE_ONLY.contains(&option) && (option != "switch_memory" || ina)
        }
        Some(Kind::Nccl { ddp }) => {
            let refused = |list: &[(&str, &str)]| list.iter().any(|(o, _)| *o == option);
            !(refused(&nccl::NOT_FOR_NCCL) || ddp && refused(&nccl::NOT_FOR_DDP))
        }
        Some(Kind::AllReduce(_)) | None => true,
    }
}

/// Where each tensor lives on the parameter servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Tensor `i` on server `i mod P` (TensorFlow's default).
    RoundRobin,
    /// Each tensor, in order, on the server with the fewest bytes so far.
    Balanced,
    /// Every tensor split evenly over all servers (seed 000 section 9.1).
    Sharded,
}

/// Order of the distribution phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Tensor-major: tensor 0 to every worker, then tensor 1, ...
    RoundRobin,
    /// Worker-major: everything to worker 0, then worker 1, ... (seed 000 section 9.4)
    Block,
    /// Every pull at once: a server sends each piece to every worker concurrently and the
    /// pulls share its uplink max-min, as a TCP server with one connection per worker
    /// does (gRPC in TensorFlow, ps-lite in BytePS).
    Concurrent,
}

/// Parameter-server settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PsConfig {
    /// Number of servers.
    pub num_ps: usize,
    /// Tensor placement.
    pub placement: Placement,
    /// Distribution order.
    pub distribution: Distribution,
    /// Global barrier before distribution.
    pub barrier: bool,
    /// Send each parameter once to all workers by multicast.
    pub multicast: bool,
    /// Aggregate in the switch.
    pub in_network_aggregation: bool,
    /// Switch memory for partial aggregates, bytes (`None`: unlimited).
    pub switch_memory: Option<u64>,
    /// Server `k` runs on worker `k`'s host (BytePS, TensorFlow), not on a host of its
    /// own: traffic between a worker and its own server stays on the host.
    pub colocated: bool,
}

/// The collective family.
#[derive(Debug, Clone, PartialEq)]
pub enum Family {
    /// Parameter servers.
    ParameterServer(PsConfig),
    /// An all-reduce among the workers.
    AllReduce(Algorithm),
    /// Sharded data parallelism (ZeRO, FSDP, HSDP).
    Sharded(ShardedConfig),
    /// Collectives as NCCL runs them, timed by its tuning model (`nccl`, `ddp`).
    Nccl(NcclConfig),
}

/// Host transport costs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transport {
    /// Per-message host overhead, s.
    pub overhead_s: f64,
    /// Host copy bandwidth limiting each flow, bytes/s (`None`: zero-copy).
    pub copy_bytes_per_s: Option<f64>,
    /// Goodput as a fraction of the links' line rate, in (0, 1]: every link carries at
    /// most this share of its rate in payload (see the presets in `options.rs`).
    pub efficiency: f64,
}

/// Partial collectives (seed 002).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partial {
    /// The first rank to be ready initiates each round.
    Solo,
    /// A rank drawn per round from a seed shared by all ranks initiates it.
    Majority,
}

/// A parsed, validated strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Strategy {
    /// The spec as given (trimmed).
    pub spec: String,
    /// Collective family.
    pub family: Family,
    /// Piece size, bytes; `None` keeps tensors whole.
    pub partition: Option<u64>,
    /// Release order of ready pieces.
    pub policy: Policy,
    /// In-flight limits.
    pub limits: Limits,
    /// Tensor fusion, if any.
    pub fusion: Option<Fusion>,
    /// Gradient compression ratio (bytes on the wire = bytes / ratio), >= 1.
    pub compression: f64,
    /// Rate at which a host adds received gradients into its own, bytes/s (`None`: free).
    pub reduce_bytes_per_s: Option<f64>,
    /// The host transport it asks for ([`TransportChoice::resolve`] on the fabric gives the
    /// transport its flow-level messages use; nothing given: the cluster's).
    pub transport: TransportChoice,
    /// Pipeline piece size of pipelined collectives, bytes.
    pub pipeline_chunk: f64,
    /// Ranks per machine for `hierarchical` (`None`: the topology's machine size).
    pub gpus_per_node: Option<usize>,
    /// Trees for `tree`/`multitree` inside a machine (`None`: one per GPU).
    pub trees: Option<usize>,
    /// Multiplicative link-usage penalty between trees (seed 003), in (0, 1] (`None`: the
    /// default, [`Strategy::tree_penalty`]).
    pub penalty: Option<f64>,
    /// Partial collective, if any.
    pub partial: Option<Partial>,
    /// Partial collectives' staleness bound (`max_lag=S`, the runtime's
    /// `PartialAllreduce(max_lag=S)` and `EagerSGD(staleness=S)`): a rank joins round `k`
    /// only once its own call for round `k - S` has arrived. `None`: unbounded (Li et al.
    /// 2019); `Some(0)`: every rank joins with its own gradient, a synchronous all-reduce.
    pub max_lag: Option<u32>,
    /// Coordinator's dispatch cost per collective, s (all-reduce; 0: none). Released
    /// collectives start one after another, each this long after the previous start or its
    /// release, whichever is later.
    pub dispatch_s: f64,
    /// One ordered connection per pair of hosts (`connections=ordered-pairs`; old spelling
    /// `streams=ordered`).
    pub ordered_streams: bool,
    /// Released collectives run one at a time in release order (`execution=stream`).
    pub stream: bool,
    /// A collective's per-message overhead hides behind the transfer of its segment
    /// (`segments=pipelined`: a step costs latency + max(overhead, transfer)).
    pub pipelined_segments: bool,
    /// Element type of parameters on the wire (all-gathers); `None`: as the workload lists them.
    pub param_dtype: Option<Dtype>,
    /// Element type of gradients on the wire (all-reduces, reduce-scatters); `None`: as listed.
    pub reduce_dtype: Option<Dtype>,
    /// `compute_slowdown=` of a flow-level all-reduce strategy, as given (`None`: the
    /// fabric's default, [`Strategy::compute_slowdown_on`]).
    pub compute_slowdown: Option<f64>,
}

impl Strategy {
    /// Bytes of a gradient as it is reduced per byte the workload lists (elements of
    /// `listed_dtype_bytes`), before compression: `reduce_dtype`, else `param_dtype` where
    /// that is set, as PyTorch's `MixedPrecision` (FSDP) and `MixedPrecisionPolicy` (FSDP2)
    /// do ("if reduce_dtype is None but param_dtype is not None, the reduction uses the
    /// compute dtype") and DeepSpeed's ZeRO, which communicates gradients in its fp16/bf16
    /// model's type unless `communication_data_type` says otherwise; else as listed (1).
    pub fn gradient_dtype_factor(&self, listed_dtype_bytes: u32) -> f64 {
        self.reduce_dtype.or(self.param_dtype).map_or(1.0, |d| f64::from(d.bytes()) / f64::from(listed_dtype_bytes))
    }

    /// How much slower compute runs while one of this strategy's collectives is in flight
    /// on `topology` (a fraction; `engine::interference`): `compute_slowdown=` where given;
    /// else [`crate::nccl::DEFAULT_COMPUTE_SLOWDOWN`] (arXiv 2507.03114) wherever the
    /// collectives are kernels on the GPUs that compute: under NCCL's model on any fabric,
    /// and for the all-reduce and sharded strategies on GPU fabrics
    /// ([`crate::topology::TopologySpec::gpu_machines`]), so that `compare` there ranks
    /// every strategy under one compute model (a flow-level `hierarchical` had ranked
    /// above `ddp` only for computing at full speed beside its collectives); 0 for
    /// collectives on flows on the seeds' fabrics, as the seeds model them, and for
    /// parameter servers (their pushes and pulls are copies; servers sum on their CPUs).
    pub fn compute_slowdown_on(&self, topology: &crate::topology::TopologySpec) -> f64 {
        let on_gpus = |given: Option<f64>| {
            given.unwrap_or(if topology.gpu_machines() { crate::nccl::DEFAULT_COMPUTE_SLOWDOWN } else { 0.0 })
        };
        match &self.family {
            Family::Nccl(c) => c.compute_slowdown,
            Family::Sharded(cfg) if cfg.comm_on(topology) == Comm::Nccl => {
                cfg.compute_slowdown.unwrap_or(crate::nccl::DEFAULT_COMPUTE_SLOWDOWN)
            }
            Family::Sharded(cfg) => on_gpus(cfg.compute_slowdown),
            Family::AllReduce(_) => on_gpus(self.compute_slowdown),
            Family::ParameterServer(_) => 0.0,
        }
    }

    /// An option given that changes nothing here, as `(field, why)`, for a warning (the
    /// spec is valid, and the runtime runs it): `schedule=priority` on parameter servers with
    /// TensorFlow's barrier, where every pull waits for the last push, so the order of the
    /// pushes does not matter (VGG-16 on 8 workers at 10 Gbps: 7.084 s either way), or
    /// without a credit, where every push leaves as soon as it exists and nothing waits to
    /// be ordered (ByteScheduler orders what its credit holds back; Guo 2019, seed 004).
    pub fn option_without_effect(&self) -> Option<(&'static str, &'static str)> {
        let Family::ParameterServer(ps) = &self.family else { return None };
        if self.policy != Policy::Priority {
            return None;
        }
        if ps.barrier {
            return Some((
                "strategy.schedule",
                "priority changes nothing on parameter servers with the barrier: every pull waits for the last push, so the order of the pushes does not matter; give barrier=false with it, as ByteScheduler removes the barrier (Guo 2019)",
            ));
        }
        if self.limits.credit_bytes.is_none() && self.limits.max_tasks.is_none() {
            return Some((
                "strategy.schedule",
                "priority orders what a credit holds back; without credit= (or inflight=) every push leaves as soon as it exists, so the order changes nothing",
            ));
        }
        None
    }

    /// The link-usage penalty between the trees of `tree`/`multitree` inside a machine
    /// (seed 003): `penalty=`, else its default.
    pub fn tree_penalty(&self) -> f64 {
        self.penalty.unwrap_or_else(|| options::default_number(TREES, "penalty"))
    }

    /// Parameter servers it runs on hosts of their own (0 for the other families and for
    /// servers co-located with the workers).
    pub fn servers(&self) -> usize {
        match &self.family {
            Family::ParameterServer(c) if c.colocated => 0,
            Family::ParameterServer(c) => c.num_ps,
            _ => 0,
        }
    }

    /// Parses and validates a spec such as `ring:partition=4MiB` or `ps:num_ps=4`.
    pub fn parse(text: &str) -> Result<Strategy> {
        let (name, mut pairs) = spec::split("strategy", text)?;
        let Some(info) = STRATEGIES.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = STRATEGIES.iter().map(|s| s.name).collect();
            return Err(Error::invalid(
                "strategy",
                format!("unknown strategy {name:?}; choose one of {}", names.join(", ")),
            ));
        };
        // `nccl`/`ddp`: lists (algo=ring+tree), which the table's kinds cannot hold, are
        // read first.
        let raw = match info.kind {
            Kind::Nccl { .. } => Some(nccl::take_raw(&mut pairs)?),
            _ => None,
        };
        let given =
            spec::parse_options("strategy", &name, &pairs, &[info.options, HOST_OPTIONS], &|o| applies(&name, o))?;
        let spec = Spec { name, given };
        check_options(&spec, &[info.options, HOST_OPTIONS])?;
        let family = match (info.kind, raw) {
            (Kind::Nccl { ddp }, Some(options)) => {
                refuse_for_nccl(&spec, ddp)?;
                Family::Nccl(nccl::config(ddp, &spec, options)?)
            }
            (kind, _) => family(kind, &spec)?,
        };
        let on_nccl = matches!(family, Family::Nccl(_));
        let all_reduce = matches!(family, Family::AllReduce(_)) || on_nccl;
        if let Family::Sharded(_) = family {
            refuse_for_sharded(&spec)?;
        } else if let Some((name, reason)) = SHARDED_ONLY.iter().find(|(o, _)| spec.get(o).is_some()) {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("does not apply to {}: {reason}", spec.name),
            ));
        }
        let partition = spec.bytes("partition").or(spec.bytes("pipeline")).map(|b| b.round() as u64);
        if partition == Some(0) {
            return Err(Error::invalid("strategy.partition", "must be at least 1 byte"));
        }
        if partition.is_some() && matches!(&family, Family::ParameterServer(c) if c.placement == Placement::Sharded) {
            // Sharded servers cut every tensor into num_ps even pieces; a piece size would be ignored.
            return Err(Error::invalid(
                "strategy.placement",
                "sharded placement splits tensors itself; drop pipeline/partition",
            ));
        }
        let policy = match spec.choice("schedule") {
            Some("priority") => Policy::Priority,
            _ => Policy::Fifo,
        };
        let credit = spec.bytes("credit").map(|b| b.round().max(1.0) as u64);
        // NCCL runs the calls of one communicator one at a time, in issue order.
        let stream = spec.choice("execution") == Some("stream") || on_nccl;
        if stream && !all_reduce {
            return Err(Error::invalid("strategy.execution", "stream execution applies to all-reduce strategies"));
        }
        if stream && spec.choice("partial").is_some() {
            return Err(Error::invalid("strategy.execution", "stream execution cannot be combined with partial"));
        }
        // Without a credit: one collective at a time for all-reduce, as on an NCCL stream
        // (butterfly mixing pipelines tensors, seed 000); parameter-server workers push
        // every gradient as soon as it exists (TensorFlow's gRPC sends). On a stream the
        // stream itself runs one at a time, so everything ready is released (committed).
        let mut limits = match (credit, &family) {
            (Some(c), _) => Limits { credit_bytes: Some(c), max_tasks: None },
            (None, Family::AllReduce(Algorithm::Butterfly)) | (None, Family::ParameterServer(_)) => {
                Limits { credit_bytes: None, max_tasks: None }
            }
            (None, Family::AllReduce(_) | Family::Nccl(_)) if stream => Limits { credit_bytes: None, max_tasks: None },
            (None, Family::AllReduce(_) | Family::Nccl(_)) => Limits { credit_bytes: None, max_tasks: Some(1) },
            (None, Family::Sharded(_)) => Limits { credit_bytes: None, max_tasks: None },
        };
        if let Some(n) = spec.count("inflight") {
            if n == 0 {
                return Err(Error::invalid("strategy.inflight", "must be at least 1 collective"));
            }
            limits.max_tasks = Some(n as usize);
        }
        let fusion = match (spec.bytes("fusion"), spec.duration("cycle")) {
            (None, None) => None,
            (None, Some(_)) => return Err(Error::invalid("strategy.cycle", "needs fusion=SIZE too")),
            (Some(b), cycle) => {
                if !all_reduce {
                    return Err(Error::invalid("strategy.fusion", "fusion applies to all-reduce strategies"));
                }
                if policy == Policy::Priority {
                    return Err(Error::invalid(
                        "strategy.fusion",
                        "fusion releases in ready order; it cannot be combined with schedule=priority",
                    ));
                }
                Some(Fusion {
                    threshold_bytes: b.round().max(1.0) as u64,
                    cycle: seconds_to_nanos(
                        "strategy.cycle",
                        cycle.unwrap_or_else(|| options::default_number(HOST_OPTIONS, "cycle")),
                    )?,
                })
            }
        };
        let compression =
            spec.real("compression").unwrap_or_else(|| options::default_number(HOST_OPTIONS, "compression"));
        if compression < 1.0 {
            return Err(Error::invalid("strategy.compression", "must be a ratio >= 1 (bytes before / bytes after)"));
        }
        let transport = options::transport(&spec);
        let partial = match spec.choice("partial") {
            Some(_) if !all_reduce => {
                return Err(Error::invalid("strategy.partial", "partial collectives apply to all-reduce strategies"))
            }
            Some("solo") => Some(Partial::Solo),
            Some(_) => Some(Partial::Majority),
            None => None,
        };
        let max_lag = spec.count("max_lag").map(|s| u32::try_from(s).unwrap_or(u32::MAX));
        if max_lag.is_some() && partial.is_none() {
            return Err(Error::invalid(
                "strategy.max_lag",
                "max_lag bounds a partial collective's staleness; give it with partial=solo or partial=majority",
            ));
        }
        let pipelined_segments = spec.choice("segments") == Some("pipelined");
        if pipelined_segments && matches!(family, Family::ParameterServer(_)) {
            return Err(Error::invalid("strategy.segments", "pipelined segments apply to all-reduce strategies"));
        }
        let dispatch_s = match &family {
            // NCCL's launch: the host enqueues one call at a time, overlapping the one before.
            Family::Nccl(c) => c.launch_s,
            _ => spec.duration("dispatch").unwrap_or_else(|| options::default_number(HOST_OPTIONS, "dispatch")),
        };
        if dispatch_s > 0.0 && !all_reduce {
            return Err(Error::invalid(
                "strategy.dispatch",
                "a coordinator's dispatch cost applies to all-reduce strategies",
            ));
        }
        // Nccl and the sharded strategies keep theirs in their configs.
        let compute_slowdown =
            if matches!(family, Family::AllReduce(_)) { spec.real("compute_slowdown") } else { None };
        Ok(Strategy {
            spec: text.trim().to_string(),
            family,
            partition,
            policy,
            limits,
            fusion,
            compression,
            reduce_bytes_per_s: spec.rate("reduce"),
            transport,
            pipeline_chunk: spec.bytes("chunk").unwrap_or_else(|| options::default_number(PIPELINED, "chunk")).max(1.0),
            gpus_per_node: spec.count("gpus_per_node").map(|g| g as usize),
            trees: spec.count("trees").map(|t| t as usize),
            penalty: match spec.real("penalty") {
                Some(p) if p > 1.0 => return Err(Error::invalid("strategy.penalty", "must be in (0, 1]")),
                p => p,
            },
            partial,
            max_lag,
            dispatch_s,
            ordered_streams: spec.choice("connections") == Some("ordered-pairs"),
            stream,
            pipelined_segments,
            param_dtype: spec.choice("param_dtype").map(|d| Dtype::parse("strategy.param_dtype", d)).transpose()?,
            reduce_dtype: spec.choice("reduce_dtype").map(|d| Dtype::parse("strategy.reduce_dtype", d)).transpose()?,
            compute_slowdown,
        })
    }
}

/// Host options that make no sense for sharded strategies, and why.
/// Refuses counts past the memory limits (`limits.rs`) and sizes below one byte: a size
/// of 0 would mean no credit, no fusion, one-byte chunks or units of one layer, silently;
/// leaving the option out says that.
fn check_options(spec: &Spec, tables: &[&[OptionInfo]]) -> Result<()> {
    use crate::limits::{at_most, MAX_SERVERS, MAX_TREES, MAX_WORKERS};
    for (name, max, what) in [
        ("num_ps", MAX_SERVERS, "parameter servers"),
        ("trees", MAX_TREES, "trees"),
        ("gpus_per_node", MAX_WORKERS, "ranks"),
    ] {
        if let Some(n) = spec.count(name) {
            at_most(&format!("strategy.{name}"), n, max as u64, what)?;
        }
    }
    for name in ["partition", "pipeline", "credit", "fusion", "chunk", "min_unit", "bucket", "first_bucket"] {
        if let Some(b) = spec.bytes(name) {
            if b < 1.0 {
                // What leaving it out gives, from the strategy's own option table
                // (`ddp:bucket=0B` said "none", where DDP's 25 MiB buckets run); ZeRO's
                // `bucket` overrides its element counts.
                let listed = tables.iter().flat_map(|t| t.iter()).find(|o| o.name == name).map(|o| o.default);
                let default = match listed {
                    Some(d) if !d.is_empty() => {
                        // "25MiB" as "25 MiB", and DDP's own sizes named as DDP's.
                        let at = d.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(d.len());
                        let whose = if spec.name == "ddp" { "DDP's " } else { "" };
                        format!("{whose}{} {}", &d[..at], &d[at..])
                    }
                    _ if name == "bucket" => "reduce_bucket's and allgather_bucket's element counts".to_string(),
                    _ => "none".to_string(),
                };
                return Err(Error::invalid(
                    format!("strategy.{name}"),
                    format!(
                        "{} bytes: must be at least 1 byte (leave {name} out for {default})",
                        crate::units::format_number(b)
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn refuse_for_sharded(spec: &Spec) -> Result<()> {
    for (name, reason) in NOT_FOR_SHARDED {
        if spec.get(name).is_some() {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("does not apply to {}: {reason}", spec.name),
            ));
        }
    }
    Ok(())
}

fn refuse_for_nccl(spec: &Spec, ddp: bool) -> Result<()> {
    let refused = nccl::NOT_FOR_NCCL.iter().chain(if ddp { &nccl::NOT_FOR_DDP[..] } else { &[] });
    for (name, reason) in refused {
        if spec.get(name).is_some() {
            return Err(Error::invalid(
                format!("strategy.{name}"),
                format!("does not apply to {}: {reason}", spec.name),
            ));
        }
    }
    Ok(())
}

fn family(kind: Kind, spec: &Spec) -> Result<Family> {
    match kind {
        Kind::ParameterServer { multicast, ina } => {
            if spec.get("switch_memory").is_some() && !ina {
                return Err(Error::invalid(
                    "strategy.switch_memory",
                    "applies to in-network aggregation (ps+ina, ps+multicast+ina)",
                ));
            }
            // No memory aggregates nothing: refused rather than read as "unlimited" (a piece
            // larger than the memory is still aggregated alone, so any size from 1 B runs).
            if spec.bytes("switch_memory").is_some_and(|b| b.round() < 1.0) {
                return Err(Error::invalid(
                    "strategy.switch_memory",
                    "must be at least 1B (a piece larger than the switch memory is aggregated alone; leave it out for unlimited)",
                ));
            }
            if multicast && spec.choice("distribution") == Some("block") {
                // One multicast message reaches every worker: no worker-by-worker order.
                return Err(Error::invalid(
                    "strategy.distribution",
                    "block sends the model to one worker at a time; multicast sends each piece to every worker at once (round-robin, the default, or concurrent: every piece at once)",
                ));
            }
            Ok(Family::ParameterServer(PsConfig {
                num_ps: spec.count("num_ps").unwrap_or(options::default_number(PS_OPTIONS, "num_ps") as u64) as usize,
                placement: match spec.choice("placement") {
                    Some("balanced") => Placement::Balanced,
                    Some("sharded") => Placement::Sharded,
                    _ => Placement::RoundRobin,
                },
                distribution: match spec.choice("distribution") {
                    Some("block") => Distribution::Block,
                    Some("concurrent") => Distribution::Concurrent,
                    _ => Distribution::RoundRobin,
                },
                barrier: spec.flag("barrier").unwrap_or(options::default_flag(PS_OPTIONS, "barrier")),
                multicast,
                in_network_aggregation: ina,
                switch_memory: spec.bytes("switch_memory").map(|b| b.round() as u64),
                colocated: spec.flag("colocated").unwrap_or(options::default_flag(PS_OPTIONS, "colocated")),
            }))
        }
        Kind::Sharded(stage) => Ok(Family::Sharded(sharded::config(stage, spec)?)),
        Kind::AllReduce(algorithm) => Ok(Family::AllReduce(algorithm)),
        Kind::Nccl { ddp } => Ok(Family::Nccl(nccl::config(ddp, spec, Default::default())?)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::OptionKind;

    /// A value of `kind` that is not its default (a listed default alone may be a no-op).
    fn sample(o: &OptionInfo) -> String {
        match o.kind {
            OptionKind::Bytes => "2MiB".into(),
            OptionKind::Rate => "10Gbps".into(),
            OptionKind::Duration => "1ms".into(),
            OptionKind::Count | OptionKind::Natural | OptionKind::CountAtMost(_) => "2".into(),
            OptionKind::RealAtLeast(min) => crate::units::format_number(min + 1.0),
            OptionKind::Real | OptionKind::NonNegativeReal => if o.name == "penalty" { "0.5" } else { "2" }.into(),
            OptionKind::RealAtMost(max) | OptionKind::NonNegativeRealAtMost(max) => {
                crate::units::format_number(max.min(2.0) / 2.0)
            }
            OptionKind::Flag => if o.default == "true" { "false" } else { "true" }.into(),
            // (`distribution=block` is refused under multicast, which every ps takes.)
            OptionKind::Choice(_) if o.name == "distribution" => "concurrent".into(),
            OptionKind::Choice(words) => words.iter().find(|w| **w != o.default).unwrap_or(&words[0]).to_string(),
        }
    }

    #[test]
    fn a_size_below_one_byte_says_what_leaving_it_out_gives() {
        for (spec, gives) in [
            ("ddp:bucket=0B", "DDP's 25 MiB"),
            ("ddp:first_bucket=0B", "DDP's 1 MiB"),
            ("double-tree:chunk=0B", "1 MiB"),
            ("zero2:bucket=0B", "reduce_bucket's and allgather_bucket's element counts"),
            ("ring:partition=0B", "none"),
        ] {
            let e = Strategy::parse(spec).unwrap_err();
            assert!(e.to_string().ends_with(&format!("out for {gives})")), "{spec}: {e}");
        }
    }

    #[test]
    fn priority_on_parameter_servers_without_effect_is_named() {
        let no_effect = |spec: &str| Strategy::parse(spec).unwrap().option_without_effect().map(|(f, _)| f);
        assert_eq!(no_effect("ps:schedule=priority,partition=1MiB,credit=4MiB"), Some("strategy.schedule"));
        assert_eq!(no_effect("ps+ina:schedule=priority"), Some("strategy.schedule"));
        assert_eq!(no_effect("ps:barrier=false,schedule=priority"), Some("strategy.schedule"));
        for spec in [
            "ps:barrier=false,schedule=priority,credit=4MiB",
            "ps:barrier=false,schedule=priority,inflight=2",
            "ps",
            "ring:schedule=priority",
        ] {
            assert_eq!(no_effect(spec), None, "{spec}");
        }
    }

    #[test]
    fn multicast_refuses_a_worker_by_worker_distribution() {
        let e = Strategy::parse("ps+multicast:distribution=block").unwrap_err();
        assert_eq!(e.field(), "strategy.distribution");
        assert!(Strategy::parse("ps+multicast+ina:distribution=concurrent").is_ok());
        assert!(Strategy::parse("ps:distribution=block").is_ok());
    }

    #[test]
    fn options_that_do_not_apply_are_refused_and_own_options_are_accepted() {
        for s in STRATEGIES {
            for o in s.options.iter().chain(HOST_OPTIONS) {
                let spec = format!("{}:{}={}", s.name, o.name, sample(o));
                if !applies(s.name, o.name) {
                    assert!(Strategy::parse(&spec).is_err(), "{spec} is listed as not applying but parses");
                } else if s.options.iter().any(|own| own.name == o.name) {
                    assert!(Strategy::parse(&spec).is_ok(), "{spec} applies but is refused");
                }
            }
        }
        assert!(!applies("zero1", "prefetch") && !applies("fsdp", "shard_group") && applies("hsdp", "shard_group"));
        assert!(!applies("ps", "fusion") && !applies("ps", "switch_memory") && applies("ps+ina", "switch_memory"));
        assert!(ALIASES
            .iter()
            .all(|(a, t)| STRATEGIES.iter().any(|s| s.name == *a) && STRATEGIES.iter().any(|s| s.name == *t)));
    }

    #[test]
    fn param_dtype_is_the_sharded_strategies_own() {
        // Only sharded strategies all-gather parameters; elsewhere it changed nothing.
        for spec in ["ring:param_dtype=bf16", "nccl:param_dtype=bf16", "ddp:param_dtype=bf16", "ps:param_dtype=fp16"] {
            let e = Strategy::parse(spec).unwrap_err();
            assert_eq!(e.field(), "strategy.param_dtype", "{spec}");
            assert!(e.to_string().contains("reduce_dtype"), "{e}");
        }
        for spec in ["fsdp:param_dtype=bf16", "zero3:param_dtype=bf16", "ring:reduce_dtype=bf16"] {
            Strategy::parse(spec).unwrap();
        }
        assert!(applies("fsdp", "param_dtype") && !applies("ring", "param_dtype"));
    }

    #[test]
    fn parses_known_strategies() {
        let s = Strategy::parse("ps:num_ps=4,placement=balanced").unwrap();
        match s.family {
            Family::ParameterServer(c) => {
                assert_eq!(c.num_ps, 4);
                assert_eq!(c.placement, Placement::Balanced);
                assert!(c.barrier && !c.multicast && !c.in_network_aggregation);
            }
            _ => panic!("not ps"),
        }
        assert_eq!(Strategy::parse("ring:partition=1MiB").unwrap().partition, Some(1 << 20));
        let b = Strategy::parse("ring:schedule=priority,partition=4MB,credit=8MB").unwrap();
        assert_eq!((b.policy, b.limits.credit_bytes), (Policy::Priority, Some(8_000_000)));
        let f = Strategy::parse("ring:fusion=64MiB,cycle=5ms").unwrap();
        assert_eq!(f.fusion.unwrap().cycle, 5_000_000);
        assert!(matches!(
            Strategy::parse("ps+multicast+ina").unwrap().family,
            Family::ParameterServer(PsConfig { multicast: true, in_network_aggregation: true, .. })
        ));
        assert_eq!(Strategy::parse("ps:pipeline=1MB").unwrap().partition, Some(1_000_000));
        assert_eq!(
            Strategy::parse("ring:transport=rdma-optimized").unwrap().transport.resolve(None).unwrap().copy_bytes_per_s,
            None
        );
        for info in STRATEGIES {
            Strategy::parse(info.name).unwrap();
        }
    }

    #[test]
    fn rejects_unknown_names_and_options() {
        assert_eq!(Strategy::parse("bogus").unwrap_err().field(), "strategy");
        assert_eq!(Strategy::parse("ring:num_ps=2").unwrap_err().field(), "strategy.num_ps");
        assert_eq!(Strategy::parse("ps:num_ps=0").unwrap_err().field(), "strategy.num_ps");
        assert_eq!(Strategy::parse("ring:partition=0B").unwrap_err().field(), "strategy.partition");
        assert_eq!(Strategy::parse("ps:fusion=1MB").unwrap_err().field(), "strategy.fusion");
        assert_eq!(Strategy::parse("ring:cycle=1ms").unwrap_err().field(), "strategy.cycle");
        assert_eq!(Strategy::parse("ring:compression=0.5").unwrap_err().field(), "strategy.compression");
        assert_eq!(Strategy::parse("ps:switch_memory=1MB").unwrap_err().field(), "strategy.switch_memory");
        // What `strategies` lists as allowed is what the parser takes.
        for (spec, field, allowed) in [
            ("ring:compression=0.5", "strategy.compression", "a number >= 1"),
            ("multitree:penalty=2", "strategy.penalty", "a number in (0, 1]"),
            ("fsdp:communicators=3", "strategy.communicators", "an integer from 1 to 2"),
        ] {
            let e = Strategy::parse(spec).unwrap_err();
            assert_eq!(e.field(), field);
            assert!(e.to_string().contains(allowed), "{e}");
        }
        // No memory is refused, not read as unlimited.
        for zero in ["0B", "0.4B"] {
            let e = Strategy::parse(&format!("ps+ina:switch_memory={zero}")).unwrap_err();
            assert_eq!(e.field(), "strategy.switch_memory");
            assert!(e.to_string().contains("at least 1B"), "{e}");
        }
        assert!(Strategy::parse("ps+ina:switch_memory=1B").is_ok());
        assert_eq!(Strategy::parse("ring:chunk=1MB").unwrap_err().field(), "strategy.chunk");
    }

    /// The same strategy whatever spelling of its options was written (`spec` keeps the text).
    fn parsed_as(text: &str) -> Strategy {
        Strategy { spec: String::new(), ..Strategy::parse(text).unwrap() }
    }

    #[test]
    fn connections_keeps_its_old_spelling_streams() {
        assert_eq!(parsed_as("ring:streams=ordered"), parsed_as("ring:connections=ordered-pairs"));
        assert_eq!(parsed_as("ring:streams=fair"), parsed_as("ring:connections=shared"));
        assert_eq!(parsed_as("ring:streams=fair"), parsed_as("ring"));
        assert!(parsed_as("ps:streams=ordered").ordered_streams && !parsed_as("ps").ordered_streams);
        assert_ne!(parsed_as("ring:connections=ordered-pairs"), parsed_as("ring"));
        let twice = Strategy::parse("ring:connections=shared,streams=ordered").unwrap_err();
        assert_eq!(twice.to_string(), "strategy.connections: given twice (streams is its old name)");
        let bad = Strategy::parse("ring:streams=maybe").unwrap_err();
        assert_eq!(
            bad.to_string(),
            "strategy.connections: \"maybe\" is not one of shared, ordered-pairs (streams is its old name)"
        );
        // The old words belong to the old key: the new key reads with the new words only.
        assert_eq!(Strategy::parse("ring:connections=ordered").unwrap_err().field(), "strategy.connections");
    }
}
