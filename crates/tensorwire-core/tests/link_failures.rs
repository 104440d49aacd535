//! Failures (`failures.rs`): a link's rate drops, or it goes down, at a given time.

mod common;
use common::*;
use tensorwire_core::{simulate_jobs, Failure, Job};

/// A 2-rank `ring` job named `name` of `w`, placed by the run.
fn ring_job(name: &str, w: &Workload) -> Job {
    Job { name: name.into(), workload: w.clone(), workers: 2, strategy: Strategy::parse("ring").unwrap(), hosts: None }
}

fn fail(target: &str, at_s: f64, rate: f64) -> Failure {
    Failure { at_s, target: target.into(), rate }
}

#[test]
fn halving_a_ring_links_rate_doubles_its_bandwidth_term() {
    // 2(N-1)(a + S/(N B)) becomes 2(N-1)(a + 2 S/(N B)): h0's uplink carries one ring
    // message every step, and every step waits for it.
    for n in [2usize, 4, 6] {
        let s = 1000 * n as u64;
        let mut sc = scenario(workload(&[s], 0), n, "ring", 100);
        sc.iterations = 3;
        let healthy = run(&sc);
        sc.failures = vec![fail("h0->sw", 0.0, 0.5)];
        let r = run(&sc);
        assert!(!r.folded, "failures break the symmetry folding relies on");
        assert_eq!(r.failures_applied, 1);
        let expected = 2.0 * (n as f64 - 1.0) * (200.0 + 2000.0) * 1e-9;
        assert!((r.iteration_time_s - expected).abs() < 1e-12, "n={n}: {} vs {expected}", r.iteration_time_s);
        assert!((healthy.iteration_time_s - 2.0 * (n as f64 - 1.0) * 1200e-9).abs() < 1e-12);
    }
}

#[test]
fn a_failure_after_the_run_is_refused_naming_it_and_the_runs_end() {
    let mut sc = scenario(workload(&[4096, 100_000], 1000), 4, "ring", 100);
    let healthy = run(&sc);
    let end = healthy.completions_s.last().copied().unwrap();
    // Listed out of time order: the first listed of those the run never reached is
    // named (the one at 0 s keeps the full rate, so the run ends when it did).
    sc.failures = vec![fail("h0->sw", 0.0, 1.0), fail("sw", 10.0, 0.0), fail("h1", end * 2.0, 0.0)];
    let e = simulate(&sc).unwrap_err();
    assert_eq!(e.field(), "failures[1].at_s");
    assert!(e.to_string().contains(&format!("after the run ended at {end} s")), "{e}");
    // A failure at the very end is within the run.
    sc.failures = vec![fail("h0->sw", end, 0.5)];
    assert_eq!(run(&sc).failures_applied, 1);
    // Allowed (a baseline sharing another run's failures), it changes nothing.
    sc.failures = vec![fail("sw", 10.0, 0.0)];
    sc.allow_failures_after_end = true;
    let r = run(&sc);
    assert_eq!(r.failures_applied, 0);
    assert_eq!(r.completions_s, healthy.completions_s);
}

#[test]
fn a_failure_after_every_job_ended_is_refused() {
    let w = workload(&[4096, 100_000], 1000);
    let mut fabric = scenario(w.clone(), 4, "ring", 100);
    let job = |name: &str| ring_job(name, &w);
    fabric.failures = vec![fail("sw", 10.0, 0.0)];
    let e = simulate_jobs(&fabric, &[job("a"), job("b")], "packed").unwrap_err();
    assert_eq!(e.field(), "failures[0].at_s");
    fabric.allow_failures_after_end = true;
    assert_eq!(simulate_jobs(&fabric, &[job("a")], "packed").unwrap()[0].failures_applied, 0);
}

