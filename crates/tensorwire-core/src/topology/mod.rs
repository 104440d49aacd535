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
    /// on one top switch, or on leaf switches of `nodes_per_leaf` machines whose uplinks
    /// to the top switch are one trunk each ([`MachineLeaves`]); any extra hosts
    /// (parameter servers) on the top switch.
    Nodes {
        /// GPUs per machine.
        gpus_per_node: usize,
        /// Machines.
        nodes: usize,
        /// GPU hosts (the first `gpus` hosts); the rest hang off the top switch.
        gpus: usize,
        /// Machines per leaf switch; at least `nodes` when the NICs are on the top switch
        /// itself (no leaf switches are built).
        nodes_per_leaf: usize,
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

/// Leaf switches between the machines of a `nodes` fabric and its top switch: each leaf
/// holds `nodes_per_leaf` machines' NICs, and its uplinks are modelled as one trunk of
/// `nodes_per_leaf x NIC rate / oversubscription` per direction, i.e. spread perfectly over
/// the spines (as adaptive routing or packet spraying would; deterministic ECMP's hash
/// collisions, which `leaf-spine` models for single-GPU hosts, are not).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineLeaves {
    /// Machines (NICs) per leaf switch, >= 1.
    pub nodes_per_leaf: usize,
    /// A leaf's NIC capacity over its uplink capacity, >= 1 in practice (1 = non-blocking).
    pub oversubscription: f64,
}

/// Leaf switches a `nodes` fabric of `nodes` machines builds at `nodes_per_leaf` to a leaf:
/// none where one leaf would hold every machine (the top switch then holds them).
fn leaf_switches(nodes: usize, nodes_per_leaf: usize) -> usize {
    if nodes_per_leaf < nodes {
        nodes.div_ceil(nodes_per_leaf)
    } else {
        0
    }
}

