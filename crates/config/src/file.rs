//! The YAML configuration file: its exact shape (unknown keys are errors naming the key) and its
//! conversion into an [`Overrides`] layer plus the plain-data sections.
//!
//! The shape is documented with an example in the crate documentation.

use crate::layer::Overrides;
use serde::Deserialize;

/// The file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileConfig {
    pub model: Option<String>,
    pub max_context_tokens: Option<usize>,
    pub policy: Option<FilePolicy>,
    pub summarizer: Option<FileSummarizer>,
    #[serde(default)]
    pub models: Vec<FileModel>,
    /// Where the session runtime's events go besides the log.
    pub telemetry: Option<FileTelemetry>,
    /// Where session logs live, and their archive.
    pub storage: Option<FileStorage>,
    /// Secret redaction in the session runtime.
    pub redaction: Option<FileRedaction>,
    /// The compaction proxy (`compactctl serve`).
    pub proxy: Option<FileProxy>,
    /// Structured fact memory.
    pub memory: Option<FileMemory>,
    /// The outbound network: proxy and trusted CAs.
    pub network: Option<FileNetwork>,
}

/// `network:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileNetwork {
    /// `http://[user:password@]host:port`, or `off`.
    pub proxy: Option<String>,
    /// Hosts reached directly (the `NO_PROXY` syntax).
    pub no_proxy: Option<String>,
    /// A PEM bundle of extra trusted CAs.
    pub ca_file: Option<String>,
}

/// `memory:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileMemory {
    pub enabled: Option<bool>,
    pub budget_tokens: Option<usize>,
    pub caps: Option<std::collections::BTreeMap<String, usize>>,
    pub min_confidence: Option<f64>,
    pub project: Option<String>,
    pub project_store: Option<bool>,
    pub gate: Option<bool>,
}

/// `telemetry:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTelemetry {
    /// `console`, `jsonl`, `otlp`, `none` (seed 003's `custom` is refused with the reason).
    pub exporter: Option<String>,
    /// The JSONL file (`exporter: jsonl`).
    pub path: Option<String>,
    /// Size at which the JSONL file rotates.
    pub max_bytes: Option<u64>,
    /// Rotated JSONL files kept.
    pub keep: Option<usize>,
    /// Events held before new ones are dropped.
    pub queue: Option<usize>,
    /// The OTLP collector's URL (`exporter: otlp`).
    pub endpoint: Option<String>,
    /// `http` (protobuf) or `grpc` (`exporter: otlp`).
    pub protocol: Option<String>,
    /// Headers sent with every OTLP request (secrets: never logged).
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// The `service.name` resource attribute (`exporter: otlp`).
    pub service_name: Option<String>,
    /// How long one OTLP export may take, retries included, in milliseconds.
    pub timeout_ms: Option<u64>,
}

/// `redaction:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRedaction {
    pub enabled: Option<bool>,
    pub summarizer: Option<bool>,
    #[serde(default)]
    pub patterns: Vec<FilePattern>,
}

/// A `redaction.patterns:` entry: a regular expression (seed 003's form, reported as `custom`), or
/// `{name, regex}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum FilePattern {
    Plain(String),
    Named { name: String, regex: String },
}

impl FilePattern {
    /// (name, regular expression).
    pub(crate) fn parts(&self) -> (&str, &str) {
        match self {
            FilePattern::Plain(regex) => ("custom", regex),
            FilePattern::Named { name, regex } => (name, regex),
        }
    }
}

/// `proxy:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileProxy {
    pub listen: Option<String>,
    pub max_body_bytes: Option<usize>,
    pub upstream_timeout_secs: Option<u64>,
    pub stream_idle_timeout_secs: Option<u64>,
    pub openai: Option<FileUpstream>,
    pub anthropic: Option<FileUpstream>,
    #[serde(default)]
    pub models: Vec<FileProxyModel>,
    pub admin_token_env: Option<String>,
    /// `on` or `off` (`true`/`false` too): in-band recall (the `compact_recall` tool).
    pub recall: Option<OnOff>,
    pub recall_max_detours: Option<u32>,
    /// A number, or `off` (no bound).
    pub max_in_flight: Option<NumberOrWord>,
    pub max_queue: Option<usize>,
    pub queue_timeout_ms: Option<u64>,
}

