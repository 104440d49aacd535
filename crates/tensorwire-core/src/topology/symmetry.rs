//! Symmetries of a topology under *digit translations* of the ranks, for folding.
//!
//! The first `ranks` hosts are numbered in a mixed-radix layout ([`Topology::layout`],
//! innermost digit first: e.g. GPU in node, node in group, group on `rail`). Translating
//! digit `d` moves every rank's digit `d` by +1 modulo its radix, without carry, and
//! leaves the other digits alone. A digit is *invariant* ([`Topology::invariant_digits`])
//! when that translation, extended to the switches ([`Topology::translate_node`]), maps
//! every link onto a link of equal rate and latency and every route onto the route
//! between the translated ends; hosts beyond `ranks` (parameter servers) stay where they
//! are. The translations of a set of invariant digits form a group `H` of order the
//! product of their radices; [`Topology::link_orbits`] splits the links into orbits under
//! `H`, each with a representative (its smallest link id).
//!
//! Cost: `layout`, `invariant_digits` and `translate_node` are O(digits) (O(GPUs^2) once
//! for `nodes`); `link_orbits` is O(links x digits) with a hash map of the links' ends.

use std::collections::HashMap;

use super::{LinkId, NodeId, Shape, Topology};

/// Orbits of the links under the translations of a set of invariant digits.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkOrbits {
    representative: Vec<LinkId>,
    size: Vec<u32>,
    order: usize,
}

impl LinkOrbits {
    /// The representative (smallest link id) of `link`'s orbit.
    pub fn representative(&self, link: LinkId) -> LinkId {
        self.representative[link]
    }

    /// Number of links in `link`'s orbit (divides [`LinkOrbits::group_order`]).
    pub fn orbit_size(&self, link: LinkId) -> usize {
        self.size[link] as usize
    }

    /// Number of translations in the group, |H|.
    pub fn group_order(&self) -> usize {
        self.order
    }

    /// The inverse of [`LinkOrbits::representative`]: every link of `link`'s orbit, in
    /// increasing order. O(links).
    pub fn members(&self, link: LinkId) -> Vec<LinkId> {
        let rep = self.representative[link];
        (0..self.representative.len()).filter(|&l| self.representative[l] == rep).collect()
    }
}

/// Digits of `x` in `layout` (innermost first).
pub fn digits(mut x: usize, layout: &[usize]) -> Vec<usize> {
    layout
        .iter()
        .map(|&r| {
            let d = x % r;
            x /= r;
            d
        })
        .collect()
}

impl Topology {
    /// Radices of the mixed-radix layout of the first `ranks` hosts, innermost first;
    /// their product is `ranks`. `rail`: `[gpus_per_node, nodes_per_group, groups]`;
    /// `leaf-spine`: `[hosts_per_leaf, leaves]`; `nodes`: `[gpus_per_node, nodes]`, behind
    /// leaves `[gpus_per_node, nodes_per_leaf, leaves]`;
    /// `star` and `ring`: `[ranks]`. Radix-1 digits are kept (a 1-group rail has
    /// `[8, P, 1]`). When the ranks do not fill the shape exactly (a partial last leaf,
    /// node or group, or other hosts among them), `[ranks]`, with no invariant digit.
    pub fn layout(&self, ranks: usize) -> Vec<usize> {
        match &self.shape {
            Shape::LeafSpine { hosts_per_leaf, leaves, .. }
                if self.hosts == ranks && hosts_per_leaf * leaves == ranks =>
            {
                vec![*hosts_per_leaf, *leaves]
            }
            Shape::Nodes { gpus_per_node, nodes, gpus, nodes_per_leaf }
                if *gpus == ranks && gpus_per_node * nodes == ranks =>
            {
                if nodes_per_leaf >= nodes {
                    vec![*gpus_per_node, *nodes]
                } else if nodes.is_multiple_of(*nodes_per_leaf) {
                    vec![*gpus_per_node, *nodes_per_leaf, nodes / nodes_per_leaf]
                } else {
                    vec![ranks]
                }
            }
            Shape::Rail(r) if r.gpus == ranks && r.gpus_per_node * r.nodes_per_group * r.groups == ranks => {
                vec![r.gpus_per_node, r.nodes_per_group, r.groups]
            }
            _ => vec![ranks],
        }
    }

