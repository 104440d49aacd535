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
    /// A real number >= 0 (a fraction where 0 means "none": `compute_slowdown=0`).
    NonNegativeReal,
    /// A real number in (0, max]: a factor with a largest sensible value.
    RealAtMost(f64),
    /// A finite real number >= min (a ratio: `compression` 1 means none).
    RealAtLeast(f64),
    /// An integer in [1, max] (`communicators`: 1 or 2).
    CountAtMost(u64),
    /// A real number in [0, max].
    NonNegativeRealAtMost(f64),
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
            OptionKind::NonNegativeReal => "a number >= 0".into(),
            OptionKind::RealAtMost(max) => format!("a number in (0, {}]", crate::units::format_number(*max)),
            OptionKind::RealAtLeast(min) => format!("a number >= {}", crate::units::format_number(*min)),
            OptionKind::CountAtMost(max) => format!("an integer from 1 to {max}"),
            OptionKind::NonNegativeRealAtMost(max) => format!("a number in [0, {}]", crate::units::format_number(*max)),
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
    /// Old spellings still accepted (a renamed option keeps working). Listings mention
    /// them; errors and the parsed [`Spec`] use `name` and the new words.
    pub aliases: &'static [Alias],
}

/// An old spelling of an option: its key, and for a choice the old words with the new
/// word each stands for. The old words are accepted under the old key only, so that the
/// new key reads with the new words (`streams=ordered` = `connections=ordered-pairs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Alias {
    /// The old key.
    pub name: &'static str,
    /// `(old word, new word)` pairs.
    pub values: &'static [(&'static str, &'static str)],
}

impl Alias {
    /// The old spelling as a user writes it: `streams=fair|ordered`, or `key` alone.
    pub fn describe(&self) -> String {
        if self.values.is_empty() {
            return self.name.to_string();
        }
        let words: Vec<&str> = self.values.iter().map(|(old, _)| *old).collect();
        format!("{}={}", self.name, words.join("|"))
    }
}

