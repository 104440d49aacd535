//! The up-front cost estimate of a run, checked against [`Scenario::max_flows`] before
//! anything is simulated (docs/simulator.md, "The flow budget").
//!
//! The estimate counts the messages the engine will actually start, given its folding
//! decisions (star, digit and server-class folding: only the simulated ranks' messages)
//! and its lanes decision (messages timed by lanes weigh 1/64 of a flow, as the running
//! check counts them), over every iteration. It is an upper bound of the flows the run
//! starts (a test checks it on random scenarios): an all-reduce releases at most one
//! collective per task (fusion only merges them), and a pipelined schedule sends each
//! piece over the same edges, so its messages grow linearly with the pieces.
//!
//! Schedules that are not rank-symmetric (trees, hierarchical), simulated unfolded under
//! the max-min model, weigh 2 flows a message: their ranks send and receive at once in
//! chains that couple every link into one component that each event re-rates (measured
//! 1.2-1.7 us a flow at 1,024 ranks, against 0.3-0.6 us for a ring or a sharded
//! strategy's collectives).
//!
//! Parameter servers that are not folded add a term for concurrency: every worker's
//! push of a tensor shares the server's link with every other worker's, and the max-min
//! model re-rates each flow sharing a link whenever one starts or ends, so a flow costs
//! about as much as N / 2 flows alone (measured: 30 us per flow at 64 workers, 55 us at
//! 128, against 0.3-1.5 us for a flow of a collective).

use super::driver::LANE_MESSAGES_PER_FLOW;
use super::Scenario;
use crate::collectives::StepSchedule;
use crate::error::{Error, Result};
use crate::network::ModelKind;
use crate::strategy::{Family, Placement};

/// The flow budget used when a caller gives none (the CLI's `--max-flows` default and
/// `tensorwire.simulate`'s `max_flows` default): about 2 s of simulation on one core of
/// the reference machine at the slowest measured cost per estimated flow (see
/// docs/simulator.md, "The flow budget", for the measurements).
pub const DEFAULT_MAX_FLOWS: u64 = 4_000_000;

/// What one collective timed by NCCL's model (`nccl`, `ddp`) costs a run, in flows: its
/// events, its stream's queue and its report cost 1.75 us per collective and iteration
/// (1,048,576 one-byte all-reduces on 8 GPUs: 7.3 s for one iteration, 11.0 s for three,
/// on this project's 2-core machine), against 0.5 us for the costliest counted flow. It
/// was counted as 1/64 of a flow, as lanes' messages are, so such a run with 40 iterations
/// passed the budget and ran for minutes.
pub const TIMED_COLLECTIVE_WEIGHT: u64 = 4;

/// Rank events (a layer's forward or backward, a collective's issue or end on one rank) that
/// cost a run what one flow does: 0.14-0.2 us each, against 0.5 us for the costliest
/// counted flow (Llama 3 70B on 8,192 H100 with lognormal stragglers: zero3 39.5 million
/// events in 5.4 s, ddp 8.2 million in 1.7 s, on this project's 2-core machine). Uncounted,
/// zero3 on 65,536 GPUs with stragglers ran 62 s inside the default budget.
pub const RANK_EVENTS_PER_FLOW: u64 = 3;

/// Step evaluations (a rank's plan at a step) the estimate makes at most per schedule:
/// far above what any run within the default budget needs (1,024 unfolded ranks of a
/// ring: 2.1 million). Past it, a sample of the ranks is counted and scaled up
/// ([`messages`]); a schedule whose one rank's steps pass it is too many to count.
const MAX_EVALUATIONS: u64 = 1 << 24;

/// What a run will simulate, counted before it starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Work {
    /// Messages simulated one by one by the network model (an upper bound).
    pub flows: u64,
    /// Messages timed by lanes (an upper bound).
    pub lane_messages: u64,
    /// Cost of each flow, in flows alone: 1, or the concurrency of an unfolded parameter
    /// server's links under the max-min model.
    pub weight: u64,
    /// Events of ranks simulated apart beside flows ([`rank_events`]): stragglers unfold
    /// the compute of a run whose collectives NCCL's model times, which has no flow.
    pub rank_events: u64,
}

