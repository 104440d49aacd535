//! **Coordination**: when a released gradient collective starts, and on which ranks.
//!
//! A worker's backward pass hands each layer's gradient pieces ([`TaskRef`]s) to a
//! [`Scheduler`](crate::sched::Scheduler), which fuses and orders them and releases
//! collectives ([`Group`](crate::sched::Group)s). This module decides what happens between
//! "ready on a rank" and "started by the protocol":
//!
//! - **Coordinated release** (all-reduce). Ranks must issue collectives in one order, or
//!   they deadlock (as NCCL would), so one coordinator scheduler serves every rank and a
//!   task reaches it only once every rank has it ready (`ready_on`). The next collective
//!   is released once every simulated rank has finished its part (`op_done_on_rank`).
//!   Parameter-server workers push independently, each through its own scheduler.
//! - **Partial collectives** (eager-SGD, seed 002). A task is released when its
//!   initiator has it: the first ready rank (`solo`) or a rank drawn per task from the
//!   scenario's seed (`majority`). The initiator starts at once; every other rank starts
//!   when the activation reaches it along the binomial activation tree, one small
//!   message (path latency plus per-message overhead, ns) per hop. The activation starts
//!   when the round is released, which may be after its initiator became ready: rounds
//!   queue behind the collectives in flight (one at a time by default). The ranks ready
//!   by the time the activation reaches them (the initiator, those ready before the
//!   release, waiting in the queue included, and those ready while it travels, a tie
//!   included) are counted per round (`active`, the report's `nap`), as the runtime
//!   counts the calls that arrived before the activation.
//! - **Dispatch and stream pacing.** A coordinator that pays `dispatch` ns of CPU work per
//!   collective (`strategy.dispatch`) dispatches one at a time; with `execution=stream`
//!   collectives also run one after another on one stream, each starting no earlier than
//!   the previous one's end and one `dispatch` after its start.
//!
//! Times are integer nanoseconds of simulated time (`core.now`). Everything here is
//! deterministic: ties are broken by the engine's event sequence numbers and the only
//! random draw (majority initiators) comes from a stream seeded by the scenario.

use std::cmp::Reverse;

use super::state::SimState;
use super::{Engine, Event, OpState};
use crate::sched::TaskRef;
use crate::strategy::Partial;
use crate::units::Nanos;

