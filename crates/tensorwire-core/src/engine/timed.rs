//! Executor for collectives timed in closed form (NCCL's, `crate::nccl`): an operation
//! starts once every simulated rank has started it (NCCL's rendezvous: every rank's
//! kernel must be running) and ends for every rank at the same instant, with no flow on
//! the network. What an operation costs is a function of its schedule index (which
//! collective over which group, as the caller numbers them) and its payload bytes: its
//! duration alone at NCCL's full speed, its bus bytes, and the resource it is bound by.
//!
//! **Sharing.** Collectives in flight at once on different communicators (the sharded
//! programs' streams, `program.rs`: HSDP's all-reduce across replicas beside the shard
//! group's reduce-scatters and all-gathers, `communicators=2`) share the links they both
//! use, as a fluid (processor-sharing) model: each operation's work is its duration
//! alone, ns at full speed; the `k` operations bound by one [`Resource`] in flight at
//! once each progress at `1/k` of their full-speed rate; operations bound by different
//! resources do not slow each other (what they take from each other's SMs is the
//! compute interference model's, `interference.rs`, not counted twice). It is
//! work-conserving: when one ends, the others speed up. An operation alone on its
//! resource ends exactly `duration` after its start, so a run with one collective at a
//! time (`nccl`, `ddp`, `communicators=1` without replicas, `zero1`/`zero2`) is timed as
//! by NCCL alone; `k` equal operations started together all end `k x duration` later.
//!
//! The work done is kept per resource as a virtual clock (as in generalised processor
//! sharing): the full-speed work each operation in flight has done since the clock's
//! origin, in [`SCALE`]ths of a ns, advanced at every start and end by `elapsed / k`
//! (rounded down, integers only: no drift, the same run gives the same ns). An
//! operation's end is where the clock reaches its start reading plus its duration; it
//! is recomputed at every start and end on its resource, and wake-ups for the old end
//! (which cannot be cancelled) are told apart by a token per scheduling and ignored.
//!
//! Folding is free: one simulated rank stands for all when the caller folds, as every rank
//! ends each operation at the same instant.
//!
//! **What the report sees.** No flow means no link counts a byte: the executor itself
//! tells the core, as each operation starts, that the job's rank 0 communicates from then
//! and sends the operation's bus bytes ([`SimState::watch_timed_start`]), and, as it
//! ends, that it stops ([`SimState::watch_timed_end`]), so "rank 0 communicating" and
//! "bytes sent" per worker come from the one mechanism every run of a timed executor uses
//! (`nccl`/`ddp` in `mod.rs`, the sharded programs in `program.rs`). Link utilisation is
//! not estimated: the report leaves it empty (`Measured::flowless`), rather than showing
//! every link idle. What NCCL chose for each operation goes with it ([`Timed::pick`]):
//! the core counts rank 0's choices (`Report::nccl_choices`) and, when recording, each
//! simulated rank's operation becomes a span of the timeline (`SpanKind::Collective`),
//! from its start to its end as shared.

use std::collections::HashMap;

use super::slab::IdTable;
use super::state::{Note, Protocol, SimState};
use crate::collectives::Collective;
use crate::metrics::NcclPick;
use crate::nccl::{NcclChoice, NcclFabric};
use crate::sched::TaskRef;
use crate::units::Nanos;

/// What bounds a collective's speed: collectives bound by the same resource in flight at
/// once share it (see the module documentation).
///
/// Read off the fabric NCCL times it on ([`Resource::of`]): across nodes the network,
/// inside one node NVLink. A collective across nodes crosses each node's NVLink too
/// (NCCL's rings and trees pass through every GPU of a node), but its time is set by the
/// NICs: NCCL's graph search fits its channels within the NICs' rate as well as the
/// GPUs' (`nccl/graph.rs`, `ring_capacity` across nodes), and the NICs are the slower
/// (a 400 Gb/s NIC carries 50 GB/s per GPU; an H100's NVLink 450 GB/s), so it is counted
/// against the network only. Two collectives inside one node share its NVSwitch (or
/// PCIe) and its GPUs' NVLinks; two across nodes share the NICs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Resource {
    /// The NICs and the network beyond them: a collective over more than one node.
    #[default]
    Network,
    /// NVLink / NVSwitch (or PCIe) inside a node: a collective over one node's GPUs.
    NvLink,
}