/// The switch machine `m`'s NIC hangs off on a `nodes` fabric of `hosts` hosts and `nodes`
/// machines: its leaf, or the top switch where there are no leaves (switches are numbered
/// NICs, leaves, top).
fn machine_switch_of(hosts: usize, nodes: usize, nodes_per_leaf: usize, m: usize) -> NodeId {
    let top = hosts + nodes + leaf_switches(nodes, nodes_per_leaf);
    if top > hosts + nodes {
        hosts + nodes + m / nodes_per_leaf
    } else {
        top
    }
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
    /// PCIe; NICs reach their switch (the top switch, or their leaf under `leaves`: see
    /// [`MachineLeaves`]) and extra hosts the top switch at `nic_bytes_per_ns`. Switches are
    /// numbered NICs (one per machine), then leaves (only where there are two or more),
    /// then the top switch.
    pub fn machines(
        gpus: usize,
        extra: usize,
        machine: &crate::gputopo::GpuTopology,
        nic_bytes_per_ns: f64,
        latency: Nanos,
        leaves: Option<MachineLeaves>,
    ) -> Self {
        use crate::gputopo::{link_bytes_per_s, PCIE};
        let g = machine.gpus();
        let nodes = gpus.div_ceil(g).max(1);
        let hosts = gpus + extra;
        let nodes_per_leaf = leaves.map_or(nodes, |l| l.nodes_per_leaf.clamp(1, nodes));
        let leaf_count = leaf_switches(nodes, nodes_per_leaf);
        let nic = |n: usize| hosts + n;
        let top = hosts + nodes + leaf_count;
        let up = |n: usize| machine_switch_of(hosts, nodes, nodes_per_leaf, n);
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
            add(&mut links, nic(n), up(n), nic_bytes_per_ns);
        }
        if let Some(l) = leaves.filter(|_| leaf_count > 0) {
            // One trunk per leaf: its machines' NICs over the oversubscription (a partly
            // filled last leaf has the same uplinks as the others, as its hardware would).
            let trunk = nodes_per_leaf as f64 * nic_bytes_per_ns / l.oversubscription;
            for leaf in 0..leaf_count {
                add(&mut links, hosts + nodes + leaf, top, trunk);
            }
        }
        for h in gpus..hosts {
            add(&mut links, h, top, nic_bytes_per_ns);
        }
        let shape = Shape::Nodes { gpus_per_node: g, nodes, gpus, nodes_per_leaf };
        Topology { shape, hosts, nodes: top + 1, links, by_ends }
    }

    /// The link from `a` to `b` on a `nodes` fabric (its links are indexed by their ends),
    /// in O(1); None where there is none, and on the other fabrics.
    pub(crate) fn machine_link(&self, a: NodeId, b: NodeId) -> Option<LinkId> {
        self.by_ends.get(&(a, b)).copied()
    }

    /// On a `nodes` fabric, the switch machine `m`'s NIC hangs off: its leaf, or the top
    /// switch where there are no leaves.
    pub(crate) fn machine_switch(&self, m: usize) -> NodeId {
        let Shape::Nodes { nodes, nodes_per_leaf, .. } = self.shape else { unreachable!("nodes fabrics only") };
        machine_switch_of(self.hosts, nodes, nodes_per_leaf, m)
    }

    /// On a `nodes` fabric, the switch a host's traffic leaves the machine for: its
    /// machine's ([`Topology::machine_switch`]) for GPUs, the top switch for extra hosts;
    /// with the machine's NIC for GPUs.
    fn machine_uplink(&self, h: NodeId) -> (Option<NodeId>, NodeId) {
        let Shape::Nodes { gpus_per_node, gpus, .. } = self.shape else { unreachable!("nodes fabrics only") };
        if h >= gpus {
            return (None, self.nodes - 1);
        }
        let m = h / gpus_per_node;
        (Some(self.hosts + m), self.machine_switch(m))
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
                } else if n + 1 < self.nodes {
                    format!("leaf{}", i - nodes)
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
            Shape::Nodes { .. } => {
                let link = |a: NodeId, b: NodeId| self.by_ends[&(a, b)];
                if let Some(&l) = self.by_ends.get(&(src, dst)) {
                    path.push(l);
                    return;
                }
                let ((nic_a, leaf_a), (nic_b, leaf_b)) = (self.machine_uplink(src), self.machine_uplink(dst));
                if let Some(nic) = nic_a.filter(|_| nic_a == nic_b) {
                    path.extend([link(src, nic), link(nic, dst)]);
                    return;
                }
                // Up to the source's switch, across the top switch if the destination's
                // is another, down from the destination's.
                match nic_a {
                    Some(nic) => path.extend([link(src, nic), link(nic, leaf_a)]),
                    None => path.push(link(src, leaf_a)),
                }
                if leaf_a != leaf_b {
                    let top = self.nodes - 1;
                    if leaf_a != top {
                        path.push(link(leaf_a, top));
                    }
                    if leaf_b != top {
                        path.push(link(top, leaf_b));
                    }
                }
                match nic_b {
                    Some(nic) => path.extend([link(leaf_b, nic), link(nic, dst)]),
                    None => path.push(link(leaf_b, dst)),
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
        let t = Topology::machines(16, 1, &machine, 12.5, 1, None);
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
    fn machines_behind_leaves_cross_the_top_switch_only_between_leaves() {
        let machine = crate::gputopo::GpuTopology::p3_16xlarge();
        let leaves = MachineLeaves { nodes_per_leaf: 2, oversubscription: 4.0 };
        // 5 machines (40 GPUs) on leaves of 2: leaf0 {0, 1}, leaf1 {2, 3}, leaf2 {4}; one server.
        let t = Topology::machines(40, 1, &machine, 12.5, 1, Some(leaves));
        for a in 0..41 {
            for b in 0..41 {
                assert_connected(&t, a, b);
            }
        }
        let names = |a, b| t.route(a, b).iter().map(|&l| t.link_name(l)).collect::<Vec<_>>();
        assert_eq!(names(0, 9), ["h0->nic0", "nic0->leaf0", "leaf0->nic1", "nic1->h9"]);
        assert_eq!(names(0, 17), ["h0->nic0", "nic0->leaf0", "leaf0->top", "top->leaf1", "leaf1->nic2", "nic2->h17"]);
        assert_eq!(names(33, 40), ["h33->nic4", "nic4->leaf2", "leaf2->top", "top->h40"]);
        assert_eq!(names(40, 1), ["h40->top", "top->leaf0", "leaf0->nic0", "nic0->h1"]);
        // Each leaf's trunk: 2 NICs of 12.5 B/ns over 4, the partial last leaf's too.
        for leaf in 0..3 {
            let trunk = t.route(8 * 2 * leaf, 40)[2];
            assert_eq!((t.link_name(trunk), t.links()[trunk].bytes_per_ns), (format!("leaf{leaf}->top"), 6.25));
        }
        // Leaves at least as wide as the machines: the one-switch fabric, link for link.
        let wide = MachineLeaves { nodes_per_leaf: 5, oversubscription: 4.0 };
        assert_eq!(
            Topology::machines(40, 1, &machine, 12.5, 1, Some(wide)).links(),
            Topology::machines(40, 1, &machine, 12.5, 1, None).links()
        );
    }

    proptest::proptest! {
        /// Behind leaves of any size, with or without servers: every route is a connected
        /// path, crosses the top switch exactly when its ends are under different switches
        /// (a server's is the top switch itself), and never repeats a link.
        #[test]
        fn routes_behind_leaves_cross_the_top_only_between_leaves(
            machines in 1usize..7,
            per_leaf in 1usize..8,
            extra in 0usize..3,
            over in 0.5f64..8.0,
        ) {
            let machine = crate::gputopo::GpuTopology::preset("pcie-8").unwrap();
            let gpus = 8 * machines;
            let leaves = MachineLeaves { nodes_per_leaf: per_leaf, oversubscription: over };
            let t = Topology::machines(gpus, extra, &machine, 12.5, 1, Some(leaves));
            let top = t.nodes() - 1;
            // The switch a host's traffic leaves its machine for: its leaf (by index), or the
            // top switch (one switch, or a server).
            let switch = |h: usize| (h < gpus && per_leaf < machines).then(|| h / 8 / per_leaf);
            for a in 0..gpus + extra {
                for b in 0..gpus + extra {
                    assert_connected(&t, a, b);
                    let path = t.route(a, b);
                    let mut seen = path.clone();
                    seen.sort_unstable();
                    seen.dedup();
                    proptest::prop_assert_eq!(seen.len(), path.len());
                    let via_top = path.iter().any(|&l| t.links()[l].to == top);
                    let same_machine = a == b || (a < gpus && b < gpus && a / 8 == b / 8);
                    let apart = !same_machine && (switch(a) != switch(b) || switch(a).is_none());
                    proptest::prop_assert_eq!(via_top, apart, "{} -> {}", a, b);
                }
            }
        }
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
