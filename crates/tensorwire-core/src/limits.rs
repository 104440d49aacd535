//! The bounds every run stays within, in one place, with their reasons (DESIGN.md,
//! principle 9: every run ends). Inputs past them are refused up front, in one line naming
//! the input, before anything proportional to them is allocated or simulated; where a
//! bound can only be reached while simulating (random straggler draws), the run stops
//! there with an error naming the horizon.
//!
//! Time: simulated time is integer nanoseconds ([`Nanos`], `u64`). Every duration a run
//! derives (a transfer `bytes / rate`, compute x slowdown / speedup, latency, overheads,
//! dispatch) and every instant it reaches stays below [`HORIZON_NS`] = 2^53 ns (about 104
//! days). Below 2^53 an instant converts to `f64` seconds without rounding, and the sum of
//! a few hundred such values cannot wrap a `u64`, so the engine's additions stay exact
//! without a check on each one. A training iteration that takes longer than 104 days of
//! simulated time means an input is off by orders of magnitude (`-b 1e-30Gbps`).
//!
//! Memory: counts that size an allocation (workers, iterations, servers, switches, links,
//! trees, pieces, layers) are capped so that the state they size stays within a few GiB.

use crate::error::{Error, Result};
use crate::units::Nanos;

/// Simulated time stays below this, ns (2^53 ns, about 104.2 days): see the module doc.
pub const HORIZON_NS: Nanos = 1 << 53;

/// [`HORIZON_NS`] in seconds, for messages.
pub const HORIZON_S: f64 = HORIZON_NS as f64 / 1e9;

/// Largest tensor, message or workload (sum of its tensors), bytes (2^53 B = 8 PiB): byte
/// counts are also `f64` inside the network models, exact up to 2^53. The largest models
/// trained today hold well under 10 TB of gradients.
pub const MAX_BYTES: u64 = 1 << 53;

/// Most workers (or fabric hosts) in a run, 2^20 = 1,048,576: ten times the largest
/// training clusters built so far. The per-worker state (links, schedulers, queues) is a
/// few hundred bytes to a few KiB per worker, so this keeps a run's state under ~4 GiB.
pub const MAX_WORKERS: usize = 1 << 20;

/// Most iterations, 2^20 (the engine keeps a few words per iteration and worker).
pub const MAX_ITERATIONS: u32 = 1 << 20;

/// Most (worker, iteration) pairs, 2^27: the engine keeps per worker and iteration a
/// counter and a completion time (12 bytes), so at most ~1.5 GiB.
pub const MAX_WORKER_ITERATIONS: u64 = 1 << 27;

/// Most parameter servers (`ps:num_ps`), 2^16: each has its own host, queues and links.
pub const MAX_SERVERS: usize = 1 << 16;

/// Most spine switches (`leaf-spine:spines`, `rail:spines`), 2^16.
pub const MAX_SWITCHES: usize = 1 << 16;

/// Most links of a fabric, 2^23 (8.4 million): each costs its description (32 bytes)
/// and the network model's per-link state (~100 bytes), so at most ~1 GiB.
pub const MAX_LINKS: u64 = 1 << 23;

/// Most trees asked of the GPU tree generator (`topology --trees`, `tree:trees=`), 2^12:
/// trees beyond one or two per GPU change nothing, each costs a pass over the machine.
pub const MAX_TREES: usize = 1 << 12;

/// Most pieces one iteration's tensors are cut into (`partition=`, `ps:pipeline=`,
/// `zero1:bucket=`, pipeline chunks of `double-tree:chunk=`), 2^22 (4.2 million): each is a
/// task with its own scheduler and protocol state (~100 bytes to a few KiB per worker).
pub const MAX_PIECES: u64 = 1 << 22;

/// Most layers (and tensors) of a workload, 2^20 (`--collective allreduce:1MiBx1000000`).
pub const MAX_LAYERS: usize = 1 << 20;

/// Refuses `value` above `max` for `field`, saying what the limit protects.
pub fn at_most(field: &str, value: u64, max: u64, what: &str) -> Result<()> {
    if value > max {
        return Err(Error::invalid(field, format!("{value} is more than the {max} {what} a run can hold")));
    }
    Ok(())
}

/// Nanoseconds (as `f64`, e.g. `bytes / rate`) as [`Nanos`], or `None` at or past the
/// horizon (and for NaN).
pub fn nanos_within(ns: f64) -> Option<Nanos> {
    if ns >= 0.0 && ns < HORIZON_NS as f64 {
        Some(ns as Nanos)
    } else if ns < 0.0 {
        Some(0)
    } else {
        None
    }
}

/// Nanoseconds (as `f64`) as [`Nanos`], clamped to the horizon: the engine's event loop
/// stops a run that reaches it ([`horizon_error`]), so a clamped time is never reported.
/// NaN counts as past the horizon.
pub fn nanos_clamped(ns: f64) -> Nanos {
    nanos_within(ns).unwrap_or(HORIZON_NS)
}

/// The error of a run whose simulated time reached the horizon (inputs that make it so
/// could not all be refused up front: straggler draws, long chains of steps, a slow link
/// that only some messages cross), naming `suspects` (`Scenario::horizon_suspects`) if any.
pub fn horizon_error(iterations_done: usize, iterations: u32, stragglers: bool, suspects: &[String]) -> Error {
    let cause = if !suspects.is_empty() {
        format!("; {}", suspects.join("; "))
    } else if stragglers {
        "; a drawn straggler slowdown (--stragglers spread) is that large".to_string()
    } else {
        String::new()
    };
    Error::invalid(
        "horizon",
        format!(
            "simulated time passed the horizon of {HORIZON_S:.0} s (2^53 ns, 104 days) after {iterations_done} of {iterations} iterations{cause}; use durations, sizes and rates that keep an iteration far below it"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_stop_at_the_horizon() {
        assert_eq!(nanos_within(1.5), Some(1));
        assert_eq!(nanos_within(-3.0), Some(0));
        assert_eq!(nanos_within(HORIZON_NS as f64), None);
        assert_eq!(nanos_within(f64::INFINITY), None);
        assert_eq!(nanos_within(f64::NAN), None);
        assert_eq!(nanos_clamped(1e300), HORIZON_NS);
        // Two instants below the horizon add without wrapping, many times over.
        assert!((HORIZON_NS - 1).checked_mul(2048).is_some());
    }

    #[test]
    fn at_most_names_the_field_and_the_limit() {
        assert!(at_most("workers", MAX_WORKERS as u64, MAX_WORKERS as u64, "workers").is_ok());
        let e = at_most("workers", 1 << 30, MAX_WORKERS as u64, "workers").unwrap_err();
        assert_eq!(e.field(), "workers");
        assert!(e.to_string().contains("1048576"), "{e}");
    }
}
