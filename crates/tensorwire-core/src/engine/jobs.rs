//! Several jobs on one fabric: each its own workload, workers and strategy, placed on the
//! fabric's hosts, sharing its links (max-min), each with its own report.
//!
//! Every job runs as a stream program (`program.rs`) on one shared core, with one event
//! loop handing each flow event to the job that started the flow ([`program::drive`]):
//! sharded strategies as they always run, all-reduce strategies as DDP runs them (after
//! each layer's backward pass one all-reduce per gradient tensor, one at a time in order,
//! the next forward pass after the last; the same timing as the gradient scheduler's
//! default, tested). Parameter servers and the scheduler's options (partition, priority,
//! credit, fusion, partial, dispatch, streams) are refused in multi-job runs. Jobs sharing
//! a fabric are never folded. A job's report is about its own ranks (iteration time, rank
//! 0's communication, bytes, flows); link utilisation is the whole fabric's.

use super::core::Core;
use super::program::{self, Instr, Program, Runner};
use super::step::{StepCollective, StepSettings};
use super::{allreduce_schedule, build_core, build_report, sharded, variability, Scenario};
use crate::error::{Error, Result};
use crate::metrics::Report;
use crate::sched::Policy;
use crate::strategy::{Family, Stage, Strategy};
use crate::topology::placement;
use crate::units::seconds_to_nanos;
use crate::workload::Workload;

/// One job of a multi-job run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Its name in reports and errors.
    pub name: String,
    /// The model.
    pub workload: Workload,
    /// Its ranks.
    pub workers: usize,
    /// How it synchronises.
    pub strategy: Strategy,
    /// Hosts of its ranks, if fixed; `None`: the run's placement decides.
    pub hosts: Option<Vec<usize>>,
}

/// Simulates `jobs` together on the fabric of `fabric` (its `workers` are the fabric's
/// hosts; its topology, rates, latency, network model, iterations, seed, variability,
/// transport and failures apply to every job; its workload and strategy are not used),
/// ranks placed by `placement` (`packed`, `spread`, `random`: consecutive slices of the
/// placement's host order, job after job). One report per job, in order. A failure timed
/// after the last job ended is refused (see [`Scenario::allow_failures_after_end`]).
pub fn simulate_jobs(fabric: &Scenario, jobs: &[Job], placement_kind: &str) -> Result<Vec<Report>> {
    if jobs.is_empty() {
        return Err(Error::invalid("jobs", "give at least one job"));
    }
    let hosts = fabric.workers;
    let needed: usize = jobs.iter().map(|j| j.workers).sum();
    if needed > hosts {
        return Err(Error::invalid(
            "jobs",
            format!("the jobs need {needed} workers but the fabric has {hosts} hosts; add hosts (--workers) or shrink the jobs"),
        ));
    }
    let latency = seconds_to_nanos("latency", fabric.latency)?;
    let topo = fabric.topology.build(hosts, 0, fabric.bandwidth, latency);
    let order = placement(placement_kind, &topo.layout(hosts), fabric.seed)?;
    let mut taken = vec![false; hosts];
    for (i, job) in jobs.iter().enumerate() {
        for &h in job.hosts.iter().flatten() {
            if h >= hosts || std::mem::replace(&mut taken[h], true) {
                return Err(Error::invalid(
                    format!("jobs[{i}].hosts"),
                    format!("host {h} is outside the fabric (0..{hosts}) or taken by another job"),
                ));
            }
        }
    }
    let mut free = order.into_iter().filter(|&h| !taken[h]);
    let mut placed = Vec::with_capacity(jobs.len());
    for (i, job) in jobs.iter().enumerate() {
        let scenario = job_scenario(fabric, job, i)?;
        let hosts_of_job: Vec<usize> = match &job.hosts {
            Some(h) if h.len() == job.workers => h.clone(),
            Some(h) => {
                return Err(Error::invalid(
                    format!("jobs[{i}].hosts"),
                    format!("gives {} hosts for {} workers", h.len(), job.workers),
                ))
            }
            None => free.by_ref().take(job.workers).collect(),
        };
        placed.push((scenario, hosts_of_job));
    }
    let mut core: Core = build_core(fabric, topo, false)?;
    core.set_first_job_host(placed[0].1[0]);
    let mut runners = Vec::with_capacity(jobs.len());
    for (i, (sc, hosts_of_job)) in placed.iter().enumerate() {
        if i > 0 {
            core.add_job(hosts_of_job[0]);
        }
        let (program, exec) = job_program(sc, &core, i)?;
        let sampler = variability::Sampler::new(sc.variability.clone(), sc.workers, fabric.seed.wrapping_add(i as u64));
        runners.push(Runner::new(sc, program, sc.workers, i, exec.with_hosts(hosts_of_job.clone()), sampler));
    }
    program::drive(fabric, &mut runners, &mut core)?;
    let measured: Vec<_> = runners.into_iter().map(Runner::into_measured).collect();
    let reports: Vec<Report> =
        measured.into_iter().zip(&placed).map(|(m, (sc, _))| build_report(sc, &mut core, m)).collect();
    super::failures::refuse_after_end(fabric, &reports)?;
    Ok(reports)
}

