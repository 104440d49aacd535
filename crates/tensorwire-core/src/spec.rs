//! The `NAME[:key=value,...]` grammar shared by strategy and topology specs, and a
//! typed option table so that each option is defined once: its name, kind, default and
//! help text feed the parser, the `strategies` listing and the CLI help alike.

use crate::error::{Error, Result};
use crate::units::{parse_bytes, parse_duration, parse_rate};

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OptionKind {
    /// A size: `4MiB`, `1MB`.
    Bytes,
    /// A rate: `100Gbps`.
    Rate,
    /// A duration: `5ms`.
    Duration,
    /// A positive integer.
    Count,
    /// An integer >= 0.
    Natural,
    /// A real number > 0.
    Real,
    /// `true` or `false`.
    Flag,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
}

impl OptionKind {
    /// What the kind accepts, for messages and listings.
    pub fn describe(&self) -> String {
        match self {
            OptionKind::Bytes => "a size such as 4MiB".into(),
            OptionKind::Rate => "a rate such as 100Gbps".into(),
            OptionKind::Duration => "a duration such as 5ms".into(),
            OptionKind::Count => "an integer >= 1".into(),
            OptionKind::Natural => "an integer >= 0".into(),
            OptionKind::Real => "a number > 0".into(),
            OptionKind::Flag => "true or false".into(),
            OptionKind::Choice(words) => format!("one of {}", words.join(", ")),
        }
    }
}

/// Definition of one option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptionInfo {
    /// Key as written in the spec.
    pub name: &'static str,
    /// Accepted values.
    pub kind: OptionKind,
    /// Default as written in a spec (`""` = unset / automatic).
    pub default: &'static str,
    /// One line saying what it does.
    pub help: &'static str,
}

/// A typed option value.
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// Bytes (may be fractional).
    Bytes(f64),
    /// Bytes per second.
    Rate(f64),
    /// Seconds.
    Duration(f64),
    /// Integer.
    Count(u64),
    /// Real.
    Real(f64),
    /// Boolean.
    Flag(bool),
    /// Chosen word.
    Choice(&'static str),
}

/// A parsed `NAME[:key=value,...]` with its options validated against a table.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// The name before the colon.
    pub name: String,
    /// Options given explicitly, in the order written.
    pub given: Vec<(&'static OptionInfo, OptionValue)>,
}

