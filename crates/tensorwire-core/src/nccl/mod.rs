//! NCCL's collectives as NCCL runs them (version [`NCCL_VERSION`]): the fabric as NCCL's
//! topology search sees it ([`NcclFabric`]), its algorithms and protocols, and its tuning
//! model choosing algorithm x protocol x channels for each collective and size
//! ([`choose`]). Times are closed forms of the fabric (NCCL's own cost model, with the
//! link efficiencies of `docs/collectives.md`), so a collective costs no flow: the engine
//! times it with `engine/timed.rs`.
//!
//! Modules: [`tables`] (NCCL's constants), [`graph`] (the topology search's channels),
//! [`tuning`] (bandwidth, latency, enablement), [`alltoall`], [`pipeline`] (execution time), `checks` (refusals),
//! `fabric` (from topology specs). See `docs/collectives.md`, "NCCL's collectives".

pub mod alltoall;
mod checks;
mod fabric;
pub mod graph;
pub mod pipeline;
pub mod tables;
#[cfg(test)]
mod tests;
pub mod tuning;

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

/// Measured corrections of a fabric (`tensorwire calibrate`): factors on NCCL's bandwidths,
/// latencies added to NCCL's, factors on the pipeline's fill and drain
/// ([`pipeline::fill_seconds`]: how much of it the measured cluster shows), and a cost per
/// pipeline step ([`pipeline::Shape::steps`]: a hand-off between two GPUs, whose
/// synchronisation the cluster's hardware sets and NCCL publishes no figure for), inside a
/// node and across nodes. Inside a node NVLS has its own bandwidth factor and fill factor:
/// its data goes through the NVSwitches' multimem reductions and a pipeline of warp-group
/// stages, not the links' point-to-point copies and FIFOs that rings, trees and PAT use, and
/// NCCL itself gives it its own efficiency (`nvlsEfficiency`, `src/graph/tuning.cc`); so a
/// fit to an NVLS sweep says nothing about the rings an all-gather runs, and the reverse
/// (docs/calibration.md). The defaults change nothing.
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
    /// Factor (>= 0) on the pipeline's fill and drain of single-node collectives.
    pub intra_fill: f64,
    /// Factor (>= 0) on the pipeline's fill and drain of multi-node collectives.
    pub inter_fill: f64,
    /// Seconds (>= 0) each pipeline step of a single-node collective costs beyond its bytes.
    pub intra_step_s: f64,
    /// Seconds (>= 0) each pipeline step of a multi-node collective costs beyond its bytes.
    pub inter_step_s: f64,
    /// Factor on NVLS's bandwidth in single-node collectives (in place of `intra_bandwidth`).
    pub nvls_bandwidth: f64,
    /// Factor (>= 0) on NVLS's fill and drain in single-node collectives (in place of
    /// `intra_fill`).
    pub nvls_fill: f64,
    /// Factor on NVLS tree's bandwidth in multi-node collectives (in place of
    /// `inter_bandwidth`).
    pub nvlstree_bandwidth: f64,
    /// Factor (>= 0) on NVLS tree's fill and drain in multi-node collectives (in place of
    /// `inter_fill`).
    pub nvlstree_fill: f64,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration {
            intra_bandwidth: 1.0,
            inter_bandwidth: 1.0,
            intra_latency_s: 0.0,
            inter_latency_s: 0.0,
            intra_fill: 1.0,
            inter_fill: 1.0,
            intra_step_s: 0.0,
            inter_step_s: 0.0,
            nvls_bandwidth: 1.0,
            nvls_fill: 1.0,
            nvlstree_bandwidth: 1.0,
            nvlstree_fill: 1.0,
        }
    }
}

