//! One wiring layer: a resolved [`Config`] in, running parts out.
//!
//! Every host of the runtime (`compactctl` and its servers, the proxy it starts, the Python
//! binding) builds its store, archive, event exporters and summariser here, so that a setting
//! means the same thing in each of them and a new part is wired in one place. Nothing here decides
//! policy: it only turns settings into objects, and names the setting in every error.
//!
//! The environment is read by the caller and passed in ([`Env`]): this crate reads no variable
//! itself, so tests run side by side with different environments.

use compact_config::{
    CacheWarmSetting, Config, StorageSettings, SummarizerKind, SummarizerSettings,
};
use compact_engine::{DeterministicSummarizer, Summarizer};
use compact_llm::{CacheWarm, ProviderKind, SummarizerConfig};
use compact_session::{Archive, ExportQueue, SessionConfig, SqliteStore, Store};
use std::path::PathBuf;
use std::sync::Arc;

/// What went wrong while building a part; each message names the setting or flag it came from.
/// [`WiringError::is_bad_input`] tells a caller's mistake from a failure of the part.
#[derive(Debug, thiserror::Error)]
pub enum WiringError {
    /// The summariser settings are inconsistent or its client cannot be built.
    #[error("{0}")]
    Summarizer(String),
    /// A store URL is malformed, or names a store the command cannot use.
    #[error("{0}")]
    StoreUrl(String),
    /// The store cannot be opened (the message never repeats a PostgreSQL password).
    #[error("{0}")]
    Store(String),
    /// The archive cannot be opened.
    #[error("storage.archive: {0}")]
    Archive(#[from] compact_session::ArchiveError),
    /// The event exporter cannot be started.
    #[error("telemetry: cannot start the configured event exporter: {0}")]
    Exports(#[from] std::io::Error),
    /// The outbound client cannot be built from `network:` and the proxy variables.
    #[error("network: {0}")]
    Network(#[from] compact_net::NetError),
}

impl WiringError {
    /// Whether the caller's settings are at fault (a command line exits 2), not the part.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, WiringError::Summarizer(_) | WiringError::StoreUrl(_))
    }
}

/// The environment variables a host passes in (S3 keys, the state directory).
pub struct Env<'a>(pub &'a dyn Fn(&str) -> Option<String>);

impl Env<'_> {
    /// The process's own environment.
    pub fn process() -> Env<'static> {
        Env(&|k| std::env::var(k).ok())
    }

    fn get(&self, name: &str) -> Option<String> {
        (self.0)(name).filter(|v| !v.is_empty())
    }
}

/// The one outbound client of a configuration: its `network:` section over the proxy and CA
/// variables `env` holds (`HTTPS_PROXY`, `NO_PROXY`, `SSL_CERT_FILE`, ...).
pub fn client(config: &Config, env: &Env<'_>) -> Result<compact_net::Client, WiringError> {
    let proxy_env = compact_net::ProxyEnv::from_lookup(|k| (env.0)(k));
    Ok(compact_session::open_client(config, &proxy_env)?)
}

/// The summariser `settings` select, sending through `client` (`None`: a direct connection
/// trusting the system's roots). LLM summarisers are built without a fallback of their own: the
/// policy (`on_summarizer_failure`) decides what a failure does. A model or base URL set for the
/// deterministic summariser is an error (it would be silently unused).
pub fn summarizer(
    settings: &SummarizerSettings,
    client: Option<&compact_net::Client>,
) -> Result<Arc<dyn Summarizer>, WiringError> {
    let kind = match settings.kind {
        SummarizerKind::Deterministic => {
            if settings.model.is_some() || settings.base_url.is_some() {
                return Err(WiringError::Summarizer(
                    "summarizer: a model or base URL needs an LLM summarizer (openai, anthropic or anthropic-compaction)".into(),
                ));
            }
            return Ok(Arc::new(DeterministicSummarizer));
        }
        SummarizerKind::OpenAi => ProviderKind::OpenAi,
        SummarizerKind::Anthropic => ProviderKind::Anthropic,
        SummarizerKind::AnthropicCompaction => ProviderKind::AnthropicCompaction,
    };
    let mut llm = SummarizerConfig::new(kind);
    if let Some(model) = &settings.model {
        llm.model.clone_from(model);
    }
    if let Some(url) = &settings.base_url {
        llm.base_url.clone_from(url);
    }
    if let Some(env) = &settings.api_key_env {
        llm.api_key_env.clone_from(env);
    }
    if let Some(template) = &settings.template {
        llm.template = template
            .parse()
            .map_err(|e| WiringError::Summarizer(format!("summarizer.template: {e}")))?;
    }
    llm.cache_warm = match settings.cache_warm {
        CacheWarmSetting::Auto => CacheWarm::Auto,
        CacheWarmSetting::Always => CacheWarm::Always,
        CacheWarmSetting::Off => CacheWarm::Off,
    };
    llm.client = client.cloned();
    compact_llm::build_without_fallback(llm)
        .map_err(|e| WiringError::Summarizer(format!("summarizer: {e}")))
}

