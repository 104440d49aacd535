//! `--topology` specs: `star`, `ring`, `leaf-spine[:hosts_per_leaf=N,spines=M,uplink=RATE]`,
//! `nodes[:machine=NAME,nodes_per_leaf=N,oversubscription=X]`, `rail[:node=NAME,nodes_per_group=N,spines=M,oversubscription=X,nic=RATE,nvlink=RATE]`;
//! `nodes` and `rail` also take the network's transport (`transport=`), NCCL's fabric options
//! (`sharp=`, `nvls=`) and calibration
//! (`intra_efficiency=`, `inter_efficiency=`, `intra_latency=`, `inter_latency=`,
//! `intra_fill=`, `inter_fill=`, `intra_step=`, `inter_step=`, `nvls_efficiency=`,
//! `nvls_fill=`, `nvlstree_efficiency=`, `nvlstree_fill=`).

use super::Topology;
use crate::error::{Error, Result};
use crate::limits::{self, MAX_LINKS, MAX_SERVERS, MAX_SWITCHES, MAX_WORKERS};
use crate::spec::{self, OptionInfo, OptionKind, Spec};
use crate::units::Nanos;

/// The largest calibrated cost of one pipeline step (`intra_step=`, `inter_step=`), seconds:
/// a hand-off between two GPUs is a synchronisation of microseconds, so a millisecond or more
/// is an input mistake (and would multiply into hours over a large operation's steps).
pub const MAX_STEP_S: f64 = 1e-3;

/// The largest calibrated efficiency (`intra_efficiency=`, `inter_efficiency=`,
/// `nvls_efficiency=`, `nvlstree_efficiency=`): a factor on NCCL's own bandwidth figures, which are 0.75-0.96 of line
/// rate, so twice them is past any link's line rate.
pub const MAX_EFFICIENCY: f64 = 2.0;

/// Largest `oversubscription` of a rail fabric's leaves: an uplink 1,024 times thinner than
/// the downlinks it serves (deployed fabrics run 1 to 4). 1e308 left the uplinks no rate at
/// all, and the run stalled.
pub const MAX_OVERSUBSCRIPTION: f64 = 1024.0;

/// The largest calibrated fill factor (`intra_fill=`, `inter_fill=`, `nvls_fill=`,
/// `nvlstree_fill=`): ten
/// times NCCL's pipeline depths.
pub const MAX_FILL: f64 = 10.0;

/// The network transports a GPU fabric's `transport=` names (the strategies' presets of
/// the same names: `crate::strategy::options`).
const TRANSPORTS: &[&str] = &["rdma", "tcp"];

// The options of GPU fabrics (`nodes`, `rail`) that NCCL's model reads
// (`crate::nccl::NcclFabric::from_topology`), in both tables.
static STAR: &[OptionInfo] = &[];
static LEAF_SPINE: &[OptionInfo] = &[
    OptionInfo {
        name: "hosts_per_leaf",
        kind: OptionKind::Count,
        default: "16",
        help: "hosts under each leaf switch",
        aliases: &[],
    },
    OptionInfo {
        name: "spines",
        kind: OptionKind::Count,
        default: "4",
        help: "number of spine switches",
        aliases: &[],
    },
    OptionInfo {
        name: "uplink",
        kind: OptionKind::Rate,
        default: "",
        help:
            "rate of each leaf-spine link; default makes the fabric non-blocking (host rate x hosts_per_leaf / spines)",
        aliases: &[],
    },
];

static NODES: &[OptionInfo] = &[
    OptionInfo {
        name: "machine",
        kind: OptionKind::Choice(&["p3.16xlarge", "dgx-a100", "pcie-8"]),
        default: "p3.16xlarge",
        help: "GPU wiring inside each machine (seed 003); one NIC each at --bandwidth",
        aliases: &[],
    },
    OptionInfo {
        name: "nodes_per_leaf",
        kind: OptionKind::Count,
        default: "",
        help: "machines per leaf switch, the leaves joined by a top (spine) layer; default all on one switch",
        aliases: &[],
    },
    OptionInfo {
        name: "oversubscription",
        kind: OptionKind::RealAtMost(MAX_OVERSUBSCRIPTION),
        default: "1",
        help: "a leaf's NIC capacity / its uplink capacity, with nodes_per_leaf (1 = non-blocking; at most 1,024)",
        aliases: &[],
    },
];

