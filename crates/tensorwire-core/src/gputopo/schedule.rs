//! The tree all-reduce as data, for the simulator and the runtime to follow alike.
//!
//! With `k` trees the payload of `elements` elements is cut into `k` slices of equal
//! size (the first `elements mod k` one element longer); slice `i` is reduced up tree `i`
//! to its root, then broadcast back down the same tree (seed 003, Figure 4). The trees
//! run side by side: round `r < h` reduces level `h - r` of every tree, round `h + j`
//! broadcasts level `j + 1`, `2h` rounds in all (`h = ceil(log2 n)`).
//!
//! Within a round the transfers are independent: each reads data that earlier rounds
//! completed, and a GPU takes part in at most one transfer per tree. A GPU may send on
//! one tree while it receives on another in the same round, so a runtime should post
//! a round's sends and receives together (non-blocking) before waiting on them.

use std::ops::Range;

use crate::error::{Error, Result};

use super::Tree;

/// Payload size, in elements, from which several trees beat one (seed 003, Figure 7:
/// multi-tree wins beyond 1M to 10M float32; MXNet's `MXNET_KVSTORE_TREE_ARRAY_BOUND`).
pub const DEFAULT_ARRAY_BOUND: usize = 10_000_000;

/// What the receiver does with a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    /// Add it to its own copy of the slice (reduce phase).
    Reduce,
    /// Overwrite its own copy with it (broadcast phase).
    Copy,
}

/// One point-to-point transfer of a slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transfer {
    /// Index of the slice, which is also the index of the tree it travels on.
    pub slice: usize,
    /// Sending GPU.
    pub from: usize,
    /// Receiving GPU.
    pub to: usize,
    /// What the receiver does with it.
    pub op: Op,
}

/// A tree all-reduce: slices and rounds of transfers.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    gpus: usize,
    elements: usize,
    roots: Vec<usize>,
    slices: Vec<Range<usize>>,
    rounds: Vec<Vec<Transfer>>,
}

impl Schedule {
    /// All-reduce of `elements` elements with one slice per tree. Errors name `trees`:
    /// none given, or trees over different numbers of GPUs.
    pub fn new(trees: &[Tree], elements: usize) -> Result<Self> {
        let Some(first) = trees.first() else {
            return Err(Error::invalid("trees", "none given; a tree all-reduce needs at least one tree"));
        };
        let gpus = first.gpus();
        if let Some(t) = trees.iter().find(|t| t.gpus() != gpus) {
            return Err(Error::invalid(
                "trees",
                format!("a tree spans {} GPUs and another {gpus}; all trees must span the same GPUs", t.gpus()),
            ));
        }
        let k = trees.len();
        let (base, extra) = (elements / k, elements % k);
        let mut slices = Vec::with_capacity(k);
        let mut start = 0;
        for i in 0..k {
            let len = base + usize::from(i < extra);
            slices.push(start..start + len);
            start += len;
        }
        let h = first.height();
        let mut rounds = Vec::with_capacity(2 * h);
        for level in (1..=h).rev() {
            rounds.push(Self::round(trees, &slices, level, Op::Reduce));
        }
        for level in 1..=h {
            rounds.push(Self::round(trees, &slices, level, Op::Copy));
        }
        Ok(Schedule { gpus, elements, roots: trees.iter().map(Tree::root).collect(), slices, rounds })
    }

    /// Seed 003's choice: below `array_bound` elements, one tree (the first) carries the
    /// whole payload, which pays the tree's latency once; from `array_bound` on, every
    /// tree carries a slice, which spreads the bytes over more links. The seed's bound
    /// is [`DEFAULT_ARRAY_BOUND`]. To spread many small tensors over the roots, pass
    /// the trees rotated so that a different tree comes first.
    pub fn plan(trees: &[Tree], elements: usize, array_bound: usize) -> Result<Self> {
        if elements < array_bound && !trees.is_empty() {
            Self::new(&trees[..1], elements)
        } else {
            Self::new(trees, elements)
        }
    }

    fn round(trees: &[Tree], slices: &[Range<usize>], level: usize, op: Op) -> Vec<Transfer> {
        let mut out = Vec::new();
        for (slice, tree) in trees.iter().enumerate() {
            if slices[slice].is_empty() {
                continue;
            }
            for e in tree.level(level) {
                let (from, to) = if op == Op::Reduce { (e.child, e.parent) } else { (e.parent, e.child) };
                out.push(Transfer { slice, from, to, op });
            }
        }
        out
    }

    /// Number of GPUs.
    pub fn gpus(&self) -> usize {
        self.gpus
    }

    /// Payload size in elements.
    pub fn elements(&self) -> usize {
        self.elements
    }

    /// Element range of each slice.
    pub fn slices(&self) -> &[Range<usize>] {
        &self.slices
    }

    /// Root of the tree of each slice: where the slice's sum is complete after the reduce.
    pub fn roots(&self) -> &[usize] {
        &self.roots
    }

    /// The rounds in order: `height` reduce rounds, then `height` broadcast rounds.
    pub fn rounds(&self) -> &[Vec<Transfer>] {
        &self.rounds
    }

    /// What `gpu` takes part in, as `(round, transfer)` in round order: the runtime's view
    /// of one rank.
    pub fn transfers_of(&self, gpu: usize) -> Vec<(usize, Transfer)> {
        let mut out = Vec::new();
        for (r, round) in self.rounds.iter().enumerate() {
            out.extend(round.iter().filter(|t| t.from == gpu || t.to == gpu).map(|t| (r, *t)));
        }
        out
    }
}
