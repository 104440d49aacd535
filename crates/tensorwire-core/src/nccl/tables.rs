//! NCCL 2.30.7's constants, as numbers (tag v2.30.7-1 of NVIDIA/nccl; paraphrased in
//! `docs/design/nccl-research.md` §1). Units are NCCL's: bandwidths in GB/s (1e9 B/s),
//! latencies in microseconds. Indices follow NCCL: algorithms in [`super::Algo::ALL`] order
//! (tree, ring, collnetdirect, collnetchain, nvls, nvlstree, pat), protocols LL, LL128,
//! Simple, architectures Volta, Ampere, Hopper ([`arch_index`]), node-count columns N1 (one
//! node), N2 (two), N4 (more than two) ([`nodes_index`]).

use super::Arch;

/// Index of `arch` in the per-architecture tables (NCCL's compCapIndex; Blackwell is not
/// modelled).
pub fn arch_index(arch: Arch) -> usize {
    match arch {
        Arch::Sm70 => 0,
        Arch::Sm80 => 1,
        Arch::Sm90 => 2,
    }
}

/// Column of a per-node-count table: 0 on one node, 1 on two, 2 beyond (NCCL's index2).
pub fn nodes_index(nodes: usize) -> usize {
    nodes.clamp(1, 3) - 1
}

/// Base latency per algorithm and protocol, µs (`baseLatencies`,
/// `src/graph/tuning.cc`, `ncclTunerConstantsDefaults`).
pub const BASE_LATENCY_US: [[f64; 3]; 7] = [
    [6.8, 14.0, 8.4], // tree
    [6.6, 14.0, 8.4], // ring
    [0.0, 0.0, 0.0],  // collnetdirect
    [0.0, 0.0, 0.0],  // collnetchain
    [0.0, 0.0, 0.0],  // nvls
    [0.0, 0.0, 0.0],  // nvlstree
    [8.0, 8.0, 8.0],  // pat
];

/// Hardware type of a hop in [`HW_LATENCY_US`] (NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
pub const HW_NVLINK: usize = 0;
/// PCIe hop.
pub const HW_PCI: usize = 1;
/// Network hop.
pub const HW_NET: usize = 2;

/// Latency per hop by hardware, algorithm and protocol, µs (`hwLatencies`,
/// `src/graph/tuning.cc`). Zero where NCCL has none (the pair is unused).
pub const HW_LATENCY_US: [[[f64; 3]; 7]; 3] = [
    // NVLink
    [
        [0.6, 1.25, 4.0],
        [0.6, 1.9, 3.4],
        [0.0, 0.0, 3.7],
        [0.0, 0.0, 2.8],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 25.0],
        [0.0, 0.0, 4.0],
    ],
    // PCI
    [
        [1.0, 1.9, 4.0],
        [1.0, 2.5, 5.7],
        [0.0, 0.0, 3.7],
        [0.0, 0.0, 2.8],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 4.0],
    ],
    // NET
    [
        [5.0, 8.5, 14.0],
        [2.7, 4.0, 14.0],
        [0.0, 0.0, 31.0],
        [0.0, 0.0, 30.0],
        [0.0, 0.0, 18.0],
        [0.0, 0.0, 20.9],
        [0.0, 0.0, 14.0],
    ],
];

/// Cap on LL bus bandwidth, GB/s (`llMaxBws`, `src/graph/tuning.cc`). On one node the row
/// is the GPU architecture; on several nodes it is the CPU vendor: row 0 Intel (and other),
/// row 1 AMD (NCCL's comment: "for multi-node, we look at CPU type").
pub const LL_MAX_BW: [[f64; 3]; 3] = [[39.0, 39.0, 20.4], [87.7, 22.5, 19.0], [141.0, 45.0, 35.0]];

/// Per-channel cap of ring LL128, GB/s, by arch and node column (`perChMaxRingLL128Bws`).
pub const PER_CH_MAX_RING_LL128_BW: [[f64; 3]; 3] = [[20.0, 20.0, 20.0], [20.0, 20.0, 20.0], [36.7, 36.7, 36.7]];

/// Per-channel cap of tree LL128, GB/s (`perChMaxTreeLL128Bws`).
pub const PER_CH_MAX_TREE_LL128_BW: [[f64; 3]; 3] = [[20.0, 20.0, 20.0], [20.0, 20.0, 20.0], [36.7, 36.7, 29.0]];

