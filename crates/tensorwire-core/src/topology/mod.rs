//! Topology: hosts, switches and directed links, with closed-form routing for each
//! builder (no all-pairs route table, so 8,192 hosts cost nothing to build).
//!
//! A full-duplex cable is two directed [`Link`]s, one per direction, each with its own
//! bandwidth. Latency is per link (per hop); a path's latency is the sum over its links,
//! so on a `star` a host-to-host message crosses two links and pays 2 x latency.
//! Switches are non-blocking and add no latency of their own.

pub mod node;
mod placement;
pub mod rail;
pub mod sharing;
pub mod spec;
mod symmetry;

pub use node::{NodePreset, NODE_PRESETS};
pub use placement::{placement, PLACEMENTS};
pub use rail::{Rail, RailParams};
pub use sharing::{contention, Contention, Traffic};
pub use spec::TopologySpec;
pub use symmetry::{digits, LinkOrbits};

use crate::units::Nanos;

/// Index of a node (hosts first, then switches).
pub type NodeId = usize;
/// Index of a directed link.
pub type LinkId = usize;

/// One direction of a cable.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// Sending end.
    pub from: NodeId,
    /// Receiving end.
    pub to: NodeId,
    /// Capacity in bytes per nanosecond (1 Gbps = 0.125 B/ns).
    pub bytes_per_ns: f64,
    /// Propagation and switching latency of this hop.
    pub latency: Nanos,
}

/// How the hosts are wired; decides routing and which symmetries hold.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Every host on one non-blocking switch. Host `h` has uplink `2h` and downlink `2h+1`.
    Star,
    /// Hosts wired in a cycle with no switch; host `h` has link `2h` to `h+1` (clockwise)
    /// and link `2h+1` from `h+1` back to `h` (counter-clockwise). Messages take the shorter
    /// way round (clockwise on ties) and are forwarded by the hosts in between.
    Ring,
    /// Multi-GPU machines: inside each, GPUs wired pairwise as a GPU topology says
    /// (NVLink, PCIe; see `gputopo`), and each GPU on PCIe to its machine's NIC; the NICs
    /// and any extra hosts (parameter servers) on one top switch.
    Nodes {
        /// GPUs per machine.
        gpus_per_node: usize,
        /// Machines.
        nodes: usize,
        /// GPU hosts (the first `gpus` hosts); the rest hang off the top switch.
        gpus: usize,
    },
    /// Two-tier Clos: hosts under leaf switches, every leaf wired to every spine.
    LeafSpine {
        /// Hosts attached to each leaf.
        hosts_per_leaf: usize,
        /// Number of leaf switches.
        leaves: usize,
        /// Number of spine switches.
        spines: usize,
    },
    /// Rail-optimised fat-tree of multi-GPU machines (see `rail`).
    Rail(Rail),
}

/// A built network.
#[derive(Debug, Clone)]
pub struct Topology {
    shape: Shape,
    hosts: usize,
    nodes: usize,
    links: Vec<Link>,
    /// Links by their ends, for shapes routed through arbitrary wiring (`Nodes`).
    by_ends: crate::fasthash::FastMap<(NodeId, NodeId), LinkId>,
}

impl Topology {
    /// `hosts` hosts on one switch; every host link has `bytes_per_ns` each way.
    pub fn star(hosts: usize, bytes_per_ns: f64, latency: Nanos) -> Self {
        let switch = hosts;
        let mut links = Vec::with_capacity(2 * hosts);
        for h in 0..hosts {
            links.push(Link { from: h, to: switch, bytes_per_ns, latency });
            links.push(Link { from: switch, to: h, bytes_per_ns, latency });
        }
        Topology { shape: Shape::Star, hosts, nodes: hosts + 1, links, by_ends: Default::default() }
    }

    /// `hosts` hosts in a cycle (bidirectional neighbour links).
    pub fn ring(hosts: usize, bytes_per_ns: f64, latency: Nanos) -> Self {
        let mut links = Vec::with_capacity(2 * hosts);
        for h in 0..hosts {
            let next = (h + 1) % hosts;
            links.push(Link { from: h, to: next, bytes_per_ns, latency });
            links.push(Link { from: next, to: h, bytes_per_ns, latency });
        }
        Topology { shape: Shape::Ring, hosts, nodes: hosts, links, by_ends: Default::default() }
    }

