//! The all-reduce algorithms as data, and what each runs: the step schedule for every
//! collective kind, and the topology-free schedule a runtime executes. The [`Algorithm`]
//! enum and its names are generated from one list, every `match` over it is exhaustive
//! (no fallback arm), and the strategy table (`STRATEGIES`, field `kind`) names the
//! algorithm of each all-reduce strategy, so adding an algorithm is: a variant here with
//! its name, its arms below (the compiler lists them), its schedule in `collectives/`,
//! and a row in `STRATEGIES`.

use super::sharded::Stage;
use super::Strategy;
use crate::collectives::{
    AllGather, BinomialBroadcast, BinomialTree, ChainBroadcast, Collective, DoubleBinaryTree, GpuTrees,
    HalvingDoubling, Hierarchical, LevelPhase, Levels, PairwiseAllToAll, RecursiveDoubling, ReduceScatter, Ring,
    RingMulticast, StepSchedule,
};
use crate::error::{Error, Result};
use crate::topology::{Topology, TopologySpec};

/// Declares [`Algorithm`] with each variant's spec name, so a variant cannot exist without
/// a name and [`Algorithm::ALL`] cannot miss one.
macro_rules! algorithms {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// All-reduce algorithms.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Algorithm {
            $($(#[$doc])* $variant,)*
        }

        impl Algorithm {
            /// Every algorithm, in declaration order.
            pub const ALL: &'static [Algorithm] = &[$(Algorithm::$variant,)*];

            /// Its name, as written in a strategy spec.
            pub fn name(self) -> &'static str {
                match self {
                    $(Algorithm::$variant => $name,)*
                }
            }
        }
    };
}

algorithms! {
    /// Ring reduce-scatter + all-gather.
    Ring = "ring",
    /// Ring reduce-scatter + multicast all-gather.
    RingMulticast = "ring+multicast",
    /// Recursive doubling, tensors pipelined (seed 000's butterfly mixing).
    Butterfly = "butterfly",
    /// Recursive doubling, one collective at a time.
    RecursiveDoubling = "recursive-doubling",
    /// Rabenseifner.
    HalvingDoubling = "halving-doubling",
    /// Binomial reduce + broadcast (topology-aware inside one multi-GPU machine).
    Tree = "tree",
    /// Seed 003's multi-tree inside one multi-GPU machine.
    MultiTree = "multitree",
    /// Double binary tree, pipelined.
    DoubleTree = "double-tree",
    /// Reduce inside machines, ring across, broadcast inside.
    Hierarchical = "hierarchical",
}

/// What a strategy is, as data in its table row (`StrategyInfo::kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Parameter servers, with or without multicast distribution and in-network aggregation.
    ParameterServer {
        /// Each parameter sent once, replicated by the switch.
        multicast: bool,
        /// Aggregation in the switch.
        ina: bool,
    },
    /// An all-reduce among the workers by this algorithm.
    AllReduce(Algorithm),
    /// Sharded data parallelism under these rules.
    Sharded(Stage),
    /// Collectives as NCCL runs them (`crate::nccl`): `nccl`, or PyTorch DDP's buckets.
    Nccl {
        /// DDP's buckets rather than one collective per tensor.
        ddp: bool,
    },
}

