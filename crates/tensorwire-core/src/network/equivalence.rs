//! [`MaxMinFair`] against the original model ([`ReferenceMaxMin`]) on random networks:
//! random link capacities, flows with random link sets and weights, start times (some at
//! one instant, some started by another flow's delivery, as the engine does), sizes,
//! latencies and rate caps. Both are driven the way the engine drives a model.
//!
//! They agree on every event time and on link bytes (1e-9 relative), with one documented
//! exception: the original fills the whole network at once, and a link whose fair share is
//! within its 1e-9 tolerance of the current level is frozen at that level even when it
//! belongs to another connected component; the new model fills one component at a time,
//! so that link's classes get their own share instead (at most 1e-9 relative apart). A
//! finish time `now + ceil(left / rate)` can then round to the next nanosecond, and a flow
//! started by that delivery moves with it: event times may differ by 1 ns per such
//! crossing, which `MAX_SHIFT_NS` bounds, and link bytes by what the link carries in that
//! nanosecond (a link is served until the event's whole nanosecond).

use proptest::prelude::{prop, prop_assert, prop_oneof, proptest, Just, ProptestConfig, Strategy};

use super::*;

/// A flow of a test case; `after`: started when that earlier flow is delivered.
#[derive(Debug, Clone)]
struct Flow {
    start: Nanos,
    after: Option<usize>,
    path: usize,
    bytes: f64,
    latency: Nanos,
    cap: f64,
    notify: bool,
}

#[derive(Debug, Clone)]
struct Case {
    caps: Vec<f64>,
    paths: Vec<Vec<(LinkId, u32)>>,
    flows: Vec<Flow>,
}

/// Events by (tag, delivered?) with their times, and the link bytes at the end.
type Outcome = (Vec<((u64, bool), Nanos)>, Vec<f64>);

/// Drives a model like the engine: the network's events first at equal times, flows
/// started one at a time with the next start time as the limit in between.
fn drive(model: &mut dyn NetworkModel, case: &Case) -> Outcome {
    let mut timed: Vec<usize> = (0..case.flows.len()).filter(|&i| case.flows[i].after.is_none()).collect();
    timed.sort_by_key(|&i| case.flows[i].start);
    let mut ready: std::collections::VecDeque<(Nanos, usize)> =
        timed.iter().map(|&i| (case.flows[i].start, i)).collect();
    let mut triggered: Vec<(Nanos, usize)> = Vec::new();
    let mut events = Vec::new();
    let mut out = Vec::new();
    let mut end = 0;
    loop {
        // Flows triggered by a delivery start at that instant, before later timed ones.
        let next_start = triggered.first().map(|t| t.0).into_iter().chain(ready.front().map(|r| r.0)).min();
        match model.next_time_by(next_start) {
            Some(t) if next_start.is_none_or(|s| t <= s) => {
                out.clear();
                model.advance(t, &mut out);
                end = end.max(t);
                for e in &out {
                    let key = match *e {
                        FlowEvent::Sent(tag) => (tag, false),
                        FlowEvent::Delivered(tag) => (tag, true),
                    };
                    events.push((key, t));
                    if key.1 {
                        for (j, f) in case.flows.iter().enumerate() {
                            if f.after == Some(key.0 as usize) {
                                triggered.push((t, j));
                            }
                        }
                    }
                }
            }
            Some(_) => unreachable!("next_time_by returned a time after its limit"),
            None => {
                let Some(s) = next_start else { break };
                let i = if triggered.first().is_some_and(|t| t.0 == s) {
                    triggered.remove(0).1
                } else {
                    ready.pop_front().unwrap().1
                };
                let f = &case.flows[i];
                let spec = FlowSpec {
                    links: &case.paths[f.path],
                    bytes: f.bytes,
                    latency: f.latency,
                    rate_cap: f.cap,
                    tag: i as u64,
                    notify_sent: f.notify,
                };
                model.start(s, spec);
                end = end.max(s);
            }
        }
    }
    events.sort();
    (events, model.link_bytes(end).to_vec())
}

/// Largest event-time difference allowed (see the module documentation), ns. No case of
/// 50,000 random ones differed at all; the bound is what the tolerance can cause.
const MAX_SHIFT_NS: Nanos = 1;

