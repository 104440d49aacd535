//! Parameter servers (seed 000 sections 3.3.1, 3.4, 9). Workers push each gradient piece
//! to the server that holds it as soon as the scheduler releases it; a server has
//! aggregated a piece when every worker's copy has arrived. With the global barrier,
//! servers start sending parameters back only when every piece of the iteration is
//! aggregated on every server; without it, each piece goes back as soon as it is ready.
//! Each server sends one message at a time in the distribution order (round-robin:
//! tensor-major; block: worker-major), which is what seed 000's validation found real
//! TensorFlow does; or (`distribution=concurrent`) every pull as soon as its piece is
//! ready, all of them sharing the server's uplink max-min, as a server with one TCP
//! connection per worker sends: N pulls of S bytes started together all end N S / B later.
//! "One at a time" is the server's NIC's: the next message starts once the previous one
//! has crossed the server's own link at that link's rate ([`SimState::leave_time`]), not
//! once it has reached its worker. A message slowed further on (two servers sending to
//! one worker at once, whose downlink they share) drains from the switch's buffers while
//! the server sends on, as a TCP sender's queue does, up to [`SEND_WINDOW`] messages not
//! yet sent (the testbed's servers keep as many in Gloo). Waiting for each message instead
//! left the server's link idle: 2 workers and 2 servers round-robin on the testbed
//! (ResNet-50 scaled, 1 Gbit/s) measured 0.263 s where that predicted 0.311 s (now
//! 0.268 s).
//!
//! **Co-located servers** (`colocated=true`, BytePS and TensorFlow): server k runs on
//! worker k's host. A worker's push to its own server and its server's pull to it are
//! host-local messages: no link, only the transport's copy rate and per-message overhead
//! (instant without either). Everything else shares the host's uplink and downlink with
//! the worker's own traffic. Co-located runs are not folded by server class (server k and
//! worker k share links, which the classes' symmetry does not map); they run in full.
//!
//! - **Multicast**: a server sends each piece once; the switch replicates it to every
//!   worker, so the server's uplink carries the model once instead of N times.
//! - **In-network aggregation**: pushes stop at the switch, which forwards one aggregated
//!   copy to the server once every worker's copy of the piece has arrived. That copy is
//!   the switch's message ([`HostEnd::Receives`]): no host sends it, so it pays no host's
//!   per-message overhead and is in no host's sent bytes (a co-located server's host
//!   receives it on its downlink; its uplink never carries it). With a switch
//!   memory limit, pieces are admitted in the order first requested, and a worker's push
//!   of a piece waits until the piece has memory; the memory is freed once the aggregate
//!   has left the switch. Modelled on a star (the one switch aggregates).
//!
//! **Folding by server class.** With `placement=sharded`, every tensor a multiple of P
//! bytes and N a multiple of P, server s holds piece s of every tensor, all pieces alike,
//! and starts its round at worker s N / P. Moving every worker by N / P and every server by
//! one then maps the run onto itself (worker w's push of piece s to server s onto worker
//! w + N / P's push of piece s + 1 to server s + 1, at the same instant; server s's i-th
//! pull onto server s + 1's), on a star where the pieces of a tensor leave together (no
//! credit or in-flight limit) and every worker computes alike. The engine then simulates
//! server 0 and workers 0 to N / P - 1 ([`ServerClasses`]): a push of piece s from worker
//! w is server 0's piece from worker w - s N / P; server 0's pull to worker w + k N / P
//! is worker w's piece P - k (mod P) from server -k. Server 0 still receives N pushes per
//! piece and sends N pulls, over its own links and the simulated workers' links, which is
//! what each server and each worker carries.

use std::collections::{HashMap, VecDeque};

use super::slab::Slab;
use super::state::{HostEnd, Note, Protocol, SimState};
use super::JobHosts;
use crate::sched::{Task, TaskRef};
use crate::strategy::{Distribution, Placement, PsConfig};
use crate::units::Nanos;
use crate::workload::Workload;

#[derive(Debug, Clone, Copy)]
enum Msg {
    /// Worker to server (or to the switch, with in-network aggregation).
    Push { rank: usize, task: TaskRef, op: u64 },
    /// Switch to server: the aggregate.
    Aggregate { task: TaskRef },
    /// Server to worker (`rank`), or to all workers by multicast (`None`).
    Pull { rank: Option<usize>, task: TaskRef, server: usize },
}

/// Costs the protocol needs from the strategy.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PsSettings {
    /// Bytes on the wire per gradient byte pushed (1 / compression ratio).
    pub wire_factor: f64,
    /// Time to add one received gradient byte at the server, ns.
    pub reduce_ns_per_byte: f64,
}