impl Algorithm {
    /// The algorithm named `name`, if any.
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.iter().copied().find(|a| a.name() == name)
    }

    /// Whether it needs switches that replicate packets (multicast).
    pub fn multicast(self) -> bool {
        match self {
            Algorithm::RingMulticast => true,
            Algorithm::Ring
            | Algorithm::Butterfly
            | Algorithm::RecursiveDoubling
            | Algorithm::HalvingDoubling
            | Algorithm::Tree
            | Algorithm::MultiTree
            | Algorithm::DoubleTree
            | Algorithm::Hierarchical => false,
        }
    }

    /// The step schedule a runtime executes, which needs no fabric (`None`: the algorithm
    /// follows a machine's links or levels, so it has none without a topology).
    pub fn runtime_schedule(self) -> Option<Box<dyn StepSchedule>> {
        Some(match self {
            Algorithm::Ring => Box::new(Ring),
            Algorithm::RingMulticast => Box::new(RingMulticast),
            Algorithm::Butterfly | Algorithm::RecursiveDoubling => Box::new(RecursiveDoubling),
            Algorithm::HalvingDoubling => Box::new(HalvingDoubling),
            Algorithm::Tree => Box::new(BinomialTree),
            Algorithm::DoubleTree => Box::new(DoubleBinaryTree),
            Algorithm::MultiTree | Algorithm::Hierarchical => return None,
        })
    }

    /// The all-reduce's step schedule for `n` ranks on `topo`, built from `topology`
    /// (inside one multi-GPU machine, trees follow its links: seed 003).
    pub fn allreduce(
        self,
        strategy: &Strategy,
        topology: &TopologySpec,
        n: usize,
        topo: &Topology,
    ) -> Result<Box<dyn StepSchedule>> {
        let machine = topology.machine().filter(|m| m.gpus() == n);
        Ok(match (self, &machine) {
            (Algorithm::Ring, _) => Box::new(Ring),
            (Algorithm::RingMulticast, _) => Box::new(RingMulticast),
            (Algorithm::Butterfly | Algorithm::RecursiveDoubling, _) => Box::new(RecursiveDoubling),
            (Algorithm::HalvingDoubling, _) => Box::new(HalvingDoubling),
            (Algorithm::Tree, Some(m)) => {
                Box::new(GpuTrees::new(m, strategy.trees.unwrap_or(0), strategy.tree_penalty(), false)?)
            }
            (Algorithm::Tree, None) => {
                if let Some(field) = [("trees", strategy.trees.is_some()), ("penalty", strategy.penalty.is_some())]
                    .into_iter()
                    .find_map(|(f, given)| given.then_some(f))
                {
                    // Accepted, it changed nothing: the binomial tree has one tree and no links to share.
                    return Err(Error::invalid(
                        format!("strategy.{field}"),
                        format!(
                            "applies to the GPU trees inside one machine (seed 003: nodes:machine=M with as many \
                             workers as M has GPUs); tree with {n} workers on {} is one binomial tree",
                            topology.name()
                        ),
                    ));
                }
                Box::new(BinomialTree)
            }
            (Algorithm::MultiTree, Some(m)) => {
                Box::new(GpuTrees::new(m, strategy.trees.unwrap_or(0), strategy.tree_penalty(), true)?)
            }
            (Algorithm::MultiTree, None) => return Err(multitree_off_one_machine(topology, n)),
            (Algorithm::DoubleTree, _) => Box::new(DoubleBinaryTree),
            (Algorithm::Hierarchical, _) => {
                Box::new(Hierarchical { group: strategy.gpus_per_node.or(topo.gpus_per_node()).unwrap_or(8) })
            }
        })
    }

    /// The schedule of a collective other than all-reduce (a microbenchmark's) under this
    /// algorithm (docs/collectives.md, "What the engine picks"); [`Strategy::schedule`]
    /// picks between this and [`Algorithm::allreduce`].
    fn collective(
        self,
        kind: Collective,
        strategy: &Strategy,
        n: usize,
        topo: &Topology,
    ) -> Result<Box<dyn StepSchedule>> {
        use Algorithm as A;
        let refuse = |allowed: &str| {
            Error::invalid("strategy", format!("{} runs under {allowed}, not {}", kind.name(), strategy.spec))
        };
        let halves = strategies_for(Collective::AllGather);
        let phase = |kind: Collective| {
            if kind == Collective::ReduceScatter {
                LevelPhase::ReduceScatter
            } else {
                LevelPhase::AllGather
            }
        };
        Ok(match (kind, self) {
            (Collective::AllToAll, _) => Box::new(PairwiseAllToAll),
            (Collective::ReduceScatter, A::Ring | A::RingMulticast) => Box::new(ReduceScatter(Ring)),
            (Collective::AllGather, A::Ring | A::RingMulticast) => Box::new(AllGather(Ring)),
            (Collective::ReduceScatter, A::HalvingDoubling | A::RecursiveDoubling | A::Butterfly) => {
                Box::new(ReduceScatter(HalvingDoubling))
            }
            (Collective::AllGather, A::HalvingDoubling | A::RecursiveDoubling | A::Butterfly) => {
                Box::new(AllGather(HalvingDoubling))
            }
            (Collective::ReduceScatter | Collective::AllGather, A::Hierarchical) => {
                let g = strategy.gpus_per_node.or(topo.gpus_per_node()).unwrap_or(8);
                if g == 0 || !n.is_multiple_of(g) {
                    return Err(Error::invalid(
                        "strategy.gpus_per_node",
                        format!(
                            "hierarchical {} runs on whole machines, and {g} ranks per machine do not divide {n} \
                             workers; give gpus_per_node=G with G one of {} (its all-reduce takes a partial last \
                             machine)",
                            kind.name(),
                            crate::spec::divisors_shown(n)
                        ),
                    ));
                }
                Box::new(Levels { levels: vec![g], phase: phase(kind) })
            }
            (Collective::ReduceScatter | Collective::AllGather, A::Tree | A::MultiTree | A::DoubleTree) => {
                return Err(refuse(halves))
            }
            (Collective::Broadcast, A::Tree) => Box::new(BinomialBroadcast),
            (Collective::Broadcast, A::Ring | A::DoubleTree) => Box::new(ChainBroadcast),
            (
                Collective::Broadcast,
                A::RingMulticast
                | A::Butterfly
                | A::RecursiveDoubling
                | A::HalvingDoubling
                | A::MultiTree
                | A::Hierarchical,
            ) => return Err(refuse(strategies_for(Collective::Broadcast))),
            (Collective::AllReduce, _) => unreachable!("all-reduce schedules are chosen by Algorithm::allreduce"),
        })
    }
}