    /// Leaf-spine with `hosts_per_leaf` hosts per leaf and `spines` spines; host links run at
    /// `bytes_per_ns`, leaf-spine links at `uplink_bytes_per_ns`.
    pub fn leaf_spine(
        hosts: usize,
        hosts_per_leaf: usize,
        spines: usize,
        bytes_per_ns: f64,
        uplink_bytes_per_ns: f64,
        latency: Nanos,
    ) -> Self {
        let leaves = hosts.div_ceil(hosts_per_leaf).max(1);
        let mut links = Vec::with_capacity(2 * hosts + 2 * leaves * spines);
        let leaf_node = |l: usize| hosts + l;
        let spine_node = |s: usize| hosts + leaves + s;
        for h in 0..hosts {
            let leaf = leaf_node(h / hosts_per_leaf);
            links.push(Link { from: h, to: leaf, bytes_per_ns, latency });
            links.push(Link { from: leaf, to: h, bytes_per_ns, latency });
        }
        for l in 0..leaves {
            for s in 0..spines {
                let bw = uplink_bytes_per_ns;
                links.push(Link { from: leaf_node(l), to: spine_node(s), bytes_per_ns: bw, latency });
                links.push(Link { from: spine_node(s), to: leaf_node(l), bytes_per_ns: bw, latency });
            }
        }
        Topology {
            shape: Shape::LeafSpine { hosts_per_leaf, leaves, spines },
            hosts,
            nodes: hosts + leaves + spines,
            links,
            by_ends: Default::default(),
        }
    }

    /// `gpus` GPU hosts in machines wired like `machine`, plus `extra` hosts on the top
    /// switch. GPU links run at the GPU topology's rates; each GPU reaches its NIC over
    /// PCIe; NICs and extra hosts reach the top switch at `nic_bytes_per_ns`.
    pub fn machines(
        gpus: usize,
        extra: usize,
        machine: &crate::gputopo::GpuTopology,
        nic_bytes_per_ns: f64,
        latency: Nanos,
    ) -> Self {
        use crate::gputopo::{link_bytes_per_s, PCIE};
        let g = machine.gpus();
        let nodes = gpus.div_ceil(g).max(1);
        let hosts = gpus + extra;
        let nic = |n: usize| hosts + n;
        let top = hosts + nodes;
        let mut links = Vec::new();
        let mut by_ends = crate::fasthash::FastMap::default();
        let mut add = |links: &mut Vec<Link>, a: NodeId, b: NodeId, bw: f64| {
            for (from, to) in [(a, b), (b, a)] {
                by_ends.insert((from, to), links.len());
                links.push(Link { from, to, bytes_per_ns: bw, latency });
            }
        };
        let pcie = link_bytes_per_s(PCIE).expect("PCIe has a rate") / 1e9;
        for n in 0..nodes {
            let first = n * g;
            for (i, j, w) in machine.links() {
                if first + j < gpus {
                    add(
                        &mut links,
                        first + i,
                        first + j,
                        link_bytes_per_s(w).expect("preset weights have rates") / 1e9,
                    );
                }
            }
            for gpu in first..(first + g).min(gpus) {
                add(&mut links, gpu, nic(n), pcie);
            }
            add(&mut links, nic(n), top, nic_bytes_per_ns);
        }
        for h in gpus..hosts {
            add(&mut links, h, top, nic_bytes_per_ns);
        }
        Topology { shape: Shape::Nodes { gpus_per_node: g, nodes, gpus }, hosts, nodes: top + 1, links, by_ends }
    }

    /// The wiring.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Number of hosts (workers and servers).
    pub fn hosts(&self) -> usize {
        self.hosts
    }

    /// Number of nodes (hosts and switches).
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// All directed links.
    pub fn links(&self) -> &[Link] {
        &self.links
    }