/// Folding by server class (see the module documentation): workers `0..stride` and server
/// 0 are simulated, `stride = N / P`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ServerClasses {
    pub stride: usize,
}

impl ServerClasses {
    /// The folding of `workers` workers and the servers of `config` training `workload` (on
    /// a star, the servers after the workers), when the run is symmetric under moving
    /// workers by N / P and servers by one (every tensor splits evenly over the servers); `allowed`: the scenario's own conditions hold (folding
    /// allowed, every worker alike, nothing else differs, pieces released together).
    pub fn new(config: &PsConfig, workload: &Workload, workers: usize, allowed: bool) -> Option<Self> {
        let p = config.num_ps;
        let alike = config.placement == Placement::Sharded
            && !config.colocated
            && !config.multicast
            && !config.in_network_aggregation
            && config.switch_memory.is_none()
            && p > 1
            && workers.is_multiple_of(p)
            && workload.tensors.iter().all(|t| t.bytes.is_multiple_of(p as u64));
        (allowed && alike).then_some(ServerClasses { stride: workers / p })
    }

    /// Per link of `topo` (`hosts` worker hosts, then the servers'), its class's
    /// representative and weight 1: a worker's links stand for those of the workers N / P
    /// apart, a server's for every server's.
    pub fn links(&self, topo: &crate::topology::Topology, workers: usize) -> Vec<(crate::topology::LinkId, u32)> {
        let mut fold: Vec<(usize, u32)> = (0..topo.links().len()).map(|l| (l, 1)).collect();
        for h in 0..topo.hosts() {
            let rep = if h < workers { h % self.stride } else { workers };
            fold[topo.uplink(h)] = (topo.uplink(rep), 1);
            fold[topo.downlink(h)] = (topo.downlink(rep), 1);
        }
        fold
    }
}

/// Messages a server has started and not yet sent, at most: it sends on at its own link's
/// pace while fewer are held up further on (module documentation). The testbed's servers
/// keep as many in Gloo (`SEND_WINDOW` in `tensorwire/testbed/jobs/ps.py`).
const SEND_WINDOW: usize = 4;

/// See the module documentation.
pub(crate) struct ParameterServer {
    config: PsConfig,
    settings: PsSettings,
    tasks: Vec<Task>,
    /// Server of each task.
    server_of_task: Vec<usize>,
    workers: usize,
    arrivals: HashMap<TaskRef, usize>,
    aggregated: HashMap<u32, usize>,
    queues: Vec<VecDeque<(TaskRef, Option<usize>)>>,
    /// Per server: its last message is still crossing its own link (the pace).
    busy: Vec<bool>,
    /// Per server: its messages not yet sent (still moving somewhere on their path).
    in_flight: Vec<usize>,
    msgs: Slab<Msg>,
    /// In-network aggregation memory: free bytes, admitted pieces, waiting pushes.
    switch_free: u64,
    admitted: HashMap<TaskRef, bool>,
    admission: VecDeque<TaskRef>,
    waiting: HashMap<TaskRef, Vec<(usize, u64)>>,
    /// Folding by server class, if the run folds.
    classes: Option<ServerClasses>,
    /// Pieces held by the simulated servers (all of them, unless folded).
    simulated_pieces: usize,
    /// Hosts of the workers and servers when not the core's and the topology's (a job
    /// of a multi-job run).
    hosts: Option<JobHosts>,
}

impl ParameterServer {
    pub fn new(config: PsConfig, settings: PsSettings, tasks: Vec<Task>, tensor_sizes: &[u64], workers: usize) -> Self {
        let server_of_task = config.servers_of(&tasks, tensor_sizes);
        let servers = config.num_ps;
        let tasks_len = tasks.len();
        ParameterServer {
            switch_free: config.switch_memory.unwrap_or(u64::MAX),
            config,
            settings,
            tasks,
            server_of_task,
            workers,
            arrivals: HashMap::new(),
            aggregated: HashMap::new(),
            queues: vec![VecDeque::new(); servers],
            busy: vec![false; servers],
            in_flight: vec![0; servers],
            msgs: Slab::default(),
            admitted: HashMap::new(),
            admission: VecDeque::new(),
            waiting: HashMap::new(),
            simulated_pieces: tasks_len,
            classes: None,
            hosts: None,
        }
    }

    /// Simulates server 0 and workers `0..stride` only (see [`ServerClasses`]).
    pub fn folded_by(mut self, classes: Option<ServerClasses>) -> Self {
        self.classes = classes;
        if classes.is_some() {
            self.simulated_pieces = self.server_of_task.iter().filter(|&&s| s == 0).count();
        }
        self
    }

