//! Where each tensor lives on the parameter servers: one rule for the simulator's servers
//! (`engine/ps.rs`) and the testbed's real ones (through the bindings).

use super::Placement;

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
}
