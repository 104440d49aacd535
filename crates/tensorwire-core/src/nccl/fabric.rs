//! [`NcclFabric::from_topology`]: the fabric NCCL sees on a topology spec.
//!
//! Line rates come from the presets (datasheets, `topology/node.rs`); NCCL's own figures
//! (and so the efficiencies relative to line rate) come from `graph.rs`: NVLink at 20/25
//! = 0.8 of line rate (V100, A100) and 20.6/25 = 0.824 (H100/H200), PCIe at 0.75, a NIC
//! at its line rate behind the GPU's PCIe path (24/25 = 0.96 for 200G on A100, 48/50 =
//! 0.96 for 400G on H100 after the search's speed list).

use super::{Arch, Calibration, HostCut, IntraLink, NcclFabric, Transport};
use crate::error::Result;
use crate::topology::TopologySpec;

/// Line rate of an NVLink2/3/4 lane per direction, bytes/s.
const LANE: f64 = super::tables::NVLINK_LANE_LINE_GBS * 1e9;

/// PCIe Gen4 x16 raw rate per direction, bytes/s (16 GT/s x 16 lanes / 8): one GPU per
/// host on the fabrics without a GPU machine.
const PCIE_GEN4_X16: f64 = 32e9;

/// A GPU machine's PCIe path between two GPUs, bytes/s per direction: the rate the
/// machine presets give it in the flow model (seed 003's "PCIe through the CPU", 10 GB/s,
/// [`crate::gputopo::link_bytes_per_s`]), so that NCCL on `pcie-8`, or on GPUs of a
/// `p3.16xlarge` that NVLink cannot join in a ring, runs over the links the preset has (it
/// took PCIe Gen4 x16, 32 GB/s: 23.9 GB/s busbw on links of 10).
fn machine_pcie_bytes_per_s() -> f64 {
    crate::gputopo::link_bytes_per_s(crate::gputopo::PCIE).expect("PCIe has a rate")
}

/// NVLink lanes each GPU of the first `g` GPUs of `machine` (packed ranks) gives NCCL's
/// rings: the fewest any of them has to the others (weight 3, two lanes; 2, one), where
/// NVLink alone joins them in a ring (a Hamiltonian cycle over NVLink pairs, or the one
/// link of two GPUs); None where it cannot (GPU 4 of the first five of a DGX-1 has one
/// NVLink neighbour among them), and NCCL's ring then crosses PCIe. On all 8 GPUs of a
/// DGX-1, 6: the whole GPU. Two GPUs of a DGX-1 share one or two lanes, not six (NCCL's
/// model gave 2 GPUs 118 GB/s busbw over one 25 GB/s NVLink).
fn nvlink_ring_lanes(machine: &crate::gputopo::GpuTopology, g: usize) -> Option<u32> {
    let lanes = |a: usize, b: usize| match machine.weight(a, b) {
        crate::gputopo::DOUBLE_NVLINK => 2,
        crate::gputopo::SINGLE_NVLINK => 1,
        _ => 0,
    };
    if g < 2 {
        return Some((1..machine.gpus()).map(|b| lanes(0, b)).sum());
    }
    let joined = if g == 2 { lanes(0, 1) > 0 } else { nvlink_cycle(g, &|a, b| lanes(a, b) > 0) };
    joined.then(|| (0..g).map(|a| (0..g).filter(|&b| b != a).map(|b| lanes(a, b)).sum()).min().unwrap_or(0))
}

