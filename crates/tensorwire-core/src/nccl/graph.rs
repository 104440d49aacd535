//! The result of NCCL's topology search (`src/graph/search.cc`, `connect.cc`) for an
//! [`NcclFabric`]: per algorithm, how many channels and how fast each is inside a node
//! (`bwIntra`) and across nodes (`bwInter`), in NCCL's own GB/s.
//!
//! NCCL searches paths through its topology graph; here the node is a few numbers (each
//! GPU's NVLink or PCIe figure, the NICs, the GPU-NIC PCIe path), so the search is
//! approximated by counting, per candidate speed of NCCL's speed list, how many channels
//! the node's links carry:
//!
//! - one node, NVSwitch or PCIe: `floor(gpu_bw / speed)` rings (each ring uses each GPU's
//!   link once per direction);
//! - one node, NVLink without switch (DGX-1 hybrid cube mesh): rings at most one lane fast
//!   use every lane, `floor(gpu_bw / speed)`; faster rings only run over the double links,
//!   which form one 8-cycle: 2 rings (both directions), on all 8 GPUs only (fewer GPUs
//!   have the lanes among them that `fabric.rs` counts, at most one lane per ring);
//! - several nodes: each channel enters and leaves the node through a NIC at most
//!   `min(NIC, GPU-NIC PCIe)` fast, `floor(that / speed)` channels per NIC, and its
//!   intra-node part loads each GPU's NVLink (g-1)/g of the speed on average;
//! - NVLS: one channel per GPU (each the head once); a head moves 2x the speed on its link,
//!   the others 1x: `(g + 1) x speed <= gpu_bw`.
//!
//! The passes follow `ncclTopoCompute`: pass 1 from the fastest speed that fits the path,
//! down while the next speed is more than 0.49 of the best found, keeping the most
//! `channels x speed` and stopping once it reaches the GPU's bandwidth; then the dup rule
//! (`ncclTopoDupChannels`); then pass 2 raises the speed at the same channel count while it
//! fits (rings), raises NVLS's `bwInter` up to twice its `bwIntra`, and raises trees'
//! `bwIntra` up to twice `bwInter`. NCCL's paths, PCI switches, CPU links and the
//! cross-NIC option are not modelled. The worked examples of the research note come out:
//! DGX A100 one node 12 x 20 = 240 GB/s, DGX H100 12 x 30 = 360, DGX A100 several nodes 8
//! x 24 = 192, DGX H100 8 x 48 = 384, H100 NVLS 8 channels at 40 (bwInter 60).

use super::tables::{self, MAX_NVLS_ARITY, MAX_SEARCH_CHANNELS, NVLINK_LANE_GBS, NVLINK_LANE_LINE_GBS};
use super::{Arch, IntraLink, NcclFabric};

/// One algorithm's graph: channels and per-channel bandwidths, GB/s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Graph {
    /// Channels the search found (after the dup rule).
    pub channels: usize,
    /// Per-channel bandwidth inside a node, GB/s.
    pub bw_intra: f64,
    /// Per-channel bandwidth across nodes, GB/s.
    pub bw_inter: f64,
}

impl Graph {
    const NONE: Graph = Graph { channels: 0, bw_intra: 0.0, bw_inter: 0.0 };
}

/// Every graph NCCL builds for a communicator, plus its runtime channel counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Graphs {
    /// Ring graph.
    pub ring: Graph,
    /// Tree graph (balanced tree pattern).
    pub tree: Graph,
    /// NVLS graph; `channels == 0` where NVLS has no graph.
    pub nvls: Graph,
    /// CollNet graphs (Direct and Chain): approximated by the tree graph, Direct capped at
    /// 8 channels (its arity).
    pub collnet: Graph,
    /// Runtime channels (`comm->nChannels`, `connect.cc`): twice the ring's, up to 64; on
    /// sm90 across nodes doubled again while below 16 and the ring's `bwIntra` > 45.
    pub runtime_channels: usize,
    /// NVLS channels (CTAs): 16 on sm90 (`src/transport/nvls.cc`).
    pub nvls_channels: usize,
    /// The intra-node hops are NVLink (else PCIe), for NCCL's latency tables.
    pub nvlink: bool,
}

/// Each GPU's NVLink lanes: its intra-node line rate over 25 GB/s per lane
/// ([`NVLINK_LANE_LINE_GBS`]; 18 on H100, 12 on A100). Meaningful for NVLink fabrics only.
pub fn nvlink_lanes(f: &NcclFabric) -> f64 {
    f.intra_bytes_per_s / 1e9 / NVLINK_LANE_LINE_GBS
}

