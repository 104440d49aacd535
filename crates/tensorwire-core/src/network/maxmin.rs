//! Flow-level model with max-min fair bandwidth sharing.
//!
//! Flows with the same links (and weights and rate cap) form a *class*; all flows of a
//! class always have the same rate, so rates are computed per class by progressive
//! filling, and each class keeps its flows in a heap keyed by "bytes served to the class
//! when this flow finishes" (virtual time), so a flow costs O(log n) however often rates
//! change.
//!
//! What keeps unfolded (asymmetric) simulations cheap (docs/simulator.md, "Cost"):
//!
//! - **Incremental recomputation.** When flows start or finish, only the *connected
//!   component* of what changed (the active classes reachable from the changed classes
//!   through shared links) is refilled; max-min shares of a component depend on nothing
//!   outside it, so every other class keeps its rate.
//! - **Once per instant.** Rates are recomputed when time moves, or when the engine needs
//!   the next event time and it could be later than now ([`NetworkModel::next_time_by`]):
//!   a thousand flows started one by one at one instant cost one progressive filling.
//! - **Aggregation.** Flows of one class started at the same instant with the same size
//!   (and latency) finish together: they share one heap entry holding their tags.
//!
//! The arithmetic (serving, progressive filling within a component, finish times) is the
//! original model's, in the same order, so results agree with it bit for bit except where
//! the original coupled separate components through its 1e-9 share tolerance (see
//! `network::equivalence`).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use super::{completion_tolerance, time_to_finish, AlonePath, FlowEvent, FlowSpec, NetworkModel, Timeline, TimesAlone};
use crate::topology::LinkId;
use crate::units::Nanos;

/// A heap entry: one flow, or several of one class that finish together.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// Bytes served to the class when these flows finish.
    finish: f64,
    /// Start order of the first flow (ties on `finish` pop in start order).
    seq: u64,
    /// Index into [`MaxMinFair::groups`].
    group: u32,
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

/// Flows sharing a heap entry: their tags in start order, latency and notification.
#[derive(Debug, Default)]
struct Group {
    first: u64,
    rest: Vec<u64>,
    latency: Nanos,
    notify_sent: bool,
}

#[derive(Debug)]
struct Class {
    /// Links with their weights (as the spec gave them, and as floats for the arithmetic).
    key: Vec<(LinkId, u32)>,
    links: Vec<(LinkId, f64)>,
    /// Position of this class in `members[link]` for each of its links, while active.
    slots: Vec<u32>,
    cap: f64,
    /// Next class with the same fingerprint (lookup chain).
    next_same: Option<u32>,
    /// Current rate of each flow of the class, bytes/ns.
    rate: f64,
    /// Bytes served to each flow of the class since the class was created.
    served: f64,
    flows: BinaryHeap<Reverse<Pending>>,
    /// Flows in the class (heap entries may hold several).
    count: u64,
    /// Order of the last activation (classes are filled and served in this order).
    stamp: u64,
    /// Flows started or finished since the last recomputation.
    changed: bool,
    /// The last entry pushed, while flows may still join it: (instant, finish, group).
    joinable: Option<(Nanos, f64, u32)>,
}

use crate::fasthash::{FastMap, GOLDEN as MIX};

fn fingerprint(links: &[(LinkId, u32)], cap: f64) -> u64 {
    let mut h = cap.to_bits().wrapping_mul(MIX);
    for &(l, w) in links {
        h = (h.rotate_left(23) ^ l as u64).wrapping_mul(MIX);
        h = (h.rotate_left(23) ^ u64::from(w)).wrapping_mul(MIX);
    }
    h ^ (h >> 29)
}

