//! Executor for step-synchronous collectives (ring, doubling, trees): the schedule says
//! what each rank sends and receives at each step; a rank moves to step s+1 when all its
//! step-s messages were delivered and all its step-s receives arrived. A message is sent
//! only once every receiver has itself started the collective (an NCCL-style rendezvous:
//! the receiving kernel must be running). A received chunk that is added to local data
//! costs `reduce_ns_per_byte` per byte at the receiver (seed 001's AddEst), charged to
//! the message's arrival.
//!
//! Folded mode simulates rank 0 only. By symmetry every rank is at the same step at the
//! same time and what rank 0 receives at step s arrives exactly when its own step-s
//! messages are delivered, so one flow per message stands for all N.
//!
//! Digit-folded mode (`fold.rs`) simulates the representative ranks, at indices
//! `0..reps`: a message to rank `b` counts as received by `b`'s representative.
//!
//! Lane mode (`lanes.rs`): when every message has links of its own, an operation is timed
//! all at once when its last rank starts it, and each rank's completion comes back as a
//! timer.

use super::fold::RankFold;
use super::lanes::{LaneGroups, Lanes};
use super::slab::{IdTable, Slab};
use super::state::{Note, Protocol, SimState};
use crate::collectives::{Ranks, Send, StepSchedule};
use crate::sched::TaskRef;
use crate::units::Nanos;

#[derive(Debug, Default, Clone)]
struct RankState {
    started: bool,
    step: usize,
    sends_left: usize,
    recvs_left: usize,
    /// Receives that arrived before this rank reached their step: (step, count).
    early: Vec<usize>,
}

#[derive(Debug)]
struct Op {
    /// Index of its schedule in [`StepCollective`]'s list.
    schedule: usize,
    /// Bytes on the wire (after compression).
    bytes: f64,
    pipeline: usize,
    chunks: usize,
    steps: usize,
    ranks: Vec<RankState>,
    /// Sends waiting for a receiver to start, by the simulated rank they wait for (the first
    /// of their receivers not started): (order deferred, sender, step, index of the send in
    /// the step). Each rank's start looks only at the sends waiting for it: scanning every
    /// deferred send at every start was quadratic (`double-tree` on 450,000 workers spent
    /// minutes in one event, deaf to Ctrl-C).
    deferred: std::collections::HashMap<usize, Vec<(u64, usize, usize, usize)>>,
    /// Sends deferred so far (their order, kept when they are released).
    deferrals: u64,
    finished: usize,
    /// Lane mode: when each simulated rank started, and how many have.
    starts: Vec<Nanos>,
    started: usize,
}

impl Op {
    /// Keeps deferred send `(order, sender, step, index)` until simulated rank `receiver`
    /// starts.
    fn defer(&mut self, receiver: usize, send: (u64, usize, usize, usize)) {
        self.deferred.entry(receiver).or_default().push(send);
    }

    /// The first simulated rank among `send`'s receivers that has not started the
    /// operation (None: all have, it can go).
    fn first_waiting(&self, send: &Send, fold: Option<&RankFold>) -> Option<usize> {
        send.to.iter().map(|&d| fold.map_or(d, |f| f.slot(d))).find(|&d| !self.ranks[d].started)
    }
}

#[derive(Debug, Clone)]
struct Msg {
    op: u64,
    src: usize,
    dsts: Ranks,
    step: usize,
}

/// Settings of the executor that come from the strategy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepSettings {
    /// Bytes on the wire per payload byte (1 / compression ratio).
    pub wire_factor: f64,
    /// Time to add one received byte into local data, ns.
    pub reduce_ns_per_byte: f64,
    /// Pipeline piece size for pipelined schedules, bytes.
    pub pipeline_bytes: f64,
    /// Most pieces a pipelined collective is cut into.
    pub max_pipeline: usize,
    /// Bytes per element of the payloads operations start with (before `wire_factor`):
    /// the workload's listed element size, so that a schedule choosing its plan by the
    /// array's element count (GPU trees, seed 003) sees the same count whatever
    /// `reduce_dtype` or compression send.
    pub element_bytes: f64,
}

