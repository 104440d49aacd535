//! NCCL's collectives as NCCL runs them (version [`NCCL_VERSION`]): the fabric as NCCL's
//! topology search sees it ([`NcclFabric`]), its algorithms and protocols, and its tuning
//! model choosing algorithm x protocol x channels for each collective and size
//! ([`choose`]). Times are closed forms of the fabric (NCCL's own cost model, with the
//! link efficiencies of `docs/collectives.md`), so a collective costs no flow: the engine
//! times it with `engine/timed.rs`.
//!
//! API skeleton: the model itself is filled in by the NCCL model work; the signatures here
//! are what the engine, the bindings and calibration build on.

use crate::collectives::Collective;
use crate::error::{Error, Result};

/// The NCCL release whose behaviour is modelled (tables of `src/graph/tuning.cc` at tag
/// v2.30.7-1).
pub const NCCL_VERSION: &str = "2.30.7";

/// GPU architecture, which selects NCCL's per-architecture tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Volta (V100).
    Sm70,
    /// Ampere (A100).
    Sm80,
    /// Hopper (H100, H200).
    Sm90,
}

/// How the GPUs inside one node reach each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntraLink {
    /// NVLink through NVSwitch (DGX/HGX): any GPU to any at its full NVLink rate.
    NvSwitch,
    /// Direct NVLinks without a switch (DGX-1 hybrid cube mesh).
    NvLink,
    /// PCIe only.
    Pcie,
}

/// How the network moves NCCL's data between nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// InfiniBand / RoCE verbs with GPUDirect RDMA (NCCL's IB transport).
    Rdma,
    /// NCCL's socket transport over host TCP.
    Tcp,
}

/// Measured corrections of a fabric (`tensorwire calibrate`): factors on NCCL's bandwidths
/// and latencies added to NCCL's, inside a node and across nodes. The defaults change
/// nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Calibration {
    /// Factor on the intra-node (NVLink/PCIe) bandwidth NCCL's model gives.
    pub intra_bandwidth: f64,
    /// Factor on the inter-node (NIC) bandwidth NCCL's model gives.
    pub inter_bandwidth: f64,
    /// Added to each single-node collective, seconds.
    pub intra_latency_s: f64,
    /// Added to each multi-node collective, seconds.
    pub inter_latency_s: f64,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration { intra_bandwidth: 1.0, inter_bandwidth: 1.0, intra_latency_s: 0.0, inter_latency_s: 0.0 }
    }
}

/// The fabric as NCCL sees it: nodes of GPUs, their intra-node links and NICs.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclFabric {
    /// Nodes (machines).
    pub nodes: usize,
    /// GPUs (ranks) per node.
    pub gpus_per_node: usize,
    /// GPU architecture.
    pub arch: Arch,
    /// Intra-node wiring.
    pub intra: IntraLink,
    /// Each GPU's intra-node line rate per direction (all its NVLinks, or its PCIe), bytes/s.
    pub intra_bytes_per_s: f64,
    /// NVLink SHARP (NVLS) in the node's NVSwitches.
    pub nvls: bool,
    /// SHARP in-network reduction in the network switches (CollNet).
    pub collnet: bool,
    /// NICs per node.
    pub nics_per_node: usize,
    /// Each NIC's line rate per direction, bytes/s.
    pub nic_bytes_per_s: f64,
    /// Network transport.
    pub transport: Transport,
    /// Calibrated corrections.
    pub calibration: Calibration,
}

/// NCCL's algorithms (NCCL_ALGO names, lower case).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algo {
    Tree,
    Ring,
    CollNetDirect,
    CollNetChain,
    Nvls,
    NvlsTree,
    Pat,
}

impl Algo {
    /// Every algorithm, in NCCL's index order.
    pub const ALL: [Algo; 7] =
        [Algo::Tree, Algo::Ring, Algo::CollNetDirect, Algo::CollNetChain, Algo::Nvls, Algo::NvlsTree, Algo::Pat];

    /// Its name as `nccl:algo=` and NCCL_ALGO take it.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Tree => "tree",
            Algo::Ring => "ring",
            Algo::CollNetDirect => "collnetdirect",
            Algo::CollNetChain => "collnetchain",
            Algo::Nvls => "nvls",
            Algo::NvlsTree => "nvlstree",
            Algo::Pat => "pat",
        }
    }
}

/// NCCL's protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Proto {
    Ll,
    Ll128,
    Simple,
}

impl Proto {
    /// Every protocol, in NCCL's index order.
    pub const ALL: [Proto; 3] = [Proto::Ll, Proto::Ll128, Proto::Simple];

    /// Its name as `nccl:proto=` and NCCL_PROTO take it.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Ll => "ll",
            Proto::Ll128 => "ll128",
            Proto::Simple => "simple",
        }
    }
}

/// What the user restricts (`nccl:algo=,proto=,channels=`, as NCCL_ALGO, NCCL_PROTO and
/// NCCL_MIN_NCHANNELS); `None` leaves the choice to the tuning model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NcclOptions {
    /// Algorithms allowed.
    pub algos: Option<Vec<Algo>>,
    /// Protocols allowed.
    pub protos: Option<Vec<Proto>>,
    /// Channels (CTAs) per collective.
    pub channels: Option<usize>,
    /// PXN: cross-rail traffic hops over NVLink to the GPU on the right rail first.
    pub pxn: bool,
}

impl NcclOptions {
    /// Parses `algo=` (comma- or plus-separated NCCL names).
    pub fn parse_algos(text: &str) -> Result<Vec<Algo>> {
        parse_list(text, "strategy.algo", &Algo::ALL, Algo::name)
    }

