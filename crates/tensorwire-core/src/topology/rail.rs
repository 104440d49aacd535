//! Rail-optimised fat-tree of multi-GPU machines (NVIDIA DGX SuperPOD style).
//!
//! - Each machine ("node") has one NVSwitch, modelled as a non-blocking switch with one
//!   link pair per GPU at the GPU's NVLink rate.
//! - GPU `i` of every node has its own NIC on *rail* `i`. Nodes form rail groups of
//!   `nodes_per_group` nodes (the last group may be smaller); each group has one leaf
//!   switch per rail, so a group has `gpus_per_node` leaves and leaf `(group, i)` connects
//!   NIC `i` of every node of the group.
//! - Every leaf is wired to every spine by one link pair; each leaf's total uplink
//!   capacity is its total downlink capacity divided by the oversubscription.
//! - Extra hosts (parameter servers) hang off one *service leaf*, also wired to every spine.
//!
//! Routing (closed form, no table):
//! - same node: GPU -> NVSwitch -> GPU (2 hops);
//! - same group and same rail: GPU -> leaf -> GPU (2 hops);
//! - otherwise GPU -> leaf -> spine -> leaf -> GPU (4 hops): cross-rail traffic goes up to
//!   the spine (NCCL's PXN would instead hop over NVLink to the GPU on the right rail);
//! - GPU <-> extra host: GPU -> leaf -> spine -> service leaf -> host (4 hops).
//!
//! The spine is a fixed function of the pair (deterministic ECMP), [`Rail::spine`], chosen
//! so that translating the node-in-group digit or the group digit of both ends maps the
//! route onto the route of the translated pair, with the spines rotated (see `symmetry`).
//!
//! Numbering: hosts first (GPUs node-major, GPU index minor, then extra hosts), then the
//! NVSwitches (one per node), the leaves (`group * gpus_per_node + rail`), the spines and
//! the service leaf (only with extra hosts). Links: GPU `h` to its NVSwitch `2h` (back
//! `2h+1`); GPU `h` to its leaf `2G + 2h` (back `+1`, G = GPU hosts); leaf `L` to spine `s`
//! `4G + 2(L S + s)` (back `+1`); extra host `x` to the service leaf, then the service leaf
//! to spine `s`, after those.

use super::{Link, NodeId, Shape, Topology};
use crate::units::Nanos;

/// Rates and sizes of a rail fabric. Rates are bytes/ns per direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RailParams {
    /// GPUs per node (rails).
    pub gpus_per_node: usize,
    /// Nodes per rail group (capped at the number of nodes).
    pub nodes_per_group: usize,
    /// Spine switches.
    pub spines: usize,
    /// GPU <-> NVSwitch rate.
    pub nvlink_bytes_per_ns: f64,
    /// GPU NIC <-> leaf rate.
    pub nic_bytes_per_ns: f64,
    /// Leaf uplink capacity = downlink capacity / this.
    pub oversubscription: f64,
    /// Extra host <-> service leaf rate.
    pub extra_bytes_per_ns: f64,
}

/// The wiring of a rail fabric, kept in [`Shape::Rail`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rail {
    /// GPUs per node.
    pub gpus_per_node: usize,
    /// Nodes per rail group (the last group may hold fewer).
    pub nodes_per_group: usize,
    /// Nodes.
    pub nodes: usize,
    /// Rail groups.
    pub groups: usize,
    /// Spine switches.
    pub spines: usize,
    /// GPU hosts (the first `gpus` hosts).
    pub gpus: usize,
    /// Extra hosts after the GPUs.
    pub extra: usize,
}

impl Rail {
    /// Hosts in all.
    pub fn hosts(&self) -> usize {
        self.gpus + self.extra
    }

    /// Leaf switches (excluding the service leaf).
    pub fn leaves(&self) -> usize {
        self.groups * self.gpus_per_node
    }

    /// (rail, node in group, group) of GPU `h`.
    pub fn coords(&self, h: usize) -> (usize, usize, usize) {
        let node = h / self.gpus_per_node;
        (h % self.gpus_per_node, node % self.nodes_per_group, node / self.nodes_per_group)
    }

    /// GPU at (rail, node in group, group).
    pub fn gpu(&self, r: usize, p: usize, g: usize) -> usize {
        (g * self.nodes_per_group + p) * self.gpus_per_node + r
    }

