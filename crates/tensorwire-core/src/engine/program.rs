//! Stream programs: every rank runs, each iteration, one program of compute and
//! collective instructions on its compute stream, and the collectives run on
//! communication streams, one at a time each and in issue order. This is how PyTorch FSDP
//! and DeepSpeed ZeRO execute on a GPU: all-gathers on one CUDA stream, reduce-scatters
//! on another, the compute stream waiting on events (`Wait`) only where it needs the
//! result. Sharded strategies compile into such programs (`sharded.rs`).
//!
//! A collective starts once every rank has issued it (NCCL's implicit rendezvous: the
//! kernel cannot progress before its peers launched theirs), its stream is free and the
//! collective it depends on, if any, has finished (HSDP's all-reduce of a reduce-scatter's
//! output, on a communicator of its own).
//!
//! The collectives run on an executor ([`Exec`]): message by message on the network
//! (`step.rs`), or in closed form (`timed.rs`, NCCL's model). **Interference**: while a
//! collective of a rank is in flight, that rank's compute advances at `1 / (1 + s)` of its
//! speed (see [`Interference`]).
//! Iteration `k` completes when every rank has run its program of iteration `k` to the
//! end; the program ends with the waits that make its parameters usable for `k + 1`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use super::driver::{drive, SimulatedJob};
use super::slab::Slab;
use super::state::{Note, Protocol, SimState};
use super::step::StepCollective;
use super::timed::TimedCollective;
use super::{build_report, variability, Measured};
use crate::error::Result;
use crate::metrics::Report;
use crate::units::Nanos;
use crate::workload::Workload;

/// One instruction of a rank's program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Instr {
    /// The layer's forward or backward compute, at the workload's time for it.
    Compute { layer: usize, backward: bool },
    /// Hand collective `c` (an index into [`Program::collectives`]) to its stream.
    Issue(usize),
    /// Block the compute stream until collective `c` has finished on this rank.
    Wait(usize),
}

/// A collective of the program.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Collective {
    /// Index of its schedule in the executor's list.
    pub schedule: usize,
    /// Payload bytes on the wire (the full buffer: see docs/collectives.md).
    pub bytes: u64,
    /// Communication stream (NCCL communicator) it runs on.
    pub stream: usize,
    /// A collective of the same iteration that must have finished on every rank before
    /// this one starts (its input is that one's output).
    pub after: Option<usize>,
}

/// One iteration's program, the same on every rank.
#[derive(Debug, Clone, Default)]
pub(crate) struct Program {
    pub instrs: Vec<Instr>,
    pub collectives: Vec<Collective>,
    pub streams: usize,
}

impl Program {
    /// Appends a collective and its issue instruction; returns its index.
    pub fn issue(&mut self, schedule: usize, bytes: u64, stream: usize) -> usize {
        self.issue_after(schedule, bytes, stream, None)
    }

    /// [`Program::issue`] for a collective that starts only once collective `after` has
    /// finished on every rank.
    pub fn issue_after(&mut self, schedule: usize, bytes: u64, stream: usize, after: Option<usize>) -> usize {
        self.collectives.push(Collective { schedule, bytes, stream, after });
        self.streams = self.streams.max(stream + 1);
        let c = self.collectives.len() - 1;
        self.instrs.push(Instr::Issue(c));
        c
    }
}

/// What runs the collectives of a program: a [`Protocol`] that starts an operation of a
/// given schedule index on a rank.
pub(crate) trait Exec: Protocol {
    /// Simulated rank `rank` starts operation `op_id` of schedule `schedule` over `bytes`.
    fn start_with(&mut self, core: &mut SimState, rank: usize, op_id: u64, schedule: usize, bytes: u64);
}

impl Exec for StepCollective {
    fn start_with(&mut self, core: &mut SimState, rank: usize, op_id: u64, schedule: usize, bytes: u64) {
        StepCollective::start_with(self, core, rank, op_id, schedule, bytes);
    }
}

impl Exec for TimedCollective {
    fn start_with(&mut self, core: &mut SimState, rank: usize, op_id: u64, schedule: usize, bytes: u64) {
        TimedCollective::start_with(self, core, rank, op_id, schedule, bytes);
    }
}

