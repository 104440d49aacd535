//! The parts of the engine that protocols use: the clock, the network, routing with
//! folding weights, flow bookkeeping, and the notes protocols leave for the engine.

use super::slab::Slab;
use crate::network::{FlowSpec, NetworkModel};
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
    watched: bool,
    user: u64,
}

/// Engine state shared with protocols.
pub(crate) struct Core {
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
    /// Per-message host overhead added to each message's latency, ns.
    pub overhead: Nanos,
    /// Host copy bandwidth cap per flow, bytes/ns (`INFINITY` for none).
    pub copy_cap: f64,
    pub notes: Vec<Note>,
    flows: Slab<FlowMeta>,
    links: Vec<(LinkId, u32)>,
    route: Vec<LinkId>,
    pub flows_started: u64,
    watched_host: usize,
    watched_active: u32,
    busy_since: Nanos,
    busy_total: Nanos,
}

impl Core {
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
        Core {
            now: 0,
            net,
            topo,
            ranks: host_of_rank.len(),
            host_of_rank,
            folded,
            overhead,
            copy_cap,
            notes: Vec::new(),
            flows: Slab::default(),
            links: Vec::new(),
            route: Vec::new(),
            flows_started: 0,
            watched_host,
            watched_active: 0,
            busy_since: 0,
            busy_total: 0,
        }
    }

    /// Starts a message of `bytes` from host `src` to host `dst`; `user` comes back with its events.
    pub fn send(&mut self, src: usize, dst: usize, bytes: f64, user: u64, notify_sent: bool) {
        self.topo.route_into(src, dst, &mut self.route);
        self.links.clear();
        for &l in &self.route {
            // Folded: a link used by every rank's image of this flow is shared by all N of them.
            let shared = self.folded && self.topo.rank_orbit(l, self.ranks).is_none();
            self.links.push((l, if shared { self.ranks as u32 } else { 1 }));
        }
        let latency = self.topo.path_latency(&self.route) + self.overhead;
        let watched = src == self.watched_host || dst == self.watched_host;
        if watched {
            if self.watched_active == 0 {
                self.busy_since = self.now;
            }
            self.watched_active += 1;
        }
        let tag = self.flows.insert(FlowMeta { watched, user }) as u64;
        self.flows_started += 1;
        let flow = FlowSpec { links: &self.links, bytes, latency, rate_cap: self.copy_cap, tag, notify_sent };
        self.net.start(self.now, flow);
    }

    /// Resolves a network tag to the protocol's tag; `delivered` frees the flow.
    pub fn flow_event(&mut self, tag: u64, delivered: bool) -> u64 {
        if !delivered {
            return self.flows.get(tag as usize).user;
        }
        let meta = self.flows.remove(tag as usize);
        if meta.watched {
            self.watched_active -= 1;
            if self.watched_active == 0 {
                self.busy_total += self.now - self.busy_since;
            }
        }
        meta.user
    }

    /// Time rank 0's host has had at least one message in flight, up to now, ns.
    pub fn comm_busy(&self) -> Nanos {
        self.busy_total + if self.watched_active > 0 { self.now - self.busy_since } else { 0 }
    }
}

/// How a synchronisation protocol reacts to the engine.
pub(crate) trait Protocol {
    /// Rank `rank` starts operation `op` over `tasks` (their payloads concatenated: `bytes`).
    fn start_op(&mut self, core: &mut Core, rank: usize, op: u64, tasks: &[TaskRef], bytes: u64);
    /// A flow the protocol started was sent (`delivered == false`) or delivered.
    fn on_flow(&mut self, core: &mut Core, user: u64, delivered: bool);
}
