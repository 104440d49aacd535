//! A balanced binary reduction tree embedded in the GPU links (seed 003, Figure 6).
//!
//! The *binary* tree of seed 003 is the tree of reduction operations: each step adds
//! two partial sums, and `n` GPUs need `h = ceil(log2 n)` steps. Embedded in the links,
//! its sends form a spanning tree in which a GPU has at most one edge per step: in
//! Figure 6 the root, GPU5, receives from GPU1, then GPU7, then GPU4. So an edge here
//! carries a *level* `1..=h`; level 1 is the first bisection of the GPUs (the last
//! step of a reduce, the first of a broadcast) and level `h` the last.
//!
//! A tree is valid (balanced, of height `h`) when it spans all GPUs and
//! 1. every GPU has at most one edge per level, and
//! 2. the edge from a GPU to its parent has a lower level than every edge to its children.
//!
//! Then a reduce runs levels `h, h-1, ..., 1`: at level `l` every child joined at `l`
//! sends its partial sum to its parent, having received from all its own children at
//! the deeper levels; each GPU sends or receives at most once per level. A broadcast
//! runs the same edges parent-to-child in levels `1, ..., h`.

use crate::error::{Error, Result};

use super::GpuTopology;

/// `ceil(log2 gpus)`: levels of a balanced binary tree over `gpus` GPUs (0 for one GPU).
pub fn height_for(gpus: usize) -> usize {
    if gpus <= 1 {
        0
    } else {
        (usize::BITS - (gpus - 1).leading_zeros()) as usize
    }
}

/// One edge of a tree: at `level`, `child` sends to `parent` in a reduce, and `parent`
/// to `child` in a broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TreeEdge {
    /// Level, `1..=height`; ordering by level first keeps the tree's edges in level order.
    pub level: usize,
    /// The GPU nearer the root.
    pub parent: usize,
    /// The GPU farther from the root.
    pub child: usize,
}

fn show(e: &TreeEdge) -> String {
    format!("{}->{} at level {}", e.parent, e.child, e.level)
}

/// A balanced binary reduction tree rooted at one GPU; valid by construction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tree {
    gpus: usize,
    root: usize,
    /// Sorted by (level, parent, child).
    edges: Vec<TreeEdge>,
}

impl Tree {
    /// A tree over `gpus` GPUs rooted at `root`, checked against the rules in the module
    /// docs. Errors name the field `tree`. Does not look at links: see [`Tree::uses_links_of`].
    pub fn new(gpus: usize, root: usize, mut edges: Vec<TreeEdge>) -> Result<Self> {
        let field = "tree";
        if gpus == 0 || root >= gpus {
            return Err(Error::invalid(field, format!("root {root} is not one of the {gpus} GPUs")));
        }
        if edges.len() != gpus - 1 {
            return Err(Error::invalid(
                field,
                format!("has {} edges; a tree over {gpus} GPUs has {}", edges.len(), gpus - 1),
            ));
        }
        let h = height_for(gpus);
        // Level at which each GPU joins (its parent edge); the root joins at 0.
        let mut joined: Vec<Option<usize>> = vec![None; gpus];
        joined[root] = Some(0);
        for e in &edges {
            if e.parent >= gpus || e.child >= gpus || e.parent == e.child {
                return Err(Error::invalid(field, format!("edge {} does not join two of the {gpus} GPUs", show(e))));
            }
            if e.level == 0 || e.level > h {
                return Err(Error::invalid(
                    field,
                    format!("edge {} has level {}; levels run 1 to {h} for {gpus} GPUs", show(e), e.level),
                ));
            }
            if joined[e.child].is_some() {
                return Err(Error::invalid(field, format!("GPU {} has two parents or is the root", e.child)));
            }
            joined[e.child] = Some(e.level);
        }
        // Every non-root GPU now has exactly one parent (n - 1 edges, no child twice).
        let mut used = vec![0u64; gpus]; // bit l: the GPU has an edge at level l
        for e in &edges {
            let parent_joined = joined[e.parent].unwrap_or(usize::MAX);
            if parent_joined >= e.level {
                return Err(Error::invalid(
                    field,
                    format!("edge {}: GPU {} joins at level {parent_joined}, not before", show(e), e.parent),
                ));
            }
            for g in [e.parent, e.child] {
                if used[g] & (1 << e.level) != 0 {
                    return Err(Error::invalid(field, format!("GPU {g} has two edges at level {}", e.level)));
                }
                used[g] |= 1 << e.level;
            }
        }
        // Levels strictly increase from parent to child, so there is no cycle and every
        // GPU reaches the root: the edges span all GPUs.
        edges.sort_unstable();
        Ok(Tree { gpus, root, edges })
    }

