//! Closed forms of the strategies and their options: one tensor of `s` bytes, zero compute, 1 B/ns
//! links, `hop` ns per hop (a host-to-host path on the star is 2 hops).

mod common;
use common::*;

fn time(strategy: &str, n: usize, s: u64, hop: u64) -> f64 {
    let mut sc = scenario(workload(&[s], 0), n, strategy, hop);
    sc.iterations = 4;
    run(&sc).iteration_time_s * 1e9
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs() + 4.0
}

#[test]
fn recursive_doubling_and_butterfly() {
    for n in [2usize, 4, 8, 16] {
        let (s, hop) = (1 << 16, 100);
        let expected = (n as f64).log2() * (2.0 * hop as f64 + s as f64);
        assert!(close(time("recursive-doubling", n, s, hop), expected), "n={n}");
        assert!(close(time("butterfly", n, s, hop), expected), "n={n}");
    }
}

#[test]
fn halving_doubling() {
    for n in [2usize, 4, 8, 16] {
        let (s, hop) = (1 << 16, 100);
        let log = (n as f64).log2();
        let expected = 2.0 * log * 2.0 * hop as f64 + 2.0 * s as f64 * (n - 1) as f64 / n as f64;
        assert!(close(time("halving-doubling", n, s, hop), expected), "n={n}: {}", time("halving-doubling", n, s, hop));
    }
}

#[test]
fn non_powers_of_two_add_two_full_exchanges() {
    let (s, hop) = (1 << 16, 100);
    // n = 6: p = 4, fold in and out: 2 + 2 steps of the whole vector, 4(S + L), plus one S:
    // ranks 2 and 3 have nothing to fold, run ahead, and rank 2's step-1 message reaches
    // rank 0 during rank 0's step-0 exchange, so both share rank 0's downlink.
    let expected = 5.0 * s as f64 + 4.0 * 2.0 * hop as f64;
    assert!(close(time("recursive-doubling", 6, s, hop), expected), "{}", time("recursive-doubling", 6, s, hop));
}

#[test]
fn binomial_tree() {
    let (s, hop) = (1 << 16, 100);
    let l = 2.0 * hop as f64;
    for n in [2usize, 4, 8, 16] {
        let levels = (n as f64).log2();
        assert!(close(time("tree", n, s, hop), 2.0 * levels * (l + s as f64)), "n={n}");
    }
    // n = 3: rank 2 has no partner at level 0 and sends to rank 0 at once, together
    // with rank 1: 2S + L, then two broadcast sends: 4S + 3L.
    assert!(close(time("tree", 3, s, hop), 4.0 * s as f64 + 3.0 * l));
}

#[test]
fn double_tree_on_two_ranks() {
    // P pieces: (P + 1) steps of latency and S/B of bandwidth in total.
    let (s, hop) = (8 << 20, 100);
    let p = 8.0; // 8 MiB in 1 MiB pieces
    assert!(close(time("double-tree", 2, s, hop), (p + 1.0) * 2.0 * hop as f64 + s as f64));
}

#[test]
fn double_tree_pipelines_large_tensors() {
    let (s, hop, n) = (64 << 20, 1000, 16);
    let double = time("double-tree", n, s, hop);
    let binomial = time("tree", n, s, hop);
    assert!(double < binomial / 2.0, "{double} vs {binomial}");
    assert!(double > s as f64, "cannot beat the bandwidth bound");
}

#[test]
fn ring_multicast_saves_latency_not_bandwidth() {
    for n in [2usize, 4, 8] {
        let (s, hop) = (1000 * n as u64, 100);
        let expected = n as f64 * 2.0 * hop as f64 + 2.0 * (n - 1) as f64 * s as f64 / n as f64;
        for fold in [true, false] {
            let mut sc = scenario(workload(&[s], 0), n, "ring+multicast", hop);
            sc.allow_folding = fold;
            assert!(close(run(&sc).iteration_time_s * 1e9, expected), "n={n} fold={fold}");
        }
    }
}

#[test]
fn ps_with_multicast() {
    // Incast N S / B + L, then one multicast S / B + L; workers get it together.
    let (n, s, hop) = (4usize, 10_000u64, 100u64);
    let l = 2.0 * hop as f64;
    assert!(close(time("ps+multicast", n, s, hop), (n as f64 + 1.0) * s as f64 + 2.0 * l));
}