/// NCCL's figure for each GPU's intra-node bandwidth, GB/s: NVLink lanes ([`nvlink_lanes`])
/// x NCCL's per-lane figure ([`NVLINK_LANE_GBS`]), or PCIe at NCCL's 0.75 of the raw rate.
pub fn gpu_gbs(f: &NcclFabric) -> f64 {
    match f.intra {
        IntraLink::NvSwitch | IntraLink::NvLink => nvlink_lanes(f) * NVLINK_LANE_GBS[tables::arch_index(f.arch)],
        IntraLink::Pcie => f.intra_bytes_per_s / 1e9 * tables::PCIE_EFFICIENCY,
    }
}

/// NCCL's figure for one NIC as a GPU reaches it, GB/s: the NIC's speed (Mb/s / 8000, i.e.
/// its line rate) behind the GPU-NIC PCIe path ([`NcclFabric::nic_path_bytes_per_s`]).
pub fn nic_gbs(f: &NcclFabric) -> f64 {
    f.nic_bytes_per_s.min(f.nic_path_bytes_per_s) / 1e9
}

/// How many ring channels of `speed` GB/s the fabric carries.
fn ring_capacity(f: &NcclFabric, speed: f64, multi: bool) -> usize {
    let g = f.gpus_per_node;
    let gpu = gpu_gbs(f);
    let fit = |bw: f64| (bw / speed + 1e-9).floor() as usize;
    let intra = if g <= 1 {
        usize::MAX
    } else if multi {
        fit(gpu * g as f64 / (g - 1) as f64)
    } else {
        match f.intra {
            IntraLink::NvLink => {
                let lane = NVLINK_LANE_GBS[tables::arch_index(f.arch)];
                if speed <= lane + 1e-9 {
                    fit(gpu)
                } else if speed <= 2.0 * lane + 1e-9 && double_link_rings(f) {
                    2
                } else {
                    0
                }
            }
            _ => fit(gpu),
        }
    };
    let inter = if multi { f.nics_per_node.max(1) * fit(nic_gbs(f)) } else { usize::MAX };
    intra.min(inter).min(MAX_SEARCH_CHANNELS)
}

/// The fastest a single channel may go: the path's bandwidth (NCCL's `system->maxBw`).
fn max_speed(f: &NcclFabric, multi: bool) -> f64 {
    if multi {
        return nic_gbs(f);
    }
    match f.intra {
        IntraLink::NvLink => {
            let lanes = if double_link_rings(f) { 2.0 } else { 1.0 };
            lanes * NVLINK_LANE_GBS[tables::arch_index(f.arch)]
        }
        _ => gpu_gbs(f),
    }
}

/// NVLink without a switch carries rings faster than one lane: the DGX-1's double links
/// form one 8-cycle, so all of its 8 GPUs (6 lanes each) and no fewer (the first 2 to 7
/// GPUs have no cycle of double links among them; `fabric.rs` gives them their own lanes).
fn double_link_rings(f: &NcclFabric) -> bool {
    f.intra == IntraLink::NvLink && f.gpus_per_node >= 8 && nvlink_lanes(f) >= 6.0 - 1e-9
}

/// Ring graph: pass 1, dup rule, pass 2 (module doc).
fn search_ring(f: &NcclFabric, multi: bool) -> Graph {
    let speeds = tables::speeds(f.arch, multi);
    let total = if f.gpus_per_node > 1 { gpu_gbs(f) } else { nic_gbs(f) };
    let max = max_speed(f, multi);
    let start = speeds.iter().position(|&s| s <= max + 1e-9);
    let mut best: Option<(usize, f64)> = None;
    if let Some(start) = start {
        for &s in &speeds[start..] {
            if let Some((c, b)) = best {
                if c as f64 * b >= total - 1e-9 || s / b <= 0.49 {
                    break;
                }
            }
            let c = ring_capacity(f, s, multi);
            if c > 0 && best.is_none_or(|(bc, bs)| c as f64 * s > bc as f64 * bs + 1e-9) {
                best = Some((c, s));
            }
        }
    }
    let Some((mut c, mut s)) = best else {
        // NCCL falls back to a simple order at a token bandwidth; here one channel at the
        // path's own rate (links slower than NCCL's slowest speed, 0.12 GB/s): across nodes
        // the ring crosses each node's GPU links as well as its NIC, so the slower of them.
        let bw = if !multi {
            gpu_gbs(f)
        } else if f.gpus_per_node > 1 {
            nic_gbs(f).min(gpu_gbs(f))
        } else {
            nic_gbs(f)
        };
        return Graph { channels: 1, bw_intra: bw, bw_inter: bw };
    };
    // Dup rule (ncclTopoDupChannels).
    if s >= 25.0 && !(f.arch != Arch::Sm70 && f.arch != Arch::Sm80 && s < 50.0 && c > 4) {
        let dup = (2 * c).min(MAX_SEARCH_CHANNELS);
        s /= dup.div_ceil(c) as f64;
        c = dup;
    }
    // Pass 2: a faster speed at the same channel count.
    let found = s;
    for &faster in speeds.iter().rev().filter(|&&x| x > found + 1e-9) {
        if faster <= max + 1e-9 && ring_capacity(f, faster, multi) >= c {
            s = faster;
        } else {
            break;
        }
    }
    Graph { channels: c, bw_intra: s, bw_inter: s }
}

