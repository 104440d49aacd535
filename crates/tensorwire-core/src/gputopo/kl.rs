//! Seed 003's tree generation by recursive Kernighan-Lin bisection.
//!
//! Start with all GPUs in one cluster whose root is the tree's root. At each level,
//! bisect every cluster of two or more GPUs with Kernighan-Lin (two halves of sizes
//! `ceil(s/2)` and `floor(s/2)` with the least link weight between them), then link the
//! cluster's root to the GPU of the other half with the heaviest link from the root;
//! that GPU becomes the root of the other half. After `ceil(log2 n)` levels every
//! cluster is one GPU and the links chosen form a balanced binary tree. The heuristic
//! is stuck when the root has no link into the other half; the caller then falls back
//! to exhaustive search, as the seed does.
//!
//! Choices the seed leaves open, fixed here for determinism:
//! - the first partition of a cluster grows the root's half greedily from the root,
//!   adding the GPU with the heaviest links into the half (lowest index on ties), the
//!   "greedy graph growing" start of METIS, which seed 003 cites (MXNet's code shuffles
//!   with a fixed-seed random generator instead);
//! - the root is not pinned: it may end in either half (sizes `ceil(s/2)`, `floor(s/2)`),
//!   and the half holding it stays its cluster;
//! - a Kernighan-Lin pass swaps the unlocked pair of highest gain (lowest indices on
//!   ties), keeps the best prefix of swaps if its total gain is positive, and passes
//!   repeat until none is (at most `s` passes);
//! - among equally heavy links from the root into the other half, the lowest GPU wins.
//!
//! Cost: a pass makes `s/2` swaps, each choosing among `s^2/4` pairs, so `O(s^3)` per
//! pass and about `O(n^3)` per level for `n` GPUs.

use super::weights::{Weights, EPS};
use super::{height_for, Tree, TreeEdge};

/// The tree from `root` by recursive Kernighan-Lin bisection, or `None` when stuck.
pub(super) fn kl_tree(w: &Weights, root: usize) -> Option<Tree> {
    let n = w.gpus();
    let h = height_for(n);
    let mut clusters: Vec<(usize, Vec<usize>)> = vec![(root, (0..n).collect())];
    let mut edges = Vec::with_capacity(n.saturating_sub(1));
    for level in 1..=h {
        let mut next = Vec::with_capacity(2 * clusters.len());
        for (r, members) in clusters {
            if members.len() < 2 {
                next.push((r, members));
                continue;
            }
            let (mine, other) = bisect(w, r, &members);
            let b = best_link(w, r, &other)?;
            edges.push(TreeEdge { level, parent: r, child: b });
            next.push((r, mine));
            next.push((b, other));
        }
        clusters = next;
    }
    Some(Tree::new(n, root, edges).expect("recursive bisection builds balanced trees"))
}

/// The GPU of `other` with the heaviest link from `r`; lowest index on ties.
fn best_link(w: &Weights, r: usize, other: &[usize]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for &g in other {
        if w.linked(r, g) && best.is_none_or(|b| w.w(r, g) > w.w(r, b) + EPS) {
            best = Some(g);
        }
    }
    best
}

/// Kernighan-Lin bisection of `members` (sorted) into the half holding `r` and the other.
fn bisect(w: &Weights, r: usize, members: &[usize]) -> (Vec<usize>, Vec<usize>) {
    let s = members.len();
    // side[i]: whether members[i] is in the half grown from the root.
    let mut side = grow(w, r, members, s.div_ceil(2));
    for _ in 0..s {
        if !improve(w, members, &mut side) {
            break;
        }
    }
    let root_side = side[members.iter().position(|&g| g == r).expect("root in its cluster")];
    let (mut mine, mut other) = (Vec::new(), Vec::new());
    for (i, &g) in members.iter().enumerate() {
        if side[i] == root_side {
            mine.push(g);
        } else {
            other.push(g);
        }
    }
    (mine, other)
}