    /// Spine step when the node-in-group digit of both ends moves by +1: the spines
    /// rotate by this much. `A * nodes_per_group` is a multiple of `spines`, so the
    /// wrap-around of the digit rotates them by the same amount.
    pub fn node_step(&self) -> usize {
        self.spines / crate::arith::gcd(self.spines, self.nodes_per_group)
    }

    /// Spine rotation when the group digit of both ends moves by +1 (see [`Rail::node_step`]).
    pub fn group_step(&self) -> usize {
        self.spines / crate::arith::gcd(self.spines, self.groups)
    }

    /// Deterministic ECMP: the spine of the route between hosts `a` and `b` (at least one
    /// a GPU). Depends on the source's node and group only through `node_step * node +
    /// group_step * group` and otherwise on the rails and the differences of the ends'
    /// digits, so translations of those digits rotate it (see module doc).
    pub fn spine(&self, a: usize, b: usize) -> usize {
        let s = self.spines;
        let (gpu, other) = if a < self.gpus { (a, b) } else { (b, a) };
        let (ra, pa, ga) = self.coords(gpu);
        let base = self.node_step() * pa + self.group_step() * ga + ra;
        if other >= self.gpus {
            return (base + (other - self.gpus)) % s;
        }
        let (rb, pb, gb) = self.coords(other);
        let dp = (pb + self.nodes_per_group - pa) % self.nodes_per_group;
        let dg = (gb + self.groups - ga) % self.groups;
        (base + self.gpus_per_node * rb + dp + self.nodes_per_group * dg) % s
    }
}

impl Topology {
    /// A rail-optimised fat-tree with `gpus` GPU hosts and `extra` other hosts; see the
    /// module documentation of `topology::rail` for wiring, numbering and routes.
    pub fn rail(gpus: usize, extra: usize, p: &RailParams, latency: Nanos) -> Self {
        let g = p.gpus_per_node.max(1);
        let nodes = gpus.div_ceil(g).max(1);
        let per_group = p.nodes_per_group.clamp(1, nodes);
        let groups = nodes.div_ceil(per_group);
        let spines = p.spines.max(1);
        let rail = Rail { gpus_per_node: g, nodes_per_group: per_group, nodes, groups, spines, gpus, extra };
        let hosts = gpus + extra;
        let nvswitch = |n: usize| hosts + n;
        let leaf = |l: usize| hosts + nodes + l;
        let spine = |s: usize| hosts + nodes + rail.leaves() + s;
        let service = hosts + nodes + rail.leaves() + spines;
        let mut links = Vec::with_capacity(4 * gpus + 2 * rail.leaves() * spines + 2 * extra + 2 * spines);
        let pair = |links: &mut Vec<Link>, a: NodeId, b: NodeId, bytes_per_ns: f64| {
            links.push(Link { from: a, to: b, bytes_per_ns, latency });
            links.push(Link { from: b, to: a, bytes_per_ns, latency });
        };
        for h in 0..gpus {
            pair(&mut links, h, nvswitch(h / g), p.nvlink_bytes_per_ns);
        }
        for h in 0..gpus {
            let (r, _, grp) = rail.coords(h);
            pair(&mut links, h, leaf(grp * g + r), p.nic_bytes_per_ns);
        }
        let uplink = per_group as f64 * p.nic_bytes_per_ns / (p.oversubscription * spines as f64);
        for l in 0..rail.leaves() {
            for s in 0..spines {
                pair(&mut links, leaf(l), spine(s), uplink);
            }
        }
        for x in 0..extra {
            pair(&mut links, gpus + x, service, p.extra_bytes_per_ns);
        }
        if extra > 0 {
            let up = extra as f64 * p.extra_bytes_per_ns / (p.oversubscription * spines as f64);
            for s in 0..spines {
                pair(&mut links, service, spine(s), up);
            }
        }
        let switches = nodes + rail.leaves() + spines + usize::from(extra > 0);
        Topology { shape: Shape::Rail(rail), hosts, nodes: hosts + switches, links, by_ends: Default::default() }
    }