/// The scenario of job `i` on `fabric`, validated.
fn job_scenario(fabric: &Scenario, job: &Job, i: usize) -> Result<Scenario> {
    let sc = Scenario {
        workload: job.workload.clone(),
        workers: job.workers,
        strategy: job.strategy.clone(),
        rank_to_host: None,
        allow_folding: false,
        ..fabric.clone()
    };
    sc.validate().map_err(|e| e.within(&format!("jobs[{i}]")))?;
    Ok(sc)
}

/// Job `i`'s program and collective executor.
fn job_program(sc: &Scenario, core: &Core, i: usize) -> Result<(Program, StepCollective)> {
    let n = sc.workers;
    let strategy = &sc.strategy;
    let refuse = |why: &str| Error::invalid(format!("jobs[{i}].strategy"), format!("{}: {why}", strategy.spec));
    match &strategy.family {
        Family::Sharded(cfg) => {
            let group = match cfg.stage {
                Stage::Hsdp => {
                    let g = cfg.shard_group.unwrap_or(8.min(n));
                    sharded::check_group(g, n)?;
                    g
                }
                _ => n,
            };
            // A job's ranks are a part of the fabric: its collectives use flat rings
            // (the fabric's levels describe all of its hosts, not this job's).
            let topo = crate::topology::TopologySpec::parse("star")?.build(n, 0, 1e9, 0);
            let schedules = sharded::schedules(cfg, &topo, n, group);
            let program =
                sharded::program(&sc.workload, cfg, sharded::WireFactors::of(strategy, &sc.workload), group, n);
            Ok((program, StepCollective::with_schedules(schedules, settings(sc), n, false, None)))
        }
        Family::AllReduce(_) => {
            let plain = strategy.policy == Policy::Fifo
                && strategy.partition.is_none()
                && strategy.fusion.is_none()
                && strategy.limits.credit_bytes.is_none()
                && strategy.limits.max_tasks == Some(1)
                && strategy.partial.is_none()
                && strategy.dispatch_s == 0.0
                && !strategy.stream;
            if !plain {
                return Err(refuse(
                    "multi-job runs take all-reduce strategies without partition, schedule, credit, inflight, fusion, partial, dispatch or execution options, and the sharded strategies",
                ));
            }
            let schedule = allreduce_schedule(sc, n, &core.topo)?.expect("an all-reduce has a schedule");
            let wire = sharded::WireFactors::of(strategy, &sc.workload).grads;
            Ok((ddp_program(&sc.workload, wire), StepCollective::new(schedule, settings(sc), n, false, None)))
        }
        Family::ParameterServer(_) => Err(refuse(
            "parameter servers cannot share a fabric with other jobs yet; use an all-reduce or sharded strategy",
        )),
    }
}

fn settings(sc: &Scenario) -> StepSettings {
    StepSettings {
        wire_factor: 1.0,
        reduce_ns_per_byte: sc.strategy.reduce_bytes_per_s.map_or(0.0, |r| 1e9 / r),
        pipeline_bytes: sc.strategy.pipeline_chunk,
        max_pipeline: 256,
    }
}

/// DDP as a program: forward; backward, with one all-reduce per gradient tensor (in the
/// order they are produced: layers reversed, a layer's tensors reversed) issued after its
/// layer's backward, one at a time; the next forward pass after the last one.
pub(super) fn ddp_program(workload: &Workload, wire_factor: f64) -> Program {
    let mut p = Program { streams: 1, ..Program::default() };
    let layers = workload.layers.len();
    p.instrs.extend((0..layers).map(|layer| Instr::Compute { layer, backward: false }));
    let mut issued = Vec::new();
    for layer in (0..layers).rev() {
        p.instrs.push(Instr::Compute { layer, backward: true });
        for t in workload.tensors.iter().rev().filter(|t| t.layer == layer) {
            issued.push(p.issue(0, (t.bytes as f64 * wire_factor).round() as u64, 0));
        }
    }
    p.instrs.extend(issued.iter().map(|&c| Instr::Wait(c)));
    p
}