/// Splits `text` into a name and raw `key=value` pairs.
pub fn split(field: &str, text: &str) -> Result<(String, Vec<(String, String)>)> {
    let text = text.trim();
    let (name, rest) = match text.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (text, None),
    };
    if name.is_empty() {
        return Err(Error::invalid(field, format!("{text:?} has no name; write NAME[:key=value,...]")));
    }
    let mut pairs = Vec::new();
    if let Some(rest) = rest {
        for part in rest.split(',') {
            let Some((k, v)) = part.split_once('=') else {
                return Err(Error::invalid(field, format!("option {part:?} is not key=value")));
            };
            if k.trim().is_empty() {
                return Err(Error::invalid(field, format!("option {part:?} has no key; write key=value")));
            }
            pairs.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok((name.to_string(), pairs))
}

/// Parses one option value of the given kind.
pub fn parse_value(field: &str, kind: OptionKind, text: &str) -> Result<OptionValue> {
    Ok(match kind {
        OptionKind::Bytes => OptionValue::Bytes(parse_bytes(field, text)?),
        OptionKind::Rate => OptionValue::Rate(parse_rate(field, text)?),
        OptionKind::Duration => OptionValue::Duration(parse_duration(field, text)?),
        OptionKind::Count => match text.parse::<u64>() {
            Ok(v) if v >= 1 => OptionValue::Count(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::Natural => match text.parse::<u64>() {
            Ok(v) => OptionValue::Count(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::Real => match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => OptionValue::Real(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::Flag => match text {
            "true" => OptionValue::Flag(true),
            "false" => OptionValue::Flag(false),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::Choice(words) => match words.iter().find(|w| **w == text) {
            Some(w) => OptionValue::Choice(w),
            None => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
    })
}

/// Parses `pairs` against the options of `tables`; `field` prefixes error fields (e.g. `strategy`).
pub fn parse_options(
    field: &str,
    name: &str,
    pairs: &[(String, String)],
    tables: &[&'static [OptionInfo]],
) -> Result<Vec<(&'static OptionInfo, OptionValue)>> {
    let mut given: Vec<(&'static OptionInfo, OptionValue)> = Vec::new();
    for (k, v) in pairs {
        let Some(info) = tables.iter().flat_map(|t| t.iter()).find(|o| o.name == k) else {
            let allowed: Vec<&str> = tables.iter().flat_map(|t| t.iter()).map(|o| o.name).collect();
            let allowed = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
            return Err(Error::invalid(
                format!("{field}.{k}"),
                format!("{name} has no option {k:?}; options: {allowed}"),
            ));
        };
        if given.iter().any(|(g, _)| g.name == info.name) {
            return Err(Error::invalid(format!("{field}.{k}"), "given twice"));
        }
        given.push((info, parse_value(&format!("{field}.{k}"), info.kind, v)?));
    }
    Ok(given)
}

impl Spec {
    /// The explicitly given value of `name`, if any.
    pub fn get(&self, name: &str) -> Option<&OptionValue> {
        self.given.iter().find(|(o, _)| o.name == name).map(|(_, v)| v)
    }

    /// Bytes option or `None`.
    pub fn bytes(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Some(OptionValue::Bytes(b)) => Some(*b),
            _ => None,
        }
    }

    /// Rate option (bytes/s) or `None`.
    pub fn rate(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Some(OptionValue::Rate(b)) => Some(*b),
            _ => None,
        }
    }

    /// Duration option (s) or `None`.
    pub fn duration(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Some(OptionValue::Duration(b)) => Some(*b),
            _ => None,
        }
    }

    /// Count option or `None`.
    pub fn count(&self, name: &str) -> Option<u64> {
        match self.get(name) {
            Some(OptionValue::Count(b)) => Some(*b),
            _ => None,
        }
    }

    /// Real option or `None`.
    pub fn real(&self, name: &str) -> Option<f64> {
        match self.get(name) {
            Some(OptionValue::Real(b)) => Some(*b),
            _ => None,
        }
    }

    /// Flag option or `None`.
    pub fn flag(&self, name: &str) -> Option<bool> {
        match self.get(name) {
            Some(OptionValue::Flag(b)) => Some(*b),
            _ => None,
        }
    }

    /// Choice option or `None`.
    pub fn choice(&self, name: &str) -> Option<&'static str> {
        match self.get(name) {
            Some(OptionValue::Choice(b)) => Some(b),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static TABLE: &[OptionInfo] = &[
        OptionInfo { name: "partition", kind: OptionKind::Bytes, default: "", help: "piece size" },
        OptionInfo { name: "mode", kind: OptionKind::Choice(&["a", "b"]), default: "a", help: "mode" },
    ];

    #[test]
    fn splits_and_types_options() {
        let (name, pairs) = split("strategy", "ring:partition=4MiB,mode=b").unwrap();
        assert_eq!(name, "ring");
        let given = parse_options("strategy", &name, &pairs, &[TABLE]).unwrap();
        let spec = Spec { name, given };
        assert_eq!(spec.bytes("partition"), Some(4194304.0));
        assert_eq!(spec.choice("mode"), Some("b"));
    }

    #[test]
    fn unknown_option_names_the_field_and_lists_the_allowed() {
        let (name, pairs) = split("strategy", "ring:bogus=1").unwrap();
        let err = parse_options("strategy", &name, &pairs, &[TABLE]).unwrap_err();
        assert_eq!(err.field(), "strategy.bogus");
        assert!(err.to_string().contains("partition, mode"));
    }

    #[test]
    fn malformed_pairs_are_rejected() {
        assert!(split("strategy", "ring:partition").is_err());
        assert!(split("strategy", ":x=1").is_err());
        let (n, p) = split("s", "ring:mode=c").unwrap();
        assert!(parse_options("s", &n, &p, &[TABLE]).is_err());
    }
}
