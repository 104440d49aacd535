//! Where each tensor lives on the parameter servers, what the servers synchronise and in
//! which order they send: one rule for the simulator's servers (`engine/ps.rs`) and the
//! testbed's real ones (through the bindings); and where the servers themselves run.

use super::{Family, Placement, PsConfig, Strategy};
use crate::error::{Error, Result};
use crate::sched::{partition, partition_even, Task};
use crate::workload::Workload;

impl PsConfig {
    /// The tasks of a parameter-server run: with `placement=sharded` every tensor cut into
    /// `num_ps` even pieces ([`partition_even`]: piece `p` on server `p`), else each tensor
    /// whole or in pieces of at most `partition` bytes ([`partition`]).
    pub fn tasks(&self, workload: &Workload, partition_bytes: Option<u64>) -> Result<Vec<Task>> {
        if self.placement == Placement::Sharded {
            Ok(partition_even(workload, self.num_ps))
        } else {
            partition(workload, partition_bytes)
        }
    }

    /// The server of each of `tasks` (of tensors of `tensor_sizes` bytes): piece `p mod P`
    /// under `placement=sharded`, else its tensor's ([`Placement::assign`]).
    pub fn servers_of(&self, tasks: &[Task], tensor_sizes: &[u64]) -> Vec<usize> {
        let by_tensor = self.placement.assign(tensor_sizes, self.num_ps);
        let sharded = self.placement == Placement::Sharded;
        tasks.iter().map(|t| if sharded { t.piece % self.num_ps.max(1) } else { by_tensor[t.tensor] }).collect()
    }

    /// The order in which server `server` sends to `workers` workers in a distribution
    /// round. Servers start their rounds at different workers (server `j` at worker
    /// `j N / P`), so that equal-sized streams from several servers do not collide on one
    /// worker's downlink message after message. With more servers than workers some share a
    /// start: each then steps through the workers by its own stride coprime with N
    /// (`round_stride`: 1, then backwards), so that two of them meet on a worker twice a
    /// round at most instead of at every message (9 sharded servers on 8 workers ran 1.49x
    /// slower than 8, where every server's link carries less, then 1.29x with the strides
    /// while a server waited for each message to arrive; 1.06x now that it sends on once a
    /// message has left its own link, docs/simulator.md).
    ///
    /// ```
    /// use tensorwire_core::strategy::Strategy;
    /// let s = Strategy::parse("ps:num_ps=2").unwrap();
    /// let tensorwire_core::strategy::Family::ParameterServer(c) = &s.family else { unreachable!() };
    /// assert_eq!((c.worker_round(0, 4), c.worker_round(1, 4)), (vec![0, 1, 2, 3], vec![2, 3, 0, 1]));
    /// ```
    pub fn worker_round(&self, server: usize, workers: usize) -> Vec<usize> {
        let servers = self.num_ps.max(1);
        let first = server * workers / servers;
        let sharing = (0..server).filter(|&s| s * workers / servers == first).count();
        let stride = round_stride(workers, sharing);
        (0..workers).map(|i| (first + i * stride) % workers).collect()
    }

    /// Refuses co-located servers (`colocated=true`: server `k` on worker `k`'s host, as
    /// BytePS and TensorFlow run them) that outnumber the workers' hosts.
    pub fn check_workers(&self, workers: usize) -> Result<()> {
        if self.colocated && self.num_ps > workers {
            return Err(Error::invalid(
                "strategy.num_ps",
                format!(
                    "{} co-located servers need as many workers' hosts, and there are {workers} workers: use num_ps <= {workers}, or colocated=false",
                    self.num_ps
                ),
            ));
        }
        Ok(())
    }
}

impl Strategy {
    /// Refuses what the strategy cannot run on `workers` workers (co-located servers
    /// beyond the workers' hosts); every other strategy runs on any count.
    pub fn check_workers(&self, workers: usize) -> Result<()> {
        match &self.family {
            Family::ParameterServer(c) => c.check_workers(workers),
            _ => Ok(()),
        }
    }
}

/// The `k`-th stride (from 0) through `n` workers that visits every one of them (coprime
/// with `n`): 1, then `n - 1` (the same round backwards), then the other coprimes upwards,
/// cycling where there are fewer than `k + 1`. Two servers starting at one worker with
/// strides `a` and `b` meet at the steps `i` where `(a - b) i = 0 mod n`: `gcd(a - b, n)`
/// times a round, at most twice for the first two (`gcd(n - 2, n) <= 2`).
fn round_stride(n: usize, k: usize) -> usize {
    let mut strides = vec![1];
    if n > 2 {
        strides.push(n - 1);
    }
    strides.extend((2..n.saturating_sub(1)).filter(|&s| crate::arith::gcd(s, n) == 1));
    strides[k % strides.len()]
}