/// Max-min fair flow-level model. See the module documentation.
#[derive(Debug)]
pub struct MaxMinFair {
    caps: Vec<f64>,
    /// Some link has an infinite capacity (a flow may then finish the instant it starts).
    instant_links: bool,
    classes: Vec<Class>,
    /// Fingerprint of (links, cap) -> first class with it.
    index: FastMap<u64, u32>,
    /// Active classes (with flows), in activation order.
    active: Vec<usize>,
    /// Per link: the active classes crossing it, with the link's position in the class.
    members: Vec<Vec<(u32, u32)>>,
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    now: Nanos,
    /// Classes whose flows changed since the last recomputation.
    changed: Vec<usize>,
    /// Some class's head is due now (its remaining bytes are <= 0).
    due_now: bool,
    /// Cached answer of `next_time` while nothing changed.
    next_cache: Option<Option<Nanos>>,
    link_bytes: Vec<f64>,
    timeline: Timeline,
    seq: u64,
    stamp: u64,
    rem: Vec<f64>,
    load: Vec<f64>,
    mark: Vec<bool>,
    bottleneck: Vec<bool>,
    touched: Vec<LinkId>,
    /// Links of every component refilled in the current recomputation.
    all_touched: Vec<LinkId>,
    /// Classes of every component refilled in the current recomputation.
    all_filled: Vec<usize>,
    /// Per class: in the component being refilled / frozen in the current filling.
    visited: Vec<bool>,
    frozen: Vec<bool>,
    component: Vec<usize>,
    unfrozen: Vec<usize>,
    freeze: Vec<usize>,
}

/// Relative tolerance when comparing fair shares of links.
const SHARE_TOLERANCE: f64 = 1e-9;

impl MaxMinFair {
    /// A model over links with these capacities (bytes/ns).
    pub fn new(caps: Vec<f64>) -> Self {
        let n = caps.len();
        MaxMinFair {
            instant_links: caps.iter().any(|c| !c.is_finite()),
            caps,
            classes: Vec::new(),
            index: FastMap::default(),
            active: Vec::new(),
            members: vec![Vec::new(); n],
            groups: Vec::new(),
            free_groups: Vec::new(),
            now: 0,
            changed: Vec::new(),
            due_now: false,
            next_cache: None,
            link_bytes: vec![0.0; n],
            timeline: Timeline::default(),
            seq: 0,
            stamp: 0,
            rem: vec![0.0; n],
            load: vec![0.0; n],
            mark: vec![false; n],
            bottleneck: vec![false; n],
            touched: Vec::new(),
            all_touched: Vec::new(),
            all_filled: Vec::new(),
            visited: Vec::new(),
            frozen: Vec::new(),
            component: Vec::new(),
            unfrozen: Vec::new(),
            freeze: Vec::new(),
        }
    }

    /// Current rate (bytes/ns) of flows on exactly these links; for tests.
    pub fn rate_of(&mut self, links: &[(LinkId, u32)]) -> Option<f64> {
        if !self.changed.is_empty() {
            self.recompute();
        }
        self.find(links, f64::INFINITY).map(|c| self.classes[c].rate)
    }

    /// Heap entries over all classes (flows that finish together share one); for tests.
    #[cfg(test)]
    pub(crate) fn heap_entries(&self) -> usize {
        self.classes.iter().map(|c| c.flows.len()).sum()
    }

    fn find(&self, links: &[(LinkId, u32)], cap: f64) -> Option<usize> {
        let mut at = self.index.get(&fingerprint(links, cap)).copied();
        while let Some(c) = at {
            let class = &self.classes[c as usize];
            if class.key == links && class.cap.to_bits() == cap.to_bits() {
                return Some(c as usize);
            }
            at = class.next_same;
        }
        None
    }

    fn class_of(&mut self, links: &[(LinkId, u32)], cap: f64) -> usize {
        if let Some(c) = self.find(links, cap) {
            return c;
        }
        let c = self.classes.len();
        let next_same = self.index.insert(fingerprint(links, cap), c as u32);
        self.classes.push(Class {
            key: links.to_vec(),
            links: links.iter().map(|&(l, w)| (l, w as f64)).collect(),
            slots: vec![0; links.len()],
            cap,
            next_same,
            rate: 0.0,
            served: 0.0,
            flows: BinaryHeap::new(),
            count: 0,
            stamp: 0,
            changed: false,
            joinable: None,
        });
        self.visited.push(false);
        self.frozen.push(false);
        c
    }

    fn mark_changed(&mut self, c: usize) {
        if !self.classes[c].changed {
            self.classes[c].changed = true;
            self.changed.push(c);
        }
    }

    /// Serves every flow up to `to`. Rates are brought up to date first (once per instant
    /// however many flows started or finished at the last one).
    fn progress(&mut self, to: Nanos) {
        if to <= self.now {
            return;
        }
        if !self.changed.is_empty() {
            self.recompute();
        }
        self.next_cache = None;
        let dt = (to - self.now) as f64;
        let mut due = false;
        for &c in &self.active {
            let class = &mut self.classes[c];
            let step = class.rate * dt;
            class.served += step;
            let n = class.count as f64;
            for &(l, w) in &class.links {
                self.link_bytes[l] += w * n * step;
            }
            due |= class.flows.peek().is_some_and(|h| h.0.finish - class.served <= completion_tolerance(class.served));
        }
        self.due_now = due;
        self.now = to;
    }

