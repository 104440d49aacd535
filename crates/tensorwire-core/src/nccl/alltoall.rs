//! All-to-all as NCCL runs it (`src/enqueue.cc`, `src/graph/paths.cc`): grouped
//! `ncclSend`/`ncclRecv` to every peer at once, without a cost model or algorithm choice in
//! NCCL. The time here is tensorwire's closed form of that: all peers progress together, so
//! each GPU is bounded by its own injection — the intra-node share over its NVLink/PCIe at
//! NCCL's figure and the inter-node share through its NIC ("Alltoall cannot aggregate the
//! bandwidth of multiple NICs, so the performance you should see is the performance of a
//! single NIC", sjeaugey, <https://github.com/NVIDIA/nccl-tests/issues/267>).

use super::graph::{gpu_gbs, nic_gbs, nvlink_lanes, Graphs};
use super::tables::{self as t, HW_LATENCY_US as HW};
use super::{Algo, IntraLink, NcclFabric, Proto};

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

/// NCCL's point-to-point chunk, bytes (`computeBuffSizes`, `src/init.cc`): NCCL_P2P_NET_CHUNKSIZE
/// 128 KiB across nodes, NCCL_P2P_NVL_CHUNKSIZE 512 KiB on one node joined by NVLink only,
/// NCCL_P2P_PCI_CHUNKSIZE 128 KiB otherwise (none above Simple's step of 4 MiB / 8 = 512 KiB).
pub fn p2p_chunk(f: &NcclFabric) -> f64 {
    let nvlink_only = f.nodes <= 1 && matches!(f.intra, IntraLink::NvSwitch | IntraLink::NvLink);
    if nvlink_only {
        512.0 * 1024.0
    } else {
        128.0 * 1024.0
    }
}

/// NCCL_P2P_PER_CHANNEL_NET_BW: what one channel to a network peer is expected to carry, GB/s
/// (`src/graph/paths.cc`).
pub const P2P_PER_CHANNEL_NET_GBS: f64 = 14.0;

/// The communicator's most channels per peer (`p2pnChannelsPerPeer`) on `p2p` point-to-point
/// channels ([`p2p_channels`]), NCCL 2.30.7 (`ncclTopoGetNchannels`,
/// `ncclTopoComputeP2pChannelsPerPeer` and `ncclTopoComputeP2pChannels`, `src/graph/paths.cc`):
/// the fewest any peer asks for, rounded up to a power of two. An NVLink peer asks for
/// 2 x its NVLink lanes (NVSwitch: all the GPU's lanes; direct NVLink: tensorwire takes the
/// GPU's lanes shared evenly among its peers, as the node's wiring is not modelled), a PCIe
/// peer for 2, a network peer for `max(local NICs, ceil(their GB/s / 14))`. On one node that
/// is capped at `p2p`; across nodes it is halved while it x `ceil(ranks / 8)` exceeds `p2p`,
/// so that every peer fits in one round of 8-peer batches.
///
/// ```
/// use tensorwire_core::nccl::{alltoall::peer_channel_limit, NcclFabric, Transport};
/// use tensorwire_core::topology::TopologySpec;
/// let spec = TopologySpec::parse("rail:node=dgx-h100").unwrap();
/// let fabric = |ranks| NcclFabric::from_topology(&spec, ranks, spec.host_rate(None).unwrap(), Transport::Rdma).unwrap();
/// // One H100 node: 2 x 18 lanes = 36 -> 64, capped at 32 p2p channels. 10 nodes: a
/// // 400 Gbit/s NIC asks for ceil(50 / 14) = 4, halved to 1 so that 1 x 10 <= 16.
/// assert_eq!((peer_channel_limit(&fabric(8), 32), peer_channel_limit(&fabric(80), 16)), (32, 1));
/// ```
pub fn peer_channel_limit(f: &NcclFabric, p2p: usize) -> usize {
    let gpn = f.gpus_per_node.max(1);
    let mut asked = usize::MAX;
    if gpn > 1 {
        let lanes = nvlink_lanes(f).round() as usize;
        asked = match f.intra {
            IntraLink::NvSwitch => 2 * lanes.max(1),
            IntraLink::NvLink => 2 * (lanes / (gpn - 1)).max(1),
            IntraLink::Pcie => 2,
        };
    }
    if f.nodes > 1 {
        let local_nics = (f.nics_per_node / gpn).max(1);
        let net_gbs = local_nics as f64 * nic_gbs(f);
        let net = local_nics.max((net_gbs.floor() / P2P_PER_CHANNEL_NET_GBS).ceil() as usize);
        asked = asked.min(net);
    }
    let mut per_peer = asked.clamp(1, t::MAX_CHANNELS).next_power_of_two();
    let ranks = f.nodes * gpn;
    if f.nodes > 1 {
        while per_peer * ranks.div_ceil(P2P_PER_BATCH) > p2p && per_peer > 1 {
            per_peer /= 2;
        }
    } else {
        per_peer = per_peer.min(p2p);
    }
    per_peer
}

