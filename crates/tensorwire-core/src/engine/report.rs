//! What a run measured ([`Measured`], [`EndSnapshot`]) and how it becomes the
//! [`Report`] (`build_report`): the steady state between two iteration ends.

use super::interference::Added;
use super::state::{SimState, TimedPick};
use super::{ComputeSpan, Scenario};
use crate::metrics::{NcclUse, Report, Span, SpanKind};
use crate::units::{nanos_to_seconds, Nanos};

/// What an event loop measured, turned into a [`Report`] by [`build_report`].
#[derive(Default)]
pub(crate) struct Measured {
    /// When each iteration completed on every worker, ns.
    pub completions: Vec<Nanos>,
    /// Rank 0's host's communication busy time when the first iteration completed, ns.
    pub busy_at_first: Nanos,
    /// Bytes every link had carried then.
    pub link_bytes_at_first: Vec<f64>,
    /// Bytes rank 0's host had sent then.
    pub sent_at_first: f64,
    /// Compute time interference had added to rank 0 at the first and at the last measured
    /// completion of every worker, ns (`interference::Added`).
    pub interference: [Nanos; 2],
    /// Rank 0's (communication busy time ns, bytes sent) at its own first completion
    /// ((0, 0) with one iteration) and at its last: when given, the report's
    /// communication time and bytes sent per iteration are rank 0's over its own measured
    /// iterations (exact whatever the other workers' pace), not over the window between
    /// completions of every worker.
    pub rank0: Option<((Nanos, f64), (Nanos, f64))>,
    /// What the job had done at its last measured completion, when it went on running
    /// past it (multi-job runs); `None`: the run ended there, and the core has it.
    pub at_end: Option<EndSnapshot>,
    /// Link utilisation from the bytes of every iteration (a run alone: each iteration
    /// moves the same bytes, so a link's share does not depend on where the window cuts
    /// the workers' skewed iterations); else from the bytes in the window.
    pub links_per_iteration: bool,
    /// Iterations the run completed in all (with `links_per_iteration`): more than the
    /// measured ones where it went on to complete those it started beyond them
    /// (`iterations_beyond`); a link's bytes per iteration are then the whole run's over
    /// these, the bytes at the last measured completion holding part of the next iteration.
    pub iterations_run: u32,
    /// Collectives timed in closed form (`timed.rs`): no link carried a flow, so the
    /// report gives no link utilisation (an empty list, not every link at 0).
    pub flowless: bool,
    /// Compute spans, when recording.
    pub compute_spans: Option<Vec<ComputeSpan>>,
    /// Events processed.
    pub events: u64,
    /// Ranks whose network part was simulated (see [`Report::simulated_ranks`]).
    pub simulated_ranks: usize,
    /// The job measured (multi-job runs; 0 otherwise).
    pub job: usize,
    /// Iterations completed on every worker so far, measured or not.
    pub completed_all: u32,
    /// When the job completed the last iteration it runs (its `limit`), where that is past
    /// its measured ones (a multi-job run's background load stops there), ns.
    pub stopped_at: Option<Nanos>,
}

/// A job's counters at its last measured completion: a job of a multi-job run goes on
/// as background load for the others after it, and its report stops there.
pub(crate) struct EndSnapshot {
    /// Rank 0's host's communication busy time, ns.
    busy: Nanos,
    /// Bytes rank 0's host had sent.
    sent: f64,
    /// Flows the job had started.
    flows: u64,
    /// Bytes every link had carried.
    link_bytes: Vec<f64>,
}

impl EndSnapshot {
    fn take(core: &mut SimState, job: usize) -> Self {
        let w = core.watched_host(job);
        let (busy, sent, flows) = (core.comm_busy_of(job), w.sent, w.flows);
        EndSnapshot { busy, sent, flows, link_bytes: core.net.link_bytes(core.now).to_vec() }
    }
}

impl Measured {
    /// Every rank has completed one more iteration now: counted while fewer than
    /// `measured` are, with the counters the window starts from at the first and, for a
    /// job that goes on past its `measured` iterations (`limit` more), those it ends at;
    /// `added`: the compute time interference has added to rank 0 so far.
    pub(super) fn iteration_completed(&mut self, core: &mut SimState, measured: u32, limit: u32, added: Added) {
        self.completed_all += 1;
        if self.completed_all == limit && limit > measured {
            self.stopped_at = Some(core.now);
        }
        if self.completions.len() >= measured as usize {
            return;
        }
        self.completions.push(core.now);
        if self.completions.len() == measured as usize {
            self.interference[1] = added.0;
        }
        if self.completions.len() == 1 && measured > 1 {
            self.interference[0] = added.0;
            self.busy_at_first = core.comm_busy_of(self.job);
            self.sent_at_first = core.watched_host(self.job).sent;
            self.link_bytes_at_first = core.net.link_bytes(core.now).to_vec();
        }
        if self.completions.len() == measured as usize && limit > measured {
            self.at_end = Some(EndSnapshot::take(core, self.job));
        }
    }

