//! [`Event`]s: what the manager decided and did, as structured records (seed 003's event names,
//! `compact.*`). Every event is written to the session log and returned to the caller of the call
//! that produced it, so an exporter (console, OpenTelemetry) can forward them without reading the
//! store.

use serde_json::{json, Map, Value};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// What an event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EventKind {
    /// The count of a request: ours, the calibration ratio, the effective count.
    TokenEstimate,
    /// The decision taken on the effective count (none, remind, compact; the reason), with seed
    /// 003's `model`, `t_est` (the effective count) and `max` (the window).
    TriggerDecision,
    /// A compaction produced a new view (trigger, tokens before and after, items compressed).
    Compacted,
    /// A compaction was attempted and skipped or failed (the request went out unchanged or not at all).
    CompactionSkipped,
    /// What was sent: the chain tip, items, tokens, and how much of the last request was reused.
    Sent,
    /// The request's history diverged from the session's chain: a new branch, compacted from scratch.
    Branch,
    /// Provider-reported usage was recorded and the calibration ratio updated.
    Calibration,
    /// A tool output was truncated at write time; its original is in the log under `reference`.
    Truncated,
    /// An overflow recovery attempt (retry or give up).
    Recovery,
    /// Seed 003: the policy a compaction ran with (`model`, `t_est`, `max`, `policy`, `kept`).
    PolicyApplied,
    /// Seed 003: what a compaction removed from the view (`pruned_count`, tokens freed).
    PrunedMessages,
    /// Seed 003: a compaction wrote a checkpoint (`summary_tokens`, the summariser, its calls and
    /// input tokens, `summarizer_cached_input_tokens` of them read from the provider's cache).
    SummaryCreated,
    /// Seed 003: a compaction that was due failed; the call failed with it.
    Failed,
    /// Seed 003: the provider accepted the request sent after an overflow recovery.
    OverflowRecovered,
    /// The provider ran its own compaction for the last request (its pass's usage).
    ProviderCompaction,
    /// What the provider now holds of the session changed: its last compaction (`source`:
    /// `response` or `request`; `item_id`, `index`, `wire` from a request) and what it supersedes
    /// (`superseded_items`, `superseded_tokens`). See [`crate::provider`].
    ProviderState,
    /// The model asked for an original by id in band (the proxy's `compact_recall` tool):
    /// `reference`, `found`, and the `tokens` returned.
    Recall,
    /// A memory candidate and the decision about it (`outcome`: accepted, merged, rejected;
    /// `reason`: new, duplicate_merged, date_only, cap_reached, ...; the candidate's fields).
    MemoryCandidate,
    /// A remembered fact moved in its lifecycle (`fact`, `to`, `reason`, `by`).
    MemoryLifecycle,
    /// The memory block injected after the system prompt changed (`facts`, `tokens`, `reason`).
    MemoryInjected,
    /// The pre-tool gate rewrote a shell command to a remembered path (`tool`, `target`, `path`,
    /// `fact`, `original_command`, `rewritten_command`).
    MemoryGate,
    /// The session is a subagent's, linked to the session that started it (`parent`): its own log,
    /// model, window and compactions; its result enters the parent as a tool result.
    SessionLinked,
}

impl EventKind {
    /// The event name (`compact.trigger_decision`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::TokenEstimate => "compact.token_estimate",
            EventKind::TriggerDecision => "compact.trigger_decision",
            EventKind::Compacted => "compact.compacted",
            EventKind::CompactionSkipped => "compact.compaction_skipped",
            EventKind::Sent => "compact.sent",
            EventKind::Branch => "compact.branch",
            EventKind::Calibration => "compact.calibration",
            EventKind::Truncated => "compact.truncated",
            EventKind::Recovery => "compact.recovery",
            EventKind::PolicyApplied => "compact.policy_applied",
            EventKind::PrunedMessages => "compact.pruned_messages",
            EventKind::SummaryCreated => "compact.summary_created",
            EventKind::Failed => "compact.failed",
            EventKind::OverflowRecovered => "compact.overflow_recovered",
            EventKind::ProviderCompaction => "compact.provider_compaction",
            EventKind::ProviderState => "compact.provider_state",
            EventKind::Recall => "compact.recall",
            EventKind::MemoryCandidate => "compact.memory_candidate",
            EventKind::MemoryLifecycle => "compact.memory_lifecycle",
            EventKind::MemoryInjected => "compact.memory_injected",
            EventKind::MemoryGate => "compact.memory_gate",
            EventKind::SessionLinked => "compact.session_linked",
        }
    }

    const ALL: [EventKind; 22] = [
        EventKind::TokenEstimate,
        EventKind::TriggerDecision,
        EventKind::Compacted,
        EventKind::CompactionSkipped,
        EventKind::Sent,
        EventKind::Branch,
        EventKind::Calibration,
        EventKind::Truncated,
        EventKind::Recovery,
        EventKind::PolicyApplied,
        EventKind::PrunedMessages,
        EventKind::SummaryCreated,
        EventKind::Failed,
        EventKind::OverflowRecovered,
        EventKind::ProviderCompaction,
        EventKind::ProviderState,
        EventKind::Recall,
        EventKind::MemoryCandidate,
        EventKind::MemoryLifecycle,
        EventKind::MemoryInjected,
        EventKind::MemoryGate,
        EventKind::SessionLinked,
    ];

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<EventKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event: its kind, when (milliseconds since the Unix epoch) and its fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// What it reports.
    pub kind: EventKind,
    /// Wall-clock time it was made, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Its fields (a JSON object).
    pub data: Map<String, Value>,
}

