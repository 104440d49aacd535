//! Broadcast from rank 0: by binomial tree (MPI: ceil(log2 N) steps of the whole buffer,
//! the broadcast half of [`BinomialTree`]) and by a pipelined chain (NCCL's ring
//! broadcast: the buffer cut into P pieces flowing 0 -> 1 -> ... -> N-1, N-2+P steps of
//! S/P, about S/B + (N-2) S/(P B) when the pipeline is full).

use super::{BinomialTree, Recv, Send, Step, StepSchedule};
use smallvec::smallvec;

/// The broadcast half of the binomial tree.
#[derive(Debug, Clone, Copy, Default)]
pub struct BinomialBroadcast;

impl StepSchedule for BinomialBroadcast {
    fn steps(&self, n: usize, pipeline: usize) -> usize {
        BinomialTree.steps(n, pipeline) / 2
    }
    fn chunk_count(&self, _n: usize, _pipeline: usize) -> usize {
        1
    }
    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        BinomialTree.step(rank, n, pipeline, step + self.steps(n, pipeline))
    }
    fn rank_symmetric(&self, n: usize) -> bool {
        n == 1
    }
    fn label(&self) -> &'static str {
        "broadcast"
    }
}

/// A pipelined chain from rank 0: at step s rank r forwards piece s - r to rank r + 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChainBroadcast;

impl StepSchedule for ChainBroadcast {
    fn steps(&self, n: usize, pipeline: usize) -> usize {
        if n <= 1 {
            0
        } else {
            n - 2 + pipeline
        }
    }
    fn chunk_count(&self, _n: usize, pipeline: usize) -> usize {
        pipeline
    }
    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        let mut st = Step::default();
        // Rank r sends piece k = step - r (if it has one) and receives piece step - r + 1.
        if rank + 1 < n && step >= rank && step - rank < pipeline {
            let k = step - rank;
            st.sends.push(Send { to: smallvec![rank + 1], chunks: k..k + 1 });
        }
        if rank > 0 && step + 1 >= rank && step + 1 - rank < pipeline {
            let k = step + 1 - rank;
            st.recvs.push(Recv { from: rank - 1, chunks: k..k + 1, reduce: false });
        }
        st
    }
    fn rank_symmetric(&self, n: usize) -> bool {
        n == 1
    }
    fn pipelines(&self) -> bool {
        true
    }
    fn label(&self) -> &'static str {
        "broadcast"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn every_rank_ends_with_rank_zeros_buffer() {
        for n in 1..11 {
            check::broadcast(&BinomialBroadcast, n, 1);
            for pipeline in [1, 2, 5] {
                check::broadcast(&ChainBroadcast, n, pipeline);
            }
        }
    }
}
