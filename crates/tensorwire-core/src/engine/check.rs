//! Whether a strategy runs with a number of workers on a fabric, without a workload:
//! the checks a run makes before it builds its engine, in the same order and with the
//! same errors (compare, sweep and the CLI ask this of every strategy they list).

use super::scenario::check_step_durations;
use super::sharded;
use crate::collectives::{Collective, StepSchedule};
use crate::error::{Error, Result};
use crate::limits::{at_most, MAX_WORKERS};
use crate::strategy::{Family, Strategy};
use crate::topology::{Topology, TopologySpec};
use crate::units::Nanos;

/// Host link rate the check builds the fabric at, bytes/s: rates and latencies change
/// no refusal of the fabric, schedule or strategy checks (only the bounds of a run's
/// transfers, which depend on its workload, and those are a run's to check).
const NOMINAL_BYTES_PER_S: f64 = 1e9;

/// Refuses (as [`super::simulate`] would, field and message) `strategy` with `workers`
/// workers on `topology`: the checks of a run that do not depend on its workload's sizes
/// nor on its rates, in a run's order: the worker count and its memory limit, the
/// strategy's per-message durations against the simulation horizon (latency and the
/// run's overhead taken as 0), the fabric's size with the strategy's servers, the
/// fabric itself, the strategy's schedule of an all-reduce on it (e.g. `multitree`
/// only inside one multi-GPU machine) and its needs of the fabric (multicast switches,
/// in-network aggregation on a star, an `hsdp` shard group that divides the workers).
/// Builds the fabric, no engine, and simulates nothing.
///
/// A run of a workload may still be refused for what depends on it: a collective other
/// than all-reduce under a strategy that only all-reduces, pieces past the memory
/// limits, a flow budget (`max_flows`), transfers past the horizon.
pub fn check(strategy: &Strategy, topology: &TopologySpec, workers: usize) -> Result<()> {
    if workers < 1 {
        return Err(Error::invalid("workers", "must be at least 1"));
    }
    at_most("workers", workers as u64, MAX_WORKERS as u64, "workers")?;
    let overhead = match super::scenario::host_transport(strategy, topology) {
        Some(t) => ("strategy.overhead", t.overhead_s),
        None => ("per_message_overhead", 0.0),
    };
    check_step_durations(strategy, workers, ("latency", 0.0), overhead)?;
    strategy.check_workers(workers)?;
    topology.check_size(workers, strategy.servers())?;
    if let Family::Sharded(cfg) = &strategy.family {
        let topo = topology.build(workers, 0, NOMINAL_BYTES_PER_S, 0)?;
        sharded::shard_group(cfg, &topo, workers)?;
        return Ok(());
    }
    fabric(strategy, topology, Collective::AllReduce, workers, NOMINAL_BYTES_PER_S, 0).map(|_| ())
}

/// Refuses a network model other than the flow model (`analytical`) for a strategy NCCL's
/// closed-form model times on `topology` ([`Strategy::timed_by_nccl`]): it times no flow,
/// so the model would be accepted and change nothing.
pub fn network_model(strategy: &Strategy, topology: &TopologySpec, network: crate::network::ModelKind) -> Result<()> {
    if network != crate::network::ModelKind::Analytical || !strategy.timed_by_nccl(topology) {
        return Ok(());
    }
    Err(unseen_by_nccl(
        strategy,
        "network",
        "has no network model to choose (analytical applies to flows; keep network=flow, the default)",
    ))
}

/// The refusal of `field`, an option that NCCL's closed-form timing of `strategy` does not
/// see (`what` says why), naming the flow-level way to simulate it: one wording for every
/// such option ([`super::check_nccl_timed`], [`network_model`]).
pub(super) fn unseen_by_nccl(strategy: &Strategy, field: &str, what: &str) -> Error {
    let flows = if matches!(strategy.family, Family::Sharded(_)) {
        "comm=flows"
    } else {
        "a flow-level strategy (ring, hierarchical, fsdp:comm=flows)"
    };
    Error::invalid(
        field,
        format!("{} times its collectives with NCCL's model, which {what}; give {flows} to simulate it", strategy.spec),
    )
}

