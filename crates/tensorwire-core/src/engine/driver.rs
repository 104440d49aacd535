//! The event loop: one or several jobs on one [`SimState`], each job's own events (compute,
//! scheduler timers) in its own queue, the network's events and protocols' wake-ups in the
//! core's. A single-job run is the loop with one job; a multi-job run (`jobs.rs`) hands
//! each flow event and wake-up to the job that started it and each queue event to the job
//! whose queue holds the earliest (the lowest job index first at equal times).

use super::state::SimState;
use super::{Progress, Scenario, PROGRESS_EVERY};
use crate::error::{Error, Result};
use crate::limits::{horizon_error, HORIZON_NS};
use crate::metrics::Report;
use crate::network::FlowEvent;
use crate::units::{nanos_to_seconds, Nanos};

/// A job as the event loop sees it: the gradient-scheduling engine (`Engine`: all-reduce
/// and parameter-server strategies) or a stream program (`program::Runner`: sharded
/// strategies).
pub(crate) trait SimulatedJob {
    /// Starts every rank's first iteration.
    fn start(&mut self, core: &mut SimState);
    /// Measured iterations completed on every rank (at most the run's `iterations`; a job
    /// of a multi-job run may go on past them as background load for the others).
    fn completed(&self) -> usize;
    /// Whether, its measured iterations done, the job still completes one it started
    /// beyond them (a parameter-server run alone, `iterations_beyond`): the run goes on.
    fn finishing(&self) -> bool {
        false
    }
    /// When the job's own next event is due, ns.
    fn queue_head(&self) -> Option<Nanos>;
    /// Handles the job's own next event, due at `t` (it sets the core's job and time).
    fn on_queue(&mut self, core: &mut SimState, t: Nanos);
    /// Hands the job's protocol a flow event of its message `user`.
    fn on_flow(&mut self, core: &mut SimState, user: u64, delivered: bool);
    /// Hands the job's protocol its wake-up `user` ([`SimState::wake_at`]).
    fn on_timer(&mut self, core: &mut SimState, user: u64);
    /// Counts one event handled for the job (`Report::events`).
    fn count_event(&mut self);
    /// The job's report, once it is done.
    fn report(&mut self, core: &mut SimState) -> Report;
    /// When the job completed the last iteration it was to run, where that is past its
    /// measured ones (it stopped as background load), ns.
    fn stopped_at(&self) -> Option<Nanos>;
}

