//! NCCL's *execution* time beyond its tuning model: the pipeline fill and drain.
//!
//! NCCL chooses an algorithm and protocol by `latency + bytes / bandwidth`
//! ([`super::tuning`]), but runs it as a pipeline of chunks through fixed-depth buffers, and
//! a pipeline streams at its bandwidth only once it is full. The time to fill it (and drain
//! it at the end) is `depth x` the time of one pipeline unit at NCCL's per-channel
//! bandwidth, where a unit's size is the chunk NCCL picks for the operation
//! (`calcCollChunking`, `src/enqueue.cc`, tag v2.30.7-1): chunks shrink for small
//! operations, so the fill shrinks with them; at NCCL's largest chunk it is a constant,
//! so for large buffers the time tends to the tuning model's `bytes / bandwidth`.
//!
//! Units and depths, all from NCCL's source (`docs/collectives.md`, "Execution time"):
//! - **Ring** (`ncclPatternRing`, `RingTwice`): the unit is one FIFO step of a channel's
//!   connection. Simple: a chunk is `CHUNKSTEPS` = NCCL_STEPS/2 steps of `buffSize /
//!   NCCL_STEPS` (4 MiB / 8 = 512 KiB, `DEFAULT_BUFFSIZE` in `src/init.cc`), so at most 2
//!   MiB; an operation smaller than one loop (`nChannels x nRanks x chunk`) runs one partial
//!   loop whose chunk is `bytes / (nChannels x nRanks)` (`runRing`, `src/device/
//!   all_reduce.h`). LL and LL128: a chunk is one step (`chunkSteps` = 1): LL 32 KiB of data
//!   (`DEFAULT_LL_BUFFSIZE` / 8 / 2), LL128 120/128 of 4.7 MiB / 8. The depth depends on
//!   what carries the ring's steps:
//!   - Across nodes, and for LL and LL128 everywhere, it is the FIFO's NCCL_STEPS = 8 steps
//!     (`src/include/device.h`): a network step is posted by the proxy thread once the GPU
//!     marks it ready, so a connection carries at full rate only once its 8 slots are in
//!     flight.
//!   - Simple inside a node (P2P over NVLink/NVSwitch or PCIe, no proxy) fills one slice:
//!     `SLICESTEPS` = NCCL_STEPS/4 = 2 steps (`src/include/collectives.h`). `genericOp`
//!     (`src/device/prims_simple.h`) moves a chunk as 2 slices, and a slice waits only for the
//!     previous rank's same slice of the previous step. A hop's latency (3.4 us,
//!     `hwLat[NVLINK][RING][SIMPLE]`) is below a slice's time from about 16 MiB up (8.7 us at
//!     32 MiB on 8 A100s), so the ring streams after its first slice (docs/collectives.md,
//!     "What was checked"). Below that the hop latency shows, which this fill leaves out.
//! - **NVLS** (single-node all-reduce, and across nodes with CollNet): the unit is one loop
//!   of a channel, `nHeads x chunk` with NCCL's NVLS chunk (128 KiB, `NCCL_NVLS_CHUNKSIZE`
//!   in `src/transport/nvls.cc`, shrunk to 64/32/16 KiB for operations under 64/8/2 loops,
//!   `calcCollChunking`); the depth is the warp groups a chunk passes through minus one:
//!   scatter, reduce-and-broadcast (multimem), gather (`RunWorkColl<AllReduce, NVLS>`,
//!   `src/device/all_reduce.h`): 3 stages, fill 2 loops.
//! - **NVLS tree**: scatter, reduce-and-send-to-network, receive-and-broadcast, gather (4
//!   stages, fill 3 loops) with NVLS tree's chunk (`nvlsTreeMaxChunkSize`: 64 KiB from 4
//!   nodes, else 128 KiB; shrunk by `calcCollChunking`'s NVLS-tree rule).
//! - **Tree, PAT, CollNet**: one chunk of `buffSize / NCCL_STEPS` per step (Simple 512 KiB
//!   (CollNet chain 256 KiB, PAT halved while under 32/16 chunks per channel), LL 32 KiB,
//!   LL128 as above), FIFO depth NCCL_STEPS; shrunk as `calcCollChunking` shrinks them for
//!   operations of few chunks per channel: tree LL128 halved while under `nstepsLL128 x
//!   64 / ppn` chunks (to 128 KiB) and `x 16 / ppn` (to 32 KiB), `nstepsLL128 = 1 +
//!   log2i(nNodes) + 0.1 ppn`; CollNet chain while under `ppn x 64 / x 8 / x 1` (to 128 /
//!   64 / 32 KiB); CollNet direct, whose channel's bytes are split over its `nHeads` heads,
//!   while a head holds under `depth x 64 / x 8 / x 8` chunks (to 128 / 64 / 32 KiB; depth 2
//!   with peers in the node, else 1; NCCL repeats `x 8`).
//! - **Tree inside one node, Simple**: the tree is a chain of the node's ranks
//!   (`ncclTopoPreset`, `src/graph/connect.cc`), and all-reduce runs it with
//!   `ProtoSimple<1, 1>` (a chunk is one slice of one step, `calcCollChunking` keeps 512 KiB)
//!   in `runTreeSplit` (`src/device/all_reduce.h`): half the threads reduce up the chain while
//!   the other half broadcast down it, and the root turns each chunk around. A chunk is
//!   forwarded once its whole step has arrived, so a chunk crosses `n - 1` hops up and
//!   `n - 1` down, one step each: the fill is `2(n - 1) - 1` steps behind the first.
//!
//! Where the depth is a FIFO's slots (ring, tree, PAT, CollNet), the fill never exceeds the
//! operation's own transfer time: a connection with fewer steps than its slots never fills,
//! and what it then waits for is the round trip of a step, a latency that NCCL's latency
//! term already covers; so `0 <= fill <= bytes / bandwidth`. Where the depth counts *stages*
//! that every unit passes through in turn (NVLS and NVLS tree: warp groups joined by FIFOs),
//! the wait is work on the unit's bytes, not a latency: one unit takes `stages` unit times
//! however few units there are, so an operation of `u` units takes `(max(u, 1) + depth)` unit
//! times and the fill is `depth` unit times even below `depth` units (at most `depth x` the
//! transfer). On 8 H100 this is what separates 2 MiB (one loop of 16 KiB chunks: 3 unit
//! times for 1 of data) from 4 MiB (two loops: 4 for 2).
//!
//! The same shape counts the **steps** a channel runs in sequence ([`Shape::steps`]): each a
//! hand-off of a chunk between two GPUs, which costs a synchronisation whatever its bytes. What
//! one costs is the hardware's and NCCL publishes no figure for it, so the model adds none;
//! a calibration measures it (`intra_step=`, `inter_step=`; `tensorwire calibrate`).
//!
//! No constant here is fitted to a measurement: the depths and sizes are NCCL's. What the
//! model leaves out is said in `docs/collectives.md`.

