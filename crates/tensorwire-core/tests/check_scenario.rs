//! `check_scenario`: what `simulate` refuses before simulating, refused alike (same error,
//! same order) without a run; what only a run can find is left to the run.

mod common;
use common::*;
use tensorwire_core::check_scenario;

/// `sc` with `strategy` on `topology` (the fabric's own host rate where it has one).
fn on(mut sc: Scenario, strategy: &str, topology: &str) -> Scenario {
    sc.strategy = Strategy::parse(strategy).unwrap();
    sc.topology = TopologySpec::parse(topology).unwrap();
    if let Ok(rate) = sc.topology.host_rate(None) {
        sc.bandwidth = rate;
    }
    sc
}

#[test]
fn refusals_before_the_run_are_the_run_s_own() {
    let small = || scenario(workload(&[1 << 20, 4 << 20], 1000), 8, "ring", 100);
    let large = || scenario(workload(&[1 << 33, 1 << 33], 1000), 8, "ring", 100);
    let mut budget = small();
    budget.max_flows = Some(10);
    let mut sharded_budget = on(small(), "fsdp:comm=flows", "star");
    sharded_budget.max_flows = Some(10);
    let refused = [
        ("pieces", on(large(), "ring:partition=1KiB", "star")),
        ("flow budget", budget),
        ("sharded flow budget", sharded_budget),
        // NCCL refuses the restriction on this fabric when the engine times the tasks.
        ("nccl restriction", on(small(), "nccl:algo=nvls", "rail:node=dgx-a100")),
        ("hsdp group", on(small(), "hsdp:shard_group=3", "rail:node=dgx-h100")),
    ];
    for (what, sc) in &refused {
        let run = simulate(sc).expect_err(what).to_string();
        let check = check_scenario(sc).expect_err(what).to_string();
        assert_eq!(check, run, "{what}");
    }
    for (strategy, topology) in [
        ("ring", "star"),
        ("ps", "star"),
        ("ddp", "rail:node=dgx-h100"),
        ("fsdp", "rail:node=dgx-h100"),
        ("fsdp:comm=flows", "star"),
    ] {
        let sc = on(small(), strategy, topology);
        check_scenario(&sc).unwrap();
        simulate(&sc).unwrap();
    }
}

#[test]
fn what_only_a_run_finds_is_left_to_the_run() {
    // A failure timed after the run ended: when it ends is known once it has run.
    let mut sc = scenario(workload(&[1 << 20], 1000), 4, "ring", 100);
    sc.failures = vec![tensorwire_core::Failure { at_s: 1e3, target: "h1".into(), rate: 0.0 }];
    check_scenario(&sc).unwrap();
    let err = simulate(&sc).unwrap_err().to_string();
    assert!(err.contains("after the run ended"), "{err}");
}