/// The fabric as NCCL sees it: nodes of GPUs, their intra-node links and NICs.
#[derive(Debug, Clone, PartialEq)]
pub struct NcclFabric {
    /// Nodes (machines).
    pub nodes: usize,
    /// GPUs (ranks) per node.
    pub gpus_per_node: usize,
    /// Ranks in the communicator: `nodes x gpus_per_node`, or fewer where the last node is
    /// partial (9 GPUs on 8-GPU nodes). NCCL's model is run on whole nodes; the partial node's
    /// NICs bound the time ([`NcclFabric::smallest_node`]).
    pub ranks: usize,
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
    /// The PCIe path between a GPU and its NIC, bytes/s per direction, in NCCL's figure
    /// (x16 of the GPU's generation, [`tables::PCIE_X16_GBS`]: 24 GB/s Gen4 on A100, 48
    /// Gen5 on H100); NCCL's search reaches a NIC through it. Infinite on the fabrics
    /// without a GPU machine (`star`, `leaf-spine`, `ring`), whose hosts are one GPU at the
    /// host rate: their NIC is all there is.
    pub nic_path_bytes_per_s: f64,
    /// Network transport.
    pub transport: Transport,
    /// Calibrated corrections.
    pub calibration: Calibration,
    /// The host network's narrowest cut, where it is narrower than the hosts' own links
    /// (an oversubscribed leaf-spine or rail fabric, a ring of hosts); None where the network
    /// carries whatever the NICs send, as NCCL's model assumes.
    pub cut: Option<HostCut>,
}

/// A cut of the host network that NCCL's model does not see: `ranks` consecutive ranks (a
/// leaf's hosts, a rail group's GPUs, half a ring of hosts) joined to the others by
/// `bytes_per_s` per direction. NCCL times collectives from the NICs and NVLinks alone
/// (`tuning.cc`), which on such a fabric would claim more than the network carries; the cut
/// gives each collective a floor that holds for any algorithm ([`cut_floor_seconds`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostCut {
    /// Ranks on the small side of the cut, >= 1 and below the communicator's.
    pub ranks: usize,
    /// What the cut carries per direction, bytes/s.
    pub bytes_per_s: f64,
}

/// The least time, seconds, in which `collective` over `bytes` (nccl-tests' size: the whole
/// buffer for all-gather and reduce-scatter, each rank's send buffer for all-to-all) can move
/// across `cut` on `ranks` ranks, whatever the algorithm: what must cross it in one direction
/// over what it carries. With `g` ranks on one side and `n` in all:
/// - all-to-all: every one of the `g` ranks sends `bytes / n` to each of the `n - g` others;
/// - all-gather and reduce-scatter: each side's share of the buffer must reach the other
///   side, `max(g, n - g) / n x bytes` in the busier direction;
/// - all-reduce and broadcast: each side must learn the whole reduced (or broadcast) buffer
///   from the other, `bytes` each way.
///
/// ```
/// use tensorwire_core::collectives::Collective;
/// use tensorwire_core::nccl::{cut_floor_seconds, HostCut};
/// // 16 ranks, 4 on a leaf with 1 GB/s of uplinks: an all-to-all of 64 MB a rank sends
/// // 4 x 12 x 4 MB = 192 MB out of the leaf, 0.192 s.
/// let cut = HostCut { ranks: 4, bytes_per_s: 1e9 };
/// let t = cut_floor_seconds(cut, 16, Collective::AllToAll, 64e6);
/// assert!((t - 0.192).abs() < 1e-12);
/// ```
pub fn cut_floor_seconds(cut: HostCut, ranks: usize, collective: Collective, bytes: f64) -> f64 {
    let (g, n) = (cut.ranks.min(ranks) as f64, ranks as f64);
    if g >= n || cut.bytes_per_s <= 0.0 {
        return 0.0;
    }
    let crossing = match collective {
        Collective::AllToAll => g * (n - g) * bytes / n,
        Collective::AllGather | Collective::ReduceScatter => g.max(n - g) * bytes / n,
        Collective::AllReduce | Collective::Broadcast => bytes,
    };
    crossing / cut.bytes_per_s
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

fn parse_list<T: Copy + PartialEq>(text: &str, field: &str, all: &[T], name: fn(T) -> &'static str) -> Result<Vec<T>> {
    // NCCL_ALGO / NCCL_PROTO: a leading `^` excludes the listed names instead.
    let (exclude, text) = match text.trim().strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let listed = text
        .split(['+', '|'])
        .map(|part| {
            let part = part.trim().to_ascii_lowercase();
            if let Some(bare) = part.strip_prefix('^') {
                // NCCL takes one `^`, before the whole list: it excludes every name in it.
                return Err(Error::invalid(
                    field,
                    format!("{part:?}: a ^ goes once, before the whole list, and excludes every name in it ({bare}, not ^{bare}, after the first)"),
                ));
            }
            all.iter().copied().find(|a| name(*a) == part).ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|a| name(*a)).collect();
                Error::invalid(
                    field,
                    format!("unknown {part:?}; choose from {} (a leading ^ excludes them instead)", names.join(", ")),
                )
            })
        })
        .collect::<Result<Vec<T>>>()?;
    // A name given twice means it once, as NCCL reads it (`simple+simple`; `calibrate --algo
    // Ring,ring` had suggested `nccl:algo=ring+ring`).
    let listed =
        listed.iter().enumerate().filter(|(i, a)| !listed[..*i].contains(a)).map(|(_, a)| *a).collect::<Vec<T>>();
    if !exclude {
        return Ok(listed);
    }
    let kept: Vec<T> = all.iter().copied().filter(|a| !listed.contains(a)).collect();
    if kept.is_empty() {
        return Err(Error::invalid(field, format!("^{text} excludes every choice; leave at least one")));
    }
    Ok(kept)
}