impl Resource {
    /// What bounds a collective NCCL times on `fabric`: the network when it spans more
    /// than one node, else NVLink.
    pub fn of(fabric: &NcclFabric) -> Self {
        if fabric.nodes > 1 {
            Resource::Network
        } else {
            Resource::NvLink
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What an operation costs: its duration and the bytes each rank sends.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Timed {
    /// Its duration alone on its resource (NCCL's time), ns.
    pub ns: Nanos,
    /// Bytes each rank sends: nccl-tests' bus bytes, `bus_factor x size`
    /// (<https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md>: the
    /// bytes that cross each rank's slowest link in the bandwidth-optimal algorithm,
    /// `2 (n-1)/n S` for all-reduce, `(n-1)/n S` for all-gather and reduce-scatter).
    pub sent: f64,
    /// What NCCL chose and the buffer's size S, bytes (`None`: not timed by NCCL).
    pub pick: Option<(NcclPick, f64)>,
    /// What it shares with operations in flight at the same time.
    pub resource: Resource,
    /// Where NCCL's model chose a pair that tensorwire times slower than another it allows
    /// ([`crate::nccl::choose_and_fastest`]): that pair's algorithm and protocol and its time
    /// alone, ns.
    pub faster: Option<(&'static str, &'static str, Nanos)>,
}

impl Timed {
    /// NCCL's `choice` for `collective` over a buffer of `size` bytes on `fabric`, and the
    /// pair tensorwire times `fastest` there ([`crate::nccl::choose_and_fastest`]: NCCL's own
    /// or strictly faster).
    pub fn of(
        fabric: &NcclFabric,
        collective: Collective,
        choice: &NcclChoice,
        fastest: &NcclChoice,
        size: f64,
    ) -> Self {
        let ns = |c: &NcclChoice| crate::limits::nanos_clamped((c.seconds * 1e9).round());
        let faster =
            (fastest.seconds < choice.seconds).then(|| (fastest.algo_name(), fastest.proto.name(), ns(fastest)));
        Timed {
            faster,
            ns: ns(choice),
            sent: crate::nccl::bus_factor(collective, fabric.ranks) * size,
            pick: Some((
                NcclPick {
                    collective: collective.name(),
                    algorithm: choice.algo_name(),
                    protocol: choice.proto.name(),
                    channels: choice.channels,
                    peer_channels: choice.peer_channels,
                },
                size,
            )),
            resource: Resource::of(fabric),
        }
    }
}

/// What an operation of schedule `schedule` over `bytes` payload bytes costs.
pub(crate) type Durations = Box<dyn Fn(usize, u64) -> Timed>;

/// Units of a resource's virtual clock per ns of full-speed work: fine enough that the
/// rounding of `elapsed / k` at each start and end stays far below a ns (2^32; a run's
/// horizon, 2^53 ns, times it fits a `u128` with room to spare).
const SCALE: u128 = 1 << 32;

/// Bits of a wake-up's user value that hold the simulated rank (below the token):
/// ranks are fewer than [`crate::limits::MAX_WORKERS`] = 2^20.
const RANK_BITS: u32 = 21;

#[derive(Debug)]
struct Op {
    /// Simulated ranks that have started it.
    started: usize,
    /// When the last of them started.
    last_start: Nanos,
    /// Its schedule index and payload.
    schedule: usize,
    bytes: u64,
    /// Once every simulated rank has started it: its run on its resource.
    run: Option<Run>,
}

/// An operation in flight, or ended and being handed to its ranks.
#[derive(Debug)]
struct Run {
    timed: Timed,
    /// Where its resource's virtual clock stands when it has done all its work.
    finish: u128,
    /// When it ends at the current sharing, ns (the wake-ups armed for it).
    due: Nanos,
    /// The token of those wake-ups (`None` before any is armed).
    token: Option<u64>,
    /// It has ended (at `due`); its ranks are told one wake-up each.
    ended: bool,
    /// Simulated ranks told so far.
    told: usize,
}

/// One resource's share: its virtual clock and the operations in flight on it.
#[derive(Debug, Default)]
struct Share {
    /// Full-speed work each operation in flight has done since the origin, in
    /// [`SCALE`]ths of a ns, as of `at`.
    clock: u128,
    /// When `clock` was last advanced, ns.
    at: Nanos,
    /// Operations in flight, in the order they started.
    running: Vec<u64>,
}

impl Share {
    /// Advances the clock to `now`: each of the `k` operations in flight did `1/k` of the
    /// time elapsed in work (rounded down).
    fn advance(&mut self, now: Nanos) {
        let k = self.running.len() as u128;
        self.clock += (u128::from(now - self.at) * SCALE).checked_div(k).unwrap_or(0);
        self.at = now;
    }

    /// When an operation in flight whose work is done at clock reading `finish` ends, if
    /// nothing else starts or ends before: the first ns at which the clock reaches it.
    fn end_of(&self, finish: u128) -> Nanos {
        let k = self.running.len().max(1) as u128;
        let left = (finish.saturating_sub(self.clock) * k).div_ceil(SCALE);
        self.at.saturating_add(Nanos::try_from(left).unwrap_or(Nanos::MAX))
    }
}

/// See the module documentation.
pub(crate) struct TimedCollective {
    durations: Durations,
    /// Ranks simulated (1 when folded).
    simulated: usize,
    ops: IdTable<Op>,
    /// Per [`Resource`] (by index): its share.
    shares: [Share; 2],
    /// Live wake-up tokens: the operation each was armed for (a token not here is stale).
    tokens: HashMap<u64, u64>,
    next_token: u64,
}

impl TimedCollective {
    /// An executor for `simulated` ranks whose operations cost `durations`.
    pub fn new(durations: Durations, simulated: usize) -> Self {
        TimedCollective {
            durations,
            simulated,
            ops: IdTable::default(),
            shares: Default::default(),
            tokens: HashMap::new(),
            next_token: 0,
        }
    }

    /// Simulated rank `rank` starts operation `op_id` of schedule `schedule` over `bytes`
    /// payload bytes.
    pub fn start_with(&mut self, core: &mut SimState, _rank: usize, op_id: u64, schedule: usize, bytes: u64) {
        let now = core.now;
        let op = self.ops.get_or_insert_with(op_id, || Op { started: 0, last_start: now, schedule, bytes, run: None });
        op.started += 1;
        op.last_start = op.last_start.max(now);
        if op.started < self.simulated {
            return;
        }
        let timed = (self.durations)(op.schedule, op.bytes);
        core.watch_timed_start(&timed);
        let share = &mut self.shares[timed.resource.index()];
        share.advance(now);
        let finish = share.clock + u128::from(timed.ns) * SCALE;
        share.running.push(op_id);
        op.run = Some(Run { timed, finish, due: Nanos::MAX, token: None, ended: false, told: 0 });
        self.reschedule(core, timed.resource);
    }

    /// Arms wake-ups, one per simulated rank, for every operation in flight on `resource`
    /// whose end moved (or has none yet), after a start or an end there.
    fn reschedule(&mut self, core: &mut SimState, resource: Resource) {
        let share = &self.shares[resource.index()];
        for &op_id in &share.running {
            let run = self.ops.get_mut(op_id).and_then(|o| o.run.as_mut()).expect("an operation in flight");
            let due = share.end_of(run.finish);
            if due == run.due && run.token.is_some() {
                continue;
            }
            if let Some(old) = run.token {
                self.tokens.remove(&old);
            }
            let token = self.next_token;
            self.next_token += 1;
            self.tokens.insert(token, op_id);
            (run.due, run.token) = (due, Some(token));
            for r in 0..self.simulated {
                core.wake_at(due, (token << RANK_BITS) | r as u64);
            }
        }
    }

    /// Ends, now, every operation on `resource` due by now: the core counts rank 0's
    /// communication to here and records each simulated rank's span; the others speed up.
    fn end_due(&mut self, core: &mut SimState, resource: Resource) {
        let now = core.now;
        let share = &mut self.shares[resource.index()];
        share.advance(now);
        let ops = &mut self.ops;
        let simulated = self.simulated;
        share.running.retain(|&op_id| {
            let op = ops.get_mut(op_id).expect("an operation in flight");
            let last_start = op.last_start;
            let run = op.run.as_mut().expect("started");
            if run.due > now {
                return true;
            }
            run.ended = true;
            core.watch_timed_end();
            if let (Some(out), Some(pick)) = (core.recorded_timed.as_mut(), run.timed.pick) {
                out.extend((0..simulated).map(|r| (last_start, now, r, pick)));
            }
            false
        });
        self.reschedule(core, resource);
    }
}

impl Protocol for TimedCollective {
    fn start_op(&mut self, core: &mut SimState, rank: usize, op_id: u64, _tasks: &[TaskRef], bytes: u64) {
        self.start_with(core, rank, op_id, 0, bytes);
    }

    fn on_flow(&mut self, _core: &mut SimState, _user: u64, _delivered: bool) {
        unreachable!("timed collectives start no flow")
    }

    /// A rank's end of an operation (`token << RANK_BITS | rank`), unless the token is
    /// stale (the operation's end moved since it was armed).
    fn on_timer(&mut self, core: &mut SimState, user: u64) {
        let (token, rank) = (user >> RANK_BITS, (user & ((1 << RANK_BITS) - 1)) as usize);
        let Some(&op_id) = self.tokens.get(&token) else { return };
        let run = self.ops.get(op_id).and_then(|o| o.run.as_ref()).expect("a live token's operation");
        if !run.ended {
            let resource = run.timed.resource;
            self.end_due(core, resource);
        }
        let run = self.ops.get_mut(op_id).and_then(|o| o.run.as_mut()).expect("a live token's operation");
        debug_assert!(run.ended, "an operation's wake-up at its end ends it");
        run.told += 1;
        if run.told == self.simulated {
            self.tokens.remove(&token);
            self.ops.remove(op_id);
        }
        core.notes.push(Note::OpDone { rank, op: op_id, synced: true });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::AlphaBeta;
    use crate::topology::Topology;
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest, ProptestConfig, Strategy as Gen};

    const NET: Resource = Resource::Network;
    const NVL: Resource = Resource::NvLink;

    fn pick() -> NcclPick {
        NcclPick { collective: "allreduce", algorithm: "ring", protocol: "simple", channels: 4, peer_channels: None }
    }

    /// What a run of `ops` (start, duration alone, resource; operation `i` is schedule
    /// `i`, started by every one of `simulated` ranks at its start) gives.
    struct Outcome {
        /// Per operation: when every rank was told it ended, ns.
        ends: Vec<Nanos>,
        /// Rank 0's communication time and bytes sent at the end.
        busy: Nanos,
        sent: f64,
        /// The recorded spans (start, end, rank).
        spans: Vec<(Nanos, Nanos, usize)>,
        /// Notes per operation and rank (each exactly once).
        told: Vec<Vec<u32>>,
    }

    fn run(ops: &[(Nanos, Nanos, Resource)], simulated: usize) -> Outcome {
        let net = Box::new(AlphaBeta::new(vec![]));
        let mut core = SimState::new(net, Topology::star(2, 1.0, 0), vec![0, 1], simulated == 1, 0, f64::INFINITY);
        core.recorded_timed = Some(Vec::new());
        let costs: Vec<Timed> = ops
            .iter()
            .map(|&(_, ns, resource)| Timed { ns, sent: 1.0, pick: Some((pick(), 8.0)), resource, faster: None })
            .collect();
        let mut exec = TimedCollective::new(Box::new(move |s, _| costs[s]), simulated);
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| (ops[i].0, i));
        let mut next = 0;
        let mut ends = vec![0; ops.len()];
        let mut told = vec![vec![0u32; simulated]; ops.len()];
        loop {
            let start = order.get(next).map(|&i| ops[i].0);
            match (start, core.next_timer()) {
                (None, None) => break,
                // Wake-ups first at equal times: an operation that ends as another starts
                // is over before it.
                (Some(s), Some(t)) if t <= s => wake(&mut core, &mut exec, t, &mut ends, &mut told),
                (None, Some(t)) => wake(&mut core, &mut exec, t, &mut ends, &mut told),
                (Some(s), _) => {
                    core.now = s;
                    let i = order[next];
                    next += 1;
                    for r in 0..simulated {
                        exec.start_with(&mut core, r, i as u64, i, 0);
                    }
                }
            }
        }
        let spans = core.recorded_timed.take().unwrap().into_iter().map(|(s, e, r, _)| (s, e, r)).collect();
        Outcome { ends, busy: core.comm_busy_of(0), sent: core.watched_host(0).sent, spans, told }
    }

    fn wake(core: &mut SimState, exec: &mut TimedCollective, t: Nanos, ends: &mut [Nanos], told: &mut [Vec<u32>]) {
        core.now = t;
        while let Some((_, user)) = core.pop_timer(t) {
            exec.on_timer(core, user);
        }
        for note in std::mem::take(&mut core.notes) {
            let Note::OpDone { rank, op, .. } = note else { unreachable!() };
            ends[op as usize] = t;
            told[op as usize][rank] += 1;
        }
    }

    #[test]
    fn a_lone_operation_ends_its_duration_after_its_start() {
        let o = run(&[(100, 5_000, NET)], 1);
        assert_eq!(o.ends, vec![5_100]);
        assert_eq!((o.busy, o.sent), (5_000, 1.0));
        // One after the other on one resource: each alone.
        let o = run(&[(0, 700, NVL), (700, 300, NVL), (2_000, 1, NVL)], 3);
        assert_eq!(o.ends, vec![700, 1_000, 2_001]);
        assert_eq!(o.busy, 1_001);
    }

    #[test]
    fn two_equal_operations_at_once_both_end_at_twice_their_duration() {
        let t = 1_000_000;
        let o = run(&[(0, t, NET), (0, t, NET)], 1);
        assert_eq!(o.ends, vec![2 * t, 2 * t]);
        // Rank 0 communicated for the union of the two spans; it sent for both.
        assert_eq!((o.busy, o.sent), (2 * t, 2.0));
    }

    #[test]
    fn an_operation_joining_halfway_slows_the_first_and_speeds_up_when_it_ends() {
        // A (T) from 0; B (T) from T/2: both at half speed until A's remaining T/2 is
        // done at 1.5 T; then B alone does its remaining T/2 by 2 T.
        let t = 1_000_000;
        let o = run(&[(0, t, NET), (t / 2, t, NET)], 1);
        assert_eq!(o.ends, vec![3 * t / 2, 2 * t]);
        // Recorded spans carry the shared ends, every simulated rank one.
        let o = run(&[(0, t, NVL), (t / 2, t, NVL)], 2);
        let mut spans = o.spans.clone();
        spans.sort_unstable();
        assert_eq!(spans, vec![(0, 3 * t / 2, 0), (0, 3 * t / 2, 1), (t / 2, 2 * t, 0), (t / 2, 2 * t, 1)]);
        assert_eq!(o.ends, vec![3 * t / 2, 2 * t]);
    }

    #[test]
    fn operations_bound_by_different_resources_do_not_slow_each_other() {
        let o = run(&[(0, 900, NET), (100, 500, NVL), (300, 50, NET)], 1);
        // The two network operations share; the NVLink one runs alone.
        assert_eq!(o.ends[1], 600);
        assert!(o.ends[0] > 900 && o.ends[2] > 350, "{:?}", o.ends);
        assert_eq!(o.ends[0], 950, "work-conserving: 950 ns of network work from 0");
    }

    #[test]
    fn the_resource_is_read_off_the_fabric() {
        use crate::topology::TopologySpec;
        let rail = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        let fabric = |n| NcclFabric::from_topology(&rail, n, 50e9, crate::nccl::Transport::Rdma).unwrap();
        assert_eq!(Resource::of(&fabric(8)), NVL);
        assert_eq!(Resource::of(&fabric(16)), NET);
        assert_eq!(Resource::default(), NET);
    }

    /// Per resource: the work of its operations, ns at full speed: the time a resource
    /// that does it at full speed whenever it has any (work-conserving) is busy.
    fn work(ops: &[(Nanos, Nanos, Resource)], resource: Resource) -> Nanos {
        ops.iter().filter(|o| o.2 == resource).map(|o| o.1).sum()
    }

    /// The length of the union of the spans of `resource`'s operations.
    fn busy_shared(ops: &[(Nanos, Nanos, Resource)], ends: &[Nanos], resource: Resource) -> Nanos {
        let mut spans: Vec<(Nanos, Nanos)> =
            ops.iter().zip(ends).filter(|(o, _)| o.2 == resource).map(|(o, &e)| (o.0, e)).collect();
        spans.sort_unstable();
        let (mut busy, mut until) = (0, 0);
        for (s, e) in spans {
            let from = s.max(until);
            if e > from {
                busy += e - from;
                until = e;
            }
        }
        busy
    }

    fn ops_gen() -> impl Gen<Value = Vec<(Nanos, Nanos, Resource)>> {
        prop::collection::vec(
            (0u64..5_000, 1u64..3_000, prop::bool::ANY).prop_map(|(s, d, n)| (s, d, if n { NET } else { NVL })),
            1..12,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

        #[test]
        fn a_lone_operation_is_exact_and_k_equal_ones_end_k_durations_later(
            start in 0u64..1 << 40, d in 0u64..1 << 40, k in 1usize..9, simulated in 1usize..4,
        ) {
            prop_assert_eq!(run(&[(start, d, NET)], simulated).ends, vec![start + d]);
            let ops = vec![(start, d, NVL); k];
            let o = run(&ops, simulated);
            for &end in &o.ends {
                let want = start + k as u64 * d;
                prop_assert!(end.abs_diff(want) <= k as u64, "{} vs {}", end, want);
            }
        }

        #[test]
        fn sharing_conserves_each_resources_busy_time_and_slows_no_one_below_alone(
            ops in ops_gen(), simulated in 1usize..4,
        ) {
            let o = run(&ops, simulated);
            for (i, &(start, d, _)) in ops.iter().enumerate() {
                prop_assert!(o.ends[i] >= start + d, "op {} ended at {} before {}", i, o.ends[i], start + d);
                prop_assert!(o.told[i].iter().all(|&t| t == 1), "each rank told once: {:?}", o.told[i]);
            }
            for resource in [NET, NVL] {
                let (shared, alone) = (busy_shared(&ops, &o.ends, resource), work(&ops, resource));
                // Integer rounding: at most a ns per operation.
                prop_assert!(shared.abs_diff(alone) <= ops.len() as u64, "{:?}: {} vs {}", resource, shared, alone);
            }
            // Folding: one simulated rank gives the same ends.
            prop_assert_eq!(&run(&ops, 1).ends, &o.ends);
            prop_assert_eq!(o.spans.len(), ops.len() * simulated);
            prop_assert_eq!(o.sent, ops.len() as f64);
        }
    }
}
