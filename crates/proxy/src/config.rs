//! [`ProxyConfig`]: everything the proxy runs with, resolved once by the caller (the CLI builds it
//! from `compact_config::Config` and the environment) and passed in; the proxy reads no file and
//! no environment of its own.

use crate::route::Family;
use compact_core::registry::ModelRegistry;
use compact_engine::Summarizer;
use compact_session::SessionConfig;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Default listen address: loopback only (an agent's traffic carries its API key; exposing the
/// proxy beyond the machine is an explicit choice).
pub const DEFAULT_LISTEN: SocketAddr =
    SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8787);
/// Default largest request body: Anthropic's own limit (32 MB); larger bodies get 413.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;
/// Default wait for an upstream's response headers: long non-streamed completions of reasoning
/// models take minutes.
pub const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(600);
/// Default longest silence inside a streamed reply before the proxy ends it with an error event.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default time in-flight requests get to finish after a shutdown signal.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on recall round trips per client request: a model that needs more than three
/// originals for one answer is better served by the reply it can give (and its next turn can ask
/// again); each detour is a whole upstream call.
pub const DEFAULT_RECALL_MAX_DETOURS: u32 = 3;
/// Default bound on in-flight requests per core: a request costs the proxy about 1.3 ms of CPU
/// (BENCHMARKS.md, "Proxy versus peers"), so if every admitted request needed its preflight at once
/// the last would wait about 170 ms for a core; the rest of a request's life is spent waiting on
/// the upstream, which costs a socket and the memory of its body and conversation.
pub const IN_FLIGHT_PER_CORE: usize = 128;
/// Ceiling of the default in-flight bound: Tokio's default number of blocking threads. A request
/// may hold one during its preflight (a compaction whose summariser is an LLM holds it for the
/// summariser's call), and a preflight that found none free would stall a runtime worker.
pub const MAX_DEFAULT_IN_FLIGHT: usize = 512;
/// The default queue is this fraction of the in-flight bound: a slot frees when a request ends, and
/// agent calls last seconds, so within one default queue timeout about a quarter of the slots (of
/// calls lasting four seconds) free up; a request beyond that would wait the whole timeout and be
/// shed anyway, and is better told at once.
pub const QUEUE_PER_IN_FLIGHT: usize = 4;
/// Default longest wait for a slot: short against an agent call (seconds), long enough to ride out
/// a burst; a shed request's `Retry-After` is this, rounded up to whole seconds.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(1);
/// Default OpenAI upstream.
pub const DEFAULT_OPENAI_BASE_URL: &str = "https://api.openai.com";
/// Default Anthropic upstream.
pub const DEFAULT_ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// One upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upstream {
    /// Origin, optionally with a path prefix; a trailing `/v1` (or Azure's `/openai/v1`,
    /// `/openai`) is accepted: the request's path, which already starts with it, is not doubled.
    pub base_url: String,
    /// The window of the models behind it, when set.
    pub context_window: Option<usize>,
}

/// A model with its own upstream, window or compaction backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRoute {
    /// The request's `model`.
    pub name: String,
    /// Its upstream, when not the family's.
    pub base_url: Option<String>,
    /// Its window.
    pub context_window: Option<usize>,
    /// What writes its sessions' checkpoints, when not [`ProxyConfig::session`]'s summariser.
    pub backend: Option<Backend>,
}

/// A compaction backend a model route chooses: a summariser under a name. The proxy keeps one
/// session manager per (window, backend name), so routes that name the same backend share its
/// managers (and the first route's summariser): give different summarisers different names.
#[derive(Clone)]
pub struct Backend {
    name: String,
    summarizer: Arc<dyn Summarizer>,
}

impl Backend {
    /// `summarizer` under `name` (the name keys the managers and appears in logs; the
    /// summariser's own [`Summarizer::name`] is what compaction reports record).
    pub fn new(name: impl Into<String>, summarizer: Arc<dyn Summarizer>) -> Self {
        Backend {
            name: name.into(),
            summarizer,
        }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its summariser.
    pub fn summarizer(&self) -> &Arc<dyn Summarizer> {
        &self.summarizer
    }
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("name", &self.name)
            .field("summarizer", &self.summarizer.name())
            .finish()
    }
}

