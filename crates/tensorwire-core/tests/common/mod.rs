//! Helpers shared by the integration tests: they use the public API only.
#![allow(dead_code, unused_imports)]

pub use tensorwire_core::network::ModelKind;
pub use tensorwire_core::strategy::Strategy;
pub use tensorwire_core::topology::TopologySpec;
pub use tensorwire_core::workload::{Layer, Tensor, Workload};
pub use tensorwire_core::{simulate, Report, Scenario};

/// One tensor per layer with the given sizes (bytes): `compute_ns` forward, twice that
/// backward, batch 32, fp32 (the engine's unit tests build the same workload).
pub fn workload(sizes: &[u64], compute_ns: u64) -> Workload {
    Workload {
        name: "test".into(),
        batch_size: 32,
        layers: (0..sizes.len())
            .map(|i| Layer { name: format!("l{i}"), forward: compute_ns, backward: 2 * compute_ns })
            .collect(),
        tensors: sizes.iter().enumerate().map(|(i, &b)| Tensor { name: format!("t{i}"), bytes: b, layer: i }).collect(),
        dtype_bytes: 4,
        collective: Default::default(),
    }
}

/// 1 byte/ns links (8 Gbps), `hop_ns` per hop.
pub fn scenario(w: Workload, workers: usize, strategy: &str, hop_ns: u64) -> Scenario {
    let mut sc = Scenario::new(w, workers, 1e9, Strategy::parse(strategy).unwrap());
    sc.latency = hop_ns as f64 * 1e-9;
    sc
}

pub fn run(sc: &Scenario) -> Report {
    simulate(sc).unwrap()
}

/// Whether two results agree within 1e-9 relative.
pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-300)
}
