//! Multi-GPU machines: topology-aware trees, hierarchical collectives, NVLink inside a node.

mod common;
use common::*;

fn on_nodes(w: Workload, n: usize, strategy: &str, machine: &str) -> Report {
    let mut sc = scenario(w, n, strategy, 1000);
    sc.topology = TopologySpec::parse(&format!("nodes:machine={machine}")).unwrap();
    sc.bandwidth = 12.5e9;
    sc.iterations = 2;
    run(&sc)
}

fn busy(r: &Report, pred: impl Fn(&str) -> bool) -> f64 {
    r.link_utilization.iter().filter(|(n, _)| pred(n)).map(|x| x.1).sum()
}

#[test]
fn topology_aware_trees_use_only_nvlink_inside_a_p3_16xlarge() {
    let machine = tensorwire_core::gputopo::GpuTopology::p3_16xlarge();
    // Weight of a GPU-to-GPU link named "hA->hB" (0 for NIC links).
    let weight = |name: &str| -> u32 {
        let ends: Vec<&str> = name.split("->").collect();
        match (ends[0].strip_prefix('h'), ends[1].strip_prefix('h')) {
            (Some(a), Some(b)) => machine.weight(a.parse().unwrap(), b.parse().unwrap()),
            _ => 0,
        }
    };
    let w = tensorwire_core::workload::collective_benchmark("allreduce:256KBx20").unwrap();
    let r = on_nodes(w.clone(), 8, "tree", "p3.16xlarge");
    assert_eq!(busy(&r, |n| weight(n) < 2), 0.0, "the tree used PCIe or the NIC");
    assert!(busy(&r, |n| weight(n) >= 2) > 0.0);
    // Later trees of a multi-tree may take PCIe: after two uses an NVLink's penalised
    // weight (2 x 0.7^2 = 0.98) is below PCIe's 1, as seed 003's penalty intends.
    // The rank-order ring crosses GPU pairs without NVLink (PCIe, weight 1).
    assert!(busy(&on_nodes(w, 8, "ring", "p3.16xlarge"), |n| weight(n) == 1) > 0.0);
}

#[test]
fn trees_beat_the_ring_for_many_small_keys_and_multitree_splits_large_ones() {
    let small = tensorwire_core::workload::collective_benchmark("allreduce:256KBx50").unwrap();
    let ring = on_nodes(small.clone(), 8, "ring", "p3.16xlarge").iteration_time_s;
    let tree = on_nodes(small, 8, "tree", "p3.16xlarge").iteration_time_s;
    assert!(tree < ring, "{tree} vs {ring}");
    // Below 10^7 elements `tree` uses one tree; above, every tree (seed 003).
    let below = tensorwire_core::workload::collective_benchmark("allreduce:39MB").unwrap();
    let above = tensorwire_core::workload::collective_benchmark("allreduce:41MB").unwrap();
    let (t_below, m_below) =
        (on_nodes(below.clone(), 8, "tree", "p3.16xlarge"), on_nodes(below, 8, "multitree", "p3.16xlarge"));
    assert!(m_below.iteration_time_s < 0.6 * t_below.iteration_time_s);
    let (t_above, m_above) =
        (on_nodes(above.clone(), 8, "tree", "p3.16xlarge"), on_nodes(above, 8, "multitree", "p3.16xlarge"));
    assert_eq!(t_above.completions_s, m_above.completions_s);
}

#[test]
fn the_tree_bound_counts_elements_whatever_compression_or_reduce_dtype_send() {
    // Seed 003's bound (MXNET_KVSTORE_TREE_ARRAY_BOUND) counts the array's elements: an fp32
    // array at it takes every tree, one just below it one tree, whatever compression or a
    // bf16 reduction make of its bytes on the wire (the plan shows in the flows: one tree
    // sends fewer messages). The bound read from wire bytes / 4 sent 40 MB compressed 2x
    // over one tree, slower (3.23 ms) than uncompressed over every tree (2.93 ms).
    let bound = tensorwire_core::gputopo::DEFAULT_ARRAY_BOUND as u64;
    for elements in [bound - 1_000, bound, 2 * bound] {
        let array = workload(&[4 * elements], 0);
        let plain = on_nodes(array.clone(), 8, "tree", "p3.16xlarge");
        let every_tree = on_nodes(array.clone(), 8, "multitree", "p3.16xlarge");
        assert_eq!(plain.flows == every_tree.flows, elements >= bound, "{elements} elements");
        for options in ["compression=2", "reduce_dtype=bf16", "compression=4,reduce_dtype=bf16"] {
            let fewer_bytes = on_nodes(array.clone(), 8, &format!("tree:{options}"), "p3.16xlarge");
            let what = format!("{elements} elements, tree:{options}");
            assert_eq!(fewer_bytes.flows, plain.flows, "{what}: the plan changed");
            assert!(fewer_bytes.iteration_time_s <= plain.iteration_time_s, "{what}: slower");
        }
    }
}

#[test]
fn multitree_needs_one_machine_and_says_how_many_workers_fit() {
    let mut sc = scenario(workload(&[1000], 0), 16, "multitree", 100);
    sc.topology = TopologySpec::parse("nodes:machine=dgx-a100").unwrap();
    let e = simulate(&sc).unwrap_err();
    assert_eq!(e.field(), "workers");
    assert!(
        e.to_string()
            .contains("16 is not allowed: multitree runs inside one machine and a dgx-a100 has 8 GPUs; give 8 workers"),
        "{e}"
    );
    sc.workers = 4;
    assert_eq!(simulate(&sc).unwrap_err().field(), "workers");
    sc.topology = TopologySpec::parse("leaf-spine").unwrap();
    let e = simulate(&sc).unwrap_err();
    assert_eq!(e.field(), "topology");
    assert!(e.to_string().contains("p3.16xlarge (8 GPUs), dgx-a100 (8 GPUs), pcie-8 (8 GPUs)"), "{e}");
}

#[test]
fn hierarchical_sends_across_machines_only_from_leaders() {
    let w = tensorwire_core::workload::collective_benchmark("allreduce:256KBx10").unwrap();
    let r = on_nodes(w.clone(), 32, "hierarchical", "p3.16xlarge");
    for m in 0..4 {
        for g in 0..8 {
            let up = busy(&r, |n| n == format!("h{}->nic{m}", m * 8 + g));
            assert_eq!(up > 0.0, g == 0, "machine {m} gpu {g}");
        }
    }
    let ring = on_nodes(w, 32, "ring", "p3.16xlarge");
    assert!(r.iteration_time_s < 0.5 * ring.iteration_time_s, "{} vs {}", r.iteration_time_s, ring.iteration_time_s);
}