    /// Human-readable name of a node: `h3`, `sw`, `leaf1`, `spine0`.
    pub fn node_name(&self, n: NodeId) -> String {
        if n < self.hosts {
            return format!("h{n}");
        }
        match &self.shape {
            Shape::Star => "sw".to_string(),
            Shape::Ring => unreachable!("ring topologies have no switches"),
            Shape::Nodes { nodes, .. } => {
                let i = n - self.hosts;
                if i < *nodes {
                    format!("nic{i}")
                } else {
                    "top".to_string()
                }
            }
            Shape::LeafSpine { leaves, .. } => {
                let i = n - self.hosts;
                if i < *leaves {
                    format!("leaf{i}")
                } else {
                    format!("spine{}", i - leaves)
                }
            }
            Shape::Rail(rail) => Self::rail_switch_name(rail, n - self.hosts),
        }
    }

    /// Name of a link, `h0->sw`.
    pub fn link_name(&self, l: LinkId) -> String {
        let link = &self.links[l];
        format!("{}->{}", self.node_name(link.from), self.node_name(link.to))
    }

    /// Links from host `src` to host `dst`, in order. Empty when `src == dst`.
    pub fn route(&self, src: NodeId, dst: NodeId) -> Vec<LinkId> {
        let mut path = Vec::new();
        self.route_into(src, dst, &mut path);
        path
    }

    /// Like [`Topology::route`] but appends into a reused buffer.
    pub fn route_into(&self, src: NodeId, dst: NodeId, path: &mut Vec<LinkId>) {
        path.clear();
        if src == dst {
            return;
        }
        match &self.shape {
            Shape::Star => {
                path.push(2 * src);
                path.push(2 * dst + 1);
            }
            Shape::Ring => {
                let n = self.hosts;
                let cw = (dst + n - src) % n;
                if cw <= n - cw {
                    for i in 0..cw {
                        path.push(2 * ((src + i) % n));
                    }
                } else {
                    for i in 0..(n - cw) {
                        path.push(2 * ((src + n - i - 1) % n) + 1);
                    }
                }
            }
            Shape::Nodes { gpus_per_node, nodes, gpus } => {
                let (g, gpus, nodes) = (*gpus_per_node, *gpus, *nodes);
                let link = |a: NodeId, b: NodeId| self.by_ends[&(a, b)];
                // The node switch (NIC) of a host: GPUs have their machine's; others the top.
                let attach = |h: NodeId| if h < gpus { Some(self.hosts + h / g) } else { None };
                if let Some(&l) = self.by_ends.get(&(src, dst)) {
                    path.push(l);
                    return;
                }
                let top = self.hosts + nodes;
                match (attach(src), attach(dst)) {
                    (Some(a), Some(b)) if a == b => {
                        path.push(link(src, a));
                        path.push(link(a, dst));
                    }
                    (a, b) => {
                        let up = a.unwrap_or(top);
                        if let Some(a) = a {
                            path.push(link(src, a));
                            path.push(link(a, top));
                        } else {
                            path.push(link(src, up));
                        }
                        if let Some(b) = b {
                            path.push(link(top, b));
                            path.push(link(b, dst));
                        } else {
                            path.push(link(top, dst));
                        }
                    }
                }
            }
            Shape::LeafSpine { hosts_per_leaf, spines, .. } => {
                let (la, lb) = (src / hosts_per_leaf, dst / hosts_per_leaf);
                path.push(2 * src);
                if la != lb {
                    // Deterministic ECMP: the spine is a fixed function of the host pair.
                    let s = (src + dst) % spines;
                    let base = 2 * self.hosts;
                    path.push(base + 2 * (la * spines + s));
                    path.push(base + 2 * (lb * spines + s) + 1);
                }
                path.push(2 * dst + 1);
            }
            Shape::Rail(rail) => self.rail_route(rail, src, dst, path),
        }
    }

    /// The first link from host `h` towards its switch (or ring neighbour) on `star`,
    /// `ring` and `leaf-spine` topologies.
    pub fn uplink(&self, h: NodeId) -> LinkId {
        2 * h
    }

    /// The link from the switch (or ring neighbour) to host `h`.
    pub fn downlink(&self, h: NodeId) -> LinkId {
        match self.shape {
            Shape::Ring => 2 * ((h + self.hosts - 1) % self.hosts),
            _ => 2 * h + 1,
        }
    }

