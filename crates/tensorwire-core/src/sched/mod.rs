//! Host-side scheduling of communication tasks: partitioning tensors into pieces and
//! releasing them by a policy under a credit (ByteScheduler, seed 004). This is the one
//! implementation of these policies: the simulator runs it, and the runtime drives the
//! same state machine through the bindings (DESIGN.md principle 1).
//!
//! The task API follows seed 004: a task is *partitioned*, the framework calls
//! [`Scheduler::notify_ready`] when its gradient exists, [`Scheduler::poll`] says which
//! tasks to *start*, and [`Scheduler::notify_finish`] returns their credit.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::error::{Error, Result};
use crate::units::Nanos;
use crate::workload::Workload;

/// A piece of one tensor, the unit the scheduler releases.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Index of this task in the task list.
    pub id: usize,
    /// Index of the tensor (in `parameters()` order).
    pub tensor: usize,
    /// Index of the piece within the tensor.
    pub piece: usize,
    /// Byte offset of the piece within the tensor.
    pub offset: u64,
    /// Size of the piece, bytes.
    pub bytes: u64,
    /// Layer of the tensor: lower layers are needed first by the next forward pass.
    pub layer: usize,
}

/// Splits every tensor into pieces of at most `piece_bytes` (all of equal size but the
/// last); `None` keeps tensors whole. Tasks are listed in `parameters()` order.
pub fn partition(workload: &Workload, piece_bytes: Option<u64>) -> Result<Vec<Task>> {
    if piece_bytes == Some(0) {
        return Err(Error::invalid("strategy.partition", "must be at least 1 byte"));
    }
    let mut tasks = Vec::new();
    for (t, tensor) in workload.tensors.iter().enumerate() {
        let size = piece_bytes.unwrap_or(tensor.bytes.max(1));
        let pieces = tensor.bytes.div_ceil(size).max(1);
        for p in 0..pieces {
            let offset = p * size;
            let bytes = size.min(tensor.bytes - offset.min(tensor.bytes));
            tasks.push(Task { id: tasks.len(), tensor: t, piece: p as usize, offset, bytes, layer: tensor.layer });
        }
    }
    Ok(tasks)
}

/// Splits every tensor into `parts` pieces of near-equal size (the first `bytes mod parts`
/// pieces one byte larger): parameter-server sharding, piece i on server i.
pub fn partition_even(workload: &Workload, parts: usize) -> Vec<Task> {
    let parts = parts.max(1) as u64;
    let mut tasks = Vec::new();
    for (t, tensor) in workload.tensors.iter().enumerate() {
        let (base, extra) = (tensor.bytes / parts, tensor.bytes % parts);
        let mut offset = 0;
        for p in 0..parts {
            let bytes = base + u64::from(p < extra);
            tasks.push(Task { id: tasks.len(), tensor: t, piece: p as usize, offset, bytes, layer: tensor.layer });
            offset += bytes;
        }
    }
    tasks
}

/// Order in which ready tasks are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// In the order they became ready (PyTorch DDP, Horovod).
    Fifo,
    /// Lowest layer first, then earliest iteration, then readiness (ByteScheduler).
    Priority,
}

/// Limits on what may be in flight at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// At most this many bytes in flight (a group larger than the credit still goes alone).
    pub credit_bytes: Option<u64>,
    /// At most this many groups in flight (`Some(1)`: one collective at a time, like NCCL's stream).
    pub max_tasks: Option<usize>,
}

/// Horovod-style tensor fusion: ready tasks wait in a buffer (in ready order) that is cut
/// into a group whenever it holds `threshold_bytes`, and flushed whole `cycle` after its
/// oldest task became ready.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// Fusion buffer size, bytes.
    pub threshold_bytes: u64,
    /// Longest a ready task waits in the buffer, ns.
    pub cycle: Nanos,
}

/// A task instance: a task of one iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskRef {
    /// Iteration number, from 0.
    pub iteration: u32,
    /// Index into the task list.
    pub task: u32,
}

/// What the scheduler releases: one communication operation over one or more tasks
/// (several when fused), whose payloads are concatenated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// Member tasks with their sizes, in buffer order.
    pub tasks: Vec<(TaskRef, u64)>,
    /// Total bytes.
    pub bytes: u64,
}

impl Group {
    fn single(task: TaskRef, bytes: u64) -> Self {
        Group { tasks: vec![(task, bytes)], bytes }
    }
}

