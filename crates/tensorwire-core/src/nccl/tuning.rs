//! NCCL's tuning model (`ncclTopoTuneModel`, `ncclTopoGetAlgoTime` in
//! `src/graph/tuning.cc`; `topoGetAlgoInfo` in `src/enqueue.cc`): the bandwidth and latency
//! of every (algorithm, protocol) for a collective, which pairs are enabled, and the time
//! `latency + bytes / bandwidth` whose minimum NCCL runs.

use super::graph::{nvls_capable, Graph, Graphs};
use super::tables::{self as t, HW_LATENCY_US as HW};
use super::{Algo, Arch, IntraLink, NcclFabric, Proto};
use crate::collectives::Collective;

/// The host CPUs are AMD (NCCL's tables keyed by CPU vendor: `llMaxBws` across nodes,
/// `getNetOverhead`). DGX A100 and Azure ND A100 v4 have AMD EPYC CPUs (DGX A100
/// datasheet: 2x AMD Rome 7742; research §3.1); the other modelled machines (DGX-1, DGX
/// H100, HGX H200, A3) Intel Xeon. The fabric carries no CPU field, so this is inferred
/// from sm80 + NVSwitch.
pub fn amd_host(f: &NcclFabric) -> bool {
    f.arch == Arch::Sm80 && f.intra == IntraLink::NvSwitch
}

/// `floor(log2(n))` as NCCL's `log2i` (0 for `n <= 1`).
pub(super) fn log2i(n: usize) -> f64 {
    (usize::BITS - 1 - n.max(1).leading_zeros()) as f64
}

fn graph_of(g: &Graphs, a: Algo) -> Graph {
    match a {
        Algo::Tree => g.tree,
        Algo::Ring | Algo::Pat => g.ring,
        Algo::CollNetDirect => Graph { channels: g.collnet.channels.min(t::MAX_COLLNET_LOCAL_RANKS), ..g.collnet },
        Algo::CollNetChain => g.collnet,
        Algo::Nvls | Algo::NvlsTree => g.nvls,
    }
}

/// NCCL runs `a` for `coll` at all on `f` (the per-collective algorithm sets and the
/// enable rules of §1.5), protocols aside.
pub fn algo_enabled(f: &NcclFabric, coll: Collective, a: Algo) -> bool {
    let multi = f.nodes > 1;
    let ppn = f.gpus_per_node;
    let in_set = match coll {
        Collective::Broadcast => a == Algo::Ring,
        Collective::AllGather | Collective::ReduceScatter => {
            matches!(a, Algo::Ring | Algo::Pat | Algo::Nvls | Algo::CollNetDirect)
        }
        Collective::AllReduce => a != Algo::Pat,
        Collective::AllToAll => false,
    };
    if !in_set {
        return false;
    }
    match a {
        Algo::Tree | Algo::Ring => true,
        // PAT only with one GPU per node (ncclPatEnable).
        Algo::Pat => ppn == 1,
        // NVLS: its graph (sm90 NVSwitch with NVLink SHARP); across nodes only with CollNet;
        // AG/RS across nodes need CollNet and at most one GPU per NIC (head).
        Algo::Nvls => {
            nvls_capable(f)
                && (!multi || f.collnet)
                && (!multi || coll == Collective::AllReduce || ppn <= f.nics_per_node)
        }
        Algo::NvlsTree => nvls_capable(f) && multi,
        Algo::CollNetDirect => {
            f.collnet
                && multi
                && f.intra == IntraLink::NvSwitch
                && ppn <= t::MAX_COLLNET_LOCAL_RANKS
                && (coll == Collective::AllReduce || ppn <= f.nics_per_node)
        }
        Algo::CollNetChain => f.collnet && multi && ppn <= t::MAX_COLLNET_LOCAL_RANKS,
    }
}