use super::{Algo, NcclFabric, Proto};
use crate::collectives::Collective;

/// NCCL_STEPS: slots of each connection's FIFO (`src/include/device.h`).
pub const NCCL_STEPS: f64 = 8.0;

/// Simple's buffer per connection, bytes (`DEFAULT_BUFFSIZE`, 4 MiB, `src/init.cc`).
pub const SIMPLE_BUFFSIZE: f64 = 4.0 * 1024.0 * 1024.0;

/// LL's buffer, bytes (`DEFAULT_LL_BUFFSIZE` = NCCL_LL_LINES_PER_THREAD 8 x
/// NCCL_LL_MAX_NTHREADS 512 x NCCL_STEPS x 16-byte lines, `src/init.cc`); half of it is data.
pub const LL_BUFFSIZE: f64 = 8.0 * 512.0 * 8.0 * 16.0;

/// LL128's buffer, bytes (`DEFAULT_LL128_BUFFSIZE` = NCCL_LL128_ELEMS_PER_THREAD 120 x
/// NCCL_LL128_MAX_NTHREADS 640 x NCCL_STEPS x 8, `src/init.cc`); 120 of 128 bytes are data.
pub const LL128_BUFFSIZE: f64 = 120.0 * 640.0 * 8.0 * 8.0;

/// Ring Simple's chunk in FIFO steps (ALLREDUCE/ALLGATHER/REDUCESCATTER_CHUNKSTEPS =
/// NCCL_STEPS / 2, `src/include/collectives.h`).
pub const RING_CHUNK_STEPS: f64 = NCCL_STEPS / 2.0;

/// Ring Simple's slice in FIFO steps (ALLREDUCE/ALLGATHER/REDUCESCATTER_SLICESTEPS =
/// NCCL_STEPS / 4, `src/include/collectives.h`): the fill of a Simple ring inside a node.
pub const RING_SLICE_STEPS: f64 = NCCL_STEPS / 4.0;

/// NCCL's default NVLS chunk, bytes (`NCCL_NVLS_CHUNKSIZE` 128 KiB, `src/transport/nvls.cc`).
pub const NVLS_CHUNK: f64 = 128.0 * 1024.0;

/// Pipeline stages of NVLS all-reduce inside a node (scatter, reduce+broadcast, gather).
pub const NVLS_STAGES: f64 = 3.0;

/// Pipeline stages of NVLS tree (scatter, reduce+send, receive+broadcast, gather).
pub const NVLS_TREE_STAGES: f64 = 4.0;

/// One FIFO step's data for protocol `p`, bytes (`buffSize / NCCL_STEPS`, LL's half and
/// LL128's 120/128 of it data).
fn step_data(p: Proto) -> f64 {
    match p {
        Proto::Ll => LL_BUFFSIZE / NCCL_STEPS / 2.0,
        Proto::Ll128 => LL128_BUFFSIZE / NCCL_STEPS * 120.0 / 128.0,
        Proto::Simple => SIMPLE_BUFFSIZE / NCCL_STEPS,
    }
}