    /// Per digit of [`Topology::layout`]: whether translating it maps links onto links of
    /// equal rate and latency and routes onto routes (see the module documentation).
    /// `star`: yes; `ring`: yes when every host is a rank; `leaf-spine` (ECMP spine
    /// `(src + dst) mod spines`): the host-in-leaf digit when `spines` divides
    /// `hosts_per_leaf`, the leaf digit when `spines` divides the hosts; `nodes`: the node
    /// digit (behind leaves, the node-in-leaf and leaf digits), and the GPU digit when the machine's wiring is invariant under GPU `i ->
    /// i+1` (e.g. `dgx-a100`); `rail`: the node-in-group and group digits, never the GPU
    /// digit (cross-rail routes pick their spine by rail).
    pub fn invariant_digits(&self, ranks: usize) -> Vec<bool> {
        let layout = self.layout(ranks);
        match &self.shape {
            Shape::Star => vec![true],
            Shape::Ring => vec![self.hosts == ranks],
            _ if layout.len() == 1 => vec![false],
            Shape::LeafSpine { hosts_per_leaf, spines, .. } => {
                vec![hosts_per_leaf.is_multiple_of(*spines), self.hosts.is_multiple_of(*spines)]
            }
            Shape::Nodes { gpus_per_node, .. } => {
                let g = *gpus_per_node;
                let rate = |a: usize, b: usize| self.by_ends.get(&(a, b)).map(|&l| self.links[l].bytes_per_ns);
                let cyclic = (0..g).all(|i| (0..g).all(|j| rate(i, j) == rate((i + 1) % g, (j + 1) % g)));
                let mut digits = vec![true; layout.len()];
                digits[0] = cyclic;
                digits
            }
            Shape::Rail(_) => vec![false, true, true],
        }
    }

    /// Where translating `digit` of the layout of `ranks` by +1 takes node `node` (hosts
    /// and switches). Meaningful for the shape's invariant digits; other hosts than the
    /// first `ranks` are fixed points.
    pub fn translate_node(&self, node: NodeId, ranks: usize, digit: usize) -> NodeId {
        let layout = self.layout(ranks);
        if node < self.hosts {
            if node >= ranks {
                return node;
            }
            let mut d = digits(node, &layout);
            d[digit] = (d[digit] + 1) % layout[digit];
            return d.iter().rev().zip(layout.iter().rev()).fold(0, |acc, (&x, &r)| acc * r + x);
        }
        let i = node - self.hosts;
        let shift = |x: usize, by: usize, m: usize| (x + by) % m;
        match (&self.shape, layout.len()) {
            (_, 1) => node,
            (Shape::LeafSpine { hosts_per_leaf, leaves, spines }, _) => {
                if i < *leaves {
                    self.hosts + if digit == 1 { shift(i, 1, *leaves) } else { i }
                } else {
                    let by = if digit == 0 { 2 } else { 2 * hosts_per_leaf };
                    self.hosts + leaves + shift(i - leaves, by, *spines)
                }
            }
            (Shape::Nodes { nodes, .. }, 2) => {
                // Machine `i` is machine `i mod nodes` of leaf `i / nodes` in the layout's
                // terms (digit 1: node, no leaves).
                if i < *nodes && digit == 1 {
                    self.hosts + shift(i, 1, *nodes)
                } else {
                    node
                }
            }
            (Shape::Nodes { nodes, nodes_per_leaf, .. }, _) => {
                let (per_leaf, leaves) = (*nodes_per_leaf, nodes / nodes_per_leaf);
                if i < *nodes {
                    let (m, leaf) = (i % per_leaf, i / per_leaf);
                    let (m, leaf) = match digit {
                        1 => (shift(m, 1, per_leaf), leaf),
                        2 => (m, shift(leaf, 1, leaves)),
                        _ => (m, leaf),
                    };
                    self.hosts + leaf * per_leaf + m
                } else if i < nodes + leaves && digit == 2 {
                    self.hosts + nodes + shift(i - nodes, 1, leaves)
                } else {
                    node
                }
            }
            (Shape::Rail(r), _) => {
                let (g, leaves) = (r.gpus_per_node, r.leaves());
                if i < r.nodes {
                    let (p, grp) = (i % r.nodes_per_group, i / r.nodes_per_group);
                    let (p, grp) = match digit {
                        1 => (shift(p, 1, r.nodes_per_group), grp),
                        2 => (p, shift(grp, 1, r.groups)),
                        _ => (p, grp),
                    };
                    self.hosts + grp * r.nodes_per_group + p
                } else if i < r.nodes + leaves {
                    let l = i - r.nodes;
                    let (rail, grp) = (l % g, l / g);
                    let (rail, grp) = match digit {
                        0 => (shift(rail, 1, g), grp),
                        2 => (rail, shift(grp, 1, r.groups)),
                        _ => (rail, grp),
                    };
                    self.hosts + r.nodes + grp * g + rail
                } else if i < r.nodes + leaves + r.spines {
                    let s = i - r.nodes - leaves;
                    let by = match digit {
                        1 => r.node_step(),
                        2 => r.group_step(),
                        _ => 0,
                    };
                    self.hosts + r.nodes + leaves + shift(s, by, r.spines)
                } else {
                    node
                }
            }
            (Shape::Star | Shape::Ring, _) => node,
        }
    }

