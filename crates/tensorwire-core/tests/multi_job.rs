//! Several jobs on one fabric (`jobs.rs`).

mod common;
use common::*;
use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest, ProptestConfig};
use tensorwire_core::{place_jobs, simulate_jobs, Job, JobSeat, Variability};

fn job(name: &str, w: &Workload, workers: usize, strategy: &str, hosts: Option<Vec<usize>>) -> Job {
    Job { name: name.into(), workload: w.clone(), workers, strategy: Strategy::parse(strategy).unwrap(), hosts }
}

#[test]
fn one_job_alone_gives_what_simulate_gives() {
    let w = workload(&[4096, 100_000, 7, 65_536, 300_000], 20_000);
    for (topology, strategy) in [
        ("star", "ring"),
        ("star", "halving-doubling"),
        ("star", "fsdp"),
        ("star", "zero2:bucket=100000B"),
        ("leaf-spine:hosts_per_leaf=4,spines=2", "ring"),
        // Sharded strategies take the levels of the fabric built for the job's ranks, as
        // alone (`algorithm=auto` is hierarchical on two leaves; they had run flat rings).
        ("leaf-spine:hosts_per_leaf=4,spines=2", "fsdp"),
        ("leaf-spine:hosts_per_leaf=4,spines=2", "zero3:algorithm=hierarchical"),
        ("leaf-spine:hosts_per_leaf=4,spines=2", "hsdp"),
    ] {
        let mut sc = scenario(w.clone(), 8, strategy, 300);
        sc.topology = TopologySpec::parse(topology).unwrap();
        sc.iterations = 3;
        let alone = run(&sc);
        let jobs = simulate_jobs(&sc, &[job("a", &w, 8, strategy, None)], "packed").unwrap();
        assert_eq!(jobs[0].completions_s, alone.completions_s, "{topology} {strategy}");
        assert!((jobs[0].sent_bytes_per_worker - alone.sent_bytes_per_worker).abs() < 1e-6);
    }
}

#[test]
fn a_job_of_any_strategy_alone_gives_what_simulate_gives() {
    // Parameter servers (the fabric's hosts after the workers' are the servers', as the
    // topology numbers them alone) and the gradient scheduler's options, with a straggler.
    let w = workload(&[4096, 100_000, 7, 65_536, 300_000], 20_000);
    for strategy in [
        "ps:num_ps=2",
        "ps:num_ps=3,placement=balanced,barrier=false",
        "ps:num_ps=2,placement=sharded",
        "ps+multicast:num_ps=2",
        "ps+ina:switch_memory=100000B",
        "ps:pipeline=50000B,credit=100000B",
        "ring:schedule=priority,partition=50000B,credit=100000B",
        "ring:fusion=100KB",
        "ring:partial=majority",
        "halving-doubling:execution=stream,dispatch=5us",
    ] {
        let mut sc = scenario(w.clone(), 6, strategy, 300);
        sc.iterations = 3;
        sc.variability = Variability::Slowdowns(vec![1.0, 1.0, 2.0, 1.0, 1.0, 1.0]);
        let alone = run(&sc);
        let mut fabric = sc.clone();
        fabric.workers = 6 + sc.strategy.servers();
        let jobs = simulate_jobs(&fabric, &[job("a", &w, 6, strategy, None)], "packed").unwrap();
        assert_eq!(jobs[0].completions_s, alone.completions_s, "{strategy}");
        assert_eq!(jobs[0].sent_bytes_per_worker, alone.sent_bytes_per_worker, "{strategy}");
        if !alone.folded {
            assert_eq!(jobs[0].flows, alone.flows, "{strategy}");
        }
    }
}