/// NCCL runs protocol `p` with algorithm `a`: NVLS and NVLS tree, CollNet and PAT only
/// Simple; LL128 only where the intra-node path is NVLink (or a node has one GPU; NCCL:
/// `typeIntra <= PATH_NVB`) — the GPU-NIC path is taken as PXB or better, which both sm80
/// and sm90 allow.
pub fn proto_enabled(f: &NcclFabric, a: Algo, p: Proto) -> bool {
    let simple_only = matches!(a, Algo::Nvls | Algo::NvlsTree | Algo::CollNetDirect | Algo::CollNetChain | Algo::Pat);
    if simple_only && p != Proto::Simple {
        return false;
    }
    p != Proto::Ll128 || f.gpus_per_node == 1 || matches!(f.intra, IntraLink::NvSwitch | IntraLink::NvLink)
}

/// Latency (µs) and bandwidth (NCCL's "algorithm" GB/s, 0 when unused) of `(a, p)` for
/// `coll` on `f` with graphs `g`: `ncclTopoTuneModel` literally.
pub fn entry(f: &NcclFabric, g: &Graphs, coll: Collective, a: Algo, p: Proto) -> (f64, f64) {
    let n = f.nodes * f.gpus_per_node;
    let nodes = f.nodes;
    let ppn = f.gpus_per_node as f64;
    let (ai, pi) = (a as usize, p as usize);
    let arch = t::arch_index(f.arch);
    let col = t::nodes_index(nodes);
    let nsteps = match coll {
        Collective::AllReduce => 2 * (n - 1),
        Collective::ReduceScatter | Collective::AllGather => n - 1,
        _ => n,
    } as f64;
    let graph = graph_of(g, a);
    let collnet = matches!(a, Algo::CollNetDirect | Algo::CollNetChain);
    let mut bw = if nodes <= 2 || collnet { graph.bw_intra } else { graph.bw_inter };
    if matches!(a, Algo::Nvls | Algo::NvlsTree) {
        if graph.channels < 2 {
            return (0.0, 0.0);
        }
        bw = nvls_channel_bw(f, graph, coll, a, graph.bw_intra, true);
    }
    let ch = graph.channels as f64;
    let mut bus = ch * bw;
    let ll_max = if nodes == 1 { t::LL_MAX_BW[arch][0] } else { t::LL_MAX_BW[usize::from(amd_host(f))][col] };
    if a == Algo::Ring && p == Proto::Ll {
        bus = ll_max.min(bus * t::LL_RING_FACTOR);
    }
    if a == Algo::Ring && p == Proto::Ll128 {
        bus = (bus * t::LL128_FACTOR).min(ch * t::PER_CH_MAX_RING_LL128_BW[arch][col]);
    }
    if a == Algo::Tree && coll == Collective::AllReduce {
        bus = (bus * t::LL128_FACTOR).min(ch * t::PER_CH_MAX_TREE_BW[arch][col]);
    }
    if a == Algo::Tree && p == Proto::Ll {
        bus = (bus / t::TREE_LL_DIVISOR).min(ll_max);
    }
    if a == Algo::Tree && p == Proto::Ll128 {
        let f128 = if nodes == 1 { 7.0 / 9.0 } else { 120.0 / 128.0 };
        bus = (bus * f128).min(ch * t::PER_CH_MAX_TREE_LL128_BW[arch][col]);
    }
    if a == Algo::Pat {
        bus *= t::PAT_FACTOR;
    }
    if a == Algo::CollNetDirect {
        if matches!(coll, Collective::AllGather | Collective::ReduceScatter) {
            bus = ppn * graph.bw_intra.min(graph.bw_inter * 0.9);
        } else {
            let mut factor = ppn / ch;
            factor -= (factor - 1.0) / 2.0;
            bus /= factor;
            if f.arch == Arch::Sm90 {
                bus *= 0.85;
            }
        }
    }
    let ag_rs = matches!(coll, Collective::AllGather | Collective::ReduceScatter);
    if !(a != Algo::Ring && ag_rs) {
        bus *= if matches!(a, Algo::Ring | Algo::Nvls | Algo::NvlsTree) { n as f64 / nsteps } else { 0.5 };
    }
    // Latency.
    let base = t::BASE_LATENCY_US[ai][pi];
    let intra_hw = if g.nvlink { t::HW_NVLINK } else { t::HW_PCI };
    let mut intra_lat = HW[intra_hw][ai][pi];
    let inter_lat = if f.gpus_per_node == 1 { HW[t::HW_NET][Algo::Tree as usize][pi] } else { HW[t::HW_NET][ai][pi] };
    let log_nodes = log2i(nodes);
    let lat = match a {
        Algo::Ring => {
            if coll == Collective::Broadcast {
                // NCCL's search keeps the same channels on a node (sameChannels): one hop.
                base + HW[if nodes == 1 { intra_hw } else { t::HW_NET }][ai][pi]
            } else {
                if nodes > 1 {
                    let mut overhead = t::NET_OVERHEAD_US[usize::from(amd_host(f))];
                    if p == Proto::Simple {
                        overhead *= 3.0;
                    }
                    intra_lat = intra_lat.max(overhead);
                }
                let inter_steps = match (nodes, coll) {
                    (1, _) => 0,
                    (_, Collective::AllReduce) => 2 * (nodes - 1),
                    _ => nodes - 1,
                } as f64;
                base + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat
            }
        }
        Algo::Tree => {
            base + if coll == Collective::AllReduce {
                2.0 * ((ppn - 1.0) * intra_lat + log_nodes * inter_lat)
            } else {
                0.0
            }
        }
        Algo::CollNetDirect => base + 2.0 * ((ppn - 1.0).min(1.0) * intra_lat + (ppn - 1.0) * 0.4) + inter_lat,
        Algo::CollNetChain => base + 2.0 * (ppn - 1.0) * intra_lat + inter_lat,
        Algo::Nvls => intra_lat + if nodes > 1 { inter_lat } else { 0.0 },
        Algo::NvlsTree => base + intra_lat + 2.0 * log_nodes * inter_lat,
        Algo::Pat => base + if ag_rs { log_nodes * (inter_lat / 3.5) + n as f64 * 2.8 } else { 0.0 },
    };
    (lat, bus)
}

