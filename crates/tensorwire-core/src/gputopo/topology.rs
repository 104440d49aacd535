//! The GPUs of one machine and the links between them, as a symmetric matrix of integer
//! link weights (seed 003): 0 no direct link, 1 PCIe (through the CPU), 2 one NVLink,
//! 3 two bonded NVLinks. Only the order of the weights matters to tree generation; the
//! simulator turns a weight into a bandwidth with [`link_bytes_per_s`].

use crate::error::{Error, Result};

/// Weight of a pair with no direct link.
pub const NO_LINK: u32 = 0;
/// Weight of a PCIe path through the CPU (seed 003: "PCI-E connection + CPU").
pub const PCIE: u32 = 1;
/// Weight of one NVLink.
pub const SINGLE_NVLINK: u32 = 2;
/// Weight of two bonded NVLinks.
pub const DOUBLE_NVLINK: u32 = 3;

/// Most GPUs a topology may have. One machine or one NVLink domain (an NVL72 rack has
/// 72); the bound keeps Kernighan-Lin, O(n^3) per bisection, well under a second.
pub const MAX_GPUS: usize = 128;

/// The presets: name and one line saying what they model.
pub static PRESETS: &[(&str, &str)] = &[
    ("p3.16xlarge", "8 V100 in the DGX-1 hybrid cube-mesh: double and single NVLinks, PCIe between the rest"),
    ("dgx-a100", "8 A100 on NVSwitch: every pair has the same full NVLink bandwidth (weight 3)"),
    ("pcie-8", "8 GPUs without NVLink: every pair talks over PCIe through the CPU (weight 1)"),
];

/// NVLink wiring of the DGX-1 with V100 (AWS p3.16xlarge), as `(gpu, gpu, weight)`.
///
/// Source: NVIDIA, "NVIDIA DGX-1 With Tesla V100 System Architecture" (white paper
/// WP-08437-002, 2017), figure "DGX-1 uses an 8-GPU hybrid cube-mesh interconnection
/// network topology", and the matrix that `nvidia-smi topo -m` prints on a p3.16xlarge
/// (NV2 = two bonded NVLinks, NV1 = one, SYS = PCIe through the CPUs). The same matrix
/// is the p3.16xlarge fixture of MXNet's tree all-reduce tests (`gpu_topology_test.cc`),
/// the implementation of seed 003. Each V100 has six NVLink ports and uses all of them:
/// two double links and two single links per GPU; GPUs 0-3 and 4-7 form the two quads of
/// the cube, each quad fully connected, and each GPU has one link to the other quad.
const DGX1V_NVLINKS: &[(usize, usize, u32)] = &[
    // quad 0-3, fully connected
    (0, 1, SINGLE_NVLINK),
    (0, 2, SINGLE_NVLINK),
    (0, 3, DOUBLE_NVLINK),
    (1, 2, DOUBLE_NVLINK),
    (1, 3, SINGLE_NVLINK),
    (2, 3, DOUBLE_NVLINK),
    // quad 4-7, fully connected
    (4, 5, SINGLE_NVLINK),
    (4, 6, SINGLE_NVLINK),
    (4, 7, DOUBLE_NVLINK),
    (5, 6, DOUBLE_NVLINK),
    (5, 7, SINGLE_NVLINK),
    (6, 7, DOUBLE_NVLINK),
    // between the quads: GPU i to GPU i + 4
    (0, 4, DOUBLE_NVLINK),
    (1, 5, DOUBLE_NVLINK),
    (2, 6, SINGLE_NVLINK),
    (3, 7, SINGLE_NVLINK),
];

/// Bandwidth in bytes/s of a link of `weight`, each direction, per seed 003's
/// p3.16xlarge: two NVLinks 50 GB/s, one NVLink 25 GB/s, PCIe through the CPU 10 GB/s
/// (GB = 10^9 bytes). One NVLink 2.0 carries 25 GB/s each way, so these are per-direction
/// rates. For `dgx-a100` the weight-3 rate is the seed's, not NVSwitch's (an A100 has
/// 300 GB/s each way, shared by all its peers): model NVSwitch as a switch, not as
/// pairwise links, where its bandwidth matters.
pub fn link_bytes_per_s(weight: u32) -> Result<f64> {
    match weight {
        DOUBLE_NVLINK => Ok(50e9),
        SINGLE_NVLINK => Ok(25e9),
        PCIE => Ok(10e9),
        _ => Err(Error::invalid(
            "weight",
            format!("{weight} has no bandwidth; link weights are 1 (PCIe), 2 (one NVLink) or 3 (two NVLinks)"),
        )),
    }
}