/// Compute slowed while communication kernels run on the same GPU (NCCL's kernels hold
/// one SM per channel; docs/design/nccl-research.md §6).
///
/// Model: a compute piece of `w` ns (its time alone) advances at rate 1 while no
/// collective of its rank is in flight and at `1 / (1 + slowdown)` while one or more are.
/// A piece fully overlapped thus takes `w (1 + slowdown)`, which is how the source
/// defines its figure (arXiv 2507.03114: 18.9% on average, `nccl::DEFAULT_COMPUTE_SLOWDOWN`);
/// a piece overlapped for `o` ns of wall-clock time is stretched by `o * slowdown / (1 + slowdown)`.
/// Several collectives at once slow it no more than one (the source measured one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Interference {
    /// Fractional slowdown while communicating (0: none).
    pub slowdown: f64,
}

impl Interference {
    /// Wall-clock ns per ns of compute work, with or without a collective in flight.
    pub fn stretch(self, communicating: bool) -> f64 {
        if communicating {
            1.0 + self.slowdown
        } else {
            1.0
        }
    }

    /// Work left of a piece that had `left` ns of work `elapsed` ns ago, at the stretch
    /// in force since then.
    pub fn work_left(self, left: f64, elapsed: Nanos, communicating: bool) -> f64 {
        (left - elapsed as f64 / self.stretch(communicating)).max(0.0)
    }

    /// Wall-clock ns to finish `left` ns of work at the current stretch.
    pub fn time_to_finish(self, left: f64, communicating: bool) -> Nanos {
        crate::limits::nanos_clamped((left * self.stretch(communicating)).round())
    }
}

/// Bytes one rank sends for a collective of a schedule index over `bytes` (closed-form
/// executors, which start no flow: the report's bytes sent and communication time).
pub(crate) type SentBytes = Box<dyn Fn(usize, u64) -> f64>;

struct Rank {
    pc: usize,
    iteration: u32,
    /// Per collective: iterations in which it finished on this rank.
    done: Vec<u32>,
    waiting: Option<usize>,
    slowdown: f64,
    /// When the current compute instruction started (for recording).
    compute_start: Nanos,
    /// Collectives of this rank in flight.
    in_flight: usize,
    /// Interference: the current compute piece's work left (ns alone) as of `since`.
    work_left: f64,
    since: Nanos,
    computing: bool,
    /// Sequence number of the queue entry that ends the current compute piece (older ones
    /// were superseded when interference moved its end).
    compute_seq: u64,
}

#[derive(Default)]
struct Stream {
    queue: VecDeque<(u32, usize)>,
    busy: bool,
}

struct Running {
    iteration: u32,
    collective: usize,
    done: usize,
}

/// Rank 0's communication busy time and bytes sent, kept by the runner when the executor
/// starts no flow (the core's counters see none).
#[derive(Default)]
struct Rank0Comm {
    sent_per_op: Option<SentBytes>,
    busy: Nanos,
    since: Nanos,
    sent: f64,
    first: (Nanos, f64),
}

/// One job's program running on a shared [`SimState`]: its ranks, streams and collectives.
/// Several share one core in a multi-job run (`driver::drive`); [`Runner::run`] is one alone.
pub(crate) struct Runner<'a, E: Exec = StepCollective> {
    sc: &'a super::Scenario,
    workload: &'a Workload,
    program: Program,
    /// Iterations each rank runs: `sc.iterations`, or more in a multi-job run, where a
    /// job past its measured iterations goes on as background load ([`Runner::run_until`]).
    limit: u32,
    /// Iterations measured (`sc.iterations`): the report covers the first ones.
    measured: u32,
    /// This job's index in the core (its flows and its rank 0's host).
    job: usize,
    exec: E,
    sampler: variability::Sampler,
    interference: Interference,
    rank0: Rank0Comm,
    /// Per collective: iterations through which it has finished on every rank.
    all_done: Vec<u32>,
    ranks: Vec<Rank>,
    issued: HashMap<(u32, usize), usize>,
    streams: Vec<Stream>,
    running: Slab<Running>,
    queue: BinaryHeap<Reverse<(Nanos, u64, usize)>>,
    seq: u64,
    out: Measured,
    completed: Vec<usize>,
}

