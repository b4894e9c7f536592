//! [`SessionConfig`]: what a [`crate::CompactManager`] runs with, resolved once by the caller and
//! passed in (the manager reads no file and no environment).

use crate::store::{MemoryStore, SqliteStore, Store, StoreError};
use crate::trigger::DEFAULT_TRIGGER_PHRASES;
use compact_config::StorageSettings;
use compact_core::policy::Policy;
use compact_core::redact::Redactor;
use compact_core::tokens::TokenCounter;
use compact_engine::{DeterministicSummarizer, Summarizer};
use std::sync::Arc;
use std::time::Duration;

/// Overflow recoveries per turn before the manager gives up (seed 004's `MAX_COMPACTION_ATTEMPTS`,
/// seed 000's `CONTEXT_OVERFLOW_MAX_RETRIES`).
pub const DEFAULT_OVERFLOW_MAX_RETRIES: u32 = 3;

/// The manager's settings.
#[derive(Clone)]
pub struct SessionConfig {
    /// The compaction policy (window, trigger, strategy, tool-output truncation...).
    pub policy: Policy,
    /// The token counter of the model the sessions talk to.
    pub counter: TokenCounter,
    /// Writes checkpoint text (the deterministic checkpoint by default).
    pub summarizer: Arc<dyn Summarizer>,
    /// Latest-user-message phrases that ask for a compaction (see [`crate::trigger`]).
    pub trigger_phrases: Vec<String>,
    /// Overflow recoveries allowed per turn.
    pub overflow_max_retries: u32,
    /// Redacts secrets from every record before it is logged, archived or handed out as an event
    /// (the built-in detectors by default; `None` turns redaction off). The requests the manager
    /// prepares are not redacted: the model sees what the host sent.
    pub redactor: Option<Arc<Redactor>>,
    /// Whether the summariser sees the session's text redacted too (`redaction.summarizer`; off by
    /// default: the summary of a redacted text cannot name what was redacted). Needs `redactor`.
    pub redact_summarizer_input: bool,
    /// Sessions whose state the manager keeps in memory; beyond it, the least recently used idle
    /// ones are dropped (their next call reloads them from the store and recounts once).
    pub max_cached_sessions: usize,
    /// Structured fact memory (`None`: off, the default). See [`crate::memory`].
    pub memory: Option<crate::memory::MemoryConfig>,
    /// Idle-time compaction (`None`: off, the default). The manager only keeps the clock; a host
    /// that wants it starts an [`crate::IdleCompactor`] with these settings.
    pub idle: Option<IdleSettings>,
}

/// Default of [`SessionConfig::max_cached_sessions`]: a 200k-token session holds a few megabytes
/// (the items last received and the view), so a thousand of them stay within a few gigabytes.
pub const DEFAULT_MAX_CACHED_SESSIONS: usize = 1_024;

impl std::fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionConfig")
            .field("policy", &self.policy)
            .field("counter", &self.counter)
            .field("summarizer", &self.summarizer.name())
            .field("trigger_phrases", &self.trigger_phrases)
            .field("overflow_max_retries", &self.overflow_max_retries)
            .field("max_cached_sessions", &self.max_cached_sessions)
            .field("memory", &self.memory)
            .field("idle", &self.idle)
            .field("redact_summarizer_input", &self.redact_summarizer_input)
            .field(
                "redactor",
                &self.redactor.as_ref().map(|r| r.kinds().count()),
            )
            .finish()
    }
}

impl SessionConfig {
    /// Settings for `policy` and `counter`, with the deterministic summariser, the default trigger
    /// phrases, three recoveries per turn, [`DEFAULT_MAX_CACHED_SESSIONS`] and the built-in secret
    /// detectors.
    pub fn new(policy: Policy, counter: TokenCounter) -> Self {
        SessionConfig {
            policy,
            counter,
            summarizer: Arc::new(DeterministicSummarizer),
            trigger_phrases: DEFAULT_TRIGGER_PHRASES
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            overflow_max_retries: DEFAULT_OVERFLOW_MAX_RETRIES,
            max_cached_sessions: DEFAULT_MAX_CACHED_SESSIONS,
            redactor: Some(Arc::new(Redactor::new())),
            redact_summarizer_input: false,
            memory: None,
            idle: None,
        }
    }

