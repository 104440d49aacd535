//! Host-side scheduling of communication tasks: partitioning tensors into pieces and
//! releasing them by a policy under a credit (ByteScheduler, seed 004). This is the one
//! implementation of these policies: the simulator runs it, and the runtime drives the
//! same state machine through the bindings (DESIGN.md principle 1).
//!
//! The task API follows seed 004: a task is *partitioned*, the framework calls
//! [`Scheduler::notify_ready`] when its gradient exists, [`Scheduler::poll`] says which
//! tasks to *start*, and [`Scheduler::notify_finish`] returns their credit.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::error::{Error, Result};
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

/// Order in which ready tasks are released.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// In the order they became ready (PyTorch DDP, Horovod without fusion).
    Fifo,
    /// Lowest layer first, then earliest iteration, then readiness (ByteScheduler).
    Priority,
}

/// Limits on what may be in flight at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// At most this many bytes in flight (a task larger than the credit still goes alone).
    pub credit_bytes: Option<u64>,
    /// At most this many tasks in flight (`Some(1)`: one collective at a time, like NCCL's stream).
    pub max_tasks: Option<usize>,
}

/// A task instance: a task of one iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskRef {
    /// Iteration number, from 0.
    pub iteration: u32,
    /// Index into the task list.
    pub task: u32,
}

/// The scheduler state machine of one worker.
#[derive(Debug, Clone)]
pub struct Scheduler {
    policy: Policy,
    limits: Limits,
    ready: BinaryHeap<Reverse<(u64, u64, u64, TaskRef, u64)>>,
    seq: u64,
    in_flight_bytes: u64,
    in_flight_tasks: usize,
}

impl Scheduler {
    /// A scheduler with the given policy and limits.
    pub fn new(policy: Policy, limits: Limits) -> Self {
        Scheduler { policy, limits, ready: BinaryHeap::new(), seq: 0, in_flight_bytes: 0, in_flight_tasks: 0 }
    }

    /// The task's gradient is ready to be sent.
    pub fn notify_ready(&mut self, task: TaskRef, layer: usize, bytes: u64) {
        self.seq += 1;
        let key = match self.policy {
            Policy::Fifo => (0, 0, self.seq),
            Policy::Priority => (layer as u64, task.iteration as u64, self.seq),
        };
        self.ready.push(Reverse((key.0, key.1, key.2, task, bytes)));
    }

    /// Appends to `out` the tasks to start now, in order, and counts them in flight.
    pub fn poll(&mut self, out: &mut Vec<(TaskRef, u64)>) {
        while let Some(Reverse((_, _, _, task, bytes))) = self.ready.peek().copied() {
            let idle = self.in_flight_tasks == 0;
            let tasks_ok = self.limits.max_tasks.is_none_or(|m| self.in_flight_tasks < m);
            let credit_ok = self.limits.credit_bytes.is_none_or(|c| self.in_flight_bytes + bytes <= c);
            if !(idle || (tasks_ok && credit_ok)) {
                break;
            }
            self.ready.pop();
            self.in_flight_bytes += bytes;
            self.in_flight_tasks += 1;
            out.push((task, bytes));
        }
    }

    /// A started task has finished; its credit returns.
    pub fn notify_finish(&mut self, bytes: u64) {
        self.in_flight_bytes -= bytes;
        self.in_flight_tasks -= 1;
    }

    /// Whether a task of `bytes` could be in flight (for callers that must not underflow).
    pub fn can_finish(&self, bytes: u64) -> bool {
        self.in_flight_tasks > 0 && self.in_flight_bytes >= bytes
    }

    /// Tasks ready but not started.
    pub fn waiting(&self) -> usize {
        self.ready.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{Layer, Tensor};

    fn workload(sizes: &[u64]) -> Workload {
        Workload {
            name: "t".into(),
            batch_size: 1,
            layers: sizes.iter().enumerate().map(|(i, _)| Layer { name: format!("l{i}"), forward: 1, backward: 1 }).collect(),
            tensors: sizes.iter().enumerate().map(|(i, &b)| Tensor { name: format!("t{i}"), bytes: b, layer: i }).collect(),
        }
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
        s.notify_ready(t(5), 5, 6);
        let mut out = Vec::new();
        s.poll(&mut out);
        assert_eq!(out, vec![(t(5), 6)]);
        s.notify_ready(t(3), 3, 6);
        s.notify_ready(t(1), 1, 4);
        out.clear();
        s.poll(&mut out);
        assert_eq!(out, vec![(t(1), 4)], "6 + 4 fits the credit of 10; 6 more would not");
        s.notify_finish(6);
        out.clear();
        s.poll(&mut out);
        assert_eq!(out, vec![(t(3), 6)]);
    }

    #[test]
    fn fifo_with_one_task_in_flight_serialises() {
        let mut s = Scheduler::new(Policy::Fifo, Limits { credit_bytes: None, max_tasks: Some(1) });
        let t = |task| TaskRef { iteration: 0, task };
        for i in [4, 2, 9] {
            s.notify_ready(t(i), i as usize, 100);
        }
        let mut out = Vec::new();
        s.poll(&mut out);
        assert_eq!(out, vec![(t(4), 100)]);
        s.notify_finish(100);
        s.poll(&mut out);
        assert_eq!(out[1], (t(2), 100));
    }

    #[test]
    fn a_task_larger_than_the_credit_goes_alone() {
        let mut s = Scheduler::new(Policy::Fifo, Limits { credit_bytes: Some(1), max_tasks: None });
        s.notify_ready(TaskRef { iteration: 0, task: 0 }, 0, 50);
        let mut out = Vec::new();
        s.poll(&mut out);
        assert_eq!(out.len(), 1);
    }
}