#[cfg(test)]
mod parse_tests {
    use super::*;

    #[test]
    fn a_name_given_twice_means_it_once() {
        assert_eq!(NcclOptions::parse_protos("simple+Simple").unwrap(), vec![Proto::Simple]);
        assert_eq!(NcclOptions::parse_algos("ring+tree+RING").unwrap(), vec![Algo::Ring, Algo::Tree]);
    }

    #[test]
    fn a_leading_caret_excludes_as_nccl_algo_does() {
        let kept = NcclOptions::parse_algos("^nvls+nvlstree").unwrap();
        assert!(!kept.contains(&Algo::Nvls) && !kept.contains(&Algo::NvlsTree));
        assert_eq!(kept.len(), Algo::ALL.len() - 2);
        assert_eq!(NcclOptions::parse_protos("^ll").unwrap(), vec![Proto::Ll128, Proto::Simple]);
        assert_eq!(NcclOptions::parse_protos("^ll+ll128+simple").unwrap_err().field(), "strategy.proto");
        assert_eq!(NcclOptions::parse_algos("^bogus").unwrap_err().field(), "strategy.algo");
    }
}

/// What NCCL runs for one collective, and how long it takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclChoice {
    /// Algorithm; `None` for all-to-all, which NCCL runs as point-to-point sends and
    /// receives to every peer (`ncclAlltoAll` is split into them, `taskAppend` in
    /// `src/enqueue.cc`), not as one of NCCL_ALGO's algorithms.
    pub algo: Option<Algo>,
    /// Protocol.
    pub proto: Proto,
    /// Channels used (all-to-all: the communicator's point-to-point channels).
    pub channels: usize,
    /// All-to-all: the channels each peer's send is striped over
    /// ([`alltoall::channels_per_peer`]); `None` for a collective algorithm.
    pub peer_channels: Option<usize>,
    /// Time of the collective, seconds.
    pub seconds: f64,
}

impl NcclChoice {
    /// The algorithm's name as `nccl:algo=` takes it, or `p2p` for point-to-point.
    pub fn algo_name(&self) -> &'static str {
        self.algo.map_or("p2p", Algo::name)
    }

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

/// Refuses options the fabric cannot run, naming the field (`strategy.algo`,
/// `strategy.proto`, `strategy.channels`) and what is allowed: an algorithm the fabric
/// lacks (`nvls` without NVLink SHARP, `pat` with more than one GPU per node, CollNet
/// without `sharp=true`), protocols no allowed algorithm runs, channels outside 1..=64
/// (NCCL's MAXCHANNELS).
pub fn check(fabric: &NcclFabric, options: &NcclOptions) -> Result<()> {
    checks::check(fabric, options)
}

