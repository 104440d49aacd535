//! What a simulation reports. Steady state: iteration `k` completes when every worker
//! holds the synchronised parameters of iteration `k`; the iteration time is the mean
//! spacing of completions after the first (warm-up) one.

/// Result of one simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Steady-state time per iteration, s.
    pub iteration_time_s: f64,
    /// Completion time of each iteration since time 0, s.
    pub completions_s: Vec<f64>,
    /// Samples per second over all workers.
    pub throughput_samples_per_s: f64,
    /// T_n / (n T_1): throughput over n times the throughput of one worker that only
    /// computes (seed 001). Equals compute time / iteration time.
    pub scaling_factor: f64,
    /// Forward + backward compute of one iteration on one worker without variability, s.
    pub compute_time_s: f64,
    /// Per iteration, time rank 0's host had at least one message in flight, s.
    pub comm_time_s: f64,
    /// Per iteration, time not covered by rank 0's compute (communication that did not
    /// overlap with compute, plus any wait for other workers), s.
    pub exposed_comm_s: f64,
    /// Utilisation of each directed link over the steady-state window (0..1), by name.
    pub link_utilization: Vec<(String, f64)>,
    /// Events processed.
    pub events: u64,
    /// Flows simulated (in folded mode, one per representative flow).
    pub flows: u64,
    /// Whether one representative rank stood for all.
    pub folded: bool,
    /// Network model used.
    pub network_model: String,
}
