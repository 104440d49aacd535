//! Lanes: collectives in which every message has links of its own.
//!
//! When every simulated rank sends all its messages to one peer, over links that no other
//! rank's messages cross, and one collective runs at a time (an all-reduce strategy with
//! one collective in flight, which the coordinator releases only once every rank has
//! finished the one before), no message ever shares a link with another: a rank's own
//! messages follow each other (its step `s + 1` waits for its step-`s` message to be
//! delivered), and nobody else's cross its links. Every message is then a flow alone,
//! timed by the network model's own arithmetic ([`TimesAlone::time_alone`]), and a
//! collective is the step rule's recurrence, evaluated for all ranks and steps at once
//! when its last rank starts it:
//!
//! ```text
//! sent(r, s)      = max(begin(r, s), start(peer(r)))           (the receiver's rendezvous)
//! delivered(r, s) = sent(r, s) + transfer alone + latency (+ reduce, overhead)
//! begin(r, s + 1) = max(begin(r, s), delivered(r, s), delivered of what r receives at s)
//! ```
//!
//! Each rank's completion `begin(r, steps)` comes back as a timer at that time. This is
//! what the general engine does message by message, without an event, a routing or a
//! max-min update per message: a ring with ranks that differ (a leaf-spine fabric, where
//! one hop per leaf crosses the spine; a slow host link; stragglers) costs a few tens of
//! nanoseconds per message. Counted as the flows would be: flows, rank 0's bytes and busy
//! time, link bytes. The one difference with the flows is the rounding of a served-bytes
//! sum: the flow model adds a flow's bytes over every instant at which anything in the
//! network happened, this over its whole transfer at once, so a finish time that falls
//! within the model's 1e-6-byte completion tolerance of a whole nanosecond may differ by
//! that nanosecond (tested equal on random scenarios: `tests::lanes`).
//!
//! [`TimesAlone::time_alone`]: crate::network::TimesAlone::time_alone

use std::collections::HashMap;

use super::fold::RankFold;
use super::state::SimState;
use crate::collectives::StepSchedule;
use crate::network::AlonePath;
use crate::topology::LinkId;
use crate::units::Nanos;

/// A simulated rank's messages: from its host to its peer's, over these links.
#[derive(Debug, Clone)]
pub(crate) struct Lane {
    /// Host of the rank, and its peer's.
    pub src: usize,
    pub dst: usize,
    /// The simulated index that receives its messages (the peer's representative).
    pub to: usize,
    /// The network model's memo of the path ([`TimesAlone::time_alone`]).
    ///
    /// [`TimesAlone::time_alone`]: crate::network::TimesAlone::time_alone
    pub memo: Option<u32>,
    /// Links with folding weights, and path latency (ns), as the core routes the message.
    pub links: Vec<(LinkId, u32)>,
    pub latency: Nanos,
}

/// Every simulated rank's lane (indexed like the simulated ranks).
#[derive(Debug, Clone)]
pub(crate) struct Lanes(pub Vec<Lane>);

impl Lanes {
    /// The lanes of `schedule` on `core`'s fabric when every simulated rank (`simulated` of
    /// them, the representatives of `fold` if given) sends to one fixed peer
    /// ([`StepSchedule::fixed_peer`]) over links of finite, positive capacity that no other
    /// simulated rank's messages cross; `None` otherwise. The caller also guarantees one
    /// collective at a time and nothing else on the network.
    pub fn plan(
        core: &mut SimState,
        schedule: &dyn StepSchedule,
        n: usize,
        fold: Option<&RankFold>,
        simulated: usize,
    ) -> Option<Lanes> {
        let caps: Vec<f64> = core.topo.links().iter().map(|l| l.bytes_per_ns).collect();
        // A link of infinite capacity anywhere lets flows finish the instant they start,
        // which the flow model handles by events only.
        if caps.iter().any(|c| !c.is_finite()) {
            return None;
        }
        let mut owner: Vec<Option<usize>> = vec![None; caps.len()];
        let mut lanes = Vec::with_capacity(simulated);
        for r in 0..simulated {
            let rank = fold.map_or(r, |f| f.rank(r));
            let peer = schedule.fixed_peer(rank, n)?;
            let (src, dst) = (core.host_of_rank[rank], core.host_of_rank[peer]);
            if src == dst {
                return None;
            }
            let (links, latency) = core.path(src, &[dst]);
            if links.is_empty() {
                return None;
            }
            for &(l, _) in &links {
                if caps[l] <= 0.0 || owner[l].is_some_and(|o| o != r) {
                    return None;
                }
                owner[l] = Some(r);
            }
            let to = fold.map_or(peer, |f| f.slot(peer));
            lanes.push(Lane { src, dst, to, memo: None, links, latency });
        }
        Some(Lanes(lanes))
    }
}

