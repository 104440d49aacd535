//! Strategies: how gradients are synchronised, written `NAME[:key=value,...]`.
//! The table [`STRATEGIES`] is the single definition of every strategy and option: the
//! parser validates against it and the `strategies` listing prints it.

use crate::error::{Error, Result};
use crate::sched::{Fusion, Limits, Policy};
use crate::spec::{self, OptionInfo, OptionKind, Spec};

/// Description of a strategy for listings.
#[derive(Debug, Clone, Copy)]
pub struct StrategyInfo {
    /// Name as written in a spec.
    pub name: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Its options.
    pub options: &'static [OptionInfo],
}

const PARTITION: OptionInfo = OptionInfo {
    name: "partition",
    kind: OptionKind::Bytes,
    default: "",
    help: "split each tensor into pieces of at most this size, synchronised separately and pipelined (seed 000 'messaging')",
};

static PS_OPTIONS: &[OptionInfo] = &[
    OptionInfo { name: "num_ps", kind: OptionKind::Count, default: "1", help: "parameter servers, on hosts of their own" },
    OptionInfo {
        name: "placement",
        kind: OptionKind::Choice(&["round-robin", "balanced"]),
        default: "round-robin",
        help: "tensor to server: round-robin by tensor (TensorFlow's default) or balanced by bytes (greedy, least-loaded server)",
    },
    OptionInfo {
        name: "distribution",
        kind: OptionKind::Choice(&["round-robin", "block"]),
        default: "round-robin",
        help: "order of the updated parameters sent back: one tensor to every worker in turn, or the whole model to one worker at a time",
    },
    OptionInfo {
        name: "barrier",
        kind: OptionKind::Flag,
        default: "true",
        help: "global barrier: servers send nothing back until every update of the iteration has arrived",
    },
];

static RING_OPTIONS: &[OptionInfo] = &[PARTITION];

/// Every built-in strategy.
pub static STRATEGIES: &[StrategyInfo] = &[
    StrategyInfo {
        name: "ps",
        summary: "parameter server: workers push gradients to servers, which aggregate and send parameters back",
        options: PS_OPTIONS,
    },
    StrategyInfo {
        name: "ring",
        summary: "ring all-reduce: reduce-scatter then all-gather around a ring, 2(N-1) steps of S/N bytes",
        options: RING_OPTIONS,
    },
];

/// Where each tensor lives on the parameter servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Tensor `i` on server `i mod P`.
    RoundRobin,
    /// Each tensor, in order, on the server with the fewest bytes so far.
    Balanced,
}

/// Order of the distribution phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Tensor-major: tensor 0 to every worker, then tensor 1, ...
    RoundRobin,
    /// Worker-major: everything to worker 0, then worker 1, ...
    Block,
}

/// Parameter-server settings.
#[derive(Debug, Clone, PartialEq)]
pub struct PsConfig {
    /// Number of servers.
    pub num_ps: usize,
    /// Tensor placement.
    pub placement: Placement,
    /// Distribution order.
    pub distribution: Distribution,
    /// Global barrier before distribution.
    pub barrier: bool,
}

/// All-reduce algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Ring reduce-scatter + all-gather.
    Ring,
}

/// The collective family.
#[derive(Debug, Clone, PartialEq)]
pub enum Family {
    /// Parameter servers.
    ParameterServer(PsConfig),
    /// A rank-symmetric all-reduce among the workers.
    AllReduce(Algorithm),
}

/// A parsed, validated strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Strategy {
    /// The spec as given (trimmed).
    pub spec: String,
    /// Collective family.
    pub family: Family,
    /// Piece size, bytes; `None` keeps tensors whole.
    pub partition: Option<u64>,
    /// Release order of ready pieces.
    pub policy: Policy,
    /// In-flight limits.
    pub limits: Limits,
    /// Tensor fusion, if any.
    pub fusion: Option<Fusion>,
}

impl Strategy {
    /// Parses and validates a spec such as `ring:partition=4MiB` or `ps:num_ps=4`.
    pub fn parse(text: &str) -> Result<Strategy> {
        let (name, pairs) = spec::split("strategy", text)?;
        let Some(info) = STRATEGIES.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = STRATEGIES.iter().map(|s| s.name).collect();
            return Err(Error::invalid(
                "strategy",
                format!("unknown strategy {name:?}; choose one of {}", names.join(", ")),
            ));
        };
        let given = spec::parse_options("strategy", &name, &pairs, info.options)?;
        let spec = Spec { name, given };
        let partition = spec.bytes("partition").map(|b| b.round() as u64);
        if partition == Some(0) {
            return Err(Error::invalid("strategy.partition", "must be at least 1 byte"));
        }
        let (family, limits) = match spec.name.as_str() {
            "ps" => (
                Family::ParameterServer(PsConfig {
                    num_ps: spec.count("num_ps").unwrap_or(1) as usize,
                    placement: match spec.choice("placement") {
                        Some("balanced") => Placement::Balanced,
                        _ => Placement::RoundRobin,
                    },
                    distribution: match spec.choice("distribution") {
                        Some("block") => Distribution::Block,
                        _ => Distribution::RoundRobin,
                    },
                    barrier: spec.flag("barrier").unwrap_or(true),
                }),
                // Workers push every gradient as soon as it exists (TensorFlow's gRPC sends).
                Limits { credit_bytes: None, max_tasks: None },
            ),
            // One collective at a time, in order, as on an NCCL stream.
            _ => (Family::AllReduce(Algorithm::Ring), Limits { credit_bytes: None, max_tasks: Some(1) }),
        };
        Ok(Strategy { spec: text.trim().to_string(), family, partition, policy: Policy::Fifo, limits, fusion: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_strategies() {
        let s = Strategy::parse("ps:num_ps=4,placement=balanced").unwrap();
        match s.family {
            Family::ParameterServer(c) => {
                assert_eq!(c.num_ps, 4);
                assert_eq!(c.placement, Placement::Balanced);
                assert!(c.barrier);
            }
            _ => panic!("not ps"),
        }
        assert_eq!(Strategy::parse("ring:partition=1MiB").unwrap().partition, Some(1 << 20));
    }

    #[test]
    fn rejects_unknown_names_and_options() {
        assert_eq!(Strategy::parse("bogus").unwrap_err().field(), "strategy");
        assert_eq!(Strategy::parse("ring:num_ps=2").unwrap_err().field(), "strategy.num_ps");
        assert_eq!(Strategy::parse("ps:num_ps=0").unwrap_err().field(), "strategy.num_ps");
        assert_eq!(Strategy::parse("ring:partition=0B").unwrap_err().field(), "strategy.partition");
    }
}