/// What NCCL runs for `collective` over a buffer of `bytes` (nccl-tests' "size": the whole
/// buffer for all-gather and reduce-scatter; all-to-all: each rank's send buffer) on
/// `fabric` under `options`.
///
/// NCCL's tuning model (`tuning.rs`): every enabled (algorithm, protocol) gets NCCL's
/// latency and bandwidth from the search's graphs (`graph.rs`), time = latency + bytes /
/// bandwidth, the minimum wins (ties to NCCL's index order). `options.channels` caps the
/// bandwidth at `channels / graph channels` of it and sets the channels run. The seconds
/// returned are that time with the fabric's efficiencies applied: the calibration factors
/// and added latencies (intra for single-node, inter for multi-node collectives) and, over
/// NCCL's socket transport, [`tables::TCP_EFFICIENCY`] and [`tables::TCP_EXTRA_LATENCY_S`];
/// the choice itself is NCCL's, which knows none of them. NVLS then runs at its links' rate
/// rather than the search's rounded speed ([`tuning::run_bandwidth`]). The chosen pair runs
/// at the speed of NCCL's pipeline: its fill and drain ([`pipeline::fill_seconds`], from the chunk
/// NCCL picks for the size, times the calibration's fill factor) is added to the model's
/// time, and so is the calibration's cost per step times the steps a channel runs
/// ([`pipeline::Shape::steps`]), without changing the choice. Across nodes without in-network
/// reduction the time is at least the network's min cut at line rate (NCCL's model for NVLS
/// tree on two nodes claims more than the NICs carry). All-to-all has no tuning in
/// NCCL: `alltoall.rs`, reported as point-to-point (`algo: None`) with Simple on NCCL's
/// point-to-point channels. No allocation.
pub fn choose(fabric: &NcclFabric, collective: Collective, bytes: f64, options: &NcclOptions) -> Result<NcclChoice> {
    decide(fabric, collective, bytes, options, false).map(|(nccl, _)| nccl)
}

/// [`choose`]'s choice, and the (algorithm, protocol) among those NCCL may run under
/// `options` that tensorwire times fastest ([`choose`]'s execution time, which adds NCCL's
/// pipeline fill and the fabric's efficiencies to NCCL's model), where NCCL chooses by its
/// model alone: what forcing it with NCCL_ALGO / NCCL_PROTO would run. The second is the
/// first where the two agree, on a tie, and for all-to-all (no algorithm to choose). One
/// topology search serves both.
pub fn choose_and_fastest(
    fabric: &NcclFabric,
    collective: Collective,
    bytes: f64,
    options: &NcclOptions,
) -> Result<(NcclChoice, NcclChoice)> {
    decide(fabric, collective, bytes, options, true)
}