    /// Parses `proto=`.
    pub fn parse_protos(text: &str) -> Result<Vec<Proto>> {
        parse_list(text, "strategy.proto", &Proto::ALL, Proto::name)
    }
}

fn parse_list<T: Copy>(text: &str, field: &str, all: &[T], name: fn(T) -> &'static str) -> Result<Vec<T>> {
    text.split(['+', '|'])
        .map(|part| {
            let part = part.trim().to_ascii_lowercase();
            all.iter().copied().find(|a| name(*a) == part).ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|a| name(*a)).collect();
                Error::invalid(field, format!("unknown {part:?}; choose from {}", names.join(", ")))
            })
        })
        .collect()
}

/// What NCCL runs for one collective, and how long it takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclChoice {
    /// Algorithm.
    pub algo: Algo,
    /// Protocol.
    pub proto: Proto,
    /// Channels used.
    pub channels: usize,
    /// Time of the collective, seconds.
    pub seconds: f64,
}

impl NcclChoice {
    /// nccl-tests' algorithm bandwidth for a buffer of `bytes` (its "size"), bytes/s.
    pub fn algbw(&self, bytes: f64) -> f64 {
        bytes / self.seconds
    }
}

/// nccl-tests' bus-bandwidth factor of `collective` on `ranks` ranks (`busbw = algbw x` it).
pub fn bus_factor(collective: Collective, ranks: usize) -> f64 {
    let n = ranks as f64;
    match collective {
        Collective::AllReduce => 2.0 * (n - 1.0) / n,
        Collective::ReduceScatter | Collective::AllGather | Collective::AllToAll => (n - 1.0) / n,
        Collective::Broadcast => 1.0,
    }
}

/// Refuses options the fabric cannot run (`nvls` without NVLink SHARP, more channels than
/// the node has, ...), naming the field.
pub fn check(_fabric: &NcclFabric, _options: &NcclOptions) -> Result<()> {
    Ok(())
}

/// What NCCL runs for `collective` over a buffer of `bytes` (nccl-tests' "size": the whole
/// buffer for all-gather and reduce-scatter) on `fabric` under `options`.
///
/// Skeleton: a ring over the slowest of the intra-node and inter-node bandwidths.
pub fn choose(fabric: &NcclFabric, collective: Collective, bytes: f64, options: &NcclOptions) -> Result<NcclChoice> {
    check(fabric, options)?;
    let ranks = fabric.nodes * fabric.gpus_per_node;
    let intra = fabric.intra_bytes_per_s;
    let inter = fabric.nic_bytes_per_s * fabric.nics_per_node as f64;
    let bus = if fabric.nodes > 1 { intra.min(inter) } else { intra };
    let seconds = if ranks <= 1 { 0.0 } else { 10e-6 + bytes * bus_factor(collective, ranks) / bus };
    Ok(NcclChoice { algo: Algo::Ring, proto: Proto::Simple, channels: 1, seconds })
}

impl NcclFabric {
    /// The fabric NCCL sees for `ranks` GPUs on `spec` with host links at
    /// `host_bytes_per_s` (as `TopologySpec::host_rate` resolves it) over `transport`:
    /// `rail` nodes from their preset (NVSwitch, one NIC per GPU), `nodes` machines with one
    /// NIC each, other fabrics one GPU per host.
    ///
    /// Skeleton: presets' rates with default architecture and capabilities.
    pub fn from_topology(
        spec: &crate::topology::TopologySpec,
        ranks: usize,
        host_bytes_per_s: f64,
        transport: Transport,
    ) -> Result<NcclFabric> {
        let one_per_host = |intra: f64| NcclFabric {
            nodes: ranks.max(1),
            gpus_per_node: 1,
            arch: Arch::Sm80,
            intra: IntraLink::Pcie,
            intra_bytes_per_s: intra,
            nvls: false,
            collnet: false,
            nics_per_node: 1,
            nic_bytes_per_s: host_bytes_per_s,
            transport,
            calibration: Calibration::default(),
        };
        if let Some(p) = spec.rail_params(host_bytes_per_s) {
            let g = p.gpus_per_node.max(1);
            return Ok(NcclFabric {
                nodes: ranks.div_ceil(g).max(1),
                gpus_per_node: g.min(ranks.max(1)),
                intra: IntraLink::NvSwitch,
                intra_bytes_per_s: p.nvlink_bytes_per_ns * 1e9,
                nics_per_node: g,
                nic_bytes_per_s: p.nic_bytes_per_ns * 1e9,
                ..one_per_host(0.0)
            });
        }
        if let Some(m) = spec.machine() {
            let g = m.gpus().max(1);
            return Ok(NcclFabric {
                nodes: ranks.div_ceil(g).max(1),
                gpus_per_node: g.min(ranks.max(1)),
                intra: IntraLink::NvLink,
                intra_bytes_per_s: 150e9,
                ..one_per_host(0.0)
            });
        }
        Ok(one_per_host(host_bytes_per_s))
    }
}

/// Default slowdown of compute kernels while communication kernels run on the same GPU
/// (a fraction: 0.189 = compute takes 18.9% longer): the average measured by
/// "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
/// Learning" (arXiv 2507.03114) over GPT and LLaMA training on A100, H100, MI250 and MI210
/// (maximum 40%). Used by the GPU-cluster strategies (`nccl`, `ddp`, sharded on NCCL).
pub const DEFAULT_COMPUTE_SLOWDOWN: f64 = 0.189;
