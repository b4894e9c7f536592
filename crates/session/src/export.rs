//! Event exporters: where the manager's [`Event`]s go besides the session log — a console line, a
//! rotated JSONL file, a callback of the host's, or (feature `otlp`) an OpenTelemetry collector
//! ([`crate::otlp::OtlpExporter`]).
//!
//! Exporters never slow or fail a call. The manager hands each call's events (already redacted) to
//! an [`ExportQueue`]: a bounded queue drained by one worker thread that calls every exporter in
//! turn. When the queue is full the events are dropped and counted; an exporter that fails is
//! counted too and the others still run. [`ExportQueue::flush`] waits (up to a timeout) until what
//! was queued so far is exported, for tests and for an orderly shutdown; dropping the queue flushes
//! what it holds and stops the worker.
//!
//! Exported events follow seed 003's schema: one JSON object with `ts` (RFC 3339, UTC), `ts_ms`,
//! `session_id`, `event` (the stable `compact.*` name) and the event's own fields.

use crate::event::Event;
use serde_json::{json, Map, Value};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Events the queue holds by default before it drops new ones.
pub const DEFAULT_QUEUE_CAPACITY: usize = 4_096;
/// Size at which the JSONL exporter rotates its file by default.
pub const DEFAULT_JSONL_MAX_BYTES: u64 = 16 * 1024 * 1024;
/// Rotated JSONL files kept by default (`events.jsonl.1` ... `.N`).
pub const DEFAULT_JSONL_KEEP: usize = 3;

