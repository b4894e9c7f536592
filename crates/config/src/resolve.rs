//! Resolution: file, environment and flag layers merged (later wins) and applied to the defaults,
//! the model looked up in the registry (with `models:` overrides), and the policy validated once.

use crate::check::{self, Source};
use crate::error::ConfigError;
use crate::file::{FileConfig, FileStorageKind, FileUpstream};
use crate::layer::Overrides;
use crate::network::NetworkSettings;
use crate::proxy::{
    check_base_url, InFlightLimit, ProxyModelSettings, ProxySettings, UpstreamSettings,
};
use crate::session::{
    ArchiveRetention, ArchiveSettings, ExporterSettings, MemorySettings, OtlpProtocol,
    OtlpSettings, RedactionSettings, SessionSettings, StorageSettings, TelemetrySettings,
    MAX_OVERFLOW_MAX_RETRIES,
};
use crate::yaml;
use compact_core::model::Role;
use compact_core::policy::{
    Mode, Policy, ReversibleMode, StrategyName, SummarizerFailure, TruncationMode,
};
use compact_core::registry::{ModelInfo, ModelOverride, ModelRegistry, Pricing, Provider};
use compact_core::tokens::{Encoding, TokenCounter};
use std::path::Path;
use std::str::FromStr;

/// Which summariser writes checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SummarizerKind {
    /// The deterministic checkpoint (no model, the default).
    #[default]
    Deterministic,
    /// An OpenAI-compatible chat model.
    OpenAi,
    /// An Anthropic model.
    Anthropic,
    /// Anthropic's own compaction (on-demand mode): the provider summarises, Compact falls back to
    /// its own checkpoint when it gives no summary or is unavailable.
    AnthropicCompaction,
}

impl SummarizerKind {
    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            SummarizerKind::Deterministic => "deterministic",
            SummarizerKind::OpenAi => "openai",
            SummarizerKind::Anthropic => "anthropic",
            SummarizerKind::AnthropicCompaction => "anthropic-compaction",
        }
    }
}

impl FromStr for SummarizerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "deterministic" => Ok(SummarizerKind::Deterministic),
            "openai" => Ok(SummarizerKind::OpenAi),
            "anthropic" => Ok(SummarizerKind::Anthropic),
            "anthropic-compaction" => Ok(SummarizerKind::AnthropicCompaction),
            _ => {
                Err("expected deterministic, openai, anthropic or anthropic-compaction".to_owned())
            }
        }
    }
}

/// `summarizer.cache_warm`: whether an LLM summariser may ask for its summary at the end of the
/// conversation's own request, reading the prompt cache the agent's calls warmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheWarmSetting {
    /// When the conversation's wire format and model are the summariser's, it fits its window and
    /// reading it cached costs less by estimate than the fresh prompt.
    #[default]
    Auto,
    /// Whenever the wire format, the model and the window allow it.
    Always,
    /// Always a fresh prompt.
    Off,
}

impl FromStr for CacheWarmSetting {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(CacheWarmSetting::Auto),
            "always" => Ok(CacheWarmSetting::Always),
            "off" => Ok(CacheWarmSetting::Off),
            _ => Err("expected auto, always or off".to_owned()),
        }
    }
}

/// Summariser settings, as plain data for the crate that builds summarisers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SummarizerSettings {
    /// Which summariser.
    pub kind: SummarizerKind,
    /// Its model.
    pub model: Option<String>,
    /// Its API base URL.
    pub base_url: Option<String>,
    /// Template name (`task_state`, `brief`, `decision_log`) or text.
    pub template: Option<String>,
    /// Name of the environment variable holding the API key (never the key itself).
    pub api_key_env: Option<String>,
    /// Whether the summariser may read the agent's prompt cache (`summarizer.cache_warm`).
    pub cache_warm: CacheWarmSetting,
}

/// The resolved, validated configuration. Immutable: build it once, share it.
#[derive(Debug, Clone)]
pub struct Config {
    policy: Policy,
    model: Option<ModelInfo>,
    registry: ModelRegistry,
    summarizer: SummarizerSettings,
    session: SessionSettings,
    proxy: ProxySettings,
    network: NetworkSettings,
    window_set: Option<usize>,
}