/// Options of the GPU fabrics (`nodes`, `rail`) that NCCL's model reads: the network's
/// transport, switch capabilities and the calibration `tensorwire calibrate` fits
/// (`nccl::Calibration`).
static NCCL_FABRIC: &[OptionInfo] = &[
    OptionInfo {
        name: "transport",
        kind: OptionKind::Choice(TRANSPORTS),
        default: "rdma",
        help: "the network's transport, as NCCL picks it from the NICs: rdma (InfiniBand/RoCE verbs, GPUDirect) or tcp (NCCL's socket transport over kernel TCP); a strategy's own transport= overrides it",
        aliases: &[],
    },
    OptionInfo {
        name: "sharp",
        kind: OptionKind::Flag,
        default: "false",
        help: "SHARP in-network reduction in the network switches (NCCL's CollNet algorithms)",
        aliases: &[],
    },
    OptionInfo {
        name: "nvls",
        kind: OptionKind::Flag,
        default: "",
        help: "NVLink SHARP in the NVSwitches (NCCL's NVLS); default the node's capability (sm90 NVSwitch nodes)",
        aliases: &[],
    },
    OptionInfo {
        name: "intra_efficiency",
        kind: OptionKind::RealAtMost(MAX_EFFICIENCY),
        default: "1",
        help: "calibration: factor in (0, 2] on NCCL's intra-node bandwidth (single-node collectives)",
        aliases: &[],
    },
    OptionInfo {
        name: "inter_efficiency",
        kind: OptionKind::RealAtMost(MAX_EFFICIENCY),
        default: "1",
        help: "calibration: factor in (0, 2] on NCCL's bandwidth of multi-node collectives",
        aliases: &[],
    },
    OptionInfo {
        name: "intra_latency",
        kind: OptionKind::Duration,
        default: "0s",
        help: "calibration: latency added to each single-node collective",
        aliases: &[],
    },
    OptionInfo {
        name: "inter_latency",
        kind: OptionKind::Duration,
        default: "0s",
        help: "calibration: latency added to each multi-node collective",
        aliases: &[],
    },
    OptionInfo {
        name: "intra_fill",
        kind: OptionKind::NonNegativeRealAtMost(MAX_FILL),
        default: "1",
        help: "calibration: factor in [0, 10] on NCCL's pipeline fill and drain (single-node collectives)",
        aliases: &[],
    },
    OptionInfo {
        name: "inter_fill",
        kind: OptionKind::NonNegativeRealAtMost(MAX_FILL),
        default: "1",
        help: "calibration: factor in [0, 10] on NCCL's pipeline fill and drain (multi-node collectives)",
        aliases: &[],
    },
    OptionInfo {
        name: "intra_step",
        kind: OptionKind::Duration,
        default: "0s",
        help: "calibration: cost of each pipeline step (a hand-off between two GPUs), at most 1ms (single-node collectives)",
        aliases: &[],
    },
    OptionInfo {
        name: "inter_step",
        kind: OptionKind::Duration,
        default: "0s",
        help: "calibration: cost of each pipeline step (a hand-off between two GPUs), at most 1ms (multi-node collectives)",
        aliases: &[],
    },
    OptionInfo {
        name: "nvls_efficiency",
        kind: OptionKind::RealAtMost(MAX_EFFICIENCY),
        default: "1",
        help: "calibration: factor in (0, 2] on NCCL's NVLink SHARP bandwidth (single-node NVLS; intra_efficiency covers the other algorithms)",
        aliases: &[],
    },
    OptionInfo {
        name: "nvls_fill",
        kind: OptionKind::NonNegativeRealAtMost(MAX_FILL),
        default: "1",
        help: "calibration: factor in [0, 10] on NVLS's pipeline fill and drain (single-node NVLS; intra_fill covers the other algorithms)",
        aliases: &[],
    },
    OptionInfo {
        name: "nvlstree_efficiency",
        kind: OptionKind::RealAtMost(MAX_EFFICIENCY),
        default: "1",
        help: "calibration: factor in (0, 2] on NCCL's NVLS tree bandwidth (multi-node; inter_efficiency covers the other algorithms)",
        aliases: &[],
    },
    OptionInfo {
        name: "nvlstree_fill",
        kind: OptionKind::NonNegativeRealAtMost(MAX_FILL),
        default: "1",
        help: "calibration: factor in [0, 10] on NVLS tree's pipeline fill and drain (multi-node; inter_fill covers the other algorithms)",
        aliases: &[],
    },
];

