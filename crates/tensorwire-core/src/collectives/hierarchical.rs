//! Hierarchical all-reduce: inside each machine a binomial reduce to its first GPU, a
//! ring all-reduce among those leaders across machines, then a binomial broadcast inside
//! each machine. Intra-machine links (NVLink) carry the local phases; only leaders use
//! the network.

use super::{BinomialTree, Recv, Ring, Send, Step, StepSchedule};

/// See the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct Hierarchical {
    /// Ranks per machine.
    pub group: usize,
}

fn ceil_log2(n: usize) -> usize {
    if n <= 1 {
        0
    } else {
        (usize::BITS - (n - 1).leading_zeros()) as usize
    }
}

impl Hierarchical {
    fn machines(&self, n: usize) -> usize {
        n.div_ceil(self.group)
    }

    /// Local binomial levels (the largest machine decides).
    fn local_levels(&self, n: usize) -> usize {
        ceil_log2(self.group.min(n))
    }

    /// Maps a sub-schedule step onto global ranks and the global chunk space.
    fn lift(step: Step, base: usize, scale: usize) -> Step {
        Step {
            sends: step
                .sends
                .into_iter()
                .map(|s| Send {
                    to: s.to.iter().map(|&t| base + t).collect(),
                    chunks: s.chunks.start * scale..s.chunks.end * scale,
                })
                .collect(),
            recvs: step
                .recvs
                .into_iter()
                .map(|r| Recv {
                    from: base + r.from,
                    chunks: r.chunks.start * scale..r.chunks.end * scale,
                    reduce: r.reduce,
                })
                .collect(),
        }
    }
}

impl StepSchedule for Hierarchical {
    fn steps(&self, n: usize, _pipeline: usize) -> usize {
        2 * self.local_levels(n) + Ring.steps(self.machines(n), 1)
    }

    fn chunk_count(&self, n: usize, _pipeline: usize) -> usize {
        self.machines(n)
    }

    fn step(&self, rank: usize, n: usize, _pipeline: usize, step: usize) -> Step {
        let (machines, levels) = (self.machines(n), self.local_levels(n));
        let machine = rank / self.group;
        let base = machine * self.group;
        let local_n = self.group.min(n - base);
        let local = rank - base;
        let ring_steps = Ring.steps(machines, 1);
        if step < levels {
            // Reduce inside the machine (the binomial tree's first half).
            let st =
                if step < ceil_log2(local_n) { BinomialTree.step(local, local_n, 1, step) } else { Step::default() };
            return Self::lift(st, base, machines);
        }
        if step < levels + ring_steps {
            if local != 0 {
                return Step::default();
            }
            let st = Ring.step(machine, machines, 1, step - levels);
            // Ring ranks are machines; their leaders are ranks machine * group.
            return Step {
                sends: st
                    .sends
                    .into_iter()
                    .map(|s| Send { to: s.to.iter().map(|&m| m * self.group).collect(), chunks: s.chunks })
                    .collect(),
                recvs: st
                    .recvs
                    .into_iter()
                    .map(|r| Recv { from: r.from * self.group, chunks: r.chunks, reduce: r.reduce })
                    .collect(),
            };
        }
        // Broadcast inside the machine (the binomial tree's second half), aligned to the end.
        let k = step - levels - ring_steps;
        let own = ceil_log2(local_n);
        let st = if k + own >= levels {
            BinomialTree.step(local, local_n, 1, own + k + own - levels)
        } else {
            Step::default()
        };
        Self::lift(st, base, machines)
    }

    fn rank_symmetric(&self, n: usize) -> bool {
        n == 1
    }

    /// The top digit when it shifts ranks by whole machines (the ring of leaders rotates
    /// and every machine's local phases move with it).
    fn invariant_digits(&self, n: usize, layout: &[usize]) -> Vec<bool> {
        let top = layout.iter().rposition(|&r| r > 1);
        let place: usize = top.map_or(1, |t| layout[..t].iter().product());
        if n.is_multiple_of(self.group) && place.is_multiple_of(self.group) {
            super::cyclic_shift_digits(layout)
        } else {
            layout.iter().map(|&r| r == 1).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::check;

    #[test]
    fn hierarchical_is_invariant_under_whole_machine_shifts() {
        for (group, layout) in [(2, vec![2, 3]), (4, vec![4, 2, 3]), (2, vec![4, 3]), (3, vec![2, 3, 2]), (2, vec![6])]
        {
            check::invariant(&Hierarchical { group }, &layout);
        }
        assert_eq!(Hierarchical { group: 4 }.invariant_digits(24, &[4, 2, 3]), vec![false, false, true]);
        assert_eq!(Hierarchical { group: 3 }.invariant_digits(12, &[2, 3, 2]), vec![false, false, true]);
        assert_eq!(Hierarchical { group: 4 }.invariant_digits(12, &[2, 3, 2]), vec![false, false, false]);
    }

    #[test]
    fn hierarchical_computes_the_sum() {
        for group in 1..6 {
            for n in 1..20 {
                check::all_reduce(&Hierarchical { group }, n, 1);
            }
        }
    }
}
