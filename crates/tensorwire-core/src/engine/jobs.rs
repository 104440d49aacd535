//! Several jobs on one fabric: each its own workload, workers and strategy, placed on the
//! fabric's hosts, sharing its links (max-min), each with its own report.
//!
//! Every job runs on one shared core as it would alone, with one event loop handing each
//! flow event to the job that started the flow (`driver::drive`): sharded strategies as
//! stream programs (`program.rs`) on flows (without `comm=`; an explicit
//! `compute_slowdown` applies), all-reduce and parameter-server strategies in the
//! gradient-scheduling engine with all their options.
//!
//! Jobs timed by NCCL's model (`nccl`, `ddp`, sharded with `comm=nccl`: `timed`) put no
//! flows on the links, so the other jobs would not see their traffic, nor they the
//! others'. They run (as alone: the engine's timed collectives, or a stream program on
//! NCCL's times) only where that is exact: where no link that two jobs' traffic could
//! cross can be loaded past its capacity (`topology::contention`, with timed jobs'
//! traffic rail-aligned as NCCL's channels are: within one rail group it crosses no spine
//! link), so that no job can slow another in the network model; elsewhere they are
//! refused naming the links.
//!
//! A parameter-server job's servers take hosts of the fabric of their own, after its
//! workers' (`JobSeat::servers`). Jobs sharing a fabric are never folded. A job's report
//! is about its own ranks (iteration time, rank 0's communication, bytes, flows); link
//! utilisation is the whole fabric's.
//!
//! Every job is measured over its own first `iterations` iterations, with the others
//! running beside it the whole time: a job that has finished them goes on iterating as
//! background load until every job has (so a job's slowdown does not depend on how many
//! iterations are simulated, nor on which job is the longer). Each job runs at most
//! [`BACKGROUND_FACTOR`] times its measured iterations, which bounds the run whatever the
//! jobs' paces (every job completes an iteration in finite time on its own).

use super::driver::{self, SimulatedJob};
use super::interference::Interference;
use super::program::Runner;
use super::state::SimState;
use super::step::{StepCollective, StepSettings};
use super::{
    allreduce_schedule, build_core, check, estimate, sharded, variability, Engine, Folding, JobHosts, Scenario,
};
use crate::error::{Error, Result};
use crate::metrics::Report;
use crate::network::ModelKind;
use crate::strategy::{Comm, Family, ShardedConfig, Strategy};
use crate::topology::{placement, TopologySpec, Traffic};
use crate::units::{nanos_to_seconds, seconds_to_nanos, Nanos};
use crate::workload::Workload;

/// A job of a multi-job run runs at most this many times the measured iterations (the
/// rest as background load for the jobs still measuring). A job more than this many times
/// faster than another stops before the slower one's measured iterations end, which then
/// see less load than a job running on would give them (the slower job's report says when:
/// [`Report::background_stopped_s`]); the bound keeps the work of a run within this factor
/// of the measured iterations' own (flows count against the budget as they start, so a
/// background job on flows is refused by it before the bound where the budget is smaller;
/// a job timed by NCCL's model, which starts no flow, costs a few events per collective).
/// At 16 a job 24 times faster than another, stopped at 16, made the other's slowdown
/// read 1.42x where running on gives 1.83x.
pub const BACKGROUND_FACTOR: u32 = 64;

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
    /// Hosts of its ranks, then of its parameter servers, if fixed; `None`: the run's
    /// placement decides.
    pub hosts: Option<Vec<usize>>,
}

/// What placing a job on a fabric needs: its name, its ranks and its fixed hosts, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSeat<'a> {
    /// The job's name (unique in a run: placements and reports name jobs by it).
    pub name: &'a str,
    /// Its ranks.
    pub workers: usize,
    /// Its parameter servers, each on a host of its own (0 for the other strategies).
    pub servers: usize,
    /// Hosts of its ranks, then of its servers, if fixed (one each).
    pub hosts: Option<&'a [usize]>,
}

