//! Partial collectives (seed 002): solo and majority rounds, stragglers, activation.

mod common;
use common::*;
use tensorwire_core::Variability;

fn skewed(strategy: &str, variability: Variability, seed: u64) -> Report {
    let mut sc = scenario(workload(&[400_000], 1_000_000), 8, strategy, 1000);
    sc.iterations = 30;
    sc.variability = variability;
    sc.seed = seed;
    run(&sc)
}

#[test]
fn solo_rounds_have_one_active_process_and_majority_about_half() {
    let linear = Variability::Slowdowns((0..8).map(|r| 1.0 + 0.5 * r as f64).collect());
    assert_eq!(skewed("ring:partial=solo", linear.clone(), 1).nap, Some(1.0));
    let majority = skewed("ring:partial=majority", linear.clone(), 1).nap.unwrap();
    // A uniformly drawn initiator in a fixed arrival order: (N + 1) / 2 on average.
    assert!((3.0..6.0).contains(&majority), "{majority}");
    assert_eq!(skewed("ring", linear, 1).nap, None);
}

#[test]
fn partial_collectives_do_not_wait_for_stragglers() {
    let noise = Variability::LogNormal { sigma: 0.5 };
    let blocking = skewed("ring", noise.clone(), 3).iteration_time_s;
    let solo = skewed("ring:partial=solo", noise.clone(), 3).iteration_time_s;
    let majority = skewed("ring:partial=majority", noise, 3).iteration_time_s;
    assert!(solo < majority && majority < blocking, "{solo} {majority} {blocking}");
    // A persistent straggler bounds a blocking job, not the fast workers of a partial one.
    let linear = Variability::Slowdowns((0..8).map(|r| 1.0 + 0.5 * r as f64).collect());
    let blocking = skewed("ring", linear.clone(), 1);
    let solo = skewed("ring:partial=solo", linear, 1);
    assert!(solo.throughput_samples_per_s > 1.5 * blocking.throughput_samples_per_s);
}

#[test]
fn without_stragglers_partial_only_adds_the_activation() {
    let base = skewed("ring", Variability::None, 0).iteration_time_s;
    let solo = skewed("ring:partial=solo", Variability::None, 0).iteration_time_s;
    // The activation reaches the farthest rank after ceil(log2 8) = 3 hops of 2 us.
    assert!((solo - base - 6e-6).abs() < 1e-7, "{solo} vs {base}");
}

#[test]
fn partial_is_for_all_reduce() {
    assert_eq!(Strategy::parse("ps:partial=solo").unwrap_err().field(), "strategy.partial");
}

#[test]
fn active_processes_count_the_measured_rounds_however_far_fast_workers_run_ahead() {
    // Three iterations, one rank 4x slower: the fast ranks end all their rounds before the
    // slow one first completes, so a window between completions of every rank held none of
    // them (0 active processes reported). A solo round has its initiator and the 6 other
    // fast ranks, ready at the same instant (`a_rank_ready_before_the_activation...`): 7.
    let mut slow = vec![1.0; 8];
    slow[7] = 4.0;
    let mut sc = scenario(workload(&[400_000], 1_000_000), 8, "ring:partial=solo", 1000);
    sc.variability = Variability::Slowdowns(slow);
    for iterations in [3, 10] {
        sc.iterations = iterations;
        assert_eq!(run(&sc).nap, Some(7.0), "{iterations} iterations");
    }
}

#[test]
fn a_rank_ready_before_the_activation_reaches_it_is_active() {
    // The runtime counts every call that arrived before the activation (docs/
    // partial-collectives.md). Without stragglers all 8 ranks are ready at the same instant:
    // each is ready when the activation comes, so a solo round has 8 active processes (the
    // simulation had counted the initiator alone, ties going by event order). With ranks
    // 1.5x slower than the one before, none is ready in the microseconds the activation
    // takes: 1.
    let solo = |variability: Variability| skewed("ring:partial=solo", variability, 1).nap.unwrap();
    assert_eq!(solo(Variability::None), 8.0);
    let linear = Variability::Slowdowns((0..8).map(|r| 1.0 + 0.5 * r as f64).collect());
    assert_eq!(solo(linear), 1.0);
}

/// `n` ranks at `slowdowns`, 4 layers of one 400 kB tensor each, `c` ns of forward compute
/// per layer (twice that backward), 1 B/ns links, 1 us per hop, 10 iterations.
fn layered(strategy: &str, slowdowns: Vec<f64>, c: u64) -> Report {
    let mut sc = scenario(workload(&[400_000; 4], c), slowdowns.len(), strategy, 1000);
    sc.iterations = 10;
    sc.variability = Variability::Slowdowns(slowdowns);
    run(&sc)
}