/// See the module documentation.
pub(crate) struct StepCollective {
    /// The schedules operations run (one for gradient all-reduce; several for sharded
    /// strategies: all-gather, reduce-scatter, all-reduce across groups).
    schedules: Vec<Box<dyn StepSchedule>>,
    settings: StepSettings,
    /// Ranks in the collective.
    n: usize,
    /// Ranks simulated: `n`, 1 when folded, the representatives when digit-folded.
    simulated: usize,
    folded: bool,
    /// Digit folding: the representatives (simulated indices <-> ranks).
    fold: Option<RankFold>,
    /// Operations in flight, by id (the engine's slab keys: small and dense).
    ops: IdTable<Op>,
    msgs: Slab<Msg>,
    /// Hosts of the ranks when not the core's (multi-job runs).
    hosts: Option<Vec<usize>>,
    /// Lane mode: every simulated rank's messages have links of their own.
    lanes: Option<Lanes>,
}

impl StepCollective {
    pub fn new(
        schedule: Box<dyn StepSchedule>,
        settings: StepSettings,
        n: usize,
        folded: bool,
        fold: Option<RankFold>,
    ) -> Self {
        Self::with_schedules(vec![schedule], settings, n, folded, fold)
    }

    /// An executor for operations of several schedules (see [`StepCollective::start_with`]).
    pub fn with_schedules(
        schedules: Vec<Box<dyn StepSchedule>>,
        settings: StepSettings,
        n: usize,
        folded: bool,
        fold: Option<RankFold>,
    ) -> Self {
        let simulated = match &fold {
            Some(f) => f.reps.len(),
            None if folded => 1,
            None => n,
        };
        StepCollective {
            schedules,
            settings,
            n,
            simulated,
            folded,
            fold,
            hosts: None,
            lanes: None,
            ops: IdTable::default(),
            msgs: Slab::default(),
        }
    }

    /// Places the ranks on these hosts instead of the core's `host_of_rank` (a job of a
    /// multi-job run; `None`: the core's).
    pub fn on_hosts(mut self, hosts: Option<Vec<usize>>) -> Self {
        self.hosts = hosts;
        self
    }

    /// Times operations by their lanes (see `lanes.rs`; the caller checked the conditions).
    pub fn with_lanes(mut self, lanes: Option<Lanes>) -> Self {
        self.lanes = lanes;
        self
    }

    /// The rank simulated at index `i`.
    fn rank(&self, i: usize) -> usize {
        self.fold.as_ref().map_or(i, |f| f.rank(i))
    }

    /// Sends message `send` of simulated rank `src`'s step `step` (from the step's plan).
    fn send(&mut self, core: &mut SimState, op_id: u64, src: usize, step: usize, send: &Send) {
        let (bytes, extra) = self.message(op_id, src, step, send);
        let dsts: Ranks = send.to.iter().map(|&d| core.host_of(self.hosts.as_deref(), d)).collect();
        core.label = self.schedules[self.ops[op_id].schedule].label();
        let to = match &self.fold {
            Some(f) => send.to.iter().map(|&d| f.slot(d)).collect(),
            None => send.to.clone(),
        };
        let user = self.msgs.insert(Msg { op: op_id, src, dsts: to, step }) as u64;
        let src_host = core.host_of(self.hosts.as_deref(), self.rank(src));
        core.send(src_host, &dsts, bytes, extra, user, false);
    }

    /// Message `send` of simulated rank `src`'s step `step`: its bytes on the wire and the
    /// receivers' add time (ns).
    fn message(&self, op_id: u64, src: usize, step: usize, send: &Send) -> (f64, Nanos) {
        let op = &self.ops[op_id];
        let bytes = op.bytes * send.chunks.len() as f64 / op.chunks as f64;
        if self.settings.reduce_ns_per_byte <= 0.0 {
            return (bytes, 0);
        }
        // The receivers' add time, if they reduce what they receive (all alike by
        // construction); asking the receiver's plan only when adding costs anything.
        let src_rank = self.rank(src);
        let reduces = self.schedules[op.schedule]
            .step(if self.folded { src_rank } else { send.to[0] }, self.n, op.pipeline, step)
            .recvs
            .iter()
            .any(|r| r.reduce && (self.folded || r.from == src_rank));
        (
            bytes,
            if reduces { crate::limits::nanos_clamped((bytes * self.settings.reduce_ns_per_byte).round()) } else { 0 },
        )
    }