fn arb_case() -> impl Strategy<Value = Case> {
    let caps = prop::collection::vec(prop_oneof![Just(1.0), Just(2.0), Just(0.5), Just(3.0), 0.05f64..10.0], 1..7);
    caps.prop_flat_map(|caps| {
        let n = caps.len();
        let path = prop::sample::subsequence((0..n).collect::<Vec<_>>(), 0..=n.min(3)).prop_flat_map(|links| {
            let k = links.len();
            (Just(links), prop::collection::vec(prop_oneof![Just(1u32), Just(1), 1u32..4], k))
                .prop_map(|(links, w)| links.into_iter().zip(w).collect::<Vec<(LinkId, u32)>>())
        });
        let paths = prop::collection::vec(path, 1..6);
        (Just(caps), paths).prop_flat_map(|(caps, paths)| {
            let p = paths.len();
            let flow = (
                prop_oneof![Just(0u64), Just(100), 0u64..3000],
                prop::option::weighted(0.3, 0usize..16),
                0..p,
                prop_oneof![Just(0.0), Just(1000.0), Just(333.3), 1.0f64..5000.0],
                prop_oneof![Just(0u64), 0u64..100],
                prop_oneof![Just(f64::INFINITY), Just(f64::INFINITY), Just(0.7), 0.2f64..5.0],
                prop::bool::ANY,
            );
            let flows = prop::collection::vec(flow, 1..16).prop_map(|v| {
                v.into_iter()
                    .enumerate()
                    .map(|(i, (start, after, path, bytes, latency, cap, notify))| Flow {
                        start,
                        // Only an earlier flow can start this one (no cycles).
                        after: after.filter(|&a| a < i),
                        path,
                        bytes,
                        latency,
                        cap,
                        notify,
                    })
                    .collect()
            });
            (Just(caps), Just(paths), flows).prop_map(|(caps, paths, flows)| Case { caps, paths, flows })
        })
    })
}

fn compare(case: &Case) -> Result<Nanos, String> {
    let (ref_events, ref_bytes) = drive(&mut ReferenceMaxMin::new(case.caps.clone()), case);
    let (new_events, new_bytes) = drive(&mut MaxMinFair::new(case.caps.clone()), case);
    if ref_events.len() != new_events.len() {
        return Err(format!("{} events vs {}", new_events.len(), ref_events.len()));
    }
    let mut shift = 0;
    for (a, b) in new_events.iter().zip(&ref_events) {
        if a.0 != b.0 {
            return Err(format!("event {:?} vs {:?}", a.0, b.0));
        }
        shift = shift.max(a.1.abs_diff(b.1));
    }
    // Link bytes are served rate x time, up to each whole nanosecond: an event `shift` ns
    // later carries up to `shift` ns of the link's capacity more.
    for (l, (a, b)) in new_bytes.iter().zip(&ref_bytes).enumerate() {
        if (a - b).abs() > 1e-9 * a.abs().max(b.abs()) + shift as f64 * case.caps[l] {
            return Err(format!("link {l}: {a} bytes vs {b}"));
        }
    }
    Ok(shift)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn incremental_model_matches_the_reference(case in arb_case()) {
        let shift = compare(&case);
        prop_assert!(matches!(shift, Ok(s) if s <= MAX_SHIFT_NS), "{shift:?}");
    }
}

#[test]
fn separate_components_keep_their_rates_and_agree_exactly() {
    // Two disjoint dumbbells and a flow that starts later on one of them: the other's
    // rates stay, and both models agree to the nanosecond.
    let case = Case {
        caps: vec![10.0, 4.0, 10.0, 4.0],
        paths: vec![vec![(0, 1)], vec![(0, 1), (1, 1)], vec![(1, 1)], vec![(2, 1)], vec![(2, 1), (3, 1)], vec![(3, 1)]],
        flows: (0..6)
            .map(|p| Flow {
                start: 0,
                after: None,
                path: p,
                bytes: 800.0 + 100.0 * p as f64,
                latency: 5,
                cap: f64::INFINITY,
                notify: p % 2 == 0,
            })
            .chain(std::iter::once(Flow {
                start: 40,
                after: None,
                path: 4,
                bytes: 50.0,
                latency: 0,
                cap: f64::INFINITY,
                notify: false,
            }))
            .collect(),
    };
    assert_eq!(compare(&case), Ok(0));
}

