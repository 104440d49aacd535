//! GPU trees (seed 003): a machine's GPU topology, the trees for tree all-reduce over it,
//! and the tree all-reduce plan.

use pyo3::prelude::*;

use tensorwire_core::gputopo::{self, GpuTopology};
use tensorwire_core::Error;

use crate::conversion;
use crate::error::guarded;

fn gpu_topology_from(preset: Option<&str>, adjacency: Option<Vec<Vec<i64>>>) -> Result<GpuTopology, Error> {
    match (preset, adjacency) {
        (Some(p), None) => GpuTopology::preset(p),
        (None, Some(a)) => GpuTopology::from_adjacency(&a),
        _ => Err(Error::invalid("topology", "give exactly one of a preset name or an adjacency matrix")),
    }
}

/// A GPU topology: (gpus, links as (i, j, weight)); weights 3 double NVLink, 2 NVLink, 1 PCIe.
#[pyfunction]
#[pyo3(signature = (preset = None, adjacency = None))]
#[allow(clippy::type_complexity)]
pub fn gpu_topology(
    preset: Option<&str>,
    adjacency: Option<Vec<Vec<i64>>>,
) -> PyResult<(usize, Vec<(usize, usize, u32)>)> {
    guarded(|| gpu_topology_from(preset, adjacency).map(|t| (t.gpus(), t.links())))
}

/// Trees for tree all-reduce (seed 003): each (root, [(parent, child, level)], method, weight).
#[pyfunction]
#[pyo3(signature = (preset = None, adjacency = None, count = 1, penalty = 0.7))]
#[allow(clippy::type_complexity)]
pub fn gpu_trees(
    preset: Option<&str>,
    adjacency: Option<Vec<Vec<i64>>>,
    count: usize,
    penalty: f64,
) -> PyResult<Vec<(usize, Vec<(usize, usize, usize)>, String, u64)>> {
    guarded(|| {
        let topology = gpu_topology_from(preset, adjacency)?;
        Ok(gputopo::generate_trees(&topology, count, penalty)?
            .into_iter()
            .map(|g| {
                let edges = g.tree.edges().iter().map(|e| (e.parent, e.child, e.level)).collect();
                let method = conversion::tree_method(g.method);
                (g.tree.root(), edges, method.to_string(), g.tree.weight(&topology))
            })
            .collect())
    })
}

/// Tree all-reduce plan for `elements` elements: one tree below `array_bound` elements,
/// all trees (one slice each) above it. Returns (slices as (start, end), rounds of
/// (slice, from, to, reduce)).
#[pyfunction]
#[pyo3(signature = (elements, preset = None, adjacency = None, count = 0, penalty = 0.7, array_bound = 10_000_000))]
#[allow(clippy::type_complexity)]
pub fn tree_allreduce_plan(
    elements: usize,
    preset: Option<&str>,
    adjacency: Option<Vec<Vec<i64>>>,
    count: usize,
    penalty: f64,
    array_bound: usize,
) -> PyResult<(Vec<(usize, usize)>, Vec<Vec<(usize, usize, usize, bool)>>)> {
    guarded(|| {
        let topology = gpu_topology_from(preset, adjacency)?;
        let count = if count == 0 { topology.gpus() } else { count };
        let trees: Vec<gputopo::Tree> =
            gputopo::generate_trees(&topology, count, penalty)?.into_iter().map(|g| g.tree).collect();
        let plan = gputopo::Schedule::plan(&trees, elements, array_bound)?;
        Ok((
            plan.slices().iter().map(|r| (r.start, r.end)).collect(),
            plan.rounds()
                .iter()
                .map(|round| {
                    round.iter().map(|t| (t.slice, t.from, t.to, matches!(t.op, gputopo::Op::Reduce))).collect()
                })
                .collect(),
        ))
    })
}
