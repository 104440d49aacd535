//! Collectives on sub-communicators, all running at once: [`InGroups`] (contiguous groups
//! of `size` ranks, e.g. the GPUs of one machine: HSDP's shard groups) and
//! [`AcrossGroups`] (the ranks with equal `rank % size`, one from each group: HSDP's
//! replica groups). The payload is each group's own buffer.

use super::{Recv, Send, Step, StepSchedule};

/// `inner` inside each contiguous group of `size` ranks.
#[derive(Debug)]
pub struct InGroups {
    /// The collective each group runs.
    pub inner: Box<dyn StepSchedule>,
    /// Ranks per group; divides the number of ranks.
    pub size: usize,
}

/// `inner` among the ranks with equal `rank % size` (rank `r` is member `r / size`).
#[derive(Debug)]
pub struct AcrossGroups {
    /// The collective each set of peers runs.
    pub inner: Box<dyn StepSchedule>,
    /// Ranks per group; divides the number of ranks.
    pub size: usize,
}

/// How many leading digits of `layout` (innermost first) make up one group of `size`
/// ranks, when their product is exactly `size`.
pub fn group_digits(layout: &[usize], size: usize) -> Option<usize> {
    let (mut within, mut product) = (0, 1);
    while within < layout.len() && product < size {
        product *= layout[within];
        within += 1;
    }
    (product == size).then_some(within)
}

/// The layouts (innermost digit first) of one contiguous group of `size` ranks and of the
/// set of groups, when a group is whole leading digits of `layout` and possibly a part of
/// the next one that divides it: on `[8, 4]` (8 GPUs per node, 4 nodes), groups of 16 are
/// `[8, 2]` (2 whole nodes) and the groups form `[2]`. `None` when groups cut across
/// digits otherwise (then only flat collectives fit them).
pub fn split_layout(layout: &[usize], size: usize) -> Option<(Vec<usize>, Vec<usize>)> {
    let (mut within, mut product) = (0, 1);
    while within < layout.len() && product * layout[within] <= size && size.is_multiple_of(product * layout[within]) {
        product *= layout[within];
        within += 1;
    }
    let part = size / product;
    if part == 1 {
        return Some((layout[..within].to_vec(), layout[within..].to_vec()));
    }
    let next = *layout.get(within)?;
    if !next.is_multiple_of(part) {
        return None;
    }
    let mut group = layout[..within].to_vec();
    group.push(part);
    let mut across = vec![next / part];
    across.extend_from_slice(&layout[within + 1..]);
    Some((group, across))
}

/// Maps a step of a sub-communicator onto global ranks.
fn lift(step: Step, global: impl Fn(usize) -> usize) -> Step {
    Step {
        sends: step
            .sends
            .into_iter()
            .map(|s| Send { to: s.to.into_iter().map(&global).collect(), chunks: s.chunks })
            .collect(),
        recvs: step.recvs.into_iter().map(|r| Recv { from: global(r.from), ..r }).collect(),
    }
}

impl StepSchedule for InGroups {
    fn steps(&self, _n: usize, pipeline: usize) -> usize {
        self.inner.steps(self.size, pipeline)
    }
    fn chunk_count(&self, _n: usize, pipeline: usize) -> usize {
        self.inner.chunk_count(self.size, pipeline)
    }
    fn step(&self, rank: usize, _n: usize, pipeline: usize, step: usize) -> Step {
        let base = rank / self.size * self.size;
        lift(self.inner.step(rank % self.size, self.size, pipeline, step), |r| base + r)
    }
    fn rank_symmetric(&self, n: usize) -> bool {
        n == self.size && self.inner.rank_symmetric(n)
    }
    fn pipelines(&self) -> bool {
        self.inner.pipelines()
    }
    fn label(&self) -> &'static str {
        self.inner.label()
    }
    fn invariant_digits(&self, n: usize, layout: &[usize]) -> Vec<bool> {
        // The layout's first digits must make up one group; those follow the inner
        // schedule, the others move whole groups onto groups.
        let Some(within) = group_digits(layout, self.size).filter(|_| n.is_multiple_of(self.size)) else {
            return vec![false; layout.len()];
        };
        let inner = self.inner.invariant_digits(self.size, &layout[..within]);
        (0..layout.len()).map(|d| if d < within { inner[d] } else { true }).collect()
    }
}

