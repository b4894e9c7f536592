//! The [`Summarizer`] trait: turns a span of items (plus any previous checkpoint) into checkpoint text.

use compact_core::model::{Checkpoint, Conversation, Item};
use compact_core::tokens::TokenCounter;
use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (keeps [`Summarizer`] object-safe without an async-trait dependency).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What to summarise.
#[derive(Debug, Clone)]
pub struct SummaryRequest<'a> {
    /// The items being replaced, oldest first (never includes the previous checkpoint).
    pub items: &'a [Item],
    /// The checkpoint these items follow, to be folded in rather than stacked.
    pub previous: Option<&'a Checkpoint>,
    /// Upper bound on the summary's size in tokens (counted with `counter`).
    pub max_tokens: usize,
    /// The counter used for budgets.
    pub counter: TokenCounter,
    /// Extra instructions ("also preserve ..."), appended to the template.
    pub also_preserve: Option<&'a str>,
    /// The whole conversation being compacted, as it is about to be sent to the agent's model (its
    /// wire format, tools and request fields such as `model`): it starts with what the model last
    /// saw, so a summariser may send it back with its own request appended and read the provider's
    /// prompt cache instead of a fresh prompt. `None` when the caller has no such request.
    pub prefix: Option<&'a Conversation>,
}

/// Token usage of a summariser's own model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SummaryUsage {
    /// Model calls made.
    pub calls: u32,
    /// Input tokens reported by the provider.
    pub input_tokens: u64,
    /// Output tokens reported by the provider.
    pub output_tokens: u64,
    /// Part of `input_tokens` the provider read from its prompt cache.
    pub cached_input_tokens: u64,
}

/// A summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The checkpoint text (framed as a record of earlier work).
    pub text: String,
    /// Name of the summariser that actually produced it (after any fallback).
    pub produced_by: String,
    /// Usage of model calls, if any.
    pub usage: SummaryUsage,
    /// Non-fatal problems (fallbacks taken, retries).
    pub warnings: Vec<String>,
}

/// Why a summariser failed. A failure never changes the conversation: the caller keeps its history.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummarizeError {
    /// The summariser's own call exceeded its context window and could not be reduced further.
    #[error("summariser context overflow: {0}")]
    Overflow(String),
    /// The model refused or returned nothing usable.
    #[error("summariser returned no usable summary: {0}")]
    Empty(String),
    /// Transport or provider failure after retries.
    #[error("summariser request failed: {0}")]
    Transport(String),
    /// Misconfiguration (missing API key, bad URL).
    #[error("summariser configuration: {0}")]
    Config(String),
    /// A failure after model calls that cost something: the cause, and what the calls used (so a
    /// report after a fallback counts them). Built with [`SummarizeError::with_usage`].
    #[error("{cause}")]
    Spent {
        /// Why the summariser failed.
        cause: Box<SummarizeError>,
        /// The calls made and the tokens they used before failing.
        usage: SummaryUsage,
    },
}

impl SummarizeError {
    /// This error, carrying the usage of the calls made before it (nothing changes when `usage`
    /// records no call).
    #[must_use]
    pub fn with_usage(self, usage: SummaryUsage) -> Self {
        if usage == SummaryUsage::default() {
            return self;
        }
        match self {
            Self::Spent { cause, usage: u } => Self::Spent {
                cause,
                usage: u.plus(usage),
            },
            cause => Self::Spent {
                cause: Box::new(cause),
                usage,
            },
        }
    }

    /// What the failed calls used (zero when no call was made or none was counted).
    pub fn usage(&self) -> SummaryUsage {
        match self {
            Self::Spent { usage, .. } => *usage,
            _ => SummaryUsage::default(),
        }
    }

    /// The cause, without the usage wrapper.
    pub fn cause(&self) -> &SummarizeError {
        match self {
            Self::Spent { cause, .. } => cause.cause(),
            other => other,
        }
    }
}

impl SummaryUsage {
    /// The sum of two usages.
    #[must_use]
    pub fn plus(self, other: SummaryUsage) -> SummaryUsage {
        SummaryUsage {
            calls: self.calls.saturating_add(other.calls),
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_input_tokens: self
                .cached_input_tokens
                .saturating_add(other.cached_input_tokens),
        }
    }
}

/// Produces checkpoint text for a span of items. Implementations: the deterministic checkpoint (no
/// model) and LLM summarisers over HTTP.
pub trait Summarizer: Send + Sync {
    /// Short name for reports (`deterministic`, `openai`, `anthropic`).
    fn name(&self) -> &str;
    /// Whether a summary costs a model call (billed, and slow). The compactor spends a second
    /// summary on using the room a short checkpoint left only when it does not. A wrapper answers
    /// for what it wraps.
    fn costs_a_call(&self) -> bool {
        true
    }
    /// Summarises `request`.
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>>;
}