    /// Refills the connected components of the changed classes (the active classes
    /// reachable from them through shared links), each on its own: their max-min shares
    /// depend on nothing outside them, so every other class keeps its rate.
    fn recompute(&mut self) {
        self.next_cache = None;
        let changed = std::mem::take(&mut self.changed);
        let mut component = std::mem::take(&mut self.component);
        self.all_touched.clear();
        self.all_filled.clear();
        for &c in &changed {
            self.classes[c].changed = false;
        }
        for &c in &changed {
            // A class still active seeds its component (even without links: a class
            // limited by its cap alone); a finished one, the components of its links.
            let seeds = if self.classes[c].count > 0 { 1 } else { self.classes[c].links.len() };
            for s in 0..seeds {
                component.clear();
                self.touched.clear();
                if self.classes[c].count > 0 {
                    if self.visited[c] {
                        continue;
                    }
                    self.visited[c] = true;
                    self.all_filled.push(c);
                    if self.class_alone(c) {
                        self.fill_alone(c);
                        continue;
                    }
                    component.push(c);
                    for &(l, _) in &self.classes[c].links {
                        if !self.mark[l] {
                            self.mark[l] = true;
                            self.touched.push(l);
                        }
                    }
                } else {
                    let l = self.classes[c].links[s].0;
                    // A link left with no active class: an empty component, nothing to
                    // refill (the common case when a flow alone on its links finishes).
                    if self.mark[l] || self.members[l].is_empty() {
                        continue;
                    }
                    if let [(other, _)] = self.members[l][..] {
                        let other = other as usize;
                        if !self.visited[other] && self.class_alone(other) {
                            // The one class left on it, alone on all its links.
                            self.visited[other] = true;
                            self.all_filled.push(other);
                            self.fill_alone(other);
                            continue;
                        }
                    }
                    self.mark[l] = true;
                    self.touched.push(l);
                }
                self.explore(&mut component);
                self.fill(&mut component);
                self.all_touched.extend_from_slice(&self.touched);
                self.all_filled.extend_from_slice(&component);
            }
        }
        for &l in &self.all_touched {
            self.mark[l] = false;
        }
        for &c in &self.all_filled {
            self.visited[c] = false;
        }
        self.changed = changed;
        self.changed.clear();
        self.component = component;
    }

    /// Whether active class `c` is alone in its component: no other active class crosses
    /// any of its links.
    fn class_alone(&self, c: usize) -> bool {
        self.classes[c].links.iter().all(|&(l, _)| self.members[l].len() == 1)
    }

    /// A class alone in its component (no other active class on any of its links): the
    /// progressive filling's one round, with its arithmetic: the lower of its cap and its
    /// links' capacities over its load on them.
    fn fill_alone(&mut self, c: usize) {
        self.classes[c].rate = self.alone_rate(c, self.classes[c].count as f64);
    }

    /// The rate of each of `n` flows of class `c` alone in its component.
    fn alone_rate(&self, c: usize, n: f64) -> f64 {
        let class = &self.classes[c];
        let mut share = f64::INFINITY;
        for &(l, w) in &class.links {
            // As `fill` does (loads summed from 0.0, shares of loaded links only).
            let load = 0.0 + w * n;
            if load > 0.0 {
                share = share.min(self.caps[l] / load);
            }
        }
        if class.cap <= share {
            class.cap
        } else {
            share
        }
    }

    /// Breadth-first from the links in `touched` (and the classes in `component`): adds
    /// every active class and link reachable through shared links.
    fn explore(&mut self, component: &mut Vec<usize>) {
        let mut i = 0;
        while i < self.touched.len() {
            let l = self.touched[i];
            i += 1;
            for &(c, _) in &self.members[l] {
                let c = c as usize;
                if self.visited[c] {
                    continue;
                }
                self.visited[c] = true;
                component.push(c);
                for &(l2, _) in &self.classes[c].links {
                    if !self.mark[l2] {
                        self.mark[l2] = true;
                        self.touched.push(l2);
                    }
                }
            }
        }
    }

