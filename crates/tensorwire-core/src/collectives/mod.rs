//! Collective schedules: which rank sends how much to whom at each step. Pure functions
//! of (rank, ranks, pipeline chunks, step), shared by the simulator's executor and,
//! through the bindings, by runtimes.
//!
//! Every schedule is checked by executing it on integer vectors (`check::all_reduce`):
//! after the last step every rank must hold the sum.

mod activation;
mod alltoall;
mod broadcast;
mod doubling;
mod gputree;
mod groups;
mod halves;
mod hierarchical;
mod levels;
mod ring;
mod tree;

pub use activation::{activation_children, activation_parent};
pub use alltoall::PairwiseAllToAll;
pub use broadcast::{BinomialBroadcast, ChainBroadcast};
pub use doubling::{HalvingDoubling, RecursiveDoubling};
pub use gputree::GpuTrees;
pub use groups::{group_digits, split_layout, AcrossGroups, InGroups};
pub use halves::{AllGather, ReduceScatter, Splits};
pub use hierarchical::Hierarchical;
pub use levels::{LevelPhase, Levels};
pub use ring::{Ring, RingMulticast};
pub use tree::{BinomialTree, DoubleBinaryTree};

use std::ops::Range;

use smallvec::SmallVec;

/// Destination ranks of one message. Inline up to two (every schedule but a multicast
/// to many): schedules are asked for a step once per rank and step, millions of times in
/// a large unfolded run, so a step must not allocate.
pub type Ranks = SmallVec<[usize; 2]>;

/// One message a rank sends at a step: a contiguous range of the payload's
/// `chunk_count` equal chunks (its size is range length / chunk count of the payload).
#[derive(Debug, Clone, PartialEq)]
pub struct Send {
    /// Destination ranks; more than one means one multicast message.
    pub to: Ranks,
    /// Chunks sent.
    pub chunks: Range<usize>,
}

/// One message a rank receives at a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Recv {
    /// Source rank.
    pub from: usize,
    /// Chunks received.
    pub chunks: Range<usize>,
    /// Added to the local chunks (reduce) or copied over them (gather / broadcast).
    pub reduce: bool,
}

/// What one rank does in one step.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    /// Messages sent (inline up to two: no allocation per step).
    pub sends: SmallVec<[Send; 2]>,
    /// Messages received (inline up to two).
    pub recvs: SmallVec<[Recv; 2]>,
}

/// A collective in which every rank runs the same numbered steps; step `s` at a rank
/// starts once its step `s-1` sends were delivered and its step `s-1` receives arrived.
pub trait StepSchedule: std::fmt::Debug + std::marker::Send + Sync {
    /// Number of steps for `n` ranks when the payload is pipelined in `pipeline` pieces
    /// (only tree schedules pipeline; others ignore it).
    fn steps(&self, n: usize, pipeline: usize) -> usize;
    /// Number of equal chunks the payload is cut into (chunk indices in [`Send`]).
    fn chunk_count(&self, n: usize, pipeline: usize) -> usize;
    /// What `rank` does at `step`.
    fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step;
    /// Whether every rank does the same thing up to renumbering, so one rank can stand
    /// for all on a star (see the engine's folding).
    fn rank_symmetric(&self, n: usize) -> bool;
    /// Whether each rank only ever talks to `rank +/- 1`, so the schedule stays symmetric
    /// on a physical ring topology too.
    fn neighbours_only(&self) -> bool {
        false
    }
    /// The one rank that `rank` sends every message to, one message per step, if there is
    /// such a rank (a ring's successor); lets the engine time a collective whose messages
    /// have links of their own without events (`engine/lanes.rs`). Default: none.
    fn fixed_peer(&self, _rank: usize, _n: usize) -> Option<usize> {
        None
    }
    /// Per digit of a mixed-radix rank layout (radices innermost first, product `n`; see
    /// `Topology::layout`): whether translating that digit by +1 modulo its radix (no
    /// carry) maps what every rank does onto what the translated rank does: the same
    /// steps, messages of the same sizes to the translated destinations, receives of the
    /// same sizes from the translated sources with the same reduce flags (the chunk indices
    /// may differ). The engine folds over digits invariant for both the schedule and the
    /// topology. Default: none.
    fn invariant_digits(&self, _n: usize, layout: &[usize]) -> Vec<bool> {
        vec![false; layout.len()]
    }
    /// The collective it performs, as traces and reports name it.
    fn label(&self) -> &'static str {
        "allreduce"
    }
    /// Whether the payload is pipelined through the schedule in pieces.
    fn pipelines(&self) -> bool {
        false
    }
    /// The `pipeline` argument for a payload of `wire_bytes` on the wire that holds
    /// `elements` array elements (the tensor's count, whatever `reduce_dtype` or
    /// compression make of its bytes): pipelined schedules cut it into pieces of
    /// `piece_bytes` (at most `max`); GPU trees choose one tree or all by `elements`;
    /// others take 1.
    fn pieces_for(&self, wire_bytes: f64, _elements: f64, piece_bytes: f64, max: usize) -> usize {
        if self.pipelines() {
            ((wire_bytes / piece_bytes).ceil() as usize).clamp(1, max)
        } else {
            1
        }
    }
}