/// [`choose`] and [`choose_and_fastest`]: one candidate per enabled (algorithm, protocol)
/// with NCCL's model figures; NCCL's by its model and, with `time_all`, the fastest as it
/// runs (else NCCL's again).
fn decide(
    fabric: &NcclFabric,
    collective: Collective,
    bytes: f64,
    options: &NcclOptions,
    time_all: bool,
) -> Result<(NcclChoice, NcclChoice)> {
    check(fabric, options)?;
    let ranks = fabric.nodes * fabric.gpus_per_node;
    let graphs = graph::search(fabric);
    let runtime = options.channels.unwrap_or(graphs.runtime_channels);
    if ranks <= 1 || bytes <= 0.0 {
        let algo = (collective != Collective::AllToAll).then_some(Algo::Ring);
        let peer_channels = algo.is_none().then_some(1);
        let none = NcclChoice { algo, proto: Proto::Simple, channels: 1, peer_channels, seconds: 0.0 };
        return Ok((none, none));
    }
    let costs = Costs::of(fabric, collective, bytes);
    if collective == Collective::AllToAll {
        let (lat_us, mut secs) = alltoall::time(fabric, &graphs, bytes, options.pxn);
        // Each GPU's share for other nodes at its NICs' line rate: no factor goes past it.
        let nic_floor = alltoall::nic_line_seconds(fabric, bytes);
        if let Some(ch) = options.channels {
            secs /= (ch as f64 / graphs.runtime_channels as f64).min(1.0);
        }
        let p2p = alltoall::p2p_channels(runtime);
        let p2p = NcclChoice {
            algo: None,
            proto: Proto::Simple,
            channels: p2p,
            peer_channels: Some(alltoall::channels_per_peer(fabric, p2p, bytes / ranks as f64)),
            seconds: (lat_us * 1e-6 + costs.added + (secs / costs.factor).max(nic_floor)).max(costs.floor),
        };
        return Ok((p2p, p2p));
    }
    // (algorithm, protocol, NCCL's model time µs, its latency µs, its bandwidth GB/s)
    let mut model_best: Option<(Algo, Proto, f64, f64, f64)> = None;
    let mut run_best: Option<NcclChoice> = None;
    for a in Algo::ALL {
        if options.algos.as_ref().is_some_and(|l| !l.contains(&a)) || !tuning::algo_enabled(fabric, collective, a) {
            continue;
        }
        for p in Proto::ALL {
            if options.protos.as_ref().is_some_and(|l| !l.contains(&p)) || !tuning::proto_enabled(fabric, a, p) {
                continue;
            }
            let (lat, bw) = tuning::entry(fabric, &graphs, collective, a, p);
            if bw <= 0.0 {
                continue;
            }
            let bw = bw * channel_cap(&graphs, a, options.channels);
            let (lat, bw) = tuning::parts(fabric, &graphs, collective, a, p, bytes, lat, bw);
            let time = lat + bytes / (1000.0 * bw);
            if model_best.is_none_or(|b| time < b.2) {
                model_best = Some((a, p, time, lat, bw));
            }
            if time_all {
                let run = execute(fabric, &graphs, &costs, collective, bytes, runtime, (a, p, lat, bw));
                if run_best.is_none_or(|b| run.seconds < b.seconds) {
                    run_best = Some(run);
                }
            }
        }
    }
    let Some((algo, proto, _, lat, bw)) = model_best else {
        return Err(checks::nothing_for(fabric, collective, options));
    };
    let nccl = execute(fabric, &graphs, &costs, collective, bytes, runtime, (algo, proto, lat, bw));
    // NCCL's own choice wins a tie.
    let fastest = match run_best {
        Some(best) if best.seconds < nccl.seconds => best,
        _ => nccl,
    };
    Ok((nccl, fastest))
}

/// What the fabric adds to NCCL's figures for one collective: the calibration's factors
/// and added latency (intra for one node, inter across nodes, with NCCL's socket transport's
/// loss) and the host network's cut floor.
struct Costs {
    /// Factor on NCCL's bandwidth.
    factor: f64,
    /// Added latency, s.
    added: f64,
    /// Factor on the pipeline's fill.
    fill_factor: f64,
    /// Cost of each pipeline step, s.
    step_s: f64,
    /// NCCL's socket transport's loss on the network's bandwidth (1 over RDMA or in a node).
    transport_factor: f64,
    /// The host network's cut, where it is narrower than the NICs (`HostCut`): a floor on
    /// the time, s, whatever NCCL's model (and its calibration) claims.
    floor: f64,
}

impl Costs {
    fn of(fabric: &NcclFabric, collective: Collective, bytes: f64) -> Costs {
        let ranks = fabric.nodes * fabric.gpus_per_node;
        let multi = fabric.nodes > 1;
        let c = &fabric.calibration;
        let tcp = multi && fabric.transport == Transport::Tcp;
        let transport_factor = if tcp { tables::TCP_EFFICIENCY } else { 1.0 };
        let floor = fabric.cut.map_or(0.0, |cut| cut_floor_seconds(cut, ranks, collective, bytes));
        if multi {
            Costs {
                factor: c.inter_bandwidth * transport_factor,
                added: c.inter_latency_s + if tcp { tables::TCP_EXTRA_LATENCY_S } else { 0.0 },
                fill_factor: c.inter_fill,
                step_s: c.inter_step_s,
                transport_factor,
                floor,
            }
        } else {
            Costs {
                factor: c.intra_bandwidth,
                added: c.intra_latency_s,
                fill_factor: c.intra_fill,
                step_s: c.intra_step_s,
                transport_factor,
                floor,
            }
        }
    }
}