#[test]
fn ps_with_in_network_aggregation() {
    // Pushes stop at the switch (1 hop, in parallel), one aggregate to the server
    // (1 hop), then N serial pulls (2 hops).
    let (n, s, hop) = (4usize, 10_000u64, 100u64);
    let expected = (n as f64 + 2.0) * s as f64 + 4.0 * hop as f64;
    assert!(close(time("ps+ina", n, s, hop), expected), "{}", time("ps+ina", n, s, hop));
    let both = 3.0 * s as f64 + 4.0 * hop as f64;
    assert!(close(time("ps+multicast+ina", n, s, hop), both), "{}", time("ps+multicast+ina", n, s, hop));
}

#[test]
fn switch_memory_serialises_aggregation() {
    // Multicast distribution: every worker pushes all four tensors at once. With memory
    // for one tensor, each tensor is pushed (S) and forwarded (S) before the next is
    // admitted: the last aggregate leaves at 8S instead of 5S, and each of the three
    // later tensors pays its push's hop after admission: 3(S + hop) more.
    // Each layer's backward pass takes S, so tensors become ready one S apart.
    let s = 100_000.0;
    let w = workload(&[100_000; 4], 50_000);
    let run_with = |spec: &str| run(&scenario(w.clone(), 8, spec, 100)).iteration_time_s * 1e9;
    let unlimited = run_with("ps+multicast+ina");
    let small = run_with("ps+multicast+ina:switch_memory=100KB");
    assert!(close(small - unlimited, 3.0 * (s + 100.0)), "{small} vs {unlimited}");
    assert_eq!(run_with("ps+multicast+ina:switch_memory=400KB"), unlimited);
}

#[test]
fn sharding_spreads_one_tensor_over_servers() {
    // Each of 2 servers holds half: incast N S/2 per server, then N serial halves each.
    let (n, s, hop) = (4usize, 10_000u64, 100u64);
    let mut sc = scenario(workload(&[s], 0), n, "ps:num_ps=2,placement=sharded", hop);
    sc.iterations = 1;
    let c0 = run(&sc).completions_s[0] * 1e9;
    assert!(close(c0, n as f64 * s as f64 + 4.0 * hop as f64), "{c0}");
}

#[test]
fn compression_divides_the_bandwidth_term() {
    let (n, s, hop) = (4usize, 40_000u64, 100u64);
    let expected = 2.0 * (n - 1) as f64 * (2.0 * hop as f64 + s as f64 / 4.0 / n as f64);
    assert!(close(time("ring:compression=4", n, s, hop), expected));
}

#[test]
fn reduction_cost_is_n_minus_1_adds_of_s_over_n() {
    // Seed 001: + (N-1) AddEst(S/N); reduce=8Gbps adds 1 ns per byte.
    let (n, s, hop) = (4usize, 40_000u64, 100u64);
    let ring = 2.0 * (n - 1) as f64 * (2.0 * hop as f64 + s as f64 / n as f64);
    let adds = (n - 1) as f64 * s as f64 / n as f64;
    assert!(close(time("ring:reduce=8Gbps", n, s, hop), ring + adds));
}

#[test]
fn transport_overhead_is_per_message() {
    let (n, s, hop) = (4usize, 40_000u64, 100u64);
    let ring = 2.0 * (n - 1) as f64 * (2.0 * hop as f64 + s as f64 / n as f64);
    assert!(close(time("ring:overhead=3us", n, s, hop), ring + 2.0 * (n - 1) as f64 * 3000.0));
    // A 4 Gbps copy limit halves the rate of 8 Gbps links.
    let copy = 2.0 * (n - 1) as f64 * (2.0 * hop as f64 + 2.0 * s as f64 / n as f64);
    assert!(close(time("ring:copy=4Gbps", n, s, hop), copy));
}

#[test]
fn pipelined_segments_hide_the_overhead_behind_the_transfer() {
    // A ring step costs 2 hops + max(overhead, S/N) instead of 2 hops + overhead + S/N.
    let (n, hop) = (4usize, 100u64);
    let steps = 2.0 * (n - 1) as f64;
    for (s, overhead) in [(4_000u64, 5_000.0), (80_000, 5_000.0), (20_000, 5_000.0)] {
        let segment = s as f64 / n as f64;
        let spec = format!("ring:overhead={overhead}ns,segments=pipelined");
        let pipelined = time(&spec, n, s, hop);
        assert!(close(pipelined, steps * (2.0 * hop as f64 + segment.max(overhead))), "{s}: {pipelined}");
        let serial = time(&format!("ring:overhead={overhead}ns"), n, s, hop);
        assert!(close(serial, steps * (2.0 * hop as f64 + segment + overhead)), "{s}: {serial}");
    }
    // Folded and unfolded agree (the folded flow's rate is its share of the link).
    let mut sc = scenario(workload(&[80_000, 4_000], 1_000), 8, "ring:overhead=5us,segments=pipelined", 100);
    sc.iterations = 3;
    let folded = run(&sc);
    sc.allow_folding = false;
    assert!(close(run(&sc).iteration_time_s * 1e9, folded.iteration_time_s * 1e9));
    assert!(Strategy::parse("ps:segments=pipelined").is_err());
}

