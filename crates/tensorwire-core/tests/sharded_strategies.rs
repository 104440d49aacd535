//! Sharded data parallelism (`sharded.rs`): byte volumes, closed forms, folding.

mod common;
use common::*;
use tensorwire_core::collectives::Collective;
use tensorwire_core::nccl;

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
    // fp32 listed: bf16 parameters halve the all-gathers and, without reduce_dtype, the
    // reduce-scatter too (PyTorch's MixedPrecision reduces in param_dtype); reduce_dtype=fp32
    // keeps the reduce-scatter at full precision.
    let v = sent("fsdp:param_dtype=bf16", &sizes, 8);
    assert!((v - 1.5 * ring).abs() < 1e-6, "{v}");
    assert_eq!(v, sent("fsdp:param_dtype=bf16,reduce_dtype=bf16", &sizes, 8));
    let v = sent("fsdp:param_dtype=bf16,reduce_dtype=fp32", &sizes, 8);
    assert!((v - (2.0 * 0.5 + 1.0) * ring).abs() < 1e-6, "{v}");
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
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "fsdp:comm=flows"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "hsdp:comm=flows"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "zero2:bucket=100000B,comm=flows"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "hsdp"),
        ("rail:node=dgx-h100,nodes_per_group=2", 32, "fsdp:communicators=2"),
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
    let mut sc = scenario(workload(&[4096, 100_000], 1000), 256, "fsdp:comm=flows", 300);
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
        ("fsdp:comm=gloo", "strategy.comm"),
        ("fsdp:communicators=3", "strategy.communicators"),
        ("fsdp:communicators=0", "strategy.communicators"),
        ("zero2:communicators=2", "strategy.communicators"),
        ("fsdp:reduce_bucket=1e6", "strategy.reduce_bucket"),
        ("fsdp:overlap_comm=true", "strategy.overlap_comm"),
        ("zero3:bucket=1MB", "strategy.bucket"),
        ("zero1:communicators=2", "strategy.communicators"),
        ("zero1:reduce_bucket=0.4", "strategy.reduce_bucket"),
        ("zero1:allgather_bucket=-5", "strategy.allgather_bucket"),
        ("zero2:overlap_comm=yes", "strategy.overlap_comm"),
        ("fsdp:compute_slowdown=-0.1", "strategy.compute_slowdown"),
        ("fsdp:compute_slowdown=11", "strategy.compute_slowdown"),
    ] {
        assert_eq!(Strategy::parse(spec).unwrap_err().field(), field, "{spec}");
    }
}

/// What NCCL's model gives for `collective` over a buffer of `bytes` on `ranks` GPUs of `topology`, ns.
fn nccl_ns(topology: &str, ranks: usize, collective: Collective, bytes: u64) -> f64 {
    let spec = TopologySpec::parse(topology).unwrap();
    let host = spec.host_rate(None).unwrap();
    let fabric = nccl::NcclFabric::from_topology(&spec, ranks, host, nccl::Transport::Rdma).unwrap();
    let choice = nccl::choose(&fabric, collective, bytes as f64, &nccl::NcclOptions::default()).unwrap();
    (choice.seconds * 1e9).round()
}

fn on_rail(sizes: &[u64], compute_ns: u64, n: usize, strategy: &str) -> Scenario {
    let mut sc = scenario(workload(sizes, compute_ns), n, strategy, 100);
    sc.topology = TopologySpec::parse(RAIL).unwrap();
    sc.bandwidth = sc.topology.host_rate(None).unwrap();
    sc.iterations = 3;
    sc
}

const RAIL: &str = "rail:node=dgx-h100";

#[test]
fn fsdp_on_a_gpu_fabric_is_timed_by_nccl_in_closed_form() {
    // One unit: AG (forward), compute f, AG (backward), compute 2f, RS; nothing overlaps,
    // so the iteration is 3f + 2 AG + RS, each from nccl::choose over the whole buffer.
    for n in [8usize, 16, 64] {
        let s = 64 << 20;
        let f = 300_000;
        let sc = on_rail(&[s], f, n, "fsdp");
        let r = run(&sc);
        let expected = 3.0 * f as f64
            + 2.0 * nccl_ns(RAIL, n, Collective::AllGather, s)
            + nccl_ns(RAIL, n, Collective::ReduceScatter, s);
        assert!(
            (r.iteration_time_s * 1e9 - expected).abs() < 2.0,
            "n={n}: {} vs {expected} ns",
            r.iteration_time_s * 1e9
        );
        assert_eq!(r.flows, 0, "no flow on this path");
        // The seeds' meaning stays on request: flows give another time.
        let flows = run(&on_rail(&[s], f, n, "fsdp:comm=flows"));
        assert!(flows.flows > 0);
        // Bytes sent per rank: nccl-tests' bus bytes, 3 (N-1)/N S.
        assert!((r.sent_bytes_per_worker - 3.0 * (n as f64 - 1.0) / n as f64 * s as f64).abs() < 1.0);
    }
}

