//! Exhaustive search for the balanced binary tree of maximum weight from a root: the
//! seed's fallback when Kernighan-Lin gets stuck, and the reference the tests hold the
//! heuristic to.
//!
//! Every balanced tree is a recursive bisection (see `tree` docs): the cluster of GPUs
//! that a GPU `r` gathers from levels `l..=h` either has no edge of `r` at level `l`,
//! or splits into `r`'s side `A` and the subtree `B` of `r`'s child `b` at level `l`,
//! both gathered in the remaining `d - 1` levels, so each has at most `2^(d-1)` GPUs.
//! The search tries every such split and child, and remembers the best tree of each
//! (cluster, root, levels left): at most `2^n * n * (h + 1)` entries, each trying at
//! most `2^(s-1) * s` splits for a cluster of `s` GPUs, about `3^n * n * h` steps in all.
//! For 8 GPUs that is a few tens of thousands of steps (under a millisecond; a plain
//! enumeration would visit all 7! = 5040 trees of 8 GPUs per root), for 12 a few tens
//! of millions, so the search stops at [`MAX_EXHAUSTIVE_GPUS`].

use crate::error::{Error, Result};

use super::weights::{Weights, EPS};
use super::{height_for, GpuTopology, Tree, TreeEdge};

/// Most GPUs the exhaustive search accepts.
pub const MAX_EXHAUSTIVE_GPUS: usize = 12;

/// The balanced binary tree of maximum total link weight rooted at `root`, by exhaustive
/// search; among equally heavy trees, the first in the search order (deterministic).
/// Errors: `gpus` beyond [`MAX_EXHAUSTIVE_GPUS`], `root` out of range, and `adjacency`
/// when the links admit no balanced tree from `root` (e.g. GPUs on a long chain).
pub fn best_tree(topology: &GpuTopology, root: usize) -> Result<Tree> {
    check_root(topology, root)?;
    if topology.gpus() > MAX_EXHAUSTIVE_GPUS {
        return Err(Error::invalid(
            "gpus",
            format!("{} GPUs; exhaustive search is limited to {MAX_EXHAUSTIVE_GPUS}", topology.gpus()),
        ));
    }
    search(&Weights::new(topology), root).map(|(_, t)| t).ok_or_else(|| no_tree(topology.gpus(), root))
}

pub(super) fn check_root(topology: &GpuTopology, root: usize) -> Result<()> {
    if root >= topology.gpus() {
        return Err(Error::invalid(
            "root",
            format!("GPU {root} does not exist; GPUs are 0 to {}", topology.gpus() - 1),
        ));
    }
    Ok(())
}

/// The error for links that admit no balanced tree.
pub(super) fn no_tree(gpus: usize, root: usize) -> Error {
    Error::invalid(
        "adjacency",
        format!(
            "no balanced binary tree of height {} rooted at GPU {root} uses only the given links (a GPU takes part \
             in one transfer per level); link the GPUs without NVLink by PCIe (weight 1)",
            height_for(gpus)
        ),
    )
}

/// What the best tree of a (cluster, root, levels) does at its top level.
#[derive(Debug, Clone, Copy)]
enum Choice {
    /// The cluster is the root alone.
    Leaf,
    /// The root has no child at this level.
    Skip,
    /// The root's child `b` at this level gathers the GPUs of `side`.
    Split { b: usize, side: u32 },
}

/// Memo entry: not yet computed, impossible, or the best score and its top choice.
#[derive(Debug, Clone, Copy)]
enum Entry {
    Unknown,
    Impossible,
    Best(f64, Choice),
}

struct Search<'a> {
    w: &'a Weights,
    n: usize,
    h: usize,
    memo: Vec<Entry>,
}

/// The best tree from `root` under weights `w` and its score; `None` when the links
/// admit no balanced tree. `w.gpus()` must be at most [`MAX_EXHAUSTIVE_GPUS`].
pub(super) fn search(w: &Weights, root: usize) -> Option<(f64, Tree)> {
    let n = w.gpus();
    debug_assert!(n <= MAX_EXHAUSTIVE_GPUS);
    let h = height_for(n);
    let mut s = Search { w, n, h, memo: vec![Entry::Unknown; (1usize << n) * n * (h + 1)] };
    let all = (1u32 << n) - 1;
    let score = s.best(all, root, h)?;
    let mut edges = Vec::with_capacity(n - 1);
    s.collect(all, root, h, &mut edges);
    let tree = Tree::new(n, root, edges).expect("the search builds balanced trees");
    Some((score, tree))
}