impl<'a, E: Exec> Runner<'a, E> {
    /// Job `job` of `sc` running `program` on `ranks` simulated ranks.
    pub fn new(
        sc: &'a super::Scenario,
        program: Program,
        ranks: usize,
        job: usize,
        exec: E,
        sampler: variability::Sampler,
    ) -> Self {
        let rank = || Rank {
            pc: 0,
            iteration: 0,
            done: vec![0; program.collectives.len()],
            waiting: None,
            slowdown: 1.0,
            compute_start: 0,
            in_flight: 0,
            work_left: 0.0,
            since: 0,
            computing: false,
            compute_seq: 0,
        };
        let (workload, iterations) = (&sc.workload, sc.iterations);
        Runner {
            sc,
            workload,
            limit: iterations,
            measured: iterations,
            job,
            exec,
            sampler,
            interference: Interference { slowdown: 0.0 },
            rank0: Rank0Comm::default(),
            all_done: vec![0; program.collectives.len()],
            ranks: (0..ranks).map(|_| rank()).collect(),
            issued: HashMap::new(),
            streams: (0..program.streams).map(|_| Stream::default()).collect(),
            program,
            running: Slab::default(),
            queue: BinaryHeap::new(),
            seq: 0,
            out: Measured {
                completions: Vec::new(),
                events: 0,
                busy_at_first: 0,
                link_bytes_at_first: Vec::new(),
                sent_at_first: 0.0,
                rank0: None,
                links_per_iteration: false,
                at_end: None,
                compute_spans: sc.record_timeline.then(Vec::new),
                simulated_ranks: ranks,
                job,
            },
            completed: vec![0; iterations as usize],
        }
    }

    /// Slows compute while collectives run (see [`Interference`]).
    pub fn with_interference(mut self, interference: Interference) -> Self {
        self.interference = interference;
        self
    }

    /// For executors that start no flow: rank 0's bytes sent per collective, from which
    /// the runner reports its communication time and bytes sent.
    pub fn flowless(mut self, sent_per_op: SentBytes) -> Self {
        self.rank0.sent_per_op = Some(sent_per_op);
        self
    }

    /// Runs `limit` (>= `sc.iterations`) iterations, measuring the first `sc.iterations`
    /// (multi-job runs: the others go on as background load).
    pub fn run_until(mut self, limit: u32) -> Self {
        self.limit = limit.max(self.measured);
        self
    }

    /// Runs every iteration of this job alone to completion.
    pub fn run(mut self, core: &mut SimState) -> Result<Measured> {
        drive(self.sc, &mut [&mut self], core)?;
        Ok(self.out)
    }

    /// Runs rank `r`'s program until it must wait for compute or a collective.
    fn advance(&mut self, core: &mut SimState, r: usize) {
        loop {
            let rank = &mut self.ranks[r];
            if rank.iteration == self.limit {
                return;
            }
            let Some(&instr) = self.program.instrs.get(rank.pc) else {
                self.end_iteration(core, r);
                continue;
            };
            match instr {
                Instr::Compute { layer, backward } => {
                    let l = &self.workload.layers[layer];
                    let base = if backward { l.backward } else { l.forward };
                    let work = base as f64 * rank.slowdown;
                    let d = if self.interference.slowdown > 0.0 {
                        self.interference.time_to_finish(work, rank.in_flight > 0)
                    } else {
                        crate::limits::nanos_clamped(work.round())
                    };
                    rank.pc += 1;
                    rank.compute_start = core.now;
                    (rank.work_left, rank.since, rank.computing) = (work, core.now, true);
                    self.seq += 1;
                    rank.compute_seq = self.seq;
                    self.queue.push(Reverse((core.now + d, self.seq, r)));
                    return;
                }
                Instr::Issue(c) => {
                    rank.pc += 1;
                    let k = rank.iteration;
                    self.issue(core, k, c);
                }
                Instr::Wait(c) => {
                    if rank.done[c] > rank.iteration {
                        rank.pc += 1;
                    } else {
                        rank.waiting = Some(c);
                        return;
                    }
                }
            }
        }
    }