    /// Sum of link latencies along the route.
    pub fn path_latency(&self, path: &[LinkId]) -> Nanos {
        path.iter().map(|&l| self.links[l].latency).sum()
    }

    /// Symmetry class of a link under rotation of the first `ranks` hosts, when the shape
    /// has that symmetry (`star`, `ring` with no other hosts): links in one class carry the
    /// same traffic when every rank behaves alike. `None` for links outside any class.
    pub fn rank_orbit(&self, link: LinkId, ranks: usize) -> Option<usize> {
        match self.shape {
            Shape::Star if link < 2 * ranks => Some(link % 2),
            Shape::Ring if self.hosts == ranks => Some(link % 2),
            _ => None,
        }
    }

    /// GPUs per machine, for `Nodes` topologies.
    pub fn gpus_per_node(&self) -> Option<usize> {
        match self.shape {
            Shape::Nodes { gpus_per_node, .. } => Some(gpus_per_node),
            Shape::Rail(rail) => Some(rail.gpus_per_node),
            _ => None,
        }
    }

    /// Whether every rank-rotation of the first `ranks` hosts maps the network onto itself,
    /// so that one representative rank can stand for all (see `engine` symmetric mode).
    pub fn rotation_symmetric(&self, ranks: usize) -> bool {
        match self.shape {
            Shape::Star => true,
            Shape::Ring => self.hosts == ranks,
            Shape::LeafSpine { .. } | Shape::Nodes { .. } | Shape::Rail(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_routes_up_then_down() {
        let t = Topology::star(4, 1.0, 10);
        assert_eq!(t.route(1, 3), vec![2, 7]);
        assert_eq!(t.link_name(2), "h1->sw");
        assert_eq!(t.link_name(7), "sw->h3");
        assert_eq!(t.path_latency(&t.route(1, 3)), 20);
    }

    #[test]
    fn ring_takes_the_shorter_way() {
        let t = Topology::ring(6, 1.0, 1);
        assert_eq!(t.route(0, 2), vec![0, 2]);
        // 0 -> 5 is one hop counter-clockwise: link from 0 back... (5->0 is cw; 0->5 is ccw link 2*5+1)
        assert_eq!(t.route(0, 5), vec![11]);
        let l = &t.links()[11];
        assert_eq!((l.from, l.to), (0, 5));
        for (a, b) in [(0, 3), (4, 1), (2, 2)] {
            let path = t.route(a, b);
            let mut at = a;
            for &l in &path {
                assert_eq!(t.links()[l].from, at);
                at = t.links()[l].to;
            }
            assert_eq!(at, b);
        }
    }

    fn assert_connected(t: &Topology, a: usize, b: usize) {
        let mut at = a;
        for &l in &t.route(a, b) {
            assert_eq!(t.links()[l].from, at);
            at = t.links()[l].to;
        }
        assert_eq!(at, b);
    }

    #[test]
    fn nodes_route_over_nvlink_inside_and_nics_outside() {
        let machine = crate::gputopo::GpuTopology::p3_16xlarge();
        let t = Topology::machines(16, 1, &machine, 12.5, 1);
        for a in 0..17 {
            for b in 0..17 {
                assert_connected(&t, a, b);
            }
        }
        assert_eq!(t.route(0, 1).len(), 1, "GPUs 0 and 1 share an NVLink");
        assert_eq!(t.route(0, 9).len(), 4, "GPU -> NIC -> top -> NIC -> GPU");
        assert_eq!(t.route(3, 16).len(), 3, "GPU -> NIC -> top -> server");
        assert_eq!(t.link_name(t.route(0, 9)[1]), "nic0->top");
    }

    #[test]
    fn leaf_spine_routes_are_connected_paths() {
        let t = Topology::leaf_spine(10, 4, 2, 1.0, 2.0, 1);
        for a in 0..10 {
            for b in 0..10 {
                let mut at = a;
                for &l in &t.route(a, b) {
                    assert_eq!(t.links()[l].from, at);
                    at = t.links()[l].to;
                }
                assert_eq!(at, b);
            }
        }
        assert_eq!(t.route(0, 1).len(), 2);
        assert_eq!(t.route(0, 5).len(), 4);
    }
}