/// An exporter's failure.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Writing failed.
    #[error("{exporter}: {source}")]
    Io {
        /// The exporter.
        exporter: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The exporter refused the event (a callback's own error).
    #[error("{exporter}: {message}")]
    Rejected {
        /// The exporter.
        exporter: String,
        /// Why.
        message: String,
    },
}

/// Where events go. Called from the queue's worker thread, one event at a time.
pub trait Exporter: Send + Sync {
    /// A short name for errors and counts (`console`, `jsonl:/path`, ...).
    fn name(&self) -> String;
    /// Exports one event (seed 003's schema, see [`exported`]).
    fn export(&self, event: &Value) -> Result<(), ExportError>;
    /// Called after the last event of one manager call of `session` (the events of a call arrive
    /// in order; another session's may come in between), for exporters that group a call's events
    /// (the OpenTelemetry exporter makes one span of them). Not called when that last event was
    /// dropped: [`Exporter::flush`] then ends what is open.
    fn end_call(&self, session: &str) -> Result<(), ExportError> {
        let _ = session;
        Ok(())
    }
    /// Writes out anything buffered.
    fn flush(&self) -> Result<(), ExportError> {
        Ok(())
    }
    /// Given the queue's counts once the queue starts, for exporters that report them.
    fn attach(&self, stats: Arc<dyn Fn() -> ExportStats + Send + Sync>) {
        let _ = stats;
    }
}

/// `event` of `session` in the exported schema.
pub fn exported(session: &str, event: &Event) -> Value {
    let mut m = Map::new();
    m.insert("ts".to_owned(), json!(rfc3339(event.at_ms)));
    m.insert("ts_ms".to_owned(), json!(event.at_ms));
    m.insert("session_id".to_owned(), json!(session));
    m.insert("event".to_owned(), json!(event.kind.as_str()));
    for (k, v) in &event.data {
        if !m.contains_key(k) {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m)
}

/// Milliseconds since the Unix epoch as RFC 3339 in UTC, to the millisecond.
fn rfc3339(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1_000 % 60,
        rem % 1_000
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Counts of an [`ExportQueue`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Events handed to every exporter.
    pub exported: u64,
    /// Events dropped because the queue was full.
    pub dropped: u64,
    /// Exporter calls that failed (one per exporter and event).
    pub failed: u64,
}

#[derive(Default)]
struct Counters {
    exported: AtomicU64,
    dropped: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Counters {
    fn stats(&self) -> ExportStats {
        ExportStats {
            exported: self.exported.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

enum Message {
    /// An event, and whether it is the last of its call.
    Event(Value, bool),
    Flush(SyncSender<()>),
}

/// A bounded queue of events and the worker thread that exports them (see the module docs).
pub struct ExportQueue {
    sender: Option<SyncSender<Message>>,
    worker: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    names: Vec<String>,
}

impl std::fmt::Debug for ExportQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportQueue")
            .field("exporters", &self.names)
            .field("stats", &self.stats())
            .finish()
    }
}

impl ExportQueue {
    /// Starts the worker for `exporters`, with room for `capacity` events (at least 1).
    pub fn start(exporters: Vec<Arc<dyn Exporter>>, capacity: usize) -> io::Result<ExportQueue> {
        let (sender, receiver) = mpsc::sync_channel(capacity.max(1));
        let counters = Arc::new(Counters::default());
        let names = exporters.iter().map(|e| e.name()).collect();
        for exporter in &exporters {
            let counters = Arc::clone(&counters);
            exporter.attach(Arc::new(move || counters.stats()));
        }
        let worker = {
            let counters = Arc::clone(&counters);
            std::thread::Builder::new()
                .name("compact-export".to_owned())
                .spawn(move || drain(&receiver, &exporters, &counters))?
        };
        Ok(ExportQueue {
            sender: Some(sender),
            worker: Some(worker),
            counters,
            names,
        })
    }

    /// The exporters' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Queues `events` of `session`; never blocks (a full queue drops and counts them).
    pub fn emit(&self, session: &str, events: &[Event]) {
        let Some(sender) = &self.sender else { return };
        for (n, event) in events.iter().enumerate() {
            let last = n + 1 == events.len();
            match sender.try_send(Message::Event(exported(session, event), last)) {
                Ok(()) => {}
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                    self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }

    /// Waits until every event queued before this call is exported and the exporters flushed, or
    /// `timeout` passes. True when it completed.
    pub fn flush(&self, timeout: Duration) -> bool {
        let Some(sender) = &self.sender else {
            return true;
        };
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        let deadline = std::time::Instant::now() + timeout;
        let mut message = Message::Flush(done_tx);
        loop {
            match sender.try_send(message) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) => {
                    if std::time::Instant::now() >= deadline {
                        return false;
                    }
                    message = m;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(TrySendError::Disconnected(_)) => return false,
            }
        }
        done_rx
            .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
            .is_ok()
    }

    /// What the queue has done so far.
    pub fn stats(&self) -> ExportStats {
        self.counters.stats()
    }

    /// The last exporter failure, if any.
    pub fn last_error(&self) -> Option<String> {
        self.counters
            .last_error
            .lock()
            .map(|e| e.clone())
            .unwrap_or(None)
    }
}

impl Drop for ExportQueue {
    fn drop(&mut self) {
        // Closing the channel ends the worker once it has exported what is queued.
        self.sender = None;
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

fn drain(receiver: &Receiver<Message>, exporters: &[Arc<dyn Exporter>], counters: &Counters) {
    let fail = |e: ExportError| {
        counters.failed.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut last) = counters.last_error.lock() {
            *last = Some(e.to_string());
        }
    };
    while let Ok(message) = receiver.recv() {
        match message {
            Message::Event(event, last) => {
                for exporter in exporters {
                    if let Err(e) = exporter.export(&event) {
                        fail(e);
                    }
                }
                counters.exported.fetch_add(1, Ordering::Relaxed);
                if last {
                    let session = event
                        .get("session_id")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    for exporter in exporters {
                        if let Err(e) = exporter.end_call(session) {
                            fail(e);
                        }
                    }
                }
            }
            Message::Flush(done) => {
                for exporter in exporters {
                    if let Err(e) = exporter.flush() {
                        fail(e);
                    }
                }
                let _ = done.try_send(());
            }
        }
    }
    for exporter in exporters {
        if let Err(e) = exporter.flush() {
            fail(e);
        }
    }
}

/// One human-readable line per event: `ts session event key=value ...`, to standard error or any
/// writer.
pub struct ConsoleExporter {
    out: Mutex<Box<dyn Write + Send>>,
}

impl ConsoleExporter {
    /// Writes to standard error.
    pub fn stderr() -> ConsoleExporter {
        ConsoleExporter::to(Box::new(io::stderr()))
    }

    /// Writes to `out`.
    pub fn to(out: Box<dyn Write + Send>) -> ConsoleExporter {
        ConsoleExporter {
            out: Mutex::new(out),
        }
    }

    /// The line written for `event` (without the newline).
    pub fn line(event: &Value) -> String {
        let get = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or("-");
        let mut line = format!(
            "[compact] {} {} {}",
            get("ts"),
            get("session_id"),
            get("event")
        );
        if let Some(obj) = event.as_object() {
            for (k, v) in obj {
                if matches!(k.as_str(), "ts" | "ts_ms" | "session_id" | "event") || v.is_null() {
                    continue;
                }
                let shown = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                line.push_str(&format!(" {k}={shown}"));
            }
        }
        line
    }
}

impl Exporter for ConsoleExporter {
    fn name(&self) -> String {
        "console".to_owned()
    }

    fn export(&self, event: &Value) -> Result<(), ExportError> {
        let mut out = self.out.lock().map_err(|_| ExportError::Rejected {
            exporter: self.name(),
            message: "the writer's lock is poisoned".to_owned(),
        })?;
        writeln!(out, "{}", ConsoleExporter::line(event)).map_err(|source| ExportError::Io {
            exporter: self.name(),
            source,
        })
    }

    fn flush(&self) -> Result<(), ExportError> {
        match self.out.lock() {
            Ok(mut out) => out.flush().map_err(|source| ExportError::Io {
                exporter: self.name(),
                source,
            }),
            Err(_) => Ok(()),
        }
    }
}

/// One JSON object per line in a file, rotated when it would pass `max_bytes`: `events.jsonl`
/// becomes `events.jsonl.1`, `.1` becomes `.2`, ... and files past `keep` are removed.
pub struct JsonlExporter {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    file: Mutex<Option<(File, u64)>>,
}

impl JsonlExporter {
    /// Appends to `path` (created with its directory when missing), rotating at `max_bytes` and
    /// keeping `keep` rotated files. Fails when the file cannot be opened.
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<JsonlExporter> {
        let exporter = JsonlExporter {
            path: path.to_path_buf(),
            max_bytes: max_bytes.max(1),
            keep,
            file: Mutex::new(None),
        };
        let opened = exporter.open_file()?;
        *exporter
            .file
            .lock()
            .map_err(|_| io::Error::other("poisoned"))? = Some(opened);
        Ok(exporter)
    }

    fn open_file(&self) -> io::Result<(File, u64)> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let len = file.metadata()?.len();
        Ok((file, len))
    }

    fn rotated(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&self) -> io::Result<()> {
        if self.keep == 0 {
            return std::fs::remove_file(&self.path);
        }
        let _ = std::fs::remove_file(self.rotated(self.keep));
        for n in (1..self.keep).rev() {
            let from = self.rotated(n);
            if from.exists() {
                std::fs::rename(&from, self.rotated(n + 1))?;
            }
        }
        std::fs::rename(&self.path, self.rotated(1))
    }

    fn write(&self, line: &[u8]) -> io::Result<()> {
        let mut slot = self.file.lock().map_err(|_| io::Error::other("poisoned"))?;
        let len = slot.as_ref().map_or(0, |(_, len)| *len);
        if len > 0 && len + line.len() as u64 > self.max_bytes {
            *slot = None;
            self.rotate()?;
        }
        if slot.is_none() {
            *slot = Some(self.open_file()?);
        }
        let (file, len) = slot.as_mut().ok_or_else(|| io::Error::other("no file"))?;
        file.write_all(line)?;
        *len += line.len() as u64;
        Ok(())
    }
}

impl Exporter for JsonlExporter {
    fn name(&self) -> String {
        format!("jsonl:{}", self.path.display())
    }

    fn export(&self, event: &Value) -> Result<(), ExportError> {
        let mut line = event.to_string().into_bytes();
        line.push(b'\n');
        self.write(&line).map_err(|source| ExportError::Io {
            exporter: self.name(),
            source,
        })
    }

    fn flush(&self) -> Result<(), ExportError> {
        let mut slot = self.file.lock().map_err(|_| ExportError::Rejected {
            exporter: self.name(),
            message: "the file's lock is poisoned".to_owned(),
        })?;
        match slot.as_mut() {
            Some((file, _)) => file.sync_data().map_err(|source| ExportError::Io {
                exporter: self.name(),
                source,
            }),
            None => Ok(()),
        }
    }
}

/// A host's function over an exported event; an `Err` is counted as a failure.
type Callback = Box<dyn Fn(&Value) -> Result<(), String> + Send + Sync>;

/// The host's own function, called with each exported event; an `Err` is counted as a failure.
pub struct CallbackExporter {
    name: String,
    callback: Callback,
}

impl CallbackExporter {
    /// Calls `callback` with each event.
    pub fn new(
        name: impl Into<String>,
        callback: impl Fn(&Value) -> Result<(), String> + Send + Sync + 'static,
    ) -> CallbackExporter {
        CallbackExporter {
            name: name.into(),
            callback: Box::new(callback),
        }
    }
}

impl Exporter for CallbackExporter {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn export(&self, event: &Value) -> Result<(), ExportError> {
        (self.callback)(event).map_err(|message| ExportError::Rejected {
            exporter: self.name.clone(),
            message,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventKind;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_760_853_600_123), "2025-10-19T06:00:00.123Z");
    }

    #[test]
    fn exported_events_follow_the_seed_schema_and_keep_their_fields() {
        let mut e = Event::new(
            EventKind::TriggerDecision,
            json!({"decision": "compact", "effective": 120_000, "session_id": "spoofed"}),
        );
        e.at_ms = 1_760_853_600_000;
        let v = exported("abc", &e);
        assert_eq!(v["ts"], "2025-10-19T06:00:00.000Z");
        assert_eq!(
            v["session_id"], "abc",
            "the session is the manager's, not a field's"
        );
        assert_eq!(v["event"], "compact.trigger_decision");
        assert_eq!(v["decision"], "compact");
        assert_eq!(v["effective"], 120_000);
        let line = ConsoleExporter::line(&v);
        assert!(line.starts_with("[compact] 2025-10-19T06:00:00.000Z abc compact.trigger_decision"));
        assert!(line.contains(" decision=compact") && line.contains(" effective=120000"));
    }
}