/// The time `(algo, proto)` takes once chosen, with NCCL's model latency `lat` (µs) and
/// bandwidth `bw` (GB/s) for `bytes`: [`choose`]'s execution time.
fn execute(
    fabric: &NcclFabric,
    graphs: &graph::Graphs,
    costs: &Costs,
    collective: Collective,
    bytes: f64,
    runtime: usize,
    (algo, proto, lat, bw): (Algo, Proto, f64, f64),
) -> NcclChoice {
    let multi = fabric.nodes > 1;
    let c = &fabric.calibration;
    // Single-node NVLS and multi-node NVLS tree have their own calibrated bandwidth and fill
    // (`Calibration`).
    let (factor, fill_factor) = match (multi, algo) {
        (false, Algo::Nvls) => (c.nvls_bandwidth, c.nvls_fill),
        (true, Algo::NvlsTree) => (c.nvlstree_bandwidth * costs.transport_factor, c.nvlstree_fill),
        _ => (costs.factor, costs.fill_factor),
    };
    // NCCL chose by its model; NVLS runs at its links' rate, not the search's rounded
    // per-channel speed (`tuning::run_bandwidth`).
    let bw = tuning::run_bandwidth(fabric, graphs, collective, algo, proto, bw);
    let mut wire = bytes / (bw * 1e9);
    // The NICs' min cut at line rate, seconds (0 on one node).
    let mut nic_floor = 0.0;
    if multi {
        // NCCL's model may exceed the network's min cut (NVLS tree on two nodes doubles
        // bwInter). A node whose r of the n ranks own r/n of the buffer sends at least the
        // rest, (1 - r/n), through its NICs for all-gather/reduce-scatter (and receives as
        // much), twice that for all-reduce without in-network reduction ((N-1)/N and
        // 2(N-1)/N on N whole nodes); with it (CollNet, NVLS across nodes) its partial sums
        // and the result, the buffer once; a broadcast's buffer enters every node once. The
        // smallest node is the narrowest: a partial last node (9 GPUs on 8-GPU nodes) has
        // its own GPUs' NICs only, which NCCL's model, run on whole nodes, does not see.
        let (r, nics) = fabric.smallest_node();
        let away = 1.0 - r as f64 / fabric.ranks.max(1) as f64;
        let in_network = matches!(algo, Algo::CollNetDirect | Algo::CollNetChain | Algo::Nvls);
        let share = match collective {
            Collective::AllReduce if in_network => 1.0,
            Collective::AllReduce => 2.0 * away,
            Collective::AllGather | Collective::ReduceScatter => away,
            Collective::Broadcast => 1.0,
            Collective::AllToAll => 0.0,
        };
        nic_floor = bytes * share / (nics as f64 * fabric.nic_bytes_per_s);
        wire = wire.max(nic_floor);
    }
    let channels = tuning::op_channels(fabric, graphs, algo, proto, bytes, runtime);
    // NCCL chose by its model; it runs at the speed of its pipeline (`pipeline.rs`).
    let heads = tuning::collnet_direct_heads(fabric, graphs);
    let shape = pipeline::shape(fabric, collective, algo, proto, bytes, channels, heads);
    let fill = pipeline::fill_seconds(shape, bytes / (bw * 1e9));
    let steps = shape.map_or(0.0, |s| s.steps());
    NcclChoice {
        algo: Some(algo),
        proto,
        channels,
        peer_channels: None,
        // A calibrated factor above 1 speeds NCCL's figures up, but the bytes never leave a
        // node faster than its NICs' line rate: the pipeline (transfer, fill and steps) takes
        // at least the min cut's time. (Bounding the transfer alone would also bound how a fit
        // splits the time between bandwidth and step cost, which a measurement may not show.)
        seconds: (lat * 1e-6
            + costs.added
            + ((wire + fill * fill_factor) / factor + steps * costs.step_s).max(nic_floor))
        .max(costs.floor),
    }
}

