//! The parts of the engine that protocols use: the clock, the network, routing with
//! folding weights, flow bookkeeping, and the notes protocols leave for the engine.

use std::collections::{HashMap, VecDeque};

use super::slab::Slab;
use crate::metrics::NcclPick;
use crate::network::{AlonePath, FlowSpec, NetworkModel};
use crate::sched::TaskRef;
use crate::topology::{LinkId, Topology};
use crate::units::Nanos;

/// What a protocol tells the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Note {
    /// The rank's part of operation `op` is over (its scheduler credit may return); with
    /// `synced`, the rank also holds the synchronised values of every task of the op.
    OpDone { rank: usize, op: u64, synced: bool },
    /// The rank now holds the synchronised values of this task's piece.
    TaskSynced { rank: usize, task: TaskRef },
}

#[derive(Debug)]
struct FlowMeta {
    /// The job that started it (multi-job runs; 0 otherwise).
    job: u32,
    watched: bool,
    user: u64,
    /// The (source, destination) connection it holds until sent, with ordered connections.
    pair: Option<(usize, usize)>,
    /// Whether the protocol asked for the sent event (ordered connections always get it).
    wants_sent: bool,
    /// Recorded start, source, destinations, bytes and links (when recording; boxed so
    /// that the slab of flows in flight stays small when not).
    record: Option<Box<FlowStart>>,
}

