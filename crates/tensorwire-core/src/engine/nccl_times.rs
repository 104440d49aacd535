//! NCCL's time for each collective a run issues, computed once per (schedule index,
//! payload bytes): the one table behind every executor timed by NCCL's model (`nccl` and
//! `ddp` in `mod.rs`, the sharded programs in `sharded.rs`), handed to
//! [`TimedCollective`](super::timed::TimedCollective) as its [`Durations`].
//!
//! Each schedule index has its [`NcclGroup`]: the fabric NCCL sees, the collective, the
//! user's restrictions and the bytes on the wire per payload byte. The sizes a run is known
//! to issue are timed up front ([`NcclTimes::new`]), so that a restriction NCCL refuses is
//! an error before anything is simulated; a size first seen while simulating (a fused
//! bucket) is timed on first use by the same function and kept.
//!
//! **A refusal while simulating is a bug.** [`nccl::choose`] refuses for the fabric, the
//! collective and the restrictions, never for the size (it times any size, 0 included); a
//! size first seen while simulating comes from a schedule whose up-front sizes were timed
//! with the same fabric, collective and restrictions, so it cannot be refused. Should it be
//! anyway (or a schedule index have no group), debug builds stop there with a panic naming
//! it, and release builds give the operation no end: it lasts until the horizon
//! ([`HORIZON_NS`]), where the event loop stops the run with its error
//! (`limits::horizon_error`). Either way no number is reported from a wrong duration (the
//! sharded programs' former table would have timed such an operation at 0 ns).

use std::cell::RefCell;
use std::collections::HashMap;

use super::timed::{Durations, Timed};
use crate::collectives::Collective;
use crate::error::Result;
use crate::limits::HORIZON_NS;
use crate::nccl::{self, NcclFabric, NcclOptions};

/// How the collectives of one schedule index are timed.
#[derive(Debug, Clone)]
pub(crate) struct NcclGroup {
    /// The fabric NCCL sees (its communicator's ranks).
    pub fabric: NcclFabric,
    /// The collective it runs.
    pub collective: Collective,
    /// The user's restrictions (`nccl:algo=,proto=,channels=`).
    pub options: NcclOptions,
    /// Bytes on the wire per payload byte (reduce dtype over listed dtype, over
    /// compression): NCCL's buffer is `bytes x wire_factor`.
    pub wire_factor: f64,
}