    /// Settings from a resolved configuration (its policy and its model's counter). The summariser
    /// is the deterministic one: a model summariser is built by the caller (`compact-llm`) and set
    /// with [`SessionConfig::with_summarizer`].
    /// `policy.overflow_max_retries` and `policy.manual_trigger_phrases` are applied when set, and
    /// `redaction:` (on by default; `enabled: false` turns it off; `patterns` add detectors), and
    /// `policy.idle_delay_ms` (idle-time compaction's settings; the host starts it).
    pub fn from_config(config: &compact_config::Config) -> Self {
        let mut session = SessionConfig::new(config.policy().clone(), config.counter());
        let settings = config.session();
        if let Some(n) = settings.overflow_max_retries {
            session.overflow_max_retries = n;
        }
        if let Some(phrases) = &settings.manual_trigger_phrases {
            session.trigger_phrases.clone_from(phrases);
        }
        session.idle = settings.idle_delay_ms.map(|ms| IdleSettings {
            after: std::time::Duration::from_millis(ms),
        });
        session.memory = settings
            .memory
            .as_ref()
            .map(|m| crate::memory::MemoryConfig::from_settings(m, None));
        session.redact_summarizer_input = settings.redaction.summarizer;
        session.redactor = if settings.redaction.enabled {
            let mut r = Redactor::new();
            for (name, pattern) in &settings.redaction.patterns {
                // Checked when the file was read: a pattern that fails here is only left out.
                if let Ok(with) = r.clone().with_pattern(name, pattern) {
                    r = with;
                }
            }
            Some(Arc::new(r))
        } else {
            None
        };
        session
    }

    /// The same settings with structured fact memory (`None` turns it off).
    #[must_use]
    pub fn with_memory(mut self, memory: Option<crate::memory::MemoryConfig>) -> Self {
        self.memory = memory;
        self
    }

    /// The same settings with `project` as the memory's project when the configuration names none
    /// and keeps a project store (hosts pass the canonical working directory).
    #[must_use]
    pub fn with_default_project(mut self, project: &str) -> Self {
        if let Some(m) = &mut self.memory {
            if m.project.is_none() && m.project_store {
                m.project = Some(project.to_owned());
            }
        }
        self
    }

    /// The same settings with another summariser.
    #[must_use]
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// The same settings with other trigger phrases (an empty list disables detection).
    #[must_use]
    pub fn with_trigger_phrases<S: Into<String>>(
        mut self,
        phrases: impl IntoIterator<Item = S>,
    ) -> Self {
        self.trigger_phrases = phrases.into_iter().map(Into::into).collect();
        self
    }
}

/// Opens the store a configuration's `storage:` names (`kind: memory`, `kind: sqlite` with its
/// `path`, `kind: postgres` with its `url`); `None` when the configuration names none (the caller
/// picks).
pub fn open_store(config: &compact_config::Config) -> Option<Result<Arc<dyn Store>, StoreError>> {
    Some(open_storage(config.session().storage.as_ref()?, true))
}

/// Opens the store `storage` names: the one way every host opens a store (the CLI's `--store`,
/// `serve`, a configuration's `storage:`, the Python binding). A SQLite file that does not exist is
/// created only when `create` (a command that writes sessions); otherwise it is an error naming
/// the file. Errors never repeat a PostgreSQL URL (it may carry a password).
pub fn open_storage(storage: &StorageSettings, create: bool) -> Result<Arc<dyn Store>, StoreError> {
    match storage {
        StorageSettings::Memory => Ok(Arc::new(MemoryStore::new())),
        StorageSettings::Sqlite { path } => {
            if !create && !path.is_file() {
                return Err(StoreError::Backend(format!(
                    "no such file `{}`",
                    path.display()
                )));
            }
            SqliteStore::open(path).map(|s| Arc::new(s) as Arc<dyn Store>)
        }
        #[cfg(feature = "postgres")]
        StorageSettings::Postgres { url } => {
            crate::store::PostgresStore::connect(url).map(|s| Arc::new(s) as Arc<dyn Store>)
        }
        other => Err(StoreError::Backend(format!(
            "storage {} is not supported by this build",
            other.describe()
        ))),
    }
}

