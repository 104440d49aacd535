//! Units and their parsing. Inside the engine time is integer nanoseconds ([`Nanos`])
//! so that event ordering is exact and deterministic; rates are bytes per nanosecond
//! (`f64`). At the API boundary sizes are bytes, rates bytes/s and times seconds.
//!
//! Accepted spellings (case-sensitive, as DESIGN.md fixes them):
//! sizes `B`, `KB`/`MB`/`GB`/`TB` (10^3 steps) and `KiB`/`MiB`/`GiB`/`TiB` (2^10 steps);
//! rates `bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps` (bits per second, 10^3 steps);
//! durations `ns`, `us`, `ms`, `s`.

use crate::error::{Error, Result};

/// Simulated time in integer nanoseconds.
pub type Nanos = u64;

/// Nanoseconds per second.
pub const NS_PER_S: f64 = 1e9;

const SIZE_UNITS: &[(&str, f64)] = &[
    ("PiB", 1125899906842624.0),
    ("TiB", 1099511627776.0),
    ("GiB", 1073741824.0),
    ("MiB", 1048576.0),
    ("KiB", 1024.0),
    ("PB", 1e15),
    ("TB", 1e12),
    ("GB", 1e9),
    ("MB", 1e6),
    ("KB", 1e3),
    ("kB", 1e3),
    ("B", 1.0),
];
const RATE_UNITS: &[(&str, f64)] =
    &[("Tbps", 1e12), ("Gbps", 1e9), ("Mbps", 1e6), ("Kbps", 1e3), ("kbps", 1e3), ("bps", 1.0)];
/// Durations as (suffix, units per second): dividing keeps `5us` exactly 5e-6.
const TIME_UNITS: &[(&str, f64)] = &[("ns", 1e9), ("us", 1e6), ("ms", 1e3), ("s", 1.0)];

fn split_number(field: &str, text: &str, units: &[(&str, f64)], allowed: &str) -> Result<(f64, f64)> {
    let text = text.trim();
    for (suffix, scale) in units {
        if let Some(number) = text.strip_suffix(suffix) {
            let number = number.trim();
            if let Ok(value) = number.parse::<f64>() {
                if value.is_finite() {
                    return Ok((value, *scale));
                }
            }
            break;
        }
    }
    Err(Error::invalid(field, format!("{text:?} is not a {allowed}")))
}

/// Parses a size such as `1MiB`, `25MB` or `4096B` into bytes (may be fractional).
pub fn parse_bytes(field: &str, text: &str) -> Result<f64> {
    let (v, s) = split_number(
        field,
        text,
        SIZE_UNITS,
        "size; use a number with B, KB, MB, GB, TB, PB, KiB, MiB, GiB, TiB or PiB (e.g. 4MiB)",
    )?;
    if v < 0.0 {
        return Err(Error::invalid(field, format!("{text:?} is negative; sizes must be >= 0")));
    }
    Ok(v * s)
}

/// Parses a rate such as `25Gbps` into bytes per second (must be > 0).
pub fn parse_rate(field: &str, text: &str) -> Result<f64> {
    let (v, s) =
        split_number(field, text, RATE_UNITS, "rate; use a number with bps, Kbps, Mbps, Gbps or Tbps (e.g. 25Gbps)")?;
    if v <= 0.0 {
        return Err(Error::invalid(field, format!("{text:?} must be greater than 0")));
    }
    let bytes_per_s = v * s / 8.0;
    if !bytes_per_s.is_finite() {
        return Err(Error::invalid(
            field,
            format!("{text:?} is past the largest rate a number holds; give a finite rate"),
        ));
    }
    Ok(bytes_per_s)
}

/// Parses a duration such as `5us` into seconds (must be >= 0).
pub fn parse_duration(field: &str, text: &str) -> Result<f64> {
    let (v, s) = split_number(field, text, TIME_UNITS, "duration; use a number with ns, us, ms or s (e.g. 5us)")?;
    if v < 0.0 {
        return Err(Error::invalid(field, format!("{text:?} is negative; durations must be >= 0")));
    }
    Ok(v / s)
}