/// `channels=` caps bandwidth: `channels x` the graph's per-channel bandwidth (NCCL's model
/// counts the search graph's channels, so more runtime channels add nothing; research §1.6).
fn channel_cap(graphs: &graph::Graphs, a: Algo, channels: Option<usize>) -> f64 {
    let Some(c) = channels else { return 1.0 };
    let of = match a {
        Algo::Nvls | Algo::NvlsTree => graphs.nvls.channels,
        Algo::Tree => graphs.tree.channels,
        Algo::CollNetDirect | Algo::CollNetChain => graphs.collnet.channels,
        Algo::Ring | Algo::Pat => graphs.ring.channels,
    };
    (c as f64 / of.max(1) as f64).min(1.0)
}

impl NcclFabric {
    /// The last node's GPUs and NICs `(r, nics)`: `gpus_per_node` and `nics_per_node` where
    /// the ranks fill whole nodes, else the partial node's (its share of the NICs, at least
    /// one: a rail node has one NIC per GPU, a `nodes` machine one for all).
    pub fn smallest_node(&self) -> (usize, usize) {
        let g = self.gpus_per_node.max(1);
        let r = self.ranks.saturating_sub((self.nodes.max(1) - 1) * g).clamp(1, g);
        (r, (self.nics_per_node * r).div_ceil(g).max(1))
    }

    /// The fabric NCCL sees for `ranks` GPUs on `spec` with host links at
    /// `host_bytes_per_s` (as `TopologySpec::host_rate` resolves it) over `transport`:
    /// `rail` nodes from their preset (arch, NVLink lanes, NVLS, one NIC per GPU),
    /// `nodes` machines with one NIC each (p3.16xlarge: V100 NVLink without switch;
    /// dgx-a100: A100 NVSwitch; pcie-8: PCIe Gen4), other fabrics one GPU per host at the
    /// host rate (sm80 constants; no PCIe path between GPU and NIC: the host's link is its
    /// NIC, [`NcclFabric::nic_path_bytes_per_s`]). `sharp=`, `nvls=` and the calibration
    /// options of the spec apply.
    pub fn from_topology(
        spec: &crate::topology::TopologySpec,
        ranks: usize,
        host_bytes_per_s: f64,
        transport: Transport,
    ) -> Result<NcclFabric> {
        fabric::from_topology(spec, ranks, host_bytes_per_s, transport)
    }

    /// The rate of a GPU's PCIe path to its NIC on `spec`, bytes/s, where a NIC of
    /// `nic_bytes_per_s` (line rate) would carry more RDMA goodput than that path lets
    /// through ([`NcclFabric::nic_path_bytes_per_s`]): under NCCL's model the NIC then runs
    /// at the path's rate, and a faster NIC changes nothing (an 800 Gbit/s NIC on a DGX
    /// H100, PCIe Gen5: 48 GB/s, what 400 Gbit/s already reaches). None where it does not,
    /// or where the fabric has no such path (one GPU per host).
    pub fn nic_past_its_path(spec: &crate::topology::TopologySpec, nic_bytes_per_s: f64) -> Option<f64> {
        let f = fabric::from_topology(spec, 2, nic_bytes_per_s, spec.nccl_transport(None)).ok()?;
        let goodput = f.nic_bytes_per_s * crate::strategy::RDMA_GOODPUT_EFFICIENCY;
        (f.nic_path_bytes_per_s.is_finite() && goodput > f.nic_path_bytes_per_s * (1.0 + 1e-9))
            .then_some(f.nic_path_bytes_per_s)
    }
}

/// Default slowdown of compute kernels while communication kernels run on the same GPU
/// (a fraction: 0.189 = compute takes 18.9% longer): the average measured by
/// "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
/// Learning" (arXiv 2507.03114) over GPT and LLaMA training on A100, H100, MI250 and MI210
/// (maximum 40%). Used by the GPU-cluster strategies (`nccl`, `ddp`, sharded on NCCL).
pub const DEFAULT_COMPUTE_SLOWDOWN: f64 = 0.189;