impl Search<'_> {
    fn slot(&self, set: u32, root: usize, d: usize) -> usize {
        (set as usize * self.n + root) * (self.h + 1) + d
    }

    /// Best score of a tree over `set` (containing `root`) using `d` levels.
    fn best(&mut self, set: u32, root: usize, d: usize) -> Option<f64> {
        match self.memo[self.slot(set, root, d)] {
            Entry::Best(score, _) => return Some(score),
            Entry::Impossible => return None,
            Entry::Unknown => {}
        }
        let size = set.count_ones() as usize;
        let entry = if size == 1 {
            Entry::Best(0.0, Choice::Leaf)
        } else if d == 0 || size > 1 << d {
            Entry::Impossible
        } else {
            self.solve(set, root, d, size)
        };
        let slot = self.slot(set, root, d);
        self.memo[slot] = entry;
        match entry {
            Entry::Best(score, _) => Some(score),
            _ => None,
        }
    }

    fn solve(&mut self, set: u32, root: usize, d: usize, size: usize) -> Entry {
        let cap = 1usize << (d - 1);
        let mut found = Entry::Impossible;
        let keep = |score: f64, choice: Choice, found: &mut Entry| match found {
            Entry::Best(best, _) if score <= *best + EPS => {}
            _ => *found = Entry::Best(score, choice),
        };
        if size <= cap {
            if let Some(score) = self.best(set, root, d - 1) {
                keep(score, Choice::Skip, &mut found);
            }
        }
        let rest = set & !(1 << root);
        // Sub-masks of `rest` in increasing order.
        let mut side: u32 = 0;
        loop {
            side = side.wrapping_sub(rest) & rest;
            if side == 0 {
                break;
            }
            let s = side.count_ones() as usize;
            if s > cap || size - s > cap {
                continue;
            }
            let mut rooted = None;
            for b in Bits(side) {
                if !self.w.linked(root, b) {
                    continue;
                }
                let Some(other) = self.best(side, b, d - 1) else { continue };
                if rooted.is_none() {
                    rooted = Some(self.best(set & !side, root, d - 1));
                }
                let Some(Some(mine)) = rooted else { break };
                keep(self.w.w(root, b) + mine + other, Choice::Split { b, side }, &mut found);
            }
        }
        found
    }

    /// Appends the edges of the best tree over `set` from `root` in `d` levels.
    fn collect(&self, set: u32, root: usize, d: usize, edges: &mut Vec<TreeEdge>) {
        match self.memo[self.slot(set, root, d)] {
            Entry::Best(_, Choice::Leaf) | Entry::Unknown | Entry::Impossible => {}
            Entry::Best(_, Choice::Skip) => self.collect(set, root, d - 1, edges),
            Entry::Best(_, Choice::Split { b, side }) => {
                edges.push(TreeEdge { level: self.h - d + 1, parent: root, child: b });
                self.collect(set & !side, root, d - 1, edges);
                self.collect(side, b, d - 1, edges);
            }
        }
    }
}

/// The set bits of a mask, lowest first.
struct Bits(u32);

impl Iterator for Bits {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_topologies_give_n_minus_1_links() {
        for n in 1..=8 {
            let t = GpuTopology::all_pairs(n, 2).unwrap();
            for root in 0..n {
                let tree = best_tree(&t, root).unwrap();
                assert_eq!(tree.weight(&t), 2 * (n as u64 - 1));
                assert_eq!(tree.root(), root);
            }
        }
    }

    #[test]
    fn a_chain_has_no_balanced_tree() {
        // 0 - 1 - 2 - 3 - 4: from GPU 0 the farthest GPU is 4 links away, height is 3.
        let mut rows = vec![vec![0i64; 5]; 5];
        for i in 0..4 {
            rows[i][i + 1] = 1;
            rows[i + 1][i] = 1;
        }
        let t = GpuTopology::from_adjacency(&rows).unwrap();
        assert_eq!(best_tree(&t, 0).unwrap_err().field(), "adjacency");
        // From the middle: 2-1 at level 1, 2-3 at level 2, 1-0 and 3-4 at level 3.
        let mid = best_tree(&t, 2).unwrap();
        assert_eq!(mid.parent_child(), vec![(2, 1), (2, 3), (1, 0), (3, 4)]);
        assert_eq!(best_tree(&t, 5).unwrap_err().field(), "root");
    }
}
