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
    /// A test model with the LLM workloads' layout (one layer per block): a stem of 1,000
    /// bytes, four blocks of two 300-byte parameters, a norm of 8 and a head of 1,000
    /// (Psi = 4,408 bytes; the root, stem + norm + head, 2,008; a block 600); 10 ns forward
    /// and 20 ns backward per layer.
    #[cfg(test)]
    pub(crate) fn stem_blocks_head() -> Workload {
        let mut w = Workload::one_tensor_per_layer(&[0; 7], 10, 20);
        let sizes: [(usize, u64); 11] = [
            (0, 1000),
            (1, 300),
            (1, 300),
            (2, 300),
            (2, 300),
            (3, 300),
            (3, 300),
            (4, 300),
            (4, 300),
            (5, 8),
            (6, 1000),
        ];
        w.tensors = sizes
            .iter()
            .enumerate()
            .map(|(i, &(layer, bytes))| Tensor { name: format!("t{i}"), bytes, layer })
            .collect();
        w
    }

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
        use crate::limits::{HORIZON_NS, HORIZON_S, MAX_BYTES, MAX_LAYERS};
        crate::limits::at_most("workload.layers", self.layers.len() as u64, MAX_LAYERS as u64, "layers")?;
        crate::limits::at_most("workload.tensors", self.tensors.len() as u64, MAX_LAYERS as u64, "tensors")?;
        // Compute times, one by one and per iteration, below the horizon (limits.rs).
        let mut compute: Nanos = 0;
        for (i, l) in self.layers.iter().enumerate() {
            for (what, t) in [("forward_s", l.forward), ("backward_s", l.backward)] {
                compute = compute.saturating_add(t);
                if compute >= HORIZON_NS {
                    return Err(Error::invalid(
                        format!("workload.layers[{i}].{what}"),
                        format!(
                            "{} s makes an iteration's compute pass the simulation horizon of {HORIZON_S:.0} s (2^53 ns, 104 days)",
                            crate::units::format_number(crate::units::nanos_to_seconds(t))
                        ),
                    ));
                }
            }
        }
        // Sizes, one by one and summed, at most MAX_BYTES (limits.rs).
        let mut total: u64 = 0;
        for (i, t) in self.tensors.iter().enumerate() {
            total = total.saturating_add(t.bytes);
            if total > MAX_BYTES {
                let what = if t.bytes > MAX_BYTES { "is more than" } else { "brings the workload's total past" };
                return Err(Error::invalid(
                    format!("workload.tensors[{i}].bytes"),
                    format!("{} bytes {what} the {MAX_BYTES} bytes (8 PiB) a run can hold", t.bytes),
                ));
            }
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
        let past = || {
            Error::invalid(
                "compute_speedup",
                format!(
                    "{} makes compute pass the simulation horizon of {:.0} s (2^53 ns, 104 days); use a speedup that keeps an iteration far below it",
                    crate::units::format_number(speedup),
                    crate::limits::HORIZON_S
                ),
            )
        };
        for l in &mut w.layers {
            l.forward = crate::limits::nanos_within((l.forward as f64 / speedup).round()).ok_or_else(past)?;
            l.backward = crate::limits::nanos_within((l.backward as f64 / speedup).round()).ok_or_else(past)?;
        }
        w.validate().map_err(|e| if e.field().starts_with("workload.layers") { past() } else { e })?;
        Ok(w)
    }
}