impl Placement {
    /// The server of each tensor, given the tensors' sizes in bytes (in `parameters()`
    /// order), on `servers` servers (at least 1). `RoundRobin` puts tensor `i` on server
    /// `i mod P` (TensorFlow's default); `Balanced` puts each tensor, in order, on the
    /// server with the fewest bytes so far (ties to the lowest index); for `Sharded` every
    /// tensor is on every server (its pieces are spread by index), and the server returned
    /// is that of its first piece, `i mod P`.
    ///
    /// ```
    /// use tensorwire_core::strategy::Placement;
    /// assert_eq!(Placement::RoundRobin.assign(&[5, 1, 1], 2), vec![0, 1, 0]);
    /// assert_eq!(Placement::Balanced.assign(&[5, 1, 1], 2), vec![0, 1, 1]);
    /// ```
    pub fn assign(self, sizes: &[u64], servers: usize) -> Vec<usize> {
        let servers = servers.max(1);
        match self {
            Placement::RoundRobin | Placement::Sharded => (0..sizes.len()).map(|i| i % servers).collect(),
            Placement::Balanced => {
                let mut load = vec![0u64; servers];
                sizes
                    .iter()
                    .map(|&b| {
                        let s = (0..servers).min_by_key(|&s| (load[s], s)).unwrap_or(0);
                        load[s] = load[s].saturating_add(b);
                        s
                    })
                    .collect()
            }
        }
    }

    /// The name written in a spec (`placement=`).
    pub fn name(self) -> &'static str {
        match self {
            Placement::RoundRobin => "round-robin",
            Placement::Balanced => "balanced",
            Placement::Sharded => "sharded",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_sharing_a_start_meet_on_a_worker_at_most_twice_a_round() {
        // With more servers than workers, two servers that start at one worker step by
        // different strides coprime with N (1 and N - 1): their orders are permutations of
        // the workers and coincide at step i only where 2 i = 0 mod N (i = 0, N / 2).
        for n in [3usize, 4, 5, 6, 7, 8, 12, 16] {
            for k in 0..2 {
                let stride = round_stride(n, k);
                let mut seen: Vec<usize> = (0..n).map(|i| i * stride % n).collect();
                seen.sort_unstable();
                assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n {n}, stride {stride}");
            }
            let (a, b) = (round_stride(n, 0), round_stride(n, 1));
            assert_ne!(a, b, "n {n}");
            let meets = (0..n).filter(|&i| (i * a) % n == (i * b) % n).count();
            assert!(meets <= 2, "n {n}: strides {a}, {b} meet {meets} times");
        }
        assert_eq!(round_stride(2, 1), 1, "2 workers have one order");
        // Ten servers on five workers: servers 0 and 1 both start at worker 0, the second
        // backwards.
        let Family::ParameterServer(c) = Strategy::parse("ps:num_ps=10").unwrap().family else { unreachable!() };
        assert_eq!(c.worker_round(1, 5), vec![0, 4, 3, 2, 1]);
    }

    #[test]
    fn sharded_servers_refuse_a_piece_size_as_the_spec_is_parsed() {
        // Every tensor is cut into num_ps even pieces: a piece size would be ignored.
        for spec in ["ps:num_ps=2,placement=sharded,partition=1MiB", "ps:placement=sharded,pipeline=4MiB"] {
            assert_eq!(Strategy::parse(spec).unwrap_err().field(), "strategy.placement", "{spec}");
        }
        assert!(Strategy::parse("ps:num_ps=2,placement=balanced,partition=1MiB").is_ok());
    }

    #[test]
    fn round_robin_placement_cycles_and_balanced_evens_bytes() {
        assert_eq!(Placement::RoundRobin.assign(&[5, 5, 5, 5, 5], 2), vec![0, 1, 0, 1, 0]);
        // Greedy by bytes in order: 100 -> s0, 1 -> s1, 1 -> s1, 50 -> s1.
        assert_eq!(Placement::Balanced.assign(&[100, 1, 1, 50], 2), vec![0, 1, 1, 1]);
        assert_eq!(Placement::Sharded.assign(&[100, 1, 1], 2), vec![0, 1, 0]);
    }

    #[test]
    fn colocated_servers_need_as_many_workers_and_take_no_hosts() {
        let s = Strategy::parse("ps:num_ps=3,colocated=true").unwrap();
        assert_eq!(s.servers(), 0);
        assert!(s.check_workers(3).is_ok() && s.check_workers(8).is_ok());
        let e = s.check_workers(2).unwrap_err();
        assert_eq!(e.field(), "strategy.num_ps");
        assert!(!e.to_string().contains('\n'), "{e}");
        // Servers of their own: any count of workers, one host per server.
        let own = Strategy::parse("ps:num_ps=3").unwrap();
        assert_eq!(own.servers(), 3);
        assert!(own.check_workers(2).is_ok());
        assert!(Strategy::parse("ring").unwrap().check_workers(1).is_ok());
    }
}