/// Per-channel cap of tree all-reduce, GB/s (`perChMaxTreeBws`).
pub const PER_CH_MAX_TREE_BW: [[f64; 3]; 3] = [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [38.7, 41.4, 36.0]];

/// Per-channel cap of NVLS tree, GB/s (`perChMaxNVLSTreeBws`).
pub const PER_CH_MAX_NVLS_TREE_BW: [[f64; 3]; 3] = [[26.5, 18.5, 10.0], [24.0, 23.6, 17.8], [0.0, 57.7, 45.5]];

/// NVLink SHARP efficiency by arch (`nvlsEfficiency`, `src/graph/tuning.cc`): 0 disables
/// NVLS before Hopper, 0.85 on Hopper.
pub const NVLS_EFFICIENCY: [f64; 3] = [0.0, 0.0, 0.85];

/// NCCL's bandwidth of one NVLink lane per direction by arch, GB/s (SM70_NVLINK_BW 20,
/// SM80_NVLINK_BW 20, SM90_NVLINK_BW 20.6 in `src/graph/topo.h`). The line
/// rate of an NVLink2/3/4 lane is 25 GB/s per direction, so NCCL counts 0.8 (V100, A100)
/// and 0.824 (H100) of it: A100 12 lanes = 240 GB/s of 300, H100 18 lanes = 370.8 of 450.
pub const NVLINK_LANE_GBS: [f64; 3] = [20.0, 20.0, 20.6];

/// Line rate of one NVLink2/3/4 lane per direction, GB/s (NVIDIA V100/A100/H100 datasheets:
/// 300/600/900 GB/s bidirectional over 6/12/18 links = 25 GB/s each way).
pub const NVLINK_LANE_LINE_GBS: f64 = 25.0;

/// NCCL's PCIe x16 bandwidth by the generation each arch ships with, GB/s: width x the
/// generation's value / 80 (`src/graph/topo.cc`, `xml.h`'s PCI generation table: Gen3
/// 60, Gen4 120, Gen5 240; PCI_BW 12 = Gen3 x16 in `topo.h`), i.e. 12, 24, 48: 0.75 of the raw 16/32/64 GB/s (8/16/32 GT/s x
/// 16 lanes). V100 (p3.16xlarge) is Gen3, A100 Gen4, H100 Gen5. This is what a GPU's path
/// to its NIC runs at in NCCL's search.
pub const PCIE_X16_GBS: [f64; 3] = [12.0, 24.0, 48.0];

/// NCCL's PCIe figure relative to the raw x16 rate (see [`PCIE_X16_GBS`]).
pub const PCIE_EFFICIENCY: f64 = 0.75;

/// Candidate per-channel speeds of the intra-node search before sm90, GB/s, tried in
/// descending order (`speedArrayIntra`, `src/graph/search.cc`).
pub const SPEED_INTRA: &[f64] = &[40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0];

/// Candidate per-channel speeds of the multi-node search before sm90 (`speedArrayInter`).
pub const SPEED_INTER: &[f64] =
    &[48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2, 0.24, 0.12];

/// sm90 intra-node speeds (`sm90SpeedArrayIntra`).
pub const SM90_SPEED_INTRA: &[f64] = &[60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0];

/// sm90 multi-node speeds (`sm90SpeedArrayInter`).
pub const SM90_SPEED_INTER: &[f64] =
    &[48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24, 0.12];

/// The speed list the search uses for `arch`, inside one node or across nodes.
pub fn speeds(arch: Arch, multi_node: bool) -> &'static [f64] {
    match (arch, multi_node) {
        (Arch::Sm90, false) => SM90_SPEED_INTRA,
        (Arch::Sm90, true) => SM90_SPEED_INTER,
        (_, false) => SPEED_INTRA,
        (_, true) => SPEED_INTER,
    }
}

/// NCCL's MAXCHANNELS (`src/include/device.h`): the most channels a communicator runs.
pub const MAX_CHANNELS: usize = 64;

/// Most channels the ring/tree search looks for (MAXCHANNELS / 2, `src/graph/search.cc`).
pub const MAX_SEARCH_CHANNELS: usize = MAX_CHANNELS / 2;

/// Most GPUs (channels) in an NVLS graph (NCCL_MAX_NVLS_ARITY, `src/include/device.h`).
pub const MAX_NVLS_ARITY: usize = 32;

/// NVLS channels (CTAs) on sm90 (NVLS_NCHANNELS_SM90, `src/transport/nvls.cc`).
pub const NVLS_CHANNELS_SM90: usize = 16;