impl NcclGroup {
    /// NCCL's time for a payload of `bytes` (its buffer: `bytes x wire_factor`) and the
    /// bytes each rank sends ([`Timed::of`]).
    fn time(&self, bytes: u64) -> Result<Timed> {
        let size = bytes as f64 * self.wire_factor;
        let (choice, fastest) = nccl::choose_and_fastest(&self.fabric, self.collective, size, &self.options)?;
        Ok(Timed::of(&self.fabric, self.collective, &choice, &fastest, size))
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct NcclTimes {
    /// By schedule index.
    groups: Vec<NcclGroup>,
    /// Times computed so far, by (schedule index, payload bytes).
    known: RefCell<HashMap<(usize, u64), Timed>>,
}

impl NcclTimes {
    /// The table for `groups` (by schedule index), with every (schedule, bytes) of `sizes`
    /// timed now, in order: the first refusal is the error.
    pub fn new(groups: Vec<NcclGroup>, sizes: impl IntoIterator<Item = (usize, u64)>) -> Result<Self> {
        let mut known = HashMap::new();
        for key in sizes {
            if let std::collections::hash_map::Entry::Vacant(e) = known.entry(key) {
                e.insert(groups[key.0].time(key.1)?);
            }
        }
        Ok(NcclTimes { groups, known: RefCell::new(known) })
    }

    /// The time of `bytes` under schedule `schedule`: from the table, else computed now and
    /// kept; refused or an unknown schedule (bugs, see the module documentation): a debug
    /// assertion, else an operation that lasts until the horizon.
    pub fn get(&self, schedule: usize, bytes: u64) -> Timed {
        if let Some(&t) = self.known.borrow().get(&(schedule, bytes)) {
            return t;
        }
        let t = match self.groups.get(schedule).map(|g| g.time(bytes)) {
            Some(Ok(t)) => t,
            refused => {
                debug_assert!(
                    false,
                    "NCCL refused schedule {schedule} over {bytes} bytes after its restrictions were checked: {refused:?}"
                );
                Timed { ns: HORIZON_NS, ..Timed::default() }
            }
        };
        self.known.borrow_mut().insert((schedule, bytes), t);
        t
    }

    /// The table as a timed executor's durations.
    pub fn into_durations(self) -> Durations {
        Box::new(move |schedule, bytes| self.get(schedule, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nccl::Transport;
    use crate::topology::TopologySpec;

    fn group(collective: Collective, ranks: usize, options: NcclOptions, wire_factor: f64) -> NcclGroup {
        let spec = TopologySpec::parse("rail:node=dgx-h100").unwrap();
        let rate = spec.host_rate(None).unwrap();
        let fabric = NcclFabric::from_topology(&spec, ranks, rate, Transport::Rdma).unwrap();
        NcclGroup { fabric, collective, options, wire_factor }
    }

    /// `choose` itself, as the table should give it.
    fn direct(g: &NcclGroup, bytes: u64) -> Timed {
        let size = bytes as f64 * g.wire_factor;
        let (c, f) = nccl::choose_and_fastest(&g.fabric, g.collective, size, &g.options).unwrap();
        Timed::of(&g.fabric, g.collective, &c, &f, size)
    }

    #[test]
    fn up_front_and_lazy_sizes_are_choose_s_times_per_schedule() {
        let groups = vec![
            group(Collective::AllGather, 8, NcclOptions::default(), 1.0),
            group(Collective::ReduceScatter, 8, NcclOptions::default(), 0.5),
            group(Collective::AllReduce, 16, NcclOptions::default(), 1.0),
        ];
        let times = NcclTimes::new(groups.clone(), [(0, 1 << 20), (1, 1 << 20), (0, 1 << 20), (2, 4 << 20)]).unwrap();
        assert_eq!(times.known.borrow().len(), 3);
        // The same bytes under two schedules: two entries, each its own collective's.
        assert_eq!(times.get(0, 1 << 20), direct(&groups[0], 1 << 20));
        assert_eq!(times.get(1, 1 << 20), direct(&groups[1], 1 << 20));
        assert_ne!(times.get(0, 1 << 20), times.get(1, 1 << 20));
        // A size first seen now: timed by the same function, then kept.
        assert_eq!(times.get(2, 3 << 20), direct(&groups[2], 3 << 20));
        assert_eq!(times.known.borrow().len(), 4);
        let durations = times.into_durations();
        assert_eq!(durations(2, 3 << 20), direct(&groups[2], 3 << 20));
        assert_eq!(durations(1, 7 << 10), direct(&groups[1], 7 << 10));
    }

    #[test]
    fn a_refusal_of_an_up_front_size_is_the_error() {
        let refused = NcclOptions { channels: Some(0), ..NcclOptions::default() };
        let groups = vec![
            group(Collective::AllReduce, 8, NcclOptions::default(), 1.0),
            group(Collective::AllReduce, 8, refused, 1.0),
        ];
        let err = NcclTimes::new(groups.clone(), [(0, 1 << 20), (1, 1 << 20)]).unwrap_err();
        assert!(err.to_string().contains("strategy.channels"), "{err}");
        // Nothing issued under the refused schedule: nothing to refuse.
        assert!(NcclTimes::new(groups, [(0, 1 << 20)]).is_ok());
    }

    /// A refusal while simulating is a bug: debug builds stop there.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "NCCL refused schedule 1")]
    fn a_refusal_while_simulating_is_a_debug_assertion() {
        let refused = NcclOptions { channels: Some(0), ..NcclOptions::default() };
        let groups = vec![
            group(Collective::AllReduce, 8, NcclOptions::default(), 1.0),
            group(Collective::AllReduce, 8, refused, 1.0),
        ];
        let times = NcclTimes::new(groups, [(0, 1 << 20)]).unwrap();
        times.get(1, 1 << 20);
    }
}
