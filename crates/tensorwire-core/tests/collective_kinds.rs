//! Collectives other than all-reduce, through microbenchmarks: closed forms on a star
//! (path latency a = 2 hops, 1 byte/ns).

mod common;
use common::*;
use tensorwire_core::workload::collective_benchmark;

fn time(spec: &str, n: usize, strategy: &str, hop_ns: u64, fold: bool) -> f64 {
    let mut sc = scenario(collective_benchmark(spec).unwrap(), n, strategy, hop_ns);
    sc.iterations = 2;
    sc.allow_folding = fold;
    run(&sc).iteration_time_s
}

#[test]
fn ring_halves_and_pairwise_all_to_all_take_n_minus_1_steps_of_s_over_n() {
    for n in [2usize, 3, 4, 8] {
        let s = 1000 * n;
        let one = (n as f64 - 1.0) * (200.0 + 1000.0) * 1e-9; // (N-1)(a + S/(N B))
        for fold in [true, false] {
            for kind in ["reducescatter", "allgather", "alltoall"] {
                let t = time(&format!("{kind}:{s}B"), n, "ring", 100, fold);
                assert!((t - one).abs() < 1e-12, "{kind} n={n} fold={fold}: {t} vs {one}");
            }
            let ar = time(&format!("allreduce:{s}B"), n, "ring", 100, fold);
            let rs = time(&format!("reducescatter:{s}B"), n, "ring", 100, fold);
            let ag = time(&format!("allgather:{s}B"), n, "ring", 100, fold);
            assert!((ar - (rs + ag)).abs() < 1e-12, "all-reduce = reduce-scatter + all-gather, n={n}");
        }
    }
}

#[test]
fn binomial_broadcast_takes_ceil_log2_n_steps_of_s() {
    for n in [2usize, 3, 4, 5, 8] {
        let levels = (n as f64).log2().ceil();
        let t = time("broadcast:4000B", n, "tree", 100, true);
        assert!((t - levels * (200.0 + 4000.0) * 1e-9).abs() < 1e-12, "n={n}: {t}");
    }
    // A pipelined chain of P pieces: N-2+P steps of a + S/(P B).
    let (n, s) = (6usize, 4 * 1_048_576u64);
    let t = time(&format!("broadcast:{s}B"), n, "ring", 100, true);
    let expected = (n as f64 - 2.0 + 4.0) * (200.0 + s as f64 / 4.0) * 1e-9;
    assert!((t - expected).abs() < 1e-9, "{t} vs {expected}");
}

#[test]
fn hierarchical_all_gather_matches_its_two_level_formula() {
    // Leaves of G hosts with fast uplinks, analytical model: across leaves first
    // ((L-1)(a_out + S/(N B)), 4 hops), then inside each leaf ((G-1)(a_in + S/(G B)), 2 hops).
    for (g, leaves) in [(2usize, 2usize), (4, 2), (2, 4), (4, 3)] {
        let n = g * leaves;
        let s = 1200 * n as u64;
        let w = collective_benchmark(&format!("allgather:{s}B")).unwrap();
        let mut sc = scenario(w, n, &format!("hierarchical:gpus_per_node={g}"), 100);
        sc.topology = TopologySpec::parse(&format!("leaf-spine:hosts_per_leaf={g},spines=1,uplink=1000Gbps")).unwrap();
        sc.network = ModelKind::Analytical;
        sc.iterations = 2;
        let t = run(&sc).iteration_time_s;
        let (a_in, a_out) = (200.0, 400.0);
        let expected = ((leaves as f64 - 1.0) * (a_out + s as f64 / n as f64)
            + (g as f64 - 1.0) * (a_in + s as f64 / g as f64))
            * 1e-9;
        assert!((t - expected).abs() < 1e-12, "G={g} L={leaves}: {t} vs {expected}");
    }
}

#[test]
fn collectives_refuse_algorithms_and_strategies_that_cannot_run_them() {
    let sc = |spec: &str, strategy: &str| scenario(collective_benchmark(spec).unwrap(), 8, strategy, 100);
    assert_eq!(simulate(&sc("reducescatter:1MB", "tree")).unwrap_err().field(), "strategy");
    assert_eq!(simulate(&sc("broadcast:1MB", "halving-doubling")).unwrap_err().field(), "strategy");
    assert_eq!(simulate(&sc("allgather:1MB", "ps")).unwrap_err().field(), "strategy");
    assert_eq!(simulate(&sc("allgather:1MB", "fsdp")).unwrap_err().field(), "strategy");
    assert_eq!(simulate(&sc("allgather:1MB", "ring:partial=solo")).unwrap_err().field(), "strategy.partial");
    assert_eq!(
        simulate(&sc("allgather:1MB", "hierarchical:gpus_per_node=3")).unwrap_err().field(),
        "strategy.gpus_per_node"
    );
}