    /// Orbits of the links under the translations of the digits marked in `digits` (one
    /// flag per digit of [`Topology::layout`]). `None` when a marked digit's translation
    /// does not map some link onto a link of equal rate and latency (the digit is not
    /// invariant).
    pub fn link_orbits(&self, ranks: usize, digits: &[bool]) -> Option<LinkOrbits> {
        let layout = self.layout(ranks);
        let marked: Vec<usize> = (0..layout.len()).filter(|&d| digits.get(d).copied().unwrap_or(false)).collect();
        let order = marked.iter().map(|&d| layout[d]).product();
        let ends: HashMap<(NodeId, NodeId), LinkId> =
            self.links.iter().enumerate().map(|(l, link)| ((link.from, link.to), l)).collect();
        let image = |l: LinkId, d: usize| -> Option<LinkId> {
            let link = &self.links[l];
            let key = (self.translate_node(link.from, ranks, d), self.translate_node(link.to, ranks, d));
            let m = *ends.get(&key)?;
            let same = self.links[m].bytes_per_ns == link.bytes_per_ns && self.links[m].latency == link.latency;
            same.then_some(m)
        };
        let unset = LinkId::MAX;
        let mut representative = vec![unset; self.links.len()];
        let mut size = vec![0u32; self.links.len()];
        let mut orbit = Vec::new();
        for l in 0..self.links.len() {
            if representative[l] != unset {
                continue;
            }
            orbit.clear();
            orbit.push(l);
            representative[l] = l;
            let mut i = 0;
            while i < orbit.len() {
                for &d in &marked {
                    let m = image(orbit[i], d)?;
                    if representative[m] == unset {
                        representative[m] = l;
                        orbit.push(m);
                    }
                }
                i += 1;
            }
            for &m in &orbit {
                size[m] = orbit.len() as u32;
            }
        }
        Some(LinkOrbits { representative, size, order })
    }