/// The channels NCCL stripes one peer's send of `bytes_per_peer` bytes over
/// (`scheduleP2pTasksToPlan` and `addP2pToPlan`, `src/enqueue.cc`, NCCL 2.30.7), on `p2p`
/// point-to-point channels: it starts from [`peer_channel_limit`] halved until every rank's
/// share fits the `p2p` channels, never above what the bytes fill at a part of a
/// [`p2p_chunk`] / 8 (one node) or / 2 (across nodes), and doubles, up to the limit, while
/// a channel's part exceeds 32 chunks (one node) or one chunk (across nodes).
///
/// ```
/// use tensorwire_core::nccl::{alltoall::channels_per_peer, NcclFabric, Transport};
/// use tensorwire_core::topology::TopologySpec;
/// let spec = TopologySpec::parse("rail:node=dgx-h100").unwrap();
/// let node = NcclFabric::from_topology(&spec, 8, spec.host_rate(None).unwrap(), Transport::Rdma).unwrap();
/// // nccl-tests' all-to-all of S on 8 GPUs sends S / 8 to each peer: 4 channels up to
/// // S = 512 MiB (64 MiB per peer, 16 MiB = 32 x 512 KiB per channel), then 8, 16, 32.
/// let mib = 1024.0 * 1024.0;
/// let per_peer: Vec<usize> = [32.0, 512.0, 1024.0, 2048.0, 4096.0, 16384.0]
///     .iter()
///     .map(|s| channels_per_peer(&node, 32, s * mib / 8.0))
///     .collect();
/// assert_eq!(per_peer, [4, 4, 8, 16, 32, 32]);
/// ```
pub fn channels_per_peer(f: &NcclFabric, p2p: usize, bytes_per_peer: f64) -> usize {
    if bytes_per_peer.is_nan() || bytes_per_peer <= 0.0 {
        return 1;
    }
    let ranks = (f.nodes * f.gpus_per_node).max(1);
    let most = peer_channel_limit(f, p2p);
    let mut least = most;
    while least * ranks > p2p && least > 1 {
        least /= 2;
    }
    let step = p2p_chunk(f);
    let (min_part, max_part) = if f.nodes > 1 { (step / 2.0, step) } else { (step / 8.0, step * 32.0) };
    let mut channels = least.min((bytes_per_peer / min_part).ceil() as usize).max(1);
    let mut part = min_part.max((bytes_per_peer / channels as f64).ceil());
    while part > max_part && channels <= most / 2 {
        channels *= 2;
        part = (bytes_per_peer / channels as f64).ceil();
    }
    channels
}

/// Seconds for the inter-node share `(n-r)/n` of an all-to-all of `bytes` per rank to leave
/// each GPU of the smallest node (`r` GPUs: all `g` where the ranks fill whole nodes, fewer on
/// a partial last node) through its NICs at their line rate (the node's NICs shared by its
/// GPUs): what no calibrated efficiency can beat. 0 on one node.
pub fn nic_line_seconds(f: &NcclFabric, bytes: f64) -> f64 {
    let n = f.ranks;
    if f.nodes <= 1 || n <= 1 {
        return 0.0;
    }
    let (r, nics) = f.smallest_node();
    let inter_share = bytes * (n - r) as f64 / n as f64;
    inter_share / (nics as f64 * f.nic_bytes_per_s / r as f64)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::Transport;
    use crate::topology::TopologySpec;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn channels_per_peer_stay_within_the_planners_bounds_and_grow_with_bytes(
            node in prop::sample::select(crate::topology::node::NODE_NAMES.to_vec()),
            ranks in 2usize..200,
            p2p_log in 0u32..7,
            bytes in 1.0f64..1e11,
            k in 1.0f64..64.0,
        ) {
            let spec = TopologySpec::parse(&format!("rail:node={node}")).unwrap();
            let f = NcclFabric::from_topology(&spec, ranks, spec.host_rate(None).unwrap(), Transport::Rdma).unwrap();
            let p2p = 1usize << p2p_log;
            let most = peer_channel_limit(&f, p2p);
            prop_assert!(most.is_power_of_two() && most <= p2p.max(1), "{most} {p2p}");
            let (small, large) = (channels_per_peer(&f, p2p, bytes), channels_per_peer(&f, p2p, bytes * k));
            prop_assert!(small >= 1 && large <= most, "{small} {large} {most}");
            prop_assert!(small <= large, "{small} {large}");
        }
    }
}