/// Lanes whose paths are in one state: the same rate alone, the same bytes served by their
/// flow classes, latency and host overhead. Carrying equal messages (a rank-symmetric
/// schedule), their messages take equal times step after step, so a collective costs one
/// network-model step per group and step and a few comparisons per lane and step (on a
/// ring on a star, one group: each message is a `max` and an add).
#[derive(Debug)]
pub(crate) struct LaneGroups {
    /// Each lane's group.
    pub of_lane: Vec<u32>,
    /// Each lane's flow class (its own; its path's state is its group's).
    pub class_of_lane: Vec<u32>,
    /// Per group: the path state all its lanes share, and one lane of it.
    pub state: Vec<AlonePath>,
    pub first: Vec<usize>,
}

impl Lanes {
    /// The lanes grouped by the state of their paths; `None` if the network model has no
    /// such state ([`TimesAlone::alone_path`]: then each message is timed on its own).
    ///
    /// [`TimesAlone::alone_path`]: crate::network::TimesAlone::alone_path
    pub fn groups(&mut self, core: &mut SimState) -> Option<LaneGroups> {
        let mut index: HashMap<(u64, u64, Nanos, u64), u32> = HashMap::new();
        let mut groups =
            LaneGroups { of_lane: Vec::new(), class_of_lane: Vec::new(), state: Vec::new(), first: Vec::new() };
        for (r, lane) in self.0.iter_mut().enumerate() {
            let path = core.alone_path(&lane.links, &mut lane.memo)?;
            // The host overhead depends on the path's slowest link when segments pipeline.
            let overhead_rate = core.overhead_rate(&lane.links).map_or(u64::MAX, f64::to_bits);
            let key = (path.rate.to_bits(), path.served.to_bits(), lane.latency, overhead_rate);
            let next = groups.state.len() as u32;
            let g = *index.entry(key).or_insert(next);
            if g == next {
                groups.state.push(path);
                groups.first.push(r);
            }
            groups.of_lane.push(g);
            groups.class_of_lane.push(path.class);
        }
        Some(groups)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, prop_oneof, proptest, Just, ProptestConfig, Strategy};

    use crate::engine::tests::{self, close};
    use crate::engine::{simulate, Scenario, Variability};
    use crate::metrics::Report;
    use crate::network::ModelKind;
    use crate::topology::TopologySpec;

    /// `strategy` on `n` workers of `topology`, one tensor per layer (300 ns per hop).
    fn scenario(topology: &str, n: usize, strategy: &str, sizes: &[u64], compute_ns: u64) -> Scenario {
        let mut sc = tests::scenario(tests::workload(sizes, compute_ns), n, strategy, 300);
        sc.topology = TopologySpec::parse(topology).unwrap();
        sc
    }

    /// The run with lanes and without.
    fn both(sc: &mut Scenario) -> (Report, Report) {
        sc.allow_lanes = true;
        let lanes = simulate(sc).unwrap();
        sc.allow_lanes = false;
        let flows = simulate(sc).unwrap();
        (lanes, flows)
    }

    #[test]
    fn a_leaf_spine_ring_is_timed_by_lanes_with_the_flows_results() {
        // One hop per leaf crosses the spine: the ranks of a leaf differ, so the run folds
        // over the leaves only; every message still has its links to itself.
        let mut sc = scenario("leaf-spine:hosts_per_leaf=4,spines=2,uplink=4Gbps", 16, "ring", &[64_000, 4_000], 1_000);
        let (lanes, flows) = both(&mut sc);
        assert_eq!(lanes.completions_s, flows.completions_s);
        assert_eq!(lanes.comm_time_s, flows.comm_time_s);
        assert_eq!(lanes.sent_bytes_per_worker, flows.sent_bytes_per_worker);
        assert_eq!(lanes.flows, flows.flows);
        assert_eq!(lanes.link_utilization, flows.link_utilization);
        // An event per message without lanes; one timer per rank and collective with.
        assert!(flows.events >= flows.flows, "{} events for {} flows", flows.events, flows.flows);
        assert!(lanes.events * 10 < flows.events, "lanes: {} events, flows: {}", lanes.events, flows.events);
    }