    /// Progressive filling of one component (its classes in `component`, its links in
    /// `touched`): raise all unfrozen rates together until a link saturates or a class
    /// reaches its cap; freeze the classes there; repeat.
    fn fill(&mut self, component: &mut [usize]) {
        // The original model's order: classes as they became active.
        let classes = &self.classes;
        component.sort_unstable_by_key(|&c| classes[c].stamp);
        for &l in &self.touched {
            self.rem[l] = self.caps[l];
            self.load[l] = 0.0;
        }
        for &c in component.iter() {
            let class = &self.classes[c];
            let n = class.count as f64;
            for &(l, w) in &class.links {
                self.load[l] += w * n;
            }
        }
        let mut unfrozen = std::mem::take(&mut self.unfrozen);
        let mut freeze = std::mem::take(&mut self.freeze);
        unfrozen.clear();
        unfrozen.extend_from_slice(component);
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
                let n = class.count as f64;
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
        for &c in component.iter() {
            self.frozen[c] = false;
        }
        self.unfrozen = unfrozen;
        self.freeze = freeze;
    }

    fn activate(&mut self, c: usize) {
        self.stamp += 1;
        let class = &mut self.classes[c];
        class.stamp = self.stamp;
        for (j, &(l, _)) in class.links.iter().enumerate() {
            class.slots[j] = self.members[l].len() as u32;
            self.members[l].push((c as u32, j as u32));
        }
        self.active.push(c);
    }

    fn deactivate(members: &mut [Vec<(u32, u32)>], classes: &mut [Class], c: usize) {
        for j in 0..classes[c].links.len() {
            let (l, slot) = (classes[c].links[j].0, classes[c].slots[j] as usize);
            members[l].swap_remove(slot);
            if let Some(&(moved, k)) = members[l].get(slot) {
                classes[moved as usize].slots[k as usize] = slot as u32;
            }
        }
    }

    fn new_group(&mut self, tag: u64, latency: Nanos, notify_sent: bool) -> u32 {
        let group = Group { first: tag, rest: Vec::new(), latency, notify_sent };
        match self.free_groups.pop() {
            Some(g) => {
                self.groups[g as usize] = group;
                g
            }
            None => {
                self.groups.push(group);
                (self.groups.len() - 1) as u32
            }
        }
    }
}

impl NetworkModel for MaxMinFair {
    fn start(&mut self, now: Nanos, flow: FlowSpec<'_>) {
        self.progress(now);
        self.next_cache = None;
        if flow.links.is_empty() && !flow.rate_cap.is_finite() {
            // Host-local transfer: nothing to share.
            if flow.notify_sent {
                self.timeline.push(now, FlowEvent::Sent(flow.tag));
            }
            self.timeline.push(now + flow.latency, FlowEvent::Delivered(flow.tag));
            return;
        }
        let c = self.class_of(flow.links, flow.rate_cap);
        if self.classes[c].count == 0 {
            self.activate(c);
        }
        self.mark_changed(c);
        self.seq += 1;
        let class = &mut self.classes[c];
        class.count += 1;
        let finish = class.served + flow.bytes.max(0.0);
        self.due_now |= finish - class.served <= completion_tolerance(class.served);
        if let Some((at, f, g)) = class.joinable {
            let group = &mut self.groups[g as usize];
            if at == now
                && f.to_bits() == finish.to_bits()
                && group.latency == flow.latency
                && group.notify_sent == flow.notify_sent
            {
                group.rest.push(flow.tag);
                return;
            }
        }
        let g = self.new_group(flow.tag, flow.latency, flow.notify_sent);
        let class = &mut self.classes[c];
        class.joinable = Some((now, finish, g));
        class.flows.push(Reverse(Pending { finish, seq: self.seq, group: g }));
    }

    /// Flows alone on their links are timed by the class arithmetic, without events.
    fn alone(&mut self) -> Option<&mut dyn TimesAlone> {
        Some(self)
    }

    fn next_time(&mut self) -> Option<Nanos> {
        if let Some(t) = self.next_cache {
            return t;
        }
        if !self.changed.is_empty() {
            self.recompute();
        }
        let mut next = self.timeline.next_time();
        for &c in &self.active {
            let class = &self.classes[c];
            let head = class.flows.peek().expect("active classes have flows").0;
            let left = head.finish - class.served;
            if left > completion_tolerance(class.served) && class.rate <= 0.0 {
                continue; // on a link that is down: never, unless its capacity returns
            }
            let t = self.now + time_to_finish(left, class.rate, class.served);
            next = Some(next.map_or(t, |n: Nanos| n.min(t)));
        }
        self.next_cache = Some(next);
        next
    }