/// NVLS's (and NVLS tree's) per-channel bandwidth in NCCL's formula (`ncclTopoTuneModel`,
/// "Convert to NVLS busBW/channel", since NCCL 2.28): `bw_intra x nvlsEfficiency x (nCh -
/// 1)/nCh`, x2 for all-reduce (two operations pipelined) else x (ppn-1)/ppn, at most the
/// graph's `bwInter` (x2 for NVLS tree on two nodes) when `inter_cap`, and NVLS tree's
/// per-channel cap.
fn nvls_channel_bw(f: &NcclFabric, graph: Graph, coll: Collective, a: Algo, bw_intra: f64, inter_cap: bool) -> f64 {
    let arch = t::arch_index(f.arch);
    let col = t::nodes_index(f.nodes);
    let ppn = f.gpus_per_node as f64;
    let c = graph.channels as f64;
    let mut intra = bw_intra * t::NVLS_EFFICIENCY[arch] * (c - 1.0) / c;
    intra *= if coll == Collective::AllReduce { 2.0 } else { (ppn - 1.0) / ppn };
    let inter = graph.bw_inter * if f.nodes <= 2 && a == Algo::NvlsTree { 2.0 } else { 1.0 };
    let cap = if a == Algo::NvlsTree { t::PER_CH_MAX_NVLS_TREE_BW[arch][col] } else { f64::MAX };
    if inter_cap {
        intra.min(inter).min(cap)
    } else {
        intra.min(cap)
    }
}