/// The GPUs of one machine and their link weights. Always valid: square, symmetric,
/// zero diagonal, connected, 1 to [`MAX_GPUS`] GPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuTopology {
    gpus: usize,
    /// Row-major `gpus x gpus` weights.
    weights: Vec<u32>,
}

impl GpuTopology {
    /// The preset called `name`; see [`PRESETS`].
    pub fn preset(name: &str) -> Result<Self> {
        match name {
            "p3.16xlarge" => Ok(Self::p3_16xlarge()),
            "dgx-a100" => Ok(Self::dgx_a100()),
            "pcie-8" => Ok(Self::pcie_8()),
            _ => {
                let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
                Err(Error::invalid("preset", format!("unknown preset {name:?}; choose one of {}", names.join(", "))))
            }
        }
    }

    /// AWS p3.16xlarge = NVIDIA DGX-1V: 8 V100 in the hybrid cube-mesh of seed 003's
    /// Figure 3, PCIe (weight 1) between the 12 pairs with no NVLink. See `DGX1V_NVLINKS`
    /// in the source for the wiring and where it comes from.
    pub fn p3_16xlarge() -> Self {
        let mut t = Self::uniform(8, PCIE);
        for &(a, b, w) in DGX1V_NVLINKS {
            t.set(a, b, w);
        }
        t
    }

    /// NVIDIA DGX A100: 8 A100, each with 12 NVLinks into six NVSwitches, so every pair
    /// reaches the full NVLink bandwidth of a GPU and no pair is better than another.
    /// All pairs get weight 3, the top of seed 003's scale: a pair is at least as good as
    /// a double NVLink. Only relative weights steer tree generation, so with all pairs
    /// equal every balanced tree weighs the same and the link-usage penalty alone spreads
    /// several trees over different links.
    pub fn dgx_a100() -> Self {
        Self::uniform(8, DOUBLE_NVLINK)
    }

    /// 8 GPUs without NVLink: every pair is PCIe through the CPU (weight 1).
    pub fn pcie_8() -> Self {
        Self::uniform(8, PCIE)
    }

    /// `gpus` GPUs (1 to [`MAX_GPUS`]) with every pair linked at `weight` > 0; the
    /// `pcie-8` and `dgx-a100` presets are `uniform(8, 1)` and `uniform(8, 3)`.
    pub fn all_pairs(gpus: usize, weight: u32) -> Result<Self> {
        if gpus == 0 || gpus > MAX_GPUS {
            return Err(Error::invalid("gpus", format!("{gpus} GPUs; allowed 1 to {MAX_GPUS}")));
        }
        if weight == NO_LINK {
            return Err(Error::invalid("weight", "0 means no link; a link weight is an integer >= 1"));
        }
        Ok(Self::uniform(gpus, weight))
    }

