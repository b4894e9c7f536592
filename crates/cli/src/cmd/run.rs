//! `compactctl run [--budget N] -- CMD [ARGS...]`: runs a command as the agent would have, with the
//! same exit code, standard input passed through, signals forwarded, and its output cut to a token
//! budget for the agent to read; a cut output is kept whole in the session store under the id its
//! marker names (`compactctl recall ID`). See `compact_agents::run`.

use crate::cmd::hook::state_base;
use crate::exit::BadInput;
use anyhow::Context;
use clap::Args;
use compact_agents::run::{command_meta, exit_code, finish, keep, spawn_and_stream};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_core::truncate::{DEFAULT_SHELL_BUDGET, MAX_SHELL_BUDGET, MIN_SHELL_BUDGET};
use compact_session::{CompactManager, SessionConfig, SqliteStore, Store};
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// The session the outputs are kept in when none is named.
pub const DEFAULT_RUN_SESSION: &str = "run";

/// Arguments of `compactctl run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Most tokens (`o200k_base`) the agent reads of the output, both streams together
    /// (100 to 1000000).
    #[arg(long, default_value_t = DEFAULT_SHELL_BUDGET)]
    budget: usize,
    /// The session of the store that keeps cut outputs (default: `$COMPACT_RUN_SESSION`, else
    /// `run`).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The SQLite file that keeps cut outputs (default: `compact/sessions.db` under
    /// `$XDG_STATE_HOME`, else `~/.local/state`).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// The store `run` keeps outputs in by default.
pub fn default_store() -> PathBuf {
    state_base().join("sessions.db")
}

/// Runs the command; exits with its exit code.
pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    if !(MIN_SHELL_BUDGET..=MAX_SHELL_BUDGET).contains(&args.budget) {
        return Err(BadInput(format!(
            "--budget {}: expected {MIN_SHELL_BUDGET} to {MAX_SHELL_BUDGET} tokens",
            args.budget
        ))
        .into());
    }
    let counter = TokenCounter::new(Encoding::O200kBase);
    let ran = spawn_and_stream(
        &args.command,
        args.budget,
        &counter,
        std::io::stdout(),
        std::io::stderr(),
        forward_signals,
    )?;
    let meta = command_meta(&args.command, std::env::current_dir().ok());
    let (out, err) = finish(&ran, args.budget, &counter, &meta);
    let originals: Vec<_> = [&out, &err]
        .iter()
        .filter_map(|f| f.original.clone())
        .collect();
    let kept = originals.is_empty() || {
        match keep_originals(args, originals, &ran) {
            Ok(()) => true,
            Err(e) => {
                eprintln!(
                    "compactctl run: the full output could not be kept ({e:#}); printed whole"
                );
                false
            }
        }
    };
    let rest = |f: &compact_agents::run::Finished, captured: &compact_agents::run::Captured| {
        if kept {
            f.rest.clone()
        } else {
            captured.bytes[captured.printed..].to_vec()
        }
    };
    let mut o = std::io::stdout().lock();
    o.write_all(&rest(&out, &ran.stdout))
        .and_then(|()| o.flush())
        .context("writing standard output")?;
    let mut e = std::io::stderr().lock();
    e.write_all(&rest(&err, &ran.stderr))
        .and_then(|()| e.flush())
        .context("writing standard error")?;
    let code = exit_code(&ran.status);
    Ok(ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)))
}

fn keep_originals(
    args: &RunArgs,
    originals: Vec<compact_core::model::Item>,
    ran: &compact_agents::run::Ran,
) -> anyhow::Result<()> {
    let session = match &args.session {
        Some(s) => s.clone(),
        None => std::env::var("COMPACT_RUN_SESSION")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| DEFAULT_RUN_SESSION.to_owned()),
    };
    let manager = CompactManager::open(reader_config(), open_run_store(args.store.clone())?)?;
    keep(&manager, &session, originals, ran)?;
    Ok(())
}

/// The configuration of a manager that only keeps and recalls (its policy never compacts).
pub fn reader_config() -> SessionConfig {
    SessionConfig::new(Policy::default(), TokenCounter::new(Encoding::O200kBase))
}

/// Opens (creating it when missing) the SQLite store of `run`.
pub fn open_run_store(path: Option<PathBuf>) -> anyhow::Result<Arc<dyn Store>> {
    let path = path.unwrap_or_else(default_store);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let store = SqliteStore::open(&path)
        .with_context(|| format!("opening the store {}", path.display()))?;
    Ok(Arc::new(store))
}

/// Forwards SIGINT, SIGTERM, SIGHUP and SIGQUIT to the command (`pid`) from a thread of its own;
/// this process then waits for the command to end and prints what the agent reads.
#[cfg(unix)]
fn forward_signals(pid: u32) {
    use rustix::process::{kill_process, Pid, Signal};
    use tokio::signal::unix::{signal, SignalKind};
    let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let kinds = [
        (SignalKind::interrupt(), Signal::INT),
        (SignalKind::terminate(), Signal::TERM),
        (SignalKind::hangup(), Signal::HUP),
        (SignalKind::quit(), Signal::QUIT),
    ];
    let mut streams = Vec::new();
    for (kind, sig) in kinds {
        // Registered before this function returns, so no signal arriving after spawn is lost.
        let registered = runtime.block_on(async { signal(kind) });
        if let Ok(stream) = registered {
            streams.push((stream, sig));
        }
    }
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let mut tasks = Vec::new();
            for (mut stream, sig) in streams {
                tasks.push(tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        let _ = kill_process(pid, sig);
                    }
                }));
            }
            for task in tasks {
                let _ = task.await;
            }
        });
    });
}

#[cfg(not(unix))]
fn forward_signals(_pid: u32) {}
