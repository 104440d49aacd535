//! Link and node failures at given times: a link's rate drops to a fraction of its
//! nominal rate, or to 0 (down). A node failure is the failure of every link to or from
//! it. Routes are fixed (no rerouting is modelled), so flows crossing a link that is down
//! never finish and the run stops with an error naming the failure.
//!
//! Failures break every symmetry, so a scenario with failures is never folded.
//!
//! A failure timed after the run ended could change nothing, so it is refused
//! ([`refuse_after_end`]): it is most likely a slip (`20s` for `20ms`) or a run too short
//! to reach it.

use std::collections::VecDeque;

use super::Scenario;
use crate::error::{Error, Result};
use crate::metrics::Report;
use crate::topology::{LinkId, Topology};
use crate::units::{seconds_to_nanos, Nanos};

/// A failure (or degradation) at a given time.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// When, s since the start of the run.
    pub at_s: f64,
    /// A link (`h3->sw`, `leaf0->spine1`) or a node (`h3`, `sw`, `leaf0`, `spine1`), as
    /// `Report::link_utilization` names them.
    pub target: String,
    /// New rate as a fraction of the nominal one: 0 = down, 0.5 = half.
    pub rate: f64,
}

/// Failures resolved against a topology, waiting in time order.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    queue: VecDeque<(Nanos, Vec<LinkId>, f64, usize, String)>,
    /// Indices (in the scenario's list) of the failures applied so far.
    pub applied: Vec<usize>,
    /// Targets that went down, with when (for the stall message).
    pub down: Vec<(String, Nanos)>,
}

impl Pending {
    /// Resolves `failures` against `topo`; errors name `failures[i]` and what is allowed.
    pub fn resolve(failures: &[Failure], topo: &Topology) -> Result<Pending> {
        let mut queue = Vec::with_capacity(failures.len());
        for (i, f) in failures.iter().enumerate() {
            let field = format!("failures[{i}]");
            if !(f.at_s.is_finite() && f.at_s >= 0.0) {
                return Err(Error::invalid(format!("{field}.at_s"), format!("{} must be a time >= 0 s", f.at_s)));
            }
            if !(f.rate.is_finite() && (0.0..=1.0).contains(&f.rate)) {
                return Err(Error::invalid(
                    format!("{field}.rate"),
                    format!("{} must be a fraction of the nominal rate in [0, 1] (0: down)", f.rate),
                ));
            }
            let links = links_of(topo, &f.target);
            if links.is_empty() {
                let examples: Vec<String> = (0..topo.links().len().min(3)).map(|l| topo.link_name(l)).collect();
                return Err(Error::invalid(
                    format!("{field}.target"),
                    format!(
                        "no link or node is called {:?}; name a link ({}, ...) or a node (h0, ...) as the link utilisation lists them",
                        f.target,
                        examples.join(", ")
                    ),
                ));
            }
            queue.push((seconds_to_nanos(&format!("{field}.at_s"), f.at_s)?, links, f.rate, i, f.target.clone()));
        }
        // Time order, the listed order at equal times.
        queue.sort_by_key(|q| (q.0, q.3));
        Ok(Pending { queue: queue.into(), applied: Vec::new(), down: Vec::new() })
    }

    /// When the next failure happens.
    pub fn next_time(&self) -> Option<Nanos> {
        self.queue.front().map(|q| q.0)
    }

    /// Takes the next failure: its time, links and rate fraction; records it as applied.
    pub fn take(&mut self) -> Option<(Nanos, Vec<LinkId>, f64)> {
        let (at, links, rate, i, target) = self.queue.pop_front()?;
        self.applied.push(i);
        if rate == 0.0 {
            self.down.push((target, at));
        }
        Some((at, links, rate))
    }

    /// Indices (in the scenario's list) of the failures not applied yet, in time order.
    pub fn unreached(&self) -> Vec<usize> {
        self.queue.iter().map(|q| q.3).collect()
    }
}

/// Refuses the failures of `sc` that the run never reached, unless
/// [`Scenario::allow_failures_after_end`]: names the first listed one (`failures[i].at_s`),
/// the run's end (the last completion in `reports`, s) and what is allowed.
pub(crate) fn refuse_after_end(sc: &Scenario, reports: &[Report]) -> Result<()> {
    if sc.allow_failures_after_end {
        return Ok(());
    }
    let Some(&first) = reports.iter().flat_map(|r| &r.failures_unreached).min() else {
        return Ok(());
    };
    let end_s = reports.iter().flat_map(|r| r.completions_s.iter().copied()).fold(0.0, f64::max);
    Err(Error::invalid(
        format!("failures[{first}].at_s"),
        format!(
            "{} s is after the run ended at {end_s} s ({} iterations), so the failure would change nothing; give a time from 0 to {end_s} s, or simulate more iterations",
            sc.failures[first].at_s, sc.iterations
        ),
    ))
}

/// The links `target` names: one link, or every link to or from a node.
fn links_of(topo: &Topology, target: &str) -> Vec<LinkId> {
    let links = topo.links();
    if target.contains("->") {
        return (0..links.len()).filter(|&l| topo.link_name(l) == target).collect();
    }
    match (0..topo.nodes()).find(|&n| topo.node_name(n) == target) {
        Some(n) => (0..links.len()).filter(|&l| links[l].from == n || links[l].to == n).collect(),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_to_links_and_bad_ones_name_the_field() {
        let t = Topology::star(4, 1.0, 10);
        let f = |target: &str, at_s: f64, rate: f64| Failure { at_s, target: target.into(), rate };
        let p = Pending::resolve(&[f("h1", 2e-6, 0.0), f("h0->sw", 1e-6, 0.5)], &t).unwrap();
        assert_eq!(p.next_time(), Some(1000));
        assert_eq!(links_of(&t, "h1"), vec![2, 3]);
        assert_eq!(links_of(&t, "sw").len(), 8);
        for (bad, field) in [
            (f("h9", 0.0, 0.5), "failures[0].target"),
            (f("h0->h1", 0.0, 0.5), "failures[0].target"),
            (f("h0", -1.0, 0.5), "failures[0].at_s"),
            (f("h0", 0.0, 1.5), "failures[0].rate"),
        ] {
            assert_eq!(Pending::resolve(&[bad], &t).unwrap_err().field(), field);
        }
    }
}