/// The strategies that run `collective` workloads, for messages that refuse another:
/// all-gather and reduce-scatter run under the all-reduces that halve (ring, halving-doubling,
/// recursive-doubling, butterfly, hierarchical), broadcast under a tree or a chain,
/// all-to-all under any all-reduce strategy (pairwise exchange); all of them under `nccl`.
pub fn strategies_for(collective: Collective) -> &'static str {
    match collective {
        Collective::AllGather | Collective::ReduceScatter => {
            "ring, halving-doubling, recursive-doubling, butterfly, hierarchical or nccl"
        }
        Collective::Broadcast => "tree (binomial), ring, double-tree (a pipelined chain) or nccl",
        Collective::AllToAll | Collective::AllReduce => {
            "an all-reduce strategy (ring, halving-doubling, tree, ...) or nccl"
        }
    }
}

impl Strategy {
    /// The step schedule of `collective` under this strategy for `n` ranks on `topo`
    /// (built from `topology`); `None` for parameter servers and sharded strategies,
    /// which schedule their own transfers.
    pub fn schedule(
        &self,
        collective: Collective,
        topology: &TopologySpec,
        n: usize,
        topo: &Topology,
    ) -> Result<Option<Box<dyn StepSchedule>>> {
        let super::Family::AllReduce(a) = &self.family else { return Ok(None) };
        if collective != Collective::AllReduce {
            return a.collective(collective, self, n, topo).map(Some);
        }
        a.allreduce(self, topology, n, topo).map(Some)
    }
}

/// The topology-free step schedule of the all-reduce algorithm `name`, as a runtime
/// executes it (see [`Algorithm::runtime_schedule`]); `None` for other names.
pub fn by_name(name: &str) -> Option<Box<dyn StepSchedule>> {
    Algorithm::from_name(name).and_then(Algorithm::runtime_schedule)
}

/// The names [`by_name`] knows, in table order (for error messages and listings).
pub fn runtime_names() -> Vec<&'static str> {
    Algorithm::ALL.iter().filter(|a| a.runtime_schedule().is_some()).map(|a| a.name()).collect()
}

/// Why `multitree` cannot run with `n` workers on `topology`: its trees follow the links
/// inside one multi-GPU machine (seed 003), so it needs `nodes` and exactly as many
/// workers as the machine has GPUs. Names `workers` on `nodes` (the machine is fixed, the
/// workers are not), else `topology`.
fn multitree_off_one_machine(topology: &TopologySpec, n: usize) -> Error {
    match (topology.machine_name(), topology.machine()) {
        (Some(name), Some(m)) => Error::invalid(
            "workers",
            format!(
                "{n} is not allowed: multitree runs inside one machine and a {name} has {} GPUs; give {} workers (tree, ring or hierarchical for more machines)",
                m.gpus(),
                m.gpus()
            ),
        ),
        _ => {
            let machines: Vec<String> = crate::gputopo::PRESETS
                .iter()
                .filter_map(|(p, _)| crate::gputopo::GpuTopology::preset(p).ok().map(|m| format!("{p} ({} GPUs)", m.gpus())))
                .collect();
            Error::invalid(
                "topology",
                format!(
                    "{} has no multi-GPU machine and multitree runs inside one: use nodes:machine=NAME with as many workers as it has GPUs: {}",
                    topology.name(),
                    machines.join(", ")
                ),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::STRATEGIES;
    use super::*;

    #[test]
    fn every_algorithm_has_exactly_one_strategy_row_of_its_name() {
        for a in Algorithm::ALL {
            let rows: Vec<&str> = STRATEGIES.iter().filter(|s| s.kind == Kind::AllReduce(*a)).map(|s| s.name).collect();
            assert_eq!(rows, vec![a.name()], "{a:?} must have one STRATEGIES row named {:?}", a.name());
            assert_eq!(Algorithm::from_name(a.name()), Some(*a));
        }
    }

    #[test]
    fn runtime_schedules_are_the_fabric_free_algorithms() {
        assert_eq!(
            runtime_names(),
            ["ring", "ring+multicast", "butterfly", "recursive-doubling", "halving-doubling", "tree", "double-tree"]
        );
        assert!(by_name("multitree").is_none() && by_name("hierarchical").is_none() && by_name("ps").is_none());
        assert_eq!(by_name("butterfly").unwrap().label(), by_name("recursive-doubling").unwrap().label());
    }
}