    /// Places the workers and servers on these hosts (a job of a multi-job run; `None`:
    /// workers where the core has its ranks, servers on the topology's server hosts).
    pub fn on_hosts(mut self, hosts: Option<JobHosts>) -> Self {
        self.hosts = hosts;
        self
    }

    /// The servers simulated: every one, or server 0 when folded.
    fn simulated_servers(&self) -> usize {
        if self.classes.is_some() {
            1
        } else {
            self.config.num_ps
        }
    }

    /// The piece that stands for `task` where it is received: itself, or when folded the
    /// piece server 0 holds of the same tensor (pieces are consecutive tasks, piece 0 first).
    fn home(&self, task: TaskRef) -> TaskRef {
        match self.classes {
            Some(_) => {
                TaskRef { iteration: task.iteration, task: task.task - self.tasks[task.task as usize].piece as u32 }
            }
            None => task,
        }
    }

    fn server_host(&self, core: &SimState, server: usize) -> usize {
        if self.config.colocated {
            // Server k on worker k's host (num_ps <= workers, checked by the strategy).
            return self.worker_host(core, server);
        }
        self.hosts.as_ref().map_or(core.ranks + server, |h| h.servers[server])
    }

    fn worker_host(&self, core: &SimState, rank: usize) -> usize {
        core.host_of(self.hosts.as_ref().map(|h| h.workers.as_slice()), rank)
    }

    fn task_bytes(&self, task: TaskRef) -> u64 {
        self.tasks[task.task as usize].bytes
    }

    fn pump(&mut self, core: &mut SimState, server: usize) {
        if self.busy[server] || self.in_flight[server] >= SEND_WINDOW {
            return;
        }
        let Some((task, rank)) = self.queues[server].pop_front() else {
            return;
        };
        self.busy[server] = true;
        self.in_flight[server] += 1;
        let dst = self.send_pull(core, server, task, rank, true);
        // The server's next message once this one has left its link (module documentation).
        let src = self.server_host(core, server);
        let leaves = core.leave_time(src, dst, self.task_bytes(task) as f64);
        core.wake_at(core.now + leaves, server as u64);
    }

    /// Starts server `server`'s pull of `task` to worker `rank` (all workers by multicast:
    /// `None`); returns the host of its first destination. `counted`: the pull counts
    /// against the server's send window until it has been sent.
    fn send_pull(
        &mut self,
        core: &mut SimState,
        server: usize,
        task: TaskRef,
        rank: Option<usize>,
        counted: bool,
    ) -> usize {
        let bytes = self.task_bytes(task) as f64;
        let user = self.msgs.insert(Msg::Pull { rank, task, server }) as u64;
        let src = self.server_host(core, server);
        let dsts: Vec<usize> = match (rank, self.classes) {
            // Folded: the pull to worker r stands for worker r mod N / P's from another server.
            (Some(r), Some(c)) => vec![self.worker_host(core, r % c.stride)],
            (Some(r), None) => vec![self.worker_host(core, r)],
            (None, _) => (0..self.workers).map(|r| self.worker_host(core, r)).collect(),
        };
        core.send(src, &dsts, bytes, 0, user, counted);
        dsts[0]
    }

    fn distribute(&mut self, core: &mut SimState, pieces: &[TaskRef]) {
        let workers = self.workers;
        for server in 0..self.simulated_servers() {
            let mine: Vec<TaskRef> =
                pieces.iter().copied().filter(|t| self.server_of_task[t.task as usize] == server).collect();
            // Each server's round of the workers (`PsConfig::worker_round`: from worker
            // j N / P, servers sharing a start by strides coprime with N).
            let round = self.config.worker_round(server, workers);
            let order = round.iter().copied();
            if self.config.multicast && self.config.distribution == Distribution::Concurrent {
                for &t in &mine {
                    self.send_pull(core, server, t, None, false);
                }
            } else if self.config.multicast {
                self.queues[server].extend(mine.iter().map(|&t| (t, None)));
            } else {
                match self.config.distribution {
                    Distribution::Concurrent => {
                        // Every pull now, in the round's order; they share the links.
                        for &t in &mine {
                            for w in order.clone() {
                                self.send_pull(core, server, t, Some(w), false);
                            }
                        }
                    }
                    Distribution::RoundRobin => {
                        for &t in &mine {
                            self.queues[server].extend(order.clone().map(|w| (t, Some(w))));
                        }
                    }
                    Distribution::Block => {
                        for w in order {
                            self.queues[server].extend(mine.iter().map(|&t| (t, Some(w))));
                        }
                    }
                }
            }
            self.pump(core, server);
        }
    }

