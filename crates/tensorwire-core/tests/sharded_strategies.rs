//! Sharded data parallelism (`sharded.rs`): byte volumes, closed forms, folding.

mod common;
use common::*;

fn sent(strategy: &str, sizes: &[u64], n: usize) -> f64 {
    let mut sc = scenario(workload(sizes, 1000), n, strategy, 100);
    sc.iterations = 3;
    run(&sc).sent_bytes_per_worker
}

#[test]
fn fsdp_moves_three_times_the_model_and_zero_the_same_as_ddp() {
    // ZeRO paper section 7: P_os and P_os+g move 2 Psi per rank like DDP, P_os+g+p 3 Psi.
    let sizes = [8000, 16_000, 800, 40_000];
    let psi: u64 = sizes.iter().sum();
    for n in [2usize, 4, 8] {
        let ring = (n - 1) as f64 / n as f64 * psi as f64;
        let ddp = sent("ring", &sizes, n);
        assert!((ddp - 2.0 * ring).abs() < 1e-6, "n={n} ddp {ddp}");
        for zero in ["zero1", "zero2:bucket=20000B", "zero2", "fsdp:reshard_after_forward=false"] {
            assert!((sent(zero, &sizes, n) - 2.0 * ring).abs() < 1e-6, "{zero} n={n}");
        }
        let fsdp = sent("fsdp", &sizes, n);
        assert!((fsdp - 3.0 * ring).abs() < 1e-6, "n={n} fsdp {fsdp}");
        assert!((fsdp / ddp - 1.5).abs() < 1e-12);
    }
}

#[test]
fn mixed_precision_sets_the_bytes_on_the_wire() {
    let sizes = [8000, 16_000];
    let psi = 24_000.0;
    let ring = 7.0 / 8.0 * psi;
    // fp32 listed: bf16 parameters halve the all-gathers, fp32 gradients keep the reduce-scatter.
    let v = sent("fsdp:param_dtype=bf16", &sizes, 8);
    assert!((v - (2.0 * 0.5 + 1.0) * ring).abs() < 1e-6, "{v}");
    let v = sent("fsdp:param_dtype=bf16,reduce_dtype=bf16", &sizes, 8);
    assert!((v - 1.5 * ring).abs() < 1e-6, "{v}");
    let v = sent("ring:reduce_dtype=fp16", &sizes, 8);
    assert!((v - ring).abs() < 1e-6, "{v}");
    // bf16 listed (the LLM zoo): fp32 reduction doubles the gradients' bytes.
    let mut sc = scenario(workload(&sizes, 1000), 8, "zero2:reduce_dtype=fp32", 100);
    sc.workload.dtype_bytes = 2;
    let v = run(&sc).sent_bytes_per_worker;
    assert!((v - (2.0 + 1.0) * ring).abs() < 1e-6, "{v}");
}

#[test]
fn fsdp_of_one_unit_without_compute_is_three_ring_collectives_in_a_row() {
    // AG (forward), AG (backward), RS: each (N-1)(a + S/(N B)), a = 2 hops of 100 ns.
    for n in [2usize, 4, 5, 8] {
        let s = 1000 * n as u64;
        for fold in [true, false] {
            let mut sc = scenario(workload(&[s], 0), n, "fsdp:algorithm=ring", 100);
            sc.allow_folding = fold;
            sc.iterations = 3;
            let r = run(&sc);
            let expected = 3.0 * (n as f64 - 1.0) * (200.0 + 1000.0) * 1e-9;
            assert!((r.iteration_time_s - expected).abs() < 1e-12, "n={n}: {} vs {expected}", r.iteration_time_s);
            assert_eq!(r.folded, fold);
            let z = run(&Scenario { strategy: Strategy::parse("zero2:algorithm=ring").unwrap(), ..sc.clone() });
            assert!((z.iteration_time_s - expected * 2.0 / 3.0).abs() < 1e-12, "zero2 n={n}");
        }
    }
}

#[test]
fn prefetch_hides_the_gathers_behind_compute() {
    let sizes = [50_000; 6];
    let mut sc = scenario(workload(&sizes, 40_000), 8, "fsdp:prefetch=0,backward_prefetch=0", 100);
    let none = run(&sc).iteration_time_s;
    sc.strategy = Strategy::parse("fsdp").unwrap();
    let one = run(&sc).iteration_time_s;
    sc.strategy = Strategy::parse("fsdp:prefetch=2,backward_prefetch=2").unwrap();
    let two = run(&sc).iteration_time_s;
    assert!(one < none && two <= one + 1e-12, "{none} {one} {two}");
    // Compute is 6 x 120 us; with nothing to hide behind the first gather, at least that.
    assert!(one >= 6.0 * 120e-6);
}

#[test]
fn folded_and_unfolded_sharded_runs_agree() {
    let w = workload(&[4096, 100_000, 7, 65_536, 300_000], 20_000);
    let cases = [
        ("star", 8, "zero1:bucket=100000B"),
        ("star", 8, "zero2:bucket=100000B"),
        ("star", 8, "fsdp"),
        ("star", 8, "fsdp:algorithm=halving-doubling"),
        ("star", 8, "hsdp:shard_group=4"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "fsdp"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "hsdp"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "zero2:bucket=100000B"),
        ("leaf-spine:hosts_per_leaf=4,spines=2", 16, "fsdp:algorithm=hierarchical"),
    ];
    for (topology, n, strategy) in cases {
        let mut sc = scenario(w.clone(), n, strategy, 300);
        sc.topology = TopologySpec::parse(topology).unwrap();
        sc.iterations = 3;
        let folded = run(&sc);
        sc.allow_folding = false;
        let full = run(&sc);
        assert!(!full.folded);
        for (a, b) in folded.completions_s.iter().zip(&full.completions_s) {
            assert!((a - b).abs() <= 1e-9 * b.abs(), "{topology} {strategy}: {a} vs {b}");
        }
        assert!((folded.sent_bytes_per_worker - full.sent_bytes_per_worker).abs() < 1e-6, "{topology} {strategy}");
        for ((a, x), (b, y)) in folded.link_utilization.iter().zip(&full.link_utilization) {
            assert_eq!(a, b);
            assert!((x - y).abs() < 1e-9, "{topology} {strategy} {a}: {x} vs {y}");
        }
    }
}

#[test]
fn hierarchical_fsdp_folds_a_rail_fabric_to_one_node() {
    let mut sc = scenario(workload(&[4096, 100_000], 1000), 256, "fsdp", 300);
    sc.topology = TopologySpec::parse("rail:node=dgx-h100,nodes_per_group=8").unwrap();
    let r = run(&sc);
    assert!(r.folded);
    assert_eq!(r.simulated_ranks, 8, "one node's GPUs stand for all");
}

#[test]
fn shard_groups_must_divide_the_workers_and_options_must_fit_the_stage() {
    let sc = scenario(workload(&[4096], 0), 12, "hsdp:shard_group=5", 100);
    assert_eq!(simulate(&sc).unwrap_err().field(), "strategy.shard_group");
    for (spec, field) in [
        ("zero1:prefetch=2", "strategy.prefetch"),
        ("fsdp:bucket=1MB", "strategy.bucket"),
        ("fsdp:shard_group=2", "strategy.shard_group"),
        ("fsdp:partition=1MB", "strategy.partition"),
        ("zero2:schedule=priority", "strategy.schedule"),
        ("fsdp:param_dtype=int8", "strategy.param_dtype"),
    ] {
        assert_eq!(Strategy::parse(spec).unwrap_err().field(), field, "{spec}");
    }
}
