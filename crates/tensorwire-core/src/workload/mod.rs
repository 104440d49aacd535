//! Workload: a model as the network sees it. Layers in forward order with their
//! compute times on one device; gradient tensors in `module.parameters()` order, each
//! owned by a layer. Gradients are produced in the exact reverse of that order during
//! the backward pass (as PyTorch DDP assumes), as soon as their layer's backward is done.

mod microbenchmark;

pub use microbenchmark::collective_benchmark;

use crate::error::{Error, Result};
use crate::units::Nanos;

/// One layer (module) of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Module name, e.g. `layer1.0.conv1`.
    pub name: String,
    /// Forward compute time for one iteration at the workload's batch size, ns.
    pub forward: Nanos,
    /// Backward compute time, ns.
    pub backward: Nanos,
}

/// One gradient tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Parameter name, e.g. `layer1.0.conv1.weight`.
    pub name: String,
    /// Size of the gradient in bytes.
    pub bytes: u64,
    /// Index of the owning layer.
    pub layer: usize,
}

/// A model as the network sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Short name (`resnet50`).
    pub name: String,
    /// Samples per worker per iteration.
    pub batch_size: u32,
    /// Layers in forward order.
    pub layers: Vec<Layer>,
    /// Tensors in `module.parameters()` order; their layers must be non-decreasing.
    pub tensors: Vec<Tensor>,
    /// Bytes per element of the listed tensor sizes (4: fp32, 2: bf16/fp16); strategies'
    /// `param_dtype`/`reduce_dtype` rescale from it.
    pub dtype_bytes: u32,
    /// What all-reduce-family strategies run on every tensor (microbenchmarks of other
    /// collectives; gradient synchronisation is an all-reduce).
    pub collective: crate::collectives::Collective,
}

impl Workload {
    /// One tensor per layer with these sizes (bytes), each layer computing `forward_ns`
    /// forward and `backward_ns` backward, batch 32, fp32; the tests' workload.
    #[cfg(test)]
    pub(crate) fn one_tensor_per_layer(sizes: &[u64], forward_ns: u64, backward_ns: u64) -> Workload {
        Workload {
            name: "test".into(),
            batch_size: 32,
            layers: (0..sizes.len())
                .map(|i| Layer { name: format!("l{i}"), forward: forward_ns, backward: backward_ns })
                .collect(),
            tensors: sizes
                .iter()
                .enumerate()
                .map(|(i, &b)| Tensor { name: format!("t{i}"), bytes: b, layer: i })
                .collect(),
            dtype_bytes: 4,
            collective: crate::collectives::Collective::AllReduce,
        }
    }

    /// Checks the invariants: at least one layer, a batch >= 1, tensors referencing
    /// existing layers in non-decreasing order.
    pub fn validate(&self) -> Result<()> {
        if self.layers.is_empty() {
            return Err(Error::invalid("workload.layers", "a workload needs at least one layer"));
        }
        if self.batch_size == 0 {
            return Err(Error::invalid("workload.batch_size", "must be >= 1"));
        }
        if ![1, 2, 4, 8].contains(&self.dtype_bytes) {
            return Err(Error::invalid(
                "workload.dtype_bytes",
                format!("{} is not an element size; choose 1, 2, 4 or 8 bytes", self.dtype_bytes),
            ));
        }
        let mut last = 0;
        for (i, t) in self.tensors.iter().enumerate() {
            if t.layer >= self.layers.len() {
                return Err(Error::invalid(
                    format!("workload.tensors[{i}].layer"),
                    format!("{} is not a layer index (0..{})", t.layer, self.layers.len()),
                ));
            }
            if t.layer < last {
                return Err(Error::invalid(
                    format!("workload.tensors[{i}]"),
                    "tensors must be listed in forward (parameters()) order of their layers",
                ));
            }
            last = t.layer;
        }
        Ok(())
    }

    /// Forward plus backward compute time of one iteration on one worker, ns.
    pub fn compute_time(&self) -> Nanos {
        self.layers.iter().map(|l| l.forward + l.backward).sum()
    }

    /// Total gradient bytes per iteration.
    pub fn total_bytes(&self) -> u64 {
        self.tensors.iter().map(|t| t.bytes).sum()
    }

    /// The same workload with every compute time divided by `speedup` (seed 000 section 8.6).
    pub fn with_compute_speedup(&self, speedup: f64) -> Result<Workload> {
        if !(speedup.is_finite() && speedup > 0.0) {
            return Err(Error::invalid("compute_speedup", format!("{speedup} must be a number > 0")));
        }
        let mut w = self.clone();
        for l in &mut w.layers {
            l.forward = (l.forward as f64 / speedup).round() as Nanos;
            l.backward = (l.backward as f64 / speedup).round() as Nanos;
        }
        Ok(w)
    }
}
