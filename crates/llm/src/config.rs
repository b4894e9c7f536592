//! [`SummarizerConfig`] and [`build`]: the public constructor the CLI uses to make an LLM summariser.

use crate::error::LlmError;
use crate::http::{HeaderSpec, HttpClient, Secret};
use crate::input::InputLimits;
use crate::provider::{OutputCapField, ProviderKind, Sampling, StreamMode};
use crate::retry::RetryPolicy;
use crate::summarizer::LlmSummarizer;
use crate::template::{PromptSource, Template};
use crate::warm::CacheWarm;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{DeterministicSummarizer, Summarizer};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Default OpenAI summariser model: small and cheap (the summariser need not be the agent's model).
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1-mini";
/// Default Anthropic summariser model.
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-haiku-4-5";
/// OpenAI's API base.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";
/// Anthropic's API base.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";
/// The Anthropic API version header value.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Default summariser window: 128k tokens fits every current hosted summariser model; local servers
/// should set their own.
pub const DEFAULT_CONTEXT_WINDOW: usize = 128_000;
/// Default safety margin for tokenizer differences (Claude and open models tokenise differently from
/// o200k; 10% of the default window).
pub const DEFAULT_SAFETY_MARGIN: usize = 12_800;
/// Default per-attempt timeout: long summaries of big inputs take tens of seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Fixed seed for reproducible summaries where the provider supports one.
pub const DEFAULT_SEED: u64 = 7;
/// Hosts that always need a key (local servers usually do not).
const KEYED_HOSTS: &[&str] = &["api.openai.com", "api.anthropic.com"];

/// Everything needed to build an LLM summariser.
#[derive(Debug, Clone)]
pub struct SummarizerConfig {
    /// Which API.
    pub kind: ProviderKind,
    /// Summariser model.
    pub model: String,
    /// API base URL (OpenAI-style ends in `/v1`; Anthropic-style is the host root).
    pub base_url: String,
    /// Environment variable holding the API key (never logged).
    pub api_key_env: String,
    /// Built-in template.
    pub template: Template,
    /// A prompt file replacing the template (read by [`build`]).
    pub prompt_file: Option<PathBuf>,
    /// Extra "also preserve" instructions (a request's own instructions take precedence).
    pub also_preserve: Option<String>,
    /// The summariser model's context window in tokens.
    pub context_window: usize,
    /// Tokens kept free for tokenizer differences.
    pub safety_margin: usize,
    /// Encoding used to budget the summariser's input.
    pub encoding: Encoding,
    /// Per-attempt timeout.
    pub timeout: Duration,
    /// Retries.
    pub retries: RetryPolicy,
    /// Temperature (`None` for models that reject it).
    pub temperature: Option<f32>,
    /// Seed (OpenAI-compatible only).
    pub seed: Option<u64>,
    /// Output cap field for OpenAI-compatible servers.
    pub cap_field: OutputCapField,
    /// Streaming.
    pub stream: StreamMode,
    /// Truncation of the summariser input.
    pub limits: InputLimits,
    /// Whether a summary may be asked for at the end of the conversation's own request, to read the
    /// prompt cache its agent calls warmed (see [`crate::warm`]).
    pub cache_warm: CacheWarm,
    /// The outbound client (the host's, with its proxies and trusted roots); `None`: direct
    /// connections trusting the system's roots.
    pub client: Option<compact_net::Client>,
}

impl SummarizerConfig {
    /// Defaults for a provider: official endpoint, default model, `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`.
    pub fn new(kind: ProviderKind) -> Self {
        let (model, base_url, env) = match kind {
            ProviderKind::OpenAi => (DEFAULT_OPENAI_MODEL, OPENAI_BASE_URL, "OPENAI_API_KEY"),
            ProviderKind::Anthropic | ProviderKind::AnthropicCompaction => (
                DEFAULT_ANTHROPIC_MODEL,
                ANTHROPIC_BASE_URL,
                "ANTHROPIC_API_KEY",
            ),
        };
        SummarizerConfig {
            kind,
            model: model.to_owned(),
            base_url: base_url.to_owned(),
            api_key_env: env.to_owned(),
            template: Template::Checkpoint,
            prompt_file: None,
            also_preserve: None,
            context_window: DEFAULT_CONTEXT_WINDOW,
            safety_margin: DEFAULT_SAFETY_MARGIN,
            encoding: Encoding::O200kBase,
            timeout: DEFAULT_TIMEOUT,
            retries: RetryPolicy::default(),
            temperature: Some(0.0),
            seed: Some(DEFAULT_SEED),
            cap_field: OutputCapField::MaxTokens,
            stream: StreamMode::Off,
            limits: InputLimits::default(),
            cache_warm: CacheWarm::Auto,
            client: None,
        }
    }

    /// The endpoint URL for this provider and base.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        match self.kind {
            ProviderKind::OpenAi => format!("{base}/chat/completions"),
            ProviderKind::Anthropic | ProviderKind::AnthropicCompaction
                if base.ends_with("/v1") =>
            {
                format!("{base}/messages")
            }
            ProviderKind::Anthropic | ProviderKind::AnthropicCompaction => {
                format!("{base}/v1/messages")
            }
        }
    }
}

