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
//! speed (`interference.rs`, shared with the engine's `nccl`/`ddp` loop).
//! Iteration `k` completes when every rank has run its program of iteration `k` to the
//! end; the program ends with the waits that make its parameters usable for `k + 1`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

use super::driver::{drive, SimulatedJob};
use super::interference::{Added, InFlight, Interference, Piece};
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

    /// Whether it times collectives in closed form, with no flow on any link.
    fn flowless(&self) -> bool {
        false
    }
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

    fn flowless(&self) -> bool {
        true
    }
}

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
    in_flight: InFlight,
    /// The compute piece running now (interference moves its end).
    piece: Option<Piece>,
    /// Compute time interference added so far, ns.
    added: Added,
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
            in_flight: InFlight::default(),
            piece: None,
            added: Added::default(),
            compute_seq: 0,
        };
        let (workload, iterations) = (&sc.workload, sc.iterations);
        let flowless = exec.flowless();
        Runner {
            sc,
            workload,
            limit: iterations,
            measured: iterations,
            job,
            exec,
            sampler,
            interference: Interference::default(),
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
                interference: [0, 0],
                rank0: None,
                links_per_iteration: false,
                iterations_run: iterations,
                flowless,
                at_end: None,
                compute_spans: sc.record_timeline.then(Vec::new),
                simulated_ranks: ranks,
                job,
                ..Measured::default()
            },
            completed: vec![0; iterations as usize],
        }
    }

    /// Slows compute while collectives run (see [`Interference`]).
    pub fn with_interference(mut self, interference: Interference) -> Self {
        self.interference = interference;
        self
    }

    /// Runs `limit` (>= `sc.iterations`) iterations, measuring the first `sc.iterations`
    /// (multi-job runs: the others go on as background load).
    pub fn run_until(mut self, limit: u32) -> Self {
        self.limit = limit.max(self.measured);
        self
    }

    /// Runs every iteration of this job alone to completion: what it measured, and the
    /// stragglers' factor on its compute (`Sampler::compute_factor`).
    pub fn run(mut self, core: &mut SimState) -> Result<(Measured, f64)> {
        drive(self.sc, &mut [&mut self], core)?;
        Ok((self.out, self.sampler.compute_factor(true, self.measured as usize)))
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
                    let piece = self.interference.start(core.now, work, rank.in_flight.any(), &mut rank.added);
                    rank.pc += 1;
                    rank.compute_start = core.now;
                    rank.piece = Some(piece);
                    self.seq += 1;
                    rank.compute_seq = self.seq;
                    self.queue.push(Reverse((piece.due, self.seq, r)));
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

    /// Rank `r` starts (`started`) or finishes a collective now: interference moves the
    /// end of its compute piece when it starts or stops communicating.
    fn in_flight(&mut self, core: &mut SimState, r: usize, started: bool) {
        let rank = &mut self.ranks[r];
        if !rank.in_flight.change(started) || !self.interference.is_on() {
            return;
        }
        if let Some(piece) = rank.piece.as_mut() {
            self.interference.switch(piece, core.now, rank.in_flight.any(), &mut rank.added);
            self.seq += 1;
            rank.compute_seq = self.seq;
            self.queue.push(Reverse((piece.due, self.seq, r)));
        }
    }

    fn end_iteration(&mut self, core: &mut SimState, r: usize) {
        let rank = &mut self.ranks[r];
        let k = rank.iteration as usize;
        rank.iteration += 1;
        rank.pc = 0;
        if k >= self.completed.len() {
            self.completed.resize(k + 1, 0);
        }
        self.completed[k] += 1;
        if self.completed[k] == self.ranks.len() {
            let added = self.ranks[0].added;
            self.out.iteration_completed(core, self.measured, self.limit, added);
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
        for r in 0..self.ranks.len() {
            self.in_flight(core, r, true);
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
                self.in_flight(core, rank, false);
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

    fn stopped_at(&self) -> Option<Nanos> {
        self.out.stopped_at
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
        self.ranks[r].piece = None;
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
        let mut report = build_report(self.sc, core, std::mem::take(&mut self.out));
        // Stragglers: the compute an iteration waits for (see `Engine::report`).
        report.scale_compute(self.sampler.compute_factor(true, self.measured as usize));
        report
    }
}
