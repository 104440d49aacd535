//! What a simulation reports. Steady state: iteration `k` completes when every worker
//! holds the synchronised parameters of iteration `k`; the iteration time is the mean
//! spacing of completions after the first (warm-up) one.

/// What a recorded span was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// A layer's forward pass on a worker.
    Forward,
    /// A layer's backward pass on a worker.
    Backward,
    /// A message from one host to one or more hosts (multicast).
    Flow,
    /// A collective timed in closed form (NCCL's model, `engine/timed.rs`) on one rank:
    /// no message, no link, from when every rank had started it to its end.
    Collective,
}

/// What NCCL's tuning model chose for a collective (`crate::nccl::choose`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclPick {
    /// The collective (`allreduce`, `allgather`, ...).
    pub collective: &'static str,
    /// Its algorithm (NCCL_ALGO's name: `ring`, `tree`, `nvls`, ...).
    pub algorithm: &'static str,
    /// Its protocol (NCCL_PROTO's name: `ll`, `ll128`, `simple`).
    pub protocol: &'static str,
    /// Channels it runs on (all-to-all: the point-to-point channels).
    pub channels: usize,
    /// All-to-all: the channels each peer's send is striped over; `None` for a collective
    /// algorithm.
    pub peer_channels: Option<usize>,
}

/// How many of one iteration's collectives ran with one [`NcclPick`], and their bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NcclUse {
    /// The choice.
    pub pick: NcclPick,
    /// Collectives of the iteration that ran with it.
    pub count: u64,
    /// Their buffers' bytes together (nccl-tests' size S of each), bytes.
    pub bytes: f64,
    /// Their times together, each alone on its links (NCCL's choice as it runs), s.
    pub seconds: f64,
    /// Their times together had each run the (algorithm, protocol) that tensorwire times
    /// fastest for its size ([`crate::nccl::choose_and_fastest`]), s: at most [`NcclUse::seconds`].
    pub fastest_seconds: f64,
    /// The (algorithm, protocol) that saves the most of that difference (NCCL_ALGO's and
    /// NCCL_PROTO's names), where some collective has a faster one than NCCL's choice.
    pub faster: Option<(&'static str, &'static str)>,
}

