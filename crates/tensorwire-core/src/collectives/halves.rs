//! Reduce-scatter and all-gather as the two halves of an all-reduce that is built from
//! them: ring (N-1 steps each) and Rabenseifner's halving-doubling (recursive halving,
//! then recursive doubling; MPICH's `MPI_Reduce_scatter` and `MPI_Allgather` for powers of
//! two). One schedule serves the all-reduce and both halves, so they cannot drift apart.
//!
//! Payload convention (docs/collectives.md): S is the full buffer, N chunks of S/N. After
//! the reduce-scatter half each rank holds the sum of its chunk(s); the all-gather half
//! starts from that state. Ring, alone on a star with path latency a and rate B:
//! (N-1)(a + S/(N B)) each.

use super::{HalvingDoubling, Ring, Step, StepSchedule};

/// An all-reduce schedule whose first `split(n)` steps are a reduce-scatter and whose
/// remaining steps are the matching all-gather.
pub trait Splits: StepSchedule + Clone {
    /// Steps of the reduce-scatter half for `n` ranks.
    fn split(&self, n: usize) -> usize;
}

impl Splits for Ring {
    fn split(&self, n: usize) -> usize {
        n.saturating_sub(1)
    }
}

impl Splits for HalvingDoubling {
    fn split(&self, n: usize) -> usize {
        // The fold-in step (non-powers of two), then log2 p halving steps.
        self.steps(n, 1) / 2
    }
}

/// The reduce-scatter half of an all-reduce schedule.
#[derive(Debug, Clone, Copy)]
pub struct ReduceScatter<S>(pub S);

/// The all-gather half of an all-reduce schedule.
#[derive(Debug, Clone, Copy)]
pub struct AllGather<S>(pub S);

impl<S: Splits + std::fmt::Debug + Send + Sync> StepSchedule for ReduceScatter<S> {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        self.0.split(n)
    }
    fn label(&self) -> &'static str {
        "reducescatter"
    }
    fn chunk_count(&self, n: usize, pipeline: usize) -> usize {
        self.0.chunk_count(n, pipeline)
    }
    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        self.0.step(rank, n, pipeline, step)
    }
    fn rank_symmetric(&self, n: usize) -> bool {
        self.0.rank_symmetric(n)
    }
    fn neighbours_only(&self) -> bool {
        self.0.neighbours_only()
    }
    fn invariant_digits(&self, n: usize, layout: &[usize]) -> Vec<bool> {
        self.0.invariant_digits(n, layout)
    }
}

impl<S: Splits + std::fmt::Debug + Send + Sync> StepSchedule for AllGather<S> {
    fn steps(&self, n: usize, pipeline: usize) -> usize {
        self.0.steps(n, pipeline) - self.0.split(n)
    }
    fn label(&self) -> &'static str {
        "allgather"
    }
    fn chunk_count(&self, n: usize, pipeline: usize) -> usize {
        self.0.chunk_count(n, pipeline)
    }
    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        self.0.step(rank, n, pipeline, step + self.0.split(n))
    }
    fn rank_symmetric(&self, n: usize) -> bool {
        self.0.rank_symmetric(n)
    }
    fn neighbours_only(&self) -> bool {
        self.0.neighbours_only()
    }
    fn invariant_digits(&self, n: usize, layout: &[usize]) -> Vec<bool> {
        self.0.invariant_digits(n, layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn the_halves_make_the_all_reduce_and_the_first_reduces_every_chunk_once() {
        for n in 1..12 {
            check::all_reduce(&check::Concat(ReduceScatter(Ring), AllGather(Ring)), n, 1);
            check::reduce_scatter(&ReduceScatter(Ring), n);
            if n.is_power_of_two() {
                check::all_reduce(&check::Concat(ReduceScatter(HalvingDoubling), AllGather(HalvingDoubling)), n, 1);
                check::reduce_scatter(&ReduceScatter(HalvingDoubling), n);
            }
        }
    }

    #[test]
    fn each_ring_half_sends_n_minus_1_over_n_of_the_buffer() {
        for n in 2..9 {
            for f in [check::sent_fraction(&ReduceScatter(Ring), n, 0), check::sent_fraction(&AllGather(Ring), n, 0)] {
                assert!((f - (n - 1) as f64 / n as f64).abs() < 1e-12);
            }
        }
    }
}