/// NVLS's chunk for a channel's share `per_channel` of the buffer, with `heads` heads
/// (`calcCollChunking`'s NVLS rule: halve to 64 KiB under 64 loops, 32 KiB under 8, 16 KiB
/// under 2).
fn nvls_chunk(per_channel: f64, heads: f64) -> f64 {
    let mut c = NVLS_CHUNK;
    for (loops, to) in [(64.0, 65536.0), (8.0, 32768.0), (2.0, 16384.0)] {
        if per_channel < loops * heads * c && c > to {
            c = to;
        }
    }
    c
}

/// NVLS tree's chunk (`nvlsTreeMaxChunkSize`: 64 KiB from 4 nodes, else the NVLS chunk;
/// halved under 32/16/4/1 loops to 256/128/64/32 KiB).
fn nvls_tree_chunk(per_channel: f64, heads: f64, nodes: usize) -> f64 {
    let mut c: f64 = if nodes >= 4 { 65536.0 } else { NVLS_CHUNK };
    for (loops, to) in [(32.0, 262144.0), (16.0, 131072.0), (4.0, 65536.0), (1.0, 32768.0)] {
        if per_channel < loops * heads * c && c > to {
            c = to;
        }
    }
    c
}

/// `chunk` halved, rule by rule, while a channel's `per_channel` bytes hold fewer than
/// `chunks` whole chunks and the chunk is above `floor`: `calcCollChunking`'s `while (nBytes /
/// (nChannels * chunkSize) < chunks && chunkSize > floor) chunkSize /= 2` (for PAT, `chunkSize
/// * nChannels * 32 > nBytes`, the same for a whole number of chunks).
fn halved_below(mut chunk: f64, per_channel: f64, rules: &[(f64, f64)]) -> f64 {
    for &(chunks, floor) in rules {
        while (per_channel / chunk).floor() < chunks && chunk > floor {
            chunk /= 2.0;
        }
    }
    chunk
}

/// The fill, in steps, of a Simple tree all-reduce on a chain of `ranks` ranks (one node):
/// a step crosses `ranks - 1` hops up and `ranks - 1` down, forwarded whole at each.
fn tree_chain_depth(ranks: f64) -> f64 {
    (2.0 * (ranks - 1.0) - 1.0).max(1.0)
}

/// The shape of NCCL's pipeline for one operation on one channel: how many pipeline units
/// the channel runs in sequence, how many of them fill the pipeline before it streams, and
/// how many hand-offs between two GPUs each unit is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Pipeline units one channel runs (ring: FIFO steps; NVLS and NVLS tree: loops of
    /// `nHeads` chunks; tree, PAT, CollNet: chunks), > 0.
    pub units: f64,
    /// Units that fill the pipeline before it streams (module doc).
    pub depth: f64,
    /// Hand-offs per unit: the times a GPU waits for a peer's data and signals its own, which
    /// each cost a synchronisation over the link whatever the bytes. A Simple ring hands off
    /// a slice (SLICESTEPS = 2 FIFO steps, so 1/2 per step); LL and LL128 one step; NVLS
    /// copies a loop's chunk to and from each of its `nHeads` heads one after another
    /// (`ScatterGatherOp`, `src/device/prims_simple.h`): `nHeads` per loop; tree, PAT and
    /// CollNet one chunk.
    pub handoffs_per_unit: f64,
    /// The depth counts stages every unit passes through in turn (NVLS, NVLS tree), not a
    /// FIFO's slots (ring, tree, PAT, CollNet): the fill is then `depth` units however few
    /// units there are, where a FIFO's is at most the transfer (module doc).
    pub staged: bool,
}

impl Shape {
    /// Hand-offs one channel makes in sequence over the operation: what a calibrated cost
    /// per step (`intra_step=`, `inter_step=`) multiplies. At least one unit's: a channel
    /// whose share is below one chunk still hands that partial chunk off.
    pub fn steps(&self) -> f64 {
        self.units.max(1.0) * self.handoffs_per_unit
    }
}