/// One recorded interval of one simulated iteration (see [`Report::timeline`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// What it was.
    pub kind: SpanKind,
    /// Compute: the worker rank. Flow: the sending host.
    pub host: usize,
    /// Flow: the receiving hosts.
    pub to: Vec<usize>,
    /// Compute: the layer's name; flow: the collective it belongs to (`allreduce`,
    /// `reducescatter`, `allgather`, ...; empty for parameter-server messages).
    pub label: String,
    /// Flow: the links crossed, by name.
    pub links: Vec<String>,
    /// Start, s.
    pub start_s: f64,
    /// End (flows: delivery), s.
    pub end_s: f64,
    /// Flow: bytes on the wire; collective: its buffer (nccl-tests' size S).
    pub bytes: f64,
    /// Collective: what NCCL's tuning model chose for it.
    pub nccl: Option<NcclPick>,
}

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
    /// computes the workload (seed 001), [`Report::ideal_samples_per_s`]: nominal compute
    /// over iteration time where every worker waits for every other; lowered by
    /// stragglers and by compute interference, as a measured scaling factor would be, and
    /// above 1 only where stragglers' multipliers below 1 make workers faster than the
    /// workload (or, under partial collectives, fast workers' rates add up past it).
    pub scaling_factor: f64,
    /// n times the samples/s of one worker that only computes the workload (its nominal
    /// compute, no stragglers, no interference): the scaling factor's reference; infinite
    /// for a collective microbenchmark, which computes nothing (scaling factor 0).
    pub ideal_samples_per_s: f64,
    /// Compute an iteration waits for, s: the workload's forward + backward compute on one
    /// worker, times the slowest worker's straggler multiplier averaged over the measured
    /// iterations (every worker's under partial collectives); without interference, which
    /// is [`Report::compute_interference_s`].
    pub compute_time_s: f64,
    /// Per iteration, compute time rank 0 lost to communication kernels running beside it
    /// (`compute_slowdown` of the strategies timed by NCCL's model; 0 otherwise), s.
    pub compute_interference_s: f64,
    /// Per iteration, time rank 0's host had at least one message in flight, s.
    pub comm_time_s: f64,
    /// Per iteration, time not covered by compute: iteration - compute - interference
    /// (communication that did not overlap with compute, plus any wait for other
    /// workers), s.
    pub exposed_comm_s: f64,
    /// Gradient bytes each worker reduces per iteration: the workload's, in the element type
    /// they are reduced in ([`crate::strategy::Strategy::gradient_dtype_factor`]), before
    /// compression (a microbenchmark: its collectives' buffers), bytes.
    pub gradient_bytes_per_worker: f64,
    /// Per iteration, bytes rank 0's host put on the wire (every message it started to
    /// another host, once per message: a multicast counts once; a copy to its own host, a
    /// co-located server's share, is not on the wire), bytes.
    pub sent_bytes_per_worker: f64,
    /// Utilisation of each directed link over the steady-state window (0..1), by name; under
    /// the analytical model, which times every flow as if alone, the load over the capacity,
    /// which passes 1 where flows it did not let share a link would have had to.
    pub link_utilization: Vec<(String, f64)>,
    /// Events processed.
    pub events: u64,
    /// Flows simulated (in folded mode, one per representative flow).
    pub flows: u64,
    /// Whether representative ranks stood for all (star/ring folding or digit folding).
    pub folded: bool,
    /// Ranks simulated: the workers when not folded, 1 with star/ring folding, the
    /// representatives with digit folding.
    pub simulated_ranks: usize,
    /// Failures of the scenario that happened before the run ended (the others came
    /// after the last completion and changed nothing).
    pub failures_applied: usize,
    /// The others: indices (in the scenario's list) of the failures the run ended before,
    /// in time order. `simulate` refuses a run with any, unless told to keep them.
    pub failures_unreached: Vec<usize>,
    /// Network model used.
    pub network_model: String,
    /// Partial collectives: mean number of active processes per round in the steady
    /// state (the initiator and the ranks ready before it, seed 002); `None` otherwise.
    pub nap: Option<f64>,
    /// Spans of one iteration, when recording was asked for: one period, from a completion
    /// of every worker to the next (the last but one with three or more iterations, since
    /// workers that run ahead, parameter servers', start the next forward pass within a
    /// period and the last one has no next; the last with two; from 0 with one), each span
    /// clipped to it (a clipped message keeps its whole `bytes`). Hosts after
    /// the workers are parameter servers; in folded mode only rank 0 is recorded.
    pub timeline: Vec<Span>,
    /// Collectives timed by NCCL's model (`nccl`, `ddp`, sharded with `comm=nccl`): what
    /// NCCL chose for the collectives rank 0 started in one period (the timeline's:
    /// one iteration; the whole run with one iteration), one entry per choice, the most
    /// used first. Empty for collectives run as flows.
    pub nccl_choices: Vec<NcclUse>,
    /// Multi-job runs: when another job stopped running as background load (it had run
    /// its bound of iterations, `engine::jobs`) before this job's measured iterations
    /// ended, s; this job's last measured iterations then ran beside less load than the
    /// other job's would have put on the fabric had it gone on. `None`: every other job
    /// ran all along (and in runs of one job).
    pub background_stopped_s: Option<f64>,
}

impl Report {
    /// Sets the iteration time and throughput, and what follows from them (scaling
    /// factor, exposed communication).
    pub fn set_iteration_time(&mut self, iteration_time_s: f64, samples_per_s: f64) {
        self.iteration_time_s = iteration_time_s;
        self.throughput_samples_per_s = if iteration_time_s > 0.0 { samples_per_s } else { f64::INFINITY };
        self.scaling_factor =
            if iteration_time_s > 0.0 { self.throughput_samples_per_s / self.ideal_samples_per_s } else { 1.0 };
        self.set_exposed();
    }

    /// Scales the compute an iteration waits for by `factor` (stragglers: the slowest
    /// worker's multiplier, or every worker's own under partial collectives), and the
    /// exposed communication with it; the scaling factor keeps its reference, the nominal
    /// compute.
    pub fn scale_compute(&mut self, factor: f64) {
        self.compute_time_s *= factor;
        self.set_exposed();
    }

    fn set_exposed(&mut self) {
        self.exposed_comm_s = (self.iteration_time_s - self.compute_time_s - self.compute_interference_s).max(0.0);
    }
}