/// Seconds to nanoseconds, rounded to the nearest nanosecond; rejects negatives,
/// non-finite values and durations at or past the simulation horizon
/// ([`crate::limits::HORIZON_NS`], 2^53 ns: about 104 days), which would otherwise
/// saturate or wrap the engine's clock.
pub fn seconds_to_nanos(field: &str, seconds: f64) -> Result<Nanos> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(Error::invalid(field, format!("{seconds} s is not a finite, non-negative duration")));
    }
    crate::limits::nanos_within((seconds * NS_PER_S).round()).ok_or_else(|| {
        Error::invalid(
            field,
            format!(
                "{} s is past the simulation horizon; durations must be below {:.0} s (2^53 ns, 104 days)",
                format_number(seconds),
                crate::limits::HORIZON_S
            ),
        )
    })
}

/// Nanoseconds to seconds.
pub fn nanos_to_seconds(t: Nanos) -> f64 {
    t as f64 / NS_PER_S
}

/// A number for messages: plain when moderate, in exponent form (`1e300`) when huge or
/// tiny, so that a line stays one short line.
pub fn format_number(x: f64) -> String {
    if x != 0.0 && !(1e-3..1e9).contains(&x.abs()) {
        // Four significant digits, trailing zeros dropped: 3.125e-299, not
        // 3.1249999999999996e-299; 1e300, not 1.000e300.
        let text = format!("{x:.3e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa =
            if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
        format!("{mantissa}e{exponent}")
    } else {
        format!("{x}")
    }
}

/// Human-readable size with binary units, e.g. `97.5 MiB`.
pub fn format_bytes(bytes: f64) -> String {
    for (suffix, scale) in &SIZE_UNITS[..4] {
        if bytes >= *scale {
            return format!("{:.1} {suffix}", bytes / scale);
        }
    }
    format!("{bytes:.0} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_for_messages_stay_short() {
        assert_eq!(format_number(3.1249999999999996e-299), "3.125e-299");
        assert_eq!(format_number(1e300), "1e300");
        assert_eq!(format_number(-2.5e10), "-2.5e10");
        assert_eq!(format_number(0.125), "0.125");
        assert_eq!(format_number(4.0), "4");
    }

    #[test]
    fn parses_decimal_and_binary_sizes() {
        assert_eq!(parse_bytes("x", "1MiB").unwrap(), 1048576.0);
        assert_eq!(parse_bytes("x", "1MB").unwrap(), 1e6);
        assert_eq!(parse_bytes("x", "0.5KiB").unwrap(), 512.0);
        assert_eq!(parse_bytes("x", "12B").unwrap(), 12.0);
    }

    #[test]
    fn parses_rates_in_bits() {
        assert_eq!(parse_rate("bw", "8Gbps").unwrap(), 1e9);
        assert_eq!(parse_rate("bw", "100Mbps").unwrap(), 12.5e6);
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_duration("t", "5us").unwrap(), 5e-6);
        assert_eq!(parse_duration("t", "2ms").unwrap(), 2e-3);
        assert_eq!(parse_duration("t", "3ns").unwrap(), 3e-9);
        assert_eq!(parse_duration("t", "1s").unwrap(), 1.0);
    }

    #[test]
    fn rejects_bad_input_naming_the_field() {
        let e = parse_rate("bandwidth", "0Gbps").unwrap_err();
        assert_eq!(e.field(), "bandwidth");
        assert!(parse_rate("bandwidth", "-1Gbps").is_err());
        assert!(parse_rate("bandwidth", "25GB").is_err());
        assert!(parse_bytes("size", "abc").is_err());
        assert!(parse_bytes("size", "NaNMB").is_err());
        assert!(parse_duration("latency", "5").is_err());
    }

    #[test]
    fn seconds_past_the_horizon_are_refused_not_saturated() {
        assert_eq!(seconds_to_nanos("latency", 1000.0).unwrap(), 1_000_000_000_000);
        for s in [1e9, 1e300, crate::limits::HORIZON_S] {
            let e = seconds_to_nanos("latency", s).unwrap_err();
            assert_eq!(e.field(), "latency");
            assert!(e.to_string().contains("horizon"), "{e}");
        }
    }
}