    /// A topology from a square matrix of link weights, row `i` column `j` the link
    /// between GPU `i` and GPU `j`. Errors name the field `adjacency`.
    pub fn from_adjacency(rows: &[Vec<i64>]) -> Result<Self> {
        let field = "adjacency";
        let n = rows.len();
        let allowed = "weights are integers >= 0 (0 no link, 1 PCIe, 2 one NVLink, 3 two NVLinks)";
        if n == 0 {
            return Err(Error::invalid(field, "is empty; give a square matrix of link weights, one row per GPU"));
        }
        if n > MAX_GPUS {
            return Err(Error::invalid(field, format!("has {n} rows; at most {MAX_GPUS} GPUs are allowed")));
        }
        let mut weights = vec![NO_LINK; n * n];
        for (i, row) in rows.iter().enumerate() {
            if row.len() != n {
                return Err(Error::invalid(
                    field,
                    format!("row {i} has {} entries but there are {n} rows; the matrix must be square", row.len()),
                ));
            }
            for (j, &v) in row.iter().enumerate() {
                let Ok(w) = u32::try_from(v) else {
                    return Err(Error::invalid(field, format!("entry [{i}][{j}] is {v}; {allowed}")));
                };
                weights[i * n + j] = w;
            }
        }
        for i in 0..n {
            let d = weights[i * n + i];
            if d != NO_LINK {
                return Err(Error::invalid(
                    field,
                    format!("entry [{i}][{i}] is {d}; the diagonal must be 0 (a GPU has no link to itself)"),
                ));
            }
            for j in (i + 1)..n {
                let (a, b) = (weights[i * n + j], weights[j * n + i]);
                if a != b {
                    return Err(Error::invalid(
                        field,
                        format!("entries [{i}][{j}] = {a} and [{j}][{i}] = {b} differ; the matrix must be symmetric"),
                    ));
                }
            }
        }
        let t = GpuTopology { gpus: n, weights };
        if let Some(lost) = t.unreachable_gpu() {
            return Err(Error::invalid(
                field,
                format!("GPU {lost} has no path of links (weight > 0) to GPU 0; the GPUs must be connected"),
            ));
        }
        Ok(t)
    }

    fn uniform(gpus: usize, weight: u32) -> Self {
        let mut weights = vec![weight; gpus * gpus];
        for i in 0..gpus {
            weights[i * gpus + i] = NO_LINK;
        }
        GpuTopology { gpus, weights }
    }

    fn set(&mut self, a: usize, b: usize, w: u32) {
        self.weights[a * self.gpus + b] = w;
        self.weights[b * self.gpus + a] = w;
    }

    /// The lowest-numbered GPU that GPU 0 cannot reach, if any (depth-first search).
    fn unreachable_gpu(&self) -> Option<usize> {
        let n = self.gpus;
        let mut seen = vec![false; n];
        let mut stack = vec![0];
        seen[0] = true;
        while let Some(v) = stack.pop() {
            let row = &self.weights[v * n..(v + 1) * n];
            for (u, (&w, s)) in row.iter().zip(seen.iter_mut()).enumerate() {
                if !*s && w > NO_LINK {
                    *s = true;
                    stack.push(u);
                }
            }
        }
        seen.iter().position(|s| !s)
    }

    /// Number of GPUs.
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    /// Weight of the link between GPUs `a` and `b` (0: none, and for `a == b`).
    ///
    /// # Panics
    /// If `a` or `b` is not below [`GpuTopology::gpus`] (an indexing bug, not bad input).
    pub fn weight(&self, a: usize, b: usize) -> u32 {
        assert!(a < self.gpus && b < self.gpus, "GPU index out of range");
        self.weights[a * self.gpus + b]
    }

    /// The links as `(a, b, weight)` with `a < b` and weight > 0, in row order.
    pub fn links(&self) -> Vec<(usize, usize, u32)> {
        let n = self.gpus;
        let mut out = Vec::new();
        for a in 0..n {
            for b in (a + 1)..n {
                let w = self.weights[a * n + b];
                if w > NO_LINK {
                    out.push((a, b, w));
                }
            }
        }
        out
    }

