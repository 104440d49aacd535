//! Compute slowed while communication kernels run on the same GPU (NCCL's kernels hold
//! one SM per channel; docs/design/nccl-research.md §6), shared by the engine's
//! all-reduce loop (`nccl`, `ddp`: `mod.rs`) and the stream programs of the sharded
//! strategies (`program.rs`).
//!
//! Model: a compute piece of `w` ns (its time alone) advances at rate 1 while no
//! collective of its rank is in flight and at `1 / (1 + slowdown)` while one or more are.
//! A piece fully overlapped thus takes `w (1 + slowdown)`, which is how the source
//! defines its figure (arXiv 2507.03114: 18.9% on average, `nccl::DEFAULT_COMPUTE_SLOWDOWN`);
//! a piece overlapped for `o` ns of wall-clock time is stretched by `o * slowdown / (1 + slowdown)`.
//! Several collectives at once slow it no more than one (the source measured one).

use crate::units::Nanos;

/// The slowdown of compute while communicating (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Interference {
    /// Fractional slowdown while communicating (0: none).
    pub slowdown: f64,
}

/// A compute piece under [`Interference`]: its work left (ns at full speed) as of `since`,
/// whether its rank was communicating since then, and when it ends at that pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Piece {
    work_left: f64,
    since: Nanos,
    communicating: bool,
    /// When the piece ends if nothing changes, ns.
    pub due: Nanos,
}

impl Interference {
    /// The slowdown of `sc`'s strategy on its fabric ([`crate::strategy::Strategy::compute_slowdown_on`]).
    pub fn of(sc: &super::Scenario) -> Self {
        Interference { slowdown: sc.strategy.compute_slowdown_on(&sc.topology) }
    }

    /// Whether compute slows at all.
    pub fn is_on(self) -> bool {
        self.slowdown > 0.0
    }

    /// Wall-clock ns per ns of compute work, with or without a collective in flight.
    fn stretch(self, communicating: bool) -> f64 {
        if communicating {
            1.0 + self.slowdown
        } else {
            1.0
        }
    }

    /// Wall-clock ns to finish `left` ns of work at the stretch for `communicating`.
    fn time_to_finish(self, left: f64, communicating: bool) -> Nanos {
        crate::limits::nanos_clamped((left * self.stretch(communicating)).round())
    }

    /// A piece of `work` ns of compute (its time alone) starting `now`; what interference
    /// adds to it at this pace is added to `added`.
    pub fn start(self, now: Nanos, work: f64, communicating: bool, added: &mut Added) -> Piece {
        let due = now.saturating_add(self.time_to_finish(work, communicating));
        added.0 = added.0.saturating_add((due - now).saturating_sub(work.round() as Nanos));
        Piece { work_left: work, since: now, communicating, due }
    }

    /// The piece's rank starts or stops communicating `now`: the piece goes on at its new
    /// pace, and its [`Piece::due`] moves (and `added` with it).
    pub fn switch(self, piece: &mut Piece, now: Nanos, communicating: bool, added: &mut Added) {
        let before = piece.due;
        let done = (now - piece.since) as f64 / self.stretch(piece.communicating);
        piece.work_left = (piece.work_left - done).max(0.0);
        piece.since = now;
        piece.communicating = communicating;
        piece.due = now.saturating_add(self.time_to_finish(piece.work_left, communicating));
        // The piece's stretch moves with its end (never below 0: an earlier end gives back
        // at most what this piece had added).
        added.0 = added.0.saturating_add(piece.due).saturating_sub(before);
    }
}

/// Compute time interference added to one rank so far, ns: every piece's wall-clock time
/// beyond its work, the piece in progress at its current pace (so a reading taken while a
/// piece runs holds that piece's projected stretch; two readings at the same point of two
/// iterations, as the report takes them, hold one each). The report's
/// `compute_interference_s` is rank 0's, per measured iteration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Added(pub Nanos);

/// Collectives in flight on a rank (or on every rank at once).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct InFlight(u32);

impl InFlight {
    /// One more (`true`) or one fewer collective in flight; returns whether the rank
    /// started or stopped communicating (the count left or reached 0).
    pub fn change(&mut self, started: bool) -> bool {
        let before = self.0 > 0;
        self.0 = if started { self.0 + 1 } else { self.0.checked_sub(1).expect("finished collectives were started") };
        before != (self.0 > 0)
    }

    /// Whether a collective is in flight.
    pub fn any(self) -> bool {
        self.0 > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interference_stretches_compute_by_the_overlapped_time() {
        let i = Interference { slowdown: 0.25 };
        let mut added = Added::default();
        // Fully overlapped: w (1 + s).
        assert_eq!(i.start(0, 1000.0, true, &mut added).due, 1250);
        assert_eq!(added, Added(250));
        assert_eq!(i.start(0, 1000.0, false, &mut added).due, 1000);
        assert_eq!(added, Added(250));
        // 500 ns of wall-clock time overlapped do 400 ns of work; the other 600 run alone:
        // 1000 + 500 s / (1 + s) = 1100 ns in all.
        let mut added = Added::default();
        let mut p = i.start(0, 1000.0, true, &mut added);
        i.switch(&mut p, 500, false, &mut added);
        assert_eq!((p.due, added), (1100, Added(100)));
        // And back: 100 ns alone, then the 500 left slowed to 625.
        i.switch(&mut p, 600, true, &mut added);
        assert_eq!((p.due, added), (600 + 625, Added(225)));
        assert_eq!(Interference { slowdown: 0.0 }.start(3, 777.0, true, &mut added).due, 780);
        assert_eq!(added, Added(225));
    }

    #[test]
    fn in_flight_reports_only_the_edges() {
        let mut f = InFlight::default();
        assert!(f.change(true));
        assert!(!f.change(true));
        assert!(!f.change(false));
        assert!(f.any());
        assert!(f.change(false));
        assert!(!f.any());
    }
}
