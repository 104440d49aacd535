//! Hierarchical reduce-scatter, all-gather and all-reduce over a mixed-radix rank layout:
//! a ring inside each level of the machine (the GPUs of a node over NVLink, the nodes of a
//! rail group under one leaf, the groups across the spine), each level on the shard the
//! level below left. This is the two-level scheme of NCCL's and Horovod's hierarchical
//! collectives generalised to any number of levels.
//!
//! Ranks are numbered `d0 + r0 (d1 + r1 (d2 + ...))` for radices `r0, r1, ...` (innermost
//! first; the last radix is N / product of the others). Chunks are numbered with digit 0
//! most significant, so the chunks whose first digits are fixed form one contiguous range.
//! Reduce-scatter runs level 0's ring first: after level i every rank holds the sum over
//! its level-0..i group of the chunks whose first i+1 digits are the ones it owns; the
//! all-gather runs the levels in reverse. With per-level path latency a_i and rate B_i:
//! RS = sum_i (r_i - 1)(a_i + S / (r_0 ... r_i B_i)), two levels:
//! (r0-1)(a0 + S/(r0 B0)) + (r1-1)(a1 + S/(N B1)).

use std::ops::Range;

use super::{Recv, Send, Step, StepSchedule};
use crate::topology::digits;
use smallvec::smallvec;

/// Which collective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelPhase {
    /// Reduce-scatter, innermost level first.
    ReduceScatter,
    /// All-gather, outermost level first.
    AllGather,
    /// Reduce-scatter then all-gather.
    AllReduce,
}

/// A hierarchical collective over `levels` (the inner radices; the outermost is implied).
#[derive(Debug, Clone, PartialEq)]
pub struct Levels {
    /// Radices of the inner levels, innermost first (e.g. `[8]`: GPUs per node; `[8, 32]`:
    /// GPUs per node, nodes per rail group).
    pub levels: Vec<usize>,
    /// The collective.
    pub phase: LevelPhase,
}

impl Levels {
    /// Every radix for `n` ranks, the implied outermost included; radices of 1 are kept.
    /// `None` when the inner levels do not divide `n`.
    pub fn radices(&self, n: usize) -> Option<Vec<usize>> {
        let inner: usize = self.levels.iter().product();
        if inner == 0 || !n.is_multiple_of(inner) {
            return None;
        }
        let mut r = self.levels.clone();
        r.push(n / inner);
        Some(r)
    }

    fn radices_or_flat(&self, n: usize) -> Vec<usize> {
        self.radices(n).unwrap_or_else(|| vec![n])
    }

    /// (level, step within the level's ring, all-gather?) of global step `step`.
    fn locate(radices: &[usize], phase: LevelPhase, step: usize) -> (usize, usize, bool) {
        let rs: usize = radices.iter().map(|r| r - 1).sum();
        let (gather, mut s) = match phase {
            LevelPhase::ReduceScatter => (false, step),
            LevelPhase::AllGather => (true, step),
            LevelPhase::AllReduce if step < rs => (false, step),
            LevelPhase::AllReduce => (true, step - rs),
        };
        let order: Vec<usize> = if gather { (0..radices.len()).rev().collect() } else { (0..radices.len()).collect() };
        for level in order {
            let k = radices[level] - 1;
            if s < k {
                return (level, s, gather);
            }
            s -= k;
        }
        unreachable!("step {step} beyond the schedule")
    }
}

/// The rank with `digits`.
fn compose(digits: &[usize], radices: &[usize]) -> usize {
    digits.iter().zip(radices).rev().fold(0, |acc, (&d, &r)| acc * r + d)
}

/// The chunk owned at a level of ring of `r` ranks by the rank at position `x`: where the
/// ring's reduce-scatter leaves the sum ([`super::Ring`]: chunk x + 1).
fn owned(x: usize, r: usize) -> usize {
    (x + 1) % r
}

/// The chunk range whose first digits are `prefix` (digit 0 most significant).
fn chunk_range(prefix: &[usize], radices: &[usize]) -> Range<usize> {
    let mut start = 0;
    for (i, &p) in prefix.iter().enumerate() {
        start = start * radices[i] + p;
    }
    let span: usize = radices[prefix.len()..].iter().product();
    start * span..(start + 1) * span
}

