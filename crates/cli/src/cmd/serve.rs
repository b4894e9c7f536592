//! `compactctl serve`: the compaction proxy. Flags and the environment are resolved here into a
//! `ProxyConfig`; everything else is `compact-proxy`.

use crate::exit::BadInput;
use anyhow::Context;
use clap::Args;
use compact_config::{Config, Overrides, StorageSettings};
use compact_proxy::{Backend, Proxy, ProxyConfig};
use compact_wiring::{Env, Fallback, Parts, StoreSource};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The variable holding the admin API's token when the config names none.
const DEFAULT_ADMIN_TOKEN_ENV: &str = "COMPACT_ADMIN_TOKEN";

/// Arguments of `compactctl serve`.
// The field docs are `--help` text, where a URL is written plainly.
#[allow(rustdoc::bare_urls)]
#[derive(Debug, Args)]
#[command(after_help = "Point clients at the proxy:\n  \
    Claude Code / Anthropic SDK: ANTHROPIC_BASE_URL=http://127.0.0.1:8787\n  \
    OpenAI SDK / Codex CLI:      OPENAI_BASE_URL=http://127.0.0.1:8787/v1\n\
    The admin API (/admin/) is on when COMPACT_ADMIN_TOKEN (or the variable proxy.admin_token_env names) is set.")]
pub struct ServeArgs {
    /// Address to listen on (default 127.0.0.1:8787, or `proxy.listen`, or COMPACT_PROXY_LISTEN).
    #[arg(long)]
    listen: Option<String>,
    /// Upstream for /v1/chat/completions, /v1/responses and other OpenAI paths (default
    /// https://api.openai.com).
    #[arg(long = "openai-base-url", value_name = "URL")]
    openai_base_url: Option<String>,
    /// Upstream for /v1/messages and other Anthropic paths (default https://api.anthropic.com).
    #[arg(long = "anthropic-base-url", value_name = "URL")]
    anthropic_base_url: Option<String>,
    /// Context window: the window of models the registry does not know and no route names, and a
    /// cap on every other model's.
    #[arg(long)]
    window: Option<usize>,
    /// Where session logs live: `sqlite:PATH`, `postgres://USER@HOST:PORT/DB` or `memory`
    /// (default: the config's `storage:`, else `$XDG_STATE_HOME/compact/sessions.db`, that is
    /// `~/.local/state/compact/sessions.db`).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Compaction strategy (default tiered).
    #[arg(long)]
    strategy: Option<String>,
    /// Configuration file (YAML; `proxy:` holds the proxy's settings).
    #[arg(long)]
    config: Option<String>,
    /// Do not offer the model the `compact_recall` tool (in-band recall of what compaction
    /// replaced; same as `proxy.recall: off`).
    #[arg(long)]
    no_recall: bool,
    /// Requests worked on at once, `off` for no bound (default 128 per core, at most 512; or
    /// `proxy.max_in_flight`, or COMPACT_PROXY_MAX_IN_FLIGHT). Health, metrics and admin requests
    /// are never counted.
    #[arg(long, value_name = "N|off")]
    max_in_flight: Option<String>,
    /// Requests that may wait for a slot; past them a request gets 503 with Retry-After at once
    /// (default a quarter of --max-in-flight; 0: none waits).
    #[arg(long, value_name = "N")]
    max_queue: Option<usize>,
    /// Longest wait for a slot before the request gets 503 with Retry-After (default 1000).
    #[arg(long, value_name = "MS")]
    queue_timeout_ms: Option<u64>,
}