    /// Times operation `op_id` by its lanes, every rank having started it: the step rule's
    /// recurrence over all ranks and steps (see `lanes.rs`); each rank's completion comes
    /// back as a timer. Each rank sends one message per step, to its lane's peer.
    fn run_lanes(&mut self, core: &mut SimState, op_id: u64) {
        let mut lanes = self.lanes.take().expect("lane mode");
        let schedule = &self.schedules[self.ops[op_id].schedule];
        core.label = schedule.label();
        let symmetric = schedule.rank_symmetric(self.n);
        let groups = if symmetric { lanes.groups(core) } else { None };
        let done = match groups {
            Some(groups) => self.lanes_by_group(core, op_id, &lanes, groups),
            None => self.lanes_one_by_one(core, op_id, &mut lanes, symmetric),
        };
        core.settle_alone();
        for (r, &t) in done.iter().enumerate() {
            core.wake_at(t, (op_id << 32) | r as u64);
        }
        self.lanes = Some(lanes);
    }

    /// [`StepCollective::run_lanes`] message by message (with a rank-symmetric schedule,
    /// every rank's step-`s` message is rank 0's); returns each rank's completion.
    fn lanes_one_by_one(&self, core: &mut SimState, op_id: u64, lanes: &mut Lanes, symmetric: bool) -> Vec<Nanos> {
        let op = &self.ops[op_id];
        let schedule = &self.schedules[op.schedule];
        // When each rank began its current step, and when it may begin the next.
        let mut begin = op.starts.clone();
        let mut next = begin.clone();
        let mut size = (0.0, 0);
        for step in 0..op.steps {
            next.copy_from_slice(&begin);
            for (r, lane) in lanes.0.iter_mut().enumerate() {
                if r == 0 || !symmetric {
                    let plan = schedule.step(self.rank(r), self.n, op.pipeline, step);
                    let [send] = &plan.sends[..] else { unreachable!("a lane carries one message per step") };
                    let (bytes, extra) = self.message(op_id, r, step, send);
                    size = (bytes, extra);
                }
                let (bytes, extra) = size;
                // Sent once its receiver has started the operation (the rendezvous).
                let at = begin[r].max(op.starts[lane.to]);
                let delivered = core
                    .time_alone(at, lane.src, &[lane.dst], &lane.links, lane.latency, bytes, extra, &mut lane.memo)
                    .expect("lanes are planned only for models that time flows alone");
                next[r] = next[r].max(delivered);
                next[lane.to] = next[lane.to].max(delivered);
            }
            std::mem::swap(&mut begin, &mut next);
        }
        begin
    }