    /// The steady-state window: from the first completion to the last (from 0 with one
    /// iteration), ns.
    pub(super) fn window(&self) -> (Nanos, Nanos) {
        let k = self.completions.len();
        if k > 1 {
            (self.completions[0], self.completions[k - 1])
        } else {
            (0, self.completions[0])
        }
    }
}

/// The report of a run: steady-state times, link utilisation (folded runs: every link of
/// an orbit carries what its representatives carried), bytes sent per worker, timeline.
pub(crate) fn build_report(sc: &Scenario, core: &mut SimState, m: Measured) -> Report {
    let n = sc.workers;
    let k = m.completions.len();
    let (start, end) = m.window();
    let periods = if k > 1 { (k - 1) as f64 } else { 1.0 };
    let window = end - start;
    let iteration_time = nanos_to_seconds(window) / periods;
    let compute = nanos_to_seconds(sc.workload.compute_time());
    let samples = n as f64 * sc.workload.batch_size as f64;
    let interference = nanos_to_seconds(m.interference[1].saturating_sub(m.interference[0])) / periods;
    // The job's counters where its measured iterations ended.
    let (busy_end, sent_end, flows, bytes_end) = match m.at_end {
        Some(e) => (e.busy, e.sent, e.flows, e.link_bytes),
        None => {
            let w = core.watched_host(m.job);
            let (busy, sent, flows) = (core.comm_busy_of(m.job), w.sent, w.flows);
            (busy, sent, flows, core.net.link_bytes(core.now).to_vec())
        }
    };
    let (comm, sent) = match m.rank0 {
        Some(((busy0, sent0), (busy1, sent1))) => {
            (nanos_to_seconds(busy1 - busy0) / periods, (sent1 - sent0) / periods)
        }
        None => (
            nanos_to_seconds(busy_end - if k > 1 { m.busy_at_first } else { 0 }) / periods,
            (sent_end - if k > 1 { m.sent_at_first } else { 0.0 }) / periods,
        ),
    };
    let first = &m.link_bytes_at_first;
    let topo = &core.topo;
    // Per link: bytes of one window's worth of iterations (`periods` of them).
    let ran = m.iterations_run as usize;
    let delta: Vec<f64> = if m.links_per_iteration && ran > k {
        core.net.link_bytes(core.now).iter().map(|&b| b / ran as f64 * periods).collect()
    } else if m.links_per_iteration && k > 1 {
        bytes_end.iter().map(|&b| b / k as f64 * periods).collect()
    } else {
        bytes_end.iter().enumerate().map(|(l, &b)| b - first.get(l).copied().unwrap_or(0.0)).collect()
    };
    let mut orbit_total = [0.0f64; 2];
    if core.folded {
        for (l, d) in delta.iter().enumerate() {
            if let Some(o) = topo.rank_orbit(l, n) {
                orbit_total[o] += d;
            }
        }
    }
    let links = if m.flowless { 0 } else { topo.links().len() };
    let contention_free = core.net.contention_free();
    let link_utilization = (0..links)
        .map(|l| {
            let bytes = match (core.folded, topo.rank_orbit(l, n), &core.link_fold) {
                (true, Some(o), _) => orbit_total[o],
                // Digit folding: every link of an orbit carries what its representative carried.
                (_, _, Some(fold)) => delta[fold[l].0],
                _ => delta[l],
            };
            // At the rates failures gave the link, when they did. The analytical model times
            // every flow as if alone, so its links may carry more than they can: kept above 1
            // there (the load over the capacity), the sign of the contention it ignores.
            let capacity = core.capacity_over(l, start, end);
            let load = if capacity > 0.0 { bytes / capacity } else { 0.0 };
            (topo.link_name(l), if contention_free { load } else { load.min(1.0) })
        })
        .collect();
    // One iteration: a period from one completion of every worker to the next (from 0 with
    // one iteration), spans clipped to it. Workers that run ahead (parameter servers: the
    // next forward pass starts while the previous distribution is still going on) overlap
    // two iterations; every span overlapping the period would show parts of three (17 s for
    // an 11.3 s iteration). The period is the last but one where there is one after the
    // warm-up: the last holds no forward pass of those workers, since the iteration that
    // would start it within the period is not run (a ps trace showed 64 of 96 ms of compute).
    let (from, end) = if k > 2 {
        (m.completions[k - 3], m.completions[k - 2])
    } else {
        (if k > 1 { m.completions[k - 2] } else { 0 }, end)
    };
    let clip = |start: Nanos, stop: Nanos| (nanos_to_seconds(start.max(from)), nanos_to_seconds(stop.min(end)));
    let mut timeline = Vec::new();
    if let Some(spans) = m.compute_spans {
        for (rank, layer, backward, start, stop) in spans.into_iter().filter(|s| s.4 > from && s.3 < end) {
            let (start_s, end_s) = clip(start, stop);
            timeline.push(Span {
                kind: if backward { SpanKind::Backward } else { SpanKind::Forward },
                host: rank,
                to: Vec::new(),
                label: sc.workload.layers[layer].name.clone(),
                links: Vec::new(),
                start_s,
                end_s,
                bytes: 0.0,
                nccl: None,
            });
        }
    }
    if let Some(flows) = core.recorded.take() {
        for (start, stop, src, to, bytes, links, label) in flows.into_iter().filter(|f| f.1 > from && f.0 < end) {
            let (start_s, end_s) = clip(start, stop);
            timeline.push(Span {
                kind: SpanKind::Flow,
                host: src,
                to,
                label: label.to_string(),
                links: links.iter().map(|&l| topo.link_name(l)).collect(),
                start_s,
                end_s,
                bytes,
                nccl: None,
            });
        }
    }
    // Timed collectives, one span per simulated rank (no link: no flow ran).
    if let Some(ops) = core.recorded_timed.take() {
        for (start, stop, rank, (pick, size)) in ops.into_iter().filter(|o| o.1 > from && o.0 < end) {
            let (start_s, end_s) = clip(start, stop);
            timeline.push(Span {
                kind: SpanKind::Collective,
                host: rank,
                to: Vec::new(),
                label: pick.collective.to_string(),
                links: Vec::new(),
                start_s,
                end_s,
                bytes: size,
                nccl: Some(pick),
            });
        }
    }
    let nccl_choices = nccl_choices(&core.watched_host(m.job).timed_picks, from, end);
    timeline.sort_by(|a, b| a.start_s.total_cmp(&b.start_s).then(a.host.cmp(&b.host)));
    let mut report = Report {
        iteration_time_s: iteration_time,
        completions_s: m.completions.iter().map(|&c| nanos_to_seconds(c)).collect(),
        throughput_samples_per_s: 0.0,
        scaling_factor: 1.0,
        ideal_samples_per_s: if compute > 0.0 { samples / compute } else { f64::INFINITY },
        compute_time_s: compute,
        compute_interference_s: interference,
        comm_time_s: comm,
        exposed_comm_s: 0.0,
        gradient_bytes_per_worker: sc.workload.total_bytes() as f64
            * sc.strategy.gradient_dtype_factor(sc.workload.dtype_bytes),
        sent_bytes_per_worker: sent,
        link_utilization,
        events: m.events,
        flows,
        folded: core.folded || core.link_fold.is_some(),
        simulated_ranks: m.simulated_ranks,
        failures_applied: core.failures.applied.len(),
        failures_unreached: core.failures.unreached(),
        network_model: core.net.name().to_string(),
        nap: None,
        timeline,
        nccl_choices,
        background_stopped_s: None,
    };
    report.set_iteration_time(iteration_time, samples / iteration_time);
    report
}