impl Work {
    /// The work in flows, as the budget counts it (saturating).
    pub fn units(&self) -> u64 {
        self.flows
            .saturating_mul(self.weight.max(1))
            .saturating_add(self.lane_messages / LANE_MESSAGES_PER_FLOW)
            .saturating_add(self.rank_events / RANK_EVENTS_PER_FLOW)
    }
}

/// Messages that the ranks `ranks` (of `n`) send in one collective of `schedule` cut in
/// `pipeline` pieces; `None` when one rank's steps alone are more than [`MAX_EVALUATIONS`]
/// step evaluations. A rank-symmetric schedule sends the same number at every rank, so
/// one rank is counted for all. Where counting every rank would pass the limit, as many
/// ranks as it allows are counted, every `stride`-th (coprime with the count, so that no
/// residue, such as a node's leaders every 8 ranks, is favoured), and scaled up: an
/// estimate, where `hierarchical` on 16,384 workers had been "more flows than can be
/// counted", past any budget one could raise.
fn messages(schedule: &dyn StepSchedule, n: usize, pipeline: usize, ranks: &[usize]) -> Option<u64> {
    messages_within(schedule, n, pipeline, ranks, MAX_EVALUATIONS)
}

/// [`messages`] with at most `limit` step evaluations.
fn messages_within(schedule: &dyn StepSchedule, n: usize, pipeline: usize, ranks: &[usize], limit: u64) -> Option<u64> {
    let steps = schedule.steps(n, pipeline);
    let count = |r: usize| (0..steps).map(|s| schedule.step(r, n, pipeline, s).sends.len() as u64).sum::<u64>();
    if steps as u64 > limit {
        return None;
    }
    if schedule.rank_symmetric(n) {
        return Some(count(ranks.first().copied().unwrap_or(0)) * ranks.len() as u64);
    }
    let affordable = (limit / (steps as u64).max(1)) as usize;
    if ranks.len() <= affordable {
        return Some(ranks.iter().map(|&r| count(r)).sum());
    }
    // Every `stride`-th rank, the stride coprime with the rank count: distinct ranks, and
    // each residue modulo any divisor of the count (a node's leaders) equally often.
    let len = ranks.len();
    let stride = (len.div_ceil(affordable)..).find(|&s| crate::arith::gcd(s, len) == 1).unwrap_or(1);
    let sampled: u64 = (0..affordable).map(|i| count(ranks[(i * stride) % len])).sum();
    Some((sampled as f64 * len as f64 / affordable as f64).ceil() as u64)
}

/// Messages per collective of `schedule` by its pipeline pieces: counted for 1 and 2
/// pieces, linear beyond (each piece crosses the same edges).
pub(crate) struct PerOp<'a> {
    schedule: &'a dyn StepSchedule,
    one: Option<u64>,
    two: Option<u64>,
}

impl<'a> PerOp<'a> {
    /// Counts the messages of `schedule` over `n` ranks sent by the simulated `ranks`.
    pub fn new(schedule: &'a dyn StepSchedule, n: usize, ranks: &[usize]) -> Self {
        let one = messages(schedule, n, 1, ranks);
        // Counted wherever a payload can take a `pipeline` of 2: pipelined schedules, and
        // those whose argument selects another plan (GPU trees: every tree from 2). Counting
        // only pipelined ones left `multitree:trees=1024` estimated as one tree, so it
        // passed the budget and ran 18 s before the running check stopped it.
        let two =
            if schedule.pieces_for(f64::MAX, f64::MAX, 1.0, 2) >= 2 { messages(schedule, n, 2, ranks) } else { one };
        PerOp { schedule, one, two }
    }

    /// Messages of one collective over `wire_bytes` (`elements` array elements) cut in
    /// pieces of `piece_bytes` (at most `max`); `u64::MAX` when too many to count.
    pub fn of(&self, wire_bytes: f64, elements: f64, piece_bytes: f64, max: usize) -> u64 {
        let (Some(one), Some(two)) = (self.one, self.two) else { return u64::MAX };
        let p = self.schedule.pieces_for(wire_bytes, elements, piece_bytes, max) as u64;
        one.saturating_add((p - 1).saturating_mul(two.saturating_sub(one)))
    }
}