/// The step schedule of an all-reduce algorithm by name, as runtimes execute it; the
/// names and schedules come from the algorithm table (`strategy::algorithm`).
pub use crate::strategy::algorithm::by_name;

/// The digits whose translation is a cyclic shift of all ranks: the top digit with a
/// radix above 1 (it shifts every rank by the product of the radices below it, modulo
/// the ranks), and every radix-1 digit (translating those does nothing). A schedule that
/// is invariant under rotation (ring) is invariant under these.
pub fn cyclic_shift_digits(layout: &[usize]) -> Vec<bool> {
    let top = layout.iter().rposition(|&r| r > 1);
    (0..layout.len()).map(|d| layout[d] == 1 || Some(d) == top).collect()
}

/// What a collective computes (docs/collectives.md; S is always the full buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Collective {
    /// Every rank ends with the sum of every rank's S bytes.
    #[default]
    AllReduce,
    /// Every rank ends with the sum of its 1/N shard of the S bytes.
    ReduceScatter,
    /// Every rank ends with the S bytes made of every rank's 1/N shard.
    AllGather,
    /// Every rank ends with rank 0's S bytes.
    Broadcast,
    /// Rank j ends with block j (S/N bytes) of every rank's S bytes.
    AllToAll,
}

/// The collectives' names, as written in microbenchmarks and workload files.
pub const COLLECTIVE_NAMES: &[&str] = &["allreduce", "reducescatter", "allgather", "broadcast", "alltoall"];

impl Collective {
    /// Its name.
    pub fn name(self) -> &'static str {
        COLLECTIVE_NAMES[self as usize]
    }

    /// Parses a name (`field` names the input in errors).
    pub fn parse(field: &str, text: &str) -> crate::Result<Collective> {
        const ALL: [Collective; 5] = [
            Collective::AllReduce,
            Collective::ReduceScatter,
            Collective::AllGather,
            Collective::Broadcast,
            Collective::AllToAll,
        ];
        ALL.into_iter().find(|c| c.name() == text).ok_or_else(|| {
            crate::Error::invalid(
                field,
                format!("unknown collective {text:?}; choose one of {}", COLLECTIVE_NAMES.join(", ")),
            )
        })
    }
}