/// Why a summariser could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The key variable is unset for an endpoint that requires a key.
    #[error("environment variable {0} is not set (it must hold the API key)")]
    MissingKey(String),
    /// The prompt file could not be read.
    #[error("cannot read prompt file {path}: {source}")]
    PromptFile {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The base URL is not http(s).
    #[error("base URL `{0}` must start with http:// or https://")]
    BadUrl(String),
    /// Other configuration problems.
    #[error(transparent)]
    Llm(#[from] LlmError),
}

/// Builds an LLM summariser that falls back to the deterministic checkpoint
/// ([`compact_engine::DeterministicSummarizer`]) with a warning in [`compact_engine::Summary::warnings`]
/// whenever the model path fails (transport, overflow after every reduction, refusal twice, bad plan).
pub fn build(config: SummarizerConfig) -> Result<Arc<dyn Summarizer>, BuildError> {
    build_with_fallback(config, Arc::new(DeterministicSummarizer))
}

/// Builds an LLM summariser with no fallback: failures are returned as [`compact_engine::SummarizeError`]s.
pub fn build_without_fallback(config: SummarizerConfig) -> Result<Arc<dyn Summarizer>, BuildError> {
    Ok(Arc::new(build_summarizer(config, None)?))
}

/// Builds an LLM summariser that falls back to `fallback` with a warning whenever the model path fails.
pub fn build_with_fallback(
    config: SummarizerConfig,
    fallback: Arc<dyn Summarizer>,
) -> Result<Arc<dyn Summarizer>, BuildError> {
    Ok(Arc::new(build_summarizer(config, Some(fallback))?))
}

/// Builds the concrete summariser.
pub fn build_summarizer(
    config: SummarizerConfig,
    fallback: Option<Arc<dyn Summarizer>>,
) -> Result<LlmSummarizer, BuildError> {
    let url = config.endpoint();
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return Err(BuildError::BadUrl(config.base_url.clone()));
    };
    let host = rest.split(['/', ':']).next().unwrap_or("");
    let key = std::env::var(&config.api_key_env)
        .ok()
        .filter(|k| !k.trim().is_empty());
    if key.is_none() && KEYED_HOSTS.contains(&host) {
        return Err(BuildError::MissingKey(config.api_key_env.clone()));
    }
    let mut headers = Vec::new();
    match config.kind {
        ProviderKind::OpenAi => {
            if let Some(k) = key {
                if host.ends_with(".azure.com") {
                    headers.push(HeaderSpec::Secret("api-key", Secret::new(k)));
                } else {
                    headers.push(HeaderSpec::Secret(
                        "authorization",
                        Secret::new(format!("Bearer {}", k.trim())),
                    ));
                }
            }
        }
        ProviderKind::Anthropic | ProviderKind::AnthropicCompaction => {
            headers.push(HeaderSpec::Plain(
                "anthropic-version",
                ANTHROPIC_VERSION.to_owned(),
            ));
            if config.kind == ProviderKind::AnthropicCompaction {
                headers.push(HeaderSpec::Plain(
                    "anthropic-beta",
                    crate::provider::ANTHROPIC_COMPACTION_BETA.to_owned(),
                ));
            }
            if let Some(k) = key {
                headers.push(HeaderSpec::Secret(
                    "x-api-key",
                    Secret::new(k.trim().to_owned()),
                ));
            }
        }
    }
    let prompt = match &config.prompt_file {
        Some(path) => PromptSource::Custom(std::fs::read_to_string(path).map_err(|source| {
            BuildError::PromptFile {
                path: path.clone(),
                source,
            }
        })?),
        None => PromptSource::Builtin(config.template),
    };
    let http = match config.client.clone() {
        Some(client) => HttpClient::with_client(client, config.timeout, config.retries),
        None => HttpClient::new(config.timeout, config.retries)?,
    };
    let seed = match config.kind {
        ProviderKind::OpenAi => config.seed,
        ProviderKind::Anthropic | ProviderKind::AnthropicCompaction => None,
    };
    let cached_price_ratio = cached_price_ratio(&config.model);
    Ok(LlmSummarizer {
        cached_price_ratio,
        kind: config.kind,
        model: config.model,
        url,
        headers,
        http,
        prompt,
        also_preserve: config.also_preserve,
        sampling: Sampling {
            temperature: config.temperature,
            seed,
            cap_field: config.cap_field,
            stream: config.stream,
        },
        context_window: config.context_window,
        safety_margin: config.safety_margin,
        cache_warm: config.cache_warm,
        limits: config.limits,
        counter: TokenCounter::new(config.encoding),
        fallback,
    })
}

/// The registry's cached-input price of `model` relative to its input price, or
/// [`crate::warm::DEFAULT_CACHED_PRICE_RATIO`] when the registry does not price it.
fn cached_price_ratio(model: &str) -> f64 {
    compact_core::registry::ModelRegistry::builtin()
        .lookup(model)
        .and_then(|m| m.pricing)
        .filter(|p| p.input > 0.0)
        .map(|p| p.cached_input / p.input)
        .filter(|r| r.is_finite() && (0.0..=1.0).contains(r))
        .unwrap_or(crate::warm::DEFAULT_CACHED_PRICE_RATIO)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let mut c = SummarizerConfig::new(ProviderKind::Anthropic);
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        c.base_url = "http://127.0.0.1:9/v1/".into();
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/messages");
        let o = SummarizerConfig::new(ProviderKind::OpenAi);
        assert_eq!(o.endpoint(), "https://api.openai.com/v1/chat/completions");
    }

    #[test]
    fn missing_key_for_official_endpoint() {
        let mut c = SummarizerConfig::new(ProviderKind::OpenAi);
        c.api_key_env = "COMPACT_TEST_SURELY_UNSET_KEY".into();
        assert!(matches!(build(c), Err(BuildError::MissingKey(_))));
        let mut local = SummarizerConfig::new(ProviderKind::OpenAi);
        local.api_key_env = "COMPACT_TEST_SURELY_UNSET_KEY".into();
        local.base_url = "http://127.0.0.1:8080/v1".into();
        assert!(build(local).is_ok());
        let mut bad = SummarizerConfig::new(ProviderKind::OpenAi);
        bad.base_url = "ftp://x".into();
        assert!(matches!(build(bad), Err(BuildError::BadUrl(_))));
    }
}