    #[test]
    fn a_slow_link_from_the_start_keeps_lanes_and_the_flows_results() {
        // Host 5's uplink at a third of its rate from time 0: every rank's timeline differs
        // (each waits on the slow hop at another step), nothing folds, every message still
        // has its links to itself.
        let mut sc = scenario("star", 12, "ring", &[96_000, 12_000, 30_000], 2_000);
        sc.failures = vec![crate::engine::Failure { at_s: 0.0, target: "h5->sw".into(), rate: 1.0 / 3.0 }];
        let (lanes, flows) = both(&mut sc);
        assert_eq!(lanes.completions_s, flows.completions_s);
        for ((l, a), (_, b)) in lanes.link_utilization.iter().zip(&flows.link_utilization) {
            // The slow link's bytes are summed in another order (a few ulps).
            assert!(close(*a, *b), "{l}: {a} vs {b}");
        }
        assert_eq!(lanes.failures_applied, 1);
        assert!(lanes.events < flows.events, "{} vs {} events", lanes.events, flows.events);
        // The slow hop costs what the closed form says: every one of the 2(N-1) steps waits
        // for it, at S/N over a third of the rate instead of the full rate.
        sc.failures.clear();
        let (fast, _) = both(&mut sc);
        let steps = 2.0 * 11.0;
        let extra: f64 = [96_000.0, 12_000.0, 30_000.0].iter().map(|s| steps * 2.0 * s / 12.0 * 1e-9).sum();
        assert!(
            ((lanes.completions_s[0] - fast.completions_s[0]) - extra).abs() < 1e-7,
            "{} - {} vs {extra}",
            lanes.completions_s[0],
            fast.completions_s[0]
        );
        // A failure later in the run changes rates midway: message by message.
        sc.failures = vec![crate::engine::Failure { at_s: 1e-6, target: "h5->sw".into(), rate: 0.5 }];
        let (lanes, flows) = both(&mut sc);
        assert_eq!(lanes.events, flows.events);
    }

    #[test]
    fn lanes_on_paths_in_one_state_are_one_group() {
        // A ring on a star: every lane alike, one group. Host 3 at half its rate: the lanes
        // over its uplink (rank 3's) and its downlink (rank 2's) are a second group.
        for (failures, expected) in [
            (vec![], vec![0u32; 8]),
            (vec![crate::engine::Failure { at_s: 0.0, target: "h3".into(), rate: 0.5 }], vec![0, 0, 1, 1, 0, 0, 0, 0]),
        ] {
            let mut sc = scenario("star", 8, "ring", &[8_000], 0);
            sc.failures = failures;
            let topo = sc.topology.build(8, 0, sc.bandwidth, 300).unwrap();
            let mut core = crate::engine::build_core(&sc, topo, false).unwrap();
            while core.failures.next_time() == Some(0) {
                core.apply_next_failure();
            }
            let mut lanes = super::Lanes::plan(&mut core, &crate::collectives::Ring, 8, None, 8).unwrap();
            let groups = lanes.groups(&mut core).unwrap();
            assert_eq!(groups.of_lane, expected);
            assert_eq!(groups.state.len(), groups.first.len());
        }
    }

    #[test]
    fn messages_that_share_a_link_are_flows() {
        // Ring 0 -> 1 -> 2 -> 3 on hosts 0, 2, 1, 3 (two leaves of two, one spine): ranks 0
        // and 2 both cross leaf 0's uplink, so nothing is timed by lanes.
        let mut sc = scenario("leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps", 4, "ring", &[40_000], 0);
        sc.rank_to_host = Some(vec![0, 2, 1, 3]);
        let (lanes, flows) = both(&mut sc);
        assert_eq!(lanes.events, flows.events);
        assert_eq!(lanes.completions_s, flows.completions_s);
        // A schedule whose ranks change peers has no lanes either.
        let mut sc = scenario("leaf-spine:hosts_per_leaf=2,spines=2,uplink=8Gbps", 4, "halving-doubling", &[40_000], 0);
        let (lanes, flows) = both(&mut sc);
        assert_eq!(lanes.events, flows.events);
        // Nor does a strategy with several collectives in flight.
        let mut sc =
            scenario("leaf-spine:hosts_per_leaf=2,spines=2,uplink=8Gbps", 4, "ring:inflight=2", &[40_000, 40_000], 0);
        let (lanes, flows) = both(&mut sc);
        assert_eq!(lanes.events, flows.events);
    }

