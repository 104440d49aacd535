//! Digit folding (`fold.rs`): the folded and the full simulation agree on leaf-spine,
//! `nodes` and `rail` topologies.

mod common;
use common::*;
use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest, ProptestConfig};

/// Runs `sc` folded and full; asserts it folded to `reps` ranks and that completions
/// and every link's utilisation agree within 1e-9 relative.
fn assert_fold_agrees(mut sc: Scenario, reps: usize) -> (Report, Report) {
    let folded = run(&sc);
    sc.allow_folding = false;
    let full = run(&sc);
    let what = format!("{} n={} {}", sc.topology.name(), sc.workers, sc.strategy.spec);
    assert!(folded.folded && !full.folded, "{what}");
    assert_eq!((folded.simulated_ranks, full.simulated_ranks), (reps, sc.workers), "{what}");
    assert_eq!(folded.completions_s.len(), full.completions_s.len());
    for (a, b) in folded.completions_s.iter().zip(&full.completions_s) {
        assert!(close(*a, *b), "{what}: {a} vs {b}");
    }
    for ((a, x), (b, y)) in folded.link_utilization.iter().zip(&full.link_utilization) {
        assert_eq!(a, b);
        assert!(close(*x, *y) || (x - y).abs() < 1e-12, "{what} {a}: {x} vs {y}");
    }
    assert!(folded.flows < full.flows);
    // What rank 0 did: its time with messages in flight (those it receives from ranks not
    // simulated arrive, folded, at another rank of its orbit) and the bytes it sent.
    assert!(close(folded.comm_time_s, full.comm_time_s), "{what}: comm {} vs {}", folded.comm_time_s, full.comm_time_s);
    assert!(close(folded.sent_bytes_per_worker, full.sent_bytes_per_worker), "{what}");
    (folded, full)
}

fn on(topology: &str, n: usize, strategy: &str) -> Scenario {
    let w = workload(&[4096, 100_000, 7, 65_536, 1_000_000], 20_000);
    let mut sc = scenario(w, n, strategy, 700);
    sc.topology = TopologySpec::parse(topology).unwrap();
    sc.iterations = 3;
    sc
}

#[test]
fn ring_on_leaf_spine_folds_over_the_leaves() {
    // 4 leaves of 4 hosts, 2 spines: H = leaves (the top digit), 4 representatives.
    assert_fold_agrees(on("leaf-spine:hosts_per_leaf=4,spines=2", 16, "ring"), 4);
    assert_fold_agrees(on("leaf-spine:hosts_per_leaf=3,spines=3,uplink=4Gbps", 12, "ring:partition=50000B"), 3);
}

#[test]
fn ring_and_hierarchical_on_nodes_fold_over_the_machines() {
    assert_fold_agrees(on("nodes:machine=p3.16xlarge", 24, "ring"), 8);
    assert_fold_agrees(on("nodes:machine=dgx-a100", 16, "hierarchical"), 8);
}

#[test]
fn ring_on_rail_folds_over_the_groups() {
    // 8 GPUs per node, 2 nodes per group, 3 groups: 16 representatives of 48.
    let (folded, _) = assert_fold_agrees(on("rail:nodes_per_group=2,spines=2", 48, "ring"), 16);
    assert!(folded.link_utilization.iter().any(|(l, u)| l.starts_with("spine") && *u > 0.0));
    assert_fold_agrees(
        on("rail:node=dgx-a100,nodes_per_group=2,oversubscription=2,nic=10Gbps", 32, "ring:fusion=200KB"),
        16,
    );
    assert_fold_agrees(on("rail:nodes_per_group=1,spines=3", 24, "hierarchical"), 8);
}

#[test]
fn star_and_ring_keep_their_own_folding() {
    let r = run(&on("star", 8, "ring"));
    assert_eq!(r.simulated_ranks, 1);
    // Schedules with no invariant digit do not fold on other topologies.
    let r = run(&on("leaf-spine:hosts_per_leaf=4,spines=2", 16, "double-tree"));
    assert!(!r.folded && r.simulated_ranks == 16);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, .. ProptestConfig::default() })]

    #[test]
    fn folding_agrees_on_random_small_fabrics(
        per_leaf in 1usize..5,
        leaves in 2usize..5,
        spines in 1usize..4,
        per_group in 1usize..3,
        groups in 2usize..4,
        sizes in prop::collection::vec(1u64..200_000, 1..4),
        rail in proptest::bool::ANY,
    ) {
        let w = workload(&sizes, 5_000);
        let (topology, n) = if rail {
            (format!("rail:node=dgx-a100,nodes_per_group={per_group},spines={spines}"), 8 * per_group * groups)
        } else {
            let spines = if (per_leaf * leaves) % spines == 0 { spines } else { 1 };
            (format!("leaf-spine:hosts_per_leaf={per_leaf},spines={spines}"), per_leaf * leaves)
        };
        let mut sc = scenario(w, n, "ring", 300);
        sc.topology = TopologySpec::parse(&topology).unwrap();
        sc.iterations = 2;
        let folded = run(&sc);
        sc.allow_folding = false;
        let full = run(&sc);
        prop_assert!(folded.folded);
        prop_assert_eq!(folded.simulated_ranks, n / if rail { groups } else { leaves });
        for (a, b) in folded.completions_s.iter().zip(&full.completions_s) {
            prop_assert!(close(*a, *b), "{} n={}: {} vs {}", topology, n, a, b);
        }
        for ((a, x), (_, y)) in folded.link_utilization.iter().zip(&full.link_utilization) {
            prop_assert!(close(*x, *y) || (x - y).abs() < 1e-12, "{} {}: {} vs {}", topology, a, x, y);
        }
        prop_assert!(close(folded.comm_time_s, full.comm_time_s), "{} n={}: comm {} vs {}", topology, n, folded.comm_time_s, full.comm_time_s);
    }
}