impl Engine<'_> {
    /// Worker `w` finished the backward pass of layer `l` in iteration `k`: hands the
    /// layer's tasks to its scheduler (coordinated: those now ready on every rank, or on
    /// the initiator for partial collectives) and starts what the scheduler releases.
    pub(super) fn gradients_ready(&mut self, core: &mut SimState, w: usize, l: usize, k: u32) {
        let scope = if self.coordinated { 0 } else { w };
        let now = core.now;
        for i in 0..self.layer_tasks[l].len() {
            let id = self.layer_tasks[l][i];
            let (layer, bytes) = (self.tasks[id as usize].layer, self.tasks[id as usize].bytes);
            let r = TaskRef { iteration: k, task: id };
            // A partial round already released: this rank contributes if it is ready by the
            // time the activation reaches it (its call arrived first, as the runtime counts),
            // a tie included.
            if let Some(&(round, released_at, initiator)) = self.open_rounds.get(&r) {
                if now <= released_at + self.activation_delay(core, initiator, w) {
                    self.active[round].1 += 1;
                }
            }
            self.join_rounds_held_by_lag(core, w, r);
            if self.coordinated && !self.ready_everywhere(w, r) {
                continue;
            }
            self.scheds[scope].sched.notify_ready(now, r, layer, bytes);
        }
        self.release(core, scope);
    }

    /// `max_lag`: rank `w` has `r` ready; the rounds whose activation waited for it start on
    /// `w` now (with `max_lag=0` the rank joins with this very gradient: every rank is
    /// counted active when the round is released).
    fn join_rounds_held_by_lag(&mut self, core: &SimState, w: usize, r: TaskRef) {
        let Some(lag) = self.lag.as_mut() else { return };
        lag.note_ready(w, r);
        let ops = &self.ops;
        for op in lag.released(w, |op| ops.get(op as usize).tasks.as_slice()) {
            self.seq += 1;
            self.queue.push(Reverse((core.now, self.seq, Event::Activate { rank: w, op })));
        }
    }

    /// Coordinated scheduling: counts rank `w` as ready for `r` and says whether the
    /// coordinator may now schedule it: once every rank has it, or, for partial
    /// collectives, when its initiator has it (seed 002): the first rank (solo) or a rank
    /// drawn for the round from the shared seed (majority).
    fn ready_everywhere(&mut self, w: usize, r: TaskRef) -> bool {
        let n = self.workers.len();
        let count = self.ready_on.entry(r).or_insert(0);
        *count += 1;
        let count = *count;
        let release = match self.sc.strategy.partial {
            None => count == n,
            Some(Partial::Solo) => count == 1,
            Some(Partial::Majority) => {
                let initiators = &mut self.initiators;
                w == *self.designated.entry(r).or_insert_with(|| rand::Rng::gen_range(initiators, 0..n))
            }
        };
        if count == n {
            self.ready_on.remove(&r);
            self.designated.remove(&r);
            self.open_rounds.remove(&r);
        }
        if release && self.sc.strategy.partial.is_some() {
            self.round_of.insert(r, w);
        }
        release
    }

    /// Ranks that have task `r` ready now: its count while some rank still lacks it, every
    /// rank once all have it (the count is dropped then). A partial round counts them when
    /// it is released, not when its initiator became ready: the activation starts then
    /// (seed 002 section 6.1: the processes that arrived before the initiator's activation
    /// reached them are active), so ranks that became ready while the round waited behind
    /// the collectives in flight contribute too.
    fn ready_now(&self, r: TaskRef) -> usize {
        self.ready_on.get(&r).copied().unwrap_or(self.workers.len())
    }

    /// Time for a partial collective's activation to travel from `initiator` to `rank`
    /// along the binomial activation tree: one small message per hop of the tree.
    fn activation_delay(&self, core: &SimState, initiator: usize, rank: usize) -> Nanos {
        let n = self.workers.len();
        let mut delay = 0;
        let mut at = rank;
        while let Some(parent) = crate::collectives::activation_parent(at, n, initiator) {
            let (a, b) = (core.host_of(self.hosts.as_deref(), parent), core.host_of(self.hosts.as_deref(), at));
            delay += core.topo.path_latency(&core.topo.route(a, b)) + core.overhead;
            at = parent;
        }
        delay
    }

    /// Starts what scheduler `scope` releases now, and arms its fusion timer.
    fn release(&mut self, core: &mut SimState, scope: usize) {
        let mut released = std::mem::take(&mut self.released);
        released.clear();
        let now = core.now;
        let slot = &mut self.scheds[scope];
        slot.sched.poll(now, &mut released);
        if let Some(deadline) = slot.sched.next_deadline() {
            if slot.timer_at != Some(deadline) {
                slot.timer_at = Some(deadline);
                self.seq += 1;
                self.queue.push(Reverse((deadline.max(now), self.seq, Event::Timer(scope))));
            }
        }
        for group in &released {
            let tasks: Vec<TaskRef> = group.tasks.iter().map(|&(t, _)| t).collect();
            let op = self.ops.insert(OpState { tasks: tasks.clone(), bytes: group.bytes, scope, done: 0 }) as u64;
            if let Some(initiator) = self.round_of.remove(&tasks[0]) {
                // A partial round: the initiator starts now, the others when activated;
                // every rank ready by now is active.
                // With max_lag=0 every rank joins with its own gradient of the round: all active.
                let synchronous = self.lag.as_ref().is_some_and(|l| l.synchronous());
                let ready = if synchronous { self.workers.len() } else { self.ready_now(tasks[0]) };
                self.active.push((tasks[0].iteration, ready));
                if ready < self.workers.len() {
                    self.open_rounds.insert(tasks[0], (self.active.len() - 1, now, initiator));
                }
                self.collective_started(core, op);
                self.protocol.start_op(core, initiator, op, &tasks, group.bytes);
                for rank in (0..self.workers.len()).filter(|&r| r != initiator) {
                    let at = now + self.activation_delay(core, initiator, rank);
                    self.seq += 1;
                    self.queue.push(Reverse((at, self.seq, Event::Activate { rank, op })));
                }
            } else if self.coordinated && (self.dispatch > 0 || self.stream.is_some()) {
                // The coordinator dispatches collectives one at a time, `dispatch` each; on
                // a stream a dispatched collective also waits for the one before to end and
                // starts at least `dispatch` after it started (`next_on_stream`).
                let at = if self.dispatch > 0 { now.max(self.dispatch_free) + self.dispatch } else { now };
                self.dispatch_free = at;
                match self.stream.as_mut() {
                    Some(waiting) => {
                        waiting.push_back((at, op));
                        self.next_on_stream(core);
                    }
                    None => self.activate_all(at, op),
                }
            } else if self.coordinated {
                self.collective_started(core, op);
                for rank in 0..self.net_ranks {
                    self.protocol.start_op(core, rank, op, &tasks, group.bytes);
                }
            } else {
                self.protocol.start_op(core, scope, op, &tasks, group.bytes);
            }
        }
        self.released = released;
    }

    /// Starts operation `op` on every rank at `at`.
    fn activate_all(&mut self, at: Nanos, op: u64) {
        for rank in 0..self.net_ranks {
            self.seq += 1;
            self.queue.push(Reverse((at, self.seq, Event::Activate { rank, op })));
        }
    }

    /// `execution=stream`: starts the next waiting collective if the stream is free, no
    /// earlier than its dispatch's end and one `dispatch` after the previous start: the
    /// per-collective cost (a runtime's CPU work on every host) overlaps the collective
    /// before, but a collective dispatched early still cannot follow a long one back to
    /// back, so short collectives run at one per `dispatch` at best.
    fn next_on_stream(&mut self, core: &mut SimState) {
        if self.stream_busy {
            return;
        }
        if let Some((at, op)) = self.stream.as_mut().and_then(|w| w.pop_front()) {
            self.stream_busy = true;
            let paced = self.stream_started.map_or(at, |s| s + self.dispatch);
            let at = at.max(core.now).max(paced);
            self.stream_started = Some(at);
            self.activate_all(at, op);
        }
    }

    /// A scheduler's fusion deadline at `t` (ns): clears the timer if it is the one armed
    /// and starts what the scheduler releases now.
    pub(super) fn fusion_timer(&mut self, core: &mut SimState, scope: usize, t: Nanos) {
        if self.scheds[scope].timer_at == Some(t) {
            self.scheds[scope].timer_at = None;
        }
        self.release(core, scope);
    }

    /// A delayed start (activation, dispatch or stream turn) reaches `rank`: it starts its
    /// part of operation `op`.
    pub(super) fn activate(&mut self, core: &mut SimState, rank: usize, op: u64) {
        let state = self.ops.get(op as usize);
        let (tasks, bytes) = (state.tasks.clone(), state.bytes);
        self.protocol.start_op(core, rank, op, &tasks, bytes);
    }

    /// A rank finished its part of `op`. Once every rank that takes part has (every
    /// simulated rank when coordinated, else the one), frees the stream, tells the
    /// scheduler the bytes are no longer in flight and starts what it releases next.
    pub(super) fn op_done_on_rank(&mut self, core: &mut SimState, op: u64) {
        let needed = if self.coordinated { self.net_ranks } else { 1 };
        let state = self.ops.get_mut(op as usize);
        state.done += 1;
        if state.done == needed {
            let OpState { bytes, scope, .. } = self.ops.remove(op as usize);
            if self.stream.is_some() {
                self.stream_busy = false;
                self.next_on_stream(core);
            }
            self.scheds[scope].sched.notify_finish(bytes);
            self.release(core, scope);
        }
    }
}
