//! A GPU fabric's `transport=` (the network's transport, as `tensorwire calibrate --transport
//! tcp` writes it into a cluster file's topology): the transport of every strategy that names
//! none, and a strategy's own `transport=` over it.

mod common;
use common::*;

const RDMA: &str = "rail:node=dgx-h100";
const TCP: &str = "rail:node=dgx-h100,transport=tcp";

/// `strategy` on 16 GPUs (two DGX H100 nodes) of `topology` at its own NIC rate (1 B/ns
/// without one): four
/// tensors of 16 MiB, 100 us of forward compute each.
fn scenario_on(strategy: &str, topology: &str) -> Scenario {
    let mut sc = scenario(workload(&[16 << 20; 4], 100_000), 16, strategy, 1000);
    sc.topology = TopologySpec::parse(topology).unwrap();
    if let Ok(rate) = sc.topology.host_rate(None) {
        sc.bandwidth = rate;
    }
    sc
}

fn time(strategy: &str, topology: &str) -> f64 {
    run(&scenario_on(strategy, topology)).iteration_time_s
}

#[test]
fn a_fabric_s_transport_is_the_transport_of_every_strategy_that_names_none() {
    for (plain, named) in [
        ("ring", "ring:transport=tcp"),
        ("nccl", "nccl:transport=tcp"),
        ("ddp", "ddp:transport=tcp"),
        ("zero2", "zero2:transport=tcp"),
        ("fsdp:comm=flows", "fsdp:comm=flows,transport=tcp"),
    ] {
        let (on_tcp, named_tcp, rdma) = (time(plain, TCP), time(named, RDMA), time(plain, RDMA));
        assert!(close(on_tcp, named_tcp), "{plain}: {on_tcp} on the tcp fabric, {named_tcp} as {named}");
        // TCP's goodput (0.544 of the line rate) and its per-message costs are slower than
        // verbs wherever communication is exposed.
        assert!(on_tcp > rdma, "{plain}: tcp {on_tcp} vs rdma {rdma}");
    }
    // The strategy's own transport wins over the fabric's.
    assert!(close(time("nccl:transport=rdma", TCP), time("nccl:transport=rdma", RDMA)));
    assert!(close(time("ring:transport=rdma-optimized", TCP), time("ring:transport=rdma-optimized", RDMA)));
    // An override alone takes the fabric's preset under it (overhead=0s, tcp's goodput).
    assert!(close(time("ring:overhead=0s", TCP), time("ring:transport=tcp,overhead=0s", RDMA)));
}

#[test]
fn a_cluster_overhead_beside_a_transport_preset_is_refused_naming_the_strategy_s_option() {
    let refused = |strategy: &str, topology: &str, overhead: f64, copy: Option<f64>| {
        let mut sc = scenario_on(strategy, topology);
        (sc.per_message_overhead, sc.copy_bandwidth) = (overhead, copy);
        simulate(&sc).expect_err(strategy).to_string()
    };
    let e = refused("ring:transport=tcp", RDMA, 1e-3, None);
    assert!(e.contains("overhead") && e.contains("transport=tcp") && e.contains("overhead= in the strategy"), "{e}");
    let e = refused("ring", TCP, 1e-3, None);
    assert!(e.contains("the fabric's transport=tcp"), "{e}");
    let e = refused("ring:overhead=1us", "star", 0.0, Some(1e9));
    assert!(e.contains("copy_bandwidth") && e.contains("copy= in the strategy"), "{e}");
    // Without a transport from the strategy or the fabric, the cluster's are the transport.
    let mut sc = scenario_on("ring", RDMA);
    sc.per_message_overhead = 1e-3;
    assert!(run(&sc).iteration_time_s > time("ring", RDMA));
}