#[test]
fn ranks_ready_while_a_round_waits_in_the_queue_are_active() {
    // A ring all-reduce of S = 400 kB on N ranks takes 2 (N - 1) / N S = 600-700 us at 1 B/ns,
    // more than a layer's backward pass (100 us): with one collective in flight (the
    // default) each layer's round waits for the one before. Its activation starts when it
    // is released, so every rank ready by then is active: N identical ranks, ready at the
    // same instant, make every solo round N, queued (the default) or not (`inflight=1000`).
    // The count taken when the initiator became ready had said about 1.
    for n in [4usize, 8] {
        for strategy in ["ring:partial=solo", "ring:partial=solo,inflight=1000"] {
            assert_eq!(layered(strategy, vec![1.0; n], 50_000).nap, Some(n as f64), "{strategy} on {n} ranks");
        }
    }
}

#[test]
fn a_fixed_straggler_is_never_active_in_rounds_the_fast_ranks_start() {
    // Ranks 1, 1, 1, 3 times slow, c = 150 us: a fast rank's iteration is about 4 c of
    // forward, the first layer's backward (2 c) and 4 queued all-reduces of 600 us (4 c
    // each), 22 c; the straggler computes 3 x 12 c = 36 c per iteration, so it falls further
    // behind every iteration and every round is started (solo) by a fast rank. Its layer j
    // (in backward order) is ready at 12 c + 6 c (j + 1) into its first iteration, after the
    // fast ranks' round of it is released (about 6 c + 4 c j) and activated (a few us): it
    // is never active. The three fast ranks are ready at the same instant, or before the
    // round leaves the queue: each round has exactly 3 active processes.
    let slowdowns = vec![1.0, 1.0, 1.0, 3.0];
    let fast = slowdowns.iter().filter(|&&s| s == 1.0).count() as f64;
    for strategy in ["ring:partial=solo", "ring:partial=solo,inflight=1000"] {
        assert_eq!(layered(strategy, slowdowns.clone(), 150_000).nap, Some(fast), "{strategy}");
    }
}

// -- max_lag: bounded staleness (docs/partial-collectives.md) --------------------------------

/// Ranks 1, 1, 1, 3 times slow (`a_fixed_straggler_...` above), `strategy` on 4 layers.
fn straggling(strategy: &str) -> Report {
    layered(strategy, vec![1.0, 1.0, 1.0, 3.0], 150_000)
}

#[test]
fn max_lag_0_is_a_synchronous_all_reduce_every_rank_active() {
    // Every rank joins round k with its own gradient of round k: all 4 are active in every
    // round, and the job goes at the straggler's pace. Solo rounds are released in the
    // first ready rank's order, the layers' order on every rank, so the job runs as a
    // blocking all-reduce does, plus at most the activation's hops (1 us each, 2 on 4
    // ranks) per collective. Majority rounds are released when a drawn rank is ready: a
    // round drawn to a fast rank takes the one collective in flight and holds it until the
    // straggler joins, while an earlier layer's round, drawn to the straggler, queues
    // behind it; never faster than blocking.
    let blocking = straggling("ring").iteration_time_s;
    for kind in ["solo", "majority"] {
        let bounded = straggling(&format!("ring:partial={kind},max_lag=0"));
        assert_eq!(bounded.nap, Some(4.0), "{kind}");
        let gap = bounded.iteration_time_s - blocking;
        assert!(gap >= -1e-9, "{kind}: {gap} s");
        if kind == "solo" {
            assert!(gap <= 4.0 * 2.0 * 1e-6 + 1e-9, "{kind}: {gap} s");
        }
    }
}

#[test]
fn a_bound_beyond_the_run_changes_nothing() {
    // Rounds k >= S wait for round k - S's call: with S past the last iteration none waits.
    for kind in ["solo", "majority"] {
        let free = straggling(&format!("ring:partial={kind}"));
        let bounded = straggling(&format!("ring:partial={kind},max_lag=10"));
        assert_eq!(bounded.iteration_time_s, free.iteration_time_s, "{kind}");
        assert_eq!(bounded.nap, free.nap, "{kind}");
        assert_eq!(bounded.completions_s, free.completions_s, "{kind}");
    }
}