/// Ready-queue entry ordered by (key, sequence).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ready {
    key: (u64, u64),
    seq: u64,
    task: TaskRef,
    bytes: u64,
}

/// The scheduler state machine of one worker (or of a coordinator deciding for all).
#[derive(Debug, Clone)]
pub struct Scheduler {
    policy: Policy,
    limits: Limits,
    fusion: Option<Fusion>,
    ready: BinaryHeap<Reverse<Ready>>,
    /// Fusion buffer: (task, bytes, ready time).
    buffer: VecDeque<(TaskRef, u64, Nanos)>,
    buffer_bytes: u64,
    fused: VecDeque<Group>,
    seq: u64,
    in_flight_bytes: u64,
    in_flight_tasks: usize,
}

impl Scheduler {
    /// A scheduler with the given policy, limits and optional fusion.
    pub fn new(policy: Policy, limits: Limits) -> Self {
        Scheduler::with_fusion(policy, limits, None)
    }

    /// Like [`Scheduler::new`], with tensor fusion.
    pub fn with_fusion(policy: Policy, limits: Limits, fusion: Option<Fusion>) -> Self {
        Scheduler {
            policy,
            limits,
            fusion,
            ready: BinaryHeap::new(),
            buffer: VecDeque::new(),
            buffer_bytes: 0,
            fused: VecDeque::new(),
            seq: 0,
            in_flight_bytes: 0,
            in_flight_tasks: 0,
        }
    }

    /// The task's gradient is ready at time `now`; `layer` orders priority (lower first).
    pub fn notify_ready(&mut self, now: Nanos, task: TaskRef, layer: usize, bytes: u64) {
        if self.fusion.is_some() {
            self.buffer.push_back((task, bytes, now));
            self.buffer_bytes += bytes;
            return;
        }
        self.seq += 1;
        let key = match self.policy {
            Policy::Fifo => (0, 0),
            Policy::Priority => (layer as u64, task.iteration as u64),
        };
        self.ready.push(Reverse(Ready { key, seq: self.seq, task, bytes }));
    }

    fn cut(&mut self, all: bool) {
        let threshold = self.fusion.expect("fusion").threshold_bytes;
        while !self.buffer.is_empty() && (all || self.buffer_bytes >= threshold) {
            let mut group = Group { tasks: Vec::new(), bytes: 0 };
            while let Some(&(task, bytes, _)) = self.buffer.front() {
                if !group.tasks.is_empty() && group.bytes + bytes > threshold {
                    break;
                }
                self.buffer.pop_front();
                self.buffer_bytes -= bytes;
                group.tasks.push((task, bytes));
                group.bytes += bytes;
            }
            self.fused.push_back(group);
        }
    }

    /// When the fusion buffer must next be flushed, if it holds anything.
    pub fn next_deadline(&self) -> Option<Nanos> {
        let cycle = self.fusion?.cycle;
        self.buffer.front().map(|&(_, _, since)| since + cycle)
    }

    fn may_start(&self, bytes: u64) -> bool {
        let idle = self.in_flight_tasks == 0;
        let tasks_ok = self.limits.max_tasks.is_none_or(|m| self.in_flight_tasks < m);
        let credit_ok = self.limits.credit_bytes.is_none_or(|c| self.in_flight_bytes + bytes <= c);
        idle || (tasks_ok && credit_ok)
    }

