//! Bounds (`limits.rs`): inputs that would pass the simulation horizon or the memory
//! limits are refused naming the input; durations and rates that stay within them give
//! finite times that grow with the input.

use proptest::prelude::{prop, prop_assert, proptest, ProptestConfig};

use super::tests::{scenario, workload};
use super::*;
use crate::limits::{HORIZON_NS, MAX_BYTES, MAX_WORKERS};
use crate::topology::TopologySpec;

fn field_of(sc: &Scenario) -> String {
    match simulate(sc) {
        Ok(r) => panic!("accepted: {} s", r.iteration_time_s),
        Err(e) => e.field().to_string(),
    }
}

fn with_strategy(strategy: &str) -> Scenario {
    scenario(workload(&[4000, 4000], 1000), 4, strategy, 100)
}

#[test]
fn durations_past_the_horizon_are_refused_naming_the_input() {
    for (latency, field) in [(1e9, "latency"), (1e300, "latency"), (1e7, "latency")] {
        let mut sc = with_strategy("ring");
        sc.latency = latency;
        assert_eq!(field_of(&sc), field, "{latency}");
    }
    let mut sc = with_strategy("ring");
    sc.per_message_overhead = 1e300;
    assert_eq!(field_of(&sc), "per_message_overhead");
    assert_eq!(field_of(&with_strategy("ring:overhead=1e300s")), "strategy.overhead");
    assert_eq!(field_of(&with_strategy("ring:dispatch=1e300s")), "strategy.dispatch");
    // A chain of steps at a latency below the horizon that would still pass it.
    let mut sc = with_strategy("ring");
    sc.workers = 1 << 16;
    sc.latency = 1e5;
    assert_eq!(field_of(&sc), "latency");
}

#[test]
fn rates_and_sizes_past_the_horizon_are_refused_naming_the_input() {
    let mut sc = with_strategy("ring");
    sc.bandwidth = 1e-300;
    assert_eq!(field_of(&sc), "bandwidth");
    sc.bandwidth = 1e-30 / 8.0 * 1e9;
    assert_eq!(field_of(&sc), "bandwidth");
    let mut sc = with_strategy("ring");
    sc.copy_bandwidth = Some(1e-300);
    assert_eq!(field_of(&sc), "copy_bandwidth");
    assert_eq!(field_of(&with_strategy("ring:copy=1e-300bps")), "strategy.copy");
    let mut sc = with_strategy("ring");
    sc.workload = workload(&[u64::MAX], 1000);
    assert_eq!(field_of(&sc), "workload.tensors[0].bytes");
    sc.workload = workload(&[1 << 63, 1 << 63], 1000);
    assert_eq!(field_of(&sc), "workload.tensors[0].bytes");
    sc.workload = workload(&[MAX_BYTES, 1], 1000);
    assert_eq!(field_of(&sc), "workload.tensors[1].bytes");
    for spec in ["allreduce:1e20B", "allreduce:1e30B", "allreduce:1MiBx4000000"] {
        let e = crate::workload::collective_benchmark(spec).unwrap_err();
        assert_eq!(e.field(), "collective", "{spec}");
    }
    // Every received byte is added at `reduce=`: it ran until the engine's horizon and said
    // only "horizon".
    assert_eq!(field_of(&with_strategy("ring:reduce=1e-9bps")), "strategy.reduce");
}

#[test]
fn a_run_stopped_at_the_horizon_names_the_slow_link_given() {
    // A fabric's own link or a failure's rate holds only the messages that cross it, so it
    // is not refused up front; where the run then stops at the horizon, it is named.
    let mut sc = with_strategy("ring");
    sc.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=2,spines=1,uplink=1e-9bps").unwrap();
    let e = simulate(&sc).unwrap_err().to_string();
    assert!(e.starts_with("horizon:") && e.contains("topology.uplink at 1.25e-10 bytes/s"), "{e}");
    // The same slow uplinks, unused (every host on one leaf): the run is fine.
    sc.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=4,spines=1,uplink=1e-9bps").unwrap();
    assert!(simulate(&sc).is_ok());
    // A fusion cycle that a buffer waits every iteration; a buffer that fills does not wait.
    let e = simulate(&with_strategy("ring:fusion=1MiB,cycle=5e6s")).unwrap_err().to_string();
    assert!(e.starts_with("horizon:") && e.contains("strategy.cycle of 5000000 s"), "{e}");
    assert!(simulate(&with_strategy("ring:fusion=1KiB,cycle=5e6s")).is_ok());
}