impl JobSeat<'_> {
    /// Hosts the job takes: one per rank and one per server.
    pub fn hosts_needed(&self) -> usize {
        self.workers + self.servers
    }
}

impl<'a> From<&'a Job> for JobSeat<'a> {
    fn from(job: &'a Job) -> Self {
        JobSeat { name: &job.name, workers: job.workers, servers: job.strategy.servers(), hosts: job.hosts.as_deref() }
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
    let order = placement(placement_kind, &topology.build(hosts, 0, 1e9, 0)?.layout(hosts), seed)?;
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
            None => free.by_ref().take(job.hosts_needed()).collect(),
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
        if let Some(h) = job.hosts.filter(|h| h.len() != job.hosts_needed()) {
            let (given, name) = (h.len(), job.name);
            let why = match job.servers {
                0 => format!("job {name:?} gives {given} hosts for {} workers; give one host per worker", job.workers),
                p => format!(
                    "job {name:?} gives {given} hosts for {} workers and {p} servers; give one host per worker, then one per server",
                    job.workers
                ),
            };
            return Err(Error::invalid(format!("jobs[{i}].hosts"), why));
        }
    }
    let needed: usize = jobs.iter().map(JobSeat::hosts_needed).sum();
    if needed > hosts {
        // "workers" while no job has servers; "hosts" (workers + servers) once one has.
        let servers = jobs.iter().any(|j| j.servers > 0);
        let each: Vec<String> = jobs
            .iter()
            .map(|j| match (servers, j.servers) {
                (false, _) => format!("{} {}", j.name, j.workers),
                (true, 0) => format!("{} {} workers", j.name, j.workers),
                (true, p) => format!("{} {} workers + {p} servers", j.name, j.workers),
            })
            .collect();
        let unit = if servers { "hosts" } else { "workers" };
        return Err(Error::invalid(
            "workers",
            format!(
                "the fabric has {hosts} hosts but the jobs need {needed} {unit} ({}); give at least {needed} hosts, or smaller jobs",
                each.join(", ")
            ),
        ));
    }
    Ok(())
}

/// Simulates `jobs` together on the fabric of `fabric` (its `workers` are the fabric's
/// hosts; its topology, rates, latency, network model, iterations, seed, variability,
/// transport and failures apply to every job; its workload and strategy are not used),
/// ranks placed by [`place_jobs`]. One report per job, in order, each over the job's own
/// first `iterations` iterations, the other jobs running beside them all along (see the
/// module doc). A failure timed after the last job ended is refused (see
/// [`Scenario::allow_failures_after_end`]).
pub fn simulate_jobs(fabric: &Scenario, jobs: &[Job], placement_kind: &str) -> Result<Vec<Report>> {
    let seats: Vec<JobSeat<'_>> = jobs.iter().map(JobSeat::from).collect();
    let hosts_of = place_jobs(&fabric.topology, fabric.workers, placement_kind, fabric.seed, &seats)?;
    let latency = seconds_to_nanos("latency", fabric.latency)?;
    let topo = fabric.topology.build(fabric.workers, 0, fabric.bandwidth, latency)?;
    let placed: Vec<(Scenario, Vec<usize>)> = jobs
        .iter()
        .zip(hosts_of)
        .enumerate()
        .map(|(i, (job, hosts))| Ok((job_scenario(fabric, job, i)?, hosts)))
        .collect::<Result<_>>()?;
    check_timed(fabric, jobs, &placed, &topo)?;
    let mut core: SimState = build_core(fabric, topo, false)?;
    core.set_first_job_host(placed[0].1[0]);
    let mut sims: Vec<Box<dyn SimulatedJob + '_>> = Vec::with_capacity(jobs.len());
    let mut work = Vec::with_capacity(jobs.len());
    for (i, (sc, hosts)) in placed.iter().enumerate() {
        if i > 0 {
            core.add_job(hosts[0]);
        }
        // Alone, a job runs its own iterations; beside others, on past them as their load.
        let limit = if jobs.len() > 1 { sc.iterations.saturating_mul(BACKGROUND_FACTOR) } else { sc.iterations };
        let (sim, w) = job_sim(sc, &mut core, i, hosts, limit).map_err(|e| in_job(e, i))?;
        sims.push(sim);
        work.push((jobs[i].name.as_str(), w));
    }
    // Up front: every job's measured iterations, as a run of it alone is estimated; the
    // running check counts the background iterations too.
    estimate::check_jobs(fabric, &work)?;
    let mut each: Vec<&mut dyn SimulatedJob> = sims.iter_mut().map(|s| &mut **s as &mut dyn SimulatedJob).collect();
    let ran = driver::drive(fabric, &mut each, &mut core);
    drop(each);
    ran.map_err(|e| name_stranded(e, jobs, &sims, fabric.iterations))?;
    // Read before the reports, which take what the jobs measured.
    let stops: Vec<Option<Nanos>> = sims.iter().map(|s| s.stopped_at()).collect();
    let mut reports: Vec<Report> = sims.iter_mut().map(|s| s.report(&mut core)).collect();
    super::failures::refuse_after_end(fabric, &reports)?;
    mark_background_stopped(&mut reports, &stops);
    Ok(reports)
}

