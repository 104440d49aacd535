//! A workload as it crosses the boundary: `tensorwire._core.Workload`, the core's
//! [`Workload`] converted and validated once (when `tensorwire.Workload.core` is first
//! read) and then taken as is by `simulate` and `simulate_jobs`; out of `collective` as a
//! [`WorkloadTuple`] that Python builds its `Workload` from. Both carry the element size and
//! the collective, so no path can leave one at a default.

use pyo3::prelude::*;

use tensorwire_core::units::{self, seconds_to_nanos};
use tensorwire_core::workload::{collective_benchmark, Layer, Tensor, Workload};
use tensorwire_core::Error;

use crate::conversion;
use crate::error::guarded;

/// (name, batch_size, [(layer name, forward s, backward s)], [(tensor name, bytes, layer)],
/// element size in bytes, collective name).
pub type WorkloadTuple = (String, u32, Vec<(String, f64, f64)>, Vec<(String, u64, usize)>, u32, String);

/// The one conversion of a [`WorkloadTuple`] into a validated [`Workload`].
pub fn workload_from(w: WorkloadTuple) -> Result<Workload, Error> {
    let (name, batch_size, layers, tensors, dtype_bytes, collective) = w;
    let layers = layers
        .into_iter()
        .enumerate()
        .map(|(i, (name, f, b))| {
            Ok(Layer {
                name,
                forward: seconds_to_nanos(&format!("workload.layers[{i}].forward_s"), f)?,
                backward: seconds_to_nanos(&format!("workload.layers[{i}].backward_s"), b)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let tensors = tensors.into_iter().map(|(name, bytes, layer)| Tensor { name, bytes, layer }).collect();
    let collective = conversion::collective("workload.collective", &collective)?;
    let w = Workload { name, batch_size, layers, tensors, dtype_bytes, collective };
    w.validate()?;
    Ok(w)
}

/// The inverse of [`workload_from`].
pub fn workload_to(w: Workload) -> WorkloadTuple {
    (
        w.name,
        w.batch_size,
        w.layers
            .into_iter()
            .map(|l| (l.name, units::nanos_to_seconds(l.forward), units::nanos_to_seconds(l.backward)))
            .collect(),
        w.tensors.into_iter().map(|t| (t.name, t.bytes, t.layer)).collect(),
        w.dtype_bytes,
        w.collective.name().to_string(),
    )
}

/// A validated workload as the core runs it (`tensorwire.Workload.core`), built from the
/// same values as a [`WorkloadTuple`] and refused with the same `InputError`s
/// (`workload.layers[i].backward_s`, `workload.collective`, ...).
#[pyclass(name = "Workload", module = "tensorwire._core", frozen)]
pub struct PyWorkload {
    pub inner: Workload,
}

#[pymethods]
impl PyWorkload {
    /// `layers`: `[(name, forward s, backward s)]` in forward order; `tensors`:
    /// `[(name, bytes, layer index)]` in `parameters()` order.
    #[new]
    fn new(
        name: String,
        batch_size: u32,
        layers: Vec<(String, f64, f64)>,
        tensors: Vec<(String, u64, usize)>,
        dtype_bytes: u32,
        collective: String,
    ) -> PyResult<Self> {
        guarded(|| workload_from((name, batch_size, layers, tensors, dtype_bytes, collective)))
            .map(|inner| PyWorkload { inner })
    }

    /// Short name (`resnet50`).
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Samples per worker per iteration.
    #[getter]
    fn batch_size(&self) -> u32 {
        self.inner.batch_size
    }

    /// Bytes per element of the tensor sizes (1, 2, 4 or 8).
    #[getter]
    fn dtype_bytes(&self) -> u32 {
        self.inner.dtype_bytes
    }

    /// The collective all-reduce-family strategies run on every tensor (`allreduce`, ...).
    #[getter]
    fn collective(&self) -> &'static str {
        self.inner.collective.name()
    }

    /// Gradient bytes per iteration.
    #[getter]
    fn total_bytes(&self) -> u64 {
        self.inner.total_bytes()
    }

    /// Forward plus backward compute per iteration on one worker, seconds (from integer ns).
    #[getter]
    fn compute_time_s(&self) -> f64 {
        units::nanos_to_seconds(self.inner.compute_time())
    }

    /// `[(name, forward s, backward s)]` in forward order (seconds from integer ns).
    #[getter]
    fn layers(&self) -> Vec<(String, f64, f64)> {
        let s = units::nanos_to_seconds;
        self.inner.layers.iter().map(|l| (l.name.clone(), s(l.forward), s(l.backward))).collect()
    }

    /// `[(name, bytes, layer index)]` in `parameters()` order.
    #[getter]
    fn tensors(&self) -> Vec<(String, u64, usize)> {
        self.inner.tensors.iter().map(|t| (t.name.clone(), t.bytes, t.layer)).collect()
    }

    fn __repr__(&self) -> String {
        let w = &self.inner;
        format!(
            "Workload({:?}, batch_size={}, layers={}, tensors={}, dtype_bytes={}, collective={:?})",
            w.name,
            w.batch_size,
            w.layers.len(),
            w.tensors.len(),
            w.dtype_bytes,
            w.collective.name()
        )
    }
}

/// `allreduce:SIZE[xCOUNT]` as a workload tuple.
#[pyfunction]
pub fn collective(spec: &str) -> PyResult<WorkloadTuple> {
    guarded(|| collective_benchmark(spec).map(workload_to))
}
