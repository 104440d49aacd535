//! Seed 003's topology-aware tree all-reduce as a step schedule: the core's GPU trees
//! (`gputopo`) executed round by round. Below `array_bound` elements one tree carries
//! the whole payload; above it every tree carries one slice (multi-tree). The bound
//! counts the array's elements, as MXNet's `MXNET_KVSTORE_TREE_ARRAY_BOUND` does, not its
//! bytes on the wire: compression or a narrower `reduce_dtype` sends fewer bytes of the
//! same array and keeps its plan.

use super::{Recv, Send, Step, StepSchedule};
use crate::error::Result;
use crate::gputopo::{self, GpuTopology, Op, Schedule};
use smallvec::smallvec;

/// See the module documentation.
#[derive(Debug)]
pub struct GpuTrees {
    single: Schedule,
    multi: Schedule,
    /// Payloads of at least this many elements use every tree.
    array_bound: usize,
}

impl GpuTrees {
    /// Trees for `topology`: `count` trees (0: one per GPU) with the link-usage `penalty`;
    /// `always_multi` uses every tree whatever the size (the `multitree` strategy).
    pub fn new(topology: &GpuTopology, count: usize, penalty: f64, always_multi: bool) -> Result<Self> {
        let count = if count == 0 { topology.gpus() } else { count };
        let trees: Vec<gputopo::Tree> =
            gputopo::generate_trees(topology, count, penalty)?.into_iter().map(|g| g.tree).collect();
        Ok(GpuTrees {
            single: Schedule::new(&trees[..1], 1)?,
            multi: Schedule::new(&trees, trees.len())?,
            array_bound: if always_multi { 0 } else { gputopo::DEFAULT_ARRAY_BOUND },
        })
    }

    fn plan(&self, pipeline: usize) -> &Schedule {
        if pipeline >= 2 {
            &self.multi
        } else {
            &self.single
        }
    }
}

impl StepSchedule for GpuTrees {
    fn steps(&self, _n: usize, pipeline: usize) -> usize {
        self.plan(pipeline).rounds().len()
    }

    fn chunk_count(&self, _n: usize, pipeline: usize) -> usize {
        self.plan(pipeline).slices().len()
    }

    fn step(&self, rank: usize, _n: usize, pipeline: usize, step: usize) -> Step {
        let mut st = Step::default();
        for t in &self.plan(pipeline).rounds()[step] {
            if t.from == rank {
                st.sends.push(Send { to: smallvec![t.to], chunks: t.slice..t.slice + 1 });
            }
            if t.to == rank {
                st.recvs.push(Recv { from: t.from, chunks: t.slice..t.slice + 1, reduce: matches!(t.op, Op::Reduce) });
            }
        }
        st
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        n == 1
    }

    /// 1: one tree; 2: every tree (the "pipeline" argument selects the plan), by the
    /// array's element count (seed 003's bound counts elements, whatever the wire bytes).
    fn pieces_for(&self, _wire_bytes: f64, elements: f64, _piece_bytes: f64, _max: usize) -> usize {
        if elements >= self.array_bound as f64 {
            2
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn gpu_tree_schedules_compute_the_sum() {
        for preset in ["p3.16xlarge", "dgx-a100", "pcie-8"] {
            let t = GpuTopology::preset(preset).unwrap();
            let trees = GpuTrees::new(&t, 0, 0.7, false).unwrap();
            check::all_reduce(&trees, 8, 1);
            check::all_reduce(&trees, 8, 2);
        }
    }
}
