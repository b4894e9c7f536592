//! Simulator configuration: the context window, body limits, token encodings, cache rules and the
//! wording of overflow errors.

use crate::agent::AgentScript;
use compact_core::tokens::Encoding;
use std::net::{Ipv4Addr, SocketAddr};

/// Default context window: a 128k-token model, the most common size among current OpenAI models.
pub const DEFAULT_WINDOW: u64 = 128_000;
/// Default request body limit: Anthropic rejects bodies over 32 MB with 413 `request_too_large`.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// OpenAI reports cached tokens only once the common prefix reaches 1,024 tokens...
pub const OPENAI_CACHE_MIN_TOKENS: u64 = 1_024;
/// ...and then in 128-token increments.
pub const OPENAI_CACHE_INCREMENT: u64 = 128;
/// Anthropic's smallest cacheable prefix for Sonnet/Opus models.
pub const ANTHROPIC_CACHE_MIN_TOKENS: u64 = 1_024;
/// Default output budget when a Chat/Responses request names no `max_tokens` (only used to word
/// errors; the window check then covers the input alone).
pub const DEFAULT_MAX_OUTPUT: u64 = 0;

/// How prompt caching is reported: prefixes shorter than `min_tokens` are not cached, longer ones
/// are reported rounded down to a multiple of `increment`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheRule {
    /// Shortest cached prefix, in tokens.
    pub min_tokens: u64,
    /// Granularity of reported cached tokens (1 = exact).
    pub increment: u64,
}

impl CacheRule {
    /// Applies the rule to a common-prefix length.
    pub fn apply(self, prefix_tokens: u64) -> u64 {
        if prefix_tokens < self.min_tokens || prefix_tokens == 0 {
            return 0;
        }
        let inc = self.increment.max(1);
        prefix_tokens / inc * inc
    }
}

/// Which wording OpenAI Chat uses when the messages alone exceed the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChatOverflowWording {
    /// "This model's maximum context length is W tokens. However, your messages resulted in N tokens..."
    #[default]
    Classic,
    /// GPT-5 family: "Input tokens exceed the configured limit of W tokens. Your messages resulted in N tokens..."
    ConfiguredLimit,
}

/// Everything the simulator can be told at start-up (faults and scripted replies are queued at run time).
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Address to bind; port 0 picks a free port.
    pub bind: SocketAddr,
    /// Context window in tokens (input plus requested output must fit).
    pub window: u64,
    /// Largest accepted request body in bytes (larger: 413).
    pub max_body_bytes: usize,
    /// Encoding used for OpenAI endpoints.
    pub openai_encoding: Encoding,
    /// Encoding used for Anthropic endpoints (Claude's tokenizer is not public; o200k by default so
    /// that tests can predict counts exactly).
    pub anthropic_encoding: Encoding,
    /// Cache reporting for OpenAI endpoints.
    pub openai_cache: CacheRule,
    /// Cache reporting for Anthropic.
    pub anthropic_cache: CacheRule,
    /// Wording of Chat overflow errors.
    pub chat_wording: ChatOverflowWording,
    /// Length of the provider compaction summaries it writes, in tokens (`None`: one short
    /// sentence naming what the summary stands for; a number pads it with filler to about that
    /// size, for cost comparisons).
    pub compaction_summary_tokens: Option<u64>,
    /// The scripted agent's task ([`crate::agent`]): requests that are steps of it are answered
    /// with the next command (queued replies still come first).
    pub agent: Option<AgentScript>,
    /// Refuse requests that break the provider's rules, with its 400 body: tool call and result
    /// pairing, roles, a `thinking` block sent back changed ([`compact_formats::validate()`]).
    pub validate: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            bind: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            window: DEFAULT_WINDOW,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            openai_encoding: Encoding::O200kBase,
            anthropic_encoding: Encoding::O200kBase,
            openai_cache: CacheRule {
                min_tokens: OPENAI_CACHE_MIN_TOKENS,
                increment: OPENAI_CACHE_INCREMENT,
            },
            anthropic_cache: CacheRule {
                min_tokens: ANTHROPIC_CACHE_MIN_TOKENS,
                increment: 1,
            },
            chat_wording: ChatOverflowWording::Classic,
            compaction_summary_tokens: None,
            agent: None,
            validate: false,
        }
    }
}

impl SimConfig {
    /// The default configuration with another window.
    pub fn with_window(window: u64) -> Self {
        SimConfig {
            window,
            ..SimConfig::default()
        }
    }
}