/// Backends are the same when their names are: the name is what keys the managers.
impl PartialEq for Backend {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Backend {}

/// The proxy's settings.
#[derive(Clone)]
pub struct ProxyConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Largest request body accepted (413 beyond).
    pub max_body_bytes: usize,
    /// Wait for an upstream's response headers (504 beyond).
    pub upstream_timeout: Duration,
    /// Longest silence inside a streamed reply.
    pub stream_idle_timeout: Duration,
    /// Time in-flight requests get after a shutdown signal.
    pub drain_timeout: Duration,
    /// Chat Completions, Responses and other OpenAI paths.
    pub openai: Upstream,
    /// Messages and other Anthropic paths.
    pub anthropic: Upstream,
    /// Per-model upstreams, windows and compaction backends.
    pub models: Vec<ModelRoute>,
    /// Bearer token of the admin API; `None` turns the admin API off.
    pub admin_token: Option<String>,
    /// The session runtime's settings (policy, counter, summariser); the window is set per
    /// request (see [`ProxyConfig::window_for`]).
    pub session: SessionConfig,
    /// Model table used to find the window of a request's model.
    pub registry: ModelRegistry,
    /// Where every compaction's transcript, checkpoint and events are archived (none by default).
    pub archive: Option<std::sync::Arc<dyn compact_session::Archive>>,
    /// Where the session runtime's events are exported besides the log (none by default).
    pub exports: Option<std::sync::Arc<compact_session::ExportQueue>>,
    /// In-band recall: the `compact_recall` tool and the detours that answer it.
    pub recall: RecallConfig,
    /// The window the user set (`--window`, `max_context_tokens`): no model is compacted for a
    /// larger one, whatever its route, upstream or registry entry says.
    pub window_cap: Option<usize>,
    /// Where `compactctl run` keeps the outputs it cut: `compact_recall` answers their ids too.
    pub kept_outputs: Option<KeptOutputs>,
    /// The bounds on requests worked on and waiting, past which requests are shed.
    pub admission: AdmissionConfig,
    /// The outbound client upstream calls go through (the host's, with the proxies and trusted
    /// roots of `network:` and the environment); `None`: direct connections trusting the system's
    /// roots.
    pub client: Option<compact_net::Client>,
    /// The session store does its I/O on the calling thread, with no async runtime of its own
    /// (memory, SQLite; not PostgreSQL, whose client blocks on a runtime of its own, which cannot
    /// run inside the proxy's). Then a request's session work (preflight, usage) runs on the
    /// worker thread handling the request whenever it makes no network call (no model
    /// summariser, no archive): see `compacting::Place`. False by default, which hands the worker
    /// to another thread while that work runs (`block_in_place`).
    pub store_on_worker: bool,
}

/// The outputs `compactctl run` (the agents' `PreToolUse` hook) kept whole: a model that sees one
/// of its markers in a proxied conversation can recall it through `compact_recall`, whichever
/// store the proxy's own sessions live in.
#[derive(Clone)]
pub struct KeptOutputs {
    /// A manager over the store that holds them.
    pub manager: Arc<compact_session::CompactManager>,
    /// The sessions they are kept in (`compactctl run --session`, `$COMPACT_RUN_SESSION`, `run`).
    pub sessions: Vec<String>,
}

/// In-band recall settings (see [`crate::recall`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecallConfig {
    /// Offer the tool when a request holds references (on by default).
    pub enabled: bool,
    /// The most recall round trips per client request; past it the request is sent without the
    /// tool and whatever comes back goes to the client.
    pub max_detours: u32,
}

/// Admission and load shedding (see [`crate::admission`]): how many proxied requests are worked
/// on at once and how many may wait for a slot; past that a request is answered 503 with
/// `Retry-After` at once. Health, readiness, metrics and the admin API are never counted or shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// Requests worked on at once, each from its arrival to the end of its reply's body (streams
    /// included); `None`: no bound, nothing is shed.
    pub max_in_flight: Option<usize>,
    /// Requests that may wait for a slot; a request that finds the queue full is shed at once
    /// (0: none waits).
    pub max_queue: usize,
    /// Longest wait for a slot; a request still waiting then is shed.
    pub queue_timeout: Duration,
}