/// Sets each report's [`Report::background_stopped_s`]: the first time another job
/// stopped (`stops`, ns, per job) before the report's last measured completion.
fn mark_background_stopped(reports: &mut [Report], stops: &[Option<Nanos>]) {
    for (i, report) in reports.iter_mut().enumerate() {
        let Some(&end) = report.completions_s.last() else { continue };
        report.background_stopped_s = stops
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .filter_map(|(_, s)| s.map(nanos_to_seconds))
            .filter(|&s| s < end)
            .reduce(f64::min);
    }
}

/// The scenario of job `i` on `fabric`, validated (its own seed: the fabric's + `i`).
fn job_scenario(fabric: &Scenario, job: &Job, i: usize) -> Result<Scenario> {
    let sc = Scenario {
        workload: job.workload.clone(),
        workers: job.workers,
        strategy: job.strategy.clone(),
        rank_to_host: None,
        allow_folding: false,
        allow_lanes: false,
        seed: fabric.seed.wrapping_add(i as u64),
        ..fabric.clone()
    };
    sc.validate().map_err(|e| e.within(&format!("jobs[{i}]")))?;
    if timed(&sc.strategy) && !sc.failures.is_empty() {
        // As alone: the timed collectives have no links to fail.
        return Err(Error::invalid(
            "failures",
            format!(
                "job {:?} ({}) times its collectives with NCCL's model, without links to fail; simulate failures under ring, hierarchical or fsdp with comm=flows",
                job.name, sc.strategy.spec
            ),
        ));
    }
    Ok(sc)
}

/// Whether `strategy` times its collectives in closed form by NCCL's model, with no flow
/// on the links: `nccl`, `ddp`, and the sharded strategies with `comm=nccl` (without
/// `comm=`, sharded jobs run on flows in multi-job runs).
fn timed(strategy: &Strategy) -> bool {
    matches!(strategy.family, Family::Nccl(_) | Family::Sharded(ShardedConfig { comm: Some(Comm::Nccl), .. }))
}