    /// Rank `r`'s collectives in flight change by `delta` (+1 or -1) now: interference
    /// moves the end of its compute piece, and rank 0's communication time is kept.
    fn in_flight(&mut self, core: &mut SimState, r: usize, delta: isize) {
        let now = core.now;
        let rank = &mut self.ranks[r];
        let before = rank.in_flight > 0;
        rank.in_flight = rank.in_flight.checked_add_signed(delta).expect("finished collectives were started");
        let after = rank.in_flight > 0;
        if before == after {
            return;
        }
        if r == 0 && self.rank0.sent_per_op.is_some() {
            if after {
                self.rank0.since = now;
            } else {
                self.rank0.busy += now - self.rank0.since;
            }
        }
        if self.interference.slowdown > 0.0 && rank.computing {
            rank.work_left = self.interference.work_left(rank.work_left, now - rank.since, before);
            rank.since = now;
            let d = self.interference.time_to_finish(rank.work_left, after);
            self.seq += 1;
            rank.compute_seq = self.seq;
            self.queue.push(Reverse((now + d, self.seq, r)));
        }
    }

    /// Rank 0's communication (busy ns, bytes sent) so far, for a flowless executor.
    fn rank0_comm(&self, now: Nanos) -> (Nanos, f64) {
        let open = if self.ranks[0].in_flight > 0 { now - self.rank0.since } else { 0 };
        (self.rank0.busy + open, self.rank0.sent)
    }

    fn end_iteration(&mut self, core: &mut SimState, r: usize) {
        let now = core.now;
        if r == 0 && self.rank0.sent_per_op.is_some() {
            let done = self.ranks[0].iteration + 1;
            if done == 1 && self.measured > 1 {
                self.rank0.first = self.rank0_comm(now);
            }
            if done == self.measured {
                let first = if self.measured > 1 { self.rank0.first } else { (0, 0.0) };
                self.out.rank0 = Some((first, self.rank0_comm(now)));
            }
        }
        let rank = &mut self.ranks[r];
        let k = rank.iteration as usize;
        rank.iteration += 1;
        rank.pc = 0;
        if k >= self.completed.len() {
            self.completed.resize(k + 1, 0);
        }
        self.completed[k] += 1;
        let measured = self.measured as usize;
        if self.completed[k] == self.ranks.len() && self.out.completions.len() < measured {
            self.out.completions.push(now);
            if self.out.completions.len() == 1 && self.measured > 1 {
                self.out.busy_at_first = core.comm_busy_of(self.job);
                self.out.sent_at_first = core.watched_host(self.job).sent;
                self.out.link_bytes_at_first = core.net.link_bytes(now).to_vec();
            }
            if self.out.completions.len() == measured && self.limit > self.measured {
                self.out.at_end = Some(super::EndSnapshot::take(core, self.job));
            }
        }
        if self.ranks[r].iteration < self.limit {
            self.ranks[r].slowdown = self.sampler.draw(r);
        }
    }

    /// Counts one rank's issue of collective `c` of iteration `k`; once every rank has
    /// issued it, it joins its stream's queue.
    fn issue(&mut self, core: &mut SimState, k: u32, c: usize) {
        let count = self.issued.entry((k, c)).or_insert(0);
        *count += 1;
        if *count < self.ranks.len() {
            return;
        }
        self.issued.remove(&(k, c));
        let s = self.program.collectives[c].stream;
        self.streams[s].queue.push_back((k, c));
        self.start_next(core, s);
    }

    fn start_next(&mut self, core: &mut SimState, s: usize) {
        if self.streams[s].busy {
            return;
        }
        let Some(&(k, c)) = self.streams[s].queue.front() else { return };
        if self.program.collectives[c].after.is_some_and(|a| self.all_done[a] <= k) {
            return; // its input is not ready yet; started when it is
        }
        self.streams[s].queue.pop_front();
        self.streams[s].busy = true;
        let op = self.running.insert(Running { iteration: k, collective: c, done: 0 }) as u64;
        let (schedule, bytes) = (self.program.collectives[c].schedule, self.program.collectives[c].bytes);
        if let Some(sent) = &self.rank0.sent_per_op {
            self.rank0.sent += sent(schedule, bytes);
        }
        for r in 0..self.ranks.len() {
            self.in_flight(core, r, 1);
        }
        for r in 0..self.ranks.len() {
            self.exec.start_with(core, r, op, schedule, bytes);
        }
    }

