//! tensorwire-core: a deterministic discrete-event simulator of gradient
//! synchronisation in data-parallel deep-learning training. Pure Rust, no Python.
//!
//! Vocabulary: a [`workload::Workload`] (a model as the network sees it) runs on a
//! cluster (a [`topology::Topology`] plus hosts) under a [`strategy::Strategy`]; the
//! [`engine`] simulates several iterations and returns a [`metrics::Report`].

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
pub mod sched;
pub mod strategy;
pub mod workload;

pub use engine::{
    place_jobs, simulate, simulate_jobs, Failure, Job, JobSeat, Progress, ProgressHook, Scenario, Variability,
};
pub use metrics::Report;