/// Four all-reduces of 40 kB on 4 workers, all ready at once: (iteration time, the time
/// of one alone), ns.
fn four_all_reduces(strategy: &str) -> (f64, f64) {
    let n = 4;
    let w = tensorwire_core::workload::collective_benchmark("allreduce:40000Bx4").unwrap();
    let mut sc = scenario(w, n, strategy, 100);
    sc.iterations = 2;
    (run(&sc).iteration_time_s * 1e9, 2.0 * (n - 1) as f64 * (200.0 + 10_000.0))
}

#[test]
fn dispatch_cost_delays_every_collective_in_series() {
    // One at a time (no credit): each of the 4 all-reduces starts `dispatch` after the
    // previous one ended. With a credit for all four, the coordinator still starts them
    // one dispatch apart, and they share the links: the last starts at 4 d.
    let (t, step) = four_all_reduces("ring:dispatch=5us");
    assert!(close(t, 4.0 * (step + 5_000.0)));
    let (t, step) = four_all_reduces("ring:dispatch=0s");
    assert!(close(t, 4.0 * step));
    let (t, step) = four_all_reduces("ring:dispatch=1ms,credit=1MB");
    assert!(close(t, 4.0 * 1e6 + step), "{t}");
    assert!(Strategy::parse("ps:dispatch=1us").is_err());
}