/// The fabric of `n` workers (and the strategy's servers) built from `topology` at
/// `bytes_per_s` per host link and `latency` ns per hop, with the step schedule of
/// `collective` under `strategy` on it (`None` for parameter servers), once the
/// strategy's needs of that fabric are met: what a run builds before its engine, in the
/// order it checks them (shared with [`check`] so that both refuse alike).
pub(super) fn fabric(
    strategy: &Strategy,
    topology: &TopologySpec,
    collective: Collective,
    n: usize,
    bytes_per_s: f64,
    latency: Nanos,
) -> Result<(Topology, Option<Box<dyn StepSchedule>>)> {
    let topo = topology.build(n, strategy.servers(), bytes_per_s, latency)?;
    let schedule = strategy.schedule(collective, topology, n, &topo)?;
    strategy.check_on_fabric(&topo)?;
    if let Family::Nccl(cfg) = &strategy.family {
        if cfg.buckets.is_some() && collective != Collective::AllReduce {
            return Err(Error::invalid(
                "strategy",
                format!("ddp all-reduces gradient buckets; run a {} microbenchmark under nccl", collective.name()),
            ));
        }
        crate::nccl::check(&nccl_fabric(cfg, topology, n, bytes_per_s)?, &cfg.options)?;
    }
    Ok((topo, schedule))
}

/// The fabric NCCL sees for `n` ranks of `topology` at `bytes_per_s` per host link, over
/// the strategy's transport, else the fabric's (`transport=tcp`: NCCL's sockets; otherwise
/// IB/RoCE verbs).
pub(super) fn nccl_fabric(
    cfg: &crate::strategy::NcclConfig,
    topology: &TopologySpec,
    n: usize,
    bytes_per_s: f64,
) -> Result<crate::nccl::NcclFabric> {
    crate::nccl::NcclFabric::from_topology(topology, n, bytes_per_s, topology.nccl_transport(cfg.transport))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(strategy: &str, topology: &str, workers: usize) -> Result<()> {
        check(&Strategy::parse(strategy).unwrap(), &TopologySpec::parse(topology).unwrap(), workers)
    }

    #[test]
    fn refuses_what_the_fabric_cannot_run_and_names_the_input() {
        // multitree runs inside one multi-GPU machine: not on a star, and on nodes only
        // with as many workers as the machine has GPUs.
        let e = checked("multitree", "star", 4).unwrap_err();
        assert_eq!(e.field(), "topology");
        assert!(e.to_string().contains("no multi-GPU machine"), "{e}");
        let e = checked("multitree", "nodes:machine=dgx-a100", 16).unwrap_err();
        assert_eq!(e.field(), "workers");
        assert!(checked("multitree", "nodes:machine=dgx-a100", 8).is_ok());
        // Multicast needs switches that replicate packets.
        let e = checked("ps+multicast", "ring", 4).unwrap_err();
        assert_eq!(e.field(), "topology");
        assert_eq!(checked("ring", "star", 0).unwrap_err().field(), "workers");
        assert_eq!(checked("hsdp:shard_group=3", "star", 8).unwrap_err().field(), "strategy.shard_group");
    }

    #[test]
    fn accepts_what_runs() {
        for n in [1, 2, 3, 8, 16] {
            assert!(checked("ring", "star", n).is_ok(), "ring on a star, {n} workers");
            assert!(checked("hierarchical", "nodes:machine=p3.16xlarge", n).is_ok(), "hierarchical on nodes, {n}");
        }
        assert!(checked("hsdp", "nodes:machine=dgx-a100", 16).is_ok());
    }

    /// Every built-in strategy on the common fabrics: `check` refuses exactly what a run of
    /// 1 KiB refuses, with the same error.
    #[test]
    fn agrees_with_a_run() {
        use crate::workload::Workload;
        let workload = Workload::one_tensor_per_layer(&[1024], 0, 0);
        for name in crate::strategy::STRATEGIES.iter().map(|s| s.name) {
            for topology in ["star", "ring", "leaf-spine", "nodes:machine=dgx-a100", "rail"] {
                for n in [1, 3, 8] {
                    let (strategy, spec) = (Strategy::parse(name).unwrap(), TopologySpec::parse(topology).unwrap());
                    let mut sc = super::super::Scenario::new(workload.clone(), n, 1e9, strategy.clone());
                    sc.topology = spec.clone();
                    sc.latency = 0.0;
                    sc.iterations = 1;
                    let run = super::super::simulate(&sc).err().map(|e| e.to_string());
                    let checked = check(&strategy, &spec, n).err().map(|e| e.to_string());
                    assert_eq!(checked, run, "{name} on {topology} with {n} workers");
                }
            }
        }
    }
}