    /// A piece has been aggregated at its server.
    fn aggregated(&mut self, core: &mut SimState, task: TaskRef) {
        if !self.config.barrier {
            self.distribute(core, &[task]);
            return;
        }
        let done = self.aggregated.entry(task.iteration).or_insert(0);
        *done += 1;
        if *done == self.simulated_pieces {
            self.aggregated.remove(&task.iteration);
            let all: Vec<TaskRef> =
                (0..self.tasks.len()).map(|t| TaskRef { iteration: task.iteration, task: t as u32 }).collect();
            self.distribute(core, &all);
        }
    }

    fn push(&mut self, core: &mut SimState, rank: usize, task: TaskRef, op: u64) {
        let bytes = self.task_bytes(task) as f64 * self.settings.wire_factor;
        let user = self.msgs.insert(Msg::Push { rank, task, op }) as u64;
        let host = self.worker_host(core, rank);
        if self.config.in_network_aggregation {
            core.send_over(&[core.topo.uplink(host)], HostEnd::Sends(host), bytes, user, false);
        } else {
            // Folded: every push goes to server 0 (the image of the push to its server).
            let server = if self.classes.is_some() { 0 } else { self.server_of_task[task.task as usize] };
            let dst = self.server_host(core, server);
            let add: Nanos = crate::limits::nanos_clamped((bytes * self.settings.reduce_ns_per_byte).round());
            core.send(host, &[dst], bytes, add, user, false);
        }
    }

    /// Admits waiting pieces to the switch memory in the order first requested.
    fn admit(&mut self, core: &mut SimState) {
        while let Some(&task) = self.admission.front() {
            let need = (self.task_bytes(task) as f64 * self.settings.wire_factor).ceil() as u64;
            let everything_free = self.switch_free == self.config.switch_memory.unwrap_or(u64::MAX);
            if need > self.switch_free && !everything_free {
                return;
            }
            self.admission.pop_front();
            self.switch_free = self.switch_free.saturating_sub(need);
            self.admitted.insert(task, true);
            for (rank, op) in self.waiting.remove(&task).unwrap_or_default() {
                self.push(core, rank, task, op);
            }
        }
    }
}

impl Protocol for ParameterServer {
    /// Server `user`'s last message has left its link: the next one may start.
    fn on_timer(&mut self, core: &mut SimState, user: u64) {
        let server = user as usize;
        self.busy[server] = false;
        self.pump(core, server);
    }

    fn start_op(&mut self, core: &mut SimState, rank: usize, op: u64, tasks: &[TaskRef], _bytes: u64) {
        let task = tasks[0];
        if self.config.in_network_aggregation
            && self.config.switch_memory.is_some()
            && !self.admitted.contains_key(&task)
        {
            let waiting = self.waiting.entry(task).or_default();
            if waiting.is_empty() {
                self.admission.push_back(task);
            }
            waiting.push((rank, op));
            self.admit(core);
            return;
        }
        self.push(core, rank, task, op);
    }

