//! tensorwire-core: a deterministic discrete-event simulator of gradient
//! synchronisation in data-parallel deep-learning training. Pure Rust, no Python.
//!
//! # Vocabulary
//!
//! - a [`workload::Workload`]: a model as the network sees it (layers with their compute
//!   times, gradient tensors with their sizes), or a collective microbenchmark;
//! - a cluster: a [`topology::TopologySpec`] (star, ring, leaf-spine, rail, nodes, ...)
//!   built into a [`topology::Topology`] of links for the workers and servers;
//! - a [`strategy::Strategy`], written `NAME[:key=value,...]`: how gradients are
//!   synchronised (parameter servers, an all-reduce [`strategy::Algorithm`], or sharded);
//! - a [`Scenario`]: all of the above plus link rate (bytes/s), latency (s), network
//!   model and iterations: everything one run needs;
//! - a [`Report`]: the steady state the run measured (seconds, bytes, utilisation).
//!
//! Times are integer nanoseconds inside the engine and f64 seconds at the API.
//!
//! # The run pipeline
//!
//! [`simulate`] takes a [`Scenario`] through these stages:
//!
//! 1. **Scenario** (`engine/scenario.rs`): validated before anything is built;
//! 2. **topology** (`topology/`): the spec built into links and routes;
//! 3. **schedule** (`strategy/algorithm.rs`): the strategy's step schedule for the
//!    workload's collective ([`strategy::Strategy::schedule`]), and the fabric check;
//! 4. **folding** (`engine/mod.rs`, `engine/fold.rs`): when every rank does the same
//!    thing, simulate one rank (or one per orbit) with weighted flows;
//! 5. **event loop** (`engine/driver.rs`): compute, scheduler releases and network
//!    events in (time, sequence) order on a [`network`] model;
//! 6. **Report** (`engine/report.rs`): the window between two iteration ends.
//!
//! # Example
//!
//! A ring all-reduce of 64 MiB among 8 workers on a star at 25 Gbps: each worker sends
//! 2(N-1)/N of the buffer, so an iteration takes about 2 * 7/8 * 64 MiB / 3.125 GB/s.
//!
//! ```
//! use tensorwire_core::strategy::Strategy;
//! use tensorwire_core::workload::collective_benchmark;
//! use tensorwire_core::{simulate, Scenario};
//!
//! let workload = collective_benchmark("allreduce:64MiB")?;
//! let strategy = Strategy::parse("ring")?;
//! let bandwidth = 25e9 / 8.0; // bytes/s
//! let report = simulate(&Scenario::new(workload, 8, bandwidth, strategy))?;
//!
//! let transfer_s = 2.0 * 7.0 / 8.0 * (64u64 << 20) as f64 / bandwidth;
//! assert!(report.iteration_time_s >= transfer_s);
//! assert!(report.iteration_time_s < 1.01 * transfer_s);
//! assert_eq!(report.sent_bytes_per_worker, 2.0 * 7.0 / 8.0 * (64u64 << 20) as f64);
//! # Ok::<(), tensorwire_core::Error>(())
//! ```

pub(crate) mod arith;
pub mod dtype;
pub mod error;
pub(crate) mod fasthash;
pub mod gputopo;
pub mod limits;
pub mod network;
pub mod spec;
pub mod topology;
pub mod units;

pub use error::{Error, Result};
pub mod collectives;
pub mod engine;
pub mod metrics;
pub mod nccl;
pub mod sched;
pub mod strategy;
pub mod workload;

pub use engine::{
    check_scenario, place_jobs, simulate, simulate_jobs, Failure, Job, JobSeat, Progress, ProgressHook, Scenario,
    Variability,
};
pub use metrics::Report;