/// Whether GPUs `0..g` (g <= 8) have a Hamiltonian cycle over pairs `linked`: a depth-first
/// search from GPU 0 (at most 7! orders).
fn nvlink_cycle(g: usize, linked: &dyn Fn(usize, usize) -> bool) -> bool {
    fn extend(path: &mut Vec<usize>, g: usize, linked: &dyn Fn(usize, usize) -> bool) -> bool {
        let last = *path.last().expect("starts at GPU 0");
        if path.len() == g {
            return linked(last, path[0]);
        }
        for next in 1..g {
            if !path.contains(&next) && linked(last, next) {
                path.push(next);
                if extend(path, g, linked) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    extend(&mut vec![0], g, linked)
}

/// NCCL's figure for a GPU's PCIe x16 path on `arch`, bytes/s ([`super::tables::PCIE_X16_GBS`]).
fn pcie_x16(arch: Arch) -> f64 {
    super::tables::PCIE_X16_GBS[super::tables::arch_index(arch)] * 1e9
}

pub(super) fn from_topology(
    spec: &TopologySpec,
    ranks: usize,
    host_bytes_per_s: f64,
    transport: Transport,
) -> Result<NcclFabric> {
    let ranks = ranks.max(1);
    let calibration = if matches!(spec.name(), "rail" | "nodes") { spec.calibration() } else { Calibration::default() };
    let collnet = matches!(spec.name(), "rail" | "nodes") && spec.sharp();
    let base = NcclFabric {
        nodes: ranks,
        gpus_per_node: 1,
        ranks,
        arch: Arch::Sm80,
        intra: IntraLink::Pcie,
        intra_bytes_per_s: PCIE_GEN4_X16,
        nvls: false,
        collnet,
        nics_per_node: 1,
        nic_bytes_per_s: host_bytes_per_s,
        nic_path_bytes_per_s: f64::INFINITY,
        transport,
        calibration,
        cut: host_cut(spec, ranks, host_bytes_per_s),
    };
    if let (Some(p), Some(r)) = (spec.node_preset(), spec.rail_params(host_bytes_per_s)) {
        let g = p.gpus.max(1).min(ranks);
        return Ok(NcclFabric {
            nodes: ranks.div_ceil(g),
            gpus_per_node: g,
            arch: p.arch,
            intra: IntraLink::NvSwitch,
            intra_bytes_per_s: r.nvlink_bytes_per_ns * 1e9,
            nvls: spec.nvls_option().unwrap_or(p.nvls) && p.nvls,
            nics_per_node: g,
            nic_bytes_per_s: r.nic_bytes_per_ns * 1e9,
            nic_path_bytes_per_s: pcie_x16(p.arch),
            ..base
        });
    }
    if let (Some(name), Some(machine)) = (spec.machine_name(), spec.machine()) {
        // Seed 003's machines: DGX-1 V100 (6 NVLink2 lanes per GPU, no switch), DGX A100
        // (12 NVLink3 lanes into NVSwitch), 8 GPUs on PCIe; one NIC per machine.
        let g = machine.gpus().max(1).min(ranks);
        let (arch, intra, rate) = match name {
            "p3.16xlarge" => {
                let arch = Arch::Sm70;
                match nvlink_ring_lanes(&machine, g) {
                    Some(lanes) => (arch, IntraLink::NvLink, lanes as f64 * LANE),
                    None => (arch, IntraLink::Pcie, machine_pcie_bytes_per_s()),
                }
            }
            "dgx-a100" => (Arch::Sm80, IntraLink::NvSwitch, 12.0 * LANE),
            _ => (Arch::Sm80, IntraLink::Pcie, machine_pcie_bytes_per_s()),
        };
        return Ok(NcclFabric {
            nodes: ranks.div_ceil(g),
            gpus_per_node: g,
            arch,
            intra,
            intra_bytes_per_s: rate,
            nic_path_bytes_per_s: pcie_x16(arch),
            ..base
        });
    }
    Ok(base)
}

/// The host network's narrowest cut for `ranks` ranks on `spec` ([`HostCut`]), where it
/// carries less than the NICs on its small side send:
/// - `leaf-spine`: a leaf's hosts (`hosts_per_leaf`) and its uplinks, `spines x uplink`;
/// - `ring` (hosts joined in a ring, two links each): half the hosts and the two links that
///   join the halves;
/// - `rail`: a rail group's GPUs (`nodes_per_group` nodes) and its leaves' uplinks,
///   `1 / oversubscription` of their downlinks;
/// - `nodes` with `nodes_per_leaf=`: a leaf's GPUs and its uplink trunk, `nodes_per_leaf`
///   NICs over `oversubscription`.
///
/// None on `star` and `nodes` on one switch, and where the cut is as wide as the hosts'
/// links or the ranks fit on its small side.
fn host_cut(spec: &TopologySpec, ranks: usize, host_bytes_per_s: f64) -> Option<HostCut> {
    let (side, bytes_per_s, nics) = match spec.name() {
        "leaf-spine" => {
            let (per_leaf, spines, uplink) = spec.leaf_spine_params(host_bytes_per_s);
            (per_leaf, spines as f64 * uplink, per_leaf as f64 * host_bytes_per_s)
        }
        "ring" => (ranks / 2, 2.0 * host_bytes_per_s, (ranks / 2) as f64 * host_bytes_per_s),
        "rail" => {
            let r = spec.rail_params(host_bytes_per_s)?;
            let side = r.gpus_per_node * r.nodes_per_group;
            let down = side as f64 * r.nic_bytes_per_ns * 1e9;
            (side, down / r.oversubscription, down)
        }
        "nodes" => {
            let (leaves, machine) = (spec.machine_leaves()?, spec.machine()?);
            let down = leaves.nodes_per_leaf as f64 * host_bytes_per_s;
            (leaves.nodes_per_leaf * machine.gpus(), down / leaves.oversubscription, down)
        }
        _ => return None,
    };
    (side >= 1 && side < ranks && bytes_per_s < nics).then_some(HostCut { ranks: side, bytes_per_s })
}