#[test]
fn flows_started_together_share_one_heap_entry_and_finish_together() {
    // 50 equal flows on one link at one instant, then 50 more: two entries, not 100.
    let mut m = MaxMinFair::new(vec![10.0]);
    for i in 0..100u64 {
        let start = if i < 50 { 0 } else { 20 };
        m.start(
            start,
            FlowSpec {
                links: &[(0, 1)],
                bytes: 100.0,
                latency: 3,
                rate_cap: f64::INFINITY,
                tag: i,
                notify_sent: false,
            },
        );
        if i == 49 {
            assert_eq!(m.next_time(), Some(500));
            let mut out = Vec::new();
            m.advance(20, &mut out);
            assert!(out.is_empty());
        }
    }
    assert_eq!(m.heap_entries(), 2);
    let mut events = Vec::new();
    while let Some(t) = m.next_time() {
        let mut out = Vec::new();
        m.advance(t, &mut out);
        events.extend(out.into_iter().map(|e| (t, e)));
    }
    // Each flow of the first batch: 20 ns at 0.2 B/ns (4 B), then 96 B at 0.1 B/ns.
    let first: Vec<_> = events.iter().filter(|e| matches!(e.1, FlowEvent::Delivered(t) if t < 50)).collect();
    assert_eq!(first.len(), 50);
    assert!(first.iter().all(|e| e.0 == 20 + 960 + 3), "{first:?}");
    // In start order.
    let tags: Vec<u64> = first.iter().map(|e| if let FlowEvent::Delivered(t) = e.1 { t } else { 0 }).collect();
    assert_eq!(tags, (0..50).collect::<Vec<_>>());
    let same = compare(&Case {
        caps: vec![10.0],
        paths: vec![vec![(0, 1)]],
        flows: (0..100)
            .map(|i| Flow {
                start: if i < 50 { 0 } else { 20 },
                after: None,
                path: 0,
                bytes: 100.0,
                latency: 3,
                cap: f64::INFINITY,
                notify: false,
            })
            .collect(),
    });
    assert_eq!(same, Ok(0));
}

#[test]
fn components_within_the_share_tolerance_are_filled_separately() {
    // Two disjoint links whose fair shares are 5e-10 apart. The original freezes both at
    // the lower share (one filling for the whole network, 1e-9 tolerance); the new model
    // gives the second link's flow its own share: 10000.000002 B at 1 + 5e-10 B/ns take
    // 9999.999997 ns (10,000 after rounding up) instead of 10,001 ns.
    let case = Case {
        caps: vec![1.0, 1.0 + 5e-10],
        paths: vec![vec![(0, 1)], vec![(1, 1)]],
        flows: (0..2)
            .map(|p| Flow {
                start: 0,
                after: None,
                path: p,
                bytes: 10_000.000002,
                latency: 0,
                cap: f64::INFINITY,
                notify: false,
            })
            .collect(),
    };
    let (reference, _) = drive(&mut ReferenceMaxMin::new(case.caps.clone()), &case);
    let (new, _) = drive(&mut MaxMinFair::new(case.caps.clone()), &case);
    assert_eq!(reference, vec![((0, true), 10_001), ((1, true), 10_001)]);
    assert_eq!(new, vec![((0, true), 10_001), ((1, true), 10_000)]);
    assert_eq!(compare(&case), Ok(1));
}

/// Whole simulations of asymmetric (unfolded) scenarios with the new model and with the
/// reference: completions and link utilisation within 1e-9 relative.
#[test]
fn engine_results_match_the_reference_model() {
    use crate::engine::{simulate, Scenario, Variability};
    use crate::workload::Workload;
    let w = Workload::one_tensor_per_layer(&[4096, 100_000, 7, 65_536, 1_000_000, 300_000], 20_000, 40_000);
    let cases: &[(&str, &str, usize)] = &[
        ("ring", "star", 6),
        ("ring:partition=50000B", "star", 5),
        ("ps", "star", 7),
        ("ps:num_ps=3", "star", 9),
        ("ps:num_ps=2,distribution=block", "star", 6),
        ("ps:num_ps=4,placement=sharded", "star", 8),
        ("ps+multicast", "star", 5),
        ("tree", "star", 7),
        ("halving-doubling", "star", 8),
        ("ring", "leaf-spine:hosts_per_leaf=4,spines=2,uplink=1Gbps", 12),
        ("ps:num_ps=2", "leaf-spine:hosts_per_leaf=4,spines=2,uplink=2Gbps", 10),
        ("hierarchical", "leaf-spine:hosts_per_leaf=4,spines=1", 8),
    ];
    for &(strategy, topology, n) in cases {
        for straggler in [false, true] {
            let mut sc = Scenario::new(w.clone(), n, 1e9, crate::strategy::Strategy::parse(strategy).unwrap());
            sc.topology = crate::topology::TopologySpec::parse(topology).unwrap();
            sc.allow_folding = false;
            // Message by message (the events are compared): lanes are tested on their own.
            sc.allow_lanes = false;
            sc.copy_bandwidth = (n % 3 == 0).then_some(0.7e9);
            if straggler {
                sc.variability = Variability::Slowdowns((0..n).map(|r| 1.0 + 0.37 * (r % 3) as f64).collect());
            }
            let new = simulate(&sc).unwrap();
            sc.network = ModelKind::FlowReference;
            let reference = simulate(&sc).unwrap();
            let what = format!("{strategy} on {topology}, n={n}, straggler={straggler}");
            assert_eq!(new.completions_s.len(), reference.completions_s.len(), "{what}");
            for (a, b) in new.completions_s.iter().zip(&reference.completions_s) {
                assert!((a - b).abs() <= 1e-9 * b.abs(), "{what}: {a} vs {b}");
            }
            for ((l, a), (_, b)) in new.link_utilization.iter().zip(&reference.link_utilization) {
                assert!((a - b).abs() <= 1e-9 * b.abs().max(1e-300), "{what}: {l} {a} vs {b}");
            }
            assert_eq!(new.events, reference.events, "{what}");
        }
    }
}

