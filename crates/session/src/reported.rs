//! What a provider reported for a call ([`Usage`]) and the usage reports a session holds until
//! they are logged ([`HeldUsage`]; written by [`crate::usage`]). Kept apart from `usage`, which
//! drives the manager, so that the session state can hold them without an import circle.

use crate::record::Record;
use std::time::Instant;

/// Input-token usage a provider reported for one response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens as reported (OpenAI `prompt_tokens` / `input_tokens`, which include cached
    /// tokens; Anthropic `input_tokens`, which does not).
    pub input_tokens: u64,
    /// Anthropic `cache_read_input_tokens` (0 for OpenAI, whose cached tokens are in `input_tokens`).
    pub cache_read_input_tokens: u64,
    /// Anthropic `cache_creation_input_tokens` (0 for OpenAI).
    pub cache_creation_input_tokens: u64,
    /// OpenAI's cached part of `input_tokens` (Chat `usage.prompt_tokens_details.cached_tokens`,
    /// Responses `usage.input_tokens_details.cached_tokens`; 0 for Anthropic, whose cached tokens
    /// are `cache_read_input_tokens`).
    pub cached_input_tokens: u64,
    /// The model that answered, when known (else the last request's `model`).
    pub model: Option<String>,
    /// The provider's own compaction pass, when the reply says it ran one (Anthropic
    /// `usage.iterations`, a Responses `compaction` output item): then `input_tokens` is what that
    /// pass read (the whole request as the provider counted it), and the provider now holds a
    /// compaction the client will send back.
    pub provider_compaction: Option<CompactionPass>,
}

/// The usage of a provider's compaction pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionPass {
    /// Input tokens the pass read.
    pub input_tokens: u64,
    /// Output tokens it wrote (the summary).
    pub output_tokens: u64,
    /// Input tokens billed for the whole reply (every iteration).
    pub billed_input_tokens: u64,
    /// Output tokens billed for the whole reply (every iteration).
    pub billed_output_tokens: u64,
}

impl Usage {
    /// Every input token the provider counted for the request.
    pub fn total_input(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }

    /// The input tokens the provider read from its prompt cache (OpenAI's cached part, Anthropic's
    /// cache reads), at most [`Usage::total_input`].
    pub fn cached_input(&self) -> u64 {
        self.cached_input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .min(self.total_input())
    }
}

/// The figures of the call a usage is recorded for.
#[derive(Debug)]
pub(crate) struct CallFigures {
    pub(crate) model: String,
    pub(crate) sent_tokens: usize,
    pub(crate) recovery_attempts: u32,
    /// The model-visible items of what was sent, instructions aside.
    pub(crate) sent_items: usize,
}

/// One usage report whose records are not in the log yet: what it measures, and its records as
/// they would be logged now (redacted).
#[derive(Debug)]
pub(crate) struct HeldUsage {
    pub(crate) call: CallFigures,
    pub(crate) usage: Usage,
    pub(crate) records: Vec<Record>,
    /// When it was reported.
    pub(crate) since: Instant,
}
