//! The file's rules that its types cannot state (a range, a pair of keys that go together, a URL,
//! a pattern that compiles), one function per section, in the order the sections are checked.
//! Each error points at the offending key's line and column, so that a user fixes the file, not
//! a guess of where a value came from.

use crate::error::ConfigError;
use crate::file::{FileConfig, FileStorageKind};
use crate::network::check_proxy;
use crate::session::{MAX_OVERFLOW_MAX_RETRIES, MEMORY_KINDS};

/// A file's name and text: where a rejected key is written, for the error's line and column.
#[derive(Clone, Copy)]
pub(crate) struct Source<'a> {
    /// The file name, as errors print it.
    pub(crate) name: &'a str,
    /// Its text.
    pub(crate) text: &'a str,
}

impl Source<'_> {
    /// An error at `key`: the first `key` after `section` when a section is given (the same key
    /// name appears in several sections), else the first `key` in the file.
    pub(crate) fn error(&self, section: Option<&str>, key: &str, message: String) -> ConfigError {
        let (line, column) = match section {
            Some(section) => key_position_in(self.text, section, key),
            None => key_position(self.text, key),
        };
        ConfigError::Parse {
            file: self.name.to_owned(),
            line,
            column,
            message,
        }
    }

    /// `Err` of [`Source::error`] inside `section`: the shape every check below returns.
    fn bad(&self, section: &str, key: &str, message: String) -> Result<(), ConfigError> {
        Err(self.error(Some(section), key, message))
    }
}

/// Every section's rules, in the file's documented order; the first broken rule is the error.
pub(crate) fn file(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    policy(src, parsed)?;
    redaction(src, parsed)?;
    network(src, parsed)?;
    memory(src, parsed)?;
    telemetry(src, parsed)?;
    archive(src, parsed)?;
    storage(src, parsed)
}

/// `policy:`: the retry bound the session runtime enforces, and no empty trigger phrase (an empty
/// phrase would match every message).
fn policy(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let policy = parsed.policy.as_ref();
    if let Some(n) = policy.and_then(|p| p.overflow_max_retries) {
        if n > MAX_OVERFLOW_MAX_RETRIES {
            return src.bad(
                "policy",
                "overflow_max_retries",
                format!("`overflow_max_retries` is {n}; at most {MAX_OVERFLOW_MAX_RETRIES} recoveries per turn are allowed"),
            );
        }
    }
    if let Some(phrases) = policy.and_then(|p| p.manual_trigger_phrases.as_ref()) {
        if phrases.iter().any(|p| p.trim().is_empty()) {
            return src.bad(
                "policy",
                "manual_trigger_phrases",
                "`manual_trigger_phrases` holds an empty phrase (an empty list turns detection off)".to_owned(),
            );
        }
    }
    Ok(())
}

/// `redaction:`: every pattern compiles and has a usable name (checked here, so that a bad one
/// stops the start rather than the first request).
fn redaction(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let Some(redaction) = &parsed.redaction else {
        return Ok(());
    };
    for p in &redaction.patterns {
        let (name, regex) = p.parts();
        if let Err(e) = compact_core::redact::check_pattern(name, regex) {
            let key = match e {
                compact_core::redact::RedactError::BadName(_) => "name",
                _ => "patterns",
            };
            return src.bad("redaction", key, e.to_string());
        }
    }
    Ok(())
}

/// `network:`: a proxy URL the outbound client can use, and no empty CA file name.
fn network(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let Some(n) = &parsed.network else {
        return Ok(());
    };
    if let Some(proxy) = &n.proxy {
        if let Err(why) = check_proxy(proxy) {
            return src.bad("network", "proxy", why);
        }
    }
    if n.ca_file.as_deref().is_some_and(|f| f.trim().is_empty()) {
        return src.bad(
            "network",
            "ca_file",
            "`network.ca_file` is empty".to_owned(),
        );
    }
    Ok(())
}

/// `memory:`: a budget above 0, a confidence that is a probability, caps of known fact kinds.
fn memory(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let Some(m) = &parsed.memory else {
        return Ok(());
    };
    let bad = |key: &str, message: String| src.bad("memory", key, message);
    if m.budget_tokens == Some(0) {
        return bad(
            "budget_tokens",
            "`memory.budget_tokens` must be above 0".to_owned(),
        );
    }
    if let Some(c) = m.min_confidence.filter(|c| !(0.0..=1.0).contains(c)) {
        return bad(
            "min_confidence",
            format!("`memory.min_confidence` is {c}; it must lie in 0..=1"),
        );
    }
    if let Some(kind) = m
        .caps
        .iter()
        .flatten()
        .map(|(k, _)| k)
        .find(|k| !MEMORY_KINDS.contains(&k.as_str()))
    {
        // The kind is itself the key, written under `caps:`.
        return src.bad(
            "caps",
            kind,
            format!(
                "`memory.caps.{kind}` is not a fact kind (one of {})",
                MEMORY_KINDS.join(", ")
            ),
        );
    }
    if m.project.as_deref().is_some_and(|p| p.trim().is_empty()) {
        return bad("project", "`memory.project` is empty".to_owned());
    }
    Ok(())
}

