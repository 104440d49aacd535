//! The working weights of tree generation: the topology's link weights, multiplied by
//! the link-usage penalty once per earlier tree that used the link (seed 003). Whether
//! a link exists is kept apart from its weight, so that a penalised link never
//! counts as missing.

use super::{GpuTopology, Tree};

/// Two tree scores closer than this are equal; weights are at most a few hundred, so
/// this is far above rounding error and far below any real difference.
pub(super) const EPS: f64 = 1e-9;

/// Penalised link weights.
#[derive(Debug, Clone)]
pub(super) struct Weights {
    n: usize,
    linked: Vec<bool>,
    w: Vec<f64>,
}

impl Weights {
    /// The topology's weights, no penalty yet.
    pub(super) fn new(topology: &GpuTopology) -> Self {
        let n = topology.gpus();
        let mut linked = vec![false; n * n];
        let mut w = vec![0.0; n * n];
        for a in 0..n {
            for b in 0..n {
                let x = topology.weight(a, b);
                linked[a * n + b] = x > 0;
                w[a * n + b] = f64::from(x);
            }
        }
        Weights { n, linked, w }
    }

    /// Number of GPUs.
    pub(super) fn gpus(&self) -> usize {
        self.n
    }

    /// Whether GPUs `a` and `b` have a direct link.
    pub(super) fn linked(&self, a: usize, b: usize) -> bool {
        self.linked[a * self.n + b]
    }

    /// Current (penalised) weight of the link between `a` and `b`; 0 without a link.
    pub(super) fn w(&self, a: usize, b: usize) -> f64 {
        self.w[a * self.n + b]
    }

    /// Sum of the current weights of the tree's links.
    pub(super) fn score(&self, tree: &Tree) -> f64 {
        tree.edges().iter().map(|e| self.w(e.parent, e.child)).sum()
    }

    /// Multiplies the weight of every link of `tree` by `penalty`.
    pub(super) fn penalise(&mut self, tree: &Tree, penalty: f64) {
        for (a, b) in tree.links() {
            self.w[a * self.n + b] *= penalty;
            self.w[b * self.n + a] *= penalty;
        }
    }
}