/// Refuses a timed job (see [`timed`]) whose traffic could meet another job's on a link
/// beyond its capacity (`topology::contention`): its collectives put no flows on the
/// links, so neither would see the other's load. Where no such link exists, jobs cannot
/// slow each other in the network model, and the timed job is exact beside the others.
fn check_timed(
    fabric: &Scenario,
    jobs: &[Job],
    placed: &[(Scenario, Vec<usize>)],
    topo: &crate::topology::Topology,
) -> Result<()> {
    for (i, (job, (_, hosts))) in jobs.iter().zip(placed).enumerate() {
        if timed(&job.strategy) {
            check_timed_packed(job, hosts, topo.gpus_per_node()).map_err(|e| e.within(&format!("jobs[{i}]")))?;
        }
    }
    // The analytical model has no contention: no job ever slows another there.
    if jobs.len() < 2 || fabric.network == ModelKind::Analytical {
        return Ok(());
    }
    let hosts: Vec<Vec<usize>> = placed.iter().map(|(_, h)| h.clone()).collect();
    // NCCL's channels are rail-aligned (`Traffic::RailAligned`); flows go between any pair.
    let traffic: Vec<Traffic> =
        jobs.iter().map(|j| if timed(&j.strategy) { Traffic::RailAligned } else { Traffic::AnyPair }).collect();
    for (i, job) in jobs.iter().enumerate() {
        if !timed(&job.strategy) {
            continue;
        }
        if let Some(c) = crate::topology::contention(topo, &hosts, &traffic, i) {
            let gbps = |b: f64| b * 8.0 / 1e9;
            return Err(Error::invalid(
                format!("jobs[{i}].strategy"),
                format!(
                    "{} times collectives with NCCL's model, with no flows on the links, and its traffic could meet job {:?}'s on {} ({} Gbps each, less than the {} Gbps of the {} host links that can feed them); give each job links of its own (its own leaves or rail groups, machines of its own, or spine links that carry a leaf's hosts), or use a flow-level strategy (ring, hierarchical, fsdp with comm=flows)",
                    job.strategy.spec,
                    jobs[c.other].name,
                    c.links,
                    gbps(c.capacity_bytes_per_s),
                    gbps(c.feeders_bytes_per_s),
                    c.feeders
                ),
            ));
        }
    }
    Ok(())
}