/// The outbound client a configuration's `network:` settings describe over the proxy variables
/// of `env` (`HTTPS_PROXY`, `NO_PROXY`, `SSL_CERT_FILE`...; see [`compact_net::ProxyEnv`]): the one
/// client everything the host sends goes through. Built once by the host and passed on.
pub fn open_client(
    config: &compact_config::Config,
    env: &compact_net::ProxyEnv,
) -> Result<compact_net::Client, compact_net::NetError> {
    compact_net::Client::new(&net_settings(config.network()), env)
}

/// The configuration's `network:` settings as the outbound client takes them.
pub fn net_settings(network: &compact_config::NetworkSettings) -> compact_net::NetSettings {
    compact_net::NetSettings {
        proxy: network.proxy.clone(),
        no_proxy: network.no_proxy.clone(),
        ca_file: network.ca_file.clone(),
    }
}

/// Opens the archive a configuration's `storage.archive:` names; `None` when it names none. The
/// S3 keys are read with `env` from the variables the configuration names (the runtime reads no
/// environment itself: the caller passes `|k| std::env::var(k).ok()`); S3 requests go through
/// the client of the configuration's `network:` over the proxy variables `env` finds (a host that
/// built its client already passes it to [`open_archive_with`]).
pub fn open_archive(
    config: &compact_config::Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<Result<Arc<dyn crate::Archive>, crate::ArchiveError>> {
    let s3 = matches!(
        config.session().archive.as_ref()?,
        compact_config::ArchiveSettings::S3 { .. }
    );
    if !s3 {
        return open_archive_with(config, env, None);
    }
    match open_client(config, &compact_net::ProxyEnv::from_lookup(env)) {
        Ok(client) => open_archive_with(config, env, Some(&client)),
        Err(e) => Some(Err(crate::ArchiveError::Config(e.to_string()))),
    }
}

/// Like [`open_archive`], S3 requests going through `client` (`None`: direct, trusting the
/// system's roots).
pub fn open_archive_with(
    config: &compact_config::Config,
    env: &dyn Fn(&str) -> Option<String>,
    client: Option<&compact_net::Client>,
) -> Option<Result<Arc<dyn crate::Archive>, crate::ArchiveError>> {
    use compact_config::ArchiveSettings;
    #[cfg(not(feature = "s3"))]
    let _ = client;
    let archive: Result<Arc<dyn crate::Archive>, crate::ArchiveError> =
        match config.session().archive.as_ref()? {
            ArchiveSettings::Fs { path } => {
                crate::FsArchive::open(path).map(|a| Arc::new(a) as Arc<dyn crate::Archive>)
            }
            #[cfg(feature = "s3")]
            ArchiveSettings::S3 {
                endpoint,
                bucket,
                region,
                prefix,
                path_style,
                access_key_env,
                secret_key_env,
            } => {
                let key = |name: &str| {
                    env(name).filter(|v| !v.is_empty()).ok_or_else(|| {
                        crate::ArchiveError::Config(format!(
                            "the S3 archive's key variable {name} is not set"
                        ))
                    })
                };
                (|| {
                    let config = crate::S3Config {
                        endpoint: endpoint.clone(),
                        bucket: bucket.clone(),
                        region: region.clone(),
                        access_key: key(access_key_env)?,
                        secret_key: key(secret_key_env)?,
                        prefix: prefix.clone(),
                        path_style: *path_style,
                    };
                    match client {
                        Some(client) => crate::S3Archive::with_client(&config, client.clone()),
                        None => crate::S3Archive::new(&config),
                    }
                    .map(|a| Arc::new(a) as Arc<dyn crate::Archive>)
                })()
            }
            other => Err(crate::ArchiveError::Config(format!(
                "archive {other:?} is not supported by this build"
            ))),
        };
    Some(archive)
}

/// Starts the event exporter a configuration's `telemetry:` names; `None` when it names none.
/// OTLP/HTTP goes through the client of the configuration's `network:` settings, without the
/// environment's proxies (a host passes its client to [`open_exports_with`]).
pub fn open_exports(
    config: &compact_config::Config,
) -> Option<std::io::Result<crate::export::ExportQueue>> {
    let otlp = matches!(
        config.session().telemetry.as_ref()?.exporter,
        compact_config::ExporterSettings::Otlp(_)
    );
    if !otlp {
        return open_exports_with(config, None);
    }
    match open_client(config, &compact_net::ProxyEnv::default()) {
        Ok(client) => open_exports_with(config, Some(&client)),
        Err(e) => Some(Err(std::io::Error::other(e))),
    }
}

/// Like [`open_exports`], OTLP/HTTP going through `client` (`None`: direct, trusting the
/// system's roots).
pub fn open_exports_with(
    config: &compact_config::Config,
    client: Option<&compact_net::Client>,
) -> Option<std::io::Result<crate::export::ExportQueue>> {
    #[cfg(not(feature = "otlp"))]
    let _ = client;
    use crate::export::{
        ConsoleExporter, ExportQueue, Exporter, JsonlExporter, DEFAULT_JSONL_KEEP,
        DEFAULT_JSONL_MAX_BYTES, DEFAULT_QUEUE_CAPACITY,
    };
    use compact_config::ExporterSettings;
    let t = config.session().telemetry.as_ref()?;
    let exporter: std::io::Result<Arc<dyn Exporter>> = match &t.exporter {
        ExporterSettings::Console => Ok(Arc::new(ConsoleExporter::stderr())),
        ExporterSettings::Jsonl {
            path,
            max_bytes,
            keep,
        } => JsonlExporter::open(
            std::path::Path::new(path),
            max_bytes.unwrap_or(DEFAULT_JSONL_MAX_BYTES),
            keep.unwrap_or(DEFAULT_JSONL_KEEP),
        )
        .map(|e| Arc::new(e) as Arc<dyn Exporter>),
        #[cfg(feature = "otlp")]
        ExporterSettings::Otlp(settings) => {
            crate::otlp::OtlpExporter::open_with(settings, client.cloned())
                .map(|e| Arc::new(e) as Arc<dyn Exporter>)
                .map_err(std::io::Error::other)
        }
        #[cfg(not(feature = "otlp"))]
        ExporterSettings::Otlp(_) => Err(std::io::Error::other(
            "OTLP export is not built into this Compact (cargo feature `otlp`)",
        )),
    };
    Some(
        exporter
            .and_then(|e| ExportQueue::start(vec![e], t.queue.unwrap_or(DEFAULT_QUEUE_CAPACITY))),
    )
}

/// The archive retention a configuration sets (`storage.archive.max_age_days`, `max_bytes`).
pub fn archive_retention(config: &compact_config::Config) -> crate::archive::Retention {
    let r = config.session().archive_retention;
    crate::archive::Retention {
        max_age: r
            .max_age_days
            .map(|d| std::time::Duration::from_secs(d.saturating_mul(86_400))),
        max_bytes: r.max_bytes,
    }
}

/// Default quiet time before a session is looked at (seed 001's debounce).
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(5);

/// Settings of idle-time compaction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleSettings {
    /// How long a session must be quiet (since its last preflight or usage report).
    pub after: Duration,
}

impl Default for IdleSettings {
    fn default() -> Self {
        IdleSettings {
            after: DEFAULT_IDLE_AFTER,
        }
    }
}
