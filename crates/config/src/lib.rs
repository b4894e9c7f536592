//! Configuration for Compact: a YAML file, `COMPACT_*` environment variables and command-line flags,
//! merged in that order (later wins) and resolved and validated once into an immutable [`Config`]
//! holding the [`compact_core::policy::Policy`], the model (from the registry, with `models:`
//! overrides) and the summariser's settings.
//!
//! Defaults are documented in one place: [`compact_core::policy`]. The file's shape is described below,
//! the variables in [`mod@env`].
//!
//! # File shape
//!
//! Every key is optional; unknown keys are errors naming the key, with the file, line and column.
//!
//! ```yaml
//! model: gpt-4o                 # window and output cap come from the model registry
//! max_context_tokens: 128000    # or set the window directly
//! policy:
//!   mode: auto                  # off | remind | auto
//!   trigger_pct: 0.95
//!   soft_trigger_pct: 0.70
//!   boundary_trigger_pct: 0.85
//!   min_tokens_left: 8000
//!   target_pct: 0.85
//!   min_gain_pct: 0.15
//!   hard_cap_buffer: 1024
//!   reserved_output_tokens: 20000
//!   keep_recent_turns: 6
//!   keep_tool_io_pairs: 4
//!   roles_never_prune: [system, developer]
//!   protected_flag: protected
//!   protected_tools: [manage_todo_list]
//!   strategy: tiered
//!   tool_output: { mode: tokens, max_tokens: 5000, serialization_buffer: 1.2, head_fraction: 0.5 }
//!   user_message_max_tokens: 20000
//!   tier1_min_savings_tokens: 20000
//!   reversible: on
//!   summary_max_tokens: 6000
//!   on_summarizer_failure: deterministic
//!   overflow_max_retries: 3     # session runtime: recoveries per turn after a provider overflow (0-10)
//!   idle_delay_ms: 5000         # session runtime: compact a quiet session whose next call would (off when absent or 0)
//!   manual_trigger_phrases: ["/compact", "/summarize", "Please compact this conversation"]
//! summarizer: { kind: openai, model: gpt-4o-mini, base_url: "https://api.openai.com/v1", template: task_state, api_key_env: OPENAI_API_KEY, cache_warm: auto }
//! models:
//!   - { name: my-local-model, context_window: 32768, max_output_tokens: 4096, provider: other, encoding: estimate }
//! storage: { kind: sqlite, path: ./.compact/sessions.db }   # or { kind: memory }: the session log
//! proxy:                        # compactctl serve
//!   listen: 127.0.0.1:8787
//!   max_body_bytes: 33554432
//!   upstream_timeout_secs: 600  # until the upstream's response headers
//!   stream_idle_timeout_secs: 300
//!   openai: { base_url: "https://api.openai.com" }          # /v1/chat/completions, /v1/responses
//!   anthropic: { base_url: "https://api.anthropic.com", context_window: 200000 }
//!   models:                     # per model: upstream, window, compaction backend
//!     - { name: my-local-model, base_url: "http://127.0.0.1:8000", context_window: 32768 }
//!     - { name: claude-sonnet-4-5, summarizer: anthropic-compaction }   # Anthropic compacts this model's sessions
//!   admin_token_env: COMPACT_ADMIN_TOKEN   # the admin API is off unless this variable is set
//!   recall: on                  # offer the model `compact_recall` when a request holds stubs
//!   recall_max_detours: 3       # recall round trips per client request
//!   max_in_flight: 256          # requests worked on at once (default 128 per core, at most 512; off: no bound)
//!   max_queue: 64               # requests waiting for a slot (default max_in_flight / 4; 0: none); past it: 503
//!   queue_timeout_ms: 1000      # the longest wait for a slot; then 503 with Retry-After
//! network:                      # everything Compact sends (upstreams, summarisers, S3, OTLP)
//!   proxy: "http://proxy.corp:3128"   # or off; unset: HTTPS_PROXY / HTTP_PROXY / ALL_PROXY
//!   no_proxy: "localhost,.corp,10.0.0.0/8"   # unset: NO_PROXY
//!   ca_file: /etc/corp/ca.pem   # trusted besides the system's roots (and SSL_CERT_FILE's)
//! ```
//!
//! `storage: { kind: postgres, url: postgres://USER@HOST:PORT/DB }` keeps session logs in a
//! PostgreSQL database that several processes share.
//!
//! `redaction: { enabled: true, patterns: ["(?i)token=(\\S+)", {name: employee_id, regex: "EMP-\\d{6}"}] }`
//! sets the session runtime's secret redaction (on by default with the built-in detectors; a
//! pattern's first capture group, when it has one, is the secret); `summarizer: true` also redacts
//! what the summariser is sent (off by default).
//!
//! `storage.archive: { kind: fs, path: ./.compact/archive, max_age_days: 30, max_bytes: 1073741824 }`
//! (or `{ kind: s3, endpoint: URL, bucket: B, region: R, prefix: P, access_key_env: VAR,
//! secret_key_env: VAR }`) archives every compaction's transcript, checkpoint and events; the
//! retention is what `compactctl sessions gc` applies.
//!
//! `telemetry: {exporter: console}` or `{exporter: jsonl, path: events.jsonl, max_bytes, keep}`
//! (with `queue:`, the events held before new ones are dropped) exports the session runtime's events
//! besides its log. `{exporter: otlp, endpoint: http://127.0.0.1:4318, protocol: http, headers: {...},
//! service_name: compact, timeout_ms: 10000}` sends them to an OpenTelemetry collector as spans and
//! metrics (OTLP/HTTP protobuf, or `protocol: grpc` in a build with `compact-session`'s feature
//! `otlp-grpc`; `endpoint` may be left to `OTEL_EXPORTER_OTLP_ENDPOINT`; header
//! values are secrets and never appear in errors or `Debug`). Seed 003's `custom` is set in code
//! (`CompactManager::with_exports`): a file naming it is an error saying so.
//!
//! `memory: { enabled: true, budget_tokens: 800, caps: { decision: 24, file_state: 48 },
//! min_confidence: 0.3, project: my-project, project_store: true, gate: false }` turns on
//! structured fact memory: facts (constraints, preferences, decisions, dependencies, file states,
//! errors) injected right after the system prompt within `budget_tokens`, kept across compactions;
//! with `project_store`, durable ones are shared by the project's sessions (`project`, else the
//! working directory); `gate` turns on the pre-tool gate. `caps` names fact kinds; any other key is
//! an error with its line.
//!
//! Seed 003 also names an archive adapter (`storage.adapter`), which `storage.archive` replaces: a
//! file that sets it is an error naming the key, its line and why, never a setting silently ignored.
//!
//! Seed 003 used `policy.strategy` for the summary style (`task_state`, `brief`, `decision_log`): those
//! names are accepted there and set `summarizer.template` instead.
//!
//! ```
//! use compact_config::{Config, Overrides};
//!
//! let yaml = "model: gpt-4o\npolicy:\n  trigger_pct: 0.8\n  strategy: codex\n";
//! let flags = Overrides { keep_recent_turns: Some(3), ..Overrides::default() };
//! let config = Config::from_sources(Some(("compact.yaml", yaml)), &Overrides::default(), &flags).unwrap();
//! assert_eq!(config.policy().trigger_pct, 0.8);
//! assert_eq!(config.policy().keep_recent_turns, 3);
//! assert_eq!(config.policy().max_context_tokens, 128_000);
//!
//! let bad = Config::from_sources(Some(("compact.yaml", "policy:\n  triger_pct: 0.8\n")), &Overrides::default(), &flags);
//! let message = bad.unwrap_err().to_string();
//! assert!(message.contains("compact.yaml:2") && message.contains("triger_pct"), "{message}");
//! ```

mod check;
pub mod env;
mod error;
mod file;
mod layer;
mod network;
mod proxy;
mod resolve;
mod session;
mod yaml;

pub use error::ConfigError;
pub use file::SUMMARY_STYLES;
pub use layer::Overrides;
pub use network::{NetworkSettings, PROXY_OFF};
pub use proxy::{InFlightLimit, ProxyModelSettings, ProxySettings, UpstreamSettings};
pub use resolve::{CacheWarmSetting, Config, SummarizerKind, SummarizerSettings};
pub use session::{
    ArchiveRetention, ArchiveSettings, ExporterSettings, MemorySettings, OtlpProtocol,
    OtlpSettings, RedactionSettings, SessionSettings, StorageSettings, TelemetrySettings,
    MAX_OVERFLOW_MAX_RETRIES, MEMORY_KINDS,
};
