//! `tensorwire._core.nccl_predict`: what NCCL runs for one collective on a fabric, and the
//! figures nccl-tests would print for it (time, algbw, busbw), from the core's `nccl`
//! model. Calibration (`tensorwire calibrate`) compares measured rows with it.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use tensorwire_core::nccl::{self, NcclFabric, NcclOptions, Transport};
use tensorwire_core::topology::TopologySpec;
use tensorwire_core::Error;

use crate::conversion;
use crate::error::guarded;

/// NCCL's network transport by name (`rdma`, `tcp`).
fn transport(text: &str) -> Result<Transport, Error> {
    match text {
        "rdma" => Ok(Transport::Rdma),
        "tcp" => Ok(Transport::Tcp),
        _ => Err(Error::invalid("transport", format!("{text:?} is not a transport; choose rdma or tcp"))),
    }
}

/// What NCCL runs for `collective` over a buffer of `bytes` (nccl-tests' "size") on `gpus`
/// GPUs of `topology` (host links at `bandwidth` bytes/s, or the fabric's own), restricted
/// by `algo`, `proto` and `channels` as NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS
/// restrict it. Returns a dict: algo, proto, channels, seconds (one collective), algbw
/// (bytes / seconds, bytes/s; 0 when the collective takes no time) and busbw (algbw x
/// nccl-tests' bus factor, bytes/s; NVIDIA/nccl-tests doc/PERFORMANCE.md).
#[pyfunction]
#[pyo3(signature = (topology, gpus, collective, bytes, *, bandwidth = None, transport = "rdma", algo = None, proto = None, channels = None))]
#[allow(clippy::too_many_arguments)]
pub fn nccl_predict<'py>(
    py: Python<'py>,
    topology: &str,
    gpus: usize,
    collective: &str,
    bytes: f64,
    bandwidth: Option<f64>,
    transport: &str,
    algo: Option<&str>,
    proto: Option<&str>,
    channels: Option<usize>,
) -> PyResult<Bound<'py, PyDict>> {
    let (choice, factor) = guarded(|| {
        if gpus == 0 {
            return Err(Error::invalid("gpus", "0 GPUs; need at least 1"));
        }
        if !(bytes.is_finite() && bytes >= 0.0) {
            return Err(Error::invalid("bytes", format!("{bytes} is not a size; need a finite number >= 0")));
        }
        if let Some(rate) = bandwidth {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(Error::invalid("bandwidth", format!("{rate} is not a rate; need a number > 0 (bytes/s)")));
            }
        }
        if channels == Some(0) {
            return Err(Error::invalid("channels", "0 channels; need at least 1"));
        }
        let collective = conversion::collective("collective", collective)?;
        let spec = TopologySpec::parse(topology)?;
        let host = spec.host_rate(bandwidth)?;
        let fabric = NcclFabric::from_topology(&spec, gpus, host, self::transport(transport)?)?;
        let options = NcclOptions {
            algos: algo.map(NcclOptions::parse_algos).transpose()?,
            protos: proto.map(NcclOptions::parse_protos).transpose()?,
            channels,
            pxn: false,
        };
        let choice = nccl::choose(&fabric, collective, bytes, &options)?;
        Ok((choice, nccl::bus_factor(collective, gpus)))
    })?;
    let algbw = if choice.seconds > 0.0 { choice.algbw(bytes) } else { 0.0 };
    let out = PyDict::new(py);
    out.set_item("algo", choice.algo.name())?;
    out.set_item("proto", choice.proto.name())?;
    out.set_item("channels", choice.channels)?;
    out.set_item("seconds", choice.seconds)?;
    out.set_item("algbw", algbw)?;
    out.set_item("busbw", algbw * factor)?;
    Ok(out)
}
