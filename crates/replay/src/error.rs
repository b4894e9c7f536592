//! Errors of a replay: bad strategy names, bad pricing, bad options.

/// Why a replay could not be set up. Failures of a strategy during a replay are not errors: they are
/// recorded per call (a live session would have sent the request anyway).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A strategy name nobody knows.
    #[error("unknown strategy `{name}` (expected one of: {known})")]
    UnknownStrategy {
        /// The name given.
        name: String,
        /// The names accepted, comma separated.
        known: String,
    },
    /// A price that is negative, not a number, or malformed.
    #[error("invalid pricing for `{model}`: {reason}")]
    Pricing {
        /// The model the price is for.
        model: String,
        /// What is wrong.
        reason: String,
    },
    /// A transcript could not be imported (the message names the file and the place).
    #[error("{0}")]
    Import(String),
    /// The compaction policy is invalid.
    #[error("invalid compaction policy: {0}")]
    Policy(String),
    /// The configuration file or environment is invalid.
    #[error("configuration: {0}")]
    Config(String),
    /// A model the registry does not know (add it under `models:` in the configuration).
    #[error("unknown model `{0}` (add it under `models:` in the configuration)")]
    UnknownModel(String),
    /// A history could not be written as a wire request.
    #[error("encoding a request: {0}")]
    Encode(String),
    /// The window is zero.
    #[error("the context window must be at least 1 token")]
    EmptyWindow,
}