    /// Number of GPUs spanned.
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    /// The GPU that holds the sum after a reduce.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Levels, `ceil(log2 gpus)`: steps of a reduce, and of a broadcast.
    pub fn height(&self) -> usize {
        height_for(self.gpus)
    }

    /// All edges, sorted by (level, parent, child).
    pub fn edges(&self) -> &[TreeEdge] {
        &self.edges
    }

    /// The edges at `level` (`1..=height`); their GPUs are pairwise distinct.
    pub fn level(&self, level: usize) -> impl Iterator<Item = &TreeEdge> + '_ {
        self.edges.iter().filter(move |e| e.level == level)
    }

    /// `(parent, child)` pairs in level order, as the `topology` command prints them.
    pub fn parent_child(&self) -> Vec<(usize, usize)> {
        self.edges.iter().map(|e| (e.parent, e.child)).collect()
    }

    /// Sum of the link weights of the edges in `topology`.
    pub fn weight(&self, topology: &GpuTopology) -> u64 {
        self.edges.iter().map(|e| u64::from(topology.weight(e.parent, e.child))).sum()
    }

    /// Whether `topology` has the same GPUs and a link (weight > 0) under every edge.
    pub fn uses_links_of(&self, topology: &GpuTopology) -> bool {
        topology.gpus() == self.gpus && self.edges.iter().all(|e| topology.weight(e.parent, e.child) > 0)
    }

    /// The links used, as `(low, high)` GPU pairs, in edge order.
    pub fn links(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.edges.iter().map(|e| (e.parent.min(e.child), e.parent.max(e.child)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(level: usize, parent: usize, child: usize) -> TreeEdge {
        TreeEdge { level, parent, child }
    }

    #[test]
    fn heights() {
        let want = [(1, 0), (2, 1), (3, 2), (4, 2), (5, 3), (8, 3), (9, 4), (16, 4), (17, 5)];
        for (n, h) in want {
            assert_eq!(height_for(n), h, "n={n}");
        }
    }

    #[test]
    fn figure_6_tree_is_valid() {
        // Seed 003 Figure 6 (GPUs numbered as there): root 5 receives from 1, 7, 4.
        let edges = vec![e(3, 5, 1), e(3, 7, 3), e(3, 4, 0), e(3, 6, 2), e(2, 5, 7), e(2, 4, 6), e(1, 5, 4)];
        let t = Tree::new(8, 5, edges).unwrap();
        assert_eq!(t.height(), 3);
        assert_eq!(t.level(1).count(), 1);
        assert_eq!(t.level(3).count(), 4);
        assert_eq!(t.edges()[0], e(1, 5, 4));
    }

    #[test]
    fn invalid_trees_are_refused() {
        let bad: &[(usize, usize, Vec<TreeEdge>, &str)] = &[
            (4, 4, vec![], "root"),
            (4, 0, vec![e(1, 0, 1), e(2, 0, 2)], "edges"),
            (4, 0, vec![e(1, 0, 1), e(2, 0, 2), e(3, 1, 3)], "levels run"),
            (4, 0, vec![e(1, 0, 1), e(2, 0, 2), e(2, 0, 3)], "two edges at level 2"),
            (4, 0, vec![e(2, 0, 1), e(1, 1, 2), e(1, 0, 3)], "not before"),
            (4, 0, vec![e(1, 0, 1), e(2, 0, 1), e(2, 1, 3)], "two parents"),
            (3, 0, vec![e(1, 0, 0), e(2, 0, 1)], "does not join"),
        ];
        for (n, root, edges, words) in bad {
            let err = Tree::new(*n, *root, edges.clone()).unwrap_err();
            assert_eq!(err.field(), "tree");
            assert!(err.to_string().contains(words), "{err} should say {words}");
        }
        assert_eq!(Tree::new(1, 0, vec![]).unwrap().height(), 0);
    }
}
