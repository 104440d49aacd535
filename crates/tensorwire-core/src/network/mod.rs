//! Network models behind one trait, so that the engine does not care how transfer
//! times are computed (DESIGN.md principle 4).
//!
//! - [`MaxMinFair`]: flow-level, bandwidth shared max-min fairly by progressive filling;
//!   captures incast, shared links and stragglers. The default.
//! - [`AlphaBeta`]: analytical, every flow gets its path's full bottleneck bandwidth as if
//!   alone (time = latency + bytes / bandwidth). Fastest; exact only without contention.
//!
//! A flow may stand for several identical flows ("images") that the engine folds into one
//! when every rank behaves alike: its `links` carry a *weight*, the number of images that
//! share one copy of that link. With all weights 1 this is the ordinary model.

mod alpha_beta;
mod maxmin;
#[cfg(test)]
mod maxmin_reference;

pub use alpha_beta::AlphaBeta;
pub use maxmin::MaxMinFair;
#[cfg(test)]
pub(crate) use maxmin_reference::ReferenceMaxMin;

use crate::topology::LinkId;
use crate::units::Nanos;

/// A transfer to start.
#[derive(Debug, Clone)]
pub struct FlowSpec<'a> {
    /// Links crossed, each with the number of flow images that share it (usually 1).
    pub links: &'a [(LinkId, u32)],
    /// Payload in bytes (may be fractional; 0 is allowed).
    pub bytes: f64,
    /// Time from the last byte leaving the sender to its arrival (path latency plus
    /// per-message overhead), ns.
    pub latency: Nanos,
    /// Upper bound on this flow's rate in bytes/ns (e.g. a host copy bandwidth); `f64::INFINITY` for none.
    pub rate_cap: f64,
    /// Opaque tag returned with the flow's events.
    pub tag: u64,
    /// Also report when the last byte has left the sender (for serial send queues).
    pub notify_sent: bool,
}

/// Something that happened to a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowEvent {
    /// The last byte left the sender.
    Sent(u64),
    /// The last byte arrived at the receiver.
    Delivered(u64),
}

/// A model of how long transfers take.
///
/// A new model implements the required methods: [`NetworkModel::start`],
/// [`NetworkModel::next_time`], [`NetworkModel::advance`], [`NetworkModel::set_capacity`],
/// [`NetworkModel::link_bytes`] and [`NetworkModel::name`]. The provided ones are
/// optional shortcuts: [`NetworkModel::next_time_by`] (skip work the engine's next event
/// makes moot) and [`NetworkModel::alone`], the engine's "lanes" fast path (timing flows
/// that have their links to themselves without events, `engine/lanes.rs`), which a model
/// offers by implementing [`TimesAlone`] and returning itself. Without it the engine runs
/// every flow through `start`/`advance`, with the same results, only more slowly.
pub trait NetworkModel {
    /// Starts a flow at `now` (never earlier than any previous call's time).
    fn start(&mut self, now: Nanos, flow: FlowSpec<'_>);
    /// Time of the next flow event, if any flow is in progress.
    fn next_time(&mut self) -> Option<Nanos>;
    /// [`NetworkModel::next_time`] if it is at or before `limit` (`None`: no limit), else
    /// `None`. The engine asks this with its own next event time as the limit, which lets a
    /// model skip work that cannot change the answer (e.g. recomputing rates while many
    /// flows start one by one at one instant).
    fn next_time_by(&mut self, limit: Option<Nanos>) -> Option<Nanos> {
        self.next_time().filter(|&t| limit.is_none_or(|l| t <= l))
    }
    /// The lanes fast path, if this model offers it ([`TimesAlone`]); `None` (the
    /// default): the engine times every flow with events.
    fn alone(&mut self) -> Option<&mut dyn TimesAlone> {
        None
    }
    /// Advances to `now` (at most [`NetworkModel::next_time`]) and appends the events due by then,
    /// in a deterministic order.
    fn advance(&mut self, now: Nanos, out: &mut Vec<FlowEvent>);
    /// Sets `link`'s capacity (bytes/ns; 0: down) from `now` on (a failure or a
    /// degradation). Flows in progress continue at the rates that follow.
    fn set_capacity(&mut self, now: Nanos, link: LinkId, bytes_per_ns: f64);
    /// Bytes carried so far by one copy of each link, brought up to `now`.
    fn link_bytes(&mut self, now: Nanos) -> &[f64];
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// Whether it times every flow as if alone (the analytical model): its links may then
    /// carry more bytes than their capacity allows in the time the flows took.
    fn contention_free(&self) -> bool {
        false
    }
}

/// The lanes fast path of a network model (see `engine/lanes.rs`), an optional capability
/// offered through [`NetworkModel::alone`]: timing a flow that nothing else shares a link
/// with as [`NetworkModel::start`] and the events after it would, without an event.
/// [`TimesAlone::time_alone`] is required; [`TimesAlone::alone_path`] and
/// [`TimesAlone::credit_alone`] let the engine time many alike paths at once and may be
/// left out (the engine then times each message on its own).
pub trait TimesAlone {
    /// Times a flow that nothing else shares a link with from `at` until its last byte
    /// has left (the caller guarantees it: see `engine/lanes.rs`), without an event: its
    /// bytes are counted on its links and the time its last byte leaves is returned, as
    /// [`NetworkModel::start`] and the events after it would have found. `at` may be ahead
    /// of the model's clock: only the flow's own links are touched. `memo` is the caller's
    /// per path (start with `None`): the model may keep what it found about the path there
    /// to find it faster next time. `None`: the model has no such shortcut, or the flow
    /// would never arrive (a link on its path is down).
    fn time_alone(&mut self, at: Nanos, flow: &FlowSpec<'_>, memo: &mut Option<u32>) -> Option<Nanos>;
    /// The state of the path `links` (flows capped at `rate_cap`) for flows that run on it
    /// alone, to be timed by [`AlonePath::serve`] and recorded by
    /// [`TimesAlone::credit_alone`]: what [`TimesAlone::time_alone`] does per flow, for a
    /// caller that times many paths in one state at once (lanes: the ranks of a collective
    /// whose paths are alike serve equal messages alike). `memo` as for `time_alone`. `None`:
    /// the model has no such state, or the path is in use.
    fn alone_path(&mut self, _links: &[(LinkId, u32)], _rate_cap: f64, _memo: &mut Option<u32>) -> Option<AlonePath> {
        None
    }
    /// Records flows timed on the path of class `class` ([`AlonePath::class`]): the class has
    /// now served `served` bytes ([`AlonePath::served`] after them), and its links carried
    /// `bytes` more (times their weights).
    fn credit_alone(&mut self, _class: u32, _served: f64, _bytes: f64) {}
}

/// Which model to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelKind {
    /// [`MaxMinFair`].
    Flow,
    /// [`AlphaBeta`].
    Analytical,
    /// The original max-min model (`ReferenceMaxMin`), to test [`MaxMinFair`] against.
    #[cfg(test)]
    FlowReference,
}

impl ModelKind {
    /// The names [`ModelKind::parse`] accepts, in the order help texts list them.
    pub const NAMES: &'static [&'static str] = &["flow", "analytical"];

