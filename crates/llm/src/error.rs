//! Typed errors of the LLM layer, and their mapping onto the engine's [`SummarizeError`].

use crate::overflow::ContextOverflow;
use compact_engine::SummarizeError;

/// Why one model call (after retries) failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The provider said the request does not fit the model's context window.
    #[error("context overflow (limit {limit:?}, requested {requested:?})", limit = .0.limit, requested = .0.requested)]
    Overflow(ContextOverflow),
    /// The provider answered with an error status that is not retried (or retries ran out).
    #[error("HTTP {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Start of the response body.
        body: String,
    },
    /// No complete answer within the timeout.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// Connecting, sending or receiving failed (reset, refused, body cut).
    #[error("connection: {0}")]
    Connection(String),
    /// The answer was not the JSON (or SSE) the API promises.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// A stream ended before its terminal event.
    #[error("stream ended early: {0}")]
    StreamCut(String),
    /// The model returned nothing or refused.
    #[error("no usable output: {0}")]
    Empty(String),
    /// Misconfiguration.
    #[error("configuration: {0}")]
    Config(String),
}

impl LlmError {
    /// Worth retrying with the same request (429, 5xx, connection trouble, timeouts, cut streams).
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status == 408 || *status >= 500,
            LlmError::Timeout(_) | LlmError::Connection(_) | LlmError::StreamCut(_) => true,
            _ => false,
        }
    }
}

/// Longest excerpt of an error body kept in errors and warnings.
pub const BODY_EXCERPT_CHARS: usize = 300;

/// The first [`BODY_EXCERPT_CHARS`] characters of a body.
pub fn excerpt(body: &str) -> String {
    let mut s: String = body.chars().take(BODY_EXCERPT_CHARS).collect();
    if s.len() < body.len() {
        s.push('…');
    }
    s
}

impl From<LlmError> for SummarizeError {
    fn from(e: LlmError) -> Self {
        match e {
            LlmError::Overflow(_) => SummarizeError::Overflow(e.to_string()),
            LlmError::Empty(m) => SummarizeError::Empty(m),
            LlmError::Config(m) => SummarizeError::Config(m),
            other => SummarizeError::Transport(other.to_string()),
        }
    }
}
