//! Executor for step-synchronous, rank-symmetric collectives (ring, ...): the schedule
//! says what each rank sends and receives at each step; a rank moves to step s+1 when
//! its step-s message was delivered and its step-s message from its peer arrived.
//! A message is only sent once the receiver has itself started the collective (an
//! NCCL-style rendezvous: the receiving kernel must be running).
//!
//! Folded mode simulates rank 0 only. By symmetry every rank is at the same step at the
//! same time and the message rank 0 receives at step s arrives exactly when rank 0's own
//! step-s message is delivered, so one flow per step stands for all N.

use std::collections::HashMap;

use super::core::{Core, Note, Protocol};
use super::slab::Slab;
use crate::collectives::StepSchedule;

#[derive(Debug, Default, Clone)]
struct RankState {
    started: bool,
    step: usize,
    send_done: bool,
    recv_done: bool,
    early: Vec<usize>,
}

#[derive(Debug)]
struct Op {
    bytes: f64,
    ranks: Vec<RankState>,
    /// Sends waiting for their receiver (index) to start: (sender, step).
    deferred: Vec<Vec<(usize, usize)>>,
    finished: usize,
}

#[derive(Debug, Clone, Copy)]
struct Msg {
    task: u64,
    src: usize,
    dst: usize,
    step: usize,
}

/// See the module documentation.
pub(crate) struct StepCollective {
    schedule: Box<dyn StepSchedule>,
    /// Ranks in the collective.
    n: usize,
    /// Ranks simulated: `n`, or 1 when folded.
    simulated: usize,
    folded: bool,
    ops: HashMap<u64, Op>,
    msgs: Slab<Msg>,
}

impl StepCollective {
    pub fn new(schedule: Box<dyn StepSchedule>, n: usize, folded: bool) -> Self {
        StepCollective {
            schedule,
            n,
            simulated: if folded { 1 } else { n },
            folded,
            ops: HashMap::new(),
            msgs: Slab::default(),
        }
    }

    fn send(&mut self, core: &mut Core, task: u64, src: usize, dst: usize, step: usize) {
        let op = &self.ops[&task];
        let bytes = op.bytes * self.schedule.step(src, self.n, step).fraction;
        let user = self.msgs.insert(Msg { task, src, dst, step }) as u64;
        core.send(core.host_of_rank[src], core.host_of_rank[dst], bytes, user, false);
    }

    /// Sets up the current step of `rank` and runs through steps that complete at once.
    fn begin_step(&mut self, core: &mut Core, task: u64, rank: usize) {
        loop {
            let steps = self.schedule.steps(self.n);
            let op = self.ops.get_mut(&task).expect("op exists");
            let step = op.ranks[rank].step;
            if step == steps {
                core.notes.push(Note::OpDone { rank, op: task, synced: true });
                op.finished += 1;
                if op.finished == self.simulated {
                    self.ops.remove(&task);
                }
                return;
            }
            let plan = self.schedule.step(rank, self.n, step);
            let st = &mut op.ranks[rank];
            st.send_done = plan.send_to.is_none();
            st.recv_done = plan.recv_from.is_none();
            if let Some(i) = st.early.iter().position(|&s| s == step) {
                st.early.swap_remove(i);
                st.recv_done = true;
            }
            if let Some(peer) = plan.send_to {
                if self.folded || op.ranks[peer].started {
                    self.send(core, task, rank, peer, step);
                } else {
                    op.deferred[peer].push((rank, step));
                }
            }
            let st = &mut self.ops.get_mut(&task).unwrap().ranks[rank];
            if !(st.send_done && st.recv_done) {
                return;
            }
            st.step += 1;
        }
    }

    fn try_advance(&mut self, core: &mut Core, task: u64, rank: usize) {
        let st = &mut self.ops.get_mut(&task).unwrap().ranks[rank];
        if st.send_done && st.recv_done {
            st.step += 1;
            self.begin_step(core, task, rank);
        }
    }
}

impl Protocol for StepCollective {
    fn start_op(&mut self, core: &mut Core, rank: usize, task: u64, _tasks: &[crate::sched::TaskRef], bytes: u64) {
        let simulated = self.simulated;
        let op = self.ops.entry(task).or_insert_with(|| Op {
            bytes: bytes as f64,
            ranks: vec![RankState::default(); simulated],
            deferred: vec![Vec::new(); simulated],
            finished: 0,
        });
        op.ranks[rank].started = true;
        let deferred = std::mem::take(&mut op.deferred[rank]);
        self.begin_step(core, task, rank);
        for (src, step) in deferred {
            self.send(core, task, src, rank, step);
        }
    }

    fn on_flow(&mut self, core: &mut Core, user: u64, delivered: bool) {
        if !delivered {
            return;
        }
        let Msg { task, src, dst, step } = self.msgs.remove(user as usize);
        if self.folded {
            let op = self.ops.get_mut(&task).unwrap();
            let st = &mut op.ranks[0];
            st.send_done = true;
            st.recv_done = true; // the mirror image of this message reached rank 0
            self.try_advance(core, task, 0);
            return;
        }
        self.ops.get_mut(&task).unwrap().ranks[src].send_done = true;
        self.try_advance(core, task, src);
        if let Some(op) = self.ops.get_mut(&task) {
            let st = &mut op.ranks[dst];
            if st.started && st.step == step {
                st.recv_done = true;
                self.try_advance(core, task, dst);
            } else {
                st.early.push(step);
            }
        }
    }
}