/// The simulated ranks: `0..simulated` or the representatives of a digit folding.
pub(crate) fn simulated_ranks(simulated: usize, reps: Option<&[usize]>) -> Vec<usize> {
    reps.map_or_else(|| (0..simulated).collect(), <[usize]>::to_vec)
}

/// Refuses `work` over the scenario's budget, in one line: what the run would need, the
/// budget, and what to use instead.
/// `star`: the fabric is a star (where every all-reduce that folds does).
pub(crate) fn check(sc: &Scenario, work: Work, star: bool) -> Result<()> {
    #[cfg(test)]
    LAST.with(|l| l.set(Some(work)));
    let Some(max) = sc.max_flows else { return Ok(()) };
    let units = work.units();
    if units <= max {
        return Ok(());
    }
    let needs = if units == u64::MAX {
        "more flows than can be counted".to_string()
    } else {
        format!("about {} flows", human(units))
    };
    // What folds instead, leaving out the strategy refused: a strategy that folds already
    // needs fewer workers or iterations, not itself.
    let name = sc.strategy.spec.split(':').next().unwrap_or_default();
    let folding_on_star: Vec<&str> = ["ring", "halving-doubling", "fsdp"].into_iter().filter(|s| *s != name).collect();
    // Mostly ranks computing apart (stragglers): fewer of them, or none.
    let apart = work.rank_events / RANK_EVENTS_PER_FLOW > units / 2;
    let instead = match &sc.strategy.family {
        _ if apart => "fewer workers or iterations, or no stragglers (they make every rank compute apart)".to_string(),
        Family::Nccl(_) => "fewer collectives, workers or iterations (nccl already folds to one rank)".to_string(),
        Family::ParameterServer(c) if c.placement != Placement::Sharded => {
            "ps:placement=sharded (on a star it folds by server class), fewer workers or iterations".to_string()
        }
        Family::ParameterServer(_) => "fewer workers or iterations".to_string(),
        // GPU trees inside one machine: each tree carries its own slice.
        _ if sc.strategy.trees.is_some_and(|t| t > 1) => "fewer trees (trees=) or iterations".to_string(),
        _ if star && folding_on_star.len() < 3 => {
            format!("fewer workers or iterations ({name} already folds on a star)")
        }
        _ if star => "ring, halving-doubling or fsdp (they fold on a star), fewer workers or iterations".to_string(),
        _ => "a strategy this fabric folds (fsdp, hsdp, or any all-reduce on a star), fewer workers or iterations"
            .to_string(),
    };
    // Raising the budget is advice only where the flows can be counted.
    let raise = if units == u64::MAX {
        String::new()
    } else {
        format!(", or raise max_flows (--max-flows {})", units.saturating_add(units / 10).max(max + 1))
    };
    // The messages behind the count, where each weighs more than one flow.
    let many = human(work.flows);
    let concurrency = match (&sc.strategy.family, work.weight) {
        _ if apart && units != u64::MAX => {
            format!(" ({} events of ranks computing apart, {RANK_EVENTS_PER_FLOW} to a flow)", human(work.rank_events))
        }
        (_, 0 | 1) => String::new(),
        _ if units == u64::MAX => String::new(),
        (Family::ParameterServer(_), w) => {
            format!(
                " ({many} messages, each costing about {w} flows alone as {} workers share a server's link)",
                sc.workers
            )
        }
        (Family::Nccl(_), w) => format!(" ({many} timed collectives, each costing about {w} flows)"),
        (_, w) => format!(" ({many} messages, each costing about {w} flows alone as ranks send and receive at once)"),
    };
    // A parameter-server run completes one iteration beyond the measured ones.
    let next = if super::iterations_beyond(sc) > 0 { " (and the next)" } else { "" };
    Err(Error::invalid(
        "max_flows",
        format!(
            "{} on {} workers for {} iterations{next} needs {needs}{concurrency}, more than {max} flows (the budget); use {instead}{raise}",
            sc.strategy.spec, sc.workers, sc.iterations,
        ),
    ))
}

