//! Structured logs: one JSON object per line, written to a [`LogSink`]. The proxy logs what it
//! decided and measured (route, status, session id, token counts, timings, error kinds), never a
//! header value, a body or any message content, so credentials and conversations cannot leak into
//! logs.

use serde_json::{Map, Value};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where log lines go.
pub trait LogSink: Send + Sync {
    /// Writes one line (a JSON object, no newline).
    fn write(&self, line: &str);
}

/// Lines to standard error.
#[derive(Debug, Default)]
pub struct StderrLog;

impl LogSink for StderrLog {
    fn write(&self, line: &str) {
        eprintln!("{line}");
    }
}

/// Lines kept in memory (tests, embedding).
#[derive(Debug, Default)]
pub struct MemoryLog {
    lines: Mutex<Vec<String>>,
}

impl MemoryLog {
    /// Every line written so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

impl LogSink for MemoryLog {
    fn write(&self, line: &str) {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(line.to_owned());
    }
}

/// Severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Normal operation.
    Info,
    /// Something was degraded (a request passed through uncompacted, a stream broke).
    Warn,
}

/// Writes `event` with `fields` (and a timestamp and level) to `sink`.
pub fn emit(sink: &dyn LogSink, level: Level, event: &str, fields: Value) {
    let mut line = Map::new();
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    line.insert("ts_ms".into(), ms.into());
    line.insert(
        "level".into(),
        match level {
            Level::Info => "info",
            Level::Warn => "warn",
        }
        .into(),
    );
    line.insert("event".into(), event.into());
    if let Value::Object(fields) = fields {
        line.extend(fields);
    }
    sink.write(&Value::Object(line).to_string());
}
