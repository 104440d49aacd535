//! Parameter servers (seed 000 sections 3.3.1, 3.4, 9). Workers push each gradient piece
//! to the server that holds it as soon as the scheduler releases it; a server has
//! aggregated a piece when every worker's copy has arrived. With the global barrier,
//! servers start sending parameters back only when every piece of the iteration is
//! aggregated on every server; without it, each piece goes back as soon as it is ready.
//! Each server sends one message at a time in the distribution order (round-robin:
//! tensor-major; block: worker-major), which is what seed 000's validation found real
//! TensorFlow does.
//!
//! - **Multicast**: a server sends each piece once; the switch replicates it to every
//!   worker, so the server's uplink carries the model once instead of N times.
//! - **In-network aggregation**: pushes stop at the switch, which forwards one aggregated
//!   copy to the server once every worker's copy of the piece has arrived. With a switch
//!   memory limit, pieces are admitted in the order first requested, and a worker's push
//!   of a piece waits until the piece has memory; the memory is freed once the aggregate
//!   has left the switch. Modelled on a star (the one switch aggregates).

use std::collections::{HashMap, VecDeque};

use super::core::{Core, Note, Protocol};
use super::slab::Slab;
use crate::sched::{Task, TaskRef};
use crate::strategy::{Distribution, Placement, PsConfig};
use crate::units::Nanos;

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
    busy: Vec<bool>,
    msgs: Slab<Msg>,
    /// In-network aggregation memory: free bytes, admitted pieces, waiting pushes.
    switch_free: u64,
    admitted: HashMap<TaskRef, bool>,
    admission: VecDeque<TaskRef>,
    waiting: HashMap<TaskRef, Vec<(usize, u64)>>,
}

/// Assigns tensors (given by their sizes, in `parameters()` order) to `servers` servers;
/// for `Sharded` every tensor is on every server (its pieces are spread by index).
pub fn place(sizes: &[u64], servers: usize, placement: Placement) -> Vec<usize> {
    match placement {
        Placement::RoundRobin | Placement::Sharded => (0..sizes.len()).map(|i| i % servers).collect(),
        Placement::Balanced => {
            let mut load = vec![0u64; servers];
            sizes
                .iter()
                .map(|&b| {
                    let s = (0..servers).min_by_key(|&s| (load[s], s)).unwrap();
                    load[s] += b;
                    s
                })
                .collect()
        }
    }
}

impl ParameterServer {
    pub fn new(config: PsConfig, settings: PsSettings, tasks: Vec<Task>, tensor_sizes: &[u64], workers: usize) -> Self {
        let by_tensor = place(tensor_sizes, config.num_ps, config.placement);
        let server_of_task = tasks
            .iter()
            .map(|t| if config.placement == Placement::Sharded { t.piece % config.num_ps } else { by_tensor[t.tensor] })
            .collect();
        let servers = config.num_ps;
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
            msgs: Slab::default(),
            admitted: HashMap::new(),
            admission: VecDeque::new(),
            waiting: HashMap::new(),
        }
    }

    fn server_host(&self, core: &Core, server: usize) -> usize {
        core.ranks + server
    }

    fn task_bytes(&self, task: TaskRef) -> u64 {
        self.tasks[task.task as usize].bytes
    }

    fn pump(&mut self, core: &mut Core, server: usize) {
        if self.busy[server] {
            return;
        }
        let Some((task, rank)) = self.queues[server].pop_front() else {
            return;
        };
        self.busy[server] = true;
        let bytes = self.task_bytes(task) as f64;
        let user = self.msgs.insert(Msg::Pull { rank, task, server }) as u64;
        let src = self.server_host(core, server);
        let dsts: Vec<usize> = match rank {
            Some(r) => vec![core.host_of_rank[r]],
            None => core.host_of_rank.clone(),
        };
        core.send(src, &dsts, bytes, 0, user, true);
    }

    fn distribute(&mut self, core: &mut Core, pieces: &[TaskRef]) {
        let workers = self.workers;
        for server in 0..self.config.num_ps {
            let mine: Vec<TaskRef> =
                pieces.iter().copied().filter(|t| self.server_of_task[t.task as usize] == server).collect();
            // Servers start their round at different workers (server j at worker j N / P), so
            // that equal-sized streams from several servers do not collide on one worker's
            // downlink message after message.
            let first = server * workers / self.config.num_ps;
            let order = (0..workers).map(move |i| (first + i) % workers);
            if self.config.multicast {
                self.queues[server].extend(mine.iter().map(|&t| (t, None)));
            } else {
                match self.config.distribution {
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
    fn aggregated(&mut self, core: &mut Core, task: TaskRef) {
        if !self.config.barrier {
            self.distribute(core, &[task]);
            return;
        }
        let done = self.aggregated.entry(task.iteration).or_insert(0);
        *done += 1;
        if *done == self.tasks.len() {
            self.aggregated.remove(&task.iteration);
            let all: Vec<TaskRef> =
                (0..self.tasks.len()).map(|t| TaskRef { iteration: task.iteration, task: t as u32 }).collect();
            self.distribute(core, &all);
        }
    }

    fn push(&mut self, core: &mut Core, rank: usize, task: TaskRef, op: u64) {
        let bytes = self.task_bytes(task) as f64 * self.settings.wire_factor;
        let user = self.msgs.insert(Msg::Push { rank, task, op }) as u64;
        let host = core.host_of_rank[rank];
        if self.config.in_network_aggregation {
            core.send_over(&[core.topo.uplink(host)], host, bytes, user, false);
        } else {
            let server = self.server_of_task[task.task as usize];
            let dst = self.server_host(core, server);
            let add: Nanos = (bytes * self.settings.reduce_ns_per_byte).round() as Nanos;
            core.send(host, &[dst], bytes, add, user, false);
        }
    }

    /// Admits waiting pieces to the switch memory in the order first requested.
    fn admit(&mut self, core: &mut Core) {
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
    fn start_op(&mut self, core: &mut Core, rank: usize, op: u64, tasks: &[TaskRef], _bytes: u64) {
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

    fn on_flow(&mut self, core: &mut Core, user: u64, delivered: bool) {
        if !delivered {
            match *self.msgs.get(user as usize) {
                Msg::Pull { server, .. } => {
                    self.busy[server] = false;
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
                    core.send_over(&[core.topo.downlink(host)], host, bytes, user, true);
                } else {
                    self.aggregated(core, task);
                }
            }
            Msg::Aggregate { task } => self.aggregated(core, task),
            Msg::Pull { rank: Some(rank), task, .. } => core.notes.push(Note::TaskSynced { rank, task }),
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
    use super::*;

    #[test]
    fn round_robin_placement_cycles_and_balanced_evens_bytes() {
        assert_eq!(place(&[5, 5, 5, 5, 5], 2, Placement::RoundRobin), vec![0, 1, 0, 1, 0]);
        // Greedy by bytes in order: 100 -> s0, 1 -> s1, 1 -> s1, 50 -> s1.
        assert_eq!(place(&[100, 1, 1, 50], 2, Placement::Balanced), vec![0, 1, 1, 1]);
    }
}
