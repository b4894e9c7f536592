//! The errors of agent integrations, one enum callers can branch on.

use std::path::PathBuf;

/// What went wrong in a hook, an install or the MCP server's start-up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentsError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is larger than the integration reads.
    #[error("{path}: {bytes} bytes, more than the {limit} read")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The hook input on standard input is not what the agent documents.
    #[error("hook input: {0}")]
    HookInput(String),
    /// The transcript could not be imported.
    #[error("transcript: {0}")]
    Import(#[from] compact_formats::import::ImportError),
    /// A settings file is not valid JSON or TOML, or has an unexpected shape.
    #[error("{path}: {reason}")]
    Settings {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key or the line.
        reason: String,
    },
    /// `compactctl run` could not run the command or read its output.
    #[error("run: {0}")]
    Run(String),
    /// The MCP server was asked to listen on an address that is not loopback without allowing it.
    #[error(
        "refusing to listen on {addr}: not a loopback address, and the MCP server gives out the \
         session's whole history to whoever connects (allow it explicitly: `--allow-remote`, with \
         a `--token`)"
    )]
    NotLoopback {
        /// The address.
        addr: std::net::SocketAddr,
    },
    /// The MCP server could not listen on its address.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// An option of the HTTP server is unusable.
    #[error("MCP over HTTP: {0}")]
    HttpOption(String),
    /// More than one of the agent's transcripts could be the session meant.
    #[error(
        "{} transcripts of {agent} for {cwd} were written within {window_secs} s of each other, so \
         the latest is ambiguous:\n{}\npass the one meant: --transcript PATH, or --session ID \
         with --latest",
        candidates.len(),
        candidates.iter().map(|p| format!("  {}", p.display())).collect::<Vec<_>>().join("\n")
    )]
    AmbiguousLatest {
        /// The agent's name.
        agent: String,
        /// The directory the agent runs in.
        cwd: PathBuf,
        /// The transcripts, newest first.
        candidates: Vec<PathBuf>,
        /// How close in time counts as equally recent, in seconds.
        window_secs: u64,
    },
    /// A file under the user's home is needed and `HOME` is not set.
    #[error("HOME is not set: {0}")]
    NoHome(&'static str),
    /// The session store could not be read.
    #[error("session store: {0}")]
    Session(#[from] compact_session::SessionError),
}

impl AgentsError {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> AgentsError {
        AgentsError::Io {
            path: path.into(),
            source,
        }
    }
}