    /// Appends to `out` the groups to start at `now`, in order, and counts them in flight.
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<Group>) {
        if self.fusion.is_some() {
            let due = self.next_deadline().is_some_and(|d| d <= now);
            self.cut(due);
            while let Some(g) = self.fused.front() {
                if !self.may_start(g.bytes) {
                    break;
                }
                let g = self.fused.pop_front().unwrap();
                self.in_flight_bytes += g.bytes;
                self.in_flight_tasks += 1;
                out.push(g);
            }
            return;
        }
        while let Some(Reverse(r)) = self.ready.peek().copied() {
            if !self.may_start(r.bytes) {
                break;
            }
            self.ready.pop();
            self.in_flight_bytes += r.bytes;
            self.in_flight_tasks += 1;
            out.push(Group::single(r.task, r.bytes));
        }
    }

    /// A started group of `bytes` has finished; its credit returns.
    pub fn notify_finish(&mut self, bytes: u64) {
        self.in_flight_bytes -= bytes;
        self.in_flight_tasks -= 1;
    }

    /// Whether a group of `bytes` could be in flight (for callers that must not underflow).
    pub fn can_finish(&self, bytes: u64) -> bool {
        self.in_flight_tasks > 0 && self.in_flight_bytes >= bytes
    }

    /// Tasks ready but not started.
    pub fn waiting(&self) -> usize {
        self.ready.len() + self.buffer.len() + self.fused.iter().map(|g| g.tasks.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workload(sizes: &[u64]) -> Workload {
        Workload::one_tensor_per_layer(sizes, 1, 1)
    }

    #[test]
    fn partition_covers_every_byte_once() {
        let w = workload(&[10, 3, 0, 7]);
        let tasks = partition(&w, Some(4)).unwrap();
        let sizes: Vec<u64> = tasks.iter().map(|t| t.bytes).collect();
        assert_eq!(sizes, vec![4, 4, 2, 3, 0, 4, 3]);
        for (t, tensor) in w.tensors.iter().enumerate() {
            let total: u64 = tasks.iter().filter(|x| x.tensor == t).map(|x| x.bytes).sum();
            assert_eq!(total, tensor.bytes);
        }
        assert!(partition(&w, Some(0)).is_err());
    }

    #[test]
    fn priority_releases_lower_layers_first_within_credit() {
        let mut s = Scheduler::new(Policy::Priority, Limits { credit_bytes: Some(10), max_tasks: None });
        let t = |task| TaskRef { iteration: 0, task };
        s.notify_ready(0, t(5), 5, 6);
        let mut out = Vec::new();
        s.poll(0, &mut out);
        assert_eq!(out, vec![Group::single(t(5), 6)]);
        s.notify_ready(0, t(3), 3, 6);
        s.notify_ready(0, t(1), 1, 4);
        out.clear();
        s.poll(0, &mut out);
        assert_eq!(out, vec![Group::single(t(1), 4)], "6 + 4 fits the credit of 10; 6 more would not");
        s.notify_finish(6);
        out.clear();
        s.poll(0, &mut out);
        assert_eq!(out, vec![Group::single(t(3), 6)]);
    }

    #[test]
    fn fifo_with_one_task_in_flight_serialises() {
        let mut s = Scheduler::new(Policy::Fifo, Limits { credit_bytes: None, max_tasks: Some(1) });
        let t = |task| TaskRef { iteration: 0, task };
        for i in [4, 2, 9] {
            s.notify_ready(0, t(i), i as usize, 100);
        }
        let mut out = Vec::new();
        s.poll(0, &mut out);
        assert_eq!(out, vec![Group::single(t(4), 100)]);
        s.notify_finish(100);
        s.poll(0, &mut out);
        assert_eq!(out[1], Group::single(t(2), 100));
    }

    #[test]
    fn a_task_larger_than_the_credit_goes_alone() {
        let mut s = Scheduler::new(Policy::Fifo, Limits { credit_bytes: Some(1), max_tasks: None });
        s.notify_ready(0, TaskRef { iteration: 0, task: 0 }, 0, 50);
        let mut out = Vec::new();
        s.poll(0, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn fusion_cuts_full_buffers_and_flushes_on_the_cycle() {
        let fusion = Fusion { threshold_bytes: 100, cycle: 1_000 };
        let mut s = Scheduler::with_fusion(Policy::Fifo, Limits { credit_bytes: None, max_tasks: None }, Some(fusion));
        let t = |task| TaskRef { iteration: 0, task };
        let mut out = Vec::new();
        s.notify_ready(10, t(0), 0, 40);
        s.notify_ready(20, t(1), 1, 40);
        s.poll(20, &mut out);
        assert!(out.is_empty(), "80 bytes < 100: wait for more or for the cycle");
        assert_eq!(s.next_deadline(), Some(1_010));
        s.notify_ready(30, t(2), 2, 40);
        s.poll(30, &mut out);
        assert_eq!(out, vec![Group { tasks: vec![(t(0), 40), (t(1), 40)], bytes: 80 }], "120 >= 100: cut what fits");
        assert_eq!(s.next_deadline(), Some(1_030));
        s.poll(1_029, &mut out);
        assert_eq!(out.len(), 1);
        s.poll(1_030, &mut out);
        assert_eq!(out[1], Group { tasks: vec![(t(2), 40)], bytes: 40 });
        assert_eq!(s.next_deadline(), None);
        // A task larger than the buffer goes alone at once.
        s.notify_ready(2_000, t(3), 3, 500);
        s.poll(2_000, &mut out);
        assert_eq!(out[2].bytes, 500);
    }
}
