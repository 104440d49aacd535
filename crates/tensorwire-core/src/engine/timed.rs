//! Executor for collectives timed in closed form (NCCL's, `crate::nccl`): an operation
//! starts once every simulated rank has started it (NCCL's rendezvous: every rank's
//! kernel must be running) and ends for every rank `duration` later, with no flow on the
//! network. The duration of an operation is a function of its schedule index (which
//! collective over which group, as the caller numbers them) and its payload bytes.
//!
//! Folding is free: one simulated rank stands for all when the caller folds, as every rank
//! ends each operation at the same instant.

use super::slab::IdTable;
use super::state::{Note, Protocol, SimState};
use crate::sched::TaskRef;
use crate::units::Nanos;

/// Duration of an operation of schedule `schedule` over `bytes` payload bytes, ns.
pub(crate) type Durations = Box<dyn Fn(usize, u64) -> Nanos>;

#[derive(Debug)]
struct Op {
    /// Simulated ranks that have started it.
    started: usize,
    /// When the last of them started.
    last_start: Nanos,
    /// Its schedule index and payload.
    schedule: usize,
    bytes: u64,
}

/// See the module documentation.
pub(crate) struct TimedCollective {
    durations: Durations,
    /// Ranks simulated (1 when folded).
    simulated: usize,
    ops: IdTable<Op>,
}

impl TimedCollective {
    /// An executor for `simulated` ranks whose operations last `durations`.
    pub fn new(durations: Durations, simulated: usize) -> Self {
        TimedCollective { durations, simulated, ops: IdTable::default() }
    }

    /// Simulated rank `rank` starts operation `op_id` of schedule `schedule` over `bytes`
    /// payload bytes.
    pub fn start_with(&mut self, core: &mut SimState, _rank: usize, op_id: u64, schedule: usize, bytes: u64) {
        let now = core.now;
        let op = self.ops.get_or_insert_with(op_id, || Op { started: 0, last_start: now, schedule, bytes });
        op.started += 1;
        op.last_start = op.last_start.max(now);
        if op.started == self.simulated {
            let end = op.last_start.saturating_add((self.durations)(op.schedule, op.bytes));
            for r in 0..self.simulated {
                core.wake_at(end, (op_id << 32) | r as u64);
            }
            self.ops.remove(op_id);
        }
    }
}

impl Protocol for TimedCollective {
    fn start_op(&mut self, core: &mut SimState, rank: usize, op_id: u64, _tasks: &[TaskRef], bytes: u64) {
        self.start_with(core, rank, op_id, 0, bytes);
    }

    fn on_flow(&mut self, _core: &mut SimState, _user: u64, _delivered: bool) {
        unreachable!("timed collectives start no flow")
    }

    /// A rank's end of an operation (`op << 32 | rank`).
    fn on_timer(&mut self, core: &mut SimState, user: u64) {
        core.notes.push(Note::OpDone { rank: (user & 0xFFFF_FFFF) as usize, op: user >> 32, synced: true });
    }
}
