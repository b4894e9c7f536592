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