/// Refuses a multi-job run whose jobs' measured iterations (`per_job`: each job's name and
/// work, estimated as a run of the job alone is, unfolded: jobs sharing a fabric never
/// fold) need more than the budget of `fabric`. Every job runs at least its measured
/// iterations; the jobs that finish first go on as background load, which the running
/// check counts.
pub(crate) fn check_jobs(fabric: &Scenario, per_job: &[(&str, Work)]) -> Result<()> {
    let Some(max) = fabric.max_flows else { return Ok(()) };
    let units = per_job.iter().fold(0u64, |sum, (_, w)| sum.saturating_add(w.units()));
    if units <= max {
        return Ok(());
    }
    let count = |u: u64| if u == u64::MAX { "more than can be counted".to_string() } else { human(u) };
    let each: Vec<String> = per_job.iter().map(|(name, w)| format!("{name} {}", count(w.units()))).collect();
    let (needs, raise) = if units == u64::MAX {
        ("more flows than can be counted".to_string(), String::new())
    } else {
        (
            format!("about {} flows", human(units)),
            format!(", or raise max_flows (--max-flows {} or more)", units.saturating_add(units / 10).max(max + 1)),
        )
    };
    Err(Error::invalid(
        "max_flows",
        format!(
            "the jobs' {} measured iterations need {needs} ({}), more than {max} flows (the budget); use fewer iterations or smaller jobs{raise}",
            fabric.iterations,
            each.join(", ")
        ),
    ))
}

/// `n` in a short form: 4,200,000 as "4.2 million".
fn human(n: u64) -> String {
    match n {
        0..1_000_000 => n.to_string(),
        1_000_000..1_000_000_000 => format!("{:.1} million", n as f64 / 1e6),
        _ => format!("{:.1} billion", n as f64 / 1e9),
    }
}

/// The cost of a flow of `schedule` over `n` ranks, in flows (see the module documentation).
pub(crate) fn step_weight(sc: &Scenario, schedule: &dyn StepSchedule, n: usize, folded: bool) -> u64 {
    if folded || sc.network != ModelKind::Flow || schedule.rank_symmetric(n) {
        1
    } else {
        2
    }
}

/// Events of `ranks` ranks each computing `layers` layers (a forward and a backward) and
/// taking part in `collectives` collectives per iteration, over `iterations` measured
/// iterations and the one before them (zero3, Llama 3 70B on 8,192 ranks: 37 million
/// counted, 39.5 million run).
pub(crate) fn rank_events(ranks: usize, layers: usize, collectives: usize, iterations: u32) -> u64 {
    let per_iteration = (2 * layers as u64).saturating_add(collectives as u64);
    (ranks as u64).saturating_mul(per_iteration).saturating_mul(u64::from(iterations) + 1)
}

/// A parameter-server run's work: per simulated piece (`tasks` pieces, a `num_ps`-th of
/// them when folded by server class) a push from every worker (to the switch with
/// in-network aggregation, then one aggregate) and a pull to every worker, each costing
/// [`ps_weight`], over the measured iterations and the one the run completes beyond them
/// ([`super::iterations_beyond`]). Counted from the scenario alone, so that a run far over the budget is
/// refused before its state is built (a million workers took 1.5 GB to be refused).
pub(crate) fn ps_work(sc: &Scenario, num_ps: usize, tasks: usize, folded_by_class: bool) -> Work {
    let n = sc.workers;
    let pieces = if folded_by_class { tasks / num_ps.max(1) } else { tasks } as u64;
    let per_piece = 2 * n as u64 + 1;
    Work {
        flows: pieces.saturating_mul(per_piece).saturating_mul(u64::from(sc.iterations + super::iterations_beyond(sc))),
        lane_messages: 0,
        weight: ps_weight(sc, n, folded_by_class),
        rank_events: 0,
    }
}

