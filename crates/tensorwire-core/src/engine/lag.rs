//! **Bounded staleness** of partial collectives (`max_lag=S`; the runtime's
//! `PartialAllreduce(max_lag=S)`, `EagerSGD(staleness=S)`; docs/partial-collectives.md).
//!
//! A rank joins round `k` of a task (takes its send buffer) only once its own call for
//! round `k - S` has arrived, that is once it has had the task's gradient of iteration
//! `k - S` ready. An activation that reaches a rank before then waits ("parked") until the
//! rank's backward produces that gradient. `S = 0`: every rank joins with its own gradient
//! of the round, a synchronous all-reduce started by the initiator.

use crate::sched::TaskRef;

/// Per rank and task, how many iterations' gradients have been ready, and the activations
/// that wait for one.
#[derive(Debug)]
pub(super) struct Lag {
    /// `S`: rounds a rank may be behind the round it joins.
    bound: u32,
    tasks: usize,
    /// `ready[rank * tasks + task]`: iterations of `task` ready on `rank` (the next one's index).
    ready: Vec<u32>,
    /// (rank, op) activations waiting for the rank's call of round `k - S`.
    parked: Vec<(usize, u64)>,
}

impl Lag {
    pub(super) fn new(bound: u32, ranks: usize, tasks: usize) -> Self {
        Lag { bound, tasks, ready: vec![0; ranks * tasks], parked: Vec::new() }
    }

    /// Rank `rank` has task `r.task`'s gradient of iteration `r.iteration` ready.
    pub(super) fn note_ready(&mut self, rank: usize, r: TaskRef) {
        let slot = &mut self.ready[rank * self.tasks + r.task as usize];
        *slot = (*slot).max(r.iteration + 1);
    }

    /// Whether `rank` may not yet join a round of `tasks`: for some task of iteration `k`
    /// its call for round `k - S` has not arrived.
    pub(super) fn holds_back(&self, rank: usize, tasks: &[TaskRef]) -> bool {
        tasks.iter().any(|r| {
            r.iteration >= self.bound && self.ready[rank * self.tasks + r.task as usize] < r.iteration - self.bound + 1
        })
    }

    /// Parks the activation of `op` on `rank` until [`Lag::released`] lets it go.
    pub(super) fn park(&mut self, rank: usize, op: u64) {
        self.parked.push((rank, op));
    }

    /// The ops whose activation on `rank` no longer waits (`tasks_of` gives an op's tasks),
    /// removed from the parked ones, in the order they were parked: one pass over them
    /// (removing each in place shifted the rest, quadratic in the parked activations).
    pub(super) fn released<'a>(&mut self, rank: usize, tasks_of: impl Fn(u64) -> &'a [TaskRef]) -> Vec<u64> {
        let mut parked = std::mem::take(&mut self.parked);
        let out = parked
            .extract_if(.., |&mut (r, op)| r == rank && !self.holds_back(rank, tasks_of(op)))
            .map(|(_, op)| op)
            .collect();
        self.parked = parked;
        out
    }

    /// Whether a rank joins with its own gradient of the round it joins (`S = 0`).
    pub(super) fn synchronous(&self) -> bool {
        self.bound == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(iteration: u32, task: u32) -> TaskRef {
        TaskRef { iteration, task }
    }

    #[test]
    fn a_rank_joins_round_k_once_its_call_for_k_minus_s_arrived() {
        let mut lag = Lag::new(2, 2, 3);
        assert!(!lag.holds_back(1, &[at(0, 2), at(1, 2)]), "rounds below S wait for nothing");
        assert!(lag.holds_back(1, &[at(2, 2)]));
        lag.note_ready(1, at(0, 2));
        assert!(!lag.holds_back(1, &[at(2, 2)]));
        assert!(lag.holds_back(1, &[at(3, 2)]) && lag.holds_back(0, &[at(2, 2)]), "per rank and iteration");
        assert!(lag.holds_back(1, &[at(2, 2), at(2, 1)]), "a fused round waits for every task");
    }

    #[test]
    fn parked_activations_go_when_the_rank_catches_up_in_order() {
        let mut lag = Lag::new(0, 2, 1);
        let rounds = [vec![at(0, 0)], vec![at(1, 0)]];
        lag.park(1, 0);
        lag.park(1, 1);
        lag.park(0, 1);
        let tasks = |op: u64| rounds[op as usize].as_slice();
        assert!(lag.released(1, tasks).is_empty());
        lag.note_ready(1, at(0, 0));
        assert_eq!(lag.released(1, tasks), vec![0]);
        lag.note_ready(1, at(1, 0));
        assert_eq!(lag.released(1, tasks), vec![1]);
        assert_eq!(lag.parked, vec![(0, 1)], "another rank's activation stays parked");
        assert!(lag.synchronous());
    }
}