fn field<T: FromStr>(field: &'static str, value: &Option<String>) -> Result<Option<T>, ConfigError>
where
    T::Err: std::fmt::Display,
{
    value
        .as_deref()
        .map(|v| {
            T::from_str(v).map_err(|e| ConfigError::Field {
                field,
                value: v.to_owned(),
                reason: e.to_string(),
            })
        })
        .transpose()
}

fn role(name: &str) -> Result<Role, ConfigError> {
    match name.trim().to_ascii_lowercase().as_str() {
        "system" => Ok(Role::System),
        "developer" => Ok(Role::Developer),
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        "tool" => Ok(Role::Tool),
        _ => Err(ConfigError::Field {
            field: "policy.roles_never_prune",
            value: name.to_owned(),
            reason: "expected system, developer, user, assistant or tool".to_owned(),
        }),
    }
}

/// The file's text as its typed sections, every rule of [`crate::check`] met; an empty file is the
/// defaults.
fn parse_file(name: &str, text: &str) -> Result<FileConfig, ConfigError> {
    if text.trim().is_empty() {
        return Ok(FileConfig::default());
    }
    let parsed = yaml::from_str::<FileConfig>(text).map_err(|e| ConfigError::Parse {
        file: name.to_owned(),
        line: e.line,
        column: e.column,
        message: e.message,
    })?;
    let src = Source { name, text };
    if let Some((section, key, why)) = parsed.unsupported() {
        return Err(src.error(
            section,
            key,
            format!("`{key}` has no effect in this version ({why}): remove it"),
        ));
    }
    check::file(src, &parsed)?;
    Ok(parsed)
}

/// The settings of `memory:` (checked by [`parse_file`]); `None` when absent or disabled.
fn memory_settings(file: &FileConfig) -> Option<MemorySettings> {
    let m = file.memory.as_ref()?;
    if !m.enabled.unwrap_or(true) {
        return None;
    }
    Some(MemorySettings {
        budget_tokens: m.budget_tokens,
        caps: m.caps.clone().unwrap_or_default(),
        min_confidence: m.min_confidence,
        project: m.project.clone(),
        project_store: m.project_store.unwrap_or(true),
        gate: m.gate.unwrap_or(false),
    })
}

/// The settings of `telemetry:` (checked by [`parse_file`]).
fn telemetry_settings(file: &FileConfig) -> Option<TelemetrySettings> {
    let t = file.telemetry.as_ref()?;
    let exporter = match t.exporter.as_deref()? {
        "console" => ExporterSettings::Console,
        "jsonl" => ExporterSettings::Jsonl {
            path: t.path.clone()?,
            max_bytes: t.max_bytes,
            keep: t.keep,
        },
        "otlp" => ExporterSettings::Otlp(OtlpSettings {
            endpoint: t.endpoint.clone(),
            protocol: match t.protocol.as_deref() {
                Some("grpc") => OtlpProtocol::Grpc,
                _ => OtlpProtocol::Http,
            },
            headers: t.headers.clone().unwrap_or_default(),
            service_name: t.service_name.clone(),
            timeout_ms: t.timeout_ms,
        }),
        _ => return None,
    };
    Some(TelemetrySettings {
        exporter,
        queue: t.queue,
    })
}

fn archive_settings(file: &FileConfig) -> (Option<ArchiveSettings>, ArchiveRetention) {
    let Some(a) = file.storage.as_ref().and_then(|s| s.archive.as_ref()) else {
        return (None, ArchiveRetention::default());
    };
    let retention = ArchiveRetention {
        max_age_days: a.max_age_days,
        max_bytes: a.max_bytes,
    };
    let settings = if a.kind.as_deref() == Some("s3") {
        ArchiveSettings::S3 {
            endpoint: a.endpoint.clone().unwrap_or_default(),
            bucket: a.bucket.clone().unwrap_or_default(),
            region: a.region.clone().unwrap_or_else(|| "us-east-1".to_owned()),
            prefix: a.prefix.clone().unwrap_or_default(),
            path_style: a.path_style.unwrap_or(true),
            access_key_env: a
                .access_key_env
                .clone()
                .unwrap_or_else(|| "AWS_ACCESS_KEY_ID".to_owned()),
            secret_key_env: a
                .secret_key_env
                .clone()
                .unwrap_or_else(|| "AWS_SECRET_ACCESS_KEY".to_owned()),
        }
    } else {
        ArchiveSettings::Fs {
            path: std::path::PathBuf::from(a.path.clone().unwrap_or_default()),
        }
    };
    (Some(settings), retention)
}

/// The settings of `storage:` (checked by [`parse_file`]).
fn storage_settings(file: &FileConfig) -> Option<StorageSettings> {
    let storage = file.storage.as_ref()?;
    match (storage.kind, &storage.path) {
        (Some(FileStorageKind::Postgres), _) => Some(StorageSettings::Postgres {
            url: storage.url.clone()?,
        }),
        (Some(FileStorageKind::Memory), _) => Some(StorageSettings::Memory),
        (_, Some(path)) => Some(StorageSettings::Sqlite {
            path: std::path::PathBuf::from(path),
        }),
        _ => None,
    }
}

fn model_override(m: &crate::file::FileModel) -> Result<ModelOverride, ConfigError> {
    let provider = match &m.provider {
        Some(p) => Some(Provider::parse(p).ok_or_else(|| ConfigError::Field {
            field: "models[].provider",
            value: p.clone(),
            reason: "unknown provider".to_owned(),
        })?),
        None => None,
    };
    Ok(ModelOverride {
        name: m.name.clone(),
        aliases: m.aliases.clone(),
        provider,
        context_window: m.context_window,
        max_output_tokens: m.max_output_tokens,
        encoding: field::<Encoding>("models[].encoding", &m.encoding)?,
        framing: None,
        pricing: m.pricing.map(|p| Pricing {
            input: p.input,
            cached_input: p.cached_input.unwrap_or(p.input),
            cache_write: p.cache_write.unwrap_or(p.input),
            output: p.output,
        }),
    })
}

impl Config {
    /// Resolves a configuration from an optional file (`(name, contents)`), an environment layer and a
    /// flags layer (flags win over environment, environment over file). Pure: reads nothing.
    pub fn from_sources(
        file: Option<(&str, &str)>,
        env: &Overrides,
        flags: &Overrides,
    ) -> Result<Config, ConfigError> {
        let parsed = match file {
            Some((name, text)) => parse_file(name, text)?,
            None => FileConfig::default(),
        };
        let mut o = parsed.layer();
        o.merge(env);
        o.merge(flags);
        // The stages in the order their errors are reported: the model first, since the policy's
        // window and output reserve come from its registry entry.
        let (registry, model) = registry_and_model(&parsed, &o)?;
        let policy = policy(&o, model.as_ref())?;
        let summarizer = summarizer_settings(&parsed, &o)?;
        let session = session_settings(&parsed, &o)?;
        let proxy = proxy_settings(&parsed, &o)?;
        Ok(Config {
            policy,
            model,
            registry,
            summarizer,
            session,
            proxy,
            network: network_settings(&parsed),
            window_set: o.max_context_tokens,
        })
    }

    /// Resolves from a file path (if any), the process environment (`COMPACT_*`, see [`crate::env`];
    /// `COMPACT_CONFIG` names the file when `path` is `None`) and the CLI's flags layer.
    pub fn load(path: Option<&Path>, flags: &Overrides) -> Result<Config, ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars().collect();
        let env = crate::env::from_vars(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        let env_path = vars
            .iter()
            .find(|(k, _)| k == "COMPACT_CONFIG")
            .map(|(_, v)| std::path::PathBuf::from(v));
        let path = path.map(Path::to_path_buf).or(env_path);
        match path {
            Some(path) => {
                let bytes = std::fs::read(&path).map_err(|source| ConfigError::Read {
                    path: path.clone(),
                    source,
                })?;
                let name = path.display().to_string();
                let text = utf8(&name, bytes)?;
                Config::from_sources(Some((&name, &text)), &env, flags)
            }
            None => Config::from_sources(None, &env, flags),
        }
    }

    /// The validated policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The window the user set (`max_context_tokens` in the file, `COMPACT_MAX_CONTEXT_TOKENS`, a
    /// `--window` flag), as opposed to one the model's registry entry or the default gave: a cap
    /// for every model a proxy serves.
    pub fn window_set(&self) -> Option<usize> {
        self.window_set
    }

    /// The model, when one was named and found.
    pub fn model(&self) -> Option<&ModelInfo> {
        self.model.as_ref()
    }

    /// The model registry with `models:` overrides applied.
    pub fn registry(&self) -> &ModelRegistry {
        &self.registry
    }

    /// The token counter: the model's, or exact `o200k_base` when no model is named.
    pub fn counter(&self) -> TokenCounter {
        self.model.as_ref().map_or_else(
            || TokenCounter::new(Encoding::O200kBase),
            ModelInfo::counter,
        )
    }

    /// Summariser settings.
    pub fn summarizer(&self) -> &SummarizerSettings {
        &self.summarizer
    }

    /// The session runtime's settings.
    pub fn session(&self) -> &SessionSettings {
        &self.session
    }

    /// The compaction proxy's settings.
    pub fn proxy(&self) -> &ProxySettings {
        &self.proxy
    }

    /// The outbound network's settings (`network:`): the host builds the one outbound client
    /// from them and its environment's proxy variables.
    pub fn network(&self) -> &NetworkSettings {
        &self.network
    }
}

/// The registry with the file's `models:` applied, and the named model in it. A model the
/// registry does not know is an error unless the window is given, since the window is all the
/// policy needs from it.
fn registry_and_model(
    parsed: &FileConfig,
    o: &Overrides,
) -> Result<(ModelRegistry, Option<ModelInfo>), ConfigError> {
    let overrides = parsed
        .models
        .iter()
        .map(model_override)
        .collect::<Result<Vec<_>, _>>()?;
    let registry = ModelRegistry::builtin().with_overrides(overrides)?;
    let model = match &o.model {
        Some(name) => match registry.lookup(name) {
            Some(m) => Some(m.clone()),
            None if o.max_context_tokens.is_some() => None,
            None => return Err(ConfigError::UnknownModel(name.clone())),
        },
        None => None,
    };
    Ok((registry, model))
}

/// The policy: the defaults, then the model's window and output limit, then every layered
/// setting (a set value wins over the model's), validated once.
fn policy(o: &Overrides, model: Option<&ModelInfo>) -> Result<Policy, ConfigError> {
    let mut p = Policy {
        model: o.model.clone(),
        ..Policy::default()
    };
    if let Some(m) = model {
        p.max_context_tokens = m.context_window as usize;
        p.reserved_output_tokens = p.reserved_output_tokens.min(m.max_output_tokens as usize);
    }
    macro_rules! set {
        ($($src:ident => $dst:expr),+ $(,)?) => { $( if let Some(v) = o.$src.clone() { $dst = v; } )+ };
    }
    set!(
        max_context_tokens => p.max_context_tokens,
        reserved_output_tokens => p.reserved_output_tokens,
        hard_cap_buffer => p.hard_cap_buffer,
        trigger_pct => p.trigger_pct,
        target_pct => p.target_pct,
        min_gain_pct => p.min_gain_pct,
        keep_recent_turns => p.keep_recent_turns,
        keep_tool_io_pairs => p.keep_tool_io_pairs,
        protected_flag => p.protected_flag,
        protected_tools => p.protected_tools,
        tool_output_max_tokens => p.tool_output.max_tokens,
        tool_output_serialization_buffer => p.tool_output.serialization_buffer,
        tool_output_head_fraction => p.tool_output.head_fraction,
        user_message_max_tokens => p.user_message_max_tokens,
        tier1_min_savings_tokens => p.tier1_min_savings_tokens,
        summary_max_tokens => p.summary_max_tokens,
    );
    p.soft_trigger_pct = o.soft_trigger_pct.or(p.soft_trigger_pct);
    p.boundary_trigger_pct = o.boundary_trigger_pct.or(p.boundary_trigger_pct);
    p.min_tokens_left = o.min_tokens_left.or(p.min_tokens_left);
    if let Some(v) = field::<Mode>("policy.mode", &o.mode)? {
        p.mode = v;
    }
    if let Some(v) = field::<StrategyName>("policy.strategy", &o.strategy)? {
        p.strategy = v;
    }
    if let Some(v) = field::<ReversibleMode>("policy.reversible", &o.reversible)? {
        p.reversible = v;
    }
    if let Some(v) = field::<TruncationMode>("policy.tool_output.mode", &o.tool_output_mode)? {
        p.tool_output.mode = v;
    }
    if let Some(v) =
        field::<SummarizerFailure>("policy.on_summarizer_failure", &o.on_summarizer_failure)?
    {
        p.on_summarizer_failure = v;
    }
    if let Some(roles) = &o.roles_never_prune {
        p.roles_never_prune = roles.iter().map(|r| role(r)).collect::<Result<_, _>>()?;
    }
    p.validate()?;
    Ok(p)
}

/// The summariser's settings; its key is named by the file only (`api_key_env`), never carried
/// by a variable or flag, so that no layer holds a secret.
fn summarizer_settings(
    parsed: &FileConfig,
    o: &Overrides,
) -> Result<SummarizerSettings, ConfigError> {
    let kind = field::<SummarizerKind>("summarizer.kind", &o.summarizer_kind)?.unwrap_or_default();
    Ok(SummarizerSettings {
        kind,
        model: o.summarizer_model.clone(),
        base_url: o.summarizer_base_url.clone(),
        template: o.summarizer_template.clone(),
        api_key_env: parsed
            .summarizer
            .as_ref()
            .and_then(|s| s.api_key_env.clone()),
        cache_warm: field::<CacheWarmSetting>("summarizer.cache_warm", &o.summarizer_cache_warm)?
            .unwrap_or_default(),
    })
}

/// The session runtime's settings. The retry bound is checked again here because a variable or
/// flag can set it too (the file's value was checked with its line by [`parse_file`]).
fn session_settings(parsed: &FileConfig, o: &Overrides) -> Result<SessionSettings, ConfigError> {
    if let Some(n) = o
        .overflow_max_retries
        .filter(|&n| n > MAX_OVERFLOW_MAX_RETRIES)
    {
        return Err(ConfigError::Field {
            field: "policy.overflow_max_retries",
            value: n.to_string(),
            reason: format!("at most {MAX_OVERFLOW_MAX_RETRIES} recoveries per turn are allowed"),
        });
    }
    let (archive, archive_retention) = archive_settings(parsed);
    Ok(SessionSettings {
        overflow_max_retries: o.overflow_max_retries,
        idle_delay_ms: o.idle_delay_ms.filter(|&ms| ms > 0),
        manual_trigger_phrases: o.manual_trigger_phrases.clone(),
        storage: storage_settings(parsed),
        redaction: parsed
            .redaction
            .as_ref()
            .map(|r| RedactionSettings {
                enabled: r.enabled.unwrap_or(true),
                summarizer: r.summarizer.unwrap_or(false),
                patterns: r
                    .patterns
                    .iter()
                    .map(|p| {
                        let (name, regex) = p.parts();
                        (name.to_owned(), regex.to_owned())
                    })
                    .collect(),
            })
            .unwrap_or_default(),
        archive,
        archive_retention,
        telemetry: telemetry_settings(parsed),
        memory: memory_settings(parsed),
    })
}

/// The `network:` section for the outbound client (checked by [`parse_file`]).
fn network_settings(parsed: &FileConfig) -> NetworkSettings {
    parsed
        .network
        .as_ref()
        .map(|n| NetworkSettings {
            proxy: n.proxy.as_ref().map(|p| p.trim().to_owned()),
            no_proxy: n.no_proxy.clone(),
            ca_file: n.ca_file.as_ref().map(std::path::PathBuf::from),
        })
        .unwrap_or_default()
}

/// The `proxy:` section with the merged layers' listen address and base URLs, validated.
fn proxy_settings(file: &FileConfig, o: &Overrides) -> Result<ProxySettings, ConfigError> {
    let section = file.proxy.clone().unwrap_or_default();
    let bad = |field: &'static str, value: &str, reason: String| ConfigError::Field {
        field,
        value: value.to_owned(),
        reason,
    };
    let listen = match &o.proxy_listen {
        Some(text) => Some(text.trim().parse().map_err(|_| {
            bad(
                "proxy.listen",
                text,
                "expected an address and port such as 127.0.0.1:8787".to_owned(),
            )
        })?),
        None => None,
    };
    let upstream = |field: &'static str,
                    url: &Option<String>,
                    from_file: &Option<FileUpstream>|
     -> Result<Option<UpstreamSettings>, ConfigError> {
        let Some(url) = url else { return Ok(None) };
        check_base_url(url).map_err(|reason| bad(field, url, reason))?;
        Ok(Some(UpstreamSettings {
            base_url: url.trim_end_matches('/').to_owned(),
            context_window: from_file.as_ref().and_then(|u| u.context_window),
        }))
    };
    let openai = upstream(
        "proxy.openai.base_url",
        &o.proxy_openai_base_url,
        &section.openai,
    )?;
    let anthropic = upstream(
        "proxy.anthropic.base_url",
        &o.proxy_anthropic_base_url,
        &section.anthropic,
    )?;
    let mut models = Vec::with_capacity(section.models.len());
    for m in &section.models {
        if let Some(url) = &m.base_url {
            check_base_url(url).map_err(|reason| bad("proxy.models.base_url", url, reason))?;
        }
        if m.context_window == Some(0) {
            return Err(bad(
                "proxy.models.context_window",
                "0",
                "a window holds at least one token".to_owned(),
            ));
        }
        let summarizer = match &m.summarizer {
            Some(kind) => Some(kind.parse::<SummarizerKind>().map_err(|reason| {
                bad(
                    "proxy.models.summarizer",
                    kind,
                    format!("{reason} (model `{}`)", m.name),
                )
            })?),
            None => None,
        };
        models.push(ProxyModelSettings {
            name: m.name.clone(),
            summarizer,
            base_url: m
                .base_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_owned()),
            context_window: m.context_window,
        });
    }
    if section.max_body_bytes == Some(0) {
        return Err(bad(
            "proxy.max_body_bytes",
            "0",
            "must be at least 1".to_owned(),
        ));
    }
    let max_in_flight = match &o.proxy_max_in_flight {
        Some(text) => {
            InFlightLimit::parse(text).map_err(|reason| bad("proxy.max_in_flight", text, reason))?
        }
        None => None,
    };
    if o.proxy_queue_timeout_ms == Some(0) {
        return Err(bad(
            "proxy.queue_timeout_ms",
            "0",
            "must be at least 1 (max_queue: 0 sheds without waiting)".to_owned(),
        ));
    }
    Ok(ProxySettings {
        listen,
        max_body_bytes: section.max_body_bytes,
        upstream_timeout_secs: section.upstream_timeout_secs,
        stream_idle_timeout_secs: section.stream_idle_timeout_secs,
        openai,
        anthropic,
        models,
        admin_token_env: section.admin_token_env.clone(),
        recall: section.recall.map(|s| s.0),
        recall_max_detours: section.recall_max_detours,
        max_in_flight,
        max_queue: o.proxy_max_queue,
        queue_timeout_ms: o.proxy_queue_timeout_ms,
    })
}

/// The file's text, or a [`ConfigError::Parse`] naming the line and column of the first byte that is
/// not UTF-8 (a YAML file is UTF-8 text; a UTF-16 or binary file is named as such).
fn utf8(file: &str, bytes: Vec<u8>) -> Result<String, ConfigError> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let valid = &bytes[..at];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // Valid up to `at`, so the column counts characters.
        let column = String::from_utf8_lossy(&valid[line_start..])
            .chars()
            .count()
            + 1;
        let hint = if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
            " (the file looks like UTF-16: save it as UTF-8)"
        } else {
            ""
        };
        ConfigError::Parse {
            file: file.to_owned(),
            line,
            column,
            message: format!(
                "byte 0x{:02x} is not valid UTF-8{hint}",
                bytes.get(at).copied().unwrap_or(0)
            ),
        }
    })
}
