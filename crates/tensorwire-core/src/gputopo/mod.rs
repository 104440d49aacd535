//! GPUs inside one machine and topology-aware tree all-reduce over their links
//! (seed 003: single and multiple balanced binary trees of maximum link weight).
//!
//! - [`GpuTopology`]: the GPUs and a symmetric matrix of integer link weights, from a
//!   preset (`p3.16xlarge`, `dgx-a100`, `pcie-8`) or a user's adjacency matrix;
//!   [`link_bytes_per_s`] turns a weight into a bandwidth for the simulator.
//! - [`Tree`]: a balanced binary reduction tree (height `ceil(log2 n)`) as a root and
//!   leveled (parent, child) edges; see `tree.rs` for what "binary" means on links.
//! - [`generate_trees`]: one tree per root by seed 003's recursive Kernighan-Lin
//!   bisection, exhaustive search ([`best_tree`]) where it fails, and the multiplicative
//!   link-usage penalty between trees.
//! - [`Schedule`]: the tree all-reduce as data (who sends which slice to whom, reduce or
//!   copy, in rounds), followed by the simulator and by the runtime alike.
//!
//! Everything is deterministic: same topology and options, same trees and schedule.

mod exhaustive;
mod generate;
mod kl;
mod schedule;
mod topology;
mod tree;
mod weights;

#[cfg(test)]
mod tests;

pub use exhaustive::{best_tree, MAX_EXHAUSTIVE_GPUS};
pub use generate::{generate_tree, generate_trees, kernighan_lin_tree, Generated, Method, DEFAULT_PENALTY};
pub use schedule::{Op, Schedule, Transfer, DEFAULT_ARRAY_BOUND};
pub use topology::{link_bytes_per_s, GpuTopology, DOUBLE_NVLINK, MAX_GPUS, NO_LINK, PCIE, PRESETS, SINGLE_NVLINK};
pub use tree::{height_for, Tree, TreeEdge};