static RAIL: &[OptionInfo] = &[
    OptionInfo {
        name: "node",
        kind: OptionKind::Choice(super::node::NODE_NAMES),
        default: "dgx-h100",
        help: "machine preset: GPUs per node, NVSwitch and NIC rates (NVIDIA DGX datasheets)",
        aliases: &[],
    },
    OptionInfo {
        name: "nodes_per_group",
        kind: OptionKind::Count,
        default: "32",
        help: "nodes per rail group (one leaf per rail per group)",
        aliases: &[],
    },
    OptionInfo {
        name: "spines",
        kind: OptionKind::Count,
        default: "",
        help: "spine switches; default nodes_per_group",
        aliases: &[],
    },
    OptionInfo {
        name: "oversubscription",
        kind: OptionKind::RealAtMost(MAX_OVERSUBSCRIPTION),
        default: "1",
        help: "leaf downlink capacity / uplink capacity (1 = non-blocking; at most 1,024: past it the uplinks carry nothing an iteration could wait for)",
        aliases: &[],
    },
    OptionInfo {
        name: "nic",
        kind: OptionKind::Rate,
        default: "",
        help: "each GPU's NIC rate, as --bandwidth (give one of them); default the preset's",
        aliases: &[],
    },
    OptionInfo {
        name: "nvlink",
        kind: OptionKind::Rate,
        default: "",
        help: "each GPU's NVSwitch rate per direction; default the preset's",
        aliases: &[],
    },
];

/// The topology builders and their option tables (the GPU fabrics share NCCL's), for
/// parsing and listings.
pub static TOPOLOGIES: &[(&str, &str, &[&[OptionInfo]])] = &[
    ("star", "every host on one non-blocking switch", &[STAR]),
    ("ring", "hosts wired in a cycle, no switch; hosts forward for each other", &[STAR]),
    ("leaf-spine", "two-tier Clos with deterministic ECMP over the spines", &[LEAF_SPINE]),
    (
        "nodes",
        "multi-GPU machines (NVLink/PCIe inside), one NIC each to a switch or to leaves under a spine layer; workers are GPUs",
        &[NODES, NCCL_FABRIC],
    ),
    (
        "rail",
        "rail-optimised fat-tree of DGX machines: NVSwitch inside, one NIC per GPU on its rail's leaf, spines above",
        &[RAIL, NCCL_FABRIC],
    ),
];

/// A parsed topology spec, built later for a given number of hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologySpec(Spec);

impl TopologySpec {
    /// Parses `text`, e.g. `leaf-spine:hosts_per_leaf=8,spines=2`.
    pub fn parse(text: &str) -> Result<Self> {
        let (name, pairs) = spec::split("topology", text)?;
        let Some((_, _, tables)) = TOPOLOGIES.iter().find(|(n, _, _)| *n == name) else {
            let names: Vec<&str> = TOPOLOGIES.iter().map(|t| t.0).collect();
            return Err(Error::invalid(
                "topology",
                format!("unknown topology {name:?}; choose one of {}", names.join(", ")),
            ));
        };
        let given = spec::parse_options("topology", &name, &pairs, tables, &|_| true)?;
        let spec = Spec { name, given };
        for (option, max, what) in [
            ("spines", MAX_SWITCHES, "spine switches"),
            ("hosts_per_leaf", MAX_WORKERS, "hosts"),
            ("nodes_per_group", MAX_WORKERS, "nodes"),
            ("nodes_per_leaf", MAX_WORKERS, "nodes"),
        ] {
            if let Some(n) = spec.count(option) {
                limits::at_most(&format!("topology.{option}"), n, max as u64, what)?;
            }
        }
        if spec.name == "nodes" && spec.real("oversubscription").is_some() && spec.count("nodes_per_leaf").is_none() {
            return Err(Error::invalid(
                "topology.oversubscription",
                "needs nodes_per_leaf= (the machines under one leaf switch); without it every machine is on one switch",
            ));
        }
        let spec = TopologySpec(spec);
        spec.check_nccl_options()?;
        Ok(spec)
    }