    /// `link`'s orbit representative and orbit size under the translations of the marked
    /// digits; `None` if they are not all invariant. Builds every orbit: O(links x digits).
    pub fn link_orbit(&self, link: LinkId, ranks: usize, digits: &[bool]) -> Option<(LinkId, usize)> {
        self.link_orbits(ranks, digits).map(|o| (o.representative(link), o.orbit_size(link)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::RailParams;

    fn rail(gpus: usize, extra: usize, g: usize, per_group: usize, spines: usize) -> Topology {
        let p = RailParams {
            gpus_per_node: g,
            nodes_per_group: per_group,
            spines,
            nvlink_bytes_per_ns: 450.0,
            nic_bytes_per_ns: 50.0,
            oversubscription: 1.0,
            extra_bytes_per_ns: 12.5,
        };
        Topology::rail(gpus, extra, &p, 1)
    }

    /// Brute force: every claimed invariant digit maps every route onto the route of the
    /// translated ends, links onto links of equal rate and latency.
    fn assert_claims_hold(t: &Topology, ranks: usize) {
        let layout = t.layout(ranks);
        assert_eq!(layout.iter().product::<usize>(), ranks, "{:?}", t.shape());
        let claims = t.invariant_digits(ranks);
        assert_eq!(claims.len(), layout.len());
        let ends: HashMap<(usize, usize), usize> =
            t.links().iter().enumerate().map(|(l, k)| ((k.from, k.to), l)).collect();
        for d in (0..layout.len()).filter(|&d| claims[d]) {
            let tl = |l: usize| {
                let k = &t.links()[l];
                ends[&(t.translate_node(k.from, ranks, d), t.translate_node(k.to, ranks, d))]
            };
            for a in 0..t.hosts() {
                for b in 0..t.hosts() {
                    let mapped: Vec<usize> = t.route(a, b).into_iter().map(tl).collect();
                    let (ta, tb) = (t.translate_node(a, ranks, d), t.translate_node(b, ranks, d));
                    assert_eq!(mapped, t.route(ta, tb), "{:?} digit {d}: {a}->{b}", t.shape());
                }
            }
            for l in 0..t.links().len() {
                assert_eq!(t.links()[l].bytes_per_ns, t.links()[tl(l)].bytes_per_ns);
            }
        }
        // Orbits under all claimed digits: consistent, sizes divide the group order.
        let orbits = t.link_orbits(ranks, &claims).expect("claimed digits are invariant");
        for l in 0..t.links().len() {
            let rep = orbits.representative(l);
            assert!(rep <= l);
            let members = orbits.members(l);
            assert!(members.contains(&l) && members[0] == rep);
            assert_eq!(members.len(), orbits.orbit_size(l));
            assert_eq!(orbits.group_order() % orbits.orbit_size(l), 0);
        }
    }

    #[test]
    fn rail_translations_of_nodes_and_groups_map_routes_onto_routes() {
        for (gpus, extra, g, per_group, spines) in
            [(24, 0, 2, 3, 3), (48, 2, 4, 3, 2), (32, 0, 4, 2, 4), (36, 1, 3, 4, 6), (16, 0, 2, 8, 8), (8, 0, 4, 2, 3)]
        {
            let t = rail(gpus, extra, g, per_group, spines);
            assert_eq!(t.invariant_digits(gpus), vec![false, true, true]);
            assert_claims_hold(&t, gpus);
        }
        // A partial group: no layout beyond [ranks], nothing claimed.
        let t = rail(20, 0, 2, 3, 2);
        assert_eq!(t.layout(20), vec![20]);
        assert_eq!(t.invariant_digits(20), vec![false]);
    }

    #[test]
    fn leaf_spine_nodes_star_and_ring_claims_hold() {
        for (hosts, per_leaf, spines) in [(12, 4, 2), (12, 4, 3), (16, 4, 4), (18, 6, 3), (8, 2, 1)] {
            let t = Topology::leaf_spine(hosts, per_leaf, spines, 1.0, 2.0, 1);
            assert_claims_hold(&t, hosts);
        }
        assert_eq!(Topology::leaf_spine(12, 4, 2, 1.0, 2.0, 1).invariant_digits(12), vec![true, true]);
        assert_eq!(Topology::leaf_spine(12, 4, 3, 1.0, 2.0, 1).invariant_digits(12), vec![false, true]);
        for (machine, extra) in [("p3.16xlarge", 1), ("dgx-a100", 0), ("pcie-8", 2)] {
            let m = crate::gputopo::GpuTopology::preset(machine).unwrap();
            let t = Topology::machines(24, extra, &m, 12.5, 1, None);
            assert_eq!(t.layout(24), vec![8, 3]);
            assert_eq!(t.invariant_digits(24), vec![machine != "p3.16xlarge", true], "{machine}");
            assert_claims_hold(&t, 24);
            // Behind leaves of 2 and of 3 machines: machine-in-leaf and leaf digits hold too.
            for per_leaf in [2, 3] {
                let leaves = super::super::MachineLeaves { nodes_per_leaf: per_leaf, oversubscription: 3.0 };
                let t = Topology::machines(48, extra, &m, 12.5, 1, Some(leaves));
                assert_eq!(t.layout(48), vec![8, per_leaf, 6 / per_leaf]);
                assert_eq!(t.invariant_digits(48), vec![machine != "p3.16xlarge", true, true], "{machine}");
                assert_claims_hold(&t, 48);
            }
            // A partly filled last leaf: nothing claimed.
            let leaves = super::super::MachineLeaves { nodes_per_leaf: 2, oversubscription: 3.0 };
            assert_eq!(Topology::machines(24, extra, &m, 12.5, 1, Some(leaves)).layout(24), vec![24]);
        }
        assert_claims_hold(&Topology::star(7, 1.0, 1), 5);
        assert_claims_hold(&Topology::ring(6, 1.0, 1), 6);
    }

    #[test]
    fn rail_orbits_count_links_per_translation_class() {
        // 2 GPUs/node, 3 nodes/group, 2 groups, 3 spines; H = nodes and groups (order 6).
        let t = rail(12, 0, 2, 3, 3);
        let o = t.link_orbits(12, &[false, true, true]).unwrap();
        assert_eq!(o.group_order(), 6);
        // A GPU's NVSwitch uplink: one per (GPU index) orbit of 6 links.
        assert_eq!(o.orbit_size(0), 6);
        assert_eq!(o.representative(2 * 7), 2, "GPU 7 = (rail 1, node 0, group 1) -> GPU 1");
        // Only the group digit: leaf-spine links have orbits of 2.
        let o = t.link_orbits(12, &[false, false, true]).unwrap();
        assert_eq!(o.group_order(), 2);
        assert_eq!(o.orbit_size(4 * 12), 2);
    }
}