    fn drain_notes(&mut self, core: &mut SimState) {
        while !core.notes.is_empty() {
            for note in std::mem::take(&mut core.notes) {
                let Note::OpDone { rank, op, .. } = note else {
                    unreachable!("step collectives report whole operations")
                };
                let running = self.running.get_mut(op as usize);
                let (k, c) = (running.iteration, running.collective);
                running.done += 1;
                let all = running.done == self.ranks.len();
                self.in_flight(core, rank, -1);
                let r = &mut self.ranks[rank];
                r.done[c] = k + 1;
                if r.waiting == Some(c) && r.iteration == k {
                    r.waiting = None;
                    r.pc += 1;
                    self.advance(core, rank);
                }
                if all {
                    self.running.remove(op as usize);
                    self.all_done[c] = k + 1;
                    let s = self.program.collectives[c].stream;
                    self.streams[s].busy = false;
                    self.start_next(core, s);
                    // Collectives on other streams that waited for this one.
                    for other in 0..self.streams.len() {
                        self.start_next(core, other);
                    }
                }
            }
        }
    }
}

impl<E: Exec> SimulatedJob for Runner<'_, E> {
    fn start(&mut self, core: &mut SimState) {
        core.job = self.job;
        for r in 0..self.ranks.len() {
            self.ranks[r].slowdown = self.sampler.draw(r);
            self.advance(core, r);
        }
        self.drain_notes(core);
    }

    fn completed(&self) -> usize {
        self.out.completions.len()
    }

    fn queue_head(&self) -> Option<Nanos> {
        self.queue.peek().map(|e| e.0 .0)
    }

    fn on_queue(&mut self, core: &mut SimState, t: Nanos) {
        let Reverse((_, seq, r)) = self.queue.pop().expect("peeked");
        core.now = t;
        core.job = self.job;
        if seq != self.ranks[r].compute_seq {
            return; // an end that interference moved
        }
        self.ranks[r].computing = false;
        if let Some(spans) = self.out.compute_spans.as_mut() {
            if let Some(Instr::Compute { layer, backward }) = self.program.instrs.get(self.ranks[r].pc - 1) {
                spans.push((r, *layer, *backward, self.ranks[r].compute_start, t));
            }
        }
        self.advance(core, r);
        // A collective issued here may be done at once (one rank: no messages); its note is
        // drained now, as after a flow or a timer, or nothing would ever drain it.
        self.drain_notes(core);
    }

    fn on_flow(&mut self, core: &mut SimState, user: u64, delivered: bool) {
        self.exec.on_flow(core, user, delivered);
        self.drain_notes(core);
    }

    fn on_timer(&mut self, core: &mut SimState, user: u64) {
        self.exec.on_timer(core, user);
        self.drain_notes(core);
    }

    fn count_event(&mut self) {
        self.out.events += 1;
    }

    fn report(&mut self, core: &mut SimState) -> Report {
        build_report(self.sc, core, std::mem::take(&mut self.out))
    }
}

#[cfg(test)]
mod tests {
    use super::Interference;

    #[test]
    fn interference_stretches_compute_by_the_overlapped_time() {
        let i = Interference { slowdown: 0.25 };
        // Fully overlapped: w (1 + s).
        assert_eq!(i.time_to_finish(1000.0, true), 1250);
        assert_eq!(i.time_to_finish(1000.0, false), 1000);
        // 500 ns of wall-clock time overlapped do 400 ns of work; the other 600 run alone:
        // 1000 + 500 s / (1 + s) = 1100 ns in all.
        let left = i.work_left(1000.0, 500, true);
        assert!((left - 600.0).abs() < 1e-9);
        assert_eq!(500 + i.time_to_finish(left, false), 1100);
        assert_eq!(Interference { slowdown: 0.0 }.time_to_finish(777.0, true), 777);
    }
}
