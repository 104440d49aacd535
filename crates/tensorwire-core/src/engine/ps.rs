//! Parameter server (seed 000 section 3.3.1). Workers push each gradient piece to the
//! server that holds its tensor as soon as the scheduler releases it; a server has
//! aggregated a piece when every worker's copy has arrived. With the global barrier,
//! servers start sending parameters back only when every piece of the iteration is
//! aggregated on every server; without it, each piece goes back as soon as it is ready.
//! Each server sends one message at a time, in the distribution order (round-robin:
//! tensor-major; block: worker-major), which is what seed 000's validation found real
//! TensorFlow does.

use std::collections::{HashMap, VecDeque};

use super::core::{Core, Note, Protocol};
use super::slab::Slab;
use crate::sched::{Task, TaskRef};
use crate::strategy::{Distribution, Placement, PsConfig};

#[derive(Debug, Clone, Copy)]
enum Msg {
    Push { rank: usize, task: TaskRef, op: u64 },
    Pull { rank: usize, task: TaskRef, server: usize },
}

/// See the module documentation.
pub(crate) struct ParameterServer {
    config: PsConfig,
    tasks: Vec<Task>,
    /// Server of each tensor.
    server_of_tensor: Vec<usize>,
    workers: usize,
    arrivals: HashMap<TaskRef, usize>,
    aggregated: HashMap<u32, usize>,
    queues: Vec<VecDeque<(TaskRef, usize)>>,
    busy: Vec<bool>,
    msgs: Slab<Msg>,
}

/// Assigns tensors (given by their sizes, in `parameters()` order) to `servers` servers.
pub fn place(sizes: &[u64], servers: usize, placement: Placement) -> Vec<usize> {
    match placement {
        Placement::RoundRobin => (0..sizes.len()).map(|i| i % servers).collect(),
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
    pub fn new(config: PsConfig, tasks: Vec<Task>, tensor_sizes: &[u64], workers: usize) -> Self {
        let server_of_tensor = place(tensor_sizes, config.num_ps, config.placement);
        let servers = config.num_ps;
        ParameterServer {
            config,
            tasks,
            server_of_tensor,
            workers,
            arrivals: HashMap::new(),
            aggregated: HashMap::new(),
            queues: vec![VecDeque::new(); servers],
            busy: vec![false; servers],
            msgs: Slab::default(),
        }
    }

    fn server_host(&self, core: &Core, server: usize) -> usize {
        core.ranks + server
    }

    fn pump(&mut self, core: &mut Core, server: usize) {
        if self.busy[server] {
            return;
        }
        let Some((task, rank)) = self.queues[server].pop_front() else {
            return;
        };
        self.busy[server] = true;
        let bytes = self.tasks[task.task as usize].bytes as f64;
        let user = self.msgs.insert(Msg::Pull { rank, task, server }) as u64;
        let src = self.server_host(core, server);
        core.send(src, core.host_of_rank[rank], bytes, user, true);
    }

    fn distribute(&mut self, core: &mut Core, pieces: &[TaskRef]) {
        let workers = self.workers;
        for server in 0..self.config.num_ps {
            let mine: Vec<TaskRef> = pieces
                .iter()
                .copied()
                .filter(|t| self.server_of_tensor[self.tasks[t.task as usize].tensor] == server)
                .collect();
            match self.config.distribution {
                Distribution::RoundRobin => {
                    for &t in &mine {
                        self.queues[server].extend((0..workers).map(|w| (t, w)));
                    }
                }
                Distribution::Block => {
                    for w in 0..workers {
                        self.queues[server].extend(mine.iter().map(|&t| (t, w)));
                    }
                }
            }
            self.pump(core, server);
        }
    }
}

impl Protocol for ParameterServer {
    fn start_op(&mut self, core: &mut Core, rank: usize, op: u64, tasks: &[TaskRef], bytes: u64) {
        let task = tasks[0];
        let server = self.server_of_tensor[self.tasks[task.task as usize].tensor];
        let user = self.msgs.insert(Msg::Push { rank, task, op }) as u64;
        let dst = self.server_host(core, server);
        core.send(core.host_of_rank[rank], dst, bytes as f64, user, false);
    }

    fn on_flow(&mut self, core: &mut Core, user: u64, delivered: bool) {
        if !delivered {
            if let Msg::Pull { server, .. } = *self.msgs.get(user as usize) {
                self.busy[server] = false;
                self.pump(core, server);
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
            Msg::Pull { rank, task, .. } => core.notes.push(Note::TaskSynced { rank, task }),
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