/// `telemetry:`: each exporter's keys only with that exporter (a key of another exporter would be
/// silently ignored), then the chosen exporter's own rules.
fn telemetry(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let Some(t) = &parsed.telemetry else {
        return Ok(());
    };
    let bad = |key: &str, message: String| src.bad("telemetry", key, message);
    let jsonl_keys = [
        ("path", t.path.is_some()),
        ("max_bytes", t.max_bytes.is_some()),
        ("keep", t.keep.is_some()),
    ];
    let otlp_keys = [
        ("endpoint", t.endpoint.is_some()),
        ("protocol", t.protocol.is_some()),
        ("headers", t.headers.is_some()),
        ("service_name", t.service_name.is_some()),
        ("timeout_ms", t.timeout_ms.is_some()),
    ];
    let first_set =
        |keys: &[(&'static str, bool)]| keys.iter().find_map(|(k, set)| set.then_some(*k));
    let exporter = t.exporter.as_deref();
    if exporter != Some("jsonl") {
        if let Some(key) = first_set(&jsonl_keys) {
            return bad(key, format!("`telemetry.{key}` is for `exporter: jsonl`"));
        }
    }
    if exporter != Some("otlp") {
        if let Some(key) = first_set(&otlp_keys) {
            return bad(key, format!("`telemetry.{key}` is for `exporter: otlp`"));
        }
    }
    match exporter {
        Some("jsonl") => {
            if t.path.as_deref().is_none_or(|p| p.trim().is_empty()) {
                return bad("exporter", "`exporter: jsonl` needs `path`".to_owned());
            }
        }
        Some("console" | "none") => {}
        Some("otlp") => otlp(src, t)?,
        Some("custom") => {
            return bad(
                "exporter",
                "a custom exporter is set in code (`CompactManager::with_exports`), not in a file"
                    .to_owned(),
            );
        }
        Some(other) => {
            return bad(
                "exporter",
                format!("exporter `{other}` is not one of console, jsonl, otlp, none"),
            );
        }
        None => return bad("exporter", "`telemetry` needs `exporter`".to_owned()),
    }
    if t.max_bytes == Some(0) {
        return bad(
            "max_bytes",
            "`telemetry.max_bytes` must be above 0".to_owned(),
        );
    }
    if t.queue == Some(0) {
        return bad("queue", "`telemetry.queue` must be above 0".to_owned());
    }
    Ok(())
}

/// `exporter: otlp`: an endpoint URL, a known protocol, headers a request can carry, a service
/// name and a timeout that are not empty.
fn otlp(src: Source<'_>, t: &crate::file::FileTelemetry) -> Result<(), ConfigError> {
    let bad = |key: &str, message: String| src.bad("telemetry", key, message);
    if let Some(endpoint) = &t.endpoint {
        if let Err(why) = check_url(endpoint) {
            return bad(
                "endpoint",
                format!("`telemetry.endpoint` must be a URL such as http://127.0.0.1:4318: {why}"),
            );
        }
    }
    match t.protocol.as_deref() {
        None | Some("http" | "http/protobuf" | "grpc") => {}
        Some(other) => {
            return bad(
                "protocol",
                format!("`telemetry.protocol` `{other}` is not one of http, grpc"),
            )
        }
    }
    for (name, value) in t.headers.iter().flatten() {
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        {
            return bad(
                "headers",
                format!("`telemetry.headers`: `{name}` is not a header name"),
            );
        }
        // The value is a secret: the message names the header, never the value.
        if value.bytes().any(|b| b.is_ascii_control() && b != b'\t') {
            return bad(
                "headers",
                format!("`telemetry.headers.{name}` holds a control character"),
            );
        }
    }
    if t.service_name
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        return bad(
            "service_name",
            "`telemetry.service_name` is empty".to_owned(),
        );
    }
    if t.timeout_ms == Some(0) {
        return bad(
            "timeout_ms",
            "`telemetry.timeout_ms` must be above 0".to_owned(),
        );
    }
    Ok(())
}

/// `storage.archive:`: a directory for `kind: fs`, an endpoint and a bucket for `kind: s3`, and
/// no key of the other kind.
fn archive(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let Some(a) = parsed.storage.as_ref().and_then(|s| s.archive.as_ref()) else {
        return Ok(());
    };
    let bad = |key: &str, message: String| src.bad("archive", key, message);
    match a.kind.as_deref() {
        Some("fs") | None => {
            if a.path.as_deref().is_none_or(|p| p.trim().is_empty()) {
                return bad(
                    "archive",
                    "`storage.archive` needs `path` (a directory), or `kind: s3`".to_owned(),
                );
            }
            if let Some(key) = [
                ("endpoint", a.endpoint.is_some()),
                ("bucket", a.bucket.is_some()),
            ]
            .iter()
            .find_map(|(k, set)| set.then_some(*k))
            {
                return bad(key, format!("`storage.archive.{key}` is for `kind: s3`"));
            }
        }
        Some("s3") => {
            let endpoint = a.endpoint.as_deref().unwrap_or("");
            if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                return bad(
                    if a.endpoint.is_some() {
                        "endpoint"
                    } else {
                        "kind"
                    },
                    "`kind: s3` needs `endpoint: https://...` and `bucket`".to_owned(),
                );
            }
            if a.bucket.as_deref().is_none_or(|b| b.trim().is_empty()) {
                return bad("kind", "`kind: s3` needs `bucket`".to_owned());
            }
            if a.path.is_some() {
                return bad(
                    "path",
                    "`storage.archive.path` is for `kind: fs`".to_owned(),
                );
            }
        }
        Some(other) => {
            return bad(
                "kind",
                format!("archive kind `{other}` is not one of fs, s3"),
            );
        }
    }
    Ok(())
}