#[test]
fn a_degradation_mid_run_slows_only_what_follows() {
    let mut sc = scenario(workload(&[100_000; 4], 50_000), 4, "ring", 100);
    sc.iterations = 4;
    let healthy = run(&sc);
    let at = healthy.completions_s[1];
    sc.failures = vec![fail("h2", at, 0.25)];
    let r = run(&sc);
    assert_eq!(&r.completions_s[..2], &healthy.completions_s[..2]);
    assert!(r.completions_s[3] - r.completions_s[2] > healthy.completions_s[3] - healthy.completions_s[2]);
    // The sharded engine applies failures too.
    sc.strategy = Strategy::parse("fsdp").unwrap();
    sc.failures.clear();
    let fsdp = run(&sc);
    sc.failures = vec![fail("h2", 0.0, 0.25)];
    assert!(run(&sc).iteration_time_s > fsdp.iteration_time_s);
}

#[test]
fn a_slowed_link_is_as_busy_as_its_bytes_over_what_it_could_carry_then() {
    // Every uplink of a ring on a star carries the same bytes; h0's at half its rate
    // from the start is twice as busy. From the second iteration on, only what follows.
    let mut sc = scenario(workload(&[100_000; 4], 50_000), 4, "ring", 100);
    sc.iterations = 4;
    let util = |r: &Report, name: &str| r.link_utilization.iter().find(|(l, _)| l == name).unwrap().1;
    sc.failures = vec![fail("h0->sw", 0.0, 0.5)];
    let slow = run(&sc);
    let (h0, h1) = (util(&slow, "h0->sw"), util(&slow, "h1->sw"));
    assert!(h0 < 1.0 && (h0 - 2.0 * h1).abs() < 1e-9, "{h0} {h1}");
    // Halved midway through the window: the capacity counts each rate for its time.
    let healthy = run(&sc_without_failures(&sc));
    let (start, end) = (healthy.completions_s[0], healthy.completions_s[3]);
    let at = (start + end) / 2.0;
    sc.failures = vec![fail("h0->sw", at, 0.5)];
    let mid = run(&sc);
    let (s, e) = (mid.completions_s[0], mid.completions_s[3]);
    let expected = util(&mid, "h1->sw") * (e - s) / ((at - s) + 0.5 * (e - at));
    assert!((util(&mid, "h0->sw") - expected).abs() < 1e-6, "{} vs {expected}", util(&mid, "h0->sw"));
}

fn sc_without_failures(sc: &Scenario) -> Scenario {
    Scenario { failures: Vec::new(), ..sc.clone() }
}

#[test]
fn a_link_that_goes_down_stops_the_job_with_its_name() {
    let mut sc = scenario(workload(&[4096, 100_000], 1000), 4, "ring", 100);
    sc.failures = vec![fail("h1", 1e-6, 0.0)];
    let e = simulate(&sc).unwrap_err();
    assert_eq!(e.field(), "failures");
    assert!(e.to_string().contains("h1 went down"), "{e}");
    sc.failures = vec![fail("leaf7", 0.0, 0.5)];
    assert_eq!(simulate(&sc).unwrap_err().field(), "failures[0].target");
}

#[test]
fn a_link_down_under_one_job_of_several_names_that_job() {
    // "the job cannot finish" of a run of several did not say which.
    let w = workload(&[4096, 100_000], 1000);
    let mut fabric = scenario(w.clone(), 4, "ring", 100);
    let job = |name: &str| ring_job(name, &w);
    fabric.failures = vec![fail("h3", 1e-6, 0.0)];
    let e = simulate_jobs(&fabric, &[job("a"), job("b")], "packed").unwrap_err();
    assert_eq!(e.field(), "failures");
    assert!(e.to_string().contains("job \"b\" cannot finish: h3 went down"), "{e}");
    fabric.failures = vec![fail("sw", 1e-6, 0.0)];
    let e = simulate_jobs(&fabric, &[job("a"), job("b")], "packed").unwrap_err();
    assert!(e.to_string().contains("jobs \"a\", \"b\" cannot finish: sw went down"), "{e}");
}