/// Runs `jobs` on `core` until every job has completed its measured iterations (jobs done
/// with theirs keep running, up to their own limit, while others measure). `sc` gives the
/// flow budget and the progress callback (its `iterations` are the run's). Generic so
/// that a run alone calls its job directly (the loop runs once per event: dispatch
/// through `dyn SimulatedJob` cost 2-3% of an unfolded ring's time); `J = dyn SimulatedJob` for
/// several jobs.
pub(crate) fn drive<J: SimulatedJob + ?Sized>(sc: &Scenario, jobs: &mut [&mut J], core: &mut SimState) -> Result<()> {
    for job in jobs.iter_mut() {
        job.start(core);
    }
    let mut flow_events = Vec::new();
    let mut checked = 0;
    let mut polled = 0;
    let mut reported = std::time::Instant::now();
    let mut events = 0u64;
    let iterations = sc.iterations as usize;
    let mut clock = std::time::Instant::now();
    let mut turns = 0u32;
    while jobs.iter().any(|j| j.completed() < iterations || j.finishing()) {
        // Messages timed by lanes count as events would (they come without any).
        let work = events + core.flows_alone;
        // Events can be slow (max-min re-rating many flows sharing a link): look at the
        // clock every few turns too, so that a stop request is seen within a second.
        turns += 1;
        let late = turns >= CLOCK_EVERY && {
            turns = 0;
            clock.elapsed() >= PROGRESS_INTERVAL
        };
        if work >= checked + PROGRESS_EVERY || late {
            checked = work;
            clock = std::time::Instant::now();
            let done = jobs.iter().map(|j| j.completed()).min().unwrap_or(0);
            checkpoint(sc, core, events, done)?;
            reported = std::time::Instant::now();
        } else if sc.progress.is_some() && work >= polled + POLL_EVERY {
            // Events can be slow (a max-min event over 100,000 flows takes tens of
            // microseconds): between two checkpoints, report (and so notice Ctrl-C) at
            // least every REPORT_INTERVAL of wall time. The flow budget stays checked at the
            // checkpoints only, so whether a run is refused does not depend on the machine.
            polled = work;
            if reported.elapsed() >= REPORT_INTERVAL {
                let done = jobs.iter().map(|j| j.completed()).min().unwrap_or(0);
                report(sc, core, events, done)?;
                reported = std::time::Instant::now();
            }
        }
        let head = jobs.iter().enumerate().filter_map(|(i, j)| j.queue_head().map(|t| (t, i))).min();
        let next = next(head.map(|h| h.0), core);
        // Durations derived while simulating are clamped at the horizon (`limits.rs`):
        // the run stops at the first event that reaches it.
        if let Next::Network(t) | Next::Timer(t) | Next::Queue(t) = next {
            if t >= HORIZON_NS {
                let done = jobs.iter().map(|j| j.completed()).min().unwrap_or(0);
                return Err(horizon_error(done, sc.iterations, !sc.variability.is_uniform(), &sc.horizon_suspects()));
            }
        }
        match next {
            Next::Network(t) => {
                core.now = t;
                flow_events.clear();
                core.net.advance(t, &mut flow_events);
                for &e in &flow_events {
                    events += 1;
                    let (tag, delivered) = match e {
                        FlowEvent::Sent(tag) => (tag, false),
                        FlowEvent::Delivered(tag) => (tag, true),
                    };
                    let user = core.flow_event(tag, delivered);
                    let job = &mut jobs[core.job];
                    job.count_event();
                    if let Some(user) = user {
                        job.on_flow(core, user, delivered);
                    }
                }
            }
            Next::Timer(t) => {
                core.now = t;
                while let Some((job, user)) = core.pop_timer(t) {
                    events += 1;
                    jobs[job].count_event();
                    jobs[job].on_timer(core, user);
                }
            }
            Next::Queue(t) => {
                events += 1;
                let (_, i) = head.expect("a queue event has a job");
                jobs[i].count_event();
                jobs[i].on_queue(core, t);
            }
            Next::Stalled => return Err(stalled(core)),
        }
    }
    Ok(())
}

/// Loop turns between two looks at the clock (one look costs about 20 ns).
const CLOCK_EVERY: u32 = 64;

/// Longest time between two progress reports (and stop checks) however slow the events.
pub(crate) const PROGRESS_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Messages timed by lanes that weigh as much as one flow against `max_flows`: a flow
/// costs an event, its model state and 0.3-1.5 us; a lane message no memory and 2-25 ns
/// (measured: Llama-3 70B ring on 1,024 leaf-spine hosts, 142 million lane messages in
/// 1.3 s).
pub(crate) const LANE_MESSAGES_PER_FLOW: u64 = 64;

/// The work a run has done, in flows, for the flow budget: the flows simulated one by one,
/// and the messages timed by lanes at [`LANE_MESSAGES_PER_FLOW`] to a flow.
fn budgeted_flows(core: &SimState) -> u64 {
    core.flows_started - core.flows_alone + core.flows_alone / LANE_MESSAGES_PER_FLOW
}