    fn next_time_by(&mut self, limit: Option<Nanos>) -> Option<Nanos> {
        if !self.changed.is_empty() && limit.is_some_and(|l| l <= self.now) && !self.instant_links {
            // Only an event now could come first, and whether there is one does not
            // depend on the rates: skip the refilling until time moves.
            let due = self.due_now || self.timeline.next_time().is_some_and(|t| t <= self.now);
            return due.then_some(self.now);
        }
        self.next_time().filter(|&t| limit.is_none_or(|l| t <= l))
    }

    fn advance(&mut self, now: Nanos, out: &mut Vec<FlowEvent>) {
        self.progress(now);
        self.next_cache = None;
        let mut emptied = false;
        for i in 0..self.active.len() {
            let c = self.active[i];
            let class = &mut self.classes[c];
            let tolerance = completion_tolerance(class.served);
            let mut popped = false;
            while let Some(head) = class.flows.peek() {
                if head.0.finish > class.served + tolerance {
                    break;
                }
                let done = class.flows.pop().unwrap().0;
                let group = std::mem::take(&mut self.groups[done.group as usize]);
                for tag in std::iter::once(group.first).chain(group.rest.iter().copied()) {
                    if group.notify_sent {
                        self.timeline.push(now, FlowEvent::Sent(tag));
                    }
                    self.timeline.push(now + group.latency, FlowEvent::Delivered(tag));
                }
                class.count -= 1 + group.rest.len() as u64;
                if class.joinable.is_some_and(|j| j.2 == done.group) {
                    class.joinable = None;
                }
                self.free_groups.push(done.group);
                popped = true;
            }
            if popped {
                self.mark_changed(c);
                if self.classes[c].count == 0 {
                    Self::deactivate(&mut self.members, &mut self.classes, c);
                    emptied = true;
                }
            }
        }
        if emptied {
            let classes = &self.classes;
            self.active.retain(|&c| classes[c].count > 0);
        }
        self.due_now = false;
        self.timeline.pop_due(now, out);
    }

    fn set_capacity(&mut self, now: Nanos, link: LinkId, bytes_per_ns: f64) {
        self.progress(now);
        self.caps[link] = bytes_per_ns;
        let crossing: Vec<usize> = self.members[link].iter().map(|&(c, _)| c as usize).collect();
        for c in crossing {
            self.mark_changed(c);
        }
        self.next_cache = None;
    }

    fn link_bytes(&mut self, now: Nanos) -> &[f64] {
        self.progress(now);
        &self.link_bytes
    }

    fn name(&self) -> &'static str {
        "flow"
    }
}

impl TimesAlone for MaxMinFair {
    /// The flow joins its class as [`NetworkModel::start`] would, alone: its rate is the
    /// one the refilling gives a class alone in its component, its bytes are served at it
    /// until the first whole nanosecond by which they are all served (when the event would
    /// come), and the class and its links are credited with them. The class keeps what it
    /// was served, so a later flow of it finishes as it would have. `memo` keeps the class.
    fn time_alone(&mut self, at: Nanos, flow: &FlowSpec<'_>, memo: &mut Option<u32>) -> Option<Nanos> {
        let mut path = self.alone_path(flow.links, flow.rate_cap, memo)?;
        let (transfer, bytes) = path.serve(flow.bytes)?;
        self.credit_alone(path.class, path.served, bytes);
        Some(at + transfer)
    }

    fn alone_path(&mut self, links: &[(LinkId, u32)], rate_cap: f64, memo: &mut Option<u32>) -> Option<AlonePath> {
        if links.is_empty() || self.instant_links {
            return None;
        }
        let c = match *memo {
            Some(c) if self.classes[c as usize].key == links && self.classes[c as usize].cap == rate_cap => c as usize,
            _ => self.class_of(links, rate_cap),
        };
        *memo = Some(c as u32);
        if self.classes[c].count > 0 {
            return None; // the caller's guarantee does not hold
        }
        Some(AlonePath { class: c as u32, rate: self.alone_rate(c, 1.0), served: self.classes[c].served })
    }

    fn credit_alone(&mut self, class: u32, served: f64, bytes: f64) {
        let class = &mut self.classes[class as usize];
        class.served = served;
        for &(l, w) in &class.links {
            self.link_bytes[l] += w * bytes;
        }
    }
}
