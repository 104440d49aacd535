//! Whether jobs on disjoint hosts of a fabric can slow each other.
//!
//! In tensorwire's network model jobs meet only on links: switches are non-blocking and
//! a host belongs to one job. A link slows a flow only when the flows crossing it could
//! together send faster than its capacity, and every flow is bounded by its source's
//! link into the fabric (and its destination's link out of it). So jobs on a fabric
//! cannot slow each other when every link that the traffic of two jobs could cross has
//! at least the capacity of all the host links that can feed it: whatever each job
//! sends, such a link is never the one that limits a flow. Where that holds, a job whose
//! collectives are timed in closed form, with no flows on the links (NCCL's model), is
//! exact beside any other job, timed or on flows (see `engine::jobs`).
//!
//! The links two jobs could share, by fabric (`trunks`):
//! - `star`: none; each host has its own link pair to the one non-blocking switch;
//! - `ring`: every link, since hosts forward each other's messages;
//! - `leaf-spine`: a leaf's spine links, fed by its hosts whose job has hosts under
//!   another leaf (the rest never leave the leaf); each carries at most their host links'
//!   rate, against the `uplink` rate (default `hosts_per_leaf x host rate / spines`, so a
//!   leaf with more job hosts than `hosts_per_leaf / spines` can be contended:
//!   deterministic ECMP may put several of its hosts' flows on one spine link);
//! - `rail`: a leaf's spine links (leaf = one rail of one rail group), fed by its GPUs
//!   whose job has a GPU on another node and another leaf (the others reach their job over
//!   NVLink or the leaf alone), against `nodes_per_group x NIC / (oversubscription x
//!   spines)`; and the service leaf's spine links, fed by the extra hosts whose job has a
//!   GPU. So jobs in rail groups of their own never meet, and jobs in one group only on
//!   a fabric whose every spine link carries a leaf's NICs (`spines=1`, no
//!   oversubscription). A job whose traffic is rail-aligned ([`Traffic::RailAligned`]: NCCL's) and whose GPUs
//!   lie in one rail group, on the same rails of each of its nodes, feeds no spine link:
//!   NCCL's hops between nodes go from NIC r to NIC r through rail leaf r, and cross-rail
//!   data moves over NVLink first (PXN). Two such jobs in one group never meet, nor one
//!   beside a flow-level job; a rail-aligned job spanning groups feeds the spines as any;
//! - `nodes`: a machine's NIC link to its switch, fed by its GPUs' PCIe links to the
//!   NIC whose job has a host off the machine: two jobs with GPUs on one machine meet
//!   there (a NIC runs at most at the machine's PCIe total, never more here); and with
//!   `nodes_per_leaf=`, a leaf's uplink trunk, fed by its machines' GPUs whose job has a
//!   host off the leaf, each machine's at most its NIC's rate, against `nodes_per_leaf x
//!   NIC / oversubscription`.

use super::{NodeId, Shape, Topology};

/// Which pairs of a job's hosts may exchange traffic: what decides the links it can feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Any two of its hosts (flows of any strategy on tensorwire's routes).
    AnyPair,
    /// NCCL's channels on a `rail` fabric: rail-aligned between nodes. NCCL's channel
    /// search (`ncclTopoCompute`, src/graph/search.cc) builds rings and trees whose hops
    /// between nodes leave and enter on the same NIC index (`NCCL_CROSS_NIC=2`, the
    /// default, prefers that; cross-NIC only where no rail-aligned graph exists), and PXN
    /// (src/graph/paths.cc, on unless `NCCL_PXN_DISABLE=1`) moves data to the GPU of the
    /// destination's rail over NVLink before it leaves the node. So a job whose GPUs lie in
    /// one rail group, on the same rails of every node, crosses its rail leaves only,
    /// never a spine link. On other fabrics, and for a job spanning rail groups (or nodes
    /// on different rails), as [`Traffic::AnyPair`].
    RailAligned,
}

