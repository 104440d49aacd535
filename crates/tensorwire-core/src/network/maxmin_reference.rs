//! The original flow-level max-min model, kept as the reference that [`super::MaxMinFair`]
//! is tested against (test builds only). It recomputes every rate of the whole network by
//! progressive filling whenever anything changed, and scans every class for the next event.
//!
//! Flows with the same links (and weights and rate cap) form a *class*; all flows of a
//! class always have the same rate, so rates are computed per class by progressive
//! filling, O(rounds x (links + classes)) per change, and each class keeps its flows in a
//! heap keyed by "bytes served to the class when this flow finishes" (virtual time), so a
//! flow costs O(log n) however often rates change. Rates are recomputed lazily, once per
//! instant, however many flows start or finish at it.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use super::{FlowEvent, FlowSpec, NetworkModel, Timeline};
use crate::topology::LinkId;
use crate::units::Nanos;

#[derive(Debug, Clone, Copy)]
struct Pending {
    finish: f64,
    seq: u64,
    tag: u64,
    latency: Nanos,
    notify_sent: bool,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        self.finish.total_cmp(&other.finish).then(self.seq.cmp(&other.seq))
    }
}

#[derive(Debug)]
struct Class {
    links: Vec<(LinkId, f64)>,
    cap: f64,
    /// Current rate of each flow of the class, bytes/ns.
    rate: f64,
    /// Bytes served to each flow of the class since the class was created.
    served: f64,
    flows: BinaryHeap<Reverse<Pending>>,
}

type ClassKey = (Vec<(LinkId, u32)>, u64);

/// The reference max-min fair flow-level model. See the module documentation.
#[derive(Debug)]
pub struct ReferenceMaxMin {
    caps: Vec<f64>,
    classes: Vec<Class>,
    index: HashMap<ClassKey, usize>,
    active: Vec<usize>,
    now: Nanos,
    dirty: bool,
    link_bytes: Vec<f64>,
    timeline: Timeline,
    seq: u64,
    rem: Vec<f64>,
    load: Vec<f64>,
    mark: Vec<bool>,
    bottleneck: Vec<bool>,
    touched: Vec<LinkId>,
    /// Per class: frozen in the current progressive filling.
    frozen: Vec<bool>,
    unfrozen: Vec<usize>,
    freeze: Vec<usize>,
}

/// Relative tolerance when comparing fair shares of links.
const SHARE_TOLERANCE: f64 = 1e-9;

impl ReferenceMaxMin {
    /// A model over links with these capacities (bytes/ns).
    pub fn new(caps: Vec<f64>) -> Self {
        let n = caps.len();
        ReferenceMaxMin {
            caps,
            classes: Vec::new(),
            index: HashMap::new(),
            active: Vec::new(),
            now: 0,
            dirty: false,
            link_bytes: vec![0.0; n],
            timeline: Timeline::default(),
            seq: 0,
            rem: vec![0.0; n],
            load: vec![0.0; n],
            mark: vec![false; n],
            bottleneck: vec![false; n],
            touched: Vec::new(),
            frozen: Vec::new(),
            unfrozen: Vec::new(),
            freeze: Vec::new(),
        }
    }

    /// Serves every flow up to `to`. Rates are brought up to date only when time moves:
    /// many flows starting or finishing at one instant cost one progressive filling.
    fn progress(&mut self, to: Nanos) {
        if to <= self.now {
            return;
        }
        if self.dirty {
            self.recompute();
        }
        let dt = (to - self.now) as f64;
        for &c in &self.active {
            let class = &mut self.classes[c];
            let step = class.rate * dt;
            class.served += step;
            let n = class.flows.len() as f64;
            for &(l, w) in &class.links {
                self.link_bytes[l] += w * n * step;
            }
        }
        self.now = to;
    }