/// Greedy graph growing: the root, then repeatedly the GPU with the most weight into the
/// half, until the half has `size` GPUs.
fn grow(w: &Weights, r: usize, members: &[usize], size: usize) -> Vec<bool> {
    let mut side: Vec<bool> = members.iter().map(|&g| g == r).collect();
    for _ in 1..size {
        let mut pick: Option<(usize, f64)> = None;
        for (i, &g) in members.iter().enumerate() {
            if side[i] {
                continue;
            }
            let into: f64 = members.iter().enumerate().filter(|(j, _)| side[*j]).map(|(_, &o)| w.w(g, o)).sum();
            if pick.is_none_or(|(_, best)| into > best + EPS) {
                pick = Some((i, into));
            }
        }
        let (i, _) = pick.expect("a cluster larger than its half");
        side[i] = true;
    }
    side
}

/// One Kernighan-Lin pass; returns whether it improved the cut (and applied the swaps).
fn improve(w: &Weights, members: &[usize], side: &mut [bool]) -> bool {
    let s = members.len();
    // d[i]: external minus internal weight of members[i], as if the tentative swaps so far
    // were applied.
    let mut d: Vec<f64> = (0..s)
        .map(|i| {
            (0..s)
                .filter(|&j| j != i)
                .map(|j| w.w(members[i], members[j]) * if side[i] == side[j] { -1.0 } else { 1.0 })
                .sum()
        })
        .collect();
    let mut locked = vec![false; s];
    let mut swaps: Vec<(usize, usize, f64)> = Vec::new();
    let pairs = side.iter().filter(|&&x| x).count().min(side.iter().filter(|&&x| !x).count());
    for _ in 0..pairs {
        let mut best: Option<(usize, usize, f64)> = None;
        for a in (0..s).filter(|&a| side[a] && !locked[a]) {
            for b in (0..s).filter(|&b| !side[b] && !locked[b]) {
                let g = d[a] + d[b] - 2.0 * w.w(members[a], members[b]);
                if best.is_none_or(|(_, _, bg)| g > bg + EPS) {
                    best = Some((a, b, g));
                }
            }
        }
        let Some((a, b, g)) = best else { break };
        locked[a] = true;
        locked[b] = true;
        swaps.push((a, b, g));
        // After swapping a (side A) with b (side B): for x on side A, a left and b came in.
        for x in 0..s {
            if locked[x] {
                continue;
            }
            let (wa, wb) = (w.w(members[x], members[a]), w.w(members[x], members[b]));
            if side[x] {
                d[x] += 2.0 * wa - 2.0 * wb;
            } else {
                d[x] += 2.0 * wb - 2.0 * wa;
            }
        }
    }
    // Best prefix of the tentative swaps.
    let (mut total, mut best_total, mut best_k) = (0.0, 0.0, 0);
    for (k, &(_, _, g)) in swaps.iter().enumerate() {
        total += g;
        if total > best_total + EPS {
            best_total = total;
            best_k = k + 1;
        }
    }
    for &(a, b, _) in &swaps[..best_k] {
        side[a] = !side[a];
        side[b] = !side[b];
    }
    best_k > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gputopo::GpuTopology;

    fn cut(w: &Weights, a: &[usize], b: &[usize]) -> f64 {
        a.iter().flat_map(|&x| b.iter().map(move |&y| w.w(x, y))).sum()
    }

    #[test]
    fn bisection_finds_the_minimum_cut_of_two_cliques() {
        // Two 4-cliques of weight 3 joined by weight-1 links, GPUs interleaved.
        let weight = |i: usize, j: usize| match (i == j, i % 2 == j % 2) {
            (true, _) => 0,
            (false, true) => 3,
            (false, false) => 1,
        };
        let rows: Vec<Vec<i64>> = (0..8).map(|i| (0..8).map(|j| weight(i, j)).collect()).collect();
        let w = Weights::new(&GpuTopology::from_adjacency(&rows).unwrap());
        let (mine, other) = bisect(&w, 0, &(0..8).collect::<Vec<_>>());
        assert_eq!(mine, vec![0, 2, 4, 6]);
        assert_eq!(other, vec![1, 3, 5, 7]);
        assert_eq!(cut(&w, &mine, &other), 16.0);
    }

    #[test]
    fn p3_16xlarge_splits_into_its_two_quads() {
        let w = Weights::new(&GpuTopology::p3_16xlarge());
        let (mine, other) = bisect(&w, 5, &(0..8).collect::<Vec<_>>());
        assert_eq!((mine, other), (vec![4, 5, 6, 7], vec![0, 1, 2, 3]));
    }
}