impl AdmissionConfig {
    /// At most `max_in_flight` (at least 1) requests at once, with the default queue for it.
    pub fn with_max_in_flight(max_in_flight: usize) -> Self {
        let max_in_flight = max_in_flight.max(1);
        AdmissionConfig {
            max_in_flight: Some(max_in_flight),
            max_queue: max_in_flight / QUEUE_PER_IN_FLIGHT,
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
        }
    }

    /// No bound: every request is admitted at once (in-flight requests are still counted).
    pub fn unbounded() -> Self {
        AdmissionConfig {
            max_in_flight: None,
            ..AdmissionConfig::with_max_in_flight(1)
        }
    }

    /// The default in-flight bound on this machine: [`IN_FLIGHT_PER_CORE`] per core the process
    /// may use, at most [`MAX_DEFAULT_IN_FLIGHT`].
    pub fn default_max_in_flight() -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        cores
            .saturating_mul(IN_FLIGHT_PER_CORE)
            .min(MAX_DEFAULT_IN_FLIGHT)
    }
}

impl Default for AdmissionConfig {
    /// Sized from the machine: [`AdmissionConfig::default_max_in_flight`].
    fn default() -> Self {
        AdmissionConfig::with_max_in_flight(AdmissionConfig::default_max_in_flight())
    }
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig {
            enabled: true,
            max_detours: DEFAULT_RECALL_MAX_DETOURS,
        }
    }
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("listen", &self.listen)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("upstream_timeout", &self.upstream_timeout)
            .field("stream_idle_timeout", &self.stream_idle_timeout)
            .field("openai", &self.openai)
            .field("anthropic", &self.anthropic)
            .field("models", &self.models)
            .field("admin_token", &self.admin_token.as_ref().map(|_| "<set>"))
            .field("session", &self.session)
            .field("recall", &self.recall)
            .field("admission", &self.admission)
            .field("store_on_worker", &self.store_on_worker)
            .finish_non_exhaustive()
    }
}

impl ProxyConfig {
    /// Defaults around `session`: loopback, the providers' public APIs, no admin API.
    pub fn new(session: SessionConfig) -> Self {
        ProxyConfig {
            listen: DEFAULT_LISTEN,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            upstream_timeout: DEFAULT_UPSTREAM_TIMEOUT,
            stream_idle_timeout: DEFAULT_STREAM_IDLE_TIMEOUT,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            openai: Upstream {
                base_url: DEFAULT_OPENAI_BASE_URL.to_owned(),
                context_window: None,
            },
            anthropic: Upstream {
                base_url: DEFAULT_ANTHROPIC_BASE_URL.to_owned(),
                context_window: None,
            },
            models: Vec::new(),
            admin_token: None,
            session,
            registry: ModelRegistry::builtin(),
            archive: None,
            exports: None,
            recall: RecallConfig::default(),
            window_cap: None,
            kept_outputs: None,
            admission: AdmissionConfig::default(),
            client: None,
            store_on_worker: false,
        }
    }