#[test]
fn a_tighter_bound_never_runs_faster_and_holds_the_fast_ranks_to_the_straggler() {
    // The straggler computes 36 c per iteration where a fast rank needs about 22 c: unbounded,
    // the fast ranks run ahead at their own pace. With max_lag = S a fast rank's round k
    // waits for the straggler's call k - S, so over 10 iterations the fast ranks can lead by
    // S rounds at most and the job slows toward the straggler's pace as S shrinks.
    let time = |s: Option<u32>| {
        let spec = s.map_or("ring:partial=solo".to_string(), |s| format!("ring:partial=solo,max_lag={s}"));
        straggling(&spec).iteration_time_s
    };
    let times: Vec<f64> = [Some(0), Some(1), Some(2), Some(4), None].into_iter().map(time).collect();
    for pair in times.windows(2) {
        assert!(pair[0] >= pair[1] - 1e-12, "{times:?}");
    }
    assert!(times[0] > 1.3 * times[4], "{times:?}");
    let blocking = straggling("ring").iteration_time_s;
    assert!((times[0] - blocking).abs() < 1e-4 * blocking, "{} vs {blocking}", times[0]);
}

#[test]
fn max_lag_needs_a_partial_collective_of_an_all_reduce() {
    for (spec, field) in [
        ("ring:max_lag=1", "strategy.max_lag"),
        ("ps:partial=solo,max_lag=1", "strategy.partial"),
        ("fsdp:max_lag=1", "strategy.max_lag"),
        ("nccl:max_lag=1", "strategy.max_lag"),
        ("ring:partial=solo,max_lag=-1", "strategy.max_lag"),
        ("ring:partial=solo,max_lag=1.5", "strategy.max_lag"),
    ] {
        assert_eq!(Strategy::parse(spec).unwrap_err().field(), field, "{spec}");
    }
    assert_eq!(Strategy::parse("ring:partial=majority,max_lag=3").unwrap().max_lag, Some(3));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 32, .. proptest::prelude::ProptestConfig::default() })]

    /// For any ranks' slowdowns: with `max_lag=0` every rank is active in every round (the
    /// bound makes each join with its own gradient), and a solo job is never faster with a
    /// tighter bound (`S` = 0, 1, 3, unbounded).
    #[test]
    fn a_tighter_bound_is_never_faster_and_0_keeps_every_rank(
        slowdowns in proptest::collection::vec(1.0f64..4.0, 2..6),
        c in 20_000u64..200_000,
    ) {
        let n = slowdowns.len() as f64;
        let run_with = |spec: &str| layered(spec, slowdowns.clone(), c);
        proptest::prop_assert_eq!(run_with("ring:partial=solo,max_lag=0").nap, Some(n));
        proptest::prop_assert_eq!(run_with("ring:partial=majority,max_lag=0").nap, Some(n));
        // Fused rounds too (a rank ready for one of a round's tensors but not another when
        // the activation came had been counted 0 or twice).
        proptest::prop_assert_eq!(run_with("ring:partial=solo,max_lag=0,fusion=1MB,cycle=1ms").nap, Some(n));
        let times: Vec<f64> = ["max_lag=0", "max_lag=1", "max_lag=3", ""]
            .iter()
            .map(|lag| run_with(&format!("ring:partial=solo{}{lag}", if lag.is_empty() { "" } else { "," })).iteration_time_s)
            .collect();
        for pair in times.windows(2) {
            proptest::prop_assert!(pair[0] >= pair[1] * (1.0 - 1e-9), "{:?}", times);
        }
    }
}

#[test]
fn one_random_straggler_per_iteration_holds_up_blocking_every_time_and_solo_by_its_share() {
    // Li et al. 2019's injection (seed 002, section 6.2): in every iteration one rank drawn
    // at random computes 3x. A blocking all-reduce waits for it every time, as for one
    // fixed 3x rank; solo rounds go at each rank's own pace, 1 + 2/8 of the compute on
    // average, so well under half the blocking iteration.
    let one = Variability::OneAtRandom { factor: 3.0 };
    let mut fixed = vec![1.0; 8];
    fixed[0] = 3.0;
    let blocking = skewed("ring", one.clone(), 5).iteration_time_s;
    let one_fixed = skewed("ring", Variability::Slowdowns(fixed), 5).iteration_time_s;
    assert!((blocking - one_fixed).abs() < 0.01 * one_fixed, "{blocking} vs {one_fixed}");
    let solo = skewed("ring:partial=solo", one, 5).iteration_time_s;
    assert!(solo < 0.5 * blocking, "{solo} vs {blocking}");
}