/// The bandwidth (NCCL's algorithm GB/s, as [`entry`] gives it) at which `a` *runs* once
/// NCCL has chosen it by `model_bw`, the bandwidth of [`entry`]. The same for every
/// algorithm but NVLS and NVLS tree, whose model takes two numbers of the topology search
/// that do not limit the kernel:
///
/// - `bwIntra`, the speed the search reserved per channel: the fastest of NCCL's speed list
///   (sm90: 60, 50, 40, ... GB/s) with `(nCh + 1) x speed` within each GPU's NVLink (the
///   head's link carries its channel twice, `ncclTopoSearchTryNvls`). The kernel runs
///   NCCL's 16 NVLS CTAs as fast as the links carry: each GPU's link moves `(g + 1)/g` of
///   the buffer each way (its memory read by every multimem reduction and its reduced part
///   sent once; its part returned reduced and every part multicast to it), so the run rate
///   is the formula at the unrounded `bwIntra = link / (nCh + 1)`: H100/H200 (370.8 GB/s in
///   NCCL's units) 8 GPUs 41.2 (search: 40), 7 GPUs 46.35 (40), 6 GPUs 52.97 (50), 5 GPUs
///   61.8 (60).
/// - On one node, `bwInter`: no network, only the search's pass 2 raising it up to twice
///   `bwIntra` (60 at most): it caps the model at 5 GPUs (NVLS 5 x 60 against its own
///   intra-node 5 x 81.6) and limits nothing in the node.
///
/// So NVLS all-reduce on one node runs at `nvlsEfficiency x link x g/(g+1)` algorithm
/// bandwidth (busbw `2(g-1)/(g+1) x 0.85 x link`): 8 GPUs 490 GB/s busbw, 7: 473, 6: 450,
/// 5: 420 (ml-engineering's H200 sweep measured 473, 460, 436, 414, nccl_tests.json).
/// Across nodes the network's `bwInter` stays.
///
/// Ring, PAT and tree across nodes run likewise at their links' rate
/// ([`across_nodes_channel_speed`]), not at the speed the search rounded each channel down
/// to: NCCL's list is coarse below 3 GB/s (3, 2.4, 1.2, 0.24, 0.12) and 12-6-3 on sm90, so
/// the model's `channels x speed` may leave half a NIC unused (a 5 Gbit/s NIC: 5 x 0.12 =
/// 0.6 of its 0.625 GB/s, and tree's `bwIntra` raised to 0.24 only) or, on two nodes, pass
/// it (a 4 Gbit/s NIC: tree `bwIntra` 1.2 on 2 channels, 2.4 GB/s). Timed by the model, a
/// faster NIC could be slower (1 MiB all-reduce on 2 nodes of 8: 3.8 ms at 4 Gbit/s, 6.8
/// ms at 5). Where the search's speed is the links' own (DGX H100: 8 channels x 48 GB/s on
/// 8 NICs of 48), nothing changes. The run speed goes through NCCL's formula in place of
/// the search's ([`entry`] on graphs carrying it), so the formula's caps (tree's and
/// LL128's per-channel maxima, LL's ceiling) bound what runs as they bound the model:
/// scaling the capped figure by the speeds' ratio made a tree on 400 Gbit/s NICs slower
/// than on 200 (its search speed doubles, its capped figure does not, its run speed is the
/// GPUs' links either way: 64 MiB on 16 H100, 1.14 ms against 1.08).
pub fn run_bandwidth(f: &NcclFabric, g: &Graphs, coll: Collective, a: Algo, p: Proto, model_bw: f64) -> f64 {
    if model_bw <= 0.0 {
        return model_bw;
    }
    if matches!(a, Algo::Ring | Algo::Pat | Algo::Tree) && f.nodes > 1 {
        let graph = graph_of(g, a);
        let mut run = *g;
        let speed = across_nodes_channel_speed(f, a, graph);
        let graph_at_speed = |mut graph: Graph| {
            if f.nodes <= 2 {
                graph.bw_intra = speed;
            } else {
                graph.bw_inter = speed;
            }
            graph
        };
        match a {
            Algo::Tree => run.tree = graph_at_speed(run.tree),
            _ => run.ring = graph_at_speed(run.ring),
        }
        let (_, model) = entry(f, g, coll, a, p);
        let (_, runs) = entry(f, &run, coll, a, p);
        // `model_bw` is the model's figure with `channels=` and the size's corrections,
        // which scale it whatever the speed.
        return if model > 0.0 { model_bw * runs / model } else { model_bw };
    }
    if !matches!(a, Algo::Nvls | Algo::NvlsTree) {
        return model_bw;
    }
    let graph = graph_of(g, a);
    if graph.channels < 2 {
        return model_bw;
    }
    let link = super::graph::gpu_gbs(f) / (graph.channels as f64 + 1.0);
    let chosen = nvls_channel_bw(f, graph, coll, a, graph.bw_intra, true);
    let runs = nvls_channel_bw(f, graph, coll, a, link.max(graph.bw_intra), f.nodes > 1);
    if chosen <= 0.0 {
        return model_bw;
    }
    model_bw * runs / chosen
}

