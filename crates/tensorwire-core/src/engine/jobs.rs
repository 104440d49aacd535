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
use crate::topology::{placement, TopologySpec};
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

/// What placing a job on a fabric needs: its name, its ranks and its fixed hosts, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSeat<'a> {
    /// The job's name (unique in a run: placements and reports name jobs by it).
    pub name: &'a str,
    /// Its ranks.
    pub workers: usize,
    /// Hosts of its ranks, if fixed (one per rank).
    pub hosts: Option<&'a [usize]>,
}

impl<'a> From<&'a Job> for JobSeat<'a> {
    fn from(job: &'a Job) -> Self {
        JobSeat { name: &job.name, workers: job.workers, hosts: job.hosts.as_deref() }
    }
}

/// The hosts of each job's ranks on a fabric of `hosts` hosts of `topology` (see
/// [`simulate_jobs`]): a job's own hosts where given, else the next free hosts in the
/// order of placement `placement_kind` (`packed`, `spread`, `random` with `seed`), job
/// after job. Refuses, naming the field: no jobs, a job without a name or workers, two
/// jobs of one name, more workers than hosts (`workers`), and fixed hosts that are not one
/// per rank, outside the fabric or given twice (`jobs[i].hosts`).
pub fn place_jobs(
    topology: &TopologySpec,
    hosts: usize,
    placement_kind: &str,
    seed: u64,
    jobs: &[JobSeat<'_>],
) -> Result<Vec<Vec<usize>>> {
    check_seats(jobs, hosts)?;
    let order = placement(placement_kind, &topology.build(hosts, 0, 1e9, 0).layout(hosts), seed)?;
    // Owner (job index) of each fixed host.
    let mut owner: Vec<Option<usize>> = vec![None; hosts];
    for (i, job) in jobs.iter().enumerate() {
        for &h in job.hosts.unwrap_or(&[]) {
            let field = || format!("jobs[{i}].hosts");
            let name = job.name;
            match owner.get(h).copied() {
                None => {
                    return Err(Error::invalid(
                        field(),
                        format!("host {h} of job {name:?} is outside the fabric: its hosts are 0 to {}", hosts - 1),
                    ))
                }
                Some(Some(j)) if j == i => {
                    return Err(Error::invalid(field(), format!("host {h} is given twice to job {name:?}")))
                }
                Some(Some(j)) => {
                    return Err(Error::invalid(
                        field(),
                        format!("host {h} of job {name:?} is also job {:?}'s; jobs cannot share a host", jobs[j].name),
                    ))
                }
                Some(None) => owner[h] = Some(i),
            }
        }
    }
    // Every job's ranks fit (checked above), so the free hosts suffice.
    let mut free = order.into_iter().filter(|&h| owner[h].is_none());
    Ok(jobs
        .iter()
        .map(|job| match job.hosts {
            Some(h) => h.to_vec(),
            None => free.by_ref().take(job.workers).collect(),
        })
        .collect())
}

/// The checks of [`place_jobs`] that need no topology: names, workers, fixed hosts' count.
fn check_seats(jobs: &[JobSeat<'_>], hosts: usize) -> Result<()> {
    if jobs.is_empty() {
        return Err(Error::invalid("jobs", "give at least one job"));
    }
    for (i, job) in jobs.iter().enumerate() {
        if job.name.is_empty() {
            return Err(Error::invalid(format!("jobs[{i}].name"), "give each job a name"));
        }
        if let Some(j) = jobs[..i].iter().position(|o| o.name == job.name) {
            return Err(Error::invalid(
                format!("jobs[{i}].name"),
                format!("{:?} is also the name of jobs[{j}]; give each job its own name", job.name),
            ));
        }
        if job.workers < 1 {
            return Err(Error::invalid(format!("jobs[{i}].workers"), "0 is not allowed; need at least 1"));
        }
        if let Some(h) = job.hosts.filter(|h| h.len() != job.workers) {
            return Err(Error::invalid(
                format!("jobs[{i}].hosts"),
                format!(
                    "job {:?} gives {} hosts for {} workers; give one host per worker",
                    job.name,
                    h.len(),
                    job.workers
                ),
            ));
        }
    }
    let needed: usize = jobs.iter().map(|j| j.workers).sum();
    if needed > hosts {
        let each: Vec<String> = jobs.iter().map(|j| format!("{} {}", j.name, j.workers)).collect();
        return Err(Error::invalid(
            "workers",
            format!(
                "the fabric has {hosts} hosts but the jobs need {needed} workers ({}); give at least {needed} hosts, or smaller jobs",
                each.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Simulates `jobs` together on the fabric of `fabric` (its `workers` are the fabric's
/// hosts; its topology, rates, latency, network model, iterations, seed, variability,
/// transport and failures apply to every job; its workload and strategy are not used),
/// ranks placed by [`place_jobs`]. One report per job, in order. A failure timed after the
/// last job ended is refused (see [`Scenario::allow_failures_after_end`]).
pub fn simulate_jobs(fabric: &Scenario, jobs: &[Job], placement_kind: &str) -> Result<Vec<Report>> {
    let seats: Vec<JobSeat<'_>> = jobs.iter().map(JobSeat::from).collect();
    let hosts_of = place_jobs(&fabric.topology, fabric.workers, placement_kind, fabric.seed, &seats)?;
    let latency = seconds_to_nanos("latency", fabric.latency)?;
    let topo = fabric.topology.build(fabric.workers, 0, fabric.bandwidth, latency);
    let mut placed = Vec::with_capacity(jobs.len());
    for (i, (job, hosts_of_job)) in jobs.iter().zip(hosts_of).enumerate() {
        placed.push((job_scenario(fabric, job, i)?, hosts_of_job));
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