/// A failure that strands some of the jobs names them: "the job cannot finish" of a run of
/// several did not say which (the others had finished their measured iterations).
fn name_stranded(e: Error, jobs: &[Job], sims: &[Box<dyn SimulatedJob + '_>], iterations: u32) -> Error {
    let text = e.to_string();
    let Some(at) = text.find(driver::STRANDED) else { return e };
    let stranded: Vec<String> = jobs
        .iter()
        .zip(sims)
        .filter(|(_, s)| s.completed() < iterations as usize)
        .map(|(j, _)| format!("{:?}", j.name))
        .collect();
    let who = match stranded.len() {
        0 => return e,
        1 => format!("job {} cannot finish", stranded[0]),
        _ => format!("jobs {} cannot finish", stranded.join(", ")),
    };
    let message = &text[at..];
    Error::invalid(e.field(), message.replacen(driver::STRANDED, &who, 1))
}

/// Refuses a timed job (see [`timed`]) on GPU nodes (`per_node` GPUs each) whose ranks do not
/// fill whole nodes in order, each from its first GPU (the last node may be partial), as
/// NCCL's communicators place them and as its model times them (`simulate` refuses any other
/// placement of these strategies): a job spread one GPU per node was timed as if packed on
/// one node (NVLS inside it, 4 ms for a 1 GiB all-reduce the same hosts took 38 ms for under
/// `ring`). Which nodes it fills is free (nodes 0 and 4: two nodes to NCCL's model; where
/// their traffic meets another job's is [`check_timed`]'s). On other fabrics every host is
/// alike to NCCL's model.
fn check_timed_packed(job: &Job, hosts: &[usize], per_node: Option<usize>) -> Result<()> {
    let Some(g) = per_node else { return Ok(()) };
    let fills = |node: &[usize]| node[0].is_multiple_of(g) && node.iter().enumerate().all(|(r, &h)| h == node[0] + r);
    if hosts.chunks(g).all(fills) {
        return Ok(());
    }
    let first = hosts.first().copied().unwrap_or(0);
    let start = first.div_ceil(g) * g;
    Err(Error::invalid(
        "hosts",
        format!(
            "job {name:?} ({spec}) times its collectives with NCCL's model, which places a node's GPUs together: give \
             it whole nodes in rank order, each from its first GPU ({g} per node: a multiple of {g}), e.g. --place {name}={start}-{}, \
             or use a flow-level strategy (ring, hierarchical, fsdp with comm=flows) for this placement",
            start + hosts.len() - 1,
            name = job.name,
            spec = job.strategy.spec,
        ),
    ))
}

/// An error while setting up job `i` names its field within the job (`jobs[i].strategy.credit`),
/// except the fabric's `topology`, which the job's strategy does not fit.
fn in_job(e: Error, i: usize) -> Error {
    match e.field() {
        "topology" => e,
        f if f.starts_with("jobs[") => e,
        _ => e.within(&format!("jobs[{i}]")),
    }
}

/// Job `i` of the run as the event loop drives it, its workers (then servers) on `hosts`,
/// with the work of its measured iterations as alone and unfolded (`estimate.rs`). It runs
/// `limit` iterations and measures the first `sc.iterations`.
fn job_sim<'a>(
    sc: &'a Scenario,
    core: &mut SimState,
    i: usize,
    hosts: &[usize],
    limit: u32,
) -> Result<(Box<dyn SimulatedJob + 'a>, estimate::Work)> {
    let n = sc.workers;
    let strategy = &sc.strategy;
    let sampler = || variability::Sampler::new(sc.variability.clone(), n, sc.seed);
    if let Family::Sharded(cfg) = &strategy.family {
        // As alone: the shard group, NCCL's fabrics (`comm=nccl`) and the levels that
        // `algorithm=auto`/`hierarchical` run over (flows) are those of the fabric's spec
        // built for the job's own ranks, as `simulate` of it alone takes them (and as the
        // all-reduce strategies' `hierarchical` does), its rank i on its hosts[i]. Flat rings
        // here ran 16 H100 of `rail:node=dgx-h100` through one NIC each (3.7 s against 1.2 s).
        let alone = sc.topology.build(n, 0, sc.bandwidth, 0)?;
        let group = sharded::shard_group(cfg, &alone, n)?;
        if cfg.comm == Some(Comm::Nccl) {
            // Every collective timed, no flow; timed collectives count nothing up front, as
            // alone (`sharded::simulate_nccl`).
            let timed = sharded::nccl_program(sc, cfg, group)?;
            return Ok((Box::new(sharded::nccl_runner(sc, timed, n, i).run_until(limit)), estimate::Work::default()));
        }
        let schedules = sharded::schedules(cfg, &alone, n, group);
        let program = sharded::program(&sc.workload, cfg, sharded::WireFactors::of(strategy, &sc.workload), group, n);
        let ranks: Vec<usize> = (0..n).collect();
        let work = sharded::program_work(&program, &schedules, n, &ranks, &settings(sc), sc.iterations);
        let exec =
            StepCollective::with_schedules(schedules, settings(sc), n, false, None).on_hosts(Some(hosts.to_vec()));
        // On flows, with the slowdown the strategy has on this fabric (NCCL's default on GPU
        // fabrics, as alone; none on the seeds' fabrics unless given).
        let interference = Interference::of(sc);
        let runner = Runner::new(sc, program, n, i, exec, sampler()).with_interference(interference).run_until(limit);
        return Ok((Box::new(runner), work));
    }
    if let Family::Nccl(_) = strategy.family {
        // NCCL's checks of the job's own ranks on the fabric's spec, as alone.
        check::fabric(strategy, &sc.topology, sc.workload.collective, n, sc.bandwidth, 0)?;
    }
    strategy.check_on_fabric(&core.topo)?;
    let schedule = allreduce_schedule(sc, n, &core.topo)?;
    let hosts = JobHosts { workers: hosts[..n].to_vec(), servers: hosts[n..].to_vec() };
    let engine = Engine::new(sc, core, schedule, Folding::default(), i, Some(hosts))?.run_until(limit);
    let work = engine.work;
    Ok((Box::new(engine), work))
}

fn settings(sc: &Scenario) -> StepSettings {
    StepSettings {
        wire_factor: 1.0,
        reduce_ns_per_byte: sc.strategy.reduce_bytes_per_s.map_or(0.0, |r| 1e9 / r),
        pipeline_bytes: sc.strategy.pipeline_chunk,
        max_pipeline: 256,
        element_bytes: sharded::sharded_element_bytes(&sc.workload),
    }
}