    /// Refuses NCCL options the fabric cannot have: `nvls=true` where the node has no NVLink
    /// SHARP, latencies past the simulation horizon, step costs above [`MAX_STEP_S`]. (The
    /// factors' ranges, (0, [`MAX_EFFICIENCY`]] and [0, [`MAX_FILL`]], are their option kinds',
    /// checked when parsed and shown in the listings.)
    fn check_nccl_options(&self) -> Result<()> {
        for option in ["intra_step", "inter_step"] {
            if let Some(x) = self.0.duration(option).filter(|&x| x > MAX_STEP_S) {
                return Err(Error::invalid(
                    format!("topology.{option}"),
                    format!(
                        "{} s is outside [0, 1ms]; the cost of one pipeline step of NCCL (microseconds on real hardware)",
                        crate::units::format_number(x)
                    ),
                ));
            }
        }
        for option in ["intra_latency", "inter_latency"] {
            // Past the simulation horizon every collective fails at run time (in a sweep,
            // only the configurations with more than one node); refused up front instead.
            if let Some(x) = self.0.duration(option) {
                crate::units::seconds_to_nanos(&format!("topology.{option}"), x)?;
            }
        }
        if self.0.flag("nvls") == Some(true) && !self.node_preset().is_some_and(|p| p.nvls) {
            let with: Vec<&str> = super::node::NODE_PRESETS.iter().filter(|p| p.nvls).map(|p| p.name).collect();
            return Err(Error::invalid(
                "topology.nvls",
                format!(
                    "{} has no NVLink SHARP (it needs sm90 NVSwitch nodes: rail:node={}); use nvls=false",
                    match self.node_preset() {
                        Some(p) => format!("node {}", p.name),
                        None => format!("{} machine {}", self.0.name, self.machine_name().unwrap_or("")),
                    },
                    with.join(", rail:node=")
                ),
            ));
        }
        Ok(())
    }

    /// Whether the fabric's hosts are GPUs of machines the spec names (`rail` nodes,
    /// `nodes` machines): NCCL's world, where collectives run as kernels on the GPUs that
    /// compute, unlike the seeds' hosts (star, ring, leaf-spine), whose workers the
    /// seeds model as hosts with a network interface.
    pub fn gpu_machines(&self) -> bool {
        self.rail_params(1.0).is_some() || self.machine_name().is_some()
    }

    /// The node preset of a `rail` fabric.
    pub fn node_preset(&self) -> Option<super::NodePreset> {
        (self.0.name == "rail").then(|| {
            super::NodePreset::by_name(self.0.choice("node").unwrap_or("dgx-h100")).expect("listed presets exist")
        })
    }

