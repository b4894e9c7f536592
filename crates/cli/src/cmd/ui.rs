//! `compactctl ui`: the web view of a session store (`compact-ui`), served on 127.0.0.1. Prints the
//! address it listens on (`listening on http://127.0.0.1:PORT/`) on standard output, then serves
//! until SIGINT or SIGTERM. Sessions can be compacted from their page after review (the plan and
//! its checkpoint, edited in the page), with the configuration of `--config` and the window each
//! session last ran at; `--read-only` serves the pages alone.

use crate::cmd::serve::{route_backends, shutdown_signal};
use crate::cmd::sessions::open_store;
use crate::exit::BadInput;
use crate::output::outln;
use anyhow::Context;
use clap::Args;
use compact_proxy::managers::Managers;
use compact_proxy::ProxyConfig;
use compact_session::{SessionConfig, Store};
use compact_ui::{Review, Ui};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

/// The port when none is given.
const DEFAULT_PORT: u16 = 8788;

/// Arguments of `compactctl ui`.
#[derive(Debug, Args)]
pub struct UiArgs {
    /// The store: `sqlite:PATH` (the file must exist) or `postgres://USER@HOST:PORT/DB`.
    #[arg(long, value_name = "URL")]
    store: Option<String>,
    /// Port on 127.0.0.1 (0: any free port; the address is printed).
    #[arg(long, default_value_t = DEFAULT_PORT)]
    port: u16,
    /// Address to listen on instead of 127.0.0.1 (the pages show whole transcripts: only for a
    /// trusted network).
    #[arg(long, value_name = "IP")]
    bind: Option<IpAddr>,
    /// Configuration file (YAML or TOML) for reviewed compactions (strategy, summariser, policy).
    #[arg(long, value_name = "FILE")]
    config: Option<String>,
    /// Serve the pages only: no reviewed compaction from the web view.
    #[arg(long)]
    read_only: bool,
}

/// The review desk: per session, the manager for the window it last ran at and the backend of
/// the model it last named (the proxy's [`Managers`], one per window and backend over the store),
/// with the configuration resolved once: its summariser, and `proxy.models` routes' own, as
/// `compactctl serve` builds them.
fn review_desk(store: &Arc<dyn Store>, config: Option<&str>) -> anyhow::Result<Review> {
    let config =
        compact_config::Config::load(config.map(Path::new), &compact_config::Overrides::default())
            .map_err(|e| BadInput(e.to_string()))?;
    // The one outbound client of the summarisers (`network:` over the process's proxy variables).
    let client = compact_wiring::client(&config, &compact_wiring::Env::process())
        .map_err(|e| BadInput(e.to_string()))?;
    let session = SessionConfig::from_config(&config).with_summarizer(
        crate::engine::summarizer_with(config.summarizer(), Some(&client))?,
    );
    let mut routes = ProxyConfig::from_config(&config, None);
    route_backends(&config, &mut routes, Some(&client))?;
    let managers = Managers::new(session, Arc::clone(store)).with_backends(
        routes
            .models
            .into_iter()
            .filter_map(|m| m.backend.map(|b| (m.name, b))),
    );
    Ok(Review::new(move |session: &str| {
        managers.for_session(session)
    }))
}

/// Serves the pages until SIGINT or SIGTERM.
pub fn run(args: &UiArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(args.store.as_deref())?;
    let mut ui = Ui::new("");
    if !args.read_only {
        ui = ui.with_review(Arc::new(review_desk(&store, args.config.as_deref())?));
    }
    let addr = SocketAddr::new(
        args.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        args.port,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| BadInput(format!("cannot listen on {addr}: {e}")))?;
        let local = listener.local_addr()?;
        // Installed before the line that says the server listens.
        let shutdown = shutdown_signal();
        outln!("listening on http://{local}/");
        compact_ui::serve(listener, ui, store, shutdown).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
