//! [`NcclFabric::from_topology`]: the fabric NCCL sees on a topology spec.
//!
//! Line rates come from the presets (datasheets, `topology/node.rs`); NCCL's own figures
//! (and so the efficiencies relative to line rate) come from `graph.rs`: NVLink at 20/25
//! = 0.8 of line rate (V100, A100) and 20.6/25 = 0.824 (H100/H200), PCIe at 0.75, a NIC
//! at its line rate behind the GPU's PCIe path (24/25 = 0.96 for 200G on A100, 48/50 =
//! 0.96 for 400G on H100 after the search's speed list).

use super::{Arch, Calibration, IntraLink, NcclFabric, Transport};
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
        arch: Arch::Sm80,
        intra: IntraLink::Pcie,
        intra_bytes_per_s: PCIE_GEN4_X16,
        nvls: false,
        collnet,
        nics_per_node: 1,
        nic_bytes_per_s: host_bytes_per_s,
        transport,
        calibration,
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
