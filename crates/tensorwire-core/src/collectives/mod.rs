//! Collective schedules: which rank sends how much to whom at each step. These are
//! pure functions of (rank, number of ranks, step), shared by the simulator's executor
//! and, through the bindings, by the runtime.

mod ring;

pub use ring::Ring;

/// What one rank does in one step of a step-synchronous collective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Rank this rank sends to, if any.
    pub send_to: Option<usize>,
    /// Rank this rank receives from, if any.
    pub recv_from: Option<usize>,
    /// Bytes sent, as a fraction of the collective's payload.
    pub fraction: f64,
    /// Index of the chunk sent (for runtimes that move real data).
    pub send_chunk: usize,
    /// Index of the chunk received.
    pub recv_chunk: usize,
    /// Whether the received chunk is added to the local one (reduce) or copied (gather).
    pub reduce: bool,
}

/// A collective in which every rank runs the same numbered steps; step `s` at a rank
/// can start once its step `s-1` send was delivered and its step `s-1` receive arrived.
pub trait StepSchedule: std::fmt::Debug {
    /// Number of steps for `n` ranks.
    fn steps(&self, n: usize) -> usize;
    /// What `rank` does at `step`.
    fn step(&self, rank: usize, n: usize, step: usize) -> Step;
    /// Whether each rank only ever talks to its ring neighbours `rank +/- 1`; such a
    /// schedule stays symmetric on a physical ring topology.
    fn neighbours_only(&self) -> bool;
}