/// `storage:`: each kind with its own key (`path` for SQLite, `url` for PostgreSQL, neither for
/// memory), so that a store is never opened somewhere the user did not mean.
fn storage(src: Source<'_>, parsed: &FileConfig) -> Result<(), ConfigError> {
    let Some(storage) = &parsed.storage else {
        return Ok(());
    };
    let bad = |key: &str, message: String| src.bad("storage", key, message);
    let postgres = storage.kind == Some(FileStorageKind::Postgres);
    if postgres && storage.path.is_some() {
        return bad(
            "path",
            "`storage.path` is for `kind: sqlite`; `kind: postgres` takes `url`".to_owned(),
        );
    }
    if !postgres && storage.url.is_some() {
        return bad("url", "`storage.url` is for `kind: postgres`".to_owned());
    }
    let url = storage.url.as_deref().unwrap_or("");
    if postgres && !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return bad(
            if storage.url.is_some() { "url" } else { "kind" },
            "`kind: postgres` needs `url: postgres://USER@HOST:PORT/DB`".to_owned(),
        );
    }
    match (storage.kind, &storage.path) {
        (Some(FileStorageKind::Postgres), _) => Ok(()),
        (Some(FileStorageKind::Memory), Some(_)) => bad(
            "path",
            "`storage.path` is for `kind: sqlite`; an in-memory store has no file".to_owned(),
        ),
        (Some(FileStorageKind::Sqlite) | None, None) => bad(
            "storage",
            "`storage` needs `path` (the SQLite file) or `kind: memory`".to_owned(),
        ),
        (_, Some(path)) if path.trim().is_empty() => {
            bad("path", "`storage.path` is empty".to_owned())
        }
        _ => Ok(()),
    }
}

/// Why `text` is not an `http://` or `https://` URL with a host.
fn check_url(text: &str) -> Result<(), String> {
    let rest = text
        .strip_prefix("http://")
        .or_else(|| text.strip_prefix("https://"))
        .ok_or_else(|| format!("{text:?} does not start with http:// or https://"))?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err(format!("{text:?} has no host"));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("{text:?} holds a space or a control character"));
    }
    if let Some((_, port)) = host.rsplit_once(':').filter(|_| !host.ends_with(']')) {
        if port.parse::<u16>().is_err() {
            return Err(format!("{text:?} has a bad port"));
        }
    }
    Ok(())
}

/// Like [`key_position`], but for the first `key` at or after the line where `section` is
/// written as a key (the position of `section` itself when `key` is the section).
fn key_position_in(text: &str, section: &str, key: &str) -> (usize, usize) {
    let (line, column) = key_position(text, section);
    if line == 0 || key == section {
        return (line, column);
    }
    let rest: String = text
        .lines()
        .enumerate()
        .map(|(n, l)| if n + 1 < line { "" } else { l })
        .collect::<Vec<_>>()
        .join("\n");
    match key_position(&rest, key) {
        (0, _) => (line, column),
        found => found,
    }
}

/// The 1-based line and column where `key` is first written as a mapping key (`key:` at the start
/// of a line's content or after `{` or `,`), or (0, 0).
fn key_position(text: &str, key: &str) -> (usize, usize) {
    let needle = format!("{key}:");
    for (n, line) in text.lines().enumerate() {
        let mut from = 0;
        while let Some(at) = line[from..].find(&needle).map(|i| i + from) {
            let before = line[..at].trim_end();
            if before.is_empty() || before.ends_with('{') || before.ends_with(',') {
                return (n + 1, at + 1);
            }
            from = at + needle.len();
        }
    }
    (0, 0)
}