    /// Settings from a resolved configuration; `admin_token` is the value of the variable its
    /// `proxy.admin_token_env` names (read by the caller). A route's `summarizer` is not built
    /// here (the proxy builds no summariser): the caller sets [`ModelRoute::backend`].
    pub fn from_config(config: &compact_config::Config, admin_token: Option<String>) -> Self {
        let mut proxy = ProxyConfig::new(SessionConfig::from_config(config));
        proxy.window_cap = config.window_set();
        let settings = config.proxy();
        if let Some(listen) = settings.listen {
            proxy.listen = listen;
        }
        if let Some(n) = settings.max_body_bytes {
            proxy.max_body_bytes = n;
        }
        if let Some(s) = settings.upstream_timeout_secs {
            proxy.upstream_timeout = Duration::from_secs(s);
        }
        if let Some(s) = settings.stream_idle_timeout_secs {
            proxy.stream_idle_timeout = Duration::from_secs(s);
        }
        if let Some(u) = &settings.openai {
            proxy.openai = Upstream {
                base_url: u.base_url.clone(),
                context_window: u.context_window,
            };
        }
        if let Some(u) = &settings.anthropic {
            proxy.anthropic = Upstream {
                base_url: u.base_url.clone(),
                context_window: u.context_window,
            };
        }
        proxy.models = settings
            .models
            .iter()
            .map(|m| ModelRoute {
                name: m.name.clone(),
                base_url: m.base_url.clone(),
                context_window: m.context_window,
                backend: None,
            })
            .collect();
        proxy.admin_token = admin_token.filter(|t| !t.is_empty());
        if let Some(on) = settings.recall {
            proxy.recall.enabled = on;
        }
        if let Some(n) = settings.recall_max_detours {
            proxy.recall.max_detours = n;
        }
        match settings.max_in_flight {
            Some(compact_config::InFlightLimit::Off) => {
                proxy.admission = AdmissionConfig::unbounded();
            }
            Some(compact_config::InFlightLimit::Max(n)) => {
                proxy.admission = AdmissionConfig::with_max_in_flight(n);
            }
            None => {}
        }
        if let Some(n) = settings.max_queue {
            proxy.admission.max_queue = n;
        }
        if let Some(ms) = settings.queue_timeout_ms {
            proxy.admission.queue_timeout = Duration::from_millis(ms);
        }
        proxy.registry = config.registry().clone();
        proxy
    }

    fn upstream(&self, family: Family) -> &Upstream {
        match family {
            Family::OpenAi => &self.openai,
            Family::Anthropic => &self.anthropic,
        }
    }

    fn model_route(&self, model: Option<&str>) -> Option<&ModelRoute> {
        let model = model?;
        self.models.iter().find(|m| m.name == model)
    }

    /// The base URL a request goes to: its model's, else its family's.
    pub fn base_url_for(&self, family: Family, model: Option<&str>) -> &str {
        self.model_route(model)
            .and_then(|m| m.base_url.as_deref())
            .unwrap_or(&self.upstream(family).base_url)
    }

    /// The compaction backend of a request's model, when its route names one (else the
    /// session's summariser compacts).
    pub fn backend_for(&self, model: Option<&str>) -> Option<&Backend> {
        self.model_route(model).and_then(|m| m.backend.as_ref())
    }

    /// The window a request is compacted for: its model's route, else its upstream's, else the
    /// registry's entry for its model, else the configured policy's window; never more than
    /// [`ProxyConfig::window_cap`].
    pub fn window_for(&self, family: Family, model: Option<&str>) -> usize {
        let window = self
            .model_route(model)
            .and_then(|m| m.context_window)
            .or(self.upstream(family).context_window)
            .or_else(|| {
                model
                    .and_then(|m| self.registry.lookup(m))
                    .map(|info| info.context_window as usize)
            })
            .unwrap_or(self.session.policy.max_context_tokens);
        self.window_cap.map_or(window, |cap| window.min(cap))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_core::policy::Policy;
    use compact_core::tokens::{Encoding, TokenCounter};

    #[test]
    fn the_window_the_user_set_caps_every_model() {
        let session = SessionConfig::new(
            Policy::for_window(16_000),
            TokenCounter::new(Encoding::O200kBase),
        );
        let mut config = ProxyConfig::new(session);
        let known = "claude-sonnet-4-5";
        let registry = config
            .registry
            .lookup(known)
            .map(|m| m.context_window as usize);
        assert!(registry.is_some_and(|w| w > 16_000), "{registry:?}");
        assert_eq!(
            config.window_for(Family::Anthropic, Some(known)),
            registry.unwrap_or(0)
        );
        config.window_cap = Some(16_000);
        assert_eq!(config.window_for(Family::Anthropic, Some(known)), 16_000);
        assert_eq!(
            config.window_for(Family::OpenAi, Some("unknown-model")),
            16_000
        );
        config.window_cap = Some(1_000_000);
        assert_eq!(
            config.window_for(Family::Anthropic, Some(known)),
            registry.unwrap_or(0),
            "a cap above the model's window changes nothing"
        );
    }
}
