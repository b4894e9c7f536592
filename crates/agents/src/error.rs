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
