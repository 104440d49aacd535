//! All-to-all by pairwise exchange (MPI's algorithm for large messages; NCCL has no
//! all-to-all primitive and runs grouped send/recv pairs): N-1 steps; at step k rank r
//! sends its block for rank (r+k) mod N (S/N bytes) and receives the block of rank
//! (r-k) mod N. Alone on a star: (N-1)(a + S/(N B)).

use super::{cyclic_shift_digits, Recv, Send, Step, StepSchedule};
use smallvec::smallvec;

/// See the module documentation. Chunk j of a rank's buffer is its block for rank j.
#[derive(Debug, Clone, Copy, Default)]
pub struct PairwiseAllToAll;

impl StepSchedule for PairwiseAllToAll {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        n.saturating_sub(1)
    }
    fn chunk_count(&self, n: usize, _pipeline: usize) -> usize {
        n
    }
    fn step(&self, rank: usize, n: usize, _pipeline: usize, step: usize) -> Step {
        let k = step + 1;
        let (to, from) = ((rank + k) % n, (rank + n - k) % n);
        Step {
            sends: smallvec![Send { to: smallvec![to], chunks: to..to + 1 }],
            // The block from rank `from` lands in this rank's slot `from` of its output.
            recvs: smallvec![Recv { from, chunks: from..from + 1, reduce: false }],
        }
    }
    fn rank_symmetric(&self, _n: usize) -> bool {
        true
    }
    fn invariant_digits(&self, _n: usize, layout: &[usize]) -> Vec<bool> {
        cyclic_shift_digits(layout)
    }
    fn label(&self) -> &'static str {
        "alltoall"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn every_pair_exchanges_exactly_one_block() {
        for n in 1..10 {
            check::all_to_all(&PairwiseAllToAll, n);
            check::invariant(&PairwiseAllToAll, &[n]);
        }
        check::invariant(&PairwiseAllToAll, &[3, 4]);
        assert!((check::sent_fraction(&PairwiseAllToAll, 8, 3) - 7.0 / 8.0).abs() < 1e-12);
    }
}
