//! Recursive doubling (butterfly exchange) and halving-doubling (Rabenseifner).
//!
//! For N not a power of two, with p = the largest power of two <= N and e = N - p: first
//! ranks p..N fold their vector into ranks 0..e, the p low ranks run the algorithm, and
//! finally ranks 0..e send the result back (MPICH's approach). Those two extra steps make
//! the ranks unequal, so only powers of two are rank-symmetric.

use super::{floor_pow2, Recv, Send, Step, StepSchedule};
use smallvec::smallvec;

fn fold_steps(n: usize) -> usize {
    if n == floor_pow2(n) {
        0
    } else {
        2
    }
}

/// Pre- and post-steps of the fold; `all` is the range covering the whole payload.
fn fold_step(rank: usize, n: usize, pre: bool, all: std::ops::Range<usize>) -> Step {
    let p = floor_pow2(n);
    let e = n - p;
    let mut st = Step::default();
    match (pre, rank >= p, rank < e) {
        (true, true, _) => st.sends.push(Send { to: smallvec![rank - p], chunks: all }),
        (true, false, true) => st.recvs.push(Recv { from: rank + p, chunks: all, reduce: true }),
        (false, false, true) => st.sends.push(Send { to: smallvec![rank + p], chunks: all }),
        (false, true, _) => st.recvs.push(Recv { from: rank - p, chunks: all, reduce: false }),
        _ => {}
    }
    st
}

/// Recursive doubling: in each of log2 N steps every rank exchanges its whole vector with
/// `rank XOR 2^k` and adds. Seed 000's butterfly mixing (section 3.3.2) is this exchange.
#[derive(Debug, Clone, Copy, Default)]
pub struct RecursiveDoubling;

impl StepSchedule for RecursiveDoubling {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        floor_pow2(n).trailing_zeros() as usize + fold_steps(n)
    }

    fn chunk_count(&self, _n: usize, _pipeline: usize) -> usize {
        1
    }

    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        let p = floor_pow2(n);
        let fold = fold_steps(n) / 2;
        if fold == 1 && step == 0 {
            return fold_step(rank, n, true, 0..1);
        }
        if fold == 1 && step + 1 == self.steps(n, pipeline) {
            return fold_step(rank, n, false, 0..1);
        }
        if rank >= p {
            return Step::default();
        }
        let peer = rank ^ (1 << (step - fold));
        Step {
            sends: smallvec![Send { to: smallvec![peer], chunks: 0..1 }],
            recvs: smallvec![Recv { from: peer, chunks: 0..1, reduce: true }],
        }
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        n == floor_pow2(n)
    }
}

/// Halving-doubling (Rabenseifner): reduce-scatter by recursive halving (step k exchanges
/// S/2^(k+1) with `rank XOR p/2^(k+1)`), then all-gather by recursive doubling. Each rank
/// sends 2(p-1)/p S in 2 log2 p steps: ring's bandwidth with log-many latencies.
#[derive(Debug, Clone, Copy, Default)]
pub struct HalvingDoubling;

impl StepSchedule for HalvingDoubling {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        2 * floor_pow2(n).trailing_zeros() as usize + fold_steps(n)
    }

    fn chunk_count(&self, n: usize, _pipeline: usize) -> usize {
        floor_pow2(n)
    }

    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        let p = floor_pow2(n);
        let log = p.trailing_zeros() as usize;
        let fold = fold_steps(n) / 2;
        if fold == 1 && step == 0 {
            return fold_step(rank, n, true, 0..p);
        }
        if fold == 1 && step + 1 == self.steps(n, pipeline) {
            return fold_step(rank, n, false, 0..p);
        }
        if rank >= p {
            return Step::default();
        }
        let k = step - fold;
        if k < log {
            // Recursive halving: keep the half of the current segment that holds `rank`.
            let d = p >> (k + 1);
            let base = rank / (2 * d) * (2 * d);
            let (keep, give) = if rank & d == 0 {
                (base..base + d, base + d..base + 2 * d)
            } else {
                (base + d..base + 2 * d, base..base + d)
            };
            let peer = rank ^ d;
            Step {
                sends: smallvec![Send { to: smallvec![peer], chunks: give }],
                recvs: smallvec![Recv { from: peer, chunks: keep, reduce: true }],
            }
        } else {
            let d = 1 << (k - log);
            let peer = rank ^ d;
            let mine = rank / d * d..rank / d * d + d;
            let theirs = peer / d * d..peer / d * d + d;
            Step {
                sends: smallvec![Send { to: smallvec![peer], chunks: mine }],
                recvs: smallvec![Recv { from: peer, chunks: theirs, reduce: false }],
            }
        }
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        n == floor_pow2(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn doubling_schedules_compute_the_sum_for_any_n() {
        for n in 1..20 {
            check::all_reduce(&RecursiveDoubling, n, 1);
            check::all_reduce(&HalvingDoubling, n, 1);
        }
    }

    #[test]
    fn halving_doubling_sends_what_ring_sends_for_powers_of_two() {
        for n in [2usize, 4, 8, 16] {
            let f = check::sent_fraction(&HalvingDoubling, n, 3 % n);
            assert!((f - 2.0 * (n - 1) as f64 / n as f64).abs() < 1e-12, "n={n}: {f}");
            assert!((check::sent_fraction(&RecursiveDoubling, n, 0) - (n as f64).log2()).abs() < 1e-12);
        }
    }
}