/// Tree graph: the ring's channels and `bwInter`; across nodes NCCL's pass 2 raises
/// `bwIntra` while below twice `bwInter` and the GPUs' links carry it (a chain uses each
/// GPU's link once per channel).
fn search_tree(f: &NcclFabric, ring: Graph, multi: bool) -> Graph {
    let mut tree = ring;
    if multi && f.gpus_per_node > 1 {
        let gpu = gpu_gbs(f);
        for &faster in tables::speeds(f.arch, true).iter().rev().filter(|&&x| x > ring.bw_intra + 1e-9) {
            if tree.bw_intra < 2.0 * tree.bw_inter - 1e-9 && tree.channels as f64 * faster <= gpu + 1e-9 {
                tree.bw_intra = faster;
            } else {
                break;
            }
        }
    }
    tree
}

/// NVLS graph (sm90 with NVSwitch and NVLink SHARP only; the caller checks).
fn search_nvls(f: &NcclFabric, multi: bool) -> Graph {
    let g = f.gpus_per_node.min(MAX_NVLS_ARITY);
    if g < 2 {
        return Graph::NONE;
    }
    let speeds = tables::speeds(f.arch, multi);
    let gpu = gpu_gbs(f);
    let Some(i) = speeds.iter().position(|&s| (g + 1) as f64 * s <= gpu + 1e-9) else {
        return Graph::NONE;
    };
    let intra = speeds[i];
    let mut inter = if multi {
        speeds.iter().copied().find(|&s| s <= nic_gbs(f) + 1e-9).unwrap_or(intra).min(intra)
    } else {
        intra
    };
    // Pass 2: raise bwInter while below twice bwIntra (and, across nodes, within a NIC).
    let limit = if multi { nic_gbs(f) } else { f64::INFINITY };
    let first = inter;
    for &faster in speeds.iter().rev().filter(|&&x| x > first + 1e-9) {
        if inter < 2.0 * intra - 1e-9 && faster <= limit + 1e-9 {
            inter = faster;
        } else {
            break;
        }
    }
    Graph { channels: g, bw_intra: intra, bw_inter: inter }
}

/// Every graph of `f`: the search approximated as in the module doc.
pub fn search(f: &NcclFabric) -> Graphs {
    let multi = f.nodes > 1;
    let ring = search_ring(f, multi);
    let tree = search_tree(f, ring, multi);
    let nvls = if nvls_capable(f) { search_nvls(f, multi) } else { Graph::NONE };
    let collnet = if f.collnet && multi { tree } else { Graph::NONE };
    let mut runtime = (2 * ring.channels).min(tables::MAX_CHANNELS);
    if multi && f.arch == Arch::Sm90 && ring.bw_intra > 45.0 && runtime < 16 {
        runtime = (2 * runtime).min(tables::MAX_CHANNELS);
    }
    Graphs {
        ring,
        tree,
        nvls,
        collnet,
        runtime_channels: runtime.max(1),
        nvls_channels: if nvls.channels >= 2 { tables::NVLS_CHANNELS_SM90 } else { 0 },
        nvlink: matches!(f.intra, IntraLink::NvSwitch | IntraLink::NvLink) && f.gpus_per_node > 1,
    }
}

/// NVLS's graph exists: NVLink SHARP in the NVSwitches, sm90, at least two GPUs per node
/// (NCCL searches it only with an NVSwitch and cc >= 90, `ncclTopoCompute`).
pub fn nvls_capable(f: &NcclFabric) -> bool {
    f.nvls && f.arch == Arch::Sm90 && f.intra == IntraLink::NvSwitch && f.gpus_per_node >= 2
}