/// Three-way equivalence: random small scenarios (topology, sizes, compute, stragglers,
/// strategy) simulated three ways give the same times: the incremental model unfolded,
/// the original model ([`ReferenceMaxMin`]) unfolded, and the incremental model with
/// folding allowed (which folds where the scenario's symmetry lets it, and must then
/// agree with both).
mod three_ways {
    use proptest::prelude::*;

    use crate::engine::{simulate, Scenario, Variability};
    use crate::network::ModelKind;
    use crate::topology::TopologySpec;
    use crate::workload::Workload;

    fn workload(sizes: &[u64], compute_ns: u64) -> Workload {
        Workload::one_tensor_per_layer(sizes, compute_ns, 2 * compute_ns)
    }

    /// (topology spec, workers) pairs small enough for the reference model.
    fn arb_fabric() -> impl Strategy<Value = (String, usize)> {
        prop_oneof![
            (2usize..9).prop_map(|n| ("star".to_string(), n)),
            (1usize..5, 2usize..4, 1usize..3, 1u32..5).prop_map(|(per_leaf, leaves, spines, oversub)| {
                // Uplinks at 1/oversub of the non-blocking rate (8 Gbps hosts).
                let uplink = 8.0 * per_leaf as f64 / spines as f64 / f64::from(oversub);
                (format!("leaf-spine:hosts_per_leaf={per_leaf},spines={spines},uplink={uplink}Gbps"), per_leaf * leaves)
            }),
            (1usize..3).prop_map(|nodes| ("nodes:machine=pcie-8".to_string(), 8 * nodes)),
        ]
    }

    fn arb_strategy() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "ring",
            "ring:partition=40000B",
            "ring:schedule=priority,partition=30000B,credit=60000B",
            "halving-doubling",
            "tree",
            "hierarchical",
            "ps",
            "ps:num_ps=2",
            "ps:num_ps=3,placement=sharded",
            "zero2",
            "fsdp",
        ])
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

        #[test]
        fn incremental_reference_and_folded_runs_agree(
            (topology, n) in arb_fabric(),
            strategy in arb_strategy(),
            sizes in prop::collection::vec(1u64..300_000, 1..5),
            compute_ns in 0u64..40_000,
            straggler in prop::option::of((0usize..64, 1.1f64..3.0)),
        ) {
            let mut sc = Scenario::new(workload(&sizes, compute_ns), n, 1e9, crate::strategy::Strategy::parse(strategy).unwrap());
            sc.topology = TopologySpec::parse(&topology).unwrap();
            sc.latency = 300e-9;
            sc.iterations = 2;
            if let Some((who, slow)) = straggler {
                let mut s = vec![1.0; n];
                s[who % n] = slow;
                sc.variability = Variability::Slowdowns(s);
            }
            let what = format!("{strategy} on {topology}, n={n}, straggler={straggler:?}, sizes={sizes:?}");
            // Some strategies refuse some fabrics (e.g. hierarchical needs machines that
            // divide the workers): then all three must refuse alike.
            let folded = simulate(&sc);
            sc.allow_folding = false;
            let new = simulate(&sc);
            sc.network = ModelKind::FlowReference;
            let reference = simulate(&sc);
            let (folded, new, reference) = match (folded, new, reference) {
                (Ok(f), Ok(a), Ok(b)) => (f, a, b),
                (Err(f), Err(a), Err(b)) => {
                    prop_assert_eq!(f.field(), a.field());
                    prop_assert_eq!(a.field(), b.field());
                    return Ok(());
                }
                other => panic!("{what}: only some runs failed: {other:?}"),
            };
            prop_assert!(!new.folded && !reference.folded);
            prop_assert_eq!(new.completions_s.len(), reference.completions_s.len());
            for ((a, b), f) in new.completions_s.iter().zip(&reference.completions_s).zip(&folded.completions_s) {
                prop_assert!(close(*a, *b), "{}: incremental {} vs reference {}", what, a, b);
                prop_assert!(close(*a, *f), "{}: unfolded {} vs folded {} ({} ranks)", what, a, f, folded.simulated_ranks);
            }
            for ((l, a), (_, b)) in new.link_utilization.iter().zip(&reference.link_utilization) {
                prop_assert!(close(*a, *b) || (a - b).abs() < 1e-12, "{}: {} {} vs {}", what, l, a, b);
            }
        }
    }
}