#[test]
fn compute_past_the_horizon_is_refused_naming_the_input() {
    let mut sc = with_strategy("ring");
    sc.workload = workload(&[4000], HORIZON_NS / 2);
    assert_eq!(field_of(&sc), "workload.layers[0].backward_s");
    let e = workload(&[4000], 1000).with_compute_speedup(1e-300).unwrap_err();
    assert_eq!(e.field(), "compute_speedup");
    let mut sc = with_strategy("ring");
    sc.variability = Variability::Slowdowns(vec![1e308; 4]);
    assert_eq!(field_of(&sc), "slowdowns");
}

#[test]
fn a_random_straggler_past_the_horizon_stops_the_run_at_the_horizon() {
    // An iteration's nominal compute of 3/8 of the horizon (two layers of 2^53 / 16 ns
    // forward and twice that backward): a draw of Normal(1, 5) above 2.7 passes it, which
    // comes within a few workers and iterations.
    let compute = HORIZON_NS / 16;
    for strategy in ["ring", "ps", "fsdp"] {
        let mut sc = scenario(workload(&[4000, 4000], compute), 4, strategy, 100);
        sc.variability = Variability::Normal { cv: MAX_SPREAD };
        let e = simulate(&sc).unwrap_err();
        assert_eq!(e.field(), "horizon", "{strategy}");
        assert!(e.to_string().contains("straggler"), "{e}");
    }
    // Past the largest spread the run is refused before it starts.
    let mut sc = with_strategy("ring");
    sc.variability = Variability::LogNormal { sigma: 700.0 };
    assert_eq!(field_of(&sc), "stragglers");
}

#[test]
fn counts_that_size_allocations_are_refused_before_allocating() {
    let mut sc = with_strategy("ring");
    sc.workers = 1 << 31;
    assert_eq!(field_of(&sc), "workers");
    let mut sc = with_strategy("ring");
    sc.iterations = 1_000_000_000;
    assert_eq!(field_of(&sc), "iterations");
    // Fewer iterations, but too many per worker.
    sc.iterations = 1 << 20;
    sc.workers = 1024;
    assert_eq!(field_of(&sc), "iterations");
    for (strategy, field) in [
        ("ps:num_ps=1000000000", "strategy.num_ps"),
        ("ring:partition=1B", "strategy.partition"),
        ("ps:pipeline=1B", "strategy.pipeline"),
        ("ring+multicast:partition=1B", "strategy.partition"),
        ("zero1:bucket=1B", "strategy.bucket"),
        ("double-tree:chunk=1B", "strategy.chunk"),
    ] {
        let field_seen = match crate::strategy::Strategy::parse(strategy) {
            Err(e) => e.field().to_string(),
            Ok(_) => {
                let mut sc = with_strategy(strategy);
                sc.workload = workload(&[100_000_000], 1000);
                field_of(&sc)
            }
        };
        assert_eq!(field_seen, field, "{strategy}");
    }
    // Every tensor on every server: 100 tensors x 60,000 servers.
    let mut sc = with_strategy("ps:num_ps=60000,placement=sharded");
    sc.workload = workload(&[1000; 100], 1000);
    assert_eq!(field_of(&sc), "strategy.num_ps");
    for (topology, field) in [
        ("leaf-spine:spines=1000000000", "topology.spines"),
        ("rail:spines=1000000000", "topology.spines"),
        ("leaf-spine:hosts_per_leaf=1,spines=60000", "topology"),
    ] {
        let e = TopologySpec::parse(topology).and_then(|t| t.build(4096, 0, 1e9, 0).map(|_| ()));
        assert_eq!(e.unwrap_err().field(), field, "{topology}");
    }
    let star = TopologySpec::parse("star").unwrap();
    assert_eq!(star.build(1_000_000_000, 0, 1e9, 0).unwrap_err().field(), "workers");
    assert!(star.build(MAX_WORKERS, 0, 1e9, 0).is_ok());
    let trees = crate::gputopo::generate_trees(&crate::gputopo::GpuTopology::preset("dgx-a100").unwrap(), 1 << 30, 0.7);
    assert_eq!(trees.unwrap_err().field(), "trees");
}

