//! Where each tensor lives on the parameter servers: one rule for the simulator's servers
//! (`engine/ps.rs`) and the testbed's real ones (through the bindings); and where the
//! servers themselves run.

use super::{Family, Placement, PsConfig, Strategy};
use crate::error::{Error, Result};

impl PsConfig {
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