/// The pipeline [`Shape`] of `(algo, proto)` running `collective` over `bytes` on `channels`
/// channels of `fabric`, from the chunk NCCL picks for the size (module doc); `collnet_heads`
/// is CollNet direct's heads, over which each channel's bytes are split. None where nothing
/// runs through NCCL's collective pipeline: no bytes, all-to-all (point-to-point) and
/// broadcast (not modelled).
pub fn shape(
    fabric: &NcclFabric,
    collective: Collective,
    algo: Algo,
    proto: Proto,
    bytes: f64,
    channels: usize,
    collnet_heads: usize,
) -> Option<Shape> {
    if bytes.is_nan() || bytes <= 0.0 || matches!(collective, Collective::AllToAll | Collective::Broadcast) {
        return None;
    }
    let ranks = (fabric.nodes * fabric.gpus_per_node).max(1) as f64;
    let heads = fabric.gpus_per_node as f64;
    let ch = channels.max(1) as f64;
    let per_channel = bytes / ch;
    // (units of the operation per channel, depth in units, hand-offs per unit, whether the
    // depth counts stages) where a unit is the bytes of the buffer one channel covers per
    // pipeline unit.
    let (units, depth, handoffs_per_unit, staged) = match algo {
        Algo::Ring => {
            // A loop covers nRanks chunks; steps per loop: 2(n-1) for all-reduce, n-1 else.
            let steps_per_loop = match collective {
                Collective::AllReduce => 2.0 * (ranks - 1.0),
                _ => ranks - 1.0,
            };
            let (chunk, chunk_steps) = match proto {
                Proto::Simple => (step_data(proto) * RING_CHUNK_STEPS, RING_CHUNK_STEPS),
                _ => (step_data(proto), 1.0),
            };
            // One partial loop below a full one: its chunk is the channel's share / nRanks.
            let chunk = chunk.min(per_channel / ranks);
            let loops = per_channel / (ranks * chunk);
            // Inside a node, Simple streams after one slice; the network's proxy-driven
            // steps, and LL/LL128 everywhere, fill the FIFO (module doc).
            let depth = if fabric.nodes <= 1 && proto == Proto::Simple { RING_SLICE_STEPS } else { NCCL_STEPS };
            let handoffs = if proto == Proto::Simple { 1.0 / RING_SLICE_STEPS } else { 1.0 };
            (loops * steps_per_loop * chunk_steps, depth, handoffs, false)
        }
        Algo::Nvls => {
            let chunk = nvls_chunk(per_channel, heads);
            (per_channel / (heads * chunk), NVLS_STAGES - 1.0, heads, true)
        }
        Algo::NvlsTree => {
            let chunk = nvls_tree_chunk(per_channel, heads, fabric.nodes);
            (per_channel / (heads * chunk), NVLS_TREE_STAGES - 1.0, heads, true)
        }
        Algo::CollNetDirect => {
            // Each channel's bytes are split over the heads; a head's chunk halves under
            // depth x 64, x 8 and x 8 chunks (NCCL repeats x 8), down to 128 / 64 / 32 KiB,
            // depth being 2 with peers in the node (leaves to and from the heads), else 1.
            let per_head = per_channel / collnet_heads.max(1) as f64;
            let depth = if fabric.gpus_per_node > 1 { 2.0 } else { 1.0 };
            let rules = [(depth * 64.0, 131072.0), (depth * 8.0, 65536.0), (depth * 8.0, 32768.0)];
            let chunk = halved_below(step_data(proto), per_head, &rules);
            (per_head / chunk, NCCL_STEPS, 1.0, false)
        }
        Algo::Tree | Algo::Pat | Algo::CollNetChain => {
            let mut chunk = step_data(proto);
            if algo == Algo::CollNetChain {
                // Under depth x 64 / x 8 / x 1 chunks a channel, down to 128 / 64 / 32 KiB, depth
                // being the chain's ranks per node.
                let depth = fabric.gpus_per_node.max(1) as f64;
                let rules = [(depth * 64.0, 131072.0), (depth * 8.0, 65536.0), (depth, 32768.0)];
                chunk = halved_below(chunk.min(256.0 * 1024.0), per_channel, &rules);
            }
            if algo == Algo::Tree && proto == Proto::Ll128 {
                // Under nstepsLL128 x 64 / ppn chunks a channel (down to 128 KiB), then x 16 /
                // ppn (down to 32 KiB): NCCL's estimate of the tree's depth, nstepsLL128 = 1 +
                // log2i(nNodes) + 0.1 ppn.
                let ppn = ranks / fabric.nodes.max(1) as f64;
                let nsteps = 1.0 + super::tuning::log2i(fabric.nodes) + 0.1 * ppn;
                chunk = halved_below(
                    chunk,
                    per_channel,
                    &[(nsteps * 64.0 / ppn, 131072.0), (nsteps * 16.0 / ppn, 32768.0)],
                );
            }
            if algo == Algo::Pat {
                // Under 32 (all-gather) or 16 (reduce-scatter) chunks a channel, down to 64 KiB.
                let times = if collective == Collective::AllGather { 32.0 } else { 16.0 };
                chunk = halved_below(chunk, per_channel, &[(times, 65536.0)]);
            }
            // A chain inside one node forwards whole steps up and down it (module doc).
            let chain = algo == Algo::Tree && fabric.nodes <= 1 && proto == Proto::Simple;
            let depth = if chain { tree_chain_depth(ranks) } else { NCCL_STEPS };
            (per_channel / chunk, depth, 1.0, false)
        }
    };
    (units.is_finite() && units > 0.0).then_some(Shape { units, depth, handoffs_per_unit, staged })
}