    fn on_flow(&mut self, core: &mut SimState, user: u64, delivered: bool) {
        if !delivered {
            match *self.msgs.get(user as usize) {
                Msg::Pull { server, .. } => {
                    self.in_flight[server] -= 1;
                    self.pump(core, server);
                }
                Msg::Aggregate { task } => {
                    if self.config.switch_memory.is_some() {
                        self.admitted.remove(&task);
                        let need = (self.task_bytes(task) as f64 * self.settings.wire_factor).ceil() as u64;
                        self.switch_free = (self.switch_free + need).min(self.config.switch_memory.unwrap());
                        self.admit(core);
                    }
                }
                Msg::Push { .. } => {}
            }
            return;
        }
        match self.msgs.remove(user as usize) {
            Msg::Push { rank, task, op } => {
                core.notes.push(Note::OpDone { rank, op, synced: false });
                let task = self.home(task);
                let count = self.arrivals.entry(task).or_insert(0);
                *count += 1;
                if *count < self.workers {
                    return;
                }
                self.arrivals.remove(&task);
                if self.config.in_network_aggregation {
                    let server = self.server_of_task[task.task as usize];
                    let host = self.server_host(core, server);
                    let bytes = self.task_bytes(task) as f64 * self.settings.wire_factor;
                    let user = self.msgs.insert(Msg::Aggregate { task }) as u64;
                    // From the switch: in no host's sent bytes, no host overhead.
                    core.send_over(&[core.topo.downlink(host)], HostEnd::Receives(host), bytes, user, true);
                } else {
                    self.aggregated(core, task);
                }
            }
            Msg::Aggregate { task } => self.aggregated(core, task),
            Msg::Pull { rank: Some(rank), task, .. } => match self.classes {
                Some(c) => {
                    // Worker rank mod N / P's piece P - k (mod P), k = rank / (N / P).
                    let p = self.config.num_ps;
                    let piece = (p - rank / c.stride % p) % p;
                    let task = TaskRef { iteration: task.iteration, task: task.task + piece as u32 };
                    core.notes.push(Note::TaskSynced { rank: rank % c.stride, task });
                }
                None => core.notes.push(Note::TaskSynced { rank, task }),
            },
            Msg::Pull { rank: None, task, .. } => {
                for rank in 0..self.workers {
                    core.notes.push(Note::TaskSynced { rank, task });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SEND_WINDOW;
    use crate::engine::simulate;
    use crate::engine::tests::{close, scenario, workload};
    use crate::metrics::Report;
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest, ProptestConfig};

    /// The run folded by server class if it folds, and unfolded.
    fn both(strategy: &str, n: usize, sizes: &[u64], compute_ns: u64) -> (Report, Report) {
        let mut sc = scenario(workload(sizes, compute_ns), n, strategy, 300);
        let folded = simulate(&sc).unwrap();
        sc.allow_folding = false;
        (folded, simulate(&sc).unwrap())
    }

    #[test]
    fn sharded_servers_fold_by_class_with_the_full_runs_results() {
        // 4 servers, 12 workers: server 0 and workers 0-2 simulated.
        let (folded, full) = both("ps:num_ps=4,placement=sharded", 12, &[40_000, 4_000, 120_000], 3_000);
        assert!(folded.folded && !full.folded);
        assert_eq!(folded.simulated_ranks, 3);
        assert!(folded.flows * 4 == full.flows, "{} vs {} flows", folded.flows, full.flows);
        for (a, b) in folded.completions_s.iter().zip(&full.completions_s) {
            assert!(close(*a, *b), "{a} vs {b}");
        }
        assert!(close(folded.comm_time_s, full.comm_time_s));
        assert!(close(folded.sent_bytes_per_worker, full.sent_bytes_per_worker));
        for ((l, a), (_, b)) in folded.link_utilization.iter().zip(&full.link_utilization) {
            assert!(close(*a, *b) || (a - b).abs() < 1e-12, "{l}: {a} vs {b}");
        }
    }

    #[test]
    fn servers_that_differ_do_not_fold() {
        // Round-robin placement (servers hold different tensors), a tensor that does not
        // split evenly, workers that are not a multiple of the servers, a credit.
        for (strategy, n, sizes) in [
            ("ps:num_ps=2", 8, vec![4_000u64, 8_000]),
            ("ps:num_ps=4,placement=sharded", 8, vec![4_000, 8_002]),
            ("ps:num_ps=3,placement=sharded", 8, vec![3_000]),
            ("ps:num_ps=2,placement=sharded,credit=4000B", 8, vec![4_000, 8_000]),
        ] {
            let (folded, full) = both(strategy, n, &sizes, 1_000);
            assert!(!folded.folded, "{strategy} n={n} {sizes:?}");
            assert_eq!(folded.completions_s, full.completions_s);
        }
    }

    /// The first iteration of `strategy` on `n` workers, one tensor of `s` bytes, zero
    /// compute, 1 B/ns links, `hop` ns per hop, recorded: its completion (ns) and, over its
    /// messages, the bytes times the links each crossed.
    fn first_iteration(strategy: &str, n: usize, s: u64, hop: u64) -> (f64, f64, Report) {
        let mut sc = scenario(workload(&[s], 0), n, strategy, hop);
        sc.iterations = 1;
        sc.record_timeline = true;
        sc.allow_folding = false; // every message on the timeline
        let r = simulate(&sc).unwrap();
        let link_bytes = r.timeline.iter().map(|f| f.bytes * f.links.len() as f64).sum();
        (r.completions_s[0] * 1e9, link_bytes, r)
    }

    #[test]
    fn colocated_servers_keep_their_own_workers_traffic_off_the_network() {
        // 2 workers, 2 servers each holding half of one tensor of S bytes; path latency L.
        let (s, hop) = (20_000u64, 50u64);
        let (sf, l) = (s as f64, 2.0 * hop as f64);
        let (apart, apart_bytes, _) = first_iteration("ps:num_ps=2,placement=sharded", 2, s, hop);
        let (together, together_bytes, r) = first_iteration("ps:num_ps=2,placement=sharded,colocated=true", 2, s, hop);
        // Servers apart: each worker pushes S/2 to each server over its uplink (S + L), then
        // each server sends S/2 to each worker, one after the other (S + L).
        assert!((apart - (2.0 * sf + 2.0 * l)).abs() < 1.0, "{apart}");
        // Co-located: the half for the worker's own server never leaves the host; the
        // other half crosses once each way (S/2 + L), the server's local pull is instant,
        // then its remote pull (S/2 + L).
        assert!((together - (sf + 2.0 * l)).abs() < 1.0, "{together}");
        // Per iteration, 2 workers x (S pushed + S pulled) cross 2 links each apart (8 S);
        // co-located, half of it stays on the hosts: 4 S on the links.
        assert!((apart_bytes - 8.0 * sf).abs() < 1e-6, "{apart_bytes}");
        assert!((together_bytes - 4.0 * sf).abs() < 1e-6, "{together_bytes}");
        // Host-local messages, on no link: each server's pull to its own worker (the local
        // pushes, instant at time 0, end before the recorded window opens).
        let local: Vec<_> = r.timeline.iter().filter(|f| f.links.is_empty()).collect();
        assert_eq!(local.len(), 2);
        assert!(local.iter().all(|f| f.to == vec![f.host] && f.bytes == sf / 2.0), "{local:?}");
        assert!(!r.folded);
        // What rank 0's host put on the wire: its remote push and its server's remote pull,
        // S/2 each, as a ring's 2(n-1)/n S; the host-local halves are not sent (they were
        // counted, 2 S in all).
        let mut steady = scenario(workload(&[s], 0), 2, "ps:num_ps=2,placement=sharded,colocated=true", hop);
        steady.iterations = 3;
        assert!((simulate(&steady).unwrap().sent_bytes_per_worker - sf).abs() < 1e-6);
    }

    #[test]
    fn sent_bytes_are_what_the_workers_uplink_carries_under_in_network_aggregation() {
        // One server, n workers, one tensor of S bytes, 1 B/ns links. Worker 0's uplink
        // carries its push of S to the switch; the switch's aggregate goes down to the
        // server and leaves no host's uplink. Server apart: nothing else, S. Co-located on
        // worker 0's host: its pulls to the n - 1 other workers too, n S (its pull to worker
        // 0 stays on the host), or with multicast one copy for all, 2 S. The aggregate had
        // been counted as worker 0's when its server was there: (n + 1) S and 3 S.
        let (n, s) = (4usize, 100_000u64);
        let sf = s as f64;
        for (strategy, expected) in [
            ("ps+ina", sf),
            ("ps+multicast+ina", sf),
            ("ps+ina:colocated=true", n as f64 * sf),
            ("ps+multicast+ina:colocated=true", 2.0 * sf),
        ] {
            let mut sc = scenario(workload(&[s], 0), n, strategy, 300);
            sc.iterations = 4;
            let r = simulate(&sc).unwrap();
            let utilisation = r.link_utilization.iter().find(|(l, _)| l == "h0->sw").unwrap().1;
            // Bytes per iteration on h0's uplink: its utilisation over an iteration at 1 B/ns
            // (within 1e-5: the window between completions cuts flows still moving).
            let uplink = utilisation * r.iteration_time_s * 1e9;
            assert!((r.sent_bytes_per_worker - expected).abs() < 1e-6, "{strategy}: sent {}", r.sent_bytes_per_worker);
            assert!((uplink - expected).abs() < 1e-5 * expected, "{strategy}: uplink {uplink}");
        }
    }

    #[test]
    fn the_switchs_aggregate_pays_no_host_overhead() {
        // One server apart, n workers, one tensor of S bytes, zero compute, path latency L
        // host to host (L / 2 to or from the switch), per-message overhead o. The pushes end
        // at S + L / 2 + o, the aggregate reaches the server S + L / 2 later (a switch's
        // message: no host overhead), and the server's n pulls leave its link one after
        // the other, the last delivered n S + L + o later: (n + 2) S + 2 L + 2 o. Charging
        // the host overhead to the aggregate had added a third o.
        let (n, s, hop, o) = (4usize, 20_000u64, 50u64, 7_000u64);
        let (with, _, _) = first_iteration(&format!("ps+ina:overhead={o}ns"), n, s, hop);
        let (without, _, _) = first_iteration("ps+ina", n, s, hop);
        let (nf, sf, l) = (n as f64, s as f64, 2.0 * hop as f64);
        assert!((without - ((nf + 2.0) * sf + 2.0 * l)).abs() < 1.0, "{without}");
        assert!((with - without - 2.0 * o as f64).abs() < 1.0, "{with} vs {without}");
    }

    #[test]
    fn colocated_local_messages_cost_a_host_copy() {
        // A copy rate of 2 B/ns (16 Gbps, above the 1 B/ns links): the local push (S/4)
        // hides behind the remote one (S/2 + L); the server's local pull, S/4, delays its
        // remote pull: 5S/4 + 2L.
        let (s, hop) = (20_000u64, 50u64);
        let (t, _, _) = first_iteration("ps:num_ps=2,placement=sharded,colocated=true,copy=16Gbps", 2, s, hop);
        assert!((t - (1.25 * s as f64 + 4.0 * hop as f64)).abs() < 1.0, "{t}");
    }

    #[test]
    fn concurrent_pulls_share_the_servers_link_and_end_together() {
        // One server, N workers, one tensor of S bytes, zero compute, path latency L: the N
        // pulls start together and share the server's uplink, each at B / N: all end
        // N S / B + L after they start. Every iteration is then the incast and the shared
        // distribution back to back: 2 (N S + L).
        let (n, s, hop) = (4usize, 10_000u64, 100u64);
        let (nf, sf, l) = (n as f64, s as f64, 2.0 * hop as f64);
        let mut sc = scenario(workload(&[s], 0), n, "ps:distribution=concurrent", hop);
        sc.iterations = 4;
        sc.record_timeline = true;
        let r = simulate(&sc).unwrap();
        let pulls: Vec<_> = r.timeline.iter().filter(|f| f.host == n).collect();
        assert_eq!(pulls.len(), n);
        for p in &pulls {
            assert!(((p.end_s - p.start_s) * 1e9 - (nf * sf + l)).abs() < 1.0, "{p:?}");
            assert_eq!((p.start_s, p.end_s), (pulls[0].start_s, pulls[0].end_s));
        }
        assert!((r.iteration_time_s * 1e9 - 2.0 * (nf * sf + l)).abs() < 1.0, "{}", r.iteration_time_s);
        // One message at a time (round-robin): the pulls end S / B apart.
        sc.strategy = crate::strategy::Strategy::parse("ps").unwrap();
        let serial = simulate(&sc).unwrap();
        let mut ends: Vec<f64> = serial.timeline.iter().filter(|f| f.host == n).map(|f| f.end_s).collect();
        ends.sort_by(f64::total_cmp);
        for w in ends.windows(2) {
            assert!(((w[1] - w[0]) * 1e9 - sf).abs() < 1.0, "{ends:?}");
        }
    }

    #[test]
    fn a_server_sends_on_once_its_message_has_left_its_own_link() {
        // 2 workers, 2 servers round-robin: tensor 0 (2S bytes) on server 0, tensor 1 (S)
        // on server 1; 1 B/ns links, zero compute, path latency L. Server 0 visits the
        // workers from worker 0, server 1 from worker 1 (`worker_round`). In the
        // distribution (from time D): server 0 sends 2S to worker 0 while server 1 sends S
        // to worker 1 and then, from D + S, S to worker 0, sharing worker 0's downlink:
        // both at 1/2. Server 0's message has left its link at its link's rate by D + 2S,
        // when its second message (2S to worker 1) starts: its uplink then carries both at
        // 1/2 (the first still held by worker 0's downlink) until the two messages to
        // worker 0 end at D + 3S; the last message has 1.5S left, alone: it ends at
        // D + 4.5S + L. Waiting for the first message to reach worker 0 (D + 3S) would
        // have ended it at D + 5S + L, with server 0's link half idle from D + S to D + 3S.
        let (s, hop) = (10_000u64, 50u64);
        let (sf, l) = (s as f64, 2.0 * hop as f64);
        let mut sc = scenario(workload(&[2 * s, s], 0), 2, "ps:num_ps=2", hop);
        sc.iterations = 1;
        sc.record_timeline = true;
        sc.allow_folding = false;
        let r = simulate(&sc).unwrap();
        let ns = |t: f64| t * 1e9;
        let mut pulls: Vec<_> = r.timeline.iter().filter(|f| f.host >= 2).collect();
        pulls.sort_by(|a, b| a.start_s.total_cmp(&b.start_s).then(a.host.cmp(&b.host)));
        assert_eq!(pulls.len(), 4, "{pulls:?}");
        let d = ns(pulls[0].start_s);
        let from_server0: Vec<_> = pulls.iter().filter(|f| f.host == 2).collect();
        assert_eq!((from_server0[0].to.clone(), from_server0[1].to.clone()), (vec![0], vec![1]));
        assert!((ns(from_server0[1].start_s) - (d + 2.0 * sf)).abs() < 1.0, "{pulls:?}");
        assert!((ns(from_server0[0].end_s) - (d + 3.0 * sf + l)).abs() < 1.0, "{pulls:?}");
        assert!((ns(from_server0[1].end_s) - (d + 4.5 * sf + l)).abs() < 1.0, "{pulls:?}");
        assert!((r.completions_s[0] * 1e9 - (d + 4.5 * sf + l)).abs() < 1.0, "{:?}", r.completions_s);
    }

    #[test]
    fn a_server_keeps_at_most_its_window_of_messages_moving() {
        // 8 workers on one leaf, the server on the next, a spine path at 1/8 of the host
        // links: every pull is held up there. The server starts one every S / B (its own
        // link's pace) until 4 are moving (SEND_WINDOW), then one each time one has been
        // sent; with no latency a message is sent when it is delivered.
        let s = 10_000u64;
        let mut sc = scenario(workload(&[s], 0), 8, "ps", 0);
        sc.topology =
            crate::topology::TopologySpec::parse("leaf-spine:hosts_per_leaf=8,spines=1,uplink=1Gbps").unwrap();
        sc.iterations = 1;
        sc.record_timeline = true;
        sc.allow_folding = false;
        let r = simulate(&sc).unwrap();
        let mut pulls: Vec<(f64, f64)> =
            r.timeline.iter().filter(|f| f.host == 8).map(|f| (f.start_s * 1e9, f.end_s * 1e9)).collect();
        pulls.sort_by(|a, b| a.0.total_cmp(&b.0));
        assert_eq!(pulls.len(), 8);
        let moving = |t: f64| pulls.iter().filter(|p| p.0 <= t && t < p.1).count();
        let most = pulls.iter().map(|p| moving(p.0)).max().unwrap();
        assert_eq!(most, SEND_WINDOW, "{pulls:?}");
        for (i, p) in pulls.iter().take(SEND_WINDOW).enumerate() {
            assert!((p.0 - pulls[0].0 - i as f64 * s as f64).abs() < 1.0, "{pulls:?}");
        }
        // The 5th starts when the first has been sent, not at its own pace (4 S / B).
        assert!((pulls[SEND_WINDOW].0 - pulls[0].1).abs() < 1.0, "{pulls:?}");
        assert!(pulls[SEND_WINDOW].0 > pulls[0].0 + 5.0 * s as f64, "{pulls:?}");
    }

    #[test]
    fn colocated_servers_beyond_the_workers_are_refused() {
        let sc = scenario(workload(&[4_000], 0), 2, "ps:num_ps=3,colocated=true", 0);
        let e = simulate(&sc).unwrap_err();
        assert_eq!(e.field(), "strategy.num_ps");
        let e =
            crate::engine::check(&sc.strategy, &crate::topology::TopologySpec::parse("star").unwrap(), 2).unwrap_err();
        assert_eq!(e.field(), "strategy.num_ps");
    }

    #[test]
    fn colocated_servers_run_with_multicast_in_network_aggregation_and_jobs_of_hosts() {
        for strategy in [
            "ps+multicast:num_ps=2,colocated=true",
            "ps+ina:num_ps=2,colocated=true",
            "ps:num_ps=4,placement=balanced,colocated=true,distribution=concurrent",
        ] {
            let (folded, full) = both(strategy, 4, &[4_000, 8_000, 12_000], 1_000);
            assert!(!folded.folded, "{strategy}");
            assert_eq!(folded.completions_s, full.completions_s, "{strategy}");
            assert!(full.iteration_time_s > 0.0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

        /// Random sharded parameter-server runs (servers, workers, sizes, compute, barrier,
        /// distribution, reduce cost, compression, priority) folded by server class agree
        /// with the full runs.
        #[test]
        fn folding_by_server_class_changes_nothing(
            p in 2usize..5,
            per_server in 1usize..5,
            pieces in prop::collection::vec(1u64..40_000, 1..5),
            compute_ns in 0u64..30_000,
            options in prop::sample::select(vec![
                "", ",barrier=false", ",distribution=block", ",reduce=6Gbps", ",compression=2", ",schedule=priority",
                ",distribution=concurrent", ",distribution=concurrent,barrier=false",
            ]),
        ) {
            let sizes: Vec<u64> = pieces.iter().map(|b| b * p as u64).collect();
            let strategy = format!("ps:num_ps={p},placement=sharded{options}");
            let n = p * per_server;
            let (folded, full) = both(&strategy, n, &sizes, compute_ns);
            let what = format!("{strategy} n={n} sizes={sizes:?}");
            prop_assert!(folded.folded, "{}", what);
            prop_assert_eq!(folded.simulated_ranks, per_server);
            for (a, b) in folded.completions_s.iter().zip(&full.completions_s) {
                prop_assert!(close(*a, *b), "{}: folded {} vs full {}", what, a, b);
            }
            prop_assert!(close(folded.comm_time_s, full.comm_time_s), "{}: comm {} vs {}", what, folded.comm_time_s, full.comm_time_s);
            prop_assert!(close(folded.sent_bytes_per_worker, full.sent_bytes_per_worker), "{}", what);
            for ((l, a), (_, b)) in folded.link_utilization.iter().zip(&full.link_utilization) {
                prop_assert!(close(*a, *b) || (a - b).abs() < 1e-12, "{}: {} {} vs {}", what, l, a, b);
            }
        }
    }
}
