//! The session runtime's settings ([`SessionSettings`]): overflow recoveries per turn, the manual
//! trigger phrases and where session logs are stored, as plain data for `compact-session` (which
//! owns the defaults: an unset value here means "the runtime's default").

use std::path::PathBuf;

/// Most overflow recoveries per turn a configuration may ask for: each one is a compaction and
/// another provider call, and seed 004 stops at three; beyond ten, recovery is a loop in disguise.
pub const MAX_OVERFLOW_MAX_RETRIES: u32 = 10;

/// Where the session runtime keeps session logs (`storage:`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StorageSettings {
    /// In memory, lost with the process (`kind: memory`).
    Memory,
    /// One SQLite file (`kind: sqlite`, `path: ...`).
    Sqlite {
        /// The database file.
        path: PathBuf,
    },
    /// A PostgreSQL database shared by several processes (`kind: postgres`, `url: postgres://...`).
    Postgres {
        /// The connection URL (it may carry a password: never print it).
        url: String,
    },
}

/// The session runtime's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionSettings {
    /// `policy.overflow_max_retries` (at most [`MAX_OVERFLOW_MAX_RETRIES`]).
    pub overflow_max_retries: Option<u32>,
    /// `policy.manual_trigger_phrases` (an empty list turns detection off).
    pub manual_trigger_phrases: Option<Vec<String>>,
    /// `storage:`.
    pub storage: Option<StorageSettings>,
    /// `redaction:`.
    pub redaction: RedactionSettings,
}

/// Secret redaction in the session runtime (`redaction:`): on by default with the built-in
/// detectors; `patterns` add detectors of the user's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactionSettings {
    /// `redaction.enabled` (default true).
    pub enabled: bool,
    /// `redaction.patterns`: (name, regular expression) pairs; the first capture group, when the
    /// expression has one, is the secret.
    pub patterns: Vec<(String, String)>,
}

impl Default for RedactionSettings {
    fn default() -> Self {
        RedactionSettings {
            enabled: true,
            patterns: Vec::new(),
        }
    }
}