impl StepSchedule for Levels {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        let k: usize = self.radices_or_flat(n).iter().map(|r| r - 1).sum();
        if self.phase == LevelPhase::AllReduce {
            2 * k
        } else {
            k
        }
    }

    fn chunk_count(&self, n: usize, _pipeline: usize) -> usize {
        n
    }

    fn label(&self) -> &'static str {
        match self.phase {
            LevelPhase::ReduceScatter => "reducescatter",
            LevelPhase::AllGather => "allgather",
            LevelPhase::AllReduce => "allreduce",
        }
    }

    fn step(&self, rank: usize, n: usize, _pipeline: usize, step: usize) -> Step {
        let radices = self.radices_or_flat(n);
        let (level, s, gather) = Self::locate(&radices, self.phase, step);
        let d = digits(rank, &radices);
        let r = radices[level];
        let x = d[level];
        let peer = |to: usize| {
            let mut e = d.clone();
            e[level] = to;
            compose(&e, &radices)
        };
        let (next, prev) = (peer((x + 1) % r), peer((x + r - 1) % r));
        // The chunks this rank works on at this level: those whose digits below the level
        // are the ones it owns (for the all-gather: those it will own after the levels
        // inside this one gathered, i.e. the same prefix).
        let mut prefix: Vec<usize> = (0..level).map(|i| owned(d[i], radices[i])).collect();
        prefix.push(0);
        let part = |p: usize| {
            let mut q = prefix.clone();
            *q.last_mut().unwrap() = p;
            chunk_range(&q, &radices)
        };
        let (send, recv, reduce) = if gather {
            ((x + 1 + r - s % r) % r, (x + r - s % r) % r, false)
        } else {
            ((x + r - s % r) % r, (x + 2 * r - s - 1) % r, true)
        };
        Step {
            sends: smallvec![Send { to: smallvec![next], chunks: part(send) }],
            recvs: smallvec![Recv { from: prev, chunks: part(recv), reduce }],
        }
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        self.radices_or_flat(n).iter().filter(|&&r| r > 1).count() <= 1
    }

    fn neighbours_only(&self) -> bool {
        false
    }

    fn invariant_digits(&self, n: usize, layout: &[usize]) -> Vec<bool> {
        // Every level is a ring over one digit, so translating any digit by one maps the
        // schedule onto itself (message sizes depend only on the level) when the levels
        // are the layout's digits.
        let same = self.radices(n).is_some_and(|r| r == layout);
        vec![same; layout.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    fn each(f: impl Fn(Levels, usize)) {
        for levels in [vec![2], vec![3], vec![4], vec![2, 2], vec![2, 3], vec![3, 2], vec![1, 4], vec![4, 1]] {
            for outer in 1..5 {
                let n = levels.iter().product::<usize>() * outer;
                f(Levels { levels: levels.clone(), phase: LevelPhase::AllReduce }, n);
            }
        }
    }

    #[test]
    fn hierarchical_collectives_compute_what_they_promise() {
        each(|l, n| {
            check::all_reduce(&l, n, 1);
            let rs = Levels { phase: LevelPhase::ReduceScatter, ..l.clone() };
            check::reduce_scatter(&rs, n);
            let ag = Levels { phase: LevelPhase::AllGather, ..l.clone() };
            check::all_reduce(&check::Concat(rs, ag), n, 1);
        });
    }

    #[test]
    fn translating_any_digit_of_its_own_layout_maps_the_schedule_onto_itself() {
        each(|l, n| {
            let layout = l.radices(n).unwrap();
            check::invariant(&l, &layout);
            assert!(l.invariant_digits(n, &layout).iter().all(|&x| x));
            assert!(l.invariant_digits(n, &[n]).iter().all(|&x| !x) || layout == vec![n]);
        });
    }

    #[test]
    fn two_levels_send_the_two_level_volume() {
        // (r0-1)/r0 S inside the node, then (r1-1)/N S across: per rank.
        let l = Levels { levels: vec![4], phase: LevelPhase::ReduceScatter };
        let f = check::sent_fraction(&l, 12, 5);
        assert!((f - (3.0 / 4.0 + 2.0 / 12.0)).abs() < 1e-12, "{f}");
    }
}
