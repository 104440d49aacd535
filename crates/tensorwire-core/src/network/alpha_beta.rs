//! Analytical alpha-beta model: each flow alone on its path.

use super::{FlowEvent, FlowSpec, NetworkModel, Timeline, TimesAlone};
use crate::topology::LinkId;
use crate::units::Nanos;

/// Contention-free model: a flow of `b` bytes takes `latency + b / B` where `B` is the
/// smallest link capacity on its path (or its rate cap). O(path length) per flow.
#[derive(Debug)]
pub struct AlphaBeta {
    caps: Vec<f64>,
    link_bytes: Vec<f64>,
    timeline: Timeline,
}

impl AlphaBeta {
    /// A model over links with these capacities (bytes/ns).
    pub fn new(caps: Vec<f64>) -> Self {
        let n = caps.len();
        AlphaBeta { caps, link_bytes: vec![0.0; n], timeline: Timeline::default() }
    }

    /// Counts the flow's bytes on its links; returns how long its bytes take to leave, ns
    /// (`None`: a link on its path is down and it never arrives).
    fn transmit(&mut self, flow: &FlowSpec<'_>) -> Option<Nanos> {
        let mut rate = flow.rate_cap;
        for &(l, w) in flow.links {
            rate = rate.min(self.caps[l]);
            self.link_bytes[l] += w as f64 * flow.bytes;
        }
        if flow.bytes > 0.0 && rate <= 0.0 {
            return None;
        }
        Some(if flow.bytes <= 0.0 || !rate.is_finite() {
            0
        } else {
            crate::limits::nanos_clamped((flow.bytes / rate).ceil())
        })
    }
}

impl NetworkModel for AlphaBeta {
    fn start(&mut self, now: Nanos, flow: FlowSpec<'_>) {
        let Some(transmit) = self.transmit(&flow) else { return };
        if flow.notify_sent {
            self.timeline.push(now + transmit, FlowEvent::Sent(flow.tag));
        }
        self.timeline.push(now + transmit + flow.latency, FlowEvent::Delivered(flow.tag));
    }

    /// Every flow is timed alone here anyway.
    fn alone(&mut self) -> Option<&mut dyn TimesAlone> {
        Some(self)
    }

    fn next_time(&mut self) -> Option<Nanos> {
        self.timeline.next_time()
    }

    fn advance(&mut self, now: Nanos, out: &mut Vec<FlowEvent>) {
        self.timeline.pop_due(now, out);
    }

    /// Applies to flows started from now on: a flow's time is fixed when it starts.
    fn set_capacity(&mut self, _now: Nanos, link: LinkId, bytes_per_ns: f64) {
        self.caps[link] = bytes_per_ns;
    }

    fn link_bytes(&mut self, _now: Nanos) -> &[f64] {
        &self.link_bytes
    }

    fn name(&self) -> &'static str {
        "analytical"
    }

    fn contention_free(&self) -> bool {
        true
    }
}

impl TimesAlone for AlphaBeta {
    /// The flow's time as [`NetworkModel::start`] finds it; no path state to share.
    fn time_alone(&mut self, at: Nanos, flow: &FlowSpec<'_>, _memo: &mut Option<u32>) -> Option<Nanos> {
        let transmit = self.transmit(flow)?;
        Some(at + transmit)
    }
}