    /// `transport=` as given, if given: the network's transport (`rdma`, `tcp`), which a
    /// strategy without a `transport=` of its own takes
    /// ([`crate::strategy::TransportChoice::resolve`], [`TopologySpec::nccl_transport`]).
    pub fn transport_option(&self) -> Option<&'static str> {
        self.0.choice("transport")
    }

    /// NCCL's network transport for a strategy that gives `strategy` (its own `transport=`,
    /// if any): that, else the fabric's `transport=`, else IB/RoCE verbs.
    pub fn nccl_transport(&self, strategy: Option<crate::nccl::Transport>) -> crate::nccl::Transport {
        strategy.unwrap_or(match self.transport_option() {
            Some("tcp") => crate::nccl::Transport::Tcp,
            _ => crate::nccl::Transport::Rdma,
        })
    }

    /// `sharp=` (SHARP / CollNet in the network switches); false unless given.
    pub fn sharp(&self) -> bool {
        self.0.flag("sharp").unwrap_or(false)
    }

    /// `nvls=` as given, if given.
    pub fn nvls_option(&self) -> Option<bool> {
        self.0.flag("nvls")
    }

    /// The calibration options (`intra_efficiency=` ...), defaults changing nothing.
    pub fn calibration(&self) -> crate::nccl::Calibration {
        crate::nccl::Calibration {
            intra_bandwidth: self.0.real("intra_efficiency").unwrap_or(1.0),
            inter_bandwidth: self.0.real("inter_efficiency").unwrap_or(1.0),
            intra_latency_s: self.0.duration("intra_latency").unwrap_or(0.0),
            inter_latency_s: self.0.duration("inter_latency").unwrap_or(0.0),
            intra_fill: self.0.real("intra_fill").unwrap_or(1.0),
            inter_fill: self.0.real("inter_fill").unwrap_or(1.0),
            intra_step_s: self.0.duration("intra_step").unwrap_or(0.0),
            nvls_bandwidth: self.0.real("nvls_efficiency").unwrap_or(1.0),
            nvls_fill: self.0.real("nvls_fill").unwrap_or(1.0),
            nvlstree_bandwidth: self.0.real("nvlstree_efficiency").unwrap_or(1.0),
            nvlstree_fill: self.0.real("nvlstree_fill").unwrap_or(1.0),
            inter_step_s: self.0.duration("inter_step").unwrap_or(0.0),
        }
    }

    /// Refuses a fabric for `workers` workers plus `extra` other hosts (servers) that
    /// would pass the memory limits (`limits.rs`): too many hosts, servers or links.
    pub fn check_size(&self, workers: usize, extra: usize) -> Result<()> {
        limits::at_most("workers", workers as u64, MAX_WORKERS as u64, "workers")?;
        limits::at_most("strategy.num_ps", extra as u64, MAX_SERVERS as u64, "servers")?;
        let (w, hosts) = (workers as u128, (workers + extra) as u128);
        let links = match self.0.name.as_str() {
            "star" | "ring" => 2 * hosts,
            "nodes" => {
                let m = self.machine().expect("nodes");
                let nodes = w.div_ceil(m.gpus() as u128).max(1);
                let leaves = self.machine_leaves().map_or(0, |l| nodes.div_ceil(l.nodes_per_leaf as u128));
                nodes * (2 * m.links().len() as u128 + 2) + 2 * hosts + 2 * leaves
            }
            "rail" => {
                let p = self.rail_params(0.0).expect("rail");
                let nodes = w.div_ceil(p.gpus_per_node.max(1) as u128).max(1);
                let groups = nodes.div_ceil((p.nodes_per_group as u128).clamp(1, nodes));
                let spines = if p.spines == 0 { p.nodes_per_group as u128 } else { p.spines as u128 };
                let leaves = groups * p.gpus_per_node as u128;
                4 * w + 2 * leaves * spines + 2 * (extra as u128) + 2 * spines
            }
            _ => {
                let per_leaf = self.0.count("hosts_per_leaf").unwrap_or(16) as u128;
                let spines = self.0.count("spines").unwrap_or(4) as u128;
                2 * hosts + 2 * hosts.div_ceil(per_leaf).max(1) * spines
            }
        };
        if links > MAX_LINKS as u128 {
            return Err(Error::invalid(
                "topology",
                format!(
                    "{} for {workers} workers{} needs {links} links, more than the {MAX_LINKS} a run can hold; use fewer spines or workers",
                    self.0.name,
                    if extra > 0 { format!(" and {extra} servers") } else { String::new() }
                ),
            ));
        }
        Ok(())
    }

    /// The builder name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The machine preset's name, for `nodes`.
    pub fn machine_name(&self) -> Option<&str> {
        (self.0.name == "nodes").then(|| self.0.choice("machine").unwrap_or("p3.16xlarge"))
    }

    /// The leaf switches of a `nodes` fabric (`nodes_per_leaf=`, `oversubscription=`), if
    /// `nodes_per_leaf=` is given.
    pub fn machine_leaves(&self) -> Option<super::MachineLeaves> {
        (self.0.name == "nodes").then_some(())?;
        Some(super::MachineLeaves {
            nodes_per_leaf: self.0.count("nodes_per_leaf")? as usize,
            oversubscription: self.0.real("oversubscription").unwrap_or(1.0),
        })
    }

    /// The GPU wiring of each machine, for `nodes`.
    pub fn machine(&self) -> Option<crate::gputopo::GpuTopology> {
        self.machine_name().map(|name| crate::gputopo::GpuTopology::preset(name).expect("listed presets exist"))
    }

    /// The host link rate the fabric gives when none is given, bytes/s: on `rail` each
    /// GPU's NIC rate (`nic=`, else the node preset's); `None` for the other fabrics.
    pub fn own_rate(&self) -> Option<f64> {
        let node = self.node_preset()?;
        Some(self.0.rate("nic").unwrap_or(node.nic_bytes_per_s))
    }

    /// The rates given in the spec (`nic=`, `nvlink=`, `uplink=`, ...), bytes/s, by option
    /// name: each a link rate a message may be held to.
    pub fn given_rates(&self) -> Vec<(&'static str, f64)> {
        self.0
            .given
            .iter()
            .filter_map(|(o, v)| match v {
                crate::spec::OptionValue::Rate(r) => Some((o.name, *r)),
                _ => None,
            })
            .collect()
    }

    /// The host link rate to build with, bytes/s, from the one given (`--bandwidth`), if
    /// any: it, or the fabric's own ([`TopologySpec::own_rate`]) when none is given. On
    /// `rail` a given rate is each GPU's NIC rate, so giving it and a different `nic=` is
    /// refused (`bandwidth`: given twice; the same rate twice is accepted, so that a
    /// cluster's resolved rate and topology can be passed on together), as is giving none
    /// on a fabric without a rate of its own.
    pub fn host_rate(&self, given: Option<f64>) -> Result<f64> {
        match (given, self.0.rate("nic")) {
            (Some(rate), Some(nic)) if rate != nic => Err(Error::invalid(
                "bandwidth",
                format!(
                    "the rail NIC rate is given twice, {} Gbps (--bandwidth) and nic={} Gbps (--topology); give one of them",
                    crate::units::format_number(rate * 8.0 / 1e9),
                    crate::units::format_number(nic * 8.0 / 1e9)
                ),
            )),
            (Some(rate), _) => Ok(rate),
            (None, _) => self.own_rate().ok_or_else(|| {
                Error::invalid(
                    "bandwidth",
                    format!(
                        "give the host link rate, e.g. 25Gbps (--bandwidth on the command line, bandwidth= from Python); only rail fabrics have one of their own (their node preset's NIC), not {}",
                        self.0.name
                    ),
                )
            }),
        }
    }

    /// The node preset and the fabric's rates, for `rail`: each GPU's NIC at `nic=` if
    /// given, else at `bytes_per_s` (the host rate: [`TopologySpec::host_rate`] gives the
    /// preset's when none is given); other hosts (servers) at `bytes_per_s`.
    pub fn rail_params(&self, bytes_per_s: f64) -> Option<super::RailParams> {
        let node = self.node_preset()?;
        let per_group = self.0.count("nodes_per_group").unwrap_or(32) as usize;
        Some(super::RailParams {
            gpus_per_node: node.gpus,
            nodes_per_group: per_group,
            spines: self.0.count("spines").map_or(0, |s| s as usize),
            nvlink_bytes_per_ns: self.0.rate("nvlink").unwrap_or(node.nvlink_bytes_per_s) / 1e9,
            nic_bytes_per_ns: self.0.rate("nic").unwrap_or(bytes_per_s) / 1e9,
            oversubscription: self.0.real("oversubscription").unwrap_or(1.0),
            extra_bytes_per_ns: bytes_per_s / 1e9,
        })
    }

    /// A `leaf-spine` fabric's hosts per leaf, spines and rate of each leaf-spine link
    /// (bytes/s; by default what makes the fabric non-blocking at `host_bytes_per_s` a
    /// host).
    pub fn leaf_spine_params(&self, host_bytes_per_s: f64) -> (usize, usize, f64) {
        let per_leaf = self.0.count("hosts_per_leaf").unwrap_or(16) as usize;
        let spines = self.0.count("spines").unwrap_or(4) as usize;
        let uplink = self.0.rate("uplink").unwrap_or(host_bytes_per_s * per_leaf as f64 / spines as f64);
        (per_leaf, spines, uplink)
    }

    /// Builds it for `workers` worker hosts plus `extra` other hosts (servers) at
    /// `bytes_per_s` per host link (per NIC for `nodes`, per GPU NIC for `rail` unless
    /// `nic=` sets it) and `latency` per hop. API layers take `bytes_per_s` from
    /// [`TopologySpec::host_rate`], which gives `rail` its preset's NIC rate when no rate is
    /// given. Refuses sizes past the memory limits first ([`TopologySpec::check_size`]).
    pub fn build(&self, workers: usize, extra: usize, bytes_per_s: f64, latency: Nanos) -> Result<Topology> {
        self.check_size(workers, extra)?;
        let bw = bytes_per_s / 1e9;
        let hosts = workers + extra;
        Ok(match self.0.name.as_str() {
            "star" => Topology::star(hosts, bw, latency),
            "ring" => Topology::ring(hosts, bw, latency),
            "nodes" => {
                Topology::machines(workers, extra, &self.machine().expect("nodes"), bw, latency, self.machine_leaves())
            }
            "rail" => {
                let mut p = self.rail_params(bytes_per_s).expect("rail");
                if p.spines == 0 {
                    // Default: as many spines as nodes in a group (capped at the nodes).
                    p.spines = p.nodes_per_group.min(workers.div_ceil(p.gpus_per_node).max(1));
                }
                Topology::rail(workers, extra, &p, latency)
            }
            _ => {
                let (per_leaf, spines, uplink) = self.leaf_spine_params(bytes_per_s);
                Topology::leaf_spine(hosts, per_leaf, spines, bw, uplink / 1e9, latency)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversubscription_is_bounded_where_the_uplinks_would_carry_nothing() {
        // 1e308 left the uplinks no rate at all: the run stalled ("internal error").
        let e = TopologySpec::parse("rail:oversubscription=1e308").unwrap_err();
        assert_eq!(e.field(), "topology.oversubscription");
        assert!(e.to_string().contains("(0, 1024]"), "{e}");
        assert!(TopologySpec::parse("rail:oversubscription=1024").is_ok());
    }

    #[test]
    fn a_gpu_fabric_s_transport_is_nccl_s_unless_the_strategy_gives_one() {
        use crate::nccl::Transport::{Rdma, Tcp};
        let (plain, tcp) = (TopologySpec::parse("rail").unwrap(), TopologySpec::parse("nodes:transport=tcp").unwrap());
        assert_eq!((plain.transport_option(), tcp.transport_option()), (None, Some("tcp")));
        assert_eq!((plain.nccl_transport(None), tcp.nccl_transport(None)), (Rdma, Tcp));
        assert_eq!((plain.nccl_transport(Some(Tcp)), tcp.nccl_transport(Some(Rdma))), (Tcp, Rdma));
        for (spec, allowed) in [("rail:transport=udp", "rdma, tcp"), ("star:transport=tcp", "none")] {
            let e = TopologySpec::parse(spec).unwrap_err().to_string();
            assert!(e.contains("transport") && e.contains(allowed), "{e}");
        }
    }

    #[test]
    fn rail_uses_the_preset_rates_unless_nic_or_nvlink_are_given() {
        let spec = TopologySpec::parse("rail").unwrap();
        let t = spec.build(1024, 0, spec.host_rate(None).unwrap(), 1000).unwrap();
        let crate::topology::Shape::Rail(r) = t.shape().clone() else { panic!("rail") };
        assert_eq!((r.gpus_per_node, r.nodes_per_group, r.groups, r.spines), (8, 32, 4, 32));
        // GPU 0: NVSwitch link at 450 GB/s, NIC at 400 Gbit/s; leaf uplinks non-blocking.
        assert_eq!(t.links()[0].bytes_per_ns, 450.0);
        assert_eq!(t.links()[2 * 1024].bytes_per_ns, 50.0);
        assert_eq!(t.links()[4 * 1024].bytes_per_ns, 50.0);
        let t = TopologySpec::parse("rail:node=dgx-a100,nodes_per_group=4,spines=2,oversubscription=2,nic=100Gbps")
            .unwrap()
            .build(64, 1, 1.25e9, 1000)
            .unwrap();
        assert_eq!(t.links()[0].bytes_per_ns, 300.0);
        assert_eq!(t.links()[2 * 64].bytes_per_ns, 12.5);
        // 4 NICs of 12.5 B/ns down, halved, over 2 spines.
        assert_eq!(t.links()[4 * 64].bytes_per_ns, 12.5);
        // The parameter server's link runs at --bandwidth.
        assert_eq!(t.link_name(t.route(64, 0)[0]), "h64->svc");
        assert_eq!(t.links()[t.route(64, 0)[0]].bytes_per_ns, 1.25);
        let e = TopologySpec::parse("rail:node=dgx-2").unwrap_err().to_string();
        assert!(e.contains("dgx-h100"), "{e}");
    }

    #[test]
    fn a_given_rate_is_the_rail_nic_rate_and_only_rail_has_one_of_its_own() {
        let rail = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        assert_eq!(rail.own_rate(), Some(50e9));
        assert_eq!(rail.host_rate(None).unwrap(), 50e9);
        // --bandwidth 100Gbps: every GPU's NIC at 12.5 GB/s (it was ignored: 400G NICs).
        let rate = rail.host_rate(Some(12.5e9)).unwrap();
        let t = rail.build(16, 0, rate, 1000).unwrap();
        assert_eq!(t.links()[2 * 16].bytes_per_ns, 12.5);
        let nic = TopologySpec::parse("rail:node=dgx-a100,nic=100Gbps").unwrap();
        assert_eq!(nic.host_rate(None).unwrap(), 12.5e9);
        assert_eq!(nic.host_rate(Some(12.5e9)).unwrap(), 12.5e9, "the same rate twice");
        let e = nic.host_rate(Some(50e9)).unwrap_err();
        assert_eq!(e.field(), "bandwidth");
        assert!(e.to_string().contains("400 Gbps (--bandwidth) and nic=100 Gbps"), "{e}");
        let star = TopologySpec::parse("star").unwrap();
        assert_eq!(star.own_rate(), None);
        assert_eq!(star.host_rate(Some(1e9)).unwrap(), 1e9);
        assert_eq!(star.host_rate(None).unwrap_err().field(), "bandwidth");
        assert!(TopologySpec::parse("nodes").unwrap().host_rate(None).is_err());
    }

    /// A calibration latency past the simulation horizon is refused when the spec is read
    /// (it failed each multi-node run instead, mid-sweep); one below it is taken.
    #[test]
    fn calibration_latencies_past_the_horizon_are_refused_up_front() {
        for (spec, field) in [
            ("rail:inter_latency=1e300s", "topology.inter_latency"),
            ("rail:node=hgx-h200,intra_latency=1e10s", "topology.intra_latency"),
            ("nodes:inter_latency=1e300s", "topology.inter_latency"),
        ] {
            assert_eq!(TopologySpec::parse(spec).unwrap_err().field(), field, "{spec}");
        }
        let ok = TopologySpec::parse("rail:inter_latency=1000s").unwrap();
        assert_eq!(ok.calibration().inter_latency_s, 1000.0);
    }

    /// Each calibration factor above its range is refused naming the option and the range;
    /// the largest allowed value is taken.
    #[test]
    fn calibration_factors_outside_their_range_are_refused() {
        for (option, max, range) in [
            ("intra_efficiency", "2", "(0, 2]"),
            ("inter_efficiency", "2", "(0, 2]"),
            ("intra_fill", "10", "[0, 10]"),
            ("inter_fill", "10", "[0, 10]"),
            ("nvls_efficiency", "2", "(0, 2]"),
            ("nvls_fill", "10", "[0, 10]"),
            ("nvlstree_efficiency", "2", "(0, 2]"),
            ("nvlstree_fill", "10", "[0, 10]"),
        ] {
            let e = TopologySpec::parse(&format!("rail:{option}={max}.5")).unwrap_err();
            assert_eq!(e.field(), format!("topology.{option}"));
            assert!(e.to_string().contains(&format!("\"{max}.5\" is not a number in {range}")), "{e}");
            assert!(TopologySpec::parse(&format!("nodes:{option}={max}")).is_ok(), "{option}={max}");
        }
    }
}
