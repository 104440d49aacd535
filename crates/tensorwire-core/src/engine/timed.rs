//! Executor for collectives timed in closed form (NCCL's, `crate::nccl`): an operation
//! starts once every simulated rank has started it (NCCL's rendezvous: every rank's
//! kernel must be running) and ends for every rank `duration` later, with no flow on the
//! network. The duration of an operation is a function of its schedule index (which
//! collective over which group, as the caller numbers them) and its payload bytes.
//!
//! Folding is free: one simulated rank stands for all when the caller folds, as every rank
//! ends each operation at the same instant.
//!
//! **What the report sees.** No flow means no link counts a byte: the executor itself
//! tells the core, as each operation starts, that the job's rank 0 communicates from its
//! start to its end and sends the operation's bus bytes ([`SimState::watch_timed`]), so
//! "rank 0 communicating" and "bytes sent" per worker come from the one mechanism every
//! run of a timed executor uses (`nccl`/`ddp` in `mod.rs`, the sharded programs in
//! `program.rs`). Link utilisation is not estimated: the report leaves it empty
//! (`Measured::flowless`), rather than showing every link idle. What NCCL chose for
//! each operation goes with it ([`Timed::pick`]): the core counts rank 0's choices
//! (`Report::nccl_choices`) and, when recording, each simulated rank's operation becomes
//! a span of the timeline (`SpanKind::Collective`).

use super::slab::IdTable;
use super::state::{Note, Protocol, SimState};
use crate::collectives::Collective;
use crate::metrics::NcclPick;
use crate::nccl::{NcclChoice, NcclFabric};
use crate::sched::TaskRef;
use crate::units::Nanos;

/// What an operation costs: its duration and the bytes each rank sends.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Timed {
    /// Its duration, ns.
    pub ns: Nanos,
    /// Bytes each rank sends: nccl-tests' bus bytes, `bus_factor x size`
    /// (<https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md>: the
    /// bytes that cross each rank's slowest link in the bandwidth-optimal algorithm,
    /// `2 (n-1)/n S` for all-reduce, `(n-1)/n S` for all-gather and reduce-scatter).
    pub sent: f64,
    /// What NCCL chose and the buffer's size S, bytes (`None`: not timed by NCCL).
    pub pick: Option<(NcclPick, f64)>,
}

impl Timed {
    /// NCCL's `choice` for `collective` over a buffer of `size` bytes on `fabric`.
    pub fn of(fabric: &NcclFabric, collective: Collective, choice: &NcclChoice, size: f64) -> Self {
        Timed {
            ns: crate::limits::nanos_clamped((choice.seconds * 1e9).round()),
            sent: crate::nccl::bus_factor(collective, fabric.nodes * fabric.gpus_per_node) * size,
            pick: Some((
                NcclPick {
                    collective: collective.name(),
                    algorithm: choice.algo.name(),
                    protocol: choice.proto.name(),
                    channels: choice.channels,
                },
                size,
            )),
        }
    }
}

/// What an operation of schedule `schedule` over `bytes` payload bytes costs.
pub(crate) type Durations = Box<dyn Fn(usize, u64) -> Timed>;

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
            let timed = (self.durations)(op.schedule, op.bytes);
            let end = op.last_start.saturating_add(timed.ns);
            core.watch_timed(op.last_start, end, timed.sent, timed.pick);
            if let (Some(out), Some(pick)) = (core.recorded_timed.as_mut(), timed.pick) {
                out.extend((0..self.simulated).map(|r| (op.last_start, end, r, pick)));
            }
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
