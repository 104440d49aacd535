//! Tree all-reduces: binomial (MPI-style reduce to rank 0, then broadcast) and NCCL-style
//! double binary trees, pipelined.

use super::{Recv, Send, Step, StepSchedule};
use smallvec::smallvec;

fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

/// Binomial tree: in reduce step s, ranks with `rank mod 2^(s+1) == 2^s` send their whole
/// vector to `rank - 2^s`; the broadcast runs the same tree backwards. 2 ceil(log2 N)
/// steps of the whole payload: few messages, but every byte crosses the root's link
/// log N times.
#[derive(Debug, Clone, Copy, Default)]
pub struct BinomialTree;

impl StepSchedule for BinomialTree {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        2 * ceil_log2(n)
    }

    fn chunk_count(&self, _n: usize, _pipeline: usize) -> usize {
        1
    }

    fn step(&self, rank: usize, n: usize, _pipeline: usize, step: usize) -> Step {
        let levels = ceil_log2(n);
        let (s, reduce) = if step < levels { (step, true) } else { (2 * levels - 1 - step, false) };
        let bit = 1 << s;
        let mut st = Step::default();
        let (upper, lower) = (rank % (2 * bit) == bit, rank.is_multiple_of(2 * bit) && rank + bit < n);
        match (reduce, upper, lower) {
            (true, true, _) => st.sends.push(Send { to: smallvec![rank - bit], chunks: 0..1 }),
            (true, _, true) => st.recvs.push(Recv { from: rank + bit, chunks: 0..1, reduce: true }),
            (false, _, true) => st.sends.push(Send { to: smallvec![rank + bit], chunks: 0..1 }),
            (false, true, _) => st.recvs.push(Recv { from: rank - bit, chunks: 0..1, reduce: false }),
            _ => {}
        }
        st
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        n == 1
    }
}

/// Two binary trees in heap order, the second over the ranks reversed, so that (for even
/// N) the leaves of one are the inner nodes of the other (NCCL's double binary tree).
/// Each tree carries half of the payload, cut into `pipeline` chunks that flow up the
/// tree (reduce) and straight back down (broadcast) one step apart: about
/// S/B + 2 log2(N) chunk times when the pipeline is full.
#[derive(Debug, Clone, Copy, Default)]
pub struct DoubleBinaryTree;

fn depth(i: usize) -> usize {
    (usize::BITS - 1 - (i + 1).leading_zeros()) as usize
}

impl StepSchedule for DoubleBinaryTree {
    fn steps(&self, n: usize, pipeline: usize) -> usize {
        if n <= 1 {
            0
        } else {
            pipeline + 2 * depth(n - 1) - 1
        }
    }

    fn chunk_count(&self, _n: usize, pipeline: usize) -> usize {
        2 * pipeline
    }

    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        let p = pipeline as isize;
        let deepest = depth(n - 1) as isize;
        let s = step as isize;
        let mut st = Step::default();
        for tree in 0..2 {
            let index = |r: usize| if tree == 0 { r } else { n - 1 - r };
            let rank_of = index; // the mapping is its own inverse
            let i = index(rank);
            let d = depth(i) as isize;
            let chunk = |c: isize| {
                let g = tree * pipeline + c as usize;
                g..g + 1
            };
            let in_pipe = |c: isize| (0..p).contains(&c);
            let children: Vec<usize> = [2 * i + 1, 2 * i + 2].into_iter().filter(|&j| j < n).collect();
            if d >= 1 {
                let parent = rank_of((i - 1) / 2);
                let c = s - (deepest - d);
                if in_pipe(c) {
                    st.sends.push(Send { to: smallvec![parent], chunks: chunk(c) });
                }
                let c = s - deepest - (d - 1);
                if in_pipe(c) {
                    st.recvs.push(Recv { from: parent, chunks: chunk(c), reduce: false });
                }
            }
            let c = s - (deepest - d - 1);
            if in_pipe(c) {
                for &j in &children {
                    st.recvs.push(Recv { from: rank_of(j), chunks: chunk(c), reduce: true });
                }
            }
            let c = s - deepest - d;
            if in_pipe(c) {
                for &j in &children {
                    st.sends.push(Send { to: smallvec![rank_of(j)], chunks: chunk(c) });
                }
            }
        }
        st
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        n == 1
    }

    fn pipelines(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn tree_schedules_compute_the_sum() {
        for n in 1..20 {
            check::all_reduce(&BinomialTree, n, 1);
            for pipeline in [1, 2, 5] {
                check::all_reduce(&DoubleBinaryTree, n, pipeline);
            }
        }
    }

    #[test]
    fn double_tree_leaves_of_one_tree_are_inner_nodes_of_the_other() {
        let n = 8;
        let inner = |tree: usize, r: usize| {
            let i = if tree == 0 { r } else { n - 1 - r };
            2 * i + 1 < n
        };
        for r in 0..n {
            assert!(inner(0, r) != inner(1, r), "rank {r}");
        }
    }
}
