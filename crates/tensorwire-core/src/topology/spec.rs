//! `--topology` specs: `star`, `ring`, `leaf-spine[:hosts_per_leaf=N,spines=M,uplink=RATE]`.

use super::Topology;
use crate::error::{Error, Result};
use crate::spec::{self, OptionInfo, OptionKind, Spec};
use crate::units::Nanos;

static STAR: &[OptionInfo] = &[];
static LEAF_SPINE: &[OptionInfo] = &[
    OptionInfo { name: "hosts_per_leaf", kind: OptionKind::Count, default: "16", help: "hosts under each leaf switch" },
    OptionInfo { name: "spines", kind: OptionKind::Count, default: "4", help: "number of spine switches" },
    OptionInfo {
        name: "uplink",
        kind: OptionKind::Rate,
        default: "",
        help:
            "rate of each leaf-spine link; default makes the fabric non-blocking (host rate x hosts_per_leaf / spines)",
    },
];

static NODES: &[OptionInfo] = &[OptionInfo {
    name: "machine",
    kind: OptionKind::Choice(&["p3.16xlarge", "dgx-a100", "pcie-8"]),
    default: "p3.16xlarge",
    help: "GPU wiring inside each machine (seed 003); NICs at --bandwidth to one switch",
}];

/// The topology builders and their options, for listings.
pub static TOPOLOGIES: &[(&str, &str, &[OptionInfo])] = &[
    ("star", "every host on one non-blocking switch", STAR),
    ("ring", "hosts wired in a cycle, no switch; hosts forward for each other", STAR),
    ("leaf-spine", "two-tier Clos with deterministic ECMP over the spines", LEAF_SPINE),
    ("nodes", "multi-GPU machines (NVLink/PCIe inside), one NIC each to a switch; workers are GPUs", NODES),
];

/// A parsed topology spec, built later for a given number of hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologySpec(Spec);

impl TopologySpec {
    /// Parses `text`, e.g. `leaf-spine:hosts_per_leaf=8,spines=2`.
    pub fn parse(text: &str) -> Result<Self> {
        let (name, pairs) = spec::split("topology", text)?;
        let Some((_, _, table)) = TOPOLOGIES.iter().find(|(n, _, _)| *n == name) else {
            let names: Vec<&str> = TOPOLOGIES.iter().map(|t| t.0).collect();
            return Err(Error::invalid(
                "topology",
                format!("unknown topology {name:?}; choose one of {}", names.join(", ")),
            ));
        };
        let given = spec::parse_options("topology", &name, &pairs, &[table])?;
        Ok(TopologySpec(Spec { name, given }))
    }

    /// The builder name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The GPU wiring of each machine, for `nodes`.
    pub fn machine(&self) -> Option<crate::gputopo::GpuTopology> {
        (self.0.name == "nodes").then(|| {
            crate::gputopo::GpuTopology::preset(self.0.choice("machine").unwrap_or("p3.16xlarge"))
                .expect("listed presets exist")
        })
    }

    /// Builds it for `workers` worker hosts plus `extra` other hosts (servers) at
    /// `bytes_per_s` per host link (per NIC for `nodes`) and `latency` per hop.
    pub fn build(&self, workers: usize, extra: usize, bytes_per_s: f64, latency: Nanos) -> Topology {
        let bw = bytes_per_s / 1e9;
        let hosts = workers + extra;
        match self.0.name.as_str() {
            "star" => Topology::star(hosts, bw, latency),
            "ring" => Topology::ring(hosts, bw, latency),
            "nodes" => Topology::machines(workers, extra, &self.machine().expect("nodes"), bw, latency),
            _ => {
                let per_leaf = self.0.count("hosts_per_leaf").unwrap_or(16) as usize;
                let spines = self.0.count("spines").unwrap_or(4) as usize;
                let uplink = self.0.rate("uplink").map(|r| r / 1e9).unwrap_or(bw * per_leaf as f64 / spines as f64);
                Topology::leaf_spine(hosts, per_leaf, spines, bw, uplink, latency)
            }
        }
    }
}