    /// Route on a rail fabric (see the module documentation).
    pub(super) fn rail_route(&self, rail: &Rail, src: usize, dst: usize, path: &mut Vec<usize>) {
        let (gpus, g, spines) = (rail.gpus, rail.gpus_per_node, rail.spines);
        let nic = 2 * gpus;
        let up = 4 * gpus;
        let extra_base = up + 2 * rail.leaves() * spines;
        let service_base = extra_base + 2 * rail.extra;
        match (src < gpus, dst < gpus) {
            (true, true) => {
                let (ra, _, ga) = rail.coords(src);
                let (rb, _, gb) = rail.coords(dst);
                if src / g == dst / g {
                    path.extend([2 * src, 2 * dst + 1]);
                } else if ra == rb && ga == gb {
                    path.extend([nic + 2 * src, nic + 2 * dst + 1]);
                } else {
                    let s = rail.spine(src, dst);
                    let (la, lb) = (ga * g + ra, gb * g + rb);
                    path.extend([nic + 2 * src, up + 2 * (la * spines + s), up + 2 * (lb * spines + s) + 1]);
                    path.push(nic + 2 * dst + 1);
                }
            }
            (true, false) => {
                let (r, _, grp) = rail.coords(src);
                let s = rail.spine(src, dst);
                path.extend([nic + 2 * src, up + 2 * ((grp * g + r) * spines + s), service_base + 2 * s + 1]);
                path.push(extra_base + 2 * (dst - gpus) + 1);
            }
            (false, true) => {
                let (r, _, grp) = rail.coords(dst);
                let s = rail.spine(src, dst);
                path.extend([extra_base + 2 * (src - gpus), service_base + 2 * s]);
                path.extend([up + 2 * ((grp * g + r) * spines + s) + 1, nic + 2 * dst + 1]);
            }
            (false, false) => path.extend([extra_base + 2 * (src - gpus), extra_base + 2 * (dst - gpus) + 1]),
        }
    }

    /// Name of switch `i` (counted from the first switch) of a rail fabric.
    pub(super) fn rail_switch_name(rail: &Rail, i: usize) -> String {
        let leaves = rail.leaves();
        if i < rail.nodes {
            format!("nvsw{i}")
        } else if i < rail.nodes + leaves {
            let l = i - rail.nodes;
            format!("leaf{}.{}", l / rail.gpus_per_node, l % rail.gpus_per_node)
        } else if i < rail.nodes + leaves + rail.spines {
            format!("spine{}", i - rail.nodes - leaves)
        } else {
            "svc".to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(per_group: usize, spines: usize) -> RailParams {
        RailParams {
            gpus_per_node: 4,
            nodes_per_group: per_group,
            spines,
            nvlink_bytes_per_ns: 450.0,
            nic_bytes_per_ns: 50.0,
            oversubscription: 2.0,
            extra_bytes_per_ns: 10.0,
        }
    }

    fn assert_path(t: &Topology, a: usize, b: usize) -> Vec<usize> {
        let path = t.route(a, b);
        let mut at = a;
        for &l in &path {
            assert_eq!(t.links()[l].from, at, "{a}->{b}: {path:?}");
            at = t.links()[l].to;
        }
        assert_eq!(at, b);
        path
    }

    #[test]
    fn rail_routes_are_connected_and_have_the_documented_lengths() {
        // 4 GPUs per node, 3 nodes per group, 7 nodes (last group partial), 2 servers.
        let t = Topology::rail(28, 2, &params(3, 2), 1);
        for a in 0..30 {
            for b in 0..30 {
                let path = assert_path(&t, a, b);
                let len = match (a, b) {
                    _ if a == b => 0,
                    (a, b) if a >= 28 && b >= 28 => 2,
                    (a, b) if a >= 28 || b >= 28 => 4,
                    (a, b) if a / 4 == b / 4 => 2,
                    (a, b) if a % 4 == b % 4 && a / 12 == b / 12 => 2,
                    _ => 4,
                };
                assert_eq!(path.len(), len, "{a}->{b}");
            }
        }
        assert_eq!(t.link_name(t.route(0, 1)[0]), "h0->nvsw0");
        assert_eq!(t.link_name(t.route(1, 5)[0]), "h1->leaf0.1");
        let name = t.link_name(t.route(0, 13)[2]);
        assert!(name.starts_with("spine") && name.ends_with("->leaf1.1"), "{name}");
        assert_eq!(t.link_name(t.route(28, 0)[0]), "h28->svc");
    }

    #[test]
    fn leaf_uplinks_carry_downlink_capacity_over_oversubscription() {
        let t = Topology::rail(48, 0, &params(3, 2), 1);
        // leaf0.0 -> spines: 2 links of 3 * 50 / (2 * 2) each = 75 total = 150 / 2.
        let up: f64 = t
            .links()
            .iter()
            .filter(|l| t.node_name(l.from) == "leaf0.0" && l.to >= 48 + 12 + 16)
            .map(|l| l.bytes_per_ns)
            .sum();
        assert!((up - 75.0).abs() < 1e-12);
        assert_eq!(t.links()[0].bytes_per_ns, 450.0);
    }
}
