//! LLM summarisers for Compact: an OpenAI-compatible Chat Completions backend (OpenAI, Azure, vLLM,
//! Ollama, llama.cpp server, LiteLLM...) and an Anthropic Messages backend behind the engine's
//! [`compact_engine::Summarizer`] trait, with summary templates, agent-driven plan mode, a budgeted
//! summariser input (truncated tool outputs, media placeholders, map-reduce when too large), retries
//! with backoff, and a typed context-overflow classifier.
//!
//! Architecture invariant: a summariser never changes history. It returns a [`compact_engine::Summary`]
//! (possibly a fallback one, with warnings) or an error; the caller decides what to replace.
//!
//! ```no_run
//! use compact_llm::{build, ProviderKind, SummarizerConfig, Template};
//! let mut config = SummarizerConfig::new(ProviderKind::OpenAi);
//! config.base_url = "http://127.0.0.1:8000/v1".into(); // a local vLLM server
//! config.model = "qwen2.5-7b-instruct".into();
//! config.template = Template::TaskState;
//! let summarizer = build(config).expect("valid configuration");
//! assert_eq!(summarizer.name(), "openai");
//! ```

pub mod config;
pub mod error;
pub mod http;
pub mod input;
/// The context-overflow classifier (moved to `compact-formats`, re-exported here).
pub use compact_formats::overflow;
pub mod plan;
pub mod provider;
pub mod retry;
mod summarizer;
pub mod template;
pub mod warm;

pub use config::{
    build, build_summarizer, build_with_fallback, build_without_fallback, BuildError,
    SummarizerConfig,
};
pub use error::LlmError;
pub use input::InputLimits;
pub use overflow::{classify, classify_stream_event, ContextOverflow, ProviderHint};
pub use provider::{OutputCapField, ProviderKind, StreamMode};
pub use retry::RetryPolicy;
pub use summarizer::{LlmSummarizer, OVERFLOW_STEPS, RECORD_HEADER};
pub use template::{PromptSource, Template};
pub use warm::CacheWarm;
