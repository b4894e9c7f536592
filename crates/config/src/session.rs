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

impl StorageSettings {
    /// Reads a store URL, as `--store` and `COMPACT_*` take one: `memory`, `sqlite:PATH` (or
    /// `sqlite://PATH`), `postgres://...` (or `postgresql://...`). The error names what was
    /// expected; it repeats a PostgreSQL URL by its scheme only (the URL may carry a password).
    pub fn parse_url(url: &str) -> Result<StorageSettings, String> {
        if url == "memory" || url == "memory:" {
            return Ok(StorageSettings::Memory);
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StorageSettings::Postgres {
                url: url.to_owned(),
            });
        }
        if let Some(path) = url.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(format!("`{url}`: no file after `sqlite:`"));
            }
            return Ok(StorageSettings::Sqlite {
                path: PathBuf::from(path),
            });
        }
        Err(format!(
            "`{url}`: expected sqlite:PATH, postgres://USER@HOST:PORT/DB or memory"
        ))
    }

    /// The store as a user may be shown it: a PostgreSQL URL by its scheme only.
    pub fn describe(&self) -> String {
        match self {
            StorageSettings::Memory => "memory".to_owned(),
            StorageSettings::Sqlite { path } => format!("sqlite:{}", path.display()),
            StorageSettings::Postgres { .. } => "postgres://…".to_owned(),
        }
    }
}

#[cfg(test)]
mod storage_url_tests {
    #![allow(clippy::unwrap_used)]
    use super::StorageSettings;
    use std::path::PathBuf;

    #[test]
    fn store_urls_read_one_way() {
        assert_eq!(
            StorageSettings::parse_url("memory"),
            Ok(StorageSettings::Memory)
        );
        for url in ["sqlite:/tmp/s.db", "sqlite:///tmp/s.db"] {
            assert_eq!(
                StorageSettings::parse_url(url),
                Ok(StorageSettings::Sqlite {
                    path: PathBuf::from("/tmp/s.db")
                })
            );
        }
        let pg = StorageSettings::parse_url("postgres://u:secret@h/db").unwrap();
        assert_eq!(pg.describe(), "postgres://…");
        assert!(!format!("{:?}", pg.describe()).contains("secret"));
        assert!(StorageSettings::parse_url("sqlite:").is_err());
        let bad = StorageSettings::parse_url("mysql://u:p@h/db");
        assert!(
            bad.as_ref()
                .is_err_and(|e| e.contains("expected sqlite:PATH")),
            "{bad:?}"
        );
    }
}

/// Where compactions' transcripts, checkpoints and events are archived (`storage.archive:`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArchiveSettings {
    /// A directory (`kind: fs`, `path: ...`).
    Fs {
        /// The directory.
        path: PathBuf,
    },
    /// An S3-compatible bucket (`kind: s3`). The keys are read from the environment variables
    /// named here when the archive is opened; they are never part of the configuration.
    S3 {
        /// Endpoint URL (`https://s3.eu-west-1.amazonaws.com`, or a compatible server).
        endpoint: String,
        /// Bucket.
        bucket: String,
        /// Region (default `us-east-1`).
        region: String,
        /// Key prefix inside the bucket (default empty).
        prefix: String,
        /// Path-style addressing (default true: what compatible servers expect).
        path_style: bool,
        /// Variable holding the access key id (default `AWS_ACCESS_KEY_ID`).
        access_key_env: String,
        /// Variable holding the secret key (default `AWS_SECRET_ACCESS_KEY`).
        secret_key_env: String,
    },
}

/// Archive retention (`storage.archive.max_age_days`, `max_bytes`): what `compactctl sessions gc`
/// deletes beyond (oldest first).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ArchiveRetention {
    /// Objects older than this many days go.
    pub max_age_days: Option<u64>,
    /// Beyond this many bytes in all, the oldest objects go.
    pub max_bytes: Option<u64>,
}

/// The session runtime's settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionSettings {
    /// `policy.overflow_max_retries` (at most [`MAX_OVERFLOW_MAX_RETRIES`]).
    pub overflow_max_retries: Option<u32>,
    /// `policy.idle_delay_ms`: idle-time compaction after this many quiet milliseconds (`None`
    /// or 0: off).
    pub idle_delay_ms: Option<u64>,
    /// `policy.manual_trigger_phrases` (an empty list turns detection off).
    pub manual_trigger_phrases: Option<Vec<String>>,
    /// `storage:`.
    pub storage: Option<StorageSettings>,
    /// `redaction:`.
    pub redaction: RedactionSettings,
    /// `storage.archive:`.
    pub archive: Option<ArchiveSettings>,
    /// `storage.archive.max_age_days` and `max_bytes`.
    pub archive_retention: ArchiveRetention,
    /// `telemetry:` (no exporter when absent).
    pub telemetry: Option<TelemetrySettings>,
    /// `memory:` (no memory when absent or `enabled: false`).
    pub memory: Option<MemorySettings>,
}

