//! `tensorwire._core.Topology`: a fabric spec parsed once by the core, which
//! `tensorwire.Cluster` holds and every run takes (no second parse per call).

use pyo3::prelude::*;

use tensorwire_core::topology::TopologySpec;

use crate::error::guarded;

/// A validated topology spec (`NAME[:key=value,...]`, e.g. `leaf-spine:hosts_per_leaf=8`).
#[pyclass(name = "Topology", module = "tensorwire._core", frozen)]
pub struct PyTopology {
    pub inner: TopologySpec,
    spec: String,
}

#[pymethods]
impl PyTopology {
    #[new]
    fn new(spec: &str) -> PyResult<Self> {
        guarded(|| Ok(PyTopology { inner: TopologySpec::parse(spec)?, spec: spec.to_string() }))
    }

    /// The spec as given.
    #[getter]
    fn spec(&self) -> &str {
        &self.spec
    }

    /// The builder's name (`star`, `leaf-spine`, `rail`, ...).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// The node preset of a `rail` fabric (`dgx-h100` unless `node=` names another), else
    /// None: the machine whose GPUs the fabric's ranks are.
    #[getter]
    fn node(&self) -> Option<&'static str> {
        self.inner.node_preset().map(|n| n.name)
    }

    /// Whether the fabric's hosts are GPU machines (`rail` nodes, `nodes` machines), where
    /// NCCL runs the collectives (`TopologySpec::gpu_machines`).
    #[getter]
    fn gpu_machines(&self) -> bool {
        self.inner.gpu_machines()
    }

    /// Under NCCL's model, the rate of a GPU's PCIe path to its NIC, bytes/s, where a NIC of
    /// `nic_bytes_per_s` would carry more than it (a faster NIC then changes nothing); else
    /// None (`NcclFabric::nic_past_its_path`).
    fn nic_past_its_path(&self, nic_bytes_per_s: f64) -> Option<f64> {
        tensorwire_core::nccl::NcclFabric::nic_past_its_path(&self.inner, nic_bytes_per_s)
    }

    /// The host link rate, bytes/s, to simulate with, from the one given (`--bandwidth`),
    /// if any: see `TopologySpec::host_rate` (on `rail` the given rate is each GPU's NIC
    /// rate, and without one the node preset's or `nic=`).
    #[pyo3(signature = (bandwidth = None))]
    fn host_rate(&self, bandwidth: Option<f64>) -> PyResult<f64> {
        guarded(|| self.inner.host_rate(bandwidth))
    }

    fn __repr__(&self) -> String {
        format!("Topology({:?})", self.spec)
    }
}

/// Validates a topology spec; returns its builder name.
#[pyfunction]
pub fn check_topology(spec: &str) -> PyResult<String> {
    guarded(|| TopologySpec::parse(spec).map(|t| t.name().to_string()))
}

/// The host link rate, bytes/s, to simulate `topology` with (see `Topology.host_rate`).
#[pyfunction]
#[pyo3(signature = (topology, bandwidth = None))]
pub fn host_rate(topology: &str, bandwidth: Option<f64>) -> PyResult<f64> {
    guarded(|| TopologySpec::parse(topology)?.host_rate(bandwidth))
}