/// An (algorithm, protocol) and the time, s, it saves over some collectives.
type Saving = ((&'static str, &'static str), f64);

/// What NCCL chose for the collectives of `picks` that started in `[from, end)`: one entry
/// per choice with their count, bytes and times (NCCL's and the fastest pair's), the most
/// used first (ties in the order of the choice's first use). An entry's `faster` is the pair
/// that saves the most time over its collectives (ties to the first seen).
fn nccl_choices(picks: &[TimedPick], from: Nanos, end: Nanos) -> Vec<NcclUse> {
    // Per use: the time each faster pair saves over its collectives.
    let mut uses: Vec<(NcclUse, Vec<Saving>)> = Vec::new();
    for p in picks.iter().filter(|p| p.at >= from && p.at < end) {
        let seconds = nanos_to_seconds(p.ns);
        let fastest = p.faster.map_or(seconds, |f| nanos_to_seconds(f.2));
        let i = match uses.iter().position(|u| u.0.pick == p.pick) {
            Some(i) => i,
            None => {
                let empty =
                    NcclUse { pick: p.pick, count: 0, bytes: 0.0, seconds: 0.0, fastest_seconds: 0.0, faster: None };
                uses.push((empty, Vec::new()));
                uses.len() - 1
            }
        };
        let (u, savings) = &mut uses[i];
        u.count += 1;
        u.bytes += p.size;
        u.seconds += seconds;
        u.fastest_seconds += fastest;
        if let Some((algo, proto, _)) = p.faster {
            match savings.iter_mut().find(|s| s.0 == (algo, proto)) {
                Some(s) => s.1 += seconds - fastest,
                None => savings.push(((algo, proto), seconds - fastest)),
            }
        }
    }
    let mut out: Vec<NcclUse> = uses
        .into_iter()
        .map(|(mut u, savings)| {
            let most = savings.iter().fold(None::<Saving>, |best, &s| match best {
                Some(b) if b.1 >= s.1 => Some(b),
                _ => Some(s),
            });
            u.faster = most.map(|m| m.0);
            u
        })
        .collect();
    // Stable: equal counts keep the order of first use.
    out.sort_by_key(|u| std::cmp::Reverse(u.count));
    out
}
