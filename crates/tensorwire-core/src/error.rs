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
}

/// Result alias used throughout the core.
pub type Result<T> = std::result::Result<T, Error>;
