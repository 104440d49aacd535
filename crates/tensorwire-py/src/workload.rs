//! A workload as it crosses the boundary, the same way into `simulate`, `simulate_jobs` and
//! out of `collective`, with its element size and collective, so no path can leave one at
//! a default.

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

/// `allreduce:SIZE[xCOUNT]` as a workload tuple.
#[pyfunction]
pub fn collective(spec: &str) -> PyResult<WorkloadTuple> {
    guarded(|| collective_benchmark(spec).map(workload_to))
}