/// Whether a parameter-server run that is not folded pays the max-min concurrency term.
/// Only unicast pulls pay it: with multicast, runs of 1,024 workers take under a second.
pub(crate) fn ps_weight(sc: &Scenario, simulated_workers: usize, folded_by_class: bool) -> u64 {
    let multicast = matches!(&sc.strategy.family, Family::ParameterServer(c) if c.multicast);
    if folded_by_class || multicast || sc.network != ModelKind::Flow {
        1
    } else {
        (simulated_workers as u64).div_ceil(2).max(1)
    }
}

#[cfg(test)]
thread_local! {
    /// The last run's estimate on this thread (tests compare it with what the run did).
    pub(crate) static LAST: std::cell::Cell<Option<Work>> = const { std::cell::Cell::new(None) };
}

#[cfg(test)]
mod tests {
    use proptest::prelude::{prop, prop_assert, proptest, ProptestConfig};

    use super::super::tests::{scenario, workload};
    use super::super::{simulate, Scenario};
    use super::{messages_within, Work, LAST};
    use crate::collectives::StepSchedule;
    use crate::topology::TopologySpec;

    /// The estimate of `sc`'s run and the flows it started.
    fn estimate_and_flows(sc: &Scenario) -> (Work, u64) {
        LAST.with(|l| l.set(None));
        let flows = simulate(sc).unwrap().flows;
        (LAST.with(|l| l.get()).expect("every run is estimated"), flows)
    }

    const STRATEGIES: &[&str] = &[
        "ring",
        "ring+multicast",
        "tree",
        "double-tree",
        "halving-doubling",
        "recursive-doubling",
        "hierarchical:gpus_per_node=2",
        "ring:fusion=64KiB",
        "ring:partition=1KiB",
        "double-tree:chunk=1KiB",
        "ps",
        "ps:num_ps=2,placement=sharded",
        "ps+multicast",
        "ps+ina",
        "ps:credit=4KiB",
        "zero1",
        "zero2",
        "fsdp",
        "hsdp:shard_group=2",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

        /// The up-front estimate bounds the flows the run starts (messages timed by lanes
        /// included), folded or not, with lanes or not, on a star or a leaf-spine.
        #[test]
        fn the_estimate_bounds_the_flows_a_run_starts(
            strategy in prop::sample::select(STRATEGIES),
            half in 1usize..5,
            sizes in prop::collection::vec(1u64..20_000, 1..6),
            iterations in 1u32..4,
            fold in prop::bool::ANY,
            lanes in prop::bool::ANY,
            leaf_spine in prop::bool::ANY,
        ) {
            let n = 2 * half;
            let mut sc = scenario(workload(&sizes, 3000), n, strategy, 100);
            sc.iterations = iterations;
            sc.allow_folding = fold;
            sc.allow_lanes = lanes;
            if leaf_spine && !strategy.contains("ina") {
                sc.topology = TopologySpec::parse("leaf-spine:hosts_per_leaf=2,spines=1").unwrap();
            }
            let (work, flows) = estimate_and_flows(&sc);
            prop_assert!(work.flows + work.lane_messages >= flows, "{strategy} on {n}: estimated {work:?}, ran {flows}");
        }
    }

    #[test]
    fn ranks_past_the_evaluation_limit_are_sampled_not_given_up() {
        // Hierarchical (leaders of 8-rank nodes send far more than the others) on 1,024
        // ranks, with room to count a quarter of them: the sample's estimate is within 2% of
        // the full count; a limit below one rank's steps is still "too many to count".
        let h = crate::collectives::Hierarchical { group: 8 };
        let ranks: Vec<usize> = (0..1024).collect();
        let exact = messages_within(&h, 1024, 1, &ranks, u64::MAX).unwrap();
        let steps = h.steps(1024, 1) as u64;
        let sampled = messages_within(&h, 1024, 1, &ranks, steps * 256).unwrap();
        assert!((sampled as f64 - exact as f64).abs() <= 0.02 * exact as f64, "{sampled} against {exact}");
        assert_eq!(messages_within(&h, 1024, 1, &ranks, steps - 1), None);
    }

