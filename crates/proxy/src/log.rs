//! Structured logs through `tracing`. The proxy logs what it decided and measured (route, status,
//! session id, token counts, timings, error kinds), never a header value, a body or any message
//! content, so credentials and conversations cannot leak into logs.
//!
//! Each line is a `tracing` event with target `compact_proxy`, a field `event` naming it and its
//! measurements as one JSON object in the field `fields`; the binary installs the subscriber.
//! [`json_line`] writes any event (ours, or a dependency's) as the JSON line Compact prints, the
//! measurements flattened into it; [`MemoryLog`] keeps such lines in memory (tests, embedding).
//! [`LEAKY_TARGETS`] names the dependencies whose verbose levels print header values or query
//! parameters: a subscriber caps them whatever `RUST_LOG` asks.

use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// Severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Normal operation.
    Info,
    /// Something was degraded (a request passed through uncompacted, a stream broke).
    Warn,
}

/// Logs `event` with `fields` (a JSON object of measurements) at `level`.
pub fn emit(level: Level, event: &str, fields: Value) {
    let fields = match fields {
        Value::Object(map) if map.is_empty() => String::new(),
        other => other.to_string(),
    };
    match level {
        Level::Info => tracing::info!(target: "compact_proxy", event, fields = %fields),
        Level::Warn => tracing::warn!(target: "compact_proxy", event, fields = %fields),
    }
}

/// Dependencies whose `debug` or `trace` events can hold what must never be logged, with the most
/// verbose level a subscriber lets through: hyper and h2 print header blocks at `trace` (h2 its
/// frames at `debug`), tokio-postgres a statement's parameters (session records) at `debug`.
pub const LEAKY_TARGETS: &[(&str, tracing::Level)] = &[
    ("hyper", tracing::Level::DEBUG),
    ("hyper_util", tracing::Level::DEBUG),
    ("h2", tracing::Level::INFO),
    ("tokio_postgres", tracing::Level::INFO),
    ("postgres", tracing::Level::INFO),
];

/// Whether an event of `target` at `level` may be logged under [`LEAKY_TARGETS`].
pub fn allowed(target: &str, level: &tracing::Level) -> bool {
    LEAKY_TARGETS
        .iter()
        .find(|(prefix, _)| {
            target == *prefix
                || target
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with("::"))
        })
        .is_none_or(|(_, most)| level <= most)
}

/// `event` as one JSON line: `ts_ms`, `level` (lower case), `target`, then its fields (a `fields`
/// object flattened, a `message` kept as such).
pub fn json_line(event: &Event<'_>) -> String {
    let mut line = Map::new();
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    line.insert("ts_ms".into(), ms.into());
    let meta = event.metadata();
    line.insert(
        "level".into(),
        meta.level().as_str().to_ascii_lowercase().into(),
    );
    line.insert("target".into(), meta.target().into());
    event.record(&mut Fields(&mut line));
    Value::Object(line).to_string()
}

/// Collects an event's fields into a JSON object.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
}

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        if field.name() == "fields" {
            // The measurements, written as JSON text by `emit`: flattened into the line.
            if let Value::String(text) = &value {
                if text.is_empty() {
                    return;
                }
                if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) {
                    self.0.extend(map);
                    return;
                }
            }
        }
        self.0.insert(field.name().to_owned(), value);
    }
}

/// Lines kept in memory, as [`json_line`] writes them: a `tracing_subscriber` layer. Events inside a
/// span with a `log_scope` field (a number) are kept with it, for [`MemoryLog::lines_of`].
#[derive(Debug, Clone, Default)]
pub struct MemoryLog {
    lines: Arc<Mutex<Vec<Kept>>>,
}

/// A kept line, with the `log_scope` of its span.
type Kept = (Option<u64>, String);

impl MemoryLog {
    /// Every line kept so far.
    pub fn lines(&self) -> Vec<String> {
        self.kept().iter().map(|(_, l)| l.clone()).collect()
    }

    /// The lines of events inside a span whose `log_scope` is `scope`.
    pub fn lines_of(&self, scope: u64) -> Vec<String> {
        self.kept()
            .iter()
            .filter(|(s, _)| *s == Some(scope))
            .map(|(_, l)| l.clone())
            .collect()
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Vec<Kept>> {
        self.lines
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A span's `log_scope`.
struct Scope(u64);

/// Finds a span's `log_scope`.
#[derive(Default)]
struct FindScope(Option<Scope>);

impl Visit for FindScope {
    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "log_scope" {
            self.0 = Some(Scope(value));
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        if let Ok(value) = u64::try_from(value) {
            self.record_u64(field, value);
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for MemoryLog {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut scope = FindScope::default();
        attrs.record(&mut scope);
        if let (Some(scope), Some(span)) = (scope.0, ctx.span(id)) {
            span.extensions_mut().insert(scope);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        if !allowed(meta.target(), meta.level()) {
            return;
        }
        let scope = ctx.event_scope(event).and_then(|spans| {
            spans
                .from_root()
                .find_map(|span| span.extensions().get::<Scope>().map(|s| s.0))
        });
        self.kept().push((scope, json_line(event)));
    }
}