/// Links only the traffic of some hosts (its feeders) may cross, named for errors.
struct Trunk {
    /// What the links are, as a person reads it (`the spine links of leaf3`).
    name: String,
    /// The smallest capacity of its links, bytes/ns.
    capacity: f64,
    /// Hosts whose traffic may cross it, with the rate that bounds it (bytes/ns): the
    /// host's link towards it.
    feeders: Vec<(NodeId, f64)>,
}

/// Two jobs' traffic may meet beyond a link's capacity: where and how much.
#[derive(Debug, Clone, PartialEq)]
pub struct Contention {
    /// The links, as a person reads them (`the spine links of leaf0.3`).
    pub links: String,
    /// The other job (index into the host sets).
    pub other: usize,
    /// Capacity of each of those links, bytes/s.
    pub capacity_bytes_per_s: f64,
    /// Host links of all jobs that can feed them, bytes/s in all.
    pub feeders_bytes_per_s: f64,
    /// How many host links those are.
    pub feeders: usize,
}

/// Where the traffic of job `job` (its hosts `jobs[job]`) and another job's could meet on
/// a link beyond its capacity (see the module doc): the first such link group, or `None`
/// when every link the job could share with another is never limiting, so that no other
/// job can change its flows' rates and it can change no other job's. The jobs' host sets
/// are disjoint (hosts outside them carry no traffic); `traffic[j]` says which of job `j`'s
/// hosts may talk ([`Traffic`]; one per job).
pub fn contention(topo: &Topology, jobs: &[Vec<usize>], traffic: &[Traffic], job: usize) -> Option<Contention> {
    debug_assert_eq!(jobs.len(), traffic.len(), "one traffic pattern per job");
    let mut owner: Vec<Option<usize>> = vec![None; topo.hosts()];
    for (j, hosts) in jobs.iter().enumerate() {
        for &h in hosts {
            owner[h] = Some(j);
        }
    }
    for trunk in trunks(topo, jobs, traffic, &owner) {
        let has = |j: usize| trunk.feeders.iter().any(|&(h, _)| owner[h] == Some(j));
        if !has(job) {
            continue;
        }
        let Some(other) = (0..jobs.len()).find(|&j| j != job && has(j)) else { continue };
        let demand: f64 = trunk.feeders.iter().map(|&(_, rate)| rate).sum();
        // Rates are products of the same inputs: a tolerance for their rounding only.
        if trunk.capacity * (1.0 + 1e-9) < demand {
            return Some(Contention {
                links: trunk.name,
                other,
                capacity_bytes_per_s: trunk.capacity * 1e9,
                feeders_bytes_per_s: demand * 1e9,
                feeders: trunk.feeders.len(),
            });
        }
    }
    None
}