    #[test]
    fn gpu_trees_are_estimated_with_every_tree_they_run() {
        // `multitree` runs every tree for any size and `tree` on a machine from seed 003's
        // element bound: the estimate counts the plan the run uses, so it bounds the flows
        // and grows with the trees (it was one tree's whatever `trees`).
        let mut last = 0;
        for (strategy, sizes) in [
            ("multitree:trees=2", vec![4u64; 4]),
            ("multitree:trees=16", vec![4; 4]),
            ("multitree:trees=64", vec![4; 4]),
            ("tree:trees=16", vec![1 << 20; 2]),
        ] {
            let mut sc = scenario(workload(&sizes, 1000), 8, strategy, 100);
            sc.topology = TopologySpec::parse("nodes:machine=p3.16xlarge").unwrap();
            let (work, flows) = estimate_and_flows(&sc);
            assert!(work.flows + work.lane_messages >= flows, "{strategy}: estimated {work:?}, ran {flows}");
            assert!(work.flows >= flows / 2, "{strategy}: estimated {work:?}, ran {flows}: not the same plan");
            sc.max_flows = Some(1);
            let e = simulate(&sc).unwrap_err().to_string();
            assert!(e.contains("use fewer trees (trees=)"), "{e}");
            if strategy.starts_with("multitree") {
                assert!(work.flows > last, "{strategy}: {work:?} not above {last}");
                last = work.flows;
            }
        }
    }

    #[test]
    fn a_run_over_budget_is_refused_before_any_event() {
        for strategy in ["ps", "ring", "fsdp", "double-tree", "ps:num_ps=2,placement=sharded"] {
            let mut sc = scenario(workload(&[4096; 8], 1000), 4, strategy, 100);
            sc.max_flows = Some(1);
            let events = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
            let seen = events.clone();
            sc.progress = Some(super::super::ProgressHook(std::sync::Arc::new(move |p| {
                seen.store(p.events, std::sync::atomic::Ordering::Relaxed);
                true
            })));
            let e = simulate(&sc).unwrap_err();
            assert_eq!(e.field(), "max_flows", "{strategy}: {e}");
            let text = e.to_string();
            assert!(text.contains("needs about") && text.contains("more than 1 flows"), "{text}");
            assert!(text.contains("raise max_flows (--max-flows"), "{text}");
            // The advice never names the strategy refused.
            let name = strategy.split(':').next().unwrap();
            assert!(!text.contains(&format!("use {name},")) && !text.contains(&format!(" {name} (")), "{text}");
            // Refused up front: the run never reached a checkpoint.
            assert_eq!(events.load(std::sync::atomic::Ordering::Relaxed), u64::MAX, "{strategy}");
        }
    }

    #[test]
    fn unfolded_parameter_servers_pay_for_concurrency_and_name_what_folds() {
        let mut sc = scenario(workload(&[4096; 200], 1000), 64, "ps:num_ps=4", 100);
        // Sharded: 200 pieces x (2 x 64 + 1) flows x 4 iterations (3 measured and the next,
        // `iterations_beyond`) = 103,200; round-robin pays 32x that.
        sc.max_flows = Some(120_000);
        let e = simulate(&sc).unwrap_err();
        assert!(e.to_string().contains("ps:placement=sharded"), "{e}");
        // Sharded placement folds by server class: no concurrency term, within the budget.
        sc.strategy = crate::strategy::Strategy::parse("ps:num_ps=4,placement=sharded").unwrap();
        assert!(simulate(&sc).is_ok());
    }

    #[test]
    fn pipelined_schedules_send_linearly_more_messages_with_more_pieces() {
        use crate::collectives::{ChainBroadcast, DoubleBinaryTree, StepSchedule};
        let schedules: [&dyn StepSchedule; 2] = [&DoubleBinaryTree, &ChainBroadcast];
        for s in schedules {
            for n in 2..12 {
                let ranks: Vec<usize> = (0..n).collect();
                let one = super::messages(s, n, 1, &ranks).unwrap();
                for p in 1..10 {
                    let per = super::PerOp { schedule: s, one: Some(one), two: super::messages(s, n, 2, &ranks) };
                    assert_eq!(
                        per.of(p as f64, p as f64, 1.0, 256),
                        super::messages(s, n, p, &ranks).unwrap(),
                        "{s:?} n={n} p={p}"
                    );
                }
            }
        }
    }
}