    /// Parses `flow` or `analytical`.
    pub fn parse(text: &str) -> crate::Result<Self> {
        match text {
            "flow" => Ok(ModelKind::Flow),
            "analytical" => Ok(ModelKind::Analytical),
            _ => Err(crate::Error::invalid(
                "network",
                format!("{text:?} is not a network model; choose {}", Self::NAMES.join(" or ")),
            )),
        }
    }

    /// Builds the model for links with the given capacities (bytes/ns).
    pub fn build(self, capacities: Vec<f64>) -> Box<dyn NetworkModel> {
        match self {
            ModelKind::Flow => Box::new(MaxMinFair::new(capacities)),
            ModelKind::Analytical => Box::new(AlphaBeta::new(capacities)),
            #[cfg(test)]
            ModelKind::FlowReference => Box::new(ReferenceMaxMin::new(capacities)),
        }
    }
}

/// Bytes by which what a flow model has served a flow may fall short of its size and the
/// flow still count as finished: the float error of summing `rate x dt` over many
/// instants (1e-6 bytes, plus 1e-12 of what was served).
pub(crate) fn completion_tolerance(served: f64) -> f64 {
    1e-6 + 1e-12 * served.abs()
}

/// Whole nanoseconds until a flow with `left` bytes to go at `rate` bytes/ns counts as
/// finished (within [`completion_tolerance`] of `served`): the first instant a flow
/// model's `advance` finishes it, so the time does not depend on whether anything else
/// happens in the network meanwhile (an event one nanosecond earlier would otherwise
/// finish a flow whose last fraction of a byte is within the tolerance). A time at or past
/// the simulation horizon is clamped to it: the event loop stops the run there.
pub(crate) fn time_to_finish(left: f64, rate: f64, served: f64) -> Nanos {
    let short = left - completion_tolerance(served);
    if short <= 0.0 {
        0
    } else {
        crate::limits::nanos_clamped((short / rate).ceil())
    }
}

/// A path that flows run on alone ([`TimesAlone::alone_path`]), as the max-min model
/// times them: at the rate a class alone gets, each flow finishing at the first whole
/// nanosecond by which the class has served it (`time_to_finish`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AlonePath {
    /// The model's flow class of the path.
    pub class: u32,
    /// Bytes/ns a flow alone on the path gets.
    pub rate: f64,
    /// Bytes the class has served (flows finish relative to it).
    pub served: f64,
}

impl AlonePath {
    /// Serves a flow of `bytes` on the path: its transfer time (ns) and the bytes served
    /// meanwhile (`rate x time`, what its links carry); `None` if it never finishes (the
    /// path has no rate).
    pub fn serve(&mut self, bytes: f64) -> Option<(Nanos, f64)> {
        let finish = self.served + bytes.max(0.0);
        let left = finish - self.served;
        if left > completion_tolerance(self.served) && self.rate <= 0.0 {
            return None;
        }
        let transfer = time_to_finish(left, self.rate, self.served);
        let step = self.rate * transfer as f64;
        self.served += step;
        Some((transfer, step))
    }
}

/// Pending timed flow events, ordered by (time, sequence) so equal times pop in start order.
#[derive(Debug, Default)]
pub(crate) struct Timeline {
    heap: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, u64, bool, u64)>>,
    seq: u64,
}

impl Timeline {
    pub(crate) fn push(&mut self, at: Nanos, event: FlowEvent) {
        let (delivered, tag) = match event {
            FlowEvent::Sent(t) => (false, t),
            FlowEvent::Delivered(t) => (true, t),
        };
        self.seq += 1;
        self.heap.push(std::cmp::Reverse((at, self.seq, delivered, tag)));
    }

    pub(crate) fn next_time(&self) -> Option<Nanos> {
        self.heap.peek().map(|e| e.0 .0)
    }

    pub(crate) fn pop_due(&mut self, now: Nanos, out: &mut Vec<FlowEvent>) {
        while let Some(e) = self.heap.peek() {
            if e.0 .0 > now {
                break;
            }
            let (_, _, delivered, tag) = self.heap.pop().unwrap().0;
            out.push(if delivered { FlowEvent::Delivered(tag) } else { FlowEvent::Sent(tag) });
        }
    }
}

#[cfg(test)]
mod equivalence;
#[cfg(test)]
mod tests;