/// The pipeline's fill and drain, seconds, of an operation of pipeline `shape` whose transfer
/// takes `wire_s` seconds at NCCL's modelled bandwidth (`bytes / bandwidth`): `depth x` the
/// time of one unit (a partial unit's time below one unit). A FIFO's fill is never more than
/// the transfer (a connection with fewer steps than its slots never fills), so `0 <= fill <=
/// wire_s`; a stage pipeline's is `depth` units whatever the units, so `0 <= fill <= depth x
/// wire_s`. At NCCL's largest chunk it is a constant (module doc). No shape (all-to-all,
/// broadcast, no bytes): 0.
pub fn fill_seconds(shape: Option<Shape>, wire_s: f64) -> f64 {
    match shape {
        // (max(u, 1) + depth) unit times in all: the fill is depth of them (module doc).
        Some(s) if wire_s > 0.0 && s.staged => wire_s * s.depth / s.units.max(1.0),
        Some(s) if wire_s > 0.0 => wire_s * s.depth.min(s.units) / s.units,
        _ => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::{choose, NcclOptions, Transport};
    use crate::topology::TopologySpec;
    use proptest::prelude::*;

    const MIB: f64 = 1024.0 * 1024.0;

    /// The fill of `(a, p)` over `bytes` on `ch` channels whose transfer takes `wire` s.
    fn fill(f: &NcclFabric, c: Collective, a: Algo, p: Proto, bytes: f64, ch: usize, wire: f64) -> f64 {
        fill_seconds(shape(f, c, a, p, bytes, ch, 8), wire)
    }

    fn rail(node: &str, ranks: usize) -> NcclFabric {
        let spec = TopologySpec::parse(&format!("rail:node={node}")).unwrap();
        NcclFabric::from_topology(&spec, ranks, spec.host_rate(None).unwrap(), Transport::Rdma).unwrap()
    }

    #[test]
    fn ring_simple_below_one_loop_fills_a_fixed_share() {
        // One partial loop: 2(n-1) steps x CHUNKSTEPS units, whatever the size below
        // nChannels x nRanks x 2 MiB. Inside one node Simple fills one slice (2 steps): 2 / 56
        // of the transfer on 8 ranks; on 2 nodes (16 ranks) the network's FIFO, 8 / 120.
        for (ranks, depth) in [(8usize, RING_SLICE_STEPS), (16, NCCL_STEPS)] {
            let f = rail("dgx-a100", ranks);
            let units = 2.0 * (ranks as f64 - 1.0) * RING_CHUNK_STEPS;
            for mib in [32.0, 64.0, 128.0] {
                let fill = fill(&f, Collective::AllReduce, Algo::Ring, Proto::Simple, mib * MIB, 24, 1e-3);
                assert!((fill - 1e-3 * depth / units).abs() < 1e-15, "{ranks} {mib} {fill}");
            }
        }
    }

    #[test]
    fn only_simple_inside_a_node_fills_one_slice() {
        // The same partial loop on one node: LL and LL128 (one step per chunk, no slices) keep
        // the FIFO's depth; Simple's fill is a quarter of it. All-gather: (n-1) x 4 units.
        let f = rail("dgx-h100", 4);
        let fill_of = |p| fill(&f, Collective::AllGather, Algo::Ring, p, 64.0 * MIB, 24, 1e-3);
        assert!((fill_of(Proto::Simple) - 1e-3 * 2.0 / 12.0).abs() < 1e-15);
        // LL's chunk (32 KiB of data) is larger than this loop's share: one partial loop of
        // (n-1) steps, filled to its 8 slots, capped at the transfer.
        let ll = fill(&f, Collective::AllGather, Algo::Ring, Proto::Ll, 96.0 * 1024.0, 24, 1e-3);
        assert!((ll - 1e-3).abs() < 1e-15, "{ll}");
        assert!(fill_of(Proto::Ll128) > fill_of(Proto::Simple));
    }

    #[test]
    fn tree_ll128_and_collnet_chunks_shrink_as_calc_coll_chunking_shrinks_them() {
        // Tree LL128 on 8 nodes of 8: nstepsLL128 = 1 + 3 + 0.8 = 4.8. 1 MiB on 2 channels
        // (512 KiB each): halved while under 4.8 x 64 / 8 = 38.4 chunks down to 128 KiB
        // (576,000 -> 72,000 B), then while under 4.8 x 16 / 8 = 9.6 (-> 36,000 B: 14
        // chunks). 1 GiB keeps the full chunk (mid-way it stops early).
        let f = rail("dgx-h100", 64);
        let units = |bytes: f64| shape(&f, Collective::AllReduce, Algo::Tree, Proto::Ll128, bytes, 2, 8).unwrap().units;
        assert!((units(MIB) - 0.5 * MIB / 36_000.0).abs() < 1e-9, "{}", units(MIB));
        assert!((units(1024.0 * MIB) - 512.0 * MIB / 576_000.0).abs() < 1e-9);
        // 8 MiB: 4 MiB a channel holds 7, 14 and 29 chunks of 576,000, 288,000 and 144,000 B,
        // all under 38.4, so 72,000 B (58 chunks, not under 9.6: kept).
        assert!((units(8.0 * MIB) - 4.0 * MIB / 72_000.0).abs() < 1e-9, "{}", units(8.0 * MIB));
        // Every shrink is a halving of NCCL's chunk, never below 32 KiB's floor pair.
        for mib in [0.01, 0.5, 1.0, 3.0, 17.0, 300.0] {
            let chunk = mib * MIB / 2.0 / units(mib * MIB);
            assert!(
                [576_000.0, 288_000.0, 144_000.0, 72_000.0, 36_000.0, 18_000.0].contains(&chunk.round()),
                "{chunk}"
            );
        }
        // CollNet chain, 8 ranks a node: 256 KiB chunk halved under 8 x 64 = 512 chunks a
        // channel (to 128 KiB), under 64 (to 64 KiB), under 8 (to 32 KiB).
        let chain = |bytes: f64, ch: usize| {
            let s = shape(&f, Collective::AllReduce, Algo::CollNetChain, Proto::Simple, bytes, ch, 8).unwrap();
            bytes / ch as f64 / s.units
        };
        assert_eq!(chain(512.0 * MIB, 16), 131072.0); // 128 chunks of 256 KiB < 512
        assert_eq!(chain(4096.0 * MIB, 16), 262144.0); // 1024 chunks: kept
        assert_eq!(chain(32.0 * MIB, 16), 65536.0); // 16 of 128 KiB < 64
        assert_eq!(chain(2.0 * MIB, 16), 32768.0); // 2 of 64 KiB < 8
                                                   // CollNet direct, 8 ranks a node (depth 2), 8 heads: a channel's bytes split over the
                                                   // heads, each head's 512 KiB chunk halved under 128 chunks (to 128 KiB), under 16 (to
                                                   // 64 KiB), under 16 again (to 32 KiB): NCCL repeats x 8 in its third rule.
        let direct = |bytes: f64, ch: usize, heads: usize| {
            let s = shape(&f, Collective::AllReduce, Algo::CollNetDirect, Proto::Simple, bytes, ch, heads).unwrap();
            bytes / ch as f64 / heads as f64 / s.units
        };
        assert_eq!(direct(16384.0 * MIB, 16, 8), 524288.0); // 256 chunks of 512 KiB a head
        assert_eq!(direct(4096.0 * MIB, 16, 8), 262144.0); // 64 of 512 KiB < 128
        assert_eq!(direct(1024.0 * MIB, 16, 8), 131072.0); // 32 of 256 KiB < 128; 64 of 128 KiB >= 16
        assert_eq!(direct(64.0 * MIB, 16, 8), 32768.0); // 4 of 128 KiB, 8 of 64 KiB < 16
                                                        // One head: the whole channel is its share.
        assert_eq!(direct(1024.0 * MIB, 16, 1), 524288.0); // 128 chunks: kept
    }

    #[test]
    fn a_tree_inside_one_node_fills_its_chain_up_and_down() {
        // Simple tree all-reduce on one node: 512 KiB steps, fill 2(n-1)-1 steps (5 on 4
        // ranks, 13 on 8). Closed form: wire x depth / (bytes / channels / 512 KiB). Across
        // nodes the network's FIFO depth stays (8 steps).
        let step = SIMPLE_BUFFSIZE / NCCL_STEPS;
        for (ranks, depth) in [(4usize, 5.0), (8, 13.0), (16, NCCL_STEPS)] {
            let f = rail("dgx-h100", ranks);
            let bytes = 256.0 * MIB;
            let fill = fill(&f, Collective::AllReduce, Algo::Tree, Proto::Simple, bytes, 24, 1e-3);
            let units = bytes / 24.0 / step;
            assert!((fill - 1e-3 * depth / units).abs() < 1e-15, "{ranks} {fill}");
        }
        // LL and LL128 trees keep the FIFO's depth.
        let f = rail("dgx-h100", 4);
        let ll = fill(&f, Collective::AllReduce, Algo::Tree, Proto::Ll, 256.0 * MIB, 24, 1e-3);
        let units = 256.0 * MIB / 24.0 / step_data(Proto::Ll);
        assert!((ll - 1e-3 * NCCL_STEPS / units).abs() < 1e-15, "{ll}");
    }

    #[test]
    fn at_the_largest_chunk_the_fill_is_a_constant() {
        // Full 2 MiB chunks (>= 24 x 8 x 2 MiB) on one node: fill = one slice (2 steps of
        // 512 KiB) at the channel's rate; closed form: wire x 2 / (loops x 56) with loops =
        // bytes / (24 x 8 x 2 MiB).
        let f = rail("dgx-a100", 8);
        let rate = 240e9 * 8.0 / 14.0; // NCCL's algorithm bandwidth, bytes/s
        let mut fills = vec![];
        for gib in [1.0, 4.0, 16.0] {
            let bytes = gib * 1024.0 * MIB;
            let wire = bytes / rate;
            let fill = fill(&f, Collective::AllReduce, Algo::Ring, Proto::Simple, bytes, 24, wire);
            let loops = bytes / (24.0 * 8.0 * 2.0 * MIB);
            assert!((fill - wire * 2.0 / (loops * 56.0)).abs() < 1e-12);
            fills.push(fill);
        }
        assert!((fills[0] - fills[2]).abs() < 1e-12, "{fills:?}");
        // NVLS at its 128 KiB chunk: 2 loops of 8 heads x 128 KiB x 16 channels.
        let f = rail("dgx-h100", 8);
        let bytes = 8.0 * 1024.0 * MIB;
        let wire = 1e-2;
        let fill = fill(&f, Collective::AllReduce, Algo::Nvls, Proto::Simple, bytes, 16, wire);
        assert!((fill - wire * 2.0 * 8.0 * NVLS_CHUNK * 16.0 / bytes).abs() < 1e-15);
    }

    #[test]
    fn an_nvls_unit_passes_every_stage_however_few_units_there_are() {
        // 8 H100, 16 channels, 8 heads: below 2 loops of 16 KiB chunks (4 MiB) NCCL keeps
        // 16 KiB. A loop passes 3 stages (scatter, multimem reduce, gather), so u loops take
        // (max(u, 1) + 2) loop times: the fill is 2 loop times, twice the transfer at 1 loop
        // (2 MiB) and at half a loop (1 MiB, one partial chunk), the transfer at 2 loops.
        let f = rail("dgx-h100", 8);
        let wire = 1e-5;
        for (mib, share) in [(1.0, 2.0), (2.0, 2.0), (4.0, 1.0)] {
            let s = shape(&f, Collective::AllReduce, Algo::Nvls, Proto::Simple, mib * MIB, 16, 8).unwrap();
            assert!(s.staged && s.depth == 2.0, "{s:?}");
            let fill = fill(&f, Collective::AllReduce, Algo::Nvls, Proto::Simple, mib * MIB, 16, wire);
            assert!((fill - share * wire).abs() < 1e-18, "{mib} MiB: {fill}");
        }
        // A ring's FIFO with fewer steps than its slots never fills: at most the transfer.
        // LL all-gather on 2 ranks (1 step a loop, 8 slots): the fill is the transfer.
        let f = rail("dgx-h100", 2);
        let s = shape(&f, Collective::AllGather, Algo::Ring, Proto::Ll, 64.0 * 1024.0, 1, 8).unwrap();
        assert!(!s.staged && s.units < s.depth, "{s:?}");
        assert_eq!(fill(&f, Collective::AllGather, Algo::Ring, Proto::Ll, 64.0 * 1024.0, 1, wire), wire);
    }

    #[test]
    fn large_sizes_tend_to_the_tuning_models_bandwidth() {
        // (at the rate the chosen algorithm runs, `tuning::run_bandwidth`: NVLS here)
        let f = rail("dgx-h100", 8);
        let none = NcclOptions::default();
        let big = 64.0 * 1024.0 * MIB;
        let c = choose(&f, Collective::AllReduce, big, &none).unwrap();
        let a = c.algo.expect("all-reduce runs an algorithm");
        let (lat, bw) = {
            let g = crate::nccl::graph::search(&f);
            let (l, b) = crate::nccl::tuning::entry(&f, &g, Collective::AllReduce, a, c.proto);
            let (l, b) = crate::nccl::tuning::parts(&f, &g, Collective::AllReduce, a, c.proto, big, l, b);
            (l, crate::nccl::tuning::run_bandwidth(&f, &g, Collective::AllReduce, a, c.proto, b))
        };
        let model = lat * 1e-6 + big / (bw * 1e9);
        assert!(c.seconds >= model && c.seconds <= model * 1.001, "{} {model}", c.seconds);
    }

    #[test]
    fn steps_count_the_hand_offs_a_channel_makes() {
        // NVLS on 8 H100 at 8 GiB, 16 channels: a channel's 512 MiB is 512 loops of 8 heads x
        // 128 KiB, each loop a hand-off to and from every head: 4,096 steps.
        let h = rail("dgx-h100", 8);
        let s = shape(&h, Collective::AllReduce, Algo::Nvls, Proto::Simple, 8.0 * 1024.0 * MIB, 16, 8).unwrap();
        assert_eq!((s.units, s.handoffs_per_unit, s.steps()), (512.0, 8.0, 4096.0));
        // A Simple ring below one loop on 8 ranks: 2(n-1) = 14 chunk steps of CHUNKSTEPS = 4
        // FIFO steps, handed off a slice (2 steps) at a time: 28. LL: 14, one per step.
        let a = rail("dgx-a100", 8);
        let ring = |p, mib| shape(&a, Collective::AllReduce, Algo::Ring, p, mib * MIB, 24, 8).unwrap().steps();
        assert_eq!((ring(Proto::Simple, 32.0), ring(Proto::Ll, 1.0)), (28.0, 14.0));
        // LL's chunk is 32 KiB: at 32 MiB a channel's 1.33 MiB is 16/3 loops of 8 chunks.
        assert!((ring(Proto::Ll, 32.0) - 14.0 * 16.0 / 3.0).abs() < 1e-9);
        // All-gather's loop is n-1 steps: half the all-reduce's hand-offs.
        let ag = shape(&a, Collective::AllGather, Algo::Ring, Proto::Simple, 32.0 * MIB, 24, 8).unwrap();
        assert_eq!(ag.steps(), 14.0);
        // A tree moves one 512 KiB chunk per step: 256 MiB on 16 channels is 32 per channel;
        // a share below one chunk is still one step.
        let t = |mib| shape(&a, Collective::AllReduce, Algo::Tree, Proto::Simple, mib * MIB, 16, 8).unwrap().steps();
        assert_eq!((t(256.0), t(1.0)), (32.0, 1.0));
        // No collective pipeline: all-to-all, broadcast, no bytes.
        for (c, b) in [(Collective::AllToAll, MIB), (Collective::Broadcast, MIB), (Collective::AllReduce, 0.0)] {
            assert_eq!(shape(&a, c, Algo::Ring, Proto::Simple, b, 24, 8), None, "{c:?} {b}");
        }
    }

    #[test]
    fn the_fill_does_not_change_the_choice() {
        // The pair NCCL's model picks (min of latency + bytes / bandwidth) is the one run.
        let f = rail("dgx-h100", 8);
        let g = crate::nccl::graph::search(&f);
        for mib in [0.5, 1.0, 2.0, 8.0, 64.0, 1024.0] {
            let bytes = mib * MIB;
            let c = choose(&f, Collective::AllReduce, bytes, &NcclOptions::default()).unwrap();
            let mut best = (f64::MAX, Algo::Ring, Proto::Simple);
            for a in Algo::ALL {
                if !crate::nccl::tuning::algo_enabled(&f, Collective::AllReduce, a) {
                    continue;
                }
                for p in Proto::ALL {
                    if !crate::nccl::tuning::proto_enabled(&f, a, p) {
                        continue;
                    }
                    let (l, b) = crate::nccl::tuning::entry(&f, &g, Collective::AllReduce, a, p);
                    if b <= 0.0 {
                        continue;
                    }
                    let (l, b) = crate::nccl::tuning::parts(&f, &g, Collective::AllReduce, a, p, bytes, l, b);
                    let t = l + bytes / (1000.0 * b);
                    if t < best.0 {
                        best = (t, a, p);
                    }
                }
            }
            assert_eq!((c.algo, c.proto), (Some(best.1), best.2), "{mib} MiB");
        }
    }

    proptest! {
        #[test]
        fn fill_is_bounded_by_the_transfer_and_grows_with_bytes(
            node in prop::sample::select(vec!["dgx-a100", "dgx-h100", "a3-mega"]),
            ranks in 2usize..64,
            a in prop::sample::select(Algo::ALL.to_vec()),
            p in prop::sample::select(Proto::ALL.to_vec()),
            coll in prop::sample::select(vec![Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter]),
            bytes in 1.0f64..1e11,
            k in 1.0f64..8.0,
            ch in 1usize..64,
        ) {
            let f = rail(node, ranks);
            let rate = 1e11;
            let fill = |b: f64| fill(&f, coll, a, p, b, ch, b / rate);
            let (small, large) = (fill(bytes), fill(bytes * k));
            // A FIFO's fill is at most the transfer; a stage pipeline's, depth transfers.
            let most = match shape(&f, coll, a, p, bytes, ch, 8) {
                Some(s) if s.staged => s.depth,
                _ => 1.0,
            };
            prop_assert!(small >= 0.0 && small <= most * bytes / rate * (1.0 + 1e-12));
            prop_assert!(large * (1.0 + 1e-12) + 1e-18 >= small, "{small} {large}");
            // Twice the bytes never take fewer steps: NCCL's chunk at most doubles with them
            // (a larger chunk between two sizes can take fewer, as NCCL's does), and at least one.
            let steps = |b: f64| shape(&f, coll, a, p, b, ch, 8).map_or(0.0, |s| s.steps());
            prop_assert!(steps(bytes * 2.0) + 1e-9 >= steps(bytes), "{} {}", steps(bytes), steps(bytes * 2.0));
            prop_assert!(steps(bytes) >= 1.0 / RING_SLICE_STEPS);
        }
    }
}
