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

/// PCIe Gen4 x16 raw rate per direction, bytes/s (16 GT/s x 16 lanes / 8).
const PCIE_GEN4_X16: f64 = 32e9;

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
            ..base
        });
    }
    if let Some(name) = spec.machine_name() {
        // Seed 003's machines: DGX-1 V100 (6 NVLink2 lanes per GPU, no switch), DGX A100
        // (12 NVLink3 lanes into NVSwitch), 8 GPUs on PCIe Gen4; one NIC per machine.
        let (arch, intra, rate) = match name {
            "p3.16xlarge" => (Arch::Sm70, IntraLink::NvLink, 6.0 * LANE),
            "dgx-a100" => (Arch::Sm80, IntraLink::NvSwitch, 12.0 * LANE),
            _ => (Arch::Sm80, IntraLink::Pcie, PCIE_GEN4_X16),
        };
        let g = spec.machine().map_or(8, |m| m.gpus()).max(1).min(ranks);
        return Ok(NcclFabric {
            nodes: ranks.div_ceil(g),
            gpus_per_node: g,
            arch,
            intra,
            intra_bytes_per_s: rate,
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
///   `1 / oversubscription` of their downlinks.
///
/// None on `star` and `nodes` (one switch), and where the cut is as wide as the hosts'
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
        _ => return None,
    };
    (side >= 1 && side < ranks && bytes_per_s < nics).then_some(HostCut { ranks: side, bytes_per_s })
}
