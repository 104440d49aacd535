//! Typed errors. Every error names the offending input field and what is allowed,
//! so that the CLI can print it as one line and the bindings can raise a Python
//! exception without ever panicking across the boundary.

use thiserror::Error;

/// Everything that can go wrong when a scenario is described or simulated.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// An input value is malformed or out of range.
    #[error("{field}: {message}")]
    Invalid {
        /// Dotted path of the input, e.g. `bandwidth` or `strategy.partition`.
        field: String,
        /// What was wrong and what is allowed.
        message: String,
    },
}

impl Error {
    /// An invalid value for `field`; `message` says what is allowed.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Invalid { field: field.into(), message: message.into() }
    }

    /// The field this error is about.
    pub fn field(&self) -> &str {
        match self {
            Error::Invalid { field, .. } => field,
        }
    }

    /// The same error about a field inside `parent`: field `workers` within `jobs[1]`
    /// becomes `jobs[1].workers`, with the message unchanged (`to_string` would repeat
    /// the field in it).
    pub fn within(self, parent: &str) -> Self {
        match self {
            Error::Invalid { field, message } => Error::Invalid { field: format!("{parent}.{field}"), message },
        }
    }
}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_prefixes_the_field_and_keeps_the_message() {
        let e = Error::invalid("workers", "must be at least 1").within("jobs[1]");
        assert_eq!(e.field(), "jobs[1].workers");
        assert_eq!(e.to_string(), "jobs[1].workers: must be at least 1");
    }
}