impl Event {
    /// An event of `kind` made now with `data` (an object; anything else is stored as `{"value": data}`).
    pub fn new(kind: EventKind, data: Value) -> Event {
        let data = match data {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("value".to_owned(), other);
                m
            }
        };
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Event { kind, at_ms, data }
    }

    /// A field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.get(key)
    }

    /// The event as one JSON object (`{"event": name, "ts_ms": ..., fields...}`).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("event".to_owned(), json!(self.kind.as_str()));
        m.insert("ts_ms".to_owned(), json!(self.at_ms));
        for (k, v) in &self.data {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }

    /// Reads [`Event::to_json`]'s form.
    pub fn from_json(value: &Value) -> Option<Event> {
        let obj = value.as_object()?;
        let kind = EventKind::from_name(obj.get("event")?.as_str()?)?;
        let at_ms = obj.get("ts_ms")?.as_u64()?;
        let data = obj
            .iter()
            .filter(|(k, _)| *k != "event" && *k != "ts_ms")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Some(Event { kind, at_ms, data })
    }
}

/// The fields of a `compact.compacted` event, typed: what the log, the web view, the CLI and the
/// exporters read of a compaction.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CompactedEvent {
    /// What triggered it: `auto`, `manual`, `idle`, `review`.
    pub trigger: String,
    /// The note of a manual request, when there was one.
    pub note: Option<String>,
    /// For a reviewed compaction: whether its checkpoint was edited.
    pub edited: Option<bool>,
    /// Tokens of the view before.
    pub tokens_before: usize,
    /// Tokens of the view after.
    pub tokens_after: usize,
    /// Items before, when known.
    pub items_before: Option<usize>,
    /// Items after, when known.
    pub items_after: Option<usize>,
    /// Items removed, replaced or cut.
    pub items_compressed: usize,
    /// The strategy that ran.
    pub strategy: String,
    /// The summariser that wrote the checkpoint, if one did.
    pub summarizer: Option<String>,
    /// The log sequence number of the view record the compaction produced.
    pub view_seq: u64,
}

impl CompactedEvent {
    /// The fields of a compaction's report, for `trigger`.
    pub fn of(trigger: &str, report: &compact_engine::Report, items_compressed: usize) -> Self {
        CompactedEvent {
            trigger: trigger.to_owned(),
            tokens_before: report.tokens_before,
            tokens_after: report.tokens_after,
            items_compressed,
            strategy: report.strategy.as_str().to_owned(),
            summarizer: report.summarizer.clone(),
            ..CompactedEvent::default()
        }
    }

    /// The event.
    pub fn to_event(&self) -> Event {
        let mut data = json!({"trigger": self.trigger, "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after, "items_compressed": self.items_compressed,
            "strategy": self.strategy, "summarizer": self.summarizer, "view_seq": self.view_seq});
        let optional = [
            ("note", self.note.as_ref().map(|n| json!(n))),
            ("edited", self.edited.map(|e| json!(e))),
            ("items_before", self.items_before.map(|n| json!(n))),
            ("items_after", self.items_after.map(|n| json!(n))),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                data[key] = value;
            }
        }
        Event::new(EventKind::Compacted, data)
    }

    /// Reads a `compact.compacted` event (`None` for any other kind). Fields an older log lacks
    /// read as zero or absent.
    pub fn from_event(event: &Event) -> Option<CompactedEvent> {
        if event.kind != EventKind::Compacted {
            return None;
        }
        let text = |k: &str| event.get(k).and_then(Value::as_str).map(str::to_owned);
        let number = |k: &str| {
            event
                .get(k)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
        };
        Some(CompactedEvent {
            trigger: text("trigger").unwrap_or_default(),
            note: text("note"),
            edited: event.get("edited").and_then(Value::as_bool),
            tokens_before: number("tokens_before").unwrap_or(0),
            tokens_after: number("tokens_after").unwrap_or(0),
            items_before: number("items_before"),
            items_after: number("items_after"),
            items_compressed: number("items_compressed").unwrap_or(0),
            strategy: text("strategy").unwrap_or_default(),
            summarizer: text("summarizer"),
            view_seq: event.get("view_seq").and_then(Value::as_u64).unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod compacted_tests {
    use super::*;

    #[test]
    fn a_compacted_event_reads_back_as_written() {
        let e = CompactedEvent {
            trigger: "manual".into(),
            note: Some("focus on the parser".into()),
            edited: None,
            tokens_before: 9_000,
            tokens_after: 3_000,
            items_before: Some(40),
            items_after: Some(12),
            items_compressed: 28,
            strategy: "tiered".into(),
            summarizer: Some("checkpoint".into()),
            view_seq: 17,
        };
        let event = e.to_event();
        assert_eq!(event.kind, EventKind::Compacted);
        assert!(event.get("edited").is_none());
        assert_eq!(CompactedEvent::from_event(&event), Some(e));
        let other = Event::new(EventKind::Sent, json!({}));
        assert_eq!(CompactedEvent::from_event(&other), None);
    }
}