/// What one channel of ring, PAT or tree across nodes carries at its links' rate, GB/s in
/// NCCL's units (the quantity the model takes from the search, `bwIntra` on two nodes and
/// `bwInter` beyond): the node's NICs shared by the graph's channels, and the GPUs' links
/// as NCCL's search counts them (a ring crosses each GPU's link `g/(g-1)` times per
/// channel's share, a tree chain once). A NIC carries RDMA's goodput,
/// [`crate::strategy::RDMA_GOODPUT_EFFICIENCY`] (0.96) of its line rate, within the GPU's
/// PCIe path ([`NcclFabric::nic_path_bytes_per_s`]): 12, 24 and 48 GB/s at 100, 200 and 400 Gbit/s, the
/// search's own speeds there. On two nodes a tree's channel may carry twice the NICs'
/// share (each node's NICs move the buffer once each way: NCCL's search raises `bwIntra`
/// up to twice `bwInter` for that).
pub fn across_nodes_channel_speed(f: &NcclFabric, a: Algo, graph: Graph) -> f64 {
    let c = graph.channels.max(1) as f64;
    let gpn = f.gpus_per_node;
    let goodput =
        (f.nic_bytes_per_s / 1e9 * crate::strategy::RDMA_GOODPUT_EFFICIENCY).min(f.nic_path_bytes_per_s / 1e9);
    let nics = f.nics_per_node.max(1) as f64 * goodput / c;
    let gpu = super::graph::gpu_gbs(f) / c;
    match a {
        Algo::Tree => {
            let net = if f.nodes <= 2 { 2.0 * nics } else { nics };
            if gpn > 1 {
                net.min(gpu)
            } else {
                net
            }
        }
        _ if gpn > 1 => nics.min(gpu * gpn as f64 / (gpn - 1) as f64),
        _ => nics,
    }
}

/// Tree all-reduce's correction of bandwidth at `bytes` for protocol `p`
/// ([`t::TREE_CORRECTION`]). NCCL takes the factor of `floor(log2(bytes / 64))`; here it is
/// interpolated linearly in log2 between those points (equal at powers of two), so the
/// time stays continuous and non-decreasing in bytes (the steps of NCCL's table would make
/// a larger buffer faster at a bucket edge, e.g. 0.5 -> 0.6).
pub fn tree_correction(p: Proto, bytes: f64) -> f64 {
    let row = &t::TREE_CORRECTION[p as usize];
    let x = (bytes / 64.0).log2();
    if !(0.0..23.0).contains(&x) {
        return 1.0;
    }
    let i = x.floor() as usize;
    let frac = x - i as f64;
    let next = if i + 1 < 23 { row[i + 1] } else { 1.0 };
    row[i] + (next - row[i]) * frac
}

