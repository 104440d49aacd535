//! GPU machines as the network sees them: how many GPUs, the rate of each GPU into the
//! machine's NVSwitch fabric, and the rate of each GPU's NIC. Used by the `rail`
//! topology (and its docs, `docs/fabrics.md`).
//!
//! NVSwitch is modelled as one non-blocking switch per machine with one link pair per
//! GPU at the GPU's NVLink rate per direction: a GPU can send and receive its full NVLink
//! bandwidth at once, to any mix of peers, as on the real machines (every GPU's NVLinks
//! are spread over all NVSwitch chips, which are non-blocking).

use crate::error::{Error, Result};

/// One machine preset. Rates are bytes/s per direction (GB = 10^9 B, Gbps = 10^9 bit/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodePreset {
    /// Name as written in specs, e.g. `dgx-h100`.
    pub name: &'static str,
    /// GPUs per machine.
    pub gpus: usize,
    /// Each GPU's NVLink bandwidth into the NVSwitch fabric, per direction, bytes/s.
    pub nvlink_bytes_per_s: f64,
    /// Each GPU's NIC (one per GPU, on its rail), per direction, bytes/s.
    pub nic_bytes_per_s: f64,
    /// GPU architecture (selects NCCL's per-architecture tables).
    pub arch: crate::nccl::Arch,
    /// NVLink lanes per GPU (25 GB/s per direction each: `nvlink_bytes_per_s` / 25 GB/s).
    pub nvlink_lanes: usize,
    /// The NVSwitches do NVLink SHARP (NVLS): third-generation NVSwitch (sm90 HGX/DGX).
    pub nvls: bool,
    /// One line saying what it models and where the figures come from.
    pub summary: &'static str,
}

/// NVIDIA DGX A100: 8 x A100 SXM4 40/80 GB, six NVSwitches; each A100 has 12 third-generation
/// NVLinks of 50 GB/s bidirectional, 600 GB/s per GPU = 300 GB/s per direction; eight
/// single-port ConnectX-6 HDR InfiniBand adapters, 200 Gbit/s each, one per GPU for the
/// compute fabric. Sources: NVIDIA DGX A100 datasheet (2020: "NVIDIA NVSwitches: 6",
/// "Networking: 8x Single-Port Mellanox ConnectX-6 VPI 200Gb/s HDR InfiniBand"), NVIDIA A100
/// datasheet ("NVLink: 600GB/s"), DGX A100 User Guide (network ports: eight compute ports,
/// one per GPU, cabled as rails in the SuperPOD reference architecture).
pub const DGX_A100: NodePreset = NodePreset {
    name: "dgx-a100",
    gpus: 8,
    nvlink_bytes_per_s: 300e9,
    nic_bytes_per_s: 25e9,
    arch: crate::nccl::Arch::Sm80,
    nvlink_lanes: 12,
    nvls: false,
    summary: "8 x A100 SXM4: NVSwitch 300 GB/s per GPU per direction, 8 x 200 Gbit/s HDR NICs (DGX A100 datasheet)",
};

/// NVIDIA DGX H100: 8 x H100 SXM5, four NVSwitches; each H100 has 18 fourth-generation
/// NVLinks, 900 GB/s bidirectional per GPU = 450 GB/s per direction; eight single-port
/// ConnectX-7 adapters at 400 Gbit/s (InfiniBand NDR or Ethernet), one per GPU, behind
/// four OSFP cages. Sources: NVIDIA DGX H100 datasheet (2022/2023: "GPU: 8x NVIDIA H100
/// Tensor Core GPUs", "NVIDIA NVSwitch: 4x", "Networking: 4x OSFP ports serving 8x
/// single-port NVIDIA ConnectX-7 VPI, up to 400Gb/s InfiniBand/Ethernet"), NVIDIA H100
/// datasheet (SXM: "NVLink: 900GB/s"), DGX H100 User Guide (network connections: the
/// eight compute ports, one per GPU, are the rails of the DGX SuperPOD fabric).
pub const DGX_H100: NodePreset = NodePreset {
    name: "dgx-h100",
    gpus: 8,
    nvlink_bytes_per_s: 450e9,
    nic_bytes_per_s: 50e9,
    arch: crate::nccl::Arch::Sm90,
    nvlink_lanes: 18,
    nvls: true,
    summary:
        "8 x H100 SXM5: NVSwitch 450 GB/s per GPU per direction, 8 x 400 Gbit/s ConnectX-7 NICs (DGX H100 datasheet)",
};