/// Checks the flow budget and reports progress; called by the event loops every
/// [`PROGRESS_EVERY`] events or messages timed without one, and at least every
/// [`PROGRESS_INTERVAL`] of wall-clock time.
fn checkpoint(sc: &Scenario, core: &SimState, events: u64, iterations_done: usize) -> Result<()> {
    if let Some(max) = sc.max_flows {
        if budgeted_flows(core) > max {
            // A budget to try: the flows so far scaled to every iteration at this pace
            // (10% over), or ten times this one where no iteration has ended yet.
            let total = u64::from(sc.iterations).max(1) as f64;
            let try_flows = if iterations_done > 0 {
                (max as f64 * total / iterations_done as f64 * 1.1).ceil() as u64
            } else {
                max.saturating_mul(10)
            };
            return Err(Error::invalid(
                "max_flows",
                format!(
                    "the simulation needs more than {max} flows (at {:.3} s simulated, {iterations_done} of {} iterations done); raise max_flows (--max-flows {try_flows}{}), or simulate fewer workers or iterations",
                    nanos_to_seconds(core.now),
                    sc.iterations,
                    if iterations_done > 0 { ", what every iteration needs at this pace" } else { " or more: no iteration has ended yet" },
                ),
            ));
        }
    }
    report(sc, core, events, iterations_done)
}

/// Events (or lane messages) between two looks at the wall clock, for [`REPORT_INTERVAL`].
const POLL_EVERY: u64 = 1 << 10;

/// Wall time after which a run reports progress even before [`PROGRESS_EVERY`] events.
const REPORT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Calls the progress callback; its `false` (Ctrl-C in the bindings) stops the run.
fn report(sc: &Scenario, core: &SimState, events: u64, iterations_done: usize) -> Result<()> {
    if let Some(hook) = &sc.progress {
        let p = Progress {
            iterations_done: iterations_done as u32,
            iterations: sc.iterations,
            simulated_s: nanos_to_seconds(core.now),
            events,
            flows: core.flows_started,
        };
        if !(hook.0)(&p) {
            return Err(Error::invalid("interrupted", "the simulation was stopped before it finished"));
        }
    }
    Ok(())
}

/// What an event loop handles next.
enum Next {
    /// The network's next event, at this time (network events go first at equal times).
    Network(Nanos),
    /// A protocol's wake-up ([`SimState::wake_at`]; they stand for deliveries, so they go
    /// after network events and before the queue's at equal times).
    Timer(Nanos),
    /// The loop's own queue's next event.
    Queue(Nanos),
    /// Nothing is pending.
    Stalled,
}

/// Chooses between the network's next event and the head of a loop's queue.
/// A failure due at or before both is applied first (it comes first at equal times).
fn next(queue_head: Option<Nanos>, core: &mut SimState) -> Next {
    let earliest = |a: Option<Nanos>, b: Option<Nanos>| match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    };
    loop {
        let fail = core.failures.next_time();
        let timer = core.next_timer();
        let limit = earliest(earliest(queue_head, timer), fail);
        // The network's next event if it comes no later than the limit; asking with the
        // limit lets the model skip work that cannot change the answer.
        let net = core.net.next_time_by(limit);
        if let Some(f) = fail {
            if net.is_none_or(|t| f <= t) && earliest(queue_head, timer).is_none_or(|q| f <= q) {
                core.apply_next_failure();
                continue;
            }
        }
        return match (net, timer, queue_head) {
            (Some(t), _, _) => Next::Network(t),
            (None, Some(t), q) if q.is_none_or(|q| t <= q) => Next::Timer(t),
            (None, _, Some(q)) => Next::Queue(q),
            (None, Some(t), None) => Next::Timer(t),
            (None, None, None) => Next::Stalled,
        };
    }
}

/// How a stalled run's error names what cannot finish; a multi-job run names the jobs
/// instead (`jobs.rs`).
pub(super) const STRANDED: &str = "the job cannot finish";

/// The error of a run with nothing left to happen before it finished.
fn stalled(core: &SimState) -> Error {
    match core.failures.down.first() {
        Some((target, at)) => Error::invalid(
            "failures",
            format!(
                "{STRANDED}: {target} went down at {} s and routes are fixed (no rerouting is modelled), so messages crossing it never arrive; give a rate > 0 to model a degraded link",
                nanos_to_seconds(*at)
            ),
        ),
        None => Error::invalid("strategy", STALLED),
    }
}

/// What a run that stalls with no link down reports (a bug of the engine).
pub(super) const STALLED: &str =
    "the simulation stalled before every iteration completed (internal error; please report)";