impl StepSchedule for AcrossGroups {
    fn steps(&self, n: usize, pipeline: usize) -> usize {
        self.inner.steps(n / self.size, pipeline)
    }
    fn chunk_count(&self, n: usize, pipeline: usize) -> usize {
        self.inner.chunk_count(n / self.size, pipeline)
    }
    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
        let (member, slot) = (rank / self.size, rank % self.size);
        lift(self.inner.step(member, n / self.size, pipeline, step), |m| m * self.size + slot)
    }
    fn rank_symmetric(&self, n: usize) -> bool {
        self.size == 1 && self.inner.rank_symmetric(n)
    }
    fn pipelines(&self) -> bool {
        self.inner.pipelines()
    }
    fn label(&self) -> &'static str {
        self.inner.label()
    }
    fn invariant_digits(&self, n: usize, layout: &[usize]) -> Vec<bool> {
        let Some(within) = group_digits(layout, self.size).filter(|_| n.is_multiple_of(self.size)) else {
            return vec![false; layout.len()];
        };
        let outer = if within < layout.len() {
            self.inner.invariant_digits(n / self.size, &layout[within..])
        } else {
            Vec::new()
        };
        // Translating a digit inside a group moves every member to the same slot of its group.
        (0..layout.len()).map(|d| if d < within { true } else { outer[d - within] }).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collectives::levels::{LevelPhase, Levels};
    use crate::collectives::{check, Ring};

    #[test]
    fn groups_run_their_collective_on_their_own_members() {
        for (size, n) in [(2, 6), (3, 6), (4, 8), (1, 4), (4, 4)] {
            let within = InGroups { inner: Box::new(Ring), size };
            let across = AcrossGroups { inner: Box::new(Ring), size };
            check::all_reduce_in_groups(&within, n, |r| r / size);
            check::all_reduce_in_groups(&across, n, |r| r % size);
        }
    }

    #[test]
    fn groups_may_take_part_of_a_digit() {
        assert_eq!(split_layout(&[8, 4], 16), Some((vec![8, 2], vec![2])));
        assert_eq!(split_layout(&[8, 4], 8), Some((vec![8], vec![4])));
        assert_eq!(split_layout(&[8, 4], 32), Some((vec![8, 4], vec![])));
        assert_eq!(split_layout(&[8, 4], 4), Some((vec![4], vec![2, 4])));
        assert_eq!(split_layout(&[8, 4, 2], 16), Some((vec![8, 2], vec![2, 2])));
        assert_eq!(split_layout(&[8, 3], 16), None);
        assert_eq!(split_layout(&[8, 6], 24), Some((vec![8, 3], vec![2])));
        assert_eq!(split_layout(&[8, 6], 32), None);
    }

    #[test]
    fn invariance_follows_the_groups_and_the_inner_schedule() {
        let layout = [4, 3, 2];
        let within = InGroups { inner: Box::new(Ring), size: 4 };
        assert_eq!(within.invariant_digits(24, &layout), vec![true, true, true]);
        check::invariant(&within, &layout);
        let levels = Levels { levels: vec![3], phase: LevelPhase::AllReduce };
        let across = AcrossGroups { inner: Box::new(levels), size: 4 };
        assert_eq!(across.invariant_digits(24, &layout), vec![true, true, true]);
        check::invariant(&across, &layout);
        let ring_across = AcrossGroups { inner: Box::new(Ring), size: 4 };
        assert_eq!(ring_across.invariant_digits(24, &layout), vec![true, false, true]);
        check::invariant(&ring_across, &layout);
    }
}
