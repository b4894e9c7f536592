//! The model registry: context window, output cap, tokenizer, framing and prices of known models,
//! looked up by name, alias or dated snapshot, and extendable or overridable from user config.
//!
//! The built-in figures were taken from the providers' public model and pricing pages as known in
//! November 2026 (OpenAI, Anthropic, Google AI Studio, DeepSeek and Mistral API pricing; Hugging
//! Face model cards for open-weight context windows). Prices change: configuration overrides them
//! through [`ModelRegistry::with_overrides`], which the config loader feeds with plain data.
//!
//! ```
//! use compact_core::registry::ModelRegistry;
//! use compact_core::tokens::Encoding;
//!
//! let reg = ModelRegistry::builtin();
//! let m = reg.lookup("gpt-4o-2024-08-06").unwrap();
//! assert_eq!(m.name, "gpt-4o");
//! assert_eq!(m.encoding, Encoding::O200kBase);
//! assert!(reg.lookup("claude-sonnet-4-5-20250929").is_some());
//! ```

mod builtin;
mod lookup;
mod overrides;

use crate::tokens::{Encoding, Framing, MediaModel, TokenCounter};
pub use overrides::{ModelOverride, RegistryError};

/// Who serves (or published) a model. Decides the default framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Provider {
    /// OpenAI.
    OpenAi,
    /// Anthropic.
    Anthropic,
    /// Google (Gemini).
    Google,
    /// Meta (Llama, open weights).
    Meta,
    /// Alibaba (Qwen, open weights).
    Alibaba,
    /// DeepSeek (open weights and API).
    DeepSeek,
    /// Mistral AI (open weights and API).
    Mistral,
    /// Anything else (user-configured models).
    Other,
}

impl Provider {
    /// The framing a provider's requests pay per message, request and tool.
    pub fn framing(self) -> Framing {
        match self {
            Provider::OpenAi => Framing::OPENAI,
            Provider::Anthropic => Framing::ANTHROPIC,
            Provider::Google => Framing::GEMINI,
            Provider::Meta
            | Provider::Alibaba
            | Provider::DeepSeek
            | Provider::Mistral
            | Provider::Other => Framing::CHAT_TEMPLATE,
        }
    }

    /// The media cost model for images and audio: Anthropic's and Google's own, OpenAI's tiles
    /// for everyone else (open models served behind OpenAI-compatible APIs).
    pub fn media(self) -> MediaModel {
        match self {
            Provider::Anthropic => MediaModel::Anthropic,
            Provider::Google => MediaModel::Gemini,
            _ => MediaModel::OpenAi,
        }
    }

    /// Lower-case name (as in config files).
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Google => "google",
            Provider::Meta => "meta",
            Provider::Alibaba => "alibaba",
            Provider::DeepSeek => "deepseek",
            Provider::Mistral => "mistral",
            Provider::Other => "other",
        }
    }

    /// Parses [`Provider::as_str`] names (case-insensitive); `None` for unknown names.
    pub fn parse(name: &str) -> Option<Provider> {
        let all = [
            Provider::OpenAi,
            Provider::Anthropic,
            Provider::Google,
            Provider::Meta,
            Provider::Alibaba,
            Provider::DeepSeek,
            Provider::Mistral,
            Provider::Other,
        ];
        all.into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(name.trim()))
    }
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens read from the provider's prompt cache (equal to `input` when there is no
    /// discount).
    pub cached_input: f64,
    /// Input tokens written to the prompt cache (equal to `input` when writing costs nothing extra,
    /// as with OpenAI's automatic caching; 1.25 × input for Anthropic's 5-minute cache).
    pub cache_write: f64,
    /// Output tokens (reasoning tokens included).
    pub output: f64,
}

impl Pricing {
    /// Cost in dollars of a request with these token counts.
    pub fn cost(&self, input: u64, cached_input: u64, cache_write: u64, output: u64) -> f64 {
        const PER: f64 = 1_000_000.0;
        (input as f64 * self.input
            + cached_input as f64 * self.cached_input
            + cache_write as f64 * self.cache_write
            + output as f64 * self.output)
            / PER
    }

    /// The first price (in field order) that is negative or not a finite number, as
    /// `(field name, value)`; `None` when every price is valid.
    pub fn first_invalid(&self) -> Option<(&'static str, f64)> {
        [
            ("input", self.input),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
            ("output", self.output),
        ]
        .into_iter()
        .find(|(_, value)| !value.is_finite() || *value < 0.0)
    }
}

/// What Compact knows about one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelInfo {
    /// Canonical name (the provider's API name without a date).
    pub name: String,
    /// Other names that mean this model (dated snapshots need no alias: see [`ModelRegistry::lookup`]).
    pub aliases: Vec<String>,
    /// Who serves it.
    pub provider: Provider,
    /// Context window in tokens (input + output).
    pub context_window: u32,
    /// Largest output the API allows, in tokens.
    pub max_output_tokens: u32,
    /// Tokenizer used to count for it (exact when public, else the calibrated estimate).
    pub encoding: Encoding,
    /// Per-message framing overhead.
    pub framing: Framing,
    /// API prices, when the model has a first-party API price.
    pub pricing: Option<Pricing>,
}

impl ModelInfo {
    /// A token counter for this model (its encoding, framing and provider's media cost model).
    pub fn counter(&self) -> TokenCounter {
        TokenCounter::with_framing(self.encoding, self.framing).with_media(self.provider.media())
    }
}

/// A set of models, looked up by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelRegistry {
    models: Vec<ModelInfo>,
}

impl ModelRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ModelRegistry::default()
    }

    /// The built-in models (see the module docs for the date of the figures).
    pub fn builtin() -> Self {
        ModelRegistry {
            models: builtin::models(),
        }
    }

    /// All models, in insertion order.
    pub fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    /// Adds a model, replacing any model with the same canonical name (case-insensitive).
    pub fn insert(&mut self, info: ModelInfo) {
        let key = lookup::normalize(&info.name);
        match self
            .models
            .iter_mut()
            .find(|m| lookup::normalize(&m.name) == key)
        {
            Some(slot) => *slot = info,
            None => self.models.push(info),
        }
    }

    /// Finds a model by name. Matching, most specific first:
    /// 1. the canonical name or an alias, ignoring case, a `provider/` or `models/` path prefix and
    ///    the difference between `.`, `_`, `:` and `-` (so `claude-sonnet-4.5` finds
    ///    `claude-sonnet-4-5`, `llama3.3:70b` finds `llama-3.3-70b`);
    /// 2. the longest known name that the requested name extends by whole `-` segments: dated
    ///    snapshots (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`, `gpt-4-0613`) and variants
    ///    (`gpt-4o-mini-search-preview`) resolve to their family;
    /// 3. the same after dropping leading segments (Bedrock-style `anthropic.claude-...`).
    pub fn lookup(&self, name: &str) -> Option<&ModelInfo> {
        lookup::find(&self.models, name)
    }
}
