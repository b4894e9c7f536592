//! `compactctl ui`: the web view of a session store (`compact-ui`), served on 127.0.0.1. Prints the
//! address it listens on (`listening on http://127.0.0.1:PORT/`) on standard output, then serves
//! until SIGINT or SIGTERM.

use crate::cmd::serve::shutdown_signal;
use crate::cmd::sessions::open_store;
use crate::exit::BadInput;
use crate::output::outln;
use anyhow::Context;
use clap::Args;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;

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
}

/// Serves the pages until SIGINT or SIGTERM.
pub fn run(args: &UiArgs) -> anyhow::Result<ExitCode> {
    let store = open_store(args.store.as_deref())?;
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
        outln!("listening on http://{local}/");
        compact_ui::serve(listener, store, shutdown_signal()).await?;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
}
