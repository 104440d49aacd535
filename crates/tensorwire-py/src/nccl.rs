//! `tensorwire._core.nccl_predict`: what NCCL runs for one collective on a fabric, and the
//! figures nccl-tests would print for it (time, algbw, busbw), from the core's `nccl`
//! model. Calibration (`tensorwire calibrate`) compares measured rows with it.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyString};

use tensorwire_core::nccl::{self, NcclFabric, NcclOptions, Transport};
use tensorwire_core::topology::TopologySpec;
use tensorwire_core::{limits, Error};

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

/// `value` (a Python int) as a count, refused as `InputError(field, ...)` when negative or
/// past u64 (pyo3 would raise OverflowError, which the callers' rule of one `InputError`
/// per bad input does not allow). Another type stays pyo3's TypeError.
fn count(field: &str, value: &Bound<'_, PyAny>) -> PyResult<usize> {
    if let Ok(n) = value.extract::<u64>() {
        return usize::try_from(n).map_err(|_| crate::error::to_py(Error::invalid(field, format!("{n} is too large"))));
    }
    if value.is_instance_of::<PyInt>() {
        let negative = value.lt(0)?;
        let what = if negative { "is negative" } else { "is past 2^64" };
        let shown: String = value.str()?.to_string_lossy().chars().take(40).collect();
        return Err(crate::error::to_py(Error::invalid(field, format!("{shown} {what}; need an integer >= 1"))));
    }
    value.extract::<usize>()
}

/// `value` (a Python str) as UTF-8 text, refused as `InputError(field, ...)` when it holds
/// a lone surrogate (which has no UTF-8 form; pyo3 would raise UnicodeEncodeError).
fn text(field: &str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = value.downcast::<PyString>() {
        return match s.to_cow() {
            Ok(t) => Ok(t.to_string()),
            Err(_) => Err(crate::error::to_py(Error::invalid(
                field,
                format!("{:?}: not valid Unicode (a lone surrogate)", s.to_string_lossy()),
            ))),
        };
    }
    value.extract::<String>()
}

/// `value` (a Python int or float) as f64, refused as `InputError(field, ...)` when an int
/// is past f64's range (pyo3 would raise OverflowError).
fn real(field: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    match value.extract::<f64>() {
        Ok(v) => Ok(v),
        Err(_) if value.is_instance_of::<PyInt>() => {
            Err(crate::error::to_py(Error::invalid(field, "an integer past the range of a float (1.8e308)")))
        }
        Err(e) => Err(e),
    }
}