/// Runs the proxy until SIGINT or SIGTERM, then drains in-flight requests.
pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    let flags = Overrides {
        max_context_tokens: args.window,
        strategy: args.strategy.clone(),
        proxy_listen: args.listen.clone(),
        proxy_openai_base_url: args.openai_base_url.clone(),
        proxy_anthropic_base_url: args.anthropic_base_url.clone(),
        proxy_max_in_flight: args.max_in_flight.clone(),
        proxy_max_queue: args.max_queue,
        proxy_queue_timeout_ms: args.queue_timeout_ms,
        ..Overrides::default()
    };
    let config = Config::load(args.config.as_deref().map(Path::new), &flags)
        .map_err(|e| BadInput(e.to_string()))?;
    let token_env = config
        .proxy()
        .admin_token_env
        .clone()
        .unwrap_or_else(|| DEFAULT_ADMIN_TOKEN_ENV.to_owned());
    let admin_token = std::env::var(&token_env).ok();
    let mut proxy_config = ProxyConfig::from_config(&config, admin_token);
    if args.no_recall {
        proxy_config.recall.enabled = false;
    }
    let source = match args.store.as_deref() {
        Some(url) => StoreSource::Url {
            url,
            create: true,
            allow_memory: true,
        },
        // Nothing configured: a SQLite file in the user's state directory, so that a
        // long-running proxy keeps its logs on disk and across restarts.
        None => StoreSource::Configured(Fallback::UserState),
    };
    crate::engine::refuse_unused(config.summarizer())?;
    let parts = Parts::open(&config, source, &Env::process()).map_err(|e| {
        if e.is_bad_input() {
            anyhow::Error::from(BadInput(e.to_string()))
        } else {
            anyhow::Error::from(e)
        }
    })?;
    let mut session = parts.session;
    // The project of `memory:` when the file names none: the directory the proxy runs in.
    if let Ok(dir) = std::env::current_dir().and_then(std::fs::canonicalize) {
        session = session.with_default_project(&dir.to_string_lossy());
    }
    proxy_config.session = session;
    // The counter's vocabulary (o200k_base: tens of milliseconds to load) is loaded now, at
    // start-up, not by the first request.
    let _ = proxy_config.session.counter.count_text("start");
    route_backends(&config, &mut proxy_config, Some(&parts.client))?;
    proxy_config.kept_outputs = kept_outputs();
    // The one outbound client of the upstream calls and every part: `network:` over this
    // process's proxy and CA variables (HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE...), read once.
    proxy_config.client = Some(parts.client.clone());
    let store = parts.store;
    // SQLite and memory stores do their I/O on the calling thread, PostgreSQL's client on a
    // runtime of its own: only the former may run on the proxy's worker threads.
    let storage = match args.store.as_deref() {
        Some(url) => StorageSettings::parse_url(url).ok(),
        None => config.session().storage.clone(),
    };
    proxy_config.store_on_worker = !matches!(storage, Some(StorageSettings::Postgres { .. }));
    proxy_config.archive = parts.archive;
    proxy_config.exports = parts.exports;
    // No transparent huge pages for the proxy: mimalloc hands a request's buffers fresh pages
    // from its arenas, and each first touch of one faulted in and zeroed 2 MB (a fifth of the
    // proxy's CPU per request; BENCHMARKS.md, "Proxy CPU per request", third round). Where the
    // kernel refuses, the proxy runs as before.
    #[cfg(target_os = "linux")]
    let _ = rustix::thread::disable_transparent_huge_pages(true);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let proxy = Proxy::new(proxy_config, store)?;
        let listener = proxy.bind().await?;
        proxy.serve(listener, shutdown_signal()).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// The outputs `compactctl run` keeps (its default store, the session `$COMPACT_RUN_SESSION` or
/// `run`), so that `compact_recall` answers their markers too; `None`, said on standard error,
/// when that store cannot be opened (recall of the proxy's own sessions is unaffected).
fn kept_outputs() -> Option<compact_proxy::KeptOutputs> {
    let session = std::env::var("COMPACT_RUN_SESSION")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| super::run::DEFAULT_RUN_SESSION.to_owned());
    let opened = super::run::open_run_store(None).and_then(|store| {
        Ok(compact_session::CompactManager::open(
            super::run::reader_config(),
            store,
        )?)
    });
    match opened {
        Ok(manager) => Some(compact_proxy::KeptOutputs {
            manager: Arc::new(manager),
            sessions: vec![session],
        }),
        Err(e) => {
            eprintln!(
                "compactctl serve: outputs kept by `compactctl run` cannot be recalled: {e:#}"
            );
            None
        }
    }
}

/// Builds the compaction backend of every model route whose `summarizer` is set. The
/// configuration's `summarizer:` section lends its settings (model, base URL, key variable) to a
/// route of the same kind and its template and cache setting to any; `anthropic-compaction`
/// compacts with the route's own model at the route's upstream (else the Anthropic upstream),
/// since it is that model's conversation the provider compacts.
pub(crate) fn route_backends(
    config: &Config,
    proxy: &mut ProxyConfig,
    client: Option<&compact_net::Client>,
) -> anyhow::Result<()> {
    let anthropic = proxy.anthropic.base_url.clone();
    for (route, settings) in proxy.models.iter_mut().zip(&config.proxy().models) {
        let Some(kind) = settings.summarizer else {
            continue;
        };
        let upstream = route.base_url.clone().unwrap_or_else(|| anthropic.clone());
        let s = compact_wiring::route_summarizer_settings(
            config.summarizer(),
            kind,
            &route.name,
            &upstream,
        );
        let built = crate::engine::summarizer_with(&s, client).with_context(|| {
            format!(
                "proxy.models `{}`: summarizer {}",
                route.name,
                kind.as_str()
            )
        })?;
        let name = format!(
            "{}:{}@{}",
            kind.as_str(),
            s.model.as_deref().unwrap_or(""),
            s.base_url.as_deref().unwrap_or("")
        );
        route.backend = Some(Backend::new(name, built));
    }
    Ok(())
}

/// Completes on SIGTERM or SIGINT (Ctrl-C). The handlers are installed when this is called, not when
/// the future is first polled: a server says it listens only after, so a signal that comes right
/// after that line is a shutdown (drained, exit 0), never the default action (killed by the signal).
pub(crate) fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, interrupt) {
                (Some(mut term), Some(mut interrupt)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = interrupt.recv() => {}
                    }
                }
                (Some(mut term), None) => {
                    term.recv().await;
                }
                (None, Some(mut interrupt)) => {
                    interrupt.recv().await;
                }
                (None, None) => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    {
        async {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
