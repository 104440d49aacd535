//! Ring all-reduce (Baidu/Horovod) and its variant with a multicast all-gather
//! (seed 000 section 8.4).

use super::{Recv, Send, Step, StepSchedule};
use smallvec::smallvec;

/// Ring all-reduce: N chunks; N-1 reduce-scatter steps then N-1 all-gather steps, each
/// rank sending one chunk of S/N bytes to `rank + 1`. Alone on a star:
/// 2(N-1)(alpha + S/(N B)).
#[derive(Debug, Clone, Copy, Default)]
pub struct Ring;

/// Reduce-scatter step `s` of the ring: (chunk sent, chunk received and added).
fn reduce_scatter_chunks(rank: usize, n: usize, s: usize) -> (usize, usize) {
    ((rank + n - s % n) % n, (rank + 2 * n - s - 1) % n)
}

impl StepSchedule for Ring {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        2 * n.saturating_sub(1)
    }

    fn chunk_count(&self, n: usize, _pipeline: usize) -> usize {
        n
    }

    fn step(&self, rank: usize, n: usize, _pipeline: usize, step: usize) -> Step {
        let next = (rank + 1) % n;
        let prev = (rank + n - 1) % n;
        let (send_chunk, recv_chunk, reduce) = if step < n - 1 {
            let (s, r) = reduce_scatter_chunks(rank, n, step);
            (s, r, true)
        } else {
            // All-gather step s': send chunk (rank + 1 - s'), receive chunk (rank - s').
            let s = step - (n - 1);
            ((rank + 1 + n - s % n) % n, (rank + n - s % n) % n, false)
        };
        Step {
            sends: smallvec![Send { to: smallvec![next], chunks: send_chunk..send_chunk + 1 }],
            recvs: smallvec![Recv { from: prev, chunks: recv_chunk..recv_chunk + 1, reduce }],
        }
    }

    fn rank_symmetric(&self, _n: usize) -> bool {
        true
    }

    fn neighbours_only(&self) -> bool {
        true
    }

    fn fixed_peer(&self, rank: usize, n: usize) -> Option<usize> {
        (n > 1).then(|| (rank + 1) % n)
    }

    /// A rotation of the ring: the top digit of any layout (see [`super::cyclic_shift_digits`]).
    fn invariant_digits(&self, _n: usize, layout: &[usize]) -> Vec<bool> {
        super::cyclic_shift_digits(layout)
    }
}

/// Ring reduce-scatter, then one step in which every rank multicasts its reduced chunk
/// to all others (the switch replicates it). The senders' uplinks carry S/N each, but
/// every receiver's downlink carries (N-1) S/N: the bottleneck moves to the receivers,
/// which is why seed 000 finds little gain.
#[derive(Debug, Clone, Copy, Default)]
pub struct RingMulticast;

impl StepSchedule for RingMulticast {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        if n > 1 {
            n
        } else {
            0
        }
    }

    fn chunk_count(&self, n: usize, _pipeline: usize) -> usize {
        n
    }

    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        if step < n - 1 {
            return Ring.step(rank, n, pipeline, step);
        }
        // After N-1 reduce-scatter steps rank r holds the sum of chunk (r + 1) mod N.
        let others: super::Ranks = (0..n).filter(|&r| r != rank).collect();
        Step {
            sends: smallvec![Send { to: others.clone(), chunks: (rank + 1) % n..(rank + 1) % n + 1 }],
            recvs: others
                .iter()
                .map(|&o| Recv { from: o, chunks: (o + 1) % n..(o + 1) % n + 1, reduce: false })
                .collect(),
        }
    }

    fn rank_symmetric(&self, _n: usize) -> bool {
        true
    }

    /// The ring steps and the all-to-all multicast are invariant under rotation.
    fn invariant_digits(&self, _n: usize, layout: &[usize]) -> Vec<bool> {
        super::cyclic_shift_digits(layout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn ring_schedules_compute_the_sum_on_every_rank() {
        for n in 1..10 {
            check::all_reduce(&Ring, n, 1);
            check::all_reduce(&RingMulticast, n, 1);
        }
    }

    #[test]
    fn ring_schedules_are_invariant_under_the_top_digit_only() {
        for layout in [vec![6], vec![2, 3], vec![4, 3, 2], vec![2, 2, 1], vec![3, 1, 1], vec![1, 5]] {
            check::invariant(&Ring, &layout);
            check::invariant(&RingMulticast, &layout);
        }
        assert_eq!(Ring.invariant_digits(24, &[4, 3, 2]), vec![false, false, true]);
        assert_eq!(Ring.invariant_digits(4, &[4, 1, 1]), vec![true, true, true]);
        assert_eq!(Ring.invariant_digits(12, &[4, 3, 1]), vec![false, true, true]);
        assert_eq!(Ring.invariant_digits(12, &[1, 12]), vec![true, true]);
    }

    #[test]
    fn ring_sends_2_n_minus_1_over_n_of_the_payload() {
        for n in 2..9 {
            let f = check::sent_fraction(&Ring, n, 0);
            assert!((f - 2.0 * (n - 1) as f64 / n as f64).abs() < 1e-12);
        }
    }
}