    /// Progressive filling: raise all unfrozen rates together until a link saturates or a
    /// class reaches its cap; freeze the classes there; repeat.
    fn recompute(&mut self) {
        self.dirty = false;
        self.touched.clear();
        for &c in &self.active {
            let class = &self.classes[c];
            let n = class.flows.len() as f64;
            for &(l, w) in &class.links {
                if !self.mark[l] {
                    self.mark[l] = true;
                    self.touched.push(l);
                    self.rem[l] = self.caps[l];
                    self.load[l] = 0.0;
                }
                self.load[l] += w * n;
            }
        }
        self.frozen.resize(self.classes.len(), false);
        let mut unfrozen = std::mem::take(&mut self.unfrozen);
        let mut freeze = std::mem::take(&mut self.freeze);
        unfrozen.clear();
        unfrozen.extend_from_slice(&self.active);
        while !unfrozen.is_empty() {
            let mut share = f64::INFINITY;
            for &l in &self.touched {
                if self.load[l] > 0.0 {
                    share = share.min(self.rem[l] / self.load[l]);
                }
            }
            let cap_min = unfrozen.iter().map(|&c| self.classes[c].cap).fold(f64::INFINITY, f64::min);
            freeze.clear();
            let level;
            if cap_min <= share {
                level = cap_min;
                freeze.extend(unfrozen.iter().copied().filter(|&c| self.classes[c].cap <= cap_min));
            } else {
                level = share;
                for &l in &self.touched {
                    self.bottleneck[l] =
                        self.load[l] > 0.0 && self.rem[l] / self.load[l] <= share * (1.0 + SHARE_TOLERANCE);
                }
                let (classes, bottleneck) = (&self.classes, &self.bottleneck);
                freeze
                    .extend(unfrozen.iter().copied().filter(|&c| classes[c].links.iter().any(|&(l, _)| bottleneck[l])));
            }
            for &c in &freeze {
                self.frozen[c] = true;
                let class = &mut self.classes[c];
                class.rate = level;
                let n = class.flows.len() as f64;
                for &(l, w) in &class.links {
                    self.rem[l] = (self.rem[l] - w * n * level).max(0.0);
                    self.load[l] -= w * n;
                    if self.load[l] < 0.5 {
                        self.load[l] = 0.0;
                    }
                }
            }
            let frozen = &self.frozen;
            unfrozen.retain(|&c| !frozen[c]);
        }
        for &c in &self.active {
            self.frozen[c] = false;
        }
        self.unfrozen = unfrozen;
        self.freeze = freeze;
        for &l in &self.touched {
            self.mark[l] = false;
        }
    }
}

impl NetworkModel for ReferenceMaxMin {
    fn start(&mut self, now: Nanos, flow: FlowSpec<'_>) {
        self.progress(now);
        if flow.links.is_empty() && !flow.rate_cap.is_finite() {
            // Host-local transfer: nothing to share.
            if flow.notify_sent {
                self.timeline.push(now, FlowEvent::Sent(flow.tag));
            }
            self.timeline.push(now + flow.latency, FlowEvent::Delivered(flow.tag));
            return;
        }
        let key: ClassKey = (flow.links.to_vec(), flow.rate_cap.to_bits());
        let c = match self.index.get(&key) {
            Some(&c) => c,
            None => {
                self.classes.push(Class {
                    links: flow.links.iter().map(|&(l, w)| (l, w as f64)).collect(),
                    cap: flow.rate_cap,
                    rate: 0.0,
                    served: 0.0,
                    flows: BinaryHeap::new(),
                });
                self.index.insert(key, self.classes.len() - 1);
                self.classes.len() - 1
            }
        };
        let class = &mut self.classes[c];
        if class.flows.is_empty() {
            self.active.push(c);
        }
        self.seq += 1;
        class.flows.push(Reverse(Pending {
            finish: class.served + flow.bytes.max(0.0),
            seq: self.seq,
            tag: flow.tag,
            latency: flow.latency,
            notify_sent: flow.notify_sent,
        }));
        self.dirty = true;
    }

    fn next_time(&mut self) -> Option<Nanos> {
        if self.dirty {
            self.recompute();
        }
        let mut next = self.timeline.next_time();
        for &c in &self.active {
            let class = &self.classes[c];
            let head = class.flows.peek().expect("active classes have flows").0;
            let t = self.now + super::time_to_finish(head.finish - class.served, class.rate, class.served);
            next = Some(next.map_or(t, |n: Nanos| n.min(t)));
        }
        next
    }

    fn advance(&mut self, now: Nanos, out: &mut Vec<FlowEvent>) {
        self.progress(now);
        let mut emptied = false;
        for &c in &self.active {
            let class = &mut self.classes[c];
            let tolerance = super::completion_tolerance(class.served);
            while let Some(head) = class.flows.peek() {
                if head.0.finish > class.served + tolerance {
                    break;
                }
                let done = class.flows.pop().unwrap().0;
                if done.notify_sent {
                    self.timeline.push(now, FlowEvent::Sent(done.tag));
                }
                self.timeline.push(now + done.latency, FlowEvent::Delivered(done.tag));
                self.dirty = true;
            }
            emptied |= class.flows.is_empty();
        }
        if emptied {
            let classes = &self.classes;
            self.active.retain(|&c| !classes[c].flows.is_empty());
        }
        self.timeline.pop_due(now, out);
    }

    fn set_capacity(&mut self, now: Nanos, link: LinkId, bytes_per_ns: f64) {
        self.progress(now);
        self.caps[link] = bytes_per_ns;
        self.dirty = true;
    }

    fn link_bytes(&mut self, now: Nanos) -> &[f64] {
        self.progress(now);
        &self.link_bytes
    }

    fn name(&self) -> &'static str {
        "flow"
    }
}
