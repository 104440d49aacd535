//! Folding by digit translations (DESIGN.md principle 5), beyond the star/ring folding
//! that simulates rank 0 alone.
//!
//! The ranks are laid out in mixed radix ([`Topology::layout`]). When a set `H` of digits
//! is invariant both for the topology ([`Topology::invariant_digits`]: translating the
//! digit maps links and routes onto links and routes) and for the schedule
//! ([`StepSchedule::invariant_digits`]: it maps what each rank does onto what the
//! translated rank does), every rank behaves exactly like its *representative*, the rank
//! with its `H` digits set to zero. The engine simulates the representatives only:
//!
//! - a message to rank `b` is received by `b`'s representative (the message `b` receives
//!   is the translated image of one that the representative receives, at the same time);
//! - a flow stands for its |H| images; on the representative `c` of each link orbit `O`
//!   its route touches it carries weight `k |H| / |O|`, `k` being the number of its links
//!   in `O` (the images' `k |H|` crossings spread evenly over the `|O|` links of the orbit);
//! - each link reports the bytes of its orbit's representative.
//!
//! Cost: building is O(links x digits + ranks); each flow's route costs O(hops) more.
//!
//! [`Topology::layout`]: crate::topology::Topology::layout
//! [`Topology::invariant_digits`]: crate::topology::Topology::invariant_digits
//! [`StepSchedule::invariant_digits`]: crate::collectives::StepSchedule::invariant_digits

use crate::collectives::StepSchedule;
use crate::topology::{LinkId, Topology};

/// Representative ranks and where each rank's representative is simulated.
#[derive(Debug, Clone)]
pub(crate) struct RankFold {
    /// Simulated index -> rank (the representatives, in increasing order).
    pub reps: Vec<usize>,
    /// Rank -> simulated index of its representative.
    pub slot: Vec<u32>,
}

impl RankFold {
    /// The rank simulated at index `i`.
    pub fn rank(&self, i: usize) -> usize {
        self.reps[i]
    }

    /// Recorded compute spans name simulated indices; this names their ranks instead.
    pub fn relabel(&self, spans: &mut Option<Vec<super::ComputeSpan>>) {
        for span in spans.iter_mut().flatten() {
            span.0 = self.rank(span.0);
        }
    }

    /// The simulated index standing for `rank`.
    pub fn slot(&self, rank: usize) -> usize {
        self.slot[rank] as usize
    }
}

/// The folding of a scenario: its ranks and, per link, its orbit's representative and the
/// weight |H| / orbit size of one crossing.
pub(crate) struct DigitFold {
    pub ranks: RankFold,
    pub links: Vec<(LinkId, u32)>,
}

impl DigitFold {
    /// The folding of `n` ranks on `topo` under `schedule`, when the digits invariant for
    /// both form a non-trivial group whose link orbits the topology can build.
    pub fn new(topo: &Topology, n: usize, schedule: &dyn StepSchedule) -> Option<Self> {
        Self::for_all(topo, n, &[schedule])
    }

    /// The folding under every schedule of `schedules` at once (the digits invariant for
    /// the topology and for each of them).
    pub fn for_all(topo: &Topology, n: usize, schedules: &[&dyn StepSchedule]) -> Option<Self> {
        let layout = topo.layout(n);
        let t = topo.invariant_digits(n);
        let mut h: Vec<bool> = (0..layout.len()).map(|d| t.get(d) == Some(&true)).collect();
        for schedule in schedules {
            let s = schedule.invariant_digits(n, &layout);
            for (d, keep) in h.iter_mut().enumerate() {
                *keep &= s.get(d) == Some(&true);
            }
        }
        let order: usize = (0..layout.len()).filter(|&d| h[d]).map(|d| layout[d]).product();
        if order <= 1 {
            return None;
        }
        let orbits = topo.link_orbits(n, &h)?;
        // A rank's representative: its H digits zeroed.
        let rep_of = |mut x: usize| {
            let (mut rep, mut place) = (0, 1);
            for (d, &radix) in layout.iter().enumerate() {
                if !h[d] {
                    rep += (x % radix) * place;
                }
                x /= radix;
                place *= radix;
            }
            rep
        };
        let reps: Vec<usize> = (0..n).filter(|&r| rep_of(r) == r).collect();
        let mut index = vec![u32::MAX; n];
        for (i, &r) in reps.iter().enumerate() {
            index[r] = i as u32;
        }
        let slot = (0..n).map(|r| index[rep_of(r)]).collect();
        let links = (0..topo.links().len())
            .map(|l| (orbits.representative(l), (order / orbits.orbit_size(l)) as u32))
            .collect();
        Some(DigitFold { ranks: RankFold { reps, slot }, links })
    }
}