    /// [`StepCollective::run_lanes`] for a rank-symmetric schedule: every rank's step-`s`
    /// message is rank 0's, so the lanes of a group ([`LaneGroups`]) take equal times; one
    /// network-model step per group and step, then the recurrence per lane. Returns each
    /// rank's completion.
    fn lanes_by_group(&self, core: &mut SimState, op_id: u64, lanes: &Lanes, mut groups: LaneGroups) -> Vec<Nanos> {
        let op = &self.ops[op_id];
        let schedule = &self.schedules[op.schedule];
        let to: Vec<usize> = lanes.0.iter().map(|l| l.to).collect();
        let watched: Vec<usize> = (0..to.len()).filter(|&r| core.watches(lanes.0[r].src, &[lanes.0[r].dst])).collect();
        // Per group: bytes its lanes' links carried, and this step's time on the wire.
        let mut carried = vec![0.0; groups.state.len()];
        let mut delay: Vec<Nanos> = vec![0; groups.state.len()];
        let mut begin = op.starts.clone();
        let mut next = begin.clone();
        for step in 0..op.steps {
            let plan = schedule.step(self.rank(0), self.n, op.pipeline, step);
            let [send] = &plan.sends[..] else { unreachable!("a lane carries one message per step") };
            let (bytes, extra) = self.message(op_id, 0, step, send);
            for (g, state) in groups.state.iter_mut().enumerate() {
                let (transfer, served) = state.serve(bytes).expect("lanes are planned on links with capacity");
                carried[g] += served;
                let lane = &lanes.0[groups.first[g]];
                delay[g] = transfer + core.alone_delay(&lane.links, lane.latency, bytes, extra);
            }
            next.copy_from_slice(&begin);
            for (r, &peer) in to.iter().enumerate() {
                let delivered = begin[r].max(op.starts[peer]) + delay[groups.of_lane[r] as usize];
                next[r] = next[r].max(delivered);
                next[peer] = next[peer].max(delivered);
            }
            for &r in &watched {
                let at = begin[r].max(op.starts[to[r]]);
                core.watch_alone(lanes.0[r].src, at, at + delay[groups.of_lane[r] as usize], bytes);
            }
            std::mem::swap(&mut begin, &mut next);
        }
        core.count_alone((to.len() * op.steps) as u64);
        // The model offers the capability: its `alone_path` gave the groups.
        if let Some(alone) = core.net.alone() {
            for (&class, &g) in groups.class_of_lane.iter().zip(&groups.of_lane) {
                alone.credit_alone(class, groups.state[g as usize].served, carried[g as usize]);
            }
        }
        begin
    }

    /// Simulated rank `rank` has finished operation `op_id`.
    fn finish(&mut self, core: &mut SimState, op_id: u64, rank: usize) {
        core.notes.push(Note::OpDone { rank, op: op_id, synced: true });
        let op = self.ops.get_mut(op_id).expect("op exists");
        op.finished += 1;
        if op.finished == self.simulated {
            self.ops.remove(op_id);
        }
    }

    /// Sends message `index` of simulated rank `src`'s step `step`, asking the schedule
    /// for the plan again (deferred sends).
    fn send_again(&mut self, core: &mut SimState, op_id: u64, src: usize, step: usize, index: usize) {
        let op = &self.ops[op_id];
        let plan = self.schedules[op.schedule].step(self.rank(src), self.n, op.pipeline, step);
        self.send(core, op_id, src, step, &plan.sends[index]);
    }

    /// Sets up the current step of `rank` and runs through steps that complete at once.
    fn begin_step(&mut self, core: &mut SimState, op_id: u64, rank: usize) {
        loop {
            let op = self.ops.get_mut(op_id).expect("op exists");
            let step = op.ranks[rank].step;
            if step == op.steps {
                self.finish(core, op_id, rank);
                return;
            }
            let plan = self.schedules[op.schedule].step(
                self.fold.as_ref().map_or(rank, |f| f.rank(rank)),
                self.n,
                op.pipeline,
                step,
            );
            let st = &mut op.ranks[rank];
            st.sends_left = plan.sends.len();
            st.recvs_left = plan.recvs.len();
            if self.folded {
                // Mirror images: every receive arrives with this rank's own sends.
                st.recvs_left = if st.sends_left == 0 { 0 } else { st.recvs_left };
            }
            let early = st.early.iter().filter(|&&s| s == step).count();
            st.early.retain(|&s| s != step);
            st.recvs_left -= early;
            // Per send: the first receiver not started (None: it goes now).
            let waits: smallvec::SmallVec<[Option<usize>; 2]> = plan
                .sends
                .iter()
                .map(|send| if self.folded { None } else { op.first_waiting(send, self.fold.as_ref()) })
                .collect();
            for (index, wait) in waits.into_iter().enumerate() {
                match wait {
                    None => self.send(core, op_id, rank, step, &plan.sends[index]),
                    Some(receiver) => {
                        let op = self.ops.get_mut(op_id).unwrap();
                        let order = op.deferrals;
                        op.deferrals += 1;
                        op.defer(receiver, (order, rank, step, index));
                    }
                }
            }
            let st = &mut self.ops.get_mut(op_id).unwrap().ranks[rank];
            if st.sends_left > 0 || st.recvs_left > 0 {
                return;
            }
            st.step += 1;
        }
    }

