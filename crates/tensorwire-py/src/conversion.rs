//! The one place where text from Python becomes a core enum (the polars habit): each
//! conversion reuses the core's own `parse` and name list where the core has one, so the
//! names accepted and the wording of a refusal are the core's. Placements are read by
//! the core's `topology::placement`, which takes the name (`simulate.rs`).

use tensorwire_core::collectives::Collective;
use tensorwire_core::gputopo;
use tensorwire_core::network::ModelKind;
use tensorwire_core::sched::Policy;
use tensorwire_core::{Error, Variability};

/// A release policy (`fifo`, `priority`: the strategy option `schedule=`'s choices),
/// refused naming `field`.
pub fn policy(field: &str, text: &str) -> Result<Policy, Error> {
    match text {
        "fifo" => Ok(Policy::Fifo),
        "priority" => Ok(Policy::Priority),
        _ => Err(Error::invalid(field, format!("{text:?} is not a policy; choose fifo or priority"))),
    }
}

/// A policy's name, the inverse of [`policy`].
pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::Fifo => "fifo",
        Policy::Priority => "priority",
    }
}

/// A network model (`ModelKind::NAMES`).
pub fn network(text: &str) -> Result<ModelKind, Error> {
    ModelKind::parse(text)
}

/// A collective (`COLLECTIVE_NAMES`), refused naming `field`.
pub fn collective(field: &str, text: &str) -> Result<Collective, Error> {
    Collective::parse(field, text)
}

/// Stragglers of kind `kind` (`none`, `normal`, `lognormal`, `fixed`, `empirical`, `one`)
/// with their spread (coefficient of variation or sigma), per-worker slowdowns, measured
/// multipliers or (`one`) the one slow worker's multiplier.
pub fn variability(kind: &str, spread: f64, slowdowns: Option<Vec<f64>>) -> Result<Variability, Error> {
    Ok(match kind {
        "none" => Variability::None,
        "normal" => Variability::Normal { cv: spread },
        "lognormal" => Variability::LogNormal { sigma: spread },
        "fixed" => Variability::Slowdowns(slowdowns.unwrap_or_default()),
        "empirical" => Variability::Empirical(slowdowns.unwrap_or_default()),
        "one" => match slowdowns.as_deref() {
            Some(&[factor]) => Variability::OneAtRandom { factor },
            _ => {
                return Err(Error::invalid(
                    "stragglers",
                    "one needs one multiplier, the slow worker's (e.g. slowdowns=[2.0])",
                ))
            }
        },
        _ => {
            return Err(Error::invalid(
                "stragglers",
                format!("{kind:?} is not one of none, normal, lognormal, fixed, empirical, one"),
            ))
        }
    })
}

/// How a GPU tree was found, as Python names it.
pub fn tree_method(m: gputopo::Method) -> &'static str {
    match m {
        gputopo::Method::KernighanLin => "kernighan-lin",
        gputopo::Method::Exhaustive => "exhaustive",
    }
}