/// A flow as it started: start, source, destinations, bytes, links.
type FlowStart = (Nanos, usize, Vec<usize>, f64, Vec<LinkId>, &'static str);

/// A finished flow, as recorded: start, end, source, destinations, bytes, links.
pub(crate) type FlowRecord = (Nanos, Nanos, usize, Vec<usize>, f64, Vec<LinkId>, &'static str);

/// A collective timed in closed form, as recorded: start, end, simulated rank, what NCCL
/// chose and the buffer's size S (bytes).
pub(crate) type TimedRecord = (Nanos, Nanos, usize, (NcclPick, f64));

/// Engine state shared with protocols.
pub(crate) struct SimState {
    /// Current simulated time, ns.
    pub now: Nanos,
    pub net: Box<dyn NetworkModel>,
    pub topo: Topology,
    /// Host of each worker rank (a permutation of `0..ranks`); servers follow at `ranks..`.
    pub host_of_rank: Vec<usize>,
    /// Workers in the scenario.
    pub ranks: usize,
    /// One representative rank stands for all (see the engine's module doc).
    pub folded: bool,
    /// Folding by digit translations (`fold.rs`): per link, its orbit's representative and
    /// the weight |H| / orbit size of one crossing. Flows run on representatives only.
    pub link_fold: Option<Vec<(LinkId, u32)>>,
    /// Per-message host overhead added to each message's latency, ns.
    pub overhead: Nanos,
    /// The overhead hides behind the message's own transfer at its path's free rate
    /// (`segments=pipelined`): the message costs latency + max(overhead, transfer).
    pub pipelined_segments: bool,
    /// Host copy bandwidth cap per flow, bytes/ns (`INFINITY` for none).
    pub copy_cap: f64,
    /// The transport's goodput share of every link's line rate (1: line rate): the
    /// network runs at it, failures scale it, utilisation is measured against it.
    pub efficiency: f64,
    pub notes: Vec<Note>,
    flows: Slab<FlowMeta>,
    links: Vec<(LinkId, u32)>,
    route: Vec<LinkId>,
    /// Scratch: the physical links of a folded message.
    physical: Vec<LinkId>,
    pub flows_started: u64,
    /// Of those, the ones timed without events ([`SimState::time_alone`]).
    pub flows_alone: u64,
    /// The job whose messages start now (multi-job runs share one core; 0 otherwise).
    pub job: usize,
    /// Per job: rank 0's host and what it sent (the job's report is about it).
    watched: Vec<WatchedHost>,
    /// Finished flows, when recording.
    pub recorded: Option<Vec<FlowRecord>>,
    /// Collectives timed in closed form, per simulated rank, when recording (set with
    /// `recorded`).
    pub recorded_timed: Option<Vec<TimedRecord>>,
    /// What the messages started now belong to (a collective's name), for recordings.
    pub label: &'static str,
    /// Failures still to happen, and those that did.
    pub failures: super::failures::Pending,
    /// One ordered connection per (source, destination) pair (Gloo's TCP pairs): a unicast
    /// message starts when the one before it on its pair is delivered. Off: every message
    /// is a flow of its own, sharing links max-min with the others.
    pub ordered_pairs: bool,
    /// Per busy pair: the messages waiting for it, in order.
    waiting: HashMap<(usize, usize), VecDeque<Queued>>,
    /// Spans of the watched host's messages timed alone, not yet in its busy time.
    alone_busy: Vec<(Nanos, Nanos)>,
    /// Link rates set by failures: (time, link, bytes/ns), in time order.
    capacity_changes: Vec<(Nanos, LinkId, f64)>,
    /// Protocols' wake-ups: (time, order, job, user).
    timers: std::collections::BinaryHeap<std::cmp::Reverse<(Nanos, u64, usize, u64)>>,
    timer_seq: u64,
}

/// The length of the union of spans that start and end as the run goes (how many are
/// open, since when at least one has been, and the time covered before that), ns.
#[derive(Debug, Clone, Copy, Default)]
struct SpanUnion {
    open: u32,
    since: Nanos,
    closed: Nanos,
}

impl SpanUnion {
    /// A span starts at `now`.
    fn start(&mut self, now: Nanos) {
        if self.open == 0 {
            self.since = now;
        }
        self.open += 1;
    }

    /// A span that [`SpanUnion::start`] counted ends at `now`.
    fn end(&mut self, now: Nanos) {
        self.open -= 1;
        if self.open == 0 {
            self.closed += now - self.since;
        }
    }

    /// The time covered up to `now`.
    fn covered(&self, now: Nanos) -> Nanos {
        self.closed + if self.open > 0 { now - self.since } else { 0 }
    }
}

/// What one job's rank 0 host did: its messages in flight and the time it had any,
/// the bytes and flows it started.
#[derive(Debug, Clone, Default)]
pub(crate) struct WatchedHost {
    host: usize,
    /// Under digit folding, the hosts of the ranks rank 0 stands for (its own among them),
    /// sorted: a message into any of them is the image of one rank 0 receives at that time
    /// (`fold.rs`). Empty otherwise.
    images: Vec<usize>,
    /// Its messages' spans (with those timed alone, merged in as they are known).
    messages: SpanUnion,
    /// Bytes of every message the host started (`Report::sent_bytes_per_worker`).
    pub sent: f64,
    /// Flows the job started.
    pub flows: u64,
    /// Spans of collectives timed in closed form ([`SimState::watch_timed_start`] to
    /// [`SimState::watch_timed_end`]).
    timed: SpanUnion,
    /// Those timed by NCCL's model (`Report::nccl_choices` counts them over the timeline's
    /// period).
    pub timed_picks: Vec<TimedPick>,
}

/// One collective of the watched host timed by NCCL's model.
#[derive(Debug, Clone, Copy)]
pub struct TimedPick {
    /// When it started, ns.
    pub at: Nanos,
    /// What NCCL chose.
    pub pick: NcclPick,
    /// Its buffer's size S, bytes.
    pub size: f64,
    /// Its time alone on its links, ns.
    pub ns: Nanos,
    /// A pair tensorwire times faster than NCCL's choice, and its time, ns
    /// (`crate::nccl::choose_and_fastest`).
    pub faster: Option<(&'static str, &'static str, Nanos)>,
}

impl WatchedHost {
    /// Whether a message into `dsts` is one the watched host receives (or, folded, the
    /// image of one).
    fn receives(&self, dsts: &[usize]) -> bool {
        dsts.iter().any(|d| *d == self.host || self.images.binary_search(d).is_ok())
    }
}

/// The host end of a message between a host and a switch ([`SimState::send_over`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostEnd {
    /// The host sends it (a worker's push to the switch): it is in the host's sent bytes
    /// and pays the host's per-message overhead.
    Sends(usize),
    /// The host receives it from the switch (the switch's aggregate, sent to a server):
    /// the host's own uplink never carries it.
    Receives(usize),
}

/// A unicast message waiting for its connection.
#[derive(Debug, Clone, Copy)]
struct Queued {
    job: usize,
    bytes: f64,
    extra: Nanos,
    user: u64,
    notify_sent: bool,
}

impl SimState {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        net: Box<dyn NetworkModel>,
        topo: Topology,
        host_of_rank: Vec<usize>,
        folded: bool,
        overhead: Nanos,
        copy_cap: f64,
    ) -> Self {
        let watched_host = host_of_rank[0];
        SimState {
            now: 0,
            net,
            topo,
            ranks: host_of_rank.len(),
            host_of_rank,
            folded,
            link_fold: None,
            overhead,
            pipelined_segments: false,
            copy_cap,
            efficiency: 1.0,
            notes: Vec::new(),
            flows: Slab::default(),
            links: Vec::new(),
            route: Vec::new(),
            physical: Vec::new(),
            flows_started: 0,
            flows_alone: 0,
            job: 0,
            watched: vec![WatchedHost { host: watched_host, ..WatchedHost::default() }],
            recorded: None,
            recorded_timed: None,
            label: "",
            failures: Default::default(),
            ordered_pairs: false,
            waiting: HashMap::new(),
            alone_busy: Vec::new(),
            capacity_changes: Vec::new(),
            timers: Default::default(),
            timer_seq: 0,
        }
    }

    /// Starts a message of `bytes` from host `src` to the hosts `dsts` (several: one
    /// multicast message, replicated by the switches, arriving everywhere at once);
    /// `extra` is added to its latency; `user` comes back with its events.
    pub fn send(&mut self, src: usize, dsts: &[usize], bytes: f64, extra: Nanos, user: u64, notify_sent: bool) {
        if self.ordered_pairs && dsts.len() == 1 {
            let q = Queued { job: self.job, bytes, extra, user, notify_sent };
            match self.waiting.get_mut(&(src, dsts[0])) {
                Some(queue) => queue.push_back(q), // the pair is busy: wait in order
                None => {
                    self.waiting.insert((src, dsts[0]), VecDeque::new());
                    self.route_and_start(src, dsts, bytes, extra, user, notify_sent, Some((src, dsts[0])));
                }
            }
            return;
        }
        self.route_and_start(src, dsts, bytes, extra, user, notify_sent, None);
    }

    #[allow(clippy::too_many_arguments)]
    fn route_and_start(
        &mut self,
        src: usize,
        dsts: &[usize],
        bytes: f64,
        extra: Nanos,
        user: u64,
        notify_sent: bool,
        pair: Option<(usize, usize)>,
    ) {
        let latency = self.route_links(src, dsts);
        self.start(src, dsts, bytes, latency + extra, user, notify_sent, pair);
    }

    /// Routes a message from host `src` to the hosts `dsts` into `self.links` (with the
    /// folding weights); returns its path latency, ns.
    fn route_links(&mut self, src: usize, dsts: &[usize]) -> Nanos {
        self.links.clear();
        let mut latency = 0;
        if self.link_fold.is_some() {
            self.fold_route(src, dsts, &mut latency);
            return latency;
        }
        // Folded multicast (an all-gather by multicast on a star): the representative uses
        // one destination's downlink, shared by the images of every sender multicasting
        // to that receiver, i.e. `dsts.len()` of them.
        let fold_multicast = self.folded && dsts.len() > 1;
        let targets = if fold_multicast { &dsts[..1] } else { dsts };
        for &dst in targets {
            self.topo.route_into(src, dst, &mut self.route);
            latency = latency.max(self.topo.path_latency(&self.route));
            let last = self.route.last().copied();
            for &l in &self.route {
                if self.links.iter().any(|&(x, _)| x == l) {
                    continue;
                }
                let weight = match (self.folded, self.topo.rank_orbit(l, self.ranks).is_some()) {
                    (false, _) => 1,
                    // A link used by every rank's image of this flow is shared by all N of them.
                    (true, false) => self.ranks as u32,
                    (true, true) if fold_multicast && Some(l) == last => dsts.len() as u32,
                    (true, true) => 1,
                };
                self.links.push((l, weight));
            }
        }
        latency
    }

    /// The host of `rank`: in `hosts` where its job has hosts of its own (a job of a
    /// multi-job run), else where the core places its ranks.
    pub fn host_of(&self, hosts: Option<&[usize]>, rank: usize) -> usize {
        match hosts {
            Some(h) => h[rank],
            None => self.host_of_rank[rank],
        }
    }

    /// The links (with folding weights) and path latency (ns) of a message from host `src`
    /// to the hosts `dsts`, as [`SimState::send`] routes it.
    pub fn path(&mut self, src: usize, dsts: &[usize]) -> (Vec<(LinkId, u32)>, Nanos) {
        let latency = self.route_links(src, dsts);
        (self.links.clone(), latency)
    }

    /// Digit folding: the links of the message's route (the union over its destinations)
    /// folded onto their orbits' representatives, each crossing adding |H| / |orbit| images
    /// (see `fold.rs`); sets `latency` to the longest route's.
    fn fold_route(&mut self, src: usize, dsts: &[usize], latency: &mut Nanos) {
        let mut physical = std::mem::take(&mut self.physical);
        physical.clear();
        for &dst in dsts {
            self.topo.route_into(src, dst, &mut self.route);
            *latency = (*latency).max(self.topo.path_latency(&self.route));
            for &l in &self.route {
                if !physical.contains(&l) {
                    physical.push(l);
                }
            }
        }
        let fold = self.link_fold.as_ref().expect("digit folding");
        for &l in &physical {
            let (rep, weight) = fold[l];
            match self.links.iter_mut().find(|(x, _)| *x == rep) {
                Some((_, w)) => *w += weight,
                None => self.links.push((rep, weight)),
            }
        }
        self.physical = physical;
    }

    /// Starts a message over explicit links between a host and a switch that aggregates
    /// (`end` says which end is the host and whether it sends or receives).
    pub fn send_over(&mut self, links: &[LinkId], end: HostEnd, bytes: f64, user: u64, notify_sent: bool) {
        self.links.clear();
        self.links.extend(links.iter().map(|&l| (l, 1)));
        let latency = self.topo.path_latency(links);
        match end {
            HostEnd::Sends(host) => self.start(host, &[], bytes, latency, user, notify_sent, None),
            HostEnd::Receives(host) => self.start_from_switch(host, bytes, latency, user, notify_sent),
        }
    }

    /// Starts a message a switch sends to `host` over `self.links` (path latency `latency`,
    /// ns): no host sent it, so it is in no host's sent bytes and pays no host's
    /// per-message overhead. It counts in the watched host's busy time if that host
    /// receives it. Recorded under that host with no destination, as a push to the switch
    /// is under its sender (a timeline names hosts, not switches).
    fn start_from_switch(&mut self, host: usize, bytes: f64, latency: Nanos, user: u64, notify_sent: bool) {
        let w = &mut self.watched[self.job];
        let watched = w.receives(&[host]);
        self.launch(host, &[], watched, bytes, latency, user, notify_sent, None);
    }

    /// Starts a message host `src` sends to the hosts `dsts` (none: to a switch) over
    /// `self.links`: `latency` (ns) plus the host's per-message overhead; in the watched
    /// host's sent bytes if it sends it and it leaves the host.
    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        src: usize,
        dsts: &[usize],
        bytes: f64,
        latency: Nanos,
        user: u64,
        notify_sent: bool,
        pair: Option<(usize, usize)>,
    ) {
        let latency = latency + self.overhead_of(bytes);
        let w = &mut self.watched[self.job];
        let watched = src == w.host || w.receives(dsts);
        // On the wire: a copy to its own host (a co-located server's share) never leaves it.
        if src == w.host && (dsts.is_empty() || dsts.iter().any(|&d| d != src)) {
            w.sent += bytes;
        }
        self.launch(src, dsts, watched, bytes, latency, user, notify_sent, pair);
    }

    /// Hands a message to the network model, its host's bytes and overhead already
    /// accounted for: counts it in the job's flows (and, `watched`, in the watched host's
    /// busy time), records it (as from `src` to `dsts`) when recording. `latency`: its
    /// whole delay besides the transfer, ns.
    #[allow(clippy::too_many_arguments)]
    fn launch(
        &mut self,
        src: usize,
        dsts: &[usize],
        watched: bool,
        bytes: f64,
        latency: Nanos,
        user: u64,
        notify_sent: bool,
        pair: Option<(usize, usize)>,
    ) {
        let now = self.now;
        let w = &mut self.watched[self.job];
        w.flows += 1;
        if watched {
            w.messages.start(now);
        }
        let record = self.recorded.as_ref().map(|_| {
            Box::new((self.now, src, dsts.to_vec(), bytes, self.links.iter().map(|&(l, _)| l).collect(), self.label))
        });
        let job = self.job as u32;
        let tag = self.flows.insert(FlowMeta { job, watched, user, pair, wants_sent: notify_sent, record }) as u64;
        self.flows_started += 1;
        let notify_sent = notify_sent || pair.is_some();
        let flow = FlowSpec { links: &self.links, bytes, latency, rate_cap: self.copy_cap, tag, notify_sent };
        self.net.start(self.now, flow);
    }

    /// The overhead a message of `bytes` adds to its latency over the links in
    /// `self.links`: all of it, or with pipelined segments what its transfer at the path's
    /// free rate (the slowest link's share, the copy cap) does not hide.
    fn overhead_of(&self, bytes: f64) -> Nanos {
        self.overhead_over(&self.links, bytes)
    }

    /// [`SimState::overhead_of`] for a message over `links`.
    fn overhead_over(&self, links: &[(LinkId, u32)], bytes: f64) -> Nanos {
        let Some(rate) = self.overhead_rate(links) else {
            return self.overhead;
        };
        let transfer = if rate > 0.0 { (bytes / rate).round() } else { f64::INFINITY };
        if transfer >= self.overhead as f64 {
            0
        } else {
            self.overhead - transfer as Nanos
        }
    }

    /// The rate whose transfer time hides the host overhead of a message over `links`
    /// (pipelined segments: the slowest link's share, the copy cap); `None` when the whole
    /// overhead counts whatever the message.
    pub fn overhead_rate(&self, links: &[(LinkId, u32)]) -> Option<f64> {
        if !self.pipelined_segments || self.overhead == 0 {
            return None;
        }
        Some(
            links
                .iter()
                .map(|&(l, weight)| self.topo.links()[l].bytes_per_ns / f64::from(weight))
                .fold(self.copy_cap, f64::min),
        )
    }

    /// Times a message that has its links to itself (see `lanes.rs`) without an event:
    /// sent at `at` from host `src` to the hosts `dsts` over `links` (path latency
    /// `latency`), it is counted as [`SimState::send`] would count it (flows, rank 0's bytes and
    /// busy time, link bytes); returns when it is delivered. `memo`: the network model's,
    /// per path ([`TimesAlone::time_alone`]). `None`: the network model has no such
    /// shortcut.
    ///
    /// [`TimesAlone::time_alone`]: crate::network::TimesAlone::time_alone
    #[allow(clippy::too_many_arguments)]
    pub fn time_alone(
        &mut self,
        at: Nanos,
        src: usize,
        dsts: &[usize],
        links: &[(LinkId, u32)],
        latency: Nanos,
        bytes: f64,
        extra: Nanos,
        memo: &mut Option<u32>,
    ) -> Option<Nanos> {
        let latency = self.alone_delay(links, latency, bytes, extra);
        let flow = FlowSpec { links, bytes, latency, rate_cap: self.copy_cap, tag: 0, notify_sent: false };
        let delivered = self.net.alone()?.time_alone(at, &flow, memo)? + latency;
        self.count_alone(1);
        if self.watches(src, dsts) {
            self.watch_alone(src, at, delivered, bytes);
        }
        Some(delivered)
    }

    /// The network model's state of the path `links` for flows alone on it
    /// ([`TimesAlone::alone_path`], with the copy cap); `memo` as for
    /// [`SimState::time_alone`].
    ///
    /// [`TimesAlone::alone_path`]: crate::network::TimesAlone::alone_path
    pub fn alone_path(&mut self, links: &[(LinkId, u32)], memo: &mut Option<u32>) -> Option<AlonePath> {
        self.net.alone()?.alone_path(links, self.copy_cap, memo)
    }

    /// A message's time on the wire besides its transfer when sent over `links` (its path
    /// latency given): latency, the receiver's add time `extra` and the host overhead.
    pub fn alone_delay(&self, links: &[(LinkId, u32)], latency: Nanos, bytes: f64, extra: Nanos) -> Nanos {
        latency + extra + self.overhead_over(links, bytes)
    }

    /// Counts `messages` timed alone as [`SimState::send`] counts messages: flows started, the
    /// current job's flows (the watched host's part: [`SimState::watch_alone`]).
    pub fn count_alone(&mut self, messages: u64) {
        self.flows_started += messages;
        self.flows_alone += messages;
        self.watched[self.job].flows += messages;
    }

    /// Whether the current job's rank 0 host sends or receives a message from `src` to `dsts`.
    pub fn watches(&self, src: usize, dsts: &[usize]) -> bool {
        let w = &self.watched[self.job];
        src == w.host || w.receives(dsts)
    }

    /// Folds the run by digit translations (`fold.rs`): the links' orbit weights, and rank
    /// 0's images, so that its report counts the messages it receives from ranks that are
    /// not simulated (their images arrive at another rank of its orbit). Without them,
    /// "rank 0 communicating" under folding left out every message into rank 0 from another
    /// machine: 28 ms against 158 ms unfolded, 16 ranks of 2 DGX A100 machines.
    pub(crate) fn fold_by_digits(&mut self, fold: super::fold::DigitFold) -> super::fold::RankFold {
        self.link_fold = Some(fold.links);
        let zero = fold.ranks.slot(0);
        let mut images: Vec<usize> =
            (0..fold.ranks.slot.len()).filter(|&r| fold.ranks.slot(r) == zero).map(|r| self.host_of_rank[r]).collect();
        images.sort_unstable();
        images.dedup();
        self.watched[0].images = images;
        fold.ranks
    }

    /// The watched host's part of a message it sends or receives ([`SimState::watches`]), timed
    /// alone from `at` until `delivered`: the bytes it sent and its busy time.
    pub fn watch_alone(&mut self, src: usize, at: Nanos, delivered: Nanos, bytes: f64) {
        let w = &mut self.watched[self.job];
        if src == w.host {
            w.sent += bytes;
        }
        self.alone_busy.push((at, delivered));
    }

    /// Adds the time the watched host had messages timed by [`SimState::time_alone`] in flight
    /// to its busy time (the union of their spans). Call once those messages are all timed
    /// and before anyone asks for the busy time past their start.
    pub fn settle_alone(&mut self) {
        let mut spans = std::mem::take(&mut self.alone_busy);
        spans.sort_unstable();
        let w = &mut self.watched[self.job];
        let mut open: Option<(Nanos, Nanos)> = None;
        for &(start, end) in &spans {
            match open {
                Some((s, e)) if start <= e => open = Some((s, e.max(end))),
                _ => {
                    if let Some((s, e)) = open {
                        w.messages.closed += e - s;
                    }
                    open = Some((start, end));
                }
            }
        }
        if let Some((s, e)) = open {
            w.messages.closed += e - s;
        }
        spans.clear();
        self.alone_busy = spans;
    }

    /// Hands `user` back to the current job's protocol ([`Protocol::on_timer`]) at `at`.
    pub fn wake_at(&mut self, at: Nanos, user: u64) {
        self.timer_seq += 1;
        self.timers.push(std::cmp::Reverse((at, self.timer_seq, self.job, user)));
    }

    /// When the next timer is due.
    pub fn next_timer(&self) -> Option<Nanos> {
        self.timers.peek().map(|t| t.0 .0)
    }

    /// The next timer due by `now`: (job, user).
    pub fn pop_timer(&mut self, now: Nanos) -> Option<(usize, u64)> {
        if self.next_timer()? > now {
            return None;
        }
        let std::cmp::Reverse((_, _, job, user)) = self.timers.pop()?;
        self.job = job;
        Some((job, user))
    }

    /// Resolves a network tag to the protocol's tag (`None`: an event the protocol did not
    /// ask for); `delivered` frees the flow. With ordered connections, a message's sent
    /// event frees its connection for the next message (the bytes follow each other on the
    /// wire; the per-message latency and overhead overlap).
    pub fn flow_event(&mut self, tag: u64, delivered: bool) -> Option<u64> {
        if !delivered {
            let meta = self.flows.get_mut(tag as usize);
            let (pair, wants, user) = (meta.pair.take(), meta.wants_sent, meta.user);
            self.job = meta.job as usize;
            if let Some((src, dst)) = pair {
                match self.waiting.get_mut(&(src, dst)).and_then(|q| q.pop_front()) {
                    Some(q) => {
                        let job = std::mem::replace(&mut self.job, q.job);
                        self.route_and_start(src, &[dst], q.bytes, q.extra, q.user, q.notify_sent, Some((src, dst)));
                        self.job = job;
                    }
                    None => {
                        self.waiting.remove(&(src, dst));
                    }
                }
            }
            return wants.then_some(user);
        }
        let meta = self.flows.remove(tag as usize);
        if let (Some(out), Some(record)) = (self.recorded.as_mut(), meta.record) {
            let (start, src, dsts, bytes, links, label) = *record;
            out.push((start, self.now, src, dsts, bytes, links, label));
        }
        self.job = meta.job as usize;
        if meta.watched {
            self.watched[self.job].messages.end(self.now);
        }
        Some(meta.user)
    }

    /// How long a message of `bytes` from host `src` to host `dst` takes to leave `src`:
    /// its transfer at the first link's rate now (the transport's share of line rate, as
    /// failures left it) and the host copy cap, ns; the copy alone for a host-local message.
    /// A sender that hands its next message to the network at this time keeps its own link
    /// busy while a message held up further on drains from the switch's buffers.
    pub fn leave_time(&mut self, src: usize, dst: usize, bytes: f64) -> Nanos {
        self.topo.route_into(src, dst, &mut self.route);
        let rate = match self.route.first() {
            Some(&l) => self.link_rate_now(l).min(self.copy_cap),
            None => self.copy_cap,
        };
        if rate.is_finite() && rate > 0.0 {
            crate::limits::nanos_clamped((bytes / rate).ceil())
        } else {
            0
        }
    }

    /// Link `l`'s capacity now, bytes/ns: its nominal rate, or what the last failure on it
    /// left.
    fn link_rate_now(&self, l: LinkId) -> f64 {
        self.capacity_changes.iter().rev().find(|c| c.1 == l).map_or(self.nominal_rate(l), |c| c.2)
    }

    /// Link `l`'s rate without failures, bytes/ns: the transport's share of its line rate.
    fn nominal_rate(&self, l: LinkId) -> f64 {
        self.topo.links()[l].bytes_per_ns * self.efficiency
    }

    /// Applies the next failure: its links' capacities become the given fraction of their
    /// nominal rates from its time on.
    pub fn apply_next_failure(&mut self) {
        if let Some((at, links, rate)) = self.failures.take() {
            self.now = self.now.max(at);
            for l in links {
                let nominal = self.nominal_rate(l);
                self.net.set_capacity(self.now, l, nominal * rate);
                self.capacity_changes.push((self.now, l, nominal * rate));
            }
        }
    }

    /// Bytes link `l` could have carried from `start` to `end` (ns): its nominal rate, and
    /// the rates failures gave it from when they did.
    pub fn capacity_over(&self, l: LinkId, start: Nanos, end: Nanos) -> f64 {
        let mut rate = self.nominal_rate(l);
        let mut from = start;
        let mut total = 0.0;
        for &(at, _, new) in self.capacity_changes.iter().filter(|c| c.1 == l) {
            if at > from {
                total += rate * (at.min(end) - from) as f64;
                from = at.min(end);
            }
            rate = new;
        }
        total + rate * (end - from) as f64
    }

    /// Time job `job`'s rank 0 host has had at least one message or timed collective in
    /// flight, up to now, ns.
    pub fn comm_busy_of(&self, job: usize) -> Nanos {
        let w = &self.watched[job];
        w.messages.covered(self.now) + w.timed.covered(self.now)
    }

    /// The current job's rank 0 starts a collective timed in closed form (`timed.rs`) now
    /// and sends `timed.sent` bytes for it; what NCCL chose for it (`timed.pick`, with the
    /// buffer's size) is counted in the report. Its communication time is the union of the
    /// spans from such starts to their [`SimState::watch_timed_end`]s (known only then:
    /// concurrent collectives share their links), its bytes sent their sum.
    pub(crate) fn watch_timed_start(&mut self, timed: &super::timed::Timed) {
        let now = self.now;
        let w = &mut self.watched[self.job];
        w.sent += timed.sent;
        if let Some((pick, size)) = timed.pick {
            w.timed_picks.push(TimedPick { at: now, pick, size, ns: timed.ns, faster: timed.faster });
        }
        w.timed.start(now);
    }

    /// A collective of the current job's rank 0 that [`SimState::watch_timed_start`]
    /// counted ends now.
    pub fn watch_timed_end(&mut self) {
        self.watched[self.job].timed.end(self.now);
    }

    /// What job `job`'s rank 0 host sent, and the flows the job started.
    pub fn watched_host(&self, job: usize) -> &WatchedHost {
        &self.watched[job]
    }

    /// Adds a job whose rank 0 sits on `host`; returns its index (multi-job runs).
    pub fn add_job(&mut self, host: usize) -> usize {
        self.watched.push(WatchedHost { host, ..WatchedHost::default() });
        self.watched.len() - 1
    }

    /// Sets job 0's rank 0 host (multi-job runs place job 0 anywhere).
    pub fn set_first_job_host(&mut self, host: usize) {
        self.watched[0].host = host;
    }
}

/// How a synchronisation protocol reacts to the engine.
pub(crate) trait Protocol {
    /// Rank `rank` starts operation `op` over `tasks` (their payloads concatenated: `bytes`).
    fn start_op(&mut self, core: &mut SimState, rank: usize, op: u64, tasks: &[TaskRef], bytes: u64);
    /// A flow the protocol started was sent (`delivered == false`) or delivered.
    fn on_flow(&mut self, core: &mut SimState, user: u64, delivered: bool);
    /// A wake-up the protocol asked for ([`SimState::wake_at`]) is due.
    fn on_timer(&mut self, _core: &mut SimState, _user: u64) {}
}

#[cfg(test)]
mod tests {
    use super::SpanUnion;

    /// Overlapping spans count once, gaps not at all, an open span up to now.
    #[test]
    fn a_span_union_covers_what_any_span_covers() {
        let mut u = SpanUnion::default();
        u.start(10);
        u.start(15);
        u.end(20);
        assert_eq!(u.covered(25), 15);
        u.end(30);
        u.start(50);
        assert_eq!(u.covered(50), 20);
        assert_eq!(u.covered(60), 30);
        u.end(70);
        assert_eq!(u.covered(100), 40);
    }
}