impl OptionInfo {
    /// What `key=text` means for this option: the value with an old word of the alias
    /// `key` (if `key` is one) replaced by its new word, or `None` when `key` is neither
    /// this option's name nor one of its aliases.
    fn resolve<'a>(&self, key: &str, text: &'a str) -> Option<&'a str> {
        if self.name == key {
            return Some(text);
        }
        let alias = self.aliases.iter().find(|a| a.name == key)?;
        Some(alias.values.iter().find(|(old, _)| *old == text).map_or(text, |(_, new)| *new))
    }
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
/// The divisors of `n` for a refusal that asks for one, at most twelve shown: `1, 2, 3, 4, 6, 12`.
///
/// ```
/// use tensorwire_core::spec::divisors_shown;
/// assert_eq!(divisors_shown(12), "1, 2, 3, 4, 6, 12");
/// assert_eq!(divisors_shown(5040).split(", ").count(), 12);
/// assert!(divisors_shown(5040).ends_with(" ..."));
/// ```
pub fn divisors_shown(n: usize) -> String {
    let mut divisors = (1..=n).filter(|&d| n.is_multiple_of(d)).map(|d| d.to_string());
    let shown: Vec<String> = divisors.by_ref().take(12).collect();
    if divisors.next().is_some() {
        format!("{} ...", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

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
        OptionKind::NonNegativeReal => match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => OptionValue::Real(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::RealAtMost(max) => match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 && v <= max => OptionValue::Real(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::RealAtLeast(min) => match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= min => OptionValue::Real(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::CountAtMost(max) => match text.parse::<u64>() {
            Ok(v) if (1..=max).contains(&v) => OptionValue::Count(v),
            _ => return Err(Error::invalid(field, format!("{text:?} is not {}", kind.describe()))),
        },
        OptionKind::NonNegativeRealAtMost(max) => match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 && v <= max => OptionValue::Real(v),
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
/// A key may be an option's old spelling ([`OptionInfo::aliases`]): it is stored, and named
/// in errors, under the option's name, so giving both spellings is "given twice". An unknown
/// key's message lists the options `takes` accepts (those `name` does not refuse later).
pub fn parse_options(
    field: &str,
    name: &str,
    pairs: &[(String, String)],
    tables: &[&'static [OptionInfo]],
    takes: &dyn Fn(&str) -> bool,
) -> Result<Vec<(&'static OptionInfo, OptionValue)>> {
    let mut given: Vec<(&'static OptionInfo, OptionValue)> = Vec::new();
    for (k, v) in pairs {
        let found = tables.iter().flat_map(|t| t.iter()).find_map(|o| o.resolve(k, v).map(|v| (o, v)));
        let Some((info, v)) = found else {
            let allowed: Vec<&str> =
                tables.iter().flat_map(|t| t.iter()).map(|o| o.name).filter(|o| takes(o)).collect();
            let allowed = if allowed.is_empty() { "none".to_string() } else { allowed.join(", ") };
            return Err(Error::invalid(
                format!("{field}.{k}"),
                format!("{name} has no option {k:?}; options: {allowed}"),
            ));
        };
        let key = format!("{field}.{}", info.name);
        let old = if info.name == k { String::new() } else { format!(" ({k} is its old name)") };
        if given.iter().any(|(g, _)| g.name == info.name) {
            return Err(Error::invalid(key, format!("given twice{old}")));
        }
        let value = parse_value(&key, info.kind, v)
            .map_err(|Error::Invalid { field, message }| Error::invalid(field, format!("{message}{old}")))?;
        given.push((info, value));
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
        OptionInfo { name: "partition", kind: OptionKind::Bytes, default: "", help: "piece size", aliases: &[] },
        OptionInfo {
            name: "mode",
            kind: OptionKind::Choice(&["a", "b"]),
            default: "a",
            help: "mode",
            aliases: &[Alias { name: "style", values: &[("old-a", "a")] }],
        },
    ];

    #[test]
    fn splits_and_types_options() {
        let (name, pairs) = split("strategy", "ring:partition=4MiB,mode=b").unwrap();
        assert_eq!(name, "ring");
        let given = parse_options("strategy", &name, &pairs, &[TABLE], &|_| true).unwrap();
        let spec = Spec { name, given };
        assert_eq!(spec.bytes("partition"), Some(4194304.0));
        assert_eq!(spec.choice("mode"), Some("b"));
    }

    #[test]
    fn unknown_option_names_the_field_and_lists_the_allowed() {
        let (name, pairs) = split("strategy", "ring:bogus=1").unwrap();
        let err = parse_options("strategy", &name, &pairs, &[TABLE], &|_| true).unwrap_err();
        assert_eq!(err.field(), "strategy.bogus");
        assert!(err.to_string().contains("partition, mode"));
    }

    #[test]
    fn malformed_pairs_are_rejected() {
        assert!(split("strategy", "ring:partition").is_err());
        assert!(split("strategy", ":x=1").is_err());
        let (n, p) = split("s", "ring:mode=c").unwrap();
        assert!(parse_options("s", &n, &p, &[TABLE], &|_| true).is_err());
    }

    fn parse(text: &str) -> Result<Spec> {
        let (name, pairs) = split("strategy", text)?;
        Ok(Spec { given: parse_options("strategy", &name, &pairs, &[TABLE], &|_| true)?, name })
    }

    #[test]
    fn an_alias_is_stored_under_the_option_name_with_its_old_words_translated() {
        assert_eq!(parse("x:style=old-a").unwrap().given, parse("x:mode=a").unwrap().given);
        assert_eq!(parse("x:style=b").unwrap().choice("mode"), Some("b"));
        assert!(parse("x:style=old-a").unwrap().get("style").is_none());
        // The old word is not a word of the new key.
        assert_eq!(parse("x:mode=old-a").unwrap_err().to_string(), "strategy.mode: \"old-a\" is not one of a, b");
    }

    #[test]
    fn an_option_and_its_alias_given_together_are_given_twice() {
        let err = parse("x:mode=a,style=b").unwrap_err();
        assert_eq!(err.to_string(), "strategy.mode: given twice (style is its old name)");
        assert_eq!(parse("x:style=a,mode=b").unwrap_err().to_string(), "strategy.mode: given twice");
        assert_eq!(parse("x:style=c").unwrap_err().field(), "strategy.mode");
        assert_eq!(Alias { name: "style", values: &[("old-a", "a"), ("old-b", "b")] }.describe(), "style=old-a|old-b");
        assert_eq!(Alias { name: "style", values: &[] }.describe(), "style");
    }
}