/// Structured fact memory (`memory:`): facts injected after the system prompt within a budget,
/// kept across compactions, durable ones shared by the sessions of a project. Unset values are the
/// runtime's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySettings {
    /// `memory.budget_tokens`: the memory block's size at most.
    pub budget_tokens: Option<usize>,
    /// `memory.caps`: trusted facts held per kind (`decision: 24`, ...), by kind name.
    pub caps: std::collections::BTreeMap<String, usize>,
    /// `memory.min_confidence`: candidates below it are rejected (0..=1).
    pub min_confidence: Option<f64>,
    /// `memory.project`: the project's id; unset, the host names the project (the CLI uses the
    /// canonical working directory).
    pub project: Option<String>,
    /// `memory.project_store` (default true): durable facts are promoted to the project's memory
    /// and the project's facts are loaded into its new sessions.
    pub project_store: bool,
    /// `memory.gate` (default false): the pre-tool gate rewrites known-folder probes of shell tool
    /// calls to remembered absolute paths (read by `compactctl hook ... --config FILE`: Claude
    /// Code's `PreToolUse` hook).
    pub gate: bool,
}

/// The fact kinds `memory.caps` may name.
pub const MEMORY_KINDS: [&str; 6] = [
    "constraint",
    "preference",
    "decision",
    "dependency",
    "file_state",
    "error",
];

/// Where the session runtime exports its events besides the log (`telemetry:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelemetrySettings {
    /// The exporter.
    pub exporter: ExporterSettings,
    /// Events held before new ones are dropped (`telemetry.queue`).
    pub queue: Option<usize>,
}

/// `telemetry.exporter`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExporterSettings {
    /// A human-readable line per event on standard error.
    Console,
    /// One JSON object per line in `path`, rotated at `max_bytes`, `keep` rotated files kept.
    Jsonl {
        /// The file.
        path: String,
        /// Rotation size.
        max_bytes: Option<u64>,
        /// Rotated files kept.
        keep: Option<usize>,
    },
    /// OpenTelemetry: spans and metrics sent to an OTLP collector.
    Otlp(OtlpSettings),
}

/// How OTLP is carried (`telemetry.protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// Protobuf over HTTP (`/v1/traces`, `/v1/metrics`; collectors listen on port 4318).
    #[default]
    Http,
    /// gRPC (port 4317).
    Grpc,
}

/// `telemetry: {exporter: otlp, ...}`. Its `Debug` shows header names only: values are secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OtlpSettings {
    /// The collector's base URL (`http://127.0.0.1:4318`); `None` leaves it to the exporter's
    /// environment (`OTEL_EXPORTER_OTLP_ENDPOINT`, else the OTLP default on localhost).
    pub endpoint: Option<String>,
    /// The transport.
    pub protocol: OtlpProtocol,
    /// Headers sent with every request (API keys: never logged).
    pub headers: std::collections::BTreeMap<String, String>,
    /// The `service.name` resource attribute (`compact` when unset).
    pub service_name: Option<String>,
    /// How long one export may take, retries included, in milliseconds.
    pub timeout_ms: Option<u64>,
}

impl std::fmt::Debug for OtlpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpSettings")
            .field("endpoint", &self.endpoint)
            .field("protocol", &self.protocol)
            .field(
                "headers",
                &self
                    .headers
                    .keys()
                    .map(|k| format!("{k}: <redacted>"))
                    .collect::<Vec<_>>(),
            )
            .field("service_name", &self.service_name)
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// Secret redaction in the session runtime (`redaction:`): on by default with the built-in
/// detectors; `patterns` add detectors of the user's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactionSettings {
    /// `redaction.enabled` (default true).
    pub enabled: bool,
    /// `redaction.summarizer` (default false): also redact what is sent to the summariser (a
    /// model summariser then never sees a secret; its summary names the placeholder).
    pub summarizer: bool,
    /// `redaction.patterns`: (name, regular expression) pairs; the first capture group, when the
    /// expression has one, is the secret.
    pub patterns: Vec<(String, String)>,
}

impl Default for RedactionSettings {
    fn default() -> Self {
        RedactionSettings {
            enabled: true,
            summarizer: false,
            patterns: Vec::new(),
        }
    }
}