    fn try_advance(&mut self, core: &mut SimState, op_id: u64, rank: usize) {
        let Some(op) = self.ops.get_mut(op_id) else { return };
        let st = &mut op.ranks[rank];
        if st.started && st.sends_left == 0 && st.recvs_left == 0 && st.step < op.steps {
            st.step += 1;
            self.begin_step(core, op_id, rank);
        }
    }
}

impl StepCollective {
    /// Simulated rank `rank` starts operation `op_id` of schedule `schedule` over `bytes`
    /// payload bytes (before the wire factor).
    pub fn start_with(&mut self, core: &mut SimState, rank: usize, op_id: u64, schedule: usize, bytes: u64) {
        let settings = self.settings;
        let wire = bytes as f64 * settings.wire_factor;
        let elements = bytes as f64 / settings.element_bytes;
        let (n, simulated) = (self.n, self.simulated);
        let index = schedule;
        let schedule = &self.schedules[index];
        let pipeline = schedule.pieces_for(wire, elements, settings.pipeline_bytes, settings.max_pipeline);
        let lanes = self.lanes.is_some();
        let op = self.ops.get_or_insert_with(op_id, || Op {
            schedule: index,
            bytes: wire,
            pipeline,
            chunks: schedule.chunk_count(n, pipeline),
            steps: schedule.steps(n, pipeline),
            ranks: vec![RankState::default(); simulated],
            deferred: Default::default(),
            deferrals: 0,
            finished: 0,
            starts: if lanes { vec![0; simulated] } else { Vec::new() },
            started: 0,
        });
        op.ranks[rank].started = true;
        if lanes {
            op.starts[rank] = core.now;
            op.started += 1;
            if op.started == simulated {
                self.run_lanes(core, op_id);
            }
            return;
        }
        self.begin_step(core, op_id, rank);
        // Deferred sends that waited for this rank: those whose receivers have now all
        // started go, in the order they were deferred; the others wait for the next.
        if let Some(op) = self.ops.get_mut(op_id) {
            let Some(waiting) = op.deferred.remove(&rank) else { return };
            let fold = self.fold.as_ref();
            let mut ready = Vec::new();
            for (order, src, step, index) in waiting {
                let plan = self.schedules[op.schedule].step(fold.map_or(src, |f| f.rank(src)), n, op.pipeline, step);
                match op.first_waiting(&plan.sends[index], fold) {
                    None => ready.push((order, src, step, index)),
                    Some(receiver) => op.defer(receiver, (order, src, step, index)),
                }
            }
            ready.sort_unstable();
            for (_, src, step, index) in ready {
                self.send_again(core, op_id, src, step, index);
            }
        }
    }
}

impl Protocol for StepCollective {
    fn start_op(&mut self, core: &mut SimState, rank: usize, op_id: u64, _tasks: &[TaskRef], bytes: u64) {
        self.start_with(core, rank, op_id, 0, bytes);
    }

    /// Lane mode: a rank's completion of an operation (`op << 32 | rank`).
    fn on_timer(&mut self, core: &mut SimState, user: u64) {
        self.finish(core, user >> 32, (user & 0xFFFF_FFFF) as usize);
    }

    fn on_flow(&mut self, core: &mut SimState, user: u64, delivered: bool) {
        if !delivered {
            return;
        }
        let Msg { op: op_id, src, dsts, step } = self.msgs.remove(user as usize);
        if self.folded {
            let st = &mut self.ops.get_mut(op_id).unwrap().ranks[0];
            st.sends_left -= 1;
            if st.sends_left == 0 {
                st.recvs_left = 0;
            }
            self.try_advance(core, op_id, 0);
            return;
        }
        self.ops.get_mut(op_id).unwrap().ranks[src].sends_left -= 1;
        self.try_advance(core, op_id, src);
        for dst in dsts {
            let Some(op) = self.ops.get_mut(op_id) else { return };
            let st = &mut op.ranks[dst];
            if st.started && st.step == step {
                st.recvs_left -= 1;
                self.try_advance(core, op_id, dst);
            } else {
                st.early.push(step);
            }
        }
    }
}