/// Most local ranks of CollNet (Direct arity + 1 / chain), `src/graph/tuning.cc` and
/// `search.cc` (NCCL_MAX_DIRECT_ARITY 7).
pub const MAX_COLLNET_LOCAL_RANKS: usize = 8;

/// Bytes per thread before NCCL adds a channel or threads, by protocol (LL, LL128, Simple):
/// NCCL_LL_THREAD_THRESHOLD 8 (x nRanks for ring), NCCL_LL128_THREAD_THRESHOLD 8,
/// NCCL_SIMPLE_THREAD_THRESHOLD 64 (`src/include/comm.h`); CollNet Simple 512.
pub const THREAD_THRESHOLD: [usize; 3] = [8, 8, 64];

/// Threads per channel by protocol (NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640,
/// NCCL_SIMPLE_MAX_NTHREADS 512; `src/include/device.h`).
pub const MAX_THREADS: [usize; 3] = [512, 640, 512];

/// CollNet's threads per channel (NCCL_MAX_NTHREADS 640) and its Simple thread threshold,
/// bytes per thread (512; `ncclTopoTuneModel`), in place of the protocol's.
pub const COLLNET_THREADS: usize = 640;
pub const COLLNET_THREAD_THRESHOLD: usize = 512;

/// Per-network-step overhead of rings across nodes, µs, for Intel (and other) and AMD hosts
/// (`getNetOverhead`, `src/graph/tuning.cc`); x3 for Simple.
pub const NET_OVERHEAD_US: [f64; 2] = [1.0, 2.0];

/// Latency factor of multi-node ring Simple all-reduce once each channel carries >= 64
/// bytes per rank ("plateau effect of ring", `ncclTopoGetAlgoTime`): before sm80, from sm80.
pub const RING_PLATEAU: [f64; 2] = [1.9, 1.4];

/// Correction of tree all-reduce bandwidth by size, protocol x log2(bytes / 64) for 64 B to
/// 256 MiB (`treeCorrectionFactor`, `src/graph/tuning.cc`).
pub const TREE_CORRECTION: [[f64; 24]; 3] = [
    [
        1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0,
        1.0, 1.0,
    ],
    [
        1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0,
        1.0, 1.0,
    ],
    [
        0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9,
        0.9, 0.9,
    ],
];

/// Ring LL carries 8 data bytes per 16-byte line (`src/device/prims_ll.h`): x0.5.
pub const LL_RING_FACTOR: f64 = 0.5;
/// LL128 carries 120 data bytes per 128-byte line: NCCL rounds it to 0.92 for rings and
/// tree all-reduce.
pub const LL128_FACTOR: f64 = 0.92;
/// Tree LL: bus bandwidth / 3.8.
pub const TREE_LL_DIVISOR: f64 = 3.8;
/// PAT: x0.75.
pub const PAT_FACTOR: f64 = 0.75;

/// NCCL's socket transport (`Transport::Tcp`) relative to NCCL's modelled network
/// bandwidth: 1.7 GB/s busbw measured with NCCL's sockets over a 25 Gbit/s NIC (2 Azure VMs of
/// 4 GPUs, ring/Simple on 2 channels, NCCL_NSOCKS_PERTHREAD=2, NCCL_SOCKET_NTHREADS=4;
/// NVIDIA/nccl-tests#83, <https://github.com/NVIDIA/nccl-tests/issues/83>), where NCCL's model
/// of that NIC gives 3.0 GB/s (3.125 GB/s rounded down to its search's speed list, the 0.96 of
/// `fabric.rs`): 1.7 / 3.0 = 0.567. The same measurement as the flow-level `tcp` preset's
/// goodput (1.7 / 3.125 of the line rate), so both give 1.7 GB/s busbw on that NIC. (It was
/// 1.7 / 2.5 = 0.68, 2.5 GB/s being the 21 Gbit/s ntttcp measured both ways, which the
/// thread's author expected, not NCCL's figure: 2.0 GB/s busbw on a 25 Gbit/s NIC.)
pub const TCP_EFFICIENCY: f64 = 1.7 / 3.0;

/// Latency the socket transport adds per collective across nodes, seconds. NCCL models
/// none; a message through the kernel TCP stack costs the `tcp` transport preset's 20 us
/// per message (Guo 2019, seed 004's kernel-stack figure, the same one the flow model
/// uses), which is an illustrative value rather than a measurement of NCCL's sockets:
/// calibrate `inter_latency=` from the cluster's own nccl-tests log.
pub const TCP_EXTRA_LATENCY_S: f64 = 20e-6;
