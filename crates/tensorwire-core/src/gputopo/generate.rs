//! Tree generation: Kernighan-Lin first, exhaustive search where it fails, and several
//! trees with the multiplicative link-usage penalty (seed 003).
//!
//! When the heuristic "fails" is the one place this module is stricter than the seed.
//! The seed falls back when Kernighan-Lin gets stuck (a cluster's root has no link into
//! the other half). Kernighan-Lin minimises the cut between the halves, which is only a
//! proxy for the tree's weight, so it can also return a lighter tree than the best one.
//! For up to [`MAX_EXHAUSTIVE_GPUS`] GPUs the exact search costs at most milliseconds,
//! so there it checks the heuristic's tree and replaces it when it is lighter; above
//! that, the heuristic's tree is kept unchecked. [`Method`] says which search produced
//! each tree.

use crate::error::{Error, Result};

use super::exhaustive::{check_root, no_tree, search, MAX_EXHAUSTIVE_GPUS};
use super::kl::kl_tree;
use super::weights::{Weights, EPS};
use super::{GpuTopology, Tree};

/// Default link-usage penalty (seed 003, `MXNET_KVSTORE_TREE_LINK_USAGE_PENALTY`).
pub const DEFAULT_PENALTY: f64 = 0.7;

/// Which search produced a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// Recursive Kernighan-Lin bisection (as heavy as the best tree, where checked).
    KernighanLin,
    /// Exhaustive search: Kernighan-Lin was stuck or found a lighter tree.
    Exhaustive,
}

/// A generated tree and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The tree.
    pub tree: Tree,
    /// The search that produced it.
    pub method: Method,
    /// Its weight under the penalised link weights it was chosen with (for the first
    /// tree, the plain link weight).
    pub score: f64,
}

/// The tree of maximum link weight rooted at `root` (no penalty).
pub fn generate_tree(topology: &GpuTopology, root: usize) -> Result<Generated> {
    check_root(topology, root)?;
    one_tree(&Weights::new(topology), root)
}

/// `count` trees, tree `i` rooted at GPU `i mod n`, each chosen after the links of the
/// earlier ones were multiplied by `penalty` (0 < penalty <= 1; 1 means no penalty).
/// `count = n` gives seed 003's one tree per GPU.
pub fn generate_trees(topology: &GpuTopology, count: usize, penalty: f64) -> Result<Vec<Generated>> {
    if count == 0 {
        return Err(Error::invalid("trees", "0 trees; ask for 1 or more (one per GPU is usual)"));
    }
    crate::limits::at_most("trees", count as u64, crate::limits::MAX_TREES as u64, "trees")?;
    let most = trees_within_budget(topology.gpus());
    if count > most {
        return Err(Error::invalid(
            "trees",
            format!(
                "{count} trees of {} GPUs are past what builds in seconds (each tree's bisection costs ~n^3: 4,096 of 128 GPUs took 31 s); at most {most} here",
                topology.gpus()
            ),
        ));
    }
    if !(penalty > 0.0 && penalty <= 1.0) {
        return Err(Error::invalid(
            "penalty",
            format!("{penalty} is not in (0, 1]; it multiplies the weight of a link once per tree using it"),
        ));
    }
    let mut w = Weights::new(topology);
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let g = one_tree(&w, i % topology.gpus())?;
        w.penalise(&g.tree, penalty);
        out.push(g);
    }
    Ok(out)
}

/// Work units (trees x GPUs^3) [`generate_trees`] takes: about 1.3 s on the reference
/// machine (one tree of a 128-GPU full mesh is ~10 ms, ~5 ns a unit).
const TREE_WORK_BUDGET: u64 = 1 << 28;

/// The most trees [`generate_trees`] builds on `gpus` GPUs: one per GPU (seed 003's default)
/// always, more while `trees x gpus^3` stays within [`TREE_WORK_BUDGET`], at most
/// [`crate::limits::MAX_TREES`].
pub fn trees_within_budget(gpus: usize) -> usize {
    let cube = (gpus.max(1) as u64).saturating_pow(3);
    let by_work = usize::try_from(TREE_WORK_BUDGET / cube).unwrap_or(usize::MAX);
    by_work.max(gpus).min(crate::limits::MAX_TREES)
}

/// The tree of recursive Kernighan-Lin bisection alone, unchecked, with no penalty;
/// `None` where it gets stuck. For measuring the heuristic against [`super::best_tree`].
pub fn kernighan_lin_tree(topology: &GpuTopology, root: usize) -> Result<Option<Tree>> {
    check_root(topology, root)?;
    Ok(kl_tree(&Weights::new(topology), root))
}

fn one_tree(w: &Weights, root: usize) -> Result<Generated> {
    let n = w.gpus();
    let heuristic = kl_tree(w, root).map(|t| (w.score(&t), t));
    if n > MAX_EXHAUSTIVE_GPUS {
        let Some((score, tree)) = heuristic else {
            return Err(Error::invalid(
                "adjacency",
                format!(
                    "the Kernighan-Lin heuristic found no balanced tree rooted at GPU {root} and exhaustive search \
                     is limited to {MAX_EXHAUSTIVE_GPUS} GPUs; link the GPUs without NVLink by PCIe (weight 1)"
                ),
            ));
        };
        return Ok(Generated { tree, method: Method::KernighanLin, score });
    }
    let Some((best, exact)) = search(w, root) else {
        return Err(no_tree(n, root));
    };
    Ok(match heuristic {
        Some((score, tree)) if score + EPS >= best => Generated { tree, method: Method::KernighanLin, score },
        _ => Generated { tree: exact, method: Method::Exhaustive, score: best },
    })
}