/// A setting written as a number or a word (`max_in_flight: 256` or `max_in_flight: off`), kept
/// as text for the resolver to read as the environment's value is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NumberOrWord(pub String);

impl<'de> Deserialize<'de> for NumberOrWord {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = NumberOrWord;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number or a word")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<NumberOrWord, E> {
                Ok(NumberOrWord(v.to_string()))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<NumberOrWord, E> {
                Ok(NumberOrWord(v.to_string()))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<NumberOrWord, E> {
                Ok(NumberOrWord(v.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// A switch written `on`/`off` (or `true`/`false`); anything else is an error at its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OnOff(pub bool);

impl<'de> Deserialize<'de> for OnOff {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = OnOff;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("`on` or `off`")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<OnOff, E> {
                Ok(OnOff(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<OnOff, E> {
                match v {
                    "on" => Ok(OnOff(true)),
                    "off" => Ok(OnOff(false)),
                    other => Err(E::invalid_value(serde::de::Unexpected::Str(other), &self)),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `proxy.openai` / `proxy.anthropic`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileUpstream {
    pub base_url: String,
    pub context_window: Option<usize>,
}

/// A `proxy.models:` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileProxyModel {
    pub name: String,
    pub base_url: Option<String>,
    pub context_window: Option<usize>,
    /// The compaction backend of this model's sessions (a `summarizer.kind` spelling).
    pub summarizer: Option<String>,
}

/// Keys of seed 003's file shape that no part of this version acts on, with the reason. A file that
/// sets one is rejected naming the key and its line, rather than accepted and silently ignored.
pub(crate) const NOT_YET: [(&str, &str); 1] = [
    // Seed 003's `storage.adapter` names an archive adapter (`fs`, `s3`).
    (
        "adapter",
        "`storage.kind` chooses the session store and `storage.archive: {kind: fs, path}` or `{kind: s3, ...}` the archive",
    ),
];

/// `storage:`: where the session runtime keeps session logs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileStorage {
    pub kind: Option<FileStorageKind>,
    pub path: Option<String>,
    /// The PostgreSQL connection URL (`kind: postgres`).
    pub url: Option<String>,
    /// The archive of compactions' transcripts, checkpoints and events.
    pub archive: Option<FileArchive>,
    /// Parsed only to be rejected by name (see [`NOT_YET`]).
    pub adapter: Option<serde::de::IgnoredAny>,
}

/// `storage.archive:`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileArchive {
    pub kind: Option<String>,
    pub path: Option<String>,
    pub endpoint: Option<String>,
    pub bucket: Option<String>,
    pub region: Option<String>,
    pub prefix: Option<String>,
    pub path_style: Option<bool>,
    pub access_key_env: Option<String>,
    pub secret_key_env: Option<String>,
    pub max_age_days: Option<u64>,
    pub max_bytes: Option<u64>,
}

/// `storage.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FileStorageKind {
    Sqlite,
    Memory,
    /// A PostgreSQL database (`url:`).
    Postgres,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePolicy {
    pub mode: Option<String>,
    pub trigger_pct: Option<f64>,
    pub soft_trigger_pct: Option<f64>,
    pub boundary_trigger_pct: Option<f64>,
    pub min_tokens_left: Option<usize>,
    pub target_pct: Option<f64>,
    pub min_gain_pct: Option<f64>,
    pub hard_cap_buffer: Option<usize>,
    pub reserved_output_tokens: Option<usize>,
    pub keep_recent_turns: Option<usize>,
    pub keep_tool_io_pairs: Option<usize>,
    pub roles_never_prune: Option<Vec<String>>,
    pub protected_flag: Option<String>,
    pub protected_tools: Option<Vec<String>>,
    pub strategy: Option<String>,
    pub tool_output: Option<FileToolOutput>,
    pub user_message_max_tokens: Option<usize>,
    pub overflow_max_retries: Option<u32>,
    pub idle_delay_ms: Option<u64>,
    pub manual_trigger_phrases: Option<Vec<String>>,
    pub tier1_min_savings_tokens: Option<usize>,
    pub reversible: Option<String>,
    pub summary_max_tokens: Option<usize>,
    pub on_summarizer_failure: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileToolOutput {
    pub mode: Option<String>,
    pub max_tokens: Option<usize>,
    pub serialization_buffer: Option<f64>,
    pub head_fraction: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSummarizer {
    pub kind: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub template: Option<String>,
    pub api_key_env: Option<String>,
    pub cache_warm: Option<String>,
}

/// A `models:` entry.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileModel {
    pub name: String,
    #[serde(default)]
    pub aliases: Vec<String>,
    pub provider: Option<String>,
    pub context_window: Option<u32>,
    pub max_output_tokens: Option<u32>,
    pub encoding: Option<String>,
    pub pricing: Option<FilePricing>,
}

#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FilePricing {
    pub input: f64,
    pub output: f64,
    pub cached_input: Option<f64>,
    pub cache_write: Option<f64>,
}

/// Summary styles of seed 003 that may appear as `policy.strategy`.
pub const SUMMARY_STYLES: [&str; 3] = ["task_state", "brief", "decision_log"];

impl FileConfig {
    /// The first key of [`NOT_YET`] the file sets, with its reason, and the section it sits in
    /// (for its position).
    pub(crate) fn unsupported(&self) -> Option<(Option<&'static str>, &'static str, &'static str)> {
        let storage = self.storage.as_ref();
        let set = [(
            Some("storage"),
            storage.is_some_and(|s| s.adapter.is_some()),
        )];
        NOT_YET
            .iter()
            .zip(set)
            .find_map(|(&(key, why), (section, set))| set.then_some((section, key, why)))
    }

    /// The settings of the file as an overrides layer.
    pub(crate) fn layer(&self) -> Overrides {
        let p = self.policy.clone().unwrap_or_default();
        let t = p.tool_output.clone().unwrap_or_default();
        let s = self.summarizer.clone().unwrap_or_default();
        let (strategy, style) = match p.strategy {
            Some(name) if SUMMARY_STYLES.contains(&name.as_str()) => (None, Some(name)),
            other => (other, None),
        };
        Overrides {
            mode: p.mode,
            model: self.model.clone(),
            max_context_tokens: self.max_context_tokens,
            reserved_output_tokens: p.reserved_output_tokens,
            hard_cap_buffer: p.hard_cap_buffer,
            trigger_pct: p.trigger_pct,
            soft_trigger_pct: p.soft_trigger_pct,
            boundary_trigger_pct: p.boundary_trigger_pct,
            min_tokens_left: p.min_tokens_left,
            target_pct: p.target_pct,
            min_gain_pct: p.min_gain_pct,
            keep_recent_turns: p.keep_recent_turns,
            keep_tool_io_pairs: p.keep_tool_io_pairs,
            roles_never_prune: p.roles_never_prune,
            protected_flag: p.protected_flag,
            protected_tools: p.protected_tools,
            strategy,
            tool_output_mode: t.mode,
            tool_output_max_tokens: t.max_tokens,
            tool_output_serialization_buffer: t.serialization_buffer,
            tool_output_head_fraction: t.head_fraction,
            user_message_max_tokens: p.user_message_max_tokens,
            overflow_max_retries: p.overflow_max_retries,
            idle_delay_ms: p.idle_delay_ms,
            manual_trigger_phrases: p.manual_trigger_phrases,
            tier1_min_savings_tokens: p.tier1_min_savings_tokens,
            reversible: p.reversible,
            summary_max_tokens: p.summary_max_tokens,
            on_summarizer_failure: p.on_summarizer_failure,
            summarizer_kind: s.kind,
            summarizer_model: s.model,
            summarizer_base_url: s.base_url,
            summarizer_template: s.template.or(style),
            summarizer_cache_warm: s.cache_warm,
            proxy_listen: self.proxy.as_ref().and_then(|x| x.listen.clone()),
            proxy_openai_base_url: self
                .proxy
                .as_ref()
                .and_then(|x| x.openai.as_ref().map(|u| u.base_url.clone())),
            proxy_anthropic_base_url: self
                .proxy
                .as_ref()
                .and_then(|x| x.anthropic.as_ref().map(|u| u.base_url.clone())),
            proxy_max_in_flight: self
                .proxy
                .as_ref()
                .and_then(|x| x.max_in_flight.as_ref().map(|n| n.0.clone())),
            proxy_max_queue: self.proxy.as_ref().and_then(|x| x.max_queue),
            proxy_queue_timeout_ms: self.proxy.as_ref().and_then(|x| x.queue_timeout_ms),
        }
    }
}