/// The summariser settings of a proxy model route that names `kind`, the `summarizer:` section
/// lending its settings (model, base URL, key variable) to a route of the same kind and its
/// template and cache setting to any. `anthropic-compaction` compacts with the route's own model
/// (`route_model`) at `route_base_url`, since it is that model's conversation the provider
/// compacts.
pub fn route_summarizer_settings(
    top: &SummarizerSettings,
    kind: SummarizerKind,
    route_model: &str,
    route_base_url: &str,
) -> SummarizerSettings {
    let mut s = if top.kind == kind {
        top.clone()
    } else {
        SummarizerSettings {
            kind,
            template: top.template.clone(),
            cache_warm: top.cache_warm,
            ..SummarizerSettings::default()
        }
    };
    match kind {
        SummarizerKind::AnthropicCompaction => {
            s.model = Some(route_model.to_owned());
            s.base_url = Some(route_base_url.to_owned());
        }
        SummarizerKind::Deterministic => {
            s.model = None;
            s.base_url = None;
            s.template = None;
        }
        SummarizerKind::OpenAi | SummarizerKind::Anthropic => {}
    }
    s
}

/// Where the session store comes from.
#[derive(Clone, Copy, Debug)]
pub enum StoreSource<'a> {
    /// A store URL given on the command line (`--store`): `sqlite:PATH`, `postgres://...` or
    /// `memory`. A SQLite file is created when missing only if `create`; `memory` is refused
    /// unless `allow_memory` (a command whose log must outlive it).
    Url {
        /// The URL as given.
        url: &'a str,
        /// Whether a missing SQLite file is created.
        create: bool,
        /// Whether `memory` is accepted.
        allow_memory: bool,
    },
    /// The configuration's `storage:`, else `fallback`.
    Configured(Fallback),
}

/// The store used when the configuration names none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// An in-memory store (a library host: nothing persists unless configured).
    Memory,
    /// `sessions.db` in the user's state directory (`$XDG_STATE_HOME/compact`, else
    /// `~/.local/state/compact`): a long-running server keeps its logs across restarts.
    UserState,
    /// None: the store is required.
    Required,
}

/// Opens the session store `source` names.
pub fn store(
    config: &Config,
    source: StoreSource<'_>,
    env: &Env<'_>,
) -> Result<Arc<dyn Store>, WiringError> {
    match source {
        StoreSource::Url {
            url,
            create,
            allow_memory,
        } => store_at(url, create, allow_memory),
        StoreSource::Configured(fallback) => match config.session().storage.as_ref() {
            Some(storage) => compact_session::open_storage(storage, true).map_err(|e| {
                WiringError::Store(format!(
                    "storage: cannot open the session store {}: {e}",
                    storage.describe()
                ))
            }),
            None => match fallback {
                Fallback::Memory => Ok(Arc::new(compact_session::MemoryStore::new())),
                Fallback::Required => Err(WiringError::Store(
                    "no session store: the configuration names no `storage` (or pass --store)"
                        .into(),
                )),
                Fallback::UserState => {
                    let dir = state_dir(env).ok_or_else(|| {
                        WiringError::Store("no HOME or XDG_STATE_HOME: pass --store".into())
                    })?;
                    std::fs::create_dir_all(&dir).map_err(|e| {
                        WiringError::Store(format!("cannot create {}: {e}", dir.display()))
                    })?;
                    let path = dir.join("sessions.db");
                    SqliteStore::open(&path)
                        .map(|s| Arc::new(s) as Arc<dyn Store>)
                        .map_err(|e| {
                            WiringError::Store(format!(
                                "cannot open the session store {}: {e}",
                                path.display()
                            ))
                        })
                }
            },
        },
    }
}

