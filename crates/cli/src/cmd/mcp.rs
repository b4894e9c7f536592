//! `compactctl mcp`: the MCP server over stdio, or streamable HTTP with `--http ADDR` (`recall`, `search_history`, `context_status`,
//! `checkpoint`) on one session: a transcript, the agent's latest session for a directory, or a
//! session of Compact's store.

use crate::cmd::agent::AgentName;
use crate::cmd::sessions::open_store;
use crate::exit::BadInput;
use anyhow::Context;
use clap::Args;
use compact_agents::hook::Agent;
use compact_agents::mcp::http::{serve_http_with_runs, HttpOptions, DEFAULT_MAX_BODY_BYTES};
use compact_agents::mcp::server::serve_stdio_with_runs;
use compact_agents::mcp::source::{find_session, Source};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `compactctl mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// A transcript file (Claude Code session JSONL, Codex rollout, or any importable format).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["latest", "store", "session"])]
    transcript: Option<PathBuf>,
    /// The agent's most recent session for `--cwd` (followed as it changes): claude-code reads
    /// `~/.claude/projects/<dir>/`, codex `$CODEX_HOME/sessions/` (default `~/.codex/sessions/`);
    /// transcripts recording `--cwd` come first, and two written within seconds of each other are
    /// an error naming both (pass `--session ID` or `--transcript PATH`).
    #[arg(long, value_name = "AGENT", conflicts_with = "store")]
    latest: Option<AgentName>,
    /// The directory the agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "latest")]
    cwd: Option<PathBuf>,
    /// Compact's session store (`sqlite:PATH`), with `--session`.
    #[arg(long, value_name = "URL", requires = "session")]
    store: Option<String>,
    /// The session id: in the store (see `compactctl sessions list`), or with `--latest` the
    /// agent's session of that id (a Claude Code session id, a Codex rollout id).
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// The store of `compactctl run`, whose kept outputs `recall` also returns (default: its
    /// default, `compact/sessions.db` under the state directory, when it exists).
    #[arg(long, value_name = "PATH")]
    runs: Option<PathBuf>,
    /// Serve over MCP's streamable HTTP transport at `http://ADDR/mcp` instead of stdio (e.g.
    /// `127.0.0.1:8765`; port 0 picks a free one; the URL is printed on standard error).
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// With `--http`: allow an address that is not loopback (the server gives out the session's
    /// whole history: use `--token` too).
    #[arg(long, requires = "http")]
    allow_remote: bool,
    /// With `--http`: the bearer token every request must carry (`Authorization: Bearer TOKEN`).
    /// Default: the environment variable COMPACT_MCP_TOKEN, when set.
    #[arg(long, value_name = "TOKEN", requires = "http")]
    token: Option<String>,
    /// With `--http`: the largest request body in bytes (larger: 413).
    #[arg(long, value_name = "BYTES", requires = "http", default_value_t = DEFAULT_MAX_BODY_BYTES)]
    max_body_bytes: usize,
}

/// The environment variable holding the HTTP server's bearer token (kept out of `ps`).
const TOKEN_ENV: &str = "COMPACT_MCP_TOKEN";

/// Serves until the client disconnects.
pub fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    let source = if let Some(path) = &args.transcript {
        if !path.is_file() {
            return Err(BadInput(format!("--transcript {}: no such file", path.display())).into());
        }
        Source::Transcript(path.clone())
    } else if let (Some(agent), Some(id)) = (args.latest, &args.session) {
        let (home, cwd) = home_and_cwd(args, agent.agent())?;
        let path =
            find_session(agent.agent(), &home, &cwd, id).map_err(|e| BadInput(e.to_string()))?;
        Source::Transcript(path)
    } else if let Some(agent) = args.latest {
        let (home, cwd) = home_and_cwd(args, agent.agent())?;
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
    let Some(addr) = args.http else {
        serve_stdio_with_runs(source, runs)?;
        return Ok(ExitCode::SUCCESS);
    };
    let token = args.token.clone().or_else(|| {
        std::env::var(TOKEN_ENV)
            .ok()
            .filter(|t| !t.trim().is_empty())
    });
    let options = HttpOptions {
        addr,
        allow_remote: args.allow_remote,
        token,
        max_body_bytes: args.max_body_bytes,
    };
    options.check().map_err(|e| BadInput(e.to_string()))?;
    if options.allow_remote && options.token.is_none() && !addr.ip().is_loopback() {
        eprintln!(
            "compactctl mcp: warning: listening on {addr} without a token: anyone who can reach it reads this session"
        );
    }
    serve_http_with_runs(
        source,
        runs,
        options,
        |url| eprintln!("compactctl mcp: serving MCP over streamable HTTP at {url}"),
        // Called inside the server's runtime (the handlers need its reactor).
        async { crate::cmd::serve::shutdown_signal().await },
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Where the agent keeps its sessions (Claude Code: the user's home; Codex: Codex's home,
/// `$CODEX_HOME` else `~/.codex`) and the directory the agent runs in.
fn home_and_cwd(args: &McpArgs, agent: Agent) -> anyhow::Result<(PathBuf, PathBuf)> {
    let home = match agent {
        Agent::Codex => crate::cmd::install::codex_home()?,
        Agent::ClaudeCode => std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| {
                BadInput("HOME is not set: cannot find the agent's sessions".to_owned())
            })?,
    };
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("the current directory")?,
    };
    Ok((home, cwd))
}