/// Largest power of two <= n (n >= 1).
pub(crate) fn floor_pow2(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

#[cfg(test)]
pub(crate) mod check {
    use super::*;

    /// Runs `schedule` on integer vectors (rank r, chunk c starts at r * 1000 + c + 1) and
    /// returns every rank's vector at the end.
    pub fn execute(schedule: &dyn StepSchedule, n: usize, pipeline: usize) -> Vec<Vec<i64>> {
        let chunks = schedule.chunk_count(n, pipeline);
        let mut data: Vec<Vec<i64>> =
            (0..n).map(|r| (0..chunks).map(|c| (r * 1000 + c) as i64 + 1).collect()).collect();
        for s in 0..schedule.steps(n, pipeline) {
            let steps: Vec<Step> = (0..n).map(|r| schedule.step(r, n, pipeline, s)).collect();
            type Msg = (usize, Range<usize>, Vec<i64>);
            let mut inbox: Vec<Vec<Msg>> = vec![Vec::new(); n];
            for (r, st) in steps.iter().enumerate() {
                for send in &st.sends {
                    assert!(send.chunks.end <= chunks && !send.chunks.is_empty());
                    for &d in &send.to {
                        inbox[d].push((r, send.chunks.clone(), data[r][send.chunks.clone()].to_vec()));
                    }
                }
            }
            for (r, st) in steps.iter().enumerate() {
                let mut got = inbox[r].clone();
                assert_eq!(got.len(), st.recvs.len(), "{schedule:?} n={n} step={s} rank={r}: messages vs receives");
                for recv in &st.recvs {
                    let i = got
                        .iter()
                        .position(|(from, range, _)| *from == recv.from && *range == recv.chunks)
                        .unwrap_or_else(|| panic!("{schedule:?} n={n} step={s} rank={r}: nothing from {}", recv.from));
                    let (_, range, values) = got.swap_remove(i);
                    for (c, v) in range.zip(values) {
                        if recv.reduce {
                            data[r][c] += v;
                        } else {
                            data[r][c] = v;
                        }
                    }
                }
            }
        }
        data
    }

    /// The sum over `ranks` of chunk `c`'s starting values.
    fn sum(ranks: impl Iterator<Item = usize>, c: usize) -> i64 {
        ranks.map(|r| (r * 1000 + c) as i64 + 1).sum()
    }

    /// Executes `schedule` on integer vectors and asserts every rank ends with the sum.
    pub fn all_reduce(schedule: &dyn StepSchedule, n: usize, pipeline: usize) {
        let data = execute(schedule, n, pipeline);
        let expected: Vec<i64> = (0..data[0].len()).map(|c| sum(0..n, c)).collect();
        for (r, d) in data.iter().enumerate() {
            assert_eq!(d, &expected, "{schedule:?} n={n} pipeline={pipeline} rank={r}");
        }
    }

    /// Asserts every rank ends with the sum over the ranks of its group (`group(rank)`).
    pub fn all_reduce_in_groups(schedule: &dyn StepSchedule, n: usize, group: impl Fn(usize) -> usize) {
        let data = execute(schedule, n, 1);
        for (r, d) in data.iter().enumerate() {
            let expected: Vec<i64> = (0..d.len()).map(|c| sum((0..n).filter(|&x| group(x) == group(r)), c)).collect();
            assert_eq!(d, &expected, "{schedule:?} n={n} rank={r}");
        }
    }

    /// Asserts a reduce-scatter: every chunk's full sum ends on exactly one rank, and every
    /// rank holds the same number of them.
    pub fn reduce_scatter(schedule: &dyn StepSchedule, n: usize) {
        let data = execute(schedule, n, 1);
        let chunks = data[0].len();
        let mut held = vec![0; n];
        for c in 0..chunks {
            let full = sum(0..n, c);
            let holders: Vec<usize> =
                data.iter().enumerate().filter_map(|(r, d)| (d[c] == full).then_some(r)).collect();
            assert_eq!(holders.len(), 1, "{schedule:?} n={n} chunk={c}: {holders:?}");
            held[holders[0]] += 1;
        }
        assert!(held.iter().all(|&h| h == chunks / n), "{schedule:?} n={n}: {held:?}");
    }

    /// Asserts every rank ends with rank 0's vector.
    pub fn broadcast(schedule: &dyn StepSchedule, n: usize, pipeline: usize) {
        let data = execute(schedule, n, pipeline);
        for (r, d) in data.iter().enumerate() {
            assert_eq!(d, &data[0], "{schedule:?} n={n} pipeline={pipeline} rank={r}");
        }
    }

    /// Asserts an all-to-all: rank j ends with rank i's chunk j in its slot i, for every i.
    /// Unlike [`execute`], a received block lands where the receive says (its slot for the
    /// sender), not where it sat in the sender's buffer.
    pub fn all_to_all(schedule: &dyn StepSchedule, n: usize) {
        let input: Vec<Vec<i64>> = (0..n).map(|r| (0..n).map(|c| (r * 1000 + c) as i64 + 1).collect()).collect();
        let mut data: Vec<Vec<i64>> =
            (0..n).map(|r| (0..n).map(|c| if c == r { input[r][c] } else { 0 }).collect()).collect();
        for s in 0..schedule.steps(n, 1) {
            let steps: Vec<Step> = (0..n).map(|r| schedule.step(r, n, 1, s)).collect();
            for (r, st) in steps.iter().enumerate() {
                for recv in &st.recvs {
                    let sent = steps[recv.from].sends.iter().find(|m| m.to.contains(&r)).expect("a matching send");
                    assert_eq!(sent.chunks.len(), recv.chunks.len());
                    let values = input[recv.from][sent.chunks.clone()].to_vec();
                    data[r][recv.chunks.clone()].copy_from_slice(&values);
                }
            }
        }
        for (j, d) in data.iter().enumerate() {
            let expected: Vec<i64> = (0..n).map(|i| (i * 1000 + j) as i64 + 1).collect();
            assert_eq!(d, &expected, "{schedule:?} n={n} rank={j}");
        }
    }

    /// Two schedules one after the other, on the same chunks (tests: halves make a whole).
    #[derive(Debug)]
    pub struct Concat<A, B>(pub A, pub B);

    impl<A: StepSchedule, B: StepSchedule> StepSchedule for Concat<A, B> {
        fn steps(&self, n: usize, pipeline: usize) -> usize {
            self.0.steps(n, pipeline) + self.1.steps(n, pipeline)
        }
        fn chunk_count(&self, n: usize, pipeline: usize) -> usize {
            assert_eq!(self.0.chunk_count(n, pipeline), self.1.chunk_count(n, pipeline));
            self.0.chunk_count(n, pipeline)
        }
        fn step(&self, rank: usize, n: usize, pipeline: usize, step: usize) -> Step {
            let k = self.0.steps(n, pipeline);
            if step < k {
                self.0.step(rank, n, pipeline, step)
            } else {
                self.1.step(rank, n, pipeline, step - k)
            }
        }
        fn rank_symmetric(&self, n: usize) -> bool {
            self.0.rank_symmetric(n) && self.1.rank_symmetric(n)
        }
    }

    /// Brute force: every digit `schedule` declares invariant for `layout` maps each rank's
    /// steps onto the translated rank's (destinations and sources translated, sizes and
    /// reduce flags equal).
    pub fn invariant(schedule: &dyn StepSchedule, layout: &[usize]) {
        let n: usize = layout.iter().product();
        let claims = schedule.invariant_digits(n, layout);
        assert_eq!(claims.len(), layout.len());
        for d in (0..layout.len()).filter(|&d| claims[d]) {
            let t = |x: usize| {
                let place: usize = layout[..d].iter().product();
                let digit = x / place % layout[d];
                x - digit * place + (digit + 1) % layout[d] * place
            };
            for s in 0..schedule.steps(n, 1) {
                for r in 0..n {
                    let (a, b) = (schedule.step(r, n, 1, s), schedule.step(t(r), n, 1, s));
                    let sends = |st: &Step, map: &dyn Fn(usize) -> usize| {
                        let mut v: Vec<(Vec<usize>, usize)> = st
                            .sends
                            .iter()
                            .map(|m| {
                                let mut to: Vec<usize> = m.to.iter().map(|&x| map(x)).collect();
                                to.sort();
                                (to, m.chunks.len())
                            })
                            .collect();
                        v.sort();
                        v
                    };
                    let recvs = |st: &Step, map: &dyn Fn(usize) -> usize| {
                        let mut v: Vec<(usize, usize, bool)> =
                            st.recvs.iter().map(|m| (map(m.from), m.chunks.len(), m.reduce)).collect();
                        v.sort();
                        v
                    };
                    let what = format!("{schedule:?} layout={layout:?} digit={d} step={s} rank={r}");
                    assert_eq!(sends(&a, &t), sends(&b, &|x| x), "{what}");
                    assert_eq!(recvs(&a, &t), recvs(&b, &|x| x), "{what}");
                }
            }
        }
    }

    /// Bytes each rank sends in total, as a fraction of the payload.
    pub fn sent_fraction(schedule: &dyn StepSchedule, n: usize, rank: usize) -> f64 {
        let chunks = schedule.chunk_count(n, 1) as f64;
        (0..schedule.steps(n, 1))
            .flat_map(|s| schedule.step(rank, n, 1, s).sends)
            .map(|m| m.chunks.len() as f64 / chunks)
            .sum()
    }
}