#[test]
fn one_communicator_serialises_gathers_and_reduce_scatters_two_let_them_overlap() {
    // Without compute and without interference the iteration on one communicator is the
    // sum of every collective's NCCL time: none ever overlaps another.
    let sizes = [32 << 20, 32 << 20, 32 << 20];
    let n = 16;
    let ag = nccl_ns(RAIL, n, Collective::AllGather, 32 << 20);
    let rs = nccl_ns(RAIL, n, Collective::ReduceScatter, 32 << 20);
    let one = run(&on_rail(&sizes, 0, n, "fsdp:compute_slowdown=1e-12"));
    let serial = 3.0 * (2.0 * ag + rs);
    assert!((one.iteration_time_s * 1e9 - serial).abs() < 3.0, "{} vs {serial}", one.iteration_time_s * 1e9);
    // The default is one communicator.
    let explicit = run(&on_rail(&sizes, 0, n, "fsdp:communicators=1,compute_slowdown=1e-12"));
    assert_eq!(explicit.iteration_time_s, one.iteration_time_s);
    // Two: a unit's reduce-scatter runs while the next unit's backward all-gather does,
    // but both cross the two nodes' NICs and share them (`timed.rs`): with no compute to
    // hide behind, the network is busy for the sum of their times either way.
    let mut sc = on_rail(&sizes, 0, n, "fsdp:communicators=2,compute_slowdown=1e-12");
    sc.record_timeline = true;
    let two = run(&sc);
    assert!((two.iteration_time_s * 1e9 - serial).abs() < 10.0, "{} vs {serial}", two.iteration_time_s * 1e9);
    let ops: Vec<(f64, f64)> = two
        .timeline
        .iter()
        .filter(|s| s.kind == tensorwire_core::metrics::SpanKind::Collective)
        .map(|s| (s.start_s, s.end_s))
        .collect();
    let overlap = ops.iter().enumerate().any(|(i, a)| ops[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1));
    assert!(overlap, "two communicators overlap their collectives: {ops:?}");
    // With compute, one communicator still never beats the serial sum of its collectives.
    for f in [1_000u64, 100_000, 3_000_000] {
        let r = run(&on_rail(&sizes, f, n, "fsdp"));
        assert!(r.iteration_time_s * 1e9 >= serial - 3.0, "f={f}");
        assert!(r.iteration_time_s * 1e9 >= 9.0 * f as f64 - 3.0, "f={f}");
    }
}

#[test]
fn compute_slows_by_the_overlapped_time_while_a_collective_runs() {
    // zero2:overlap_comm=true, three layers of S, each its own bucket. A bucket is reduced
    // when the next gradient would overflow it (DeepSpeed), so layer 2's reduce-scatter
    // (t) is issued once layer 1's backward is over and runs during layer 0's (2f of
    // work), which takes 2f + t s / (1 + s); then layers 1's and 0's reduce-scatters and the
    // all-gather, in series.
    let (n, s) = (8usize, 8u64 << 20);
    let f = 2_000_000u64;
    let t_rs = nccl_ns(RAIL, n, Collective::ReduceScatter, s);
    let t_ag = nccl_ns(RAIL, n, Collective::AllGather, 3 * s);
    assert!(t_rs < 2.0 * f as f64, "the reduce-scatter ends inside the backward pass");
    let spec = |x: &str| format!("zero2:overlap_comm=true,reduce_bucket={},compute_slowdown={x}", s / 4);
    for slowdown in [0.25, 0.5, 1.0] {
        let r = run(&on_rail(&[s, s, s], f, n, &spec(&slowdown.to_string())));
        let expected = 9.0 * f as f64 + t_rs * slowdown / (1.0 + slowdown) + 2.0 * t_rs + t_ag;
        assert!(
            (r.iteration_time_s * 1e9 - expected).abs() < 3.0,
            "s={slowdown}: {} vs {expected}",
            r.iteration_time_s * 1e9
        );
    }
    // Default with NCCL: nccl::DEFAULT_COMPUTE_SLOWDOWN.
    let default = run(&on_rail(&[s, s, s], f, n, &spec("0.189").replace(",compute_slowdown=0.189", "")));
    let explicit = run(&on_rail(&[s, s, s], f, n, &spec(&nccl::DEFAULT_COMPUTE_SLOWDOWN.to_string())));
    assert_eq!(default.iteration_time_s, explicit.iteration_time_s);
    let small = run(&on_rail(&[s, s, s], f, n, &spec("1e-12")));
    assert!(default.iteration_time_s > small.iteration_time_s);
    // Default with flows: none (the seeds' meaning).
    let mut flows = scenario(workload(&[s, s], f), n, "zero2:overlap_comm=true,reduce_bucket=2097152", 100);
    flows.iterations = 3;
    let plain = run(&flows).iteration_time_s;
    flows.strategy = Strategy::parse("zero2:overlap_comm=true,reduce_bucket=2097152,comm=flows").unwrap();
    assert_eq!(run(&flows).iteration_time_s, plain);
}

#[test]
fn zero2_waits_for_each_bucket_unless_overlap_comm() {
    // DeepSpeed's default below stage 3 (overlap_comm false): the backward pass waits for
    // each bucket's reduction, so nothing of it hides (layer 1's bucket is reduced when
    // layer 0's gradient would overflow it, layer 0's at the end).
    let (n, s) = (8usize, 8u64 << 20);
    let f = 2_000_000u64;
    let t_rs = nccl_ns(RAIL, n, Collective::ReduceScatter, s);
    let t_ag = nccl_ns(RAIL, n, Collective::AllGather, 2 * s);
    let r = run(&on_rail(&[s, s], f, n, &format!("zero2:reduce_bucket={}", s / 4)));
    let expected = 6.0 * f as f64 + 2.0 * t_rs + t_ag;
    assert!((r.iteration_time_s * 1e9 - expected).abs() < 3.0, "{} vs {expected}", r.iteration_time_s * 1e9);
}