    /// Fabrics on which a ring may have lanes (the star unfolded), with their workers.
    fn arb_fabric() -> impl Strategy<Value = (String, usize)> {
        prop_oneof![
            (2usize..10).prop_map(|n| ("star".to_string(), n)),
            (3usize..8).prop_map(|n| ("ring".to_string(), n)),
            (1usize..6, 2usize..5, 1usize..3, 1u32..5).prop_map(|(per_leaf, leaves, spines, oversub)| {
                let uplink = 8.0 * per_leaf as f64 / spines as f64 / f64::from(oversub);
                (format!("leaf-spine:hosts_per_leaf={per_leaf},spines={spines},uplink={uplink}Gbps"), per_leaf * leaves)
            }),
            (1usize..3).prop_map(|nodes| ("nodes:machine=pcie-8".to_string(), 8 * nodes)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 192, .. ProptestConfig::default() })]

        /// Lanes change nothing but the work: random ring scenarios (fabric, placement,
        /// sizes, compute, stragglers, a slow host, scheduling and cost options, network
        /// model) give
        /// the same completions, communication time, bytes, flows and link utilisation
        /// with lanes as message by message.
        #[test]
        fn lanes_give_the_flows_results(
            (topology, n) in arb_fabric(),
            strategy in prop::sample::select(vec![
                "ring", "ring:schedule=priority", "ring:compression=3", "ring:reduce=5Gbps",
                "ring:dispatch=2us", "ring:fusion=90000B", "ring:partition=50000B", "ring:segments=pipelined",
            ]),
            sizes in prop::collection::vec(1u64..300_000, 1..5),
            compute_ns in 0u64..40_000,
            straggler in prop::option::of((0usize..64, 1.1f64..3.0)),
            slow_host in prop::option::of((0usize..64, 0.2f64..0.95)),
            overhead_ns in prop_oneof![Just(0u64), 1u64..3_000],
            copy in prop::option::of(0.3e9f64..3e9),
            analytical in prop::bool::ANY,
            fold in prop::bool::ANY,
            shuffle in prop::option::of(any_seed()),
        ) {
            let mut sc = scenario(&topology, n, strategy, &sizes, compute_ns);
            sc.iterations = 3;
            sc.per_message_overhead = overhead_ns as f64 * 1e-9;
            sc.copy_bandwidth = copy;
            sc.allow_folding = fold;
            if analytical {
                sc.network = ModelKind::Analytical;
            }
            if let Some((who, slow)) = straggler {
                let mut s = vec![1.0; n];
                s[who % n] = slow;
                sc.variability = Variability::Slowdowns(s);
            }
            if let Some((who, rate)) = slow_host {
                // A host at a fraction of its links' rate from the start: its lanes differ.
                sc.failures = vec![crate::engine::Failure { at_s: 0.0, target: format!("h{}", who % n), rate }];
            }
            if let Some(seed) = shuffle {
                // A seeded permutation of the hosts (some share links, some do not).
                let mut hosts: Vec<usize> = (0..n).collect();
                let mut x = seed | 1;
                for i in (1..n).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    hosts.swap(i, (x % (i as u64 + 1)) as usize);
                }
                sc.rank_to_host = Some(hosts);
            }
            let what = format!("{strategy} on {topology}, n={n}, sizes={sizes:?}, straggler={straggler:?}, slow={slow_host:?}, hosts={:?}", sc.rank_to_host);
            let (lanes, flows) = both(&mut sc);
            prop_assert_eq!(lanes.completions_s.len(), flows.completions_s.len());
            for (a, b) in lanes.completions_s.iter().zip(&flows.completions_s) {
                prop_assert!(close(*a, *b), "{}: lanes {} vs flows {}", what, a, b);
            }
            prop_assert!(close(lanes.comm_time_s, flows.comm_time_s), "{}: comm {} vs {}", what, lanes.comm_time_s, flows.comm_time_s);
            prop_assert!(close(lanes.sent_bytes_per_worker, flows.sent_bytes_per_worker), "{}", what);
            prop_assert_eq!(lanes.flows, flows.flows, "{}", what);
            for ((l, a), (_, b)) in lanes.link_utilization.iter().zip(&flows.link_utilization) {
                prop_assert!(close(*a, *b) || (a - b).abs() < 1e-12, "{}: {} {} vs {}", what, l, a, b);
            }
        }
    }

    fn any_seed() -> impl Strategy<Value = u64> {
        1u64..u64::MAX
    }
}