#[test]
fn a_parameter_server_job_and_a_ring_job_share_the_fabric() {
    // On a star only the hosts' own links carry traffic, so two jobs on their own hosts do
    // not meet: each runs as alone. Put a ring job's workers on the servers' leaf of a
    // leaf-spine with one thin spine, and both slow down.
    let w = workload(&[40_000, 100_000], 2_000);
    let mut fabric = scenario(w.clone(), 10, "ring", 100);
    fabric.iterations = 3;
    let ps = job("ps", &w, 4, "ps:num_ps=2", None);
    let ring = job("ring", &w, 4, "ring", None);
    let both = simulate_jobs(&fabric, &[ps.clone(), ring.clone()], "packed").unwrap();
    let ps_alone = simulate_jobs(&fabric, std::slice::from_ref(&ps), "packed").unwrap();
    let ring_alone = simulate_jobs(&fabric, std::slice::from_ref(&ring), "packed").unwrap();
    assert_eq!(both[0].completions_s, ps_alone[0].completions_s);
    // On the star the ring's hosts are 6 to 9 together but 0 to 3 alone: same times.
    assert_eq!(both[1].completions_s, ring_alone[0].completions_s);
    // Leaf 0 holds hosts 0 to 4, leaf 1 hosts 5 to 9, one spine at the host rate: the
    // pushes of workers 0 to 3 to servers 5 and 6 and the ring over 4, 7, 8, 9 (its hops
    // 4 -> 7 and 9 -> 4) both cross the spine.
    fabric.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=5,spines=1,uplink=8Gbps").unwrap();
    let ps = job("ps", &w, 4, "ps:num_ps=2", Some(vec![0, 1, 2, 3, 5, 6]));
    let ring = job("ring", &w, 4, "ring", Some(vec![4, 7, 8, 9]));
    let both = simulate_jobs(&fabric, &[ps.clone(), ring.clone()], "packed").unwrap();
    let ps_alone = simulate_jobs(&fabric, &[ps], "packed").unwrap();
    let ring_alone = simulate_jobs(&fabric, &[ring], "packed").unwrap();
    assert!(both[0].iteration_time_s > ps_alone[0].iteration_time_s * 1.05);
    assert!(both[1].iteration_time_s > ring_alone[0].iteration_time_s * 1.05);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// On a star no two jobs share a link, so each job of a multi-job run reports
    /// what it reports alone on the same hosts (random jobs of every family, sizes and
    /// placements): completions, communication time, bytes and flows of its own ranks,
    /// whatever its index in the run.
    #[test]
    fn jobs_that_share_no_link_each_report_what_they_report_alone(
        specs in prop::collection::vec(
            (prop::sample::select(vec![
                "ring", "ring:schedule=priority,partition=30000B", "ps:num_ps=2", "ps+multicast",
                "ps:placement=sharded,num_ps=2", "halving-doubling", "fsdp", "zero2:bucket=50000B",
            ]), 2usize..5),
            1..4,
        ),
        sizes in prop::collection::vec(1u64..200_000, 1..4),
        placement in prop::sample::select(vec!["packed", "spread", "random"]),
        spare in 0usize..3,
        seed in 0u64..1000,
    ) {
        let w = workload(&sizes, 3_000);
        let jobs: Vec<Job> = specs.iter().enumerate().map(|(i, (s, n))| job(&format!("j{i}"), &w, *n, s, None)).collect();
        let seats: Vec<JobSeat<'_>> = jobs.iter().map(JobSeat::from).collect();
        let hosts = seats.iter().map(JobSeat::hosts_needed).sum::<usize>() + spare;
        let mut fabric = scenario(w.clone(), hosts, "ring", 300);
        fabric.iterations = 3;
        fabric.seed = seed;
        let placed = place_jobs(&fabric.topology, hosts, placement, seed, &seats).unwrap();
        let together = simulate_jobs(&fabric, &jobs, placement).unwrap();
        for (i, (j, h)) in jobs.iter().zip(placed).enumerate() {
            let alone = Job { hosts: Some(h), ..j.clone() };
            // Alone, job i is job 0: its seed is the fabric's + 0, so give it the same draw.
            let mut own = fabric.clone();
            own.seed = seed.wrapping_add(i as u64);
            let alone = &simulate_jobs(&own, &[alone], "packed").unwrap()[0];
            let r = &together[i];
            let what = format!("job {i} of {specs:?}, {placement}, sizes {sizes:?}");
            prop_assert_eq!(&r.completions_s, &alone.completions_s, "{}", what);
            // Parameter-server workers run ahead of the slowest: by a job's last measured
            // completion, beside jobs that keep it running, they may have started pushes of
            // the next iteration (counted; alone the run ends before them).
            if j.strategy.servers() > 0 {
                prop_assert!(r.flows >= alone.flows, "{}", what);
            } else {
                prop_assert_eq!(r.flows, alone.flows, "{}", what);
            }
            prop_assert!((r.comm_time_s - alone.comm_time_s).abs() < 1e-12, "{}: comm {} vs {}", what, r.comm_time_s, alone.comm_time_s);
            prop_assert!((r.sent_bytes_per_worker - alone.sent_bytes_per_worker).abs() < 1e-6, "{}", what);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// `topology::contention` is sound for the flow model: where it finds no link that two
    /// jobs' traffic could load past its capacity, for any job, every flow-level job
    /// reports what it reports alone on the same hosts (random jobs, placements and
    /// fabrics, contended ones included: there nothing is asserted). This is what lets a
    /// job timed by NCCL's model, with no flows, run beside others.
    #[test]
    fn jobs_without_contention_each_report_what_they_report_alone(
        specs in prop::collection::vec(
            (prop::sample::select(vec!["ring", "halving-doubling", "fsdp"]), 2usize..7),
            2..4,
        ),
        topology in prop::sample::select(vec![
            "leaf-spine:hosts_per_leaf=4,spines=2",
            "leaf-spine:hosts_per_leaf=4,spines=2,uplink=32Gbps",
            "leaf-spine:hosts_per_leaf=3,spines=1",
            "nodes:machine=pcie-8",
            "nodes:machine=dgx-a100",
        ]),
        sizes in prop::collection::vec(1u64..400_000, 1..3),
        placement in prop::sample::select(vec!["packed", "spread", "random"]),
        seed in 0u64..1000,
    ) {
        let w = workload(&sizes, 3_000);
        let jobs: Vec<Job> = specs.iter().enumerate().map(|(i, (s, n))| job(&format!("j{i}"), &w, *n, s, None)).collect();
        let seats: Vec<JobSeat<'_>> = jobs.iter().map(JobSeat::from).collect();
        let hosts = seats.iter().map(JobSeat::hosts_needed).sum::<usize>();
        let mut fabric = scenario(w.clone(), hosts, "ring", 300);
        fabric.topology = TopologySpec::parse(topology).unwrap();
        fabric.iterations = 3;
        fabric.seed = seed;
        let placed = place_jobs(&fabric.topology, hosts, placement, seed, &seats).unwrap();
        let topo = fabric.topology.build(hosts, 0, fabric.bandwidth, 0).unwrap();
        let any = vec![tensorwire_core::topology::Traffic::AnyPair; jobs.len()];
        if (0..jobs.len()).any(|i| tensorwire_core::topology::contention(&topo, &placed, &any, i).is_some()) {
            return Ok(());
        }
        let together = simulate_jobs(&fabric, &jobs, placement).unwrap();
        for (i, (j, h)) in jobs.iter().zip(placed).enumerate() {
            let mut own = fabric.clone();
            own.seed = seed.wrapping_add(i as u64);
            let alone = &simulate_jobs(&own, &[Job { hosts: Some(h), ..j.clone() }], "packed").unwrap()[0];
            let what = format!("job {i} of {specs:?} on {topology}, {placement}, sizes {sizes:?}");
            prop_assert_eq!(&together[i].completions_s, &alone.completions_s, "{}", what);
        }
    }
}

#[test]
fn two_jobs_on_one_bottleneck_link_each_get_half_its_rate() {
    // Two leaves of two hosts, one spine at the host rate. Job a on hosts 0 and 2, job b
    // on 1 and 3: both rings cross leaf0 -> spine -> leaf1 (and back) at every step, so
    // each message gets half the rate: 2(N-1)(a + S/(N B/2)) with N = 2, a = 4 hops.
    let s = 2000u64;
    let w = workload(&[s], 0);
    let mut fabric = scenario(w.clone(), 4, "ring", 100);
    fabric.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps").unwrap();
    fabric.iterations = 3;
    let a = job("a", &w, 2, "ring", Some(vec![0, 2]));
    let b = job("b", &w, 2, "ring", Some(vec![1, 3]));
    let together = simulate_jobs(&fabric, &[a.clone(), b], "packed").unwrap();
    let alone = simulate_jobs(&fabric, &[a], "packed").unwrap();
    let expected = |rate: f64| 2.0 * (400.0 + s as f64 / 2.0 / rate) * 1e-9;
    assert!((alone[0].iteration_time_s - expected(1.0)).abs() < 1e-12, "{}", alone[0].iteration_time_s);
    for r in &together {
        assert!((r.iteration_time_s - expected(0.5)).abs() < 1e-12, "{}", r.iteration_time_s);
    }
    // spread placement does the same without naming hosts.
    let spread =
        simulate_jobs(&fabric, &[job("a", &w, 2, "ring", None), job("b", &w, 2, "ring", None)], "spread").unwrap();
    assert_eq!(spread[0].completions_s, together[0].completions_s);
}

#[test]
fn a_longer_job_is_measured_beside_the_shorter_one_whatever_the_iterations() {
    // The layout above, job b moving 10 times job a's bytes: a finishes its measured
    // iterations long before b, and goes on as background load, so b's slowdown is the
    // same at 3 and 10 iterations (about 2x: half the spine's rate) instead of 1.00x
    // once b's measured iterations would run alone.
    let small = workload(&[2000], 0);
    let large = workload(&[20_000], 0);
    let mut fabric = scenario(small.clone(), 4, "ring", 100);
    fabric.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps").unwrap();
    let a = job("a", &small, 2, "ring", Some(vec![0, 2]));
    let b = job("b", &large, 2, "ring", Some(vec![1, 3]));
    let slowdowns = |iterations: u32| {
        let mut fabric = fabric.clone();
        fabric.iterations = iterations;
        let together = simulate_jobs(&fabric, &[a.clone(), b.clone()], "packed").unwrap();
        let a_alone = &simulate_jobs(&fabric, std::slice::from_ref(&a), "packed").unwrap()[0];
        let b_alone = &simulate_jobs(&fabric, std::slice::from_ref(&b), "packed").unwrap()[0];
        // Each report covers its own measured iterations only.
        assert_eq!(together[0].completions_s.len(), iterations as usize);
        assert_eq!(together[1].completions_s.len(), iterations as usize);
        assert_eq!(together[1].flows, b_alone.flows);
        assert!((together[1].sent_bytes_per_worker - b_alone.sent_bytes_per_worker).abs() < 1e-6);
        (
            together[0].iteration_time_s / a_alone.iteration_time_s,
            together[1].iteration_time_s / b_alone.iteration_time_s,
        )
    };
    let (a3, b3) = slowdowns(3);
    let (a10, b10) = slowdowns(10);
    for (s3, s10) in [(a3, a10), (b3, b10)] {
        assert!(s3 > 1.5 && s10 > 1.5, "{s3} {s10}");
        assert!((s3 / s10 - 1.0).abs() < 0.02, "{s3} vs {s10}");
    }
}

#[test]
fn a_job_up_to_the_background_bound_faster_loads_the_other_all_along_and_past_it_says_so() {
    // The layout above. b moving 30 or 60 times a's bytes (a runs about that many
    // iterations to b's one, past the old bound of 16): a is background load for all of
    // b's measured iterations, so b's slowdown is what it is at 10 times (1.68x: the spine
    // shared, less a's gaps between steps) and its report names no stop (at 30 times the
    // old bound gave less). At 300 times (past BACKGROUND_FACTOR) a stops before b's
    // window ends, and b's report says when (its slowdown is then a lower bound).
    let small = workload(&[2000], 0);
    let mut fabric = scenario(small.clone(), 4, "ring", 100);
    fabric.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps").unwrap();
    fabric.iterations = 3;
    let a = job("a", &small, 2, "ring", Some(vec![0, 2]));
    let run = |times: u64| {
        let large = workload(&[2000 * times], 0);
        let b = job("b", &large, 2, "ring", Some(vec![1, 3]));
        let together = simulate_jobs(&fabric, &[a.clone(), b.clone()], "packed").unwrap();
        let b_alone = simulate_jobs(&fabric, std::slice::from_ref(&b), "packed").unwrap().remove(0);
        assert_eq!(b_alone.background_stopped_s, None);
        (together[0].background_stopped_s, together[1].clone(), together[1].iteration_time_s / b_alone.iteration_time_s)
    };
    let (_, _, all_along) = run(10);
    for times in [30, 60] {
        let (a_stop, b, slowdown) = run(times);
        assert_eq!((a_stop, b.background_stopped_s), (None, None), "{times}");
        assert!((slowdown / all_along - 1.0).abs() < 0.03, "{times}: {slowdown} vs {all_along}");
    }
    let (a_stop, b, slowdown) = run(300);
    assert_eq!(a_stop, None, "b ran all along");
    let stop = b.background_stopped_s.expect("a stopped as background load before b's window ended");
    assert!(stop < *b.completions_s.last().unwrap(), "{stop} {:?}", b.completions_s);
    assert!(slowdown < all_along - 0.1, "{slowdown} vs {all_along}");
}

/// The up-front estimate's count in a refusal (`... need(s) about N flows`), where N is
/// below a million (written out in full).
fn estimated(e: &tensorwire_core::Error) -> u64 {
    let text = e.to_string();
    let after = text.split(" about ").nth(1).unwrap_or_else(|| panic!("{text}"));
    after.split(' ').next().unwrap().parse().unwrap_or_else(|_| panic!("{text}"))
}

#[test]
fn jobs_whose_measured_iterations_pass_the_budget_are_refused_before_running() {
    // Each job's measured iterations are estimated as `simulate` estimates the job alone,
    // unfolded (jobs sharing a fabric never fold): their sum over the budget is refused up
    // front, naming each job's share. The background iterations are the running check's.
    let w = workload(&[40_000, 100_000, 7], 2_000);
    let mut fabric = scenario(w.clone(), 12, "ring", 100);
    fabric.iterations = 3;
    let jobs = [
        job("a", &w, 4, "ring", None),
        job("b", &w, 4, "halving-doubling", None),
        job("c", &w, 3, "ps:num_ps=1", None),
    ];
    let alone: Vec<u64> = jobs
        .iter()
        .map(|j| {
            let mut sc = scenario(w.clone(), j.workers, &j.strategy.spec, 100);
            sc.iterations = 3;
            (sc.allow_folding, sc.allow_lanes, sc.max_flows) = (false, false, Some(1));
            estimated(&simulate(&sc).unwrap_err())
        })
        .collect();
    fabric.max_flows = Some(1);
    let e = simulate_jobs(&fabric, &jobs, "packed").unwrap_err();
    assert_eq!(e.field(), "max_flows");
    let text = e.to_string();
    assert!(text.contains(&format!("(a {}, b {}, c {})", alone[0], alone[1], alone[2])), "{text}");
    assert_eq!(estimated(&e), alone.iter().sum::<u64>(), "{text}");
    // At the estimate the up-front check passes (the running check, which counts the
    // background iterations too, may still stop the run: then it says so differently).
    fabric.max_flows = Some(alone.iter().sum());
    if let Err(e) = simulate_jobs(&fabric, &jobs, "packed") {
        assert!(!e.to_string().contains("measured iterations need"), "{e}");
    }
}

#[test]
fn bad_jobs_name_the_field() {
    let w = workload(&[4096], 1000);
    let fabric = scenario(w.clone(), 4, "ring", 100);
    let err = |jobs: &[Job]| simulate_jobs(&fabric, jobs, "packed").unwrap_err().field().to_string();
    assert_eq!(err(&[job("a", &w, 3, "ring", None), job("b", &w, 2, "ring", None)]), "workers");
    assert_eq!(
        err(&[job("a", &w, 2, "ring", Some(vec![0, 1])), job("b", &w, 2, "ring", Some(vec![1, 2]))]),
        "jobs[1].hosts"
    );
    assert_eq!(err(&[job("a", &w, 2, "ring", None), job("a", &w, 2, "ring", None)]), "jobs[1].name");
    assert_eq!(err(&[job("a", &w, 0, "ring", None)]), "jobs[0].workers");
    // A parameter-server job takes a host per server: 2 workers + 4 servers do not fit 4
    // hosts, and fixed hosts are one per worker, then one per server.
    assert_eq!(err(&[job("a", &w, 2, "ps:num_ps=4", None)]), "workers");
    let e = simulate_jobs(&fabric, &[job("a", &w, 2, "ps", Some(vec![0, 1]))], "packed").unwrap_err();
    assert_eq!(e.field(), "jobs[0].hosts");
    assert!(e.to_string().contains("2 workers and 1 servers"), "{e}");
    // What the job's strategy needs of itself and of the fabric.
    assert_eq!(err(&[job("a", &w, 2, "ps+ina:switch_memory=1MB,credit=1MB", None)]), "jobs[0].strategy.credit");
    let mut rack = fabric.clone();
    rack.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=2,spines=1").unwrap();
    assert_eq!(simulate_jobs(&rack, &[job("a", &w, 2, "ps+ina", None)], "packed").unwrap_err().field(), "topology");
    // A flow-level HSDP job's shard group must divide its own workers (3 does not divide 4).
    assert_eq!(err(&[job("a", &w, 4, "hsdp:comm=flows,shard_group=3", None)]), "jobs[0].strategy.shard_group");
    assert_eq!(err(&[]), "jobs");
    assert_eq!(simulate_jobs(&fabric, &[job("a", &w, 2, "ring", None)], "diagonal").unwrap_err().field(), "placement");
}

/// `strategy` on `workers` GPUs of `topology` at its NICs' rate, 3 iterations, 1 us hops.
fn gpu_scenario(w: &Workload, workers: usize, strategy: &str, topology: &str) -> Scenario {
    let spec = TopologySpec::parse(topology).unwrap();
    let mut sc = Scenario::new(w.clone(), workers, spec.host_rate(None).unwrap(), Strategy::parse(strategy).unwrap());
    sc.topology = spec;
    sc.latency = 1e-6;
    sc.iterations = 3;
    sc
}

/// Each of `strategies` as a 16-GPU job beside the others on `topology` (packed, so in
/// rail groups of their own with `nodes_per_group=2`), against each alone.
fn beside_and_alone(topology: &str, strategies: &[&str]) -> Vec<(Report, Report)> {
    let w = workload(&[4 << 20, 100_000, 16 << 20, 65_536], 200_000);
    let fabric = gpu_scenario(&w, 16 * strategies.len(), "ring", topology);
    let jobs: Vec<Job> = strategies.iter().enumerate().map(|(i, s)| job(&format!("j{i}"), &w, 16, s, None)).collect();
    let beside = simulate_jobs(&fabric, &jobs, "packed").unwrap();
    strategies.iter().zip(beside).map(|(s, b)| (b, run(&gpu_scenario(&w, 16, s, topology)))).collect()
}

#[test]
fn nccl_timed_jobs_on_links_of_their_own_take_their_alone_time() {
    // Rail groups of 2 DGX H100: each 2-node job has its leaves to itself, so no link
    // carries two jobs' traffic, and NCCL-timed jobs (no flows) are exact beside any
    // other: each reports its alone time, as do flow-level jobs beside them.
    for (topology, strategies) in [
        ("rail:node=dgx-h100,nodes_per_group=2", &["ddp", "nccl"][..]),
        ("rail:node=dgx-h100,nodes_per_group=2", &["ring", "ddp"][..]),
        ("rail:node=dgx-h100,nodes_per_group=2", &["fsdp:comm=nccl", "ddp", "hierarchical"][..]),
        // One rail group, but one spine whose links carry each leaf's NICs: shared
        // leaves, never limiting.
        ("rail:node=dgx-h100,spines=1", &["ddp", "ring", "zero3:comm=nccl"][..]),
        // One rail group of 4 or 6 nodes on the default 4 or 6 spines at one NIC each, or
        // oversubscribed: NCCL-timed jobs within it keep to their rails (rail-aligned
        // channels, PXN), so they load no spine link, whatever the spines' rate.
        ("rail:node=dgx-h100", &["ddp", "ddp"][..]),
        ("rail:node=dgx-h100", &["nccl", "ddp", "fsdp:comm=nccl"][..]),
        ("rail:node=dgx-h100,spines=1,oversubscription=2", &["nccl", "zero3:comm=nccl"][..]),
    ] {
        for (i, (beside, alone)) in beside_and_alone(topology, strategies).into_iter().enumerate() {
            let s = strategies[i];
            assert!(alone.iteration_time_s > 0.0);
            assert!(close(beside.iteration_time_s, alone.iteration_time_s), "{topology} {s}: {beside:?} {alone:?}");
            assert_eq!(beside.completions_s.len(), alone.completions_s.len(), "{topology} {s}");
            for (b, a) in beside.completions_s.iter().zip(&alone.completions_s) {
                assert!(close(*b, *a), "{topology} {s}: {b} vs {a}");
            }
            assert!(close(beside.sent_bytes_per_worker, alone.sent_bytes_per_worker), "{topology} {s}");
        }
    }
}

#[test]
fn a_timed_job_beside_a_flow_level_job_in_its_rail_group_takes_its_alone_time() {
    // The ring job's flows cross the spine links of every leaf (4 spines at one NIC each);
    // the ddp job's channels keep to its rails, so nothing of it meets them.
    let mut pairs = beside_and_alone("rail:node=dgx-h100", &["ring", "ddp"]).into_iter();
    let (_, (beside, alone)) = (pairs.next(), pairs.next().unwrap());
    assert!(alone.iteration_time_s > 0.0);
    assert!(close(beside.iteration_time_s, alone.iteration_time_s), "{beside:?} {alone:?}");
    for (b, a) in beside.completions_s.iter().zip(&alone.completions_s) {
        assert!(close(*b, *a), "{b} vs {a}");
    }
}

#[test]
fn nccl_timed_jobs_that_could_meet_on_a_link_are_refused_saying_where() {
    let w = workload(&[4 << 20], 200_000);
    // Rail groups of 2 nodes (6 nodes): job `span` on nodes 1 and 2 (groups 0 and 1) sends
    // over the spines between its groups; job `other` on nodes 0 and 4 shares group 0's
    // leaves with it, each spine link below their 2 NICs' rate.
    let span: Vec<usize> = (8..24).collect();
    let other: Vec<usize> = (0..8).chain(32..40).collect();
    for (topology, strategies, timed) in [
        ("rail:node=dgx-h100,nodes_per_group=2", ["ddp", "ring"], 0),
        ("rail:node=dgx-h100,nodes_per_group=2,spines=1,oversubscription=2", ["fsdp:comm=nccl", "ring"], 0),
        ("rail:node=dgx-h100,nodes_per_group=2,spines=1,oversubscription=2", ["nccl", "ddp"], 0),
        ("rail:node=dgx-h100,nodes_per_group=2,spines=1,oversubscription=2", ["ring", "ddp"], 1),
    ] {
        let fabric = gpu_scenario(&w, 48, "ring", topology);
        let hosts = [&span, &other];
        let jobs: Vec<Job> = strategies
            .iter()
            .enumerate()
            .map(|(i, s)| job(&format!("j{i}"), &w, 16, s, Some(hosts[i].clone())))
            .collect();
        let e = simulate_jobs(&fabric, &jobs, "packed").unwrap_err();
        assert_eq!(e.field(), format!("jobs[{timed}].strategy"), "{topology} {strategies:?}");
        assert!(e.to_string().contains("the spine links of leaf0.0"), "{e}");
    }
    // Flow-level jobs alone meet on the links as flows: not refused.
    let fabric = gpu_scenario(&w, 32, "ring", "rail:node=dgx-h100");
    let jobs = [job("a", &w, 16, "ring", None), job("b", &w, 16, "fsdp", None)];
    assert!(simulate_jobs(&fabric, &jobs, "packed").is_ok());
}

#[test]
fn a_jobs_straggler_compute_counts_its_measured_iterations_only() {
    // Job a measures 3 iterations, then runs on as background load while the longer job b
    // measures. Its compute with lognormal stragglers is the mean over its measured
    // iterations of the slowest draw, whatever b's length: it averaged the background
    // iterations' draws too, so it changed with the job beside it.
    let short = workload(&[100_000], 20_000);
    let compute = |b_compute: u64| {
        let long = workload(&[100_000], b_compute);
        let mut sc = scenario(short.clone(), 8, "ring", 300);
        sc.iterations = 3;
        sc.variability = Variability::LogNormal { sigma: 0.3 };
        sc.seed = 7;
        let jobs =
            [job("a", &short, 4, "ring", Some(vec![0, 1, 2, 3])), job("b", &long, 4, "ring", Some(vec![4, 5, 6, 7]))];
        simulate_jobs(&sc, &jobs, "packed").unwrap()[0].compute_time_s
    };
    let (near, far) = (compute(40_000), compute(400_000));
    assert!((near - far).abs() <= 1e-12 * near, "{near} vs {far}");
}