/// The directory of the user-state fallback store.
pub fn state_dir(env: &Env<'_>) -> Option<PathBuf> {
    env.get("XDG_STATE_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            env.get("HOME")
                .map(|h| PathBuf::from(h).join(".local/state"))
        })
        .map(|d| d.join("compact"))
}

/// Opens the store at a URL given on the command line (see [`StoreSource::Url`]).
pub fn store_at(
    url: &str,
    create: bool,
    allow_memory: bool,
) -> Result<Arc<dyn Store>, WiringError> {
    let storage = StorageSettings::parse_url(url)
        .map_err(|e| WiringError::StoreUrl(format!("--store {e}")))?;
    if storage == StorageSettings::Memory && !allow_memory {
        return Err(WiringError::StoreUrl(format!(
            "--store `{url}`: an in-memory store holds nothing between two runs of compactctl; use sqlite:PATH"
        )));
    }
    // The URL may carry a password: the message names the store as `describe` shows it.
    compact_session::open_storage(&storage, create).map_err(|e| {
        WiringError::Store(format!(
            "--store `{}`: cannot open the store: {e}",
            storage.describe()
        ))
    })
}

/// The archive the configuration's `storage.archive:` names, if any (S3 through `client`).
pub fn archive(
    config: &Config,
    env: &Env<'_>,
    client: Option<&compact_net::Client>,
) -> Result<Option<Arc<dyn Archive>>, WiringError> {
    compact_session::open_archive_with(config, &|k| env.get(k), client)
        .transpose()
        .map_err(WiringError::from)
}

/// The event exporter the configuration's `telemetry:` names, started, if any (OTLP/HTTP through
/// `client`).
pub fn exports(
    config: &Config,
    client: Option<&compact_net::Client>,
) -> Result<Option<Arc<ExportQueue>>, WiringError> {
    Ok(compact_session::open_exports_with(config, client)
        .transpose()?
        .map(Arc::new))
}

/// The session settings of a configuration, with the summariser its `summarizer:` selects.
pub fn session_config(
    config: &Config,
    client: Option<&compact_net::Client>,
) -> Result<SessionConfig, WiringError> {
    Ok(
        SessionConfig::from_config(config)
            .with_summarizer(summarizer(config.summarizer(), client)?),
    )
}

/// Everything a host runs a session runtime with, built from one configuration.
pub struct Parts {
    /// The outbound client every part sends through (a proxy's upstream calls too).
    pub client: compact_net::Client,
    /// The session settings, with their summariser.
    pub session: SessionConfig,
    /// The session store.
    pub store: Arc<dyn Store>,
    /// The archive, if configured.
    pub archive: Option<Arc<dyn Archive>>,
    /// The running event exporter, if configured.
    pub exports: Option<Arc<ExportQueue>>,
}

impl Parts {
    /// Builds every part `config` names, the store from `store`.
    pub fn open(
        config: &Config,
        store: StoreSource<'_>,
        env: &Env<'_>,
    ) -> Result<Self, WiringError> {
        let client = self::client(config, env)?;
        Ok(Parts {
            session: session_config(config, Some(&client))?,
            store: self::store(config, store, env)?,
            archive: archive(config, env, Some(&client))?,
            exports: exports(config, Some(&client))?,
            client,
        })
    }

    /// A session manager over these parts (archive and exporters attached).
    pub fn manager(
        &self,
    ) -> Result<compact_session::CompactManager, compact_session::SessionError> {
        let mut manager =
            compact_session::CompactManager::open(self.session.clone(), Arc::clone(&self.store))?;
        if let Some(archive) = &self.archive {
            manager = manager.with_archive(Arc::clone(archive));
        }
        if let Some(exports) = &self.exports {
            manager = manager.with_exports(Arc::clone(exports));
        }
        Ok(manager)
    }
}
