//! All-to-all as NCCL runs it (`src/enqueue.cc`, `src/graph/paths.cc`): grouped
//! `ncclSend`/`ncclRecv` to every peer at once, without a cost model or algorithm choice in
//! NCCL. The time here is tensorwire's closed form of that: all peers progress together, so
//! each GPU is bounded by its own injection — the intra-node share over its NVLink/PCIe at
//! NCCL's figure and the inter-node share through its NIC ("Alltoall cannot aggregate the
//! bandwidth of multiple NICs, so the performance you should see is the performance of a
//! single NIC", sjeaugey, <https://github.com/NVIDIA/nccl-tests/issues/267>).

use super::graph::{gpu_gbs, nic_gbs, Graphs};
use super::tables::{self as t, HW_LATENCY_US as HW};
use super::{Algo, NcclFabric, Proto};

/// Peers per round: NCCL puts up to 8 point-to-point operations in one work batch per
/// channel (NCCL_MAX_DEV_WORK_P2P_PER_BATCH, `src/include/device.h`).
pub const P2P_PER_BATCH: usize = 8;

/// The channels NCCL sets up for point-to-point operations on a communicator with
/// `coll_channels` collective channels: `min(nChannels, NCCL_MAX_P2P_NCHANNELS =` [`t::MAX_CHANNELS`]`)`
/// rounded up to a power of two (`ncclTopoComputeP2pChannels`, `src/graph/paths.cc`, NCCL
/// 2.30.7), e.g. 24 -> 32 on one 8-GPU H100 node, as NCCL's INFO log prints ("32 p2p channels").
///
/// ```
/// use tensorwire_core::nccl::alltoall::p2p_channels;
/// assert_eq!((p2p_channels(24), p2p_channels(16), p2p_channels(1)), (32, 16, 1));
/// ```
pub fn p2p_channels(coll_channels: usize) -> usize {
    coll_channels.clamp(1, t::MAX_CHANNELS).next_power_of_two()
}

/// Time of an all-to-all of `bytes` per rank (each rank's send buffer; `bytes / n` to each
/// peer), µs of latency and the bandwidth-bound seconds, both uncalibrated.
///
/// - Intra-node share `(g-1)/n` of the bytes leaves over the GPU's intra-node link at
///   NCCL's figure ([`gpu_gbs`]).
/// - Inter-node share `(n-g)/n` leaves through NICs: the node's NICs shared by its GPUs,
///   `nics x nic / g` per GPU (one NIC per GPU on rail nodes). With PXN (`pxn`) data for a
///   peer on another rail first crosses NVLink to the local GPU on that rail, adding
///   `(g-1)/g` of the inter share to the NVLink load (PXN's gain — fewer connections and
///   no cross-rail hop through the spines — is not visible in this closed form).
/// - Latency: the Simple protocol's base (8.4 µs) and one hop (NVLink/PCIe, or network
///   across nodes) per round of [`P2P_PER_BATCH`] peers (a tensorwire approximation:
///   NCCL has no p2p latency model).
pub fn time(f: &NcclFabric, g: &Graphs, bytes: f64, pxn: bool) -> (f64, f64) {
    let gpn = f.gpus_per_node;
    let n = f.nodes * gpn;
    if n <= 1 {
        return (0.0, 0.0);
    }
    let intra_share = bytes * (gpn - 1) as f64 / n as f64;
    let inter_share = bytes * (n - gpn) as f64 / n as f64;
    let mut nvlink_bytes = intra_share;
    if pxn && gpn > 1 {
        nvlink_bytes += inter_share * (gpn - 1) as f64 / gpn as f64;
    }
    let intra_s = if nvlink_bytes > 0.0 { nvlink_bytes / (gpu_gbs(f) * 1e9) } else { 0.0 };
    let per_gpu_nic = f.nics_per_node.max(1) as f64 * nic_gbs(f) / gpn as f64;
    let inter_s = if inter_share > 0.0 { inter_share / (per_gpu_nic * 1e9) } else { 0.0 };
    let (ai, pi) = (Algo::Ring as usize, Proto::Simple as usize);
    let hop = if f.nodes > 1 {
        HW[t::HW_NET][ai][pi]
    } else if g.nvlink {
        HW[t::HW_NVLINK][ai][pi]
    } else {
        HW[t::HW_PCI][ai][pi]
    };
    let rounds = (n - 1).div_ceil(P2P_PER_BATCH) as f64;
    (t::BASE_LATENCY_US[ai][pi] + rounds * hop, intra_s.max(inter_s))
}