/// NCCL's latency (µs) and bandwidth (GB/s) of `(a, p)` for `coll` on `bytes`, as
/// `ncclTopoGetAlgoTime` adjusts them for one operation: tree all-reduce's size correction,
/// the ring plateau factor on latency. Time = latency + bytes / (1000 x bandwidth) µs.
#[allow(clippy::too_many_arguments)]
pub fn parts(
    f: &NcclFabric,
    g: &Graphs,
    coll: Collective,
    a: Algo,
    p: Proto,
    bytes: f64,
    lat: f64,
    bw: f64,
) -> (f64, f64) {
    let mut bw = bw;
    let mut lat = lat;
    if a == Algo::Tree && coll == Collective::AllReduce {
        bw *= tree_correction(p, bytes);
    }
    let n = (f.nodes * f.gpus_per_node) as f64;
    if a == Algo::Ring
        && p == Proto::Simple
        && f.nodes > 1
        && coll == Collective::AllReduce
        && bytes / (g.runtime_channels as f64 * n) >= 64.0
    {
        lat *= t::RING_PLATEAU[usize::from(f.arch != Arch::Sm70)];
    }
    (lat, bw)
}

/// CollNet direct's heads (`collnetDirect.nHeads`, `src/graph/connect.cc`): the distinct
/// GPUs that start a channel of its graph, one per NIC it uses, so at most the node's GPUs.
pub fn collnet_direct_heads(f: &NcclFabric, g: &Graphs) -> usize {
    graph_of(g, Algo::CollNetDirect).channels.min(f.gpus_per_node).max(1)
}

/// Channels NCCL runs `(a, p)` with on `bytes` (`topoGetAlgoInfo`): NVLS its own count
/// (across nodes at most the communicator's); ring, tree, PAT and CollNet chain drop channels
/// while each thread would get less than its threshold; CollNet direct counts its heads'
/// threads too and steps down to 16, 8, 4, 2, 1 channels, halving the threshold as it passes
/// 24, 12, 6, 3 (its "CollNet channel tuning").
pub fn op_channels(f: &NcclFabric, g: &Graphs, a: Algo, p: Proto, bytes: f64, runtime: usize) -> usize {
    if matches!(a, Algo::Nvls | Algo::NvlsTree) {
        let nvls = g.nvls_channels.min(runtime.max(1));
        return if f.nodes > 1 && a == Algo::Nvls { nvls.min(runtime) } else { nvls }.max(1);
    }
    if a == Algo::CollNetDirect {
        let (heads, threads) = (collnet_direct_heads(f, g) as f64, t::COLLNET_THREADS as f64);
        let threshold = t::COLLNET_THREAD_THRESHOLD as f64;
        let (mut nc, mut threshold, mut switch, mut short) = (runtime.max(1), threshold, 16usize, true);
        while switch >= 1 && short {
            loop {
                short = bytes < nc as f64 * threads * heads * threshold;
                if !(short && nc > switch) {
                    break;
                }
                if nc == switch + switch / 2 {
                    threshold /= 2.0;
                }
                nc -= 1;
            }
            switch /= 2;
        }
        return nc.max(1);
    }
    let n = f.nodes * f.gpus_per_node;
    let pi = p as usize;
    let threads = if a == Algo::CollNetChain { t::COLLNET_THREADS } else { t::MAX_THREADS[pi] };
    let threshold = match (a, p) {
        (Algo::Ring, Proto::Ll) => t::THREAD_THRESHOLD[pi] * n,
        (Algo::CollNetChain, Proto::Simple) => t::COLLNET_THREAD_THRESHOLD,
        _ => t::THREAD_THRESHOLD[pi],
    };
    let fit = (bytes / (threads * threshold) as f64).floor();
    (fit.clamp(1.0, runtime.max(1) as f64)) as usize
}