#[test]
fn stream_execution_runs_collectives_one_at_a_time_and_overlaps_dispatch() {
    // On a stream the four all-reduces run one after another whatever the credit, and
    // each is dispatched while the one before runs: a dispatch shorter than a collective
    // shows only before the first.
    let (t, step) = four_all_reduces("ring:execution=stream");
    assert!(close(t, 4.0 * step), "{t}");
    let (t, step) = four_all_reduces("ring:execution=stream,credit=1MB");
    assert!(close(t, 4.0 * step), "{t}");
    let (t, step) = four_all_reduces("ring:execution=stream,dispatch=5us");
    assert!(close(t, 5_000.0 + 4.0 * step), "{t}");
    // A dispatch longer than a collective paces the stream: d apart, the last ends at 4d + step.
    let (t, step) = four_all_reduces("ring:execution=stream,dispatch=1ms");
    assert!(close(t, 4.0 * 1e6 + step), "{t}");
    assert_eq!(Strategy::parse("ring:execution=stream").unwrap().limits.max_tasks, None);
    for bad in ["ps:execution=stream", "ring:execution=stream,partial=solo"] {
        assert!(Strategy::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn stream_starts_collectives_one_dispatch_apart_even_when_dispatched_early() {
    // Backward releases a 4 MB all-reduce, then four 1 kB ones while it is on the wire.
    // Their dispatches end long before the big one does, yet the stream starts them
    // one `dispatch` apart: the coordinator's per-collective cost (the runtime's CPU work
    // per collective on each host) paces the stream, it is not paid once in advance.
    // Two workers, 1 byte/ns, 100 ns hops: an all-reduce of S bytes takes S + 400 ns.
    let mut sc =
        scenario(workload(&[1000, 1000, 1000, 1000, 4_000_000], 1000), 2, "ring:execution=stream,dispatch=100us", 100);
    sc.iterations = 2;
    let (big, tiny, d) = (4_000_400.0, 1400.0, 100_000.0);
    // Forward 5 us, then the last layer's backward (2 us) releases the big one: it starts
    // one dispatch later; the tiny ones follow it one dispatch apart. The next forward
    // waits for the first layer's tensor, the last one synced.
    let t = run(&sc).iteration_time_s * 1e9;
    assert!(close(t, 7_000.0 + d + big + 3.0 * d + tiny), "{t}");
    // Without the pacing the tiny ones would have run back to back after the big one.
    assert!(t > 7_000.0 + d + big + 4.0 * tiny + 2.0 * d, "{t}");
}

#[test]
fn inflight_caps_concurrent_collectives_under_a_credit() {
    // Four equal all-reduces, all ready at once, a credit for all four: inflight=1 still
    // runs them one after another.
    let (t, step) = four_all_reduces("ring:credit=1MB,inflight=1");
    assert!(close(t, 4.0 * step));
    assert_eq!(Strategy::parse("ring:credit=1MB,inflight=2").unwrap().limits.max_tasks, Some(2));
    assert_eq!(Strategy::parse("ring:credit=1MB").unwrap().limits.max_tasks, None);
    assert!(Strategy::parse("ring:inflight=0").is_err());
}

#[test]
fn ordered_streams_queue_concurrent_collectives_per_connection() {
    // Four all-reduces in flight at once (credit for all). Fair: every ring step carries
    // the four 10 kB segments together, 6 steps of 4 x 10 us + 200 ns latency. Ordered:
    // each connection sends the segments back to back; a collective's next segment
    // queues behind the others' current ones, so the latency of a step hides behind
    // them and only the last delivery pays it: 24 x 10 us + 200 ns.
    let fair = four_all_reduces("ring:credit=1MB").0;
    assert!(close(fair, 6.0 * (4.0 * 10_000.0 + 200.0)), "{fair}");
    let ordered = four_all_reduces("ring:credit=1MB,streams=ordered").0;
    assert!(close(ordered, 24.0 * 10_000.0 + 200.0), "{ordered}");
    // One at a time, nothing waits for a connection: the same either way.
    assert!(close(four_all_reduces("ring:streams=ordered").0, four_all_reduces("ring").0));
}

#[test]
fn fusion_turns_many_all_reduces_into_one() {
    let n = 4;
    let w = tensorwire_core::workload::collective_benchmark("allreduce:40000Bx4").unwrap();
    let mut sc = scenario(w, n, "ring", 100);
    sc.iterations = 2;
    let separate = run(&sc).iteration_time_s * 1e9;
    let step = |s: f64| 2.0 * (n - 1) as f64 * (200.0 + s / n as f64);
    assert!(close(separate, 4.0 * step(40_000.0)));
    sc.strategy = Strategy::parse("ring:fusion=160000B").unwrap();
    assert!(close(run(&sc).iteration_time_s * 1e9, step(160_000.0)));
    // A buffer of half the size: two fused all-reduces.
    sc.strategy = Strategy::parse("ring:fusion=80000B").unwrap();
    assert!(close(run(&sc).iteration_time_s * 1e9, 2.0 * step(80_000.0)));
}

#[test]
fn fusion_cycle_flushes_a_partial_buffer() {
    let n = 4;
    let w = tensorwire_core::workload::collective_benchmark("allreduce:40000B").unwrap();
    let mut sc = scenario(w, n, "ring:fusion=1MB,cycle=50us", 100);
    sc.iterations = 1;
    let t = run(&sc).completions_s[0] * 1e9;
    assert!(close(t, 50_000.0 + 2.0 * (n - 1) as f64 * (200.0 + 10_000.0)), "{t}");
}

#[test]
fn priority_scheduling_lets_the_next_iteration_start_sooner() {
    // Layer 0 has a small tensor produced last; layer 1 a big one produced first.
    let mut w = workload(&[10_000, 4_000_000], 200_000);
    w.layers[1].backward = 10_000;
    // FIFO: the big all-reduce, then the small one, then the forward pass. Priority: the
    // small one jumps the queue and layer 0's forward pass (200 us) overlaps the rest.
    let fifo = run(&scenario(w.clone(), 8, "ring:partition=500KB", 100)).iteration_time_s;
    let priority = run(&scenario(w, 8, "ring:partition=500KB,schedule=priority,credit=500KB", 100)).iteration_time_s;
    assert!(((fifo - priority) - 200e-6).abs() < 1e-6, "{priority} vs {fifo}");
}

#[test]
fn symmetric_collectives_fold_to_the_same_answer() {
    let w = workload(&[4096, 100_000, 7, 65_536], 20_000);
    for strategy in ["recursive-doubling", "halving-doubling", "butterfly", "ring+multicast", "ring:fusion=100KB"] {
        for n in [2, 4, 8] {
            let mut sc = scenario(w.clone(), n, strategy, 700);
            let folded = run(&sc);
            sc.allow_folding = false;
            let full = run(&sc);
            assert!(folded.folded && !full.folded, "{strategy}");
            assert_eq!(folded.completions_s, full.completions_s, "{strategy} n={n}");
        }
    }
}

#[test]
fn transport_presets_run_the_links_at_their_measured_goodput() {
    // Ring: 2(N-1) steps of latency + the preset's per-message overhead + S/N at the
    // links' goodput. tcp: 20 us, goodput 0.544 of the line rate (nccl-tests#83); its
    // one-core copy rate (5 B/ns) is above the 1 B/ns links. rdma-optimized: 2 us, zero
    // copy, 0.96 (nccl-tests#119).
    let (n, s, hop) = (4usize, 400_000u64, 100u64);
    let step = |overhead: f64, efficiency: f64| 2.0 * hop as f64 + overhead + s as f64 / n as f64 / efficiency;
    for (preset, overhead, efficiency) in [("tcp", 20_000.0, 1.7 / 3.125), ("rdma-optimized", 2_000.0, 0.96)] {
        let t = time(&format!("ring:transport={preset}"), n, s, hop);
        let expected = 2.0 * (n - 1) as f64 * step(overhead, efficiency);
        assert!(close(t, expected), "{preset}: {t} vs {expected}");
    }
    // Overriding the overhead keeps the preset's goodput; an override alone, line rate.
    let t = time("ring:transport=tcp,overhead=0s", n, s, hop);
    assert!(close(t, 2.0 * (n - 1) as f64 * step(0.0, 1.7 / 3.125)), "{t}");
    let t = time("ring:overhead=0s", n, s, hop);
    assert!(close(t, 2.0 * (n - 1) as f64 * step(0.0, 1.0)), "{t}");
}

#[test]
fn colocated_servers_halve_the_first_iteration_of_two_workers() {
    // 2 workers, 2 sharded servers, one tensor: apart, S + L to push and S + L to pull;
    // co-located, half of each stays on the host: S/2 + L each way.
    let (s, hop) = (20_000u64, 100u64);
    let first = |spec: &str| {
        let mut sc = scenario(workload(&[s], 0), 2, spec, hop);
        sc.iterations = 1;
        run(&sc).completions_s[0] * 1e9
    };
    let l = 2.0 * hop as f64;
    assert!(close(first("ps:num_ps=2,placement=sharded"), 2.0 * s as f64 + 2.0 * l));
    assert!(close(first("ps:num_ps=2,placement=sharded,colocated=true"), s as f64 + 2.0 * l));
}

#[test]
fn a_parameter_server_run_measures_its_last_iteration_in_the_steady_state() {
    // Servers on the workers' hosts, 8 workers, one tensor, no compute: a worker pushes its
    // next iteration as soon as its pulls are in, beside the others' pulls. The last measured
    // iteration ran alone on the links (20.4 ms at 3 iterations, 23.7 at 10); the run now
    // completes the next one too, so 3 iterations give the steady state that 10 give, rank
    // 0's host sends what an iteration sends (its shard of the push off-host, S/2, and its
    // server's shard to the 7 others, 7 S/2: 4 S), and its uplink carries that per iteration.
    let s = 64u64 << 20;
    let measure = |iterations: u32| {
        let mut sc = scenario(workload(&[s], 0), 8, "ps:num_ps=2,placement=sharded,colocated=true", 2500);
        sc.bandwidth = 12.5e9;
        sc.iterations = iterations;
        let r = run(&sc);
        let up = r.link_utilization.iter().find(|(l, _)| l == "h0->sw").map(|(_, u)| *u).unwrap();
        (r.iteration_time_s, r.sent_bytes_per_worker, up * 12.5e9 * r.iteration_time_s)
    };
    let (three, ten) = (measure(3), measure(10));
    assert!((three.0 / ten.0 - 1.0).abs() < 1e-3, "{three:?} {ten:?}");
    for (_, sent, uplink) in [three, ten] {
        assert!(close(sent, 4.0 * s as f64), "{three:?} {ten:?}");
        assert!((uplink / (4.0 * s as f64) - 1.0).abs() < 1e-6, "{three:?} {ten:?}");
    }
}

#[test]
fn the_analytical_model_shows_the_sharing_it_ignores_as_utilisation_above_one() {
    // 8 workers push to and pull from one server at once: each of its links carries 8
    // tensors per iteration, which the contention-free model times as one push and one pull
    // of one tensor each, so its load is 8 / 2 = 4 times its capacity; the flow model shares
    // the link and keeps every link within it.
    let mut sc = scenario(workload(&[1_000_000], 0), 8, "ps:distribution=concurrent", 100);
    let busiest = |sc: &Scenario| run(sc).link_utilization.iter().map(|(_, u)| *u).fold(0.0, f64::max);
    sc.network = ModelKind::Analytical;
    let analytical = busiest(&sc);
    sc.network = ModelKind::Flow;
    let flow = busiest(&sc);
    assert!((analytical - 4.0).abs() < 0.01 && flow <= 1.0, "analytical {analytical}, flow {flow}");
}