/// The link groups that more than one host's traffic may cross on `topo`, each with the
/// job hosts that may feed it (`owner`: each host's job; `traffic`: each job's pattern).
fn trunks(topo: &Topology, jobs: &[Vec<usize>], traffic: &[Traffic], owner: &[Option<usize>]) -> Vec<Trunk> {
    let links = topo.links();
    let hosts = topo.hosts();
    let min_capacity =
        |ids: &mut dyn Iterator<Item = usize>| ids.map(|l| links[l].bytes_per_ns).fold(f64::INFINITY, f64::min);
    // Hosts of each job per group (`group_of`), to tell whether a job leaves a group.
    let per_group = |group_of: &dyn Fn(usize) -> Option<usize>, groups: usize| -> Vec<Vec<usize>> {
        let mut count = vec![vec![0; groups]; jobs.len()];
        for (j, hs) in jobs.iter().enumerate() {
            for &h in hs {
                if let Some(g) = group_of(h) {
                    count[j][g] += 1;
                }
            }
        }
        count
    };
    match topo.shape() {
        Shape::Star => Vec::new(),
        Shape::Ring => vec![Trunk {
            name: "the ring's links (hosts forward each other's messages)".into(),
            capacity: min_capacity(&mut (0..links.len())),
            feeders: (0..hosts)
                .filter(|&h| owner[h].is_some())
                .map(|h| (h, links[2 * h].bytes_per_ns.max(links[topo.downlink(h)].bytes_per_ns)))
                .collect(),
        }],
        Shape::LeafSpine { hosts_per_leaf, leaves, spines } => {
            let (per_leaf, leaves, spines) = (*hosts_per_leaf, *leaves, *spines);
            let count = per_group(&|h| Some(h / per_leaf), leaves);
            let base = 2 * hosts;
            (0..leaves)
                .map(|l| Trunk {
                    name: format!("the spine links of {}", topo.node_name(hosts + l)),
                    capacity: min_capacity(&mut (0..2 * spines).map(|k| base + 2 * l * spines + k)),
                    feeders: (l * per_leaf..((l + 1) * per_leaf).min(hosts))
                        .filter_map(|h| {
                            let j = owner[h]?;
                            let leaves_leaf = jobs[j].len() > count[j][l];
                            leaves_leaf.then(|| (h, links[2 * h].bytes_per_ns.max(links[2 * h + 1].bytes_per_ns)))
                        })
                        .collect(),
                })
                .collect()
        }
        Shape::Rail(rail) => {
            let (gpus, g, spines) = (rail.gpus, rail.gpus_per_node, rail.spines);
            let leaf_of = |h: usize| {
                let (r, _, grp) = rail.coords(h);
                grp * g + r
            };
            let on_leaf = per_group(&|h| (h < gpus).then(|| leaf_of(h)), rail.leaves());
            let on_node = per_group(&|h| (h < gpus).then(|| h / g), rail.nodes);
            let gpus_of: Vec<usize> = jobs.iter().map(|hs| hs.iter().filter(|&&h| h < gpus).count()).collect();
            // Rail-aligned jobs within one rail group, on the same rails of each node: they
            // reach every GPU of theirs through their rail leaves (and NVLink) alone.
            let rail_local: Vec<bool> =
                jobs.iter().zip(traffic).map(|(hs, &t)| t == Traffic::RailAligned && within_rails(rail, hs)).collect();
            let (nic, up) = (2 * gpus, 4 * gpus);
            let mut feeders = vec![Vec::new(); rail.leaves()];
            for h in 0..gpus {
                let Some(j) = owner[h] else { continue };
                if rail_local[j] {
                    continue;
                }
                let (l, n) = (leaf_of(h), h / g);
                // The job's GPUs off this node and off this leaf (h itself is on both),
                // or any of its extra hosts: its traffic to them crosses the spine.
                let away = gpus_of[j] + 1 - on_leaf[j][l] - on_node[j][n];
                if away > 0 || jobs[j].len() > gpus_of[j] {
                    feeders[l].push((h, links[nic + 2 * h].bytes_per_ns.max(links[nic + 2 * h + 1].bytes_per_ns)));
                }
            }
            let mut out: Vec<Trunk> = feeders
                .into_iter()
                .enumerate()
                .map(|(l, feeders)| Trunk {
                    name: format!("the spine links of {}", topo.node_name(hosts + rail.nodes + l)),
                    capacity: min_capacity(&mut (0..2 * spines).map(|k| up + 2 * l * spines + k)),
                    feeders,
                })
                .collect();
            if rail.extra > 0 {
                let extra_base = up + 2 * rail.leaves() * spines;
                let service_base = extra_base + 2 * rail.extra;
                out.push(Trunk {
                    name: "the spine links of the service leaf".into(),
                    capacity: min_capacity(&mut (0..2 * spines).map(|k| service_base + k)),
                    feeders: (gpus..hosts)
                        .filter_map(|h| {
                            let j = owner[h]?;
                            let x = extra_base + 2 * (h - gpus);
                            (gpus_of[j] > 0).then(|| (h, links[x].bytes_per_ns.max(links[x + 1].bytes_per_ns)))
                        })
                        .collect(),
                });
            }
            out
        }
        Shape::Nodes { gpus_per_node, nodes, gpus, nodes_per_leaf } => {
            let (g, machines, gpus, per_leaf) = (*gpus_per_node, *nodes, *gpus, *nodes_per_leaf);
            let leaves = super::leaf_switches(machines, per_leaf);
            let on_machine = per_group(&|h| (h < gpus).then(|| h / g), machines);
            let on_leaf = per_group(&|h| (h < gpus).then(|| h / g / per_leaf), leaves.max(1));
            let link = |a: NodeId, b: NodeId| topo.machine_link(a, b);
            let top = topo.nodes() - 1;
            let up = |m: usize| topo.machine_switch(m);
            let pcie = |h: NodeId, nic: NodeId| {
                [link(h, nic), link(nic, h)].into_iter().flatten().map(|l| links[l].bytes_per_ns).fold(0.0, f64::max)
            };
            // A machine's GPUs whose job has a host off the machine, at their PCIe rate.
            let leaving = |m: usize| -> Vec<(NodeId, f64)> {
                (m * g..((m + 1) * g).min(gpus))
                    .filter_map(|h| {
                        let j = owner[h]?;
                        (jobs[j].len() > on_machine[j][m]).then(|| (h, pcie(h, hosts + m)))
                    })
                    .collect()
            };
            let mut out: Vec<Trunk> = (0..machines)
                .map(|m| {
                    let nic = hosts + m;
                    Trunk {
                        name: format!("the uplink of {}", topo.node_name(nic)),
                        capacity: min_capacity(&mut [link(nic, up(m)), link(up(m), nic)].into_iter().flatten()),
                        feeders: leaving(m),
                    }
                })
                .collect();
            out.extend((0..leaves).map(|leaf| {
                // Fed by its machines' GPUs whose job has a host off the leaf, each machine's
                // share scaled to at most its NIC's rate (the NIC link bounds them together).
                let mut feeders = Vec::new();
                for m in (leaf * per_leaf..((leaf + 1) * per_leaf).min(machines)).filter(|&m| m * g < gpus) {
                    let nic = hosts + m;
                    let away: Vec<(NodeId, f64)> = leaving(m)
                        .into_iter()
                        .filter(|&(h, _)| owner[h].is_some_and(|j| jobs[j].len() > on_leaf[j][leaf]))
                        .collect();
                    let total: f64 = away.iter().map(|&(_, r)| r).sum();
                    let nic_rate = link(nic, up(m)).map_or(0.0, |l| links[l].bytes_per_ns);
                    let scale = if total > nic_rate { nic_rate / total } else { 1.0 };
                    feeders.extend(away.into_iter().map(|(h, r)| (h, r * scale)));
                }
                let sw = hosts + machines + leaf;
                Trunk {
                    name: format!("the uplinks of {}", topo.node_name(sw)),
                    capacity: min_capacity(&mut [link(sw, top), link(top, sw)].into_iter().flatten()),
                    feeders,
                }
            }));
            out
        }
    }
}