/// HGX H200 (e.g. Azure ND H200 v5): 8 x H200 SXM on the same fourth-generation NVLink
/// and NVSwitch as the H100 (18 links, 900 GB/s bidirectional per GPU = 450 GB/s per
/// direction, NVLink SHARP) and eight 400 Gbit/s NICs, one per GPU. Sources: NVIDIA H200
/// datasheet ("NVIDIA NVLink: 900GB/s"), Microsoft's ND H200 v5 page ("8 NVIDIA H200 ...
/// interconnected by NVLink 4.0", "400 Gb/s NVIDIA Quantum-2 CX7 InfiniBand per GPU"),
/// stas00/ml-engineering `network/README.md` (8 x H200 nccl-tests with NVLS).
pub const HGX_H200: NodePreset = NodePreset {
    name: "hgx-h200",
    gpus: 8,
    nvlink_bytes_per_s: 450e9,
    nic_bytes_per_s: 50e9,
    arch: crate::nccl::Arch::Sm90,
    nvlink_lanes: 18,
    nvls: true,
    summary: "8 x H200 SXM: NVSwitch 450 GB/s per GPU per direction, 8 x 400 Gbit/s NICs (Azure ND H200 v5)",
};

/// Google Cloud A3 Mega (a3-megagpu-8g): 8 x H100 SXM on NVSwitch (NVLink4, 450 GB/s per
/// direction per GPU) and eight 200 Gbit/s GPU NICs for GPUDirect-TCPXO: Google Cloud,
/// "Networking and GPU machines" (<https://cloud.google.com/compute/docs/gpus/gpu-network-bandwidth>:
/// A3 Mega "up to 1,600 Gbps" of GPU-to-GPU networking, 1,800 Gbps with the host NIC,
/// GPUDirect-TCPXO). The hardware has NVLink SHARP, but Google's NCCL configuration for A3
/// Mega turns it off (`NCCL_NVLS_ENABLE=0`, with `NCCL_ALGO=Ring,Tree`, `NCCL_PROTO=Simple` and
/// Google's tuner plugin; AI-Hypercomputer/gpu-recipes
/// `src/helm-charts/a3mega/nccl-tests/run_test.sh`): `nccl:algo=ring+tree,proto=simple` runs
/// what that configuration lets NCCL run (docs/fabrics.md).
pub const A3_MEGA: NodePreset = NodePreset {
    name: "a3-mega",
    gpus: 8,
    nvlink_bytes_per_s: 450e9,
    nic_bytes_per_s: 25e9,
    arch: crate::nccl::Arch::Sm90,
    nvlink_lanes: 18,
    nvls: true,
    summary:
        "GCP A3 Mega, 8 x H100 SXM: NVSwitch 450 GB/s per GPU per direction, 8 x 200 Gbit/s NICs (GPUDirect-TCPXO)",
};

/// Every node preset.
pub static NODE_PRESETS: &[NodePreset] = &[DGX_A100, DGX_H100, HGX_H200, A3_MEGA];

/// Names of the node presets, for option tables.
pub static NODE_NAMES: &[&str] = &["dgx-h100", "dgx-a100", "hgx-h200", "a3-mega"];

impl NodePreset {
    /// The preset called `name`.
    pub fn by_name(name: &str) -> Result<Self> {
        NODE_PRESETS.iter().copied().find(|p| p.name == name).ok_or_else(|| {
            Error::invalid("topology.node", format!("unknown node {name:?}; choose one of {}", NODE_NAMES.join(", ")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_listed_and_found_by_name() {
        for name in NODE_NAMES {
            assert_eq!(NodePreset::by_name(name).unwrap().name, *name);
        }
        assert_eq!(NODE_NAMES.len(), NODE_PRESETS.len());
        // 400 Gbit/s = 50 GB/s; 900 GB/s bidirectional NVLink = 450 GB/s each way.
        assert_eq!(DGX_H100.nic_bytes_per_s * 8.0, 400e9);
        assert_eq!(DGX_A100.nic_bytes_per_s * 8.0, 200e9);
        assert!(NodePreset::by_name("dgx-2").is_err());
        for p in NODE_PRESETS {
            // Lanes x 25 GB/s per direction is the NVLink rate.
            assert_eq!(p.nvlink_lanes as f64 * 25e9, p.nvlink_bytes_per_s, "{}", p.name);
            assert_eq!(p.nvls, p.arch == crate::nccl::Arch::Sm90, "{}", p.name);
        }
    }
}