/// What NCCL runs for `collective` over a buffer of `bytes` (nccl-tests' "size") on `gpus`
/// GPUs of `topology` (host links at `bandwidth` bytes/s, or the fabric's own; over
/// `transport`, `rdma` or `tcp`, or the fabric's `transport=`), restricted
/// by `algo`, `proto` and `channels` as NCCL_ALGO, NCCL_PROTO and NCCL_MIN_NCHANNELS
/// restrict it. Returns a dict: algo (`p2p` for all-to-all, which NCCL runs as sends and
/// receives), proto, channels, seconds (one collective), algbw
/// (bytes / seconds, bytes/s; 0 when the collective takes no time) and busbw (algbw x
/// nccl-tests' bus factor, bytes/s; NVIDIA/nccl-tests doc/PERFORMANCE.md). Bad values,
/// also ints out of range and strings with lone surrogates, raise `InputError(field, ...)`;
/// only arguments of another type raise TypeError.
#[pyfunction]
#[pyo3(signature = (topology, gpus, collective, bytes, *, bandwidth = None, transport = None, algo = None, proto = None, channels = None))]
#[allow(clippy::too_many_arguments)]
pub fn nccl_predict<'py>(
    py: Python<'py>,
    topology: &Bound<'py, PyAny>,
    gpus: &Bound<'py, PyAny>,
    collective: &Bound<'py, PyAny>,
    bytes: &Bound<'py, PyAny>,
    bandwidth: Option<&Bound<'py, PyAny>>,
    transport: Option<&Bound<'py, PyAny>>,
    algo: Option<&Bound<'py, PyAny>>,
    proto: Option<&Bound<'py, PyAny>>,
    channels: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let topology = text("topology", topology)?;
    let gpus = count("gpus", gpus)?;
    let collective = text("collective", collective)?;
    let bytes = real("bytes", bytes)?;
    let bandwidth = bandwidth.map(|b| real("bandwidth", b)).transpose()?;
    let transport = transport.map(|t| text("transport", t)).transpose()?;
    let algo = algo.map(|a| text("strategy.algo", a)).transpose()?;
    let proto = proto.map(|p| text("strategy.proto", p)).transpose()?;
    let channels = channels.map(|c| count("channels", c)).transpose()?;
    let (choice, factor) = guarded(|| {
        if gpus == 0 {
            return Err(Error::invalid("gpus", "0 GPUs; need at least 1"));
        }
        // The engine's own bounds (crate limits): a run holds at most MAX_BYTES and
        // MAX_WORKERS; past them NCCL's times leave f64's range (inf, NaN algbw).
        limits::at_most("gpus", gpus as u64, limits::MAX_WORKERS as u64, "GPUs")?;
        if !(bytes.is_finite() && bytes >= 0.0) {
            return Err(Error::invalid("bytes", format!("{bytes} is not a size; need a finite number >= 0")));
        }
        if bytes > limits::MAX_BYTES as f64 {
            return Err(Error::invalid(
                "bytes",
                format!("{bytes} bytes; allowed: at most {} (2^53, 8 PiB, as a run holds)", limits::MAX_BYTES),
            ));
        }
        if let Some(rate) = bandwidth {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(Error::invalid("bandwidth", format!("{rate} is not a rate; need a number > 0 (bytes/s)")));
            }
        }
        if channels == Some(0) {
            return Err(Error::invalid("channels", "0 channels; need at least 1"));
        }
        let collective = conversion::collective("collective", &collective)?;
        let spec = TopologySpec::parse(&topology)?;
        let host = spec.host_rate(bandwidth)?;
        let transport = spec.nccl_transport(transport.as_deref().map(self::transport).transpose()?);
        let fabric = NcclFabric::from_topology(&spec, gpus, host, transport)?;
        let options = NcclOptions {
            algos: algo.as_deref().map(NcclOptions::parse_algos).transpose()?,
            protos: proto.as_deref().map(NcclOptions::parse_protos).transpose()?,
            channels,
            pxn: false,
        };
        let choice = nccl::choose(&fabric, collective, bytes, &options)?;
        // Tiny efficiencies or rates can still make the time unbounded: refused as the
        // engine refuses a run past its horizon, never returned as inf.
        if !(choice.seconds.is_finite() && choice.seconds < limits::HORIZON_S) {
            return Err(Error::invalid(
                "horizon",
                format!(
                    "{} of {bytes} bytes takes {} s on this fabric, past the horizon of {:.0} s (2^53 ns, 104 days); use sizes, rates and efficiencies that keep it far below",
                    collective.name(),
                    choice.seconds,
                    limits::HORIZON_S
                ),
            ));
        }
        Ok((choice, nccl::bus_factor(collective, gpus)))
    })?;
    let algbw = if choice.seconds > 0.0 { choice.algbw(bytes) } else { 0.0 };
    let out = PyDict::new(py);
    out.set_item("algo", choice.algo_name())?;
    out.set_item("proto", choice.proto.name())?;
    out.set_item("channels", choice.channels)?;
    out.set_item("peer_channels", choice.peer_channels)?;
    out.set_item("seconds", choice.seconds)?;
    out.set_item("algbw", algbw)?;
    out.set_item("busbw", algbw * factor)?;
    Ok(out)
}