/// Whether `hosts` are GPUs of one rail group of `rail`, on the same rails of each of their
/// nodes: then NCCL's rail-aligned channels between them cross rail leaves only.
fn within_rails(rail: &super::rail::Rail, hosts: &[usize]) -> bool {
    let g = rail.gpus_per_node;
    let Some(&first) = hosts.first() else { return true };
    if hosts.iter().any(|&h| h >= rail.gpus || rail.coords(h).2 != rail.coords(first).2) {
        return false;
    }
    // A node holds one GPU per rail: the same count on every node, each on a rail of the
    // first node's, is the same rails on every node.
    let node = first / g;
    let rails: Vec<usize> = hosts.iter().filter(|&&h| h / g == node).map(|&h| h % g).collect();
    let mut per_node = std::collections::BTreeMap::new();
    for &h in hosts {
        *per_node.entry(h / g).or_insert(0usize) += 1;
    }
    hosts.iter().all(|&h| rails.contains(&(h % g))) && per_node.values().all(|&c| c == rails.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::TopologySpec;

    /// `topology` with `hosts` hosts at 400 Gbps (50 bytes/ns) per host link.
    fn fabric(topology: &str, hosts: usize) -> Topology {
        TopologySpec::parse(topology).unwrap().build(hosts, 0, 50e9, 0).unwrap()
    }

    fn range(a: usize, b: usize) -> Vec<usize> {
        (a..b).collect()
    }

    /// `n` jobs whose hosts may all talk to each other (flow-level).
    fn any(n: usize) -> Vec<Traffic> {
        vec![Traffic::AnyPair; n]
    }

    #[test]
    fn a_star_never_contends() {
        let t = fabric("star", 8);
        let jobs = [range(0, 3), range(3, 8)];
        assert_eq!(contention(&t, &jobs, &any(jobs.len()), 0), None);
        assert_eq!(contention(&t, &jobs, &any(jobs.len()), 1), None);
    }

    #[test]
    fn a_ring_contends_between_any_two_jobs() {
        let t = fabric("ring", 8);
        let c = contention(&t, &[range(0, 4), range(4, 8)], &any(2), 0).unwrap();
        assert_eq!(c.other, 1);
        assert!(c.links.contains("ring"), "{}", c.links);
        // One job alone on it: nothing to meet.
        assert_eq!(contention(&t, &[range(0, 8)], &any(1), 0), None);
    }

    #[test]
    fn leaf_spine_contends_on_a_shared_leaf_unless_its_spine_links_carry_all_its_hosts() {
        // Leaves of 4 hosts, 2 spines at 2 x host rate each: a leaf shared by two jobs
        // that leave it could send 4 x host rate over one spine link (ECMP).
        let t = fabric("leaf-spine:hosts_per_leaf=4,spines=2", 16);
        let c = contention(&t, &[vec![0, 1, 4, 5], vec![2, 3, 6, 7]], &any(2), 0).unwrap();
        assert_eq!((c.other, c.feeders), (1, 4));
        assert_eq!(c.links, "the spine links of leaf0");
        assert_eq!((c.capacity_bytes_per_s, c.feeders_bytes_per_s), (100e9, 200e9));
        // Jobs on leaves of their own share no link.
        assert_eq!(contention(&t, &[range(0, 8), range(8, 16)], &any(2), 0), None);
        // Jobs sharing a leaf but each within it send nothing up.
        assert_eq!(contention(&t, &[range(0, 2), range(2, 4)], &any(2), 0), None);
        // Spine links at the leaf's full host rate never limit.
        let t = fabric("leaf-spine:hosts_per_leaf=4,spines=2,uplink=1600Gbps", 16);
        assert_eq!(contention(&t, &[vec![0, 1, 4, 5], vec![2, 3, 6, 7]], &any(2), 0), None);
    }

    #[test]
    fn rail_jobs_meet_only_in_a_shared_rail_group_below_the_leaves_nic_rate() {
        // 4 DGX H100 (8 GPUs each), one rail group, 4 spines at one NIC each (default):
        // two 2-node jobs share every leaf.
        let t = fabric("rail:node=dgx-h100", 32);
        let jobs = [range(0, 16), range(16, 32)];
        let c = contention(&t, &jobs, &any(jobs.len()), 1).unwrap();
        assert_eq!((c.other, c.feeders), (0, 4));
        assert_eq!(c.links, "the spine links of leaf0.0");
        assert_eq!((c.capacity_bytes_per_s, c.feeders_bytes_per_s), (50e9, 200e9));
        // In rail groups of their own (2 nodes each) they share no leaf.
        assert_eq!(contention(&fabric("rail:node=dgx-h100,nodes_per_group=2", 32), &jobs, &any(jobs.len()), 0), None);
        // One spine: each leaf's spine link carries all of its NICs ...
        assert_eq!(contention(&fabric("rail:node=dgx-h100,spines=1", 32), &jobs, &any(jobs.len()), 0), None);
        // ... unless oversubscribed.
        let c = contention(&fabric("rail:node=dgx-h100,spines=1,oversubscription=2", 32), &jobs, &any(jobs.len()), 0)
            .unwrap();
        assert_eq!((c.capacity_bytes_per_s, c.feeders_bytes_per_s), (100e9, 200e9));
        // Single-node jobs talk over NVLink only, whatever the leaves: beside them even a
        // 2-node job has the spine links to itself.
        let jobs = [range(0, 8), range(8, 16), range(16, 32)];
        assert!((0..3).all(|j| contention(&t, &jobs, &any(jobs.len()), j).is_none()));
    }

    #[test]
    fn rail_aligned_jobs_within_one_rail_group_feed_no_spine_link() {
        use Traffic::{AnyPair, RailAligned};
        // 4 DGX H100 in one rail group, 4 spines at one NIC each: two 2-node jobs share
        // every leaf. Flow-level, they contend (above); NCCL's, each keeps to its rails.
        let t = fabric("rail:node=dgx-h100", 32);
        let jobs = [range(0, 16), range(16, 32)];
        for traffic in [[RailAligned, RailAligned], [RailAligned, AnyPair], [AnyPair, RailAligned]] {
            let c = |j| contention(&t, &jobs, &traffic, j);
            // A rail-aligned job feeds none, so nothing of it meets the other job.
            for j in 0..2 {
                if traffic[j] == RailAligned {
                    assert_eq!(c(j), None, "{traffic:?} job {j}");
                }
            }
        }
        // Half nodes on the same rails: still rail-aligned ...
        let halves = [vec![0, 1, 2, 3, 8, 9, 10, 11], range(16, 32)];
        assert_eq!(contention(&t, &halves, &[RailAligned, AnyPair], 0), None);
        // ... but not on other rails of the second node (NCCL would cross NICs there).
        let skew = [vec![0, 1, 2, 3, 12, 13, 14, 15], range(16, 32)];
        assert_eq!(contention(&t, &skew, &[RailAligned, AnyPair], 0).map(|c| c.other), Some(1));
        // A rail-aligned job spanning two rail groups (2 nodes each) crosses the spines,
        // where a flow-level job of the other group's node and another group meets it.
        let t = fabric("rail:node=dgx-h100,nodes_per_group=2", 48);
        let jobs = [range(8, 24), [range(0, 8), range(32, 40)].concat()];
        let c = contention(&t, &jobs, &[RailAligned, AnyPair], 0).unwrap();
        assert_eq!((c.links.as_str(), c.other), ("the spine links of leaf0.0", 1));
        // Flow-level jobs in one group contend as before, whatever a third job does.
        let t = fabric("rail:node=dgx-h100", 48);
        let jobs = [range(0, 16), range(16, 32), range(32, 48)];
        let c = contention(&t, &jobs, &[AnyPair, AnyPair, RailAligned], 0).unwrap();
        assert_eq!(c.other, 1);
        assert_eq!(contention(&t, &jobs, &[AnyPair, AnyPair, RailAligned], 2), None);
    }

    #[test]
    fn nodes_contend_when_a_machine_holds_two_jobs_that_leave_it() {
        // p3.16xlarge: 8 GPUs per machine.
        let t = fabric("nodes", 32);
        assert_eq!(contention(&t, &[range(0, 16), range(16, 32)], &any(2), 0), None);
        let c = contention(&t, &[range(0, 12), range(12, 32)], &any(2), 0).unwrap();
        assert_eq!(c.links, "the uplink of nic1");
        assert_eq!(c.other, 1);
        // Two jobs within one machine each: their traffic stays inside.
        assert_eq!(contention(&t, &[range(0, 4), range(4, 8)], &any(2), 0), None);
    }

    #[test]
    fn machines_behind_an_oversubscribed_leaf_contend_on_its_uplinks() {
        // 8 p3.16xlarge machines (64 GPUs), 2 per leaf, NICs at 50 bytes/ns.
        let t = |over: f64| fabric(&format!("nodes:nodes_per_leaf=2,oversubscription={over}"), 64);
        // Two jobs of one leaf each never leave it.
        assert_eq!(contention(&t(2.0), &[range(0, 16), range(16, 32)], &any(2), 0), None);
        // Two jobs of two leaves each share leaf 1: its 2 NICs (100 bytes/ns) on 50 at 2:1.
        let jobs = [range(0, 24), range(24, 64)];
        let c = contention(&t(2.0), &jobs, &any(2), 0).unwrap();
        assert_eq!((c.links.as_str(), c.other), ("the uplinks of leaf1", 1));
        assert_eq!((c.capacity_bytes_per_s, c.feeders_bytes_per_s), (50e9, 100e9));
        // Non-blocking, the trunk carries both NICs: no contention.
        assert_eq!(contention(&t(1.0), &jobs, &any(2), 0), None);
    }
}