#[test]
fn sizes_of_zero_and_loose_flags_are_refused() {
    for (spec, field) in [
        ("ring:credit=0B", "strategy.credit"),
        ("ring:fusion=0B", "strategy.fusion"),
        ("double-tree:chunk=0B", "strategy.chunk"),
        ("fsdp:min_unit=0B", "strategy.min_unit"),
        ("zero1:bucket=0.5B", "strategy.bucket"),
        ("ps:barrier=yes", "strategy.barrier"),
        ("ps:barrier=1", "strategy.barrier"),
        ("ps:barrier=no", "strategy.barrier"),
        ("ring:=4MiB", "strategy"),
    ] {
        let e = crate::strategy::Strategy::parse(spec).unwrap_err();
        assert_eq!(e.field(), field, "{spec}");
    }
    assert!(crate::strategy::Strategy::parse("ps:barrier=false").is_ok());
    assert!(crate::strategy::Strategy::parse("ring:credit=1B").is_ok());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A longer latency (anything from 1 ns to 1e12 s) gives a finite, longer iteration,
    /// or is refused naming the latency or the horizon; never a shorter one.
    #[test]
    fn latency_is_monotone_or_refused(
        exps in prop::collection::vec(-9.0f64..12.0, 2),
        strategy in prop::sample::select(vec!["ring", "ps", "double-tree", "fsdp"]),
    ) {
        let (a, b) = (10f64.powf(exps[0].min(exps[1])), 10f64.powf(exps[0].max(exps[1])));
        let time = |latency: f64| {
            let mut sc = with_strategy(strategy);
            sc.latency = latency;
            simulate(&sc)
        };
        match (time(a), time(b)) {
            (Ok(ra), Ok(rb)) => {
                prop_assert!(rb.iteration_time_s.is_finite() && rb.iteration_time_s >= ra.iteration_time_s);
            }
            (_, Err(e)) => prop_assert!(["latency", "horizon"].contains(&e.field()), "{e}"),
            (Err(e), Ok(_)) => prop_assert!(false, "{a} s refused ({e}) but {b} s accepted"),
        }
    }

    /// A slower link (anything down to 1e-300 bytes/s) gives a finite, longer iteration, or
    /// is refused naming the bandwidth or the horizon.
    #[test]
    fn bandwidth_is_monotone_or_refused(
        exps in prop::collection::vec(-300.0f64..12.0, 2),
        bytes in 1u64..(1 << 40),
    ) {
        let (slow, fast) = (10f64.powf(exps[0].min(exps[1])), 10f64.powf(exps[0].max(exps[1])));
        let time = |rate: f64| {
            let mut sc = with_strategy("ring");
            sc.workload = workload(&[bytes], 1000);
            sc.bandwidth = rate;
            simulate(&sc)
        };
        match (time(fast), time(slow)) {
            (Ok(rf), Ok(rs)) => {
                prop_assert!(rs.iteration_time_s.is_finite() && rs.iteration_time_s >= rf.iteration_time_s);
            }
            (_, Err(e)) => prop_assert!(["bandwidth", "horizon"].contains(&e.field()), "{e}"),
            (Err(e), Ok(_)) => prop_assert!(false, "{fast} B/s refused ({e}) but {slow} B/s accepted"),
        }
    }
}