    /// The weight matrix, one row per GPU.
    pub fn adjacency(&self) -> Vec<Vec<u32>> {
        self.weights.chunks(self.gpus).map(<[u32]>::to_vec).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adj(t: &GpuTopology) -> Vec<Vec<i64>> {
        t.adjacency().iter().map(|r| r.iter().map(|&w| w as i64).collect()).collect()
    }

    #[test]
    fn dgx1v_uses_all_six_nvlink_ports_of_every_gpu() {
        let t = GpuTopology::p3_16xlarge();
        for g in 0..8 {
            // A double link takes two ports, a single link one.
            let ports: u32 = (0..8).map(|o| t.weight(g, o)).filter(|&w| w >= SINGLE_NVLINK).map(|w| w - 1).sum();
            assert_eq!(ports, 6, "GPU {g}");
            let doubles = (0..8).filter(|&o| t.weight(g, o) == DOUBLE_NVLINK).count();
            let pcie = (0..8).filter(|&o| t.weight(g, o) == PCIE).count();
            assert_eq!((doubles, pcie), (2, 3), "GPU {g}");
        }
        assert_eq!(t.links().len(), 28);
        assert_eq!(t.weight(0, 3), 3);
        assert_eq!(t.weight(0, 5), 1);
    }

    #[test]
    fn p3_16xlarge_matches_nvidia_smi_topo() {
        // `nvidia-smi topo -m` on a p3.16xlarge, NV2 -> 3, NV1 -> 2, SYS -> 1.
        let smi = [
            "X NV1 NV1 NV2 NV2 SYS SYS SYS",
            "NV1 X NV2 NV1 SYS NV2 SYS SYS",
            "NV1 NV2 X NV2 SYS SYS NV1 SYS",
            "NV2 NV1 NV2 X SYS SYS SYS NV1",
            "NV2 SYS SYS SYS X NV1 NV1 NV2",
            "SYS NV2 SYS SYS NV1 X NV2 NV1",
            "SYS SYS NV1 SYS NV1 NV2 X NV2",
            "SYS SYS SYS NV1 NV2 NV1 NV2 X",
        ];
        let rows: Vec<Vec<i64>> = smi
            .iter()
            .map(|r| {
                r.split_whitespace()
                    .map(|c| match c {
                        "X" => 0,
                        "NV2" => 3,
                        "NV1" => 2,
                        _ => 1,
                    })
                    .collect()
            })
            .collect();
        assert_eq!(GpuTopology::from_adjacency(&rows).unwrap(), GpuTopology::p3_16xlarge());
    }

    #[test]
    fn presets_by_name() {
        for (name, _) in PRESETS {
            let t = GpuTopology::preset(name).unwrap();
            assert_eq!(t.gpus(), 8);
            assert_eq!(GpuTopology::from_adjacency(&adj(&t)).unwrap(), t);
        }
        assert!(GpuTopology::dgx_a100().links().iter().all(|l| l.2 == 3));
        assert!(GpuTopology::pcie_8().links().iter().all(|l| l.2 == 1));
        let e = GpuTopology::preset("dgx-2").unwrap_err();
        assert_eq!(e.field(), "preset");
        assert!(e.to_string().contains("p3.16xlarge, dgx-a100, pcie-8"), "{e}");
    }

    #[test]
    fn bad_adjacency_names_the_field_and_the_rule() {
        let cases: &[(Vec<Vec<i64>>, &str)] = &[
            (vec![], "empty"),
            (vec![vec![0, 1], vec![1]], "square"),
            (vec![vec![0, -1], vec![-1, 0]], ">= 0"),
            (vec![vec![1, 1], vec![1, 0]], "diagonal"),
            (vec![vec![0, 2], vec![3, 0]], "symmetric"),
            (vec![vec![0, 1, 0], vec![1, 0, 0], vec![0, 0, 0]], "GPU 2"),
            (vec![vec![0, 1i64 << 40], vec![1i64 << 40, 0]], ">= 0"),
        ];
        for (rows, words) in cases {
            let e = GpuTopology::from_adjacency(rows).unwrap_err();
            assert_eq!(e.field(), "adjacency");
            assert!(e.to_string().contains(words), "{e} should say {words}");
        }
        assert_eq!(GpuTopology::from_adjacency(&[vec![0]]).unwrap().gpus(), 1);
        assert_eq!(GpuTopology::all_pairs(0, 1).unwrap_err().field(), "gpus");
        assert_eq!(GpuTopology::all_pairs(4, 0).unwrap_err().field(), "weight");
    }

    #[test]
    fn bandwidth_per_weight_follows_seed_003() {
        assert_eq!(link_bytes_per_s(3).unwrap(), 50e9);
        assert_eq!(link_bytes_per_s(2).unwrap(), 25e9);
        assert_eq!(link_bytes_per_s(1).unwrap(), 10e9);
        assert_eq!(link_bytes_per_s(0).unwrap_err().field(), "weight");
        assert_eq!(link_bytes_per_s(4).unwrap_err().field(), "weight");
    }
}
