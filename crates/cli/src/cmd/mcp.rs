//! `compactctl mcp`: the MCP server over stdio (`recall`, `search_history`, `context_status`,
//! `checkpoint`) on one session: a transcript, the agent's latest session for a directory, or a
//! session of Compact's store.

use crate::cmd::agent::AgentName;
use crate::cmd::sessions::open_store;
use crate::exit::BadInput;
use anyhow::Context;
use clap::Args;
use compact_agents::mcp::server::serve_stdio_with_runs;
use compact_agents::mcp::source::Source;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `compactctl mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// A transcript file (Claude Code session JSONL, Codex rollout, or any importable format).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["latest", "store"])]
    transcript: Option<PathBuf>,
    /// The agent's most recent session for `--cwd` (followed as it changes): claude-code reads
    /// `~/.claude/projects/<dir>/`, codex `~/.codex/sessions/`.
    #[arg(long, value_name = "AGENT", conflicts_with = "store")]
    latest: Option<AgentName>,
    /// The directory the agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "latest")]
    cwd: Option<PathBuf>,
    /// Compact's session store (`sqlite:PATH`), with `--session`.
    #[arg(long, value_name = "URL", requires = "session")]
    store: Option<String>,
    /// The session id in the store (see `compactctl sessions list`).
    #[arg(long, value_name = "ID", requires = "store")]
    session: Option<String>,
    /// The store of `compactctl run`, whose kept outputs `recall` also returns (default: its
    /// default, `compact/sessions.db` under the state directory, when it exists).
    #[arg(long, value_name = "PATH")]
    runs: Option<PathBuf>,
}

/// Serves until the client disconnects.
pub fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    let source = if let Some(path) = &args.transcript {
        if !path.is_file() {
            return Err(BadInput(format!("--transcript {}: no such file", path.display())).into());
        }
        Source::Transcript(path.clone())
    } else if let Some(agent) = args.latest {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                BadInput("HOME is not set: cannot find the agent's sessions".to_owned())
            })?;
        let cwd = match &args.cwd {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().context("the current directory")?,
        };
        Source::Latest {
            agent: agent.agent(),
            home,
            cwd,
        }
    } else if let (Some(url), Some(session)) = (&args.store, &args.session) {
        Source::Store {
            store: open_store(Some(url))?,
            session: session.clone(),
        }
    } else {
        return Err(BadInput(
            "name the session: --transcript PATH, --latest claude-code|codex, or --store URL --session ID"
                .to_owned(),
        )
        .into());
    };
    // `recall` also finds the outputs `compactctl run` kept (when its store exists).
    let runs_path = args
        .runs
        .clone()
        .unwrap_or_else(crate::cmd::run::default_store);
    let runs = if runs_path.is_file() {
        Some(crate::cmd::run::open_run_store(Some(runs_path))?)
    } else {
        None
    };
    serve_stdio_with_runs(source, runs)?;
    Ok(ExitCode::SUCCESS)
}
