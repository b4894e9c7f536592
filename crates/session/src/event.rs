//! [`Event`]s: what the manager decided and did, as structured records (seed 003's event names,
//! `compact.*`). Every event is written to the session log and returned to the caller of the call
//! that produced it, so an exporter (console, OpenTelemetry) can forward them without reading the
//! store.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
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
#[derive(Debug, Clone)]
pub struct Event {
    /// What it reports.
    pub kind: EventKind,
    /// Wall-clock time it was made, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Its fields (a JSON object).
    pub data: Map<String, Value>,
    /// Set once the manager redacted it for the caller, so that logging it does not search it
    /// again with the same redactor (not part of the event: never stored, ignored by `==`).
    redacted: bool,
}

impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.kind == other.kind && self.at_ms == other.at_ms && self.data == other.data
    }
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
        Event {
            kind,
            at_ms,
            data,
            redacted: false,
        }
    }

    /// True once the manager redacted it (see [`Event::mark_redacted`]).
    pub(crate) fn is_redacted(&self) -> bool {
        self.redacted
    }

    /// Notes that the event's fields were redacted.
    pub(crate) fn mark_redacted(&mut self) {
        self.redacted = true;
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
        Some(Event {
            kind,
            at_ms,
            data,
            redacted: false,
        })
    }
}

/// An event's fields as a typed struct: written with [`EventData::to_event`] and read back by field
/// with [`EventData::from_event`], so the web view, the CLI and the exporters never read an event
/// by string key. Fields an older log lacks read as their default.
pub trait EventData: Serialize + DeserializeOwned {
    /// The kind of event these fields belong to.
    const KIND: EventKind;

    /// The event, made now.
    fn to_event(&self) -> Event {
        // A struct of plain fields always serialises; an empty object is the harmless fallback.
        let data = serde_json::to_value(self).unwrap_or_else(|_| json!({}));
        Event::new(Self::KIND, data)
    }

    /// The fields of `event` (`None` for another kind, or fields of the wrong type).
    fn from_event(event: &Event) -> Option<Self> {
        if event.kind != Self::KIND {
            return None;
        }
        serde_json::from_value(Value::Object(event.data.clone())).ok()
    }
}

/// The fields of a `compact.compacted` event: what the log, the web view, the CLI and the
/// exporters read of a compaction.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CompactedEvent {
    /// What triggered it: `auto`, `manual`, `idle`, `review`.
    pub trigger: String,
    /// The note of a manual request, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// For a reviewed compaction: whether its checkpoint was edited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited: Option<bool>,
    /// Tokens of the view before.
    pub tokens_before: usize,
    /// Tokens of the view after.
    pub tokens_after: usize,
    /// Items before, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_before: Option<usize>,
    /// Items after, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_after: Option<usize>,
    /// Items removed, replaced or cut.
    pub items_compressed: usize,
    /// The strategy that ran.
    pub strategy: String,
    /// The summariser that wrote the checkpoint, if one did (`null` otherwise).
    pub summarizer: Option<String>,
    /// The log sequence number of the view record the compaction produced.
    pub view_seq: u64,
}

impl EventData for CompactedEvent {
    const KIND: EventKind = EventKind::Compacted;
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

    /// Tokens the compaction took out of the view.
    pub fn tokens_saved(&self) -> usize {
        self.tokens_before.saturating_sub(self.tokens_after)
    }
}

/// The fields of a `compact.compaction_skipped` event: a compaction that was due did not run or
/// did not help, and the request went out unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SkippedEvent {
    /// Why: `two_strikes`, or the compaction's error.
    pub reason: String,
    /// For `two_strikes`: compactions in a row that left the request above the trigger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strikes: Option<u32>,
    /// For `two_strikes`: the count the last of them reached.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub floor: Option<usize>,
    /// For `two_strikes`: the trigger, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<usize>,
    /// For `two_strikes`: the usable budget, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usable: Option<usize>,
    /// For `two_strikes`: the request's effective count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective: Option<usize>,
}

impl EventData for SkippedEvent {
    const KIND: EventKind = EventKind::CompactionSkipped;
}

/// The fields of a `compact.branch` event: the request left the session's chain.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BranchEvent {
    /// Items of the request that matched the chain.
    pub at: usize,
    /// Items the chain held.
    pub held: usize,
    /// Items the request carried.
    pub received: usize,
    /// The chain's tip before (`null` for an empty chain).
    pub old_tip: Option<String>,
}

impl EventData for BranchEvent {
    const KIND: EventKind = EventKind::Branch;
}

/// The fields of a `compact.session_linked` event: the session continues another.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkedEvent {
    /// The session it continues.
    pub parent: String,
}

impl EventData for LinkedEvent {
    const KIND: EventKind = EventKind::SessionLinked;
}

/// The fields of a `compact.token_estimate` event: the request's count.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EstimateEvent {
    /// The model the request is for.
    pub model: String,
    /// Compact's own count, in tokens.
    pub tokens: usize,
    /// The calibration ratio applied to it.
    pub ratio: f64,
    /// The effective count the decision is taken on.
    pub effective: usize,
    /// Items the request added to the chain.
    pub new_items: usize,
    /// Items of the request.
    pub items: usize,
}

impl EventData for EstimateEvent {
    const KIND: EventKind = EventKind::TokenEstimate;
}

/// The fields of a `compact.trigger_decision` event (with seed 003's `t_est` and `max`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DecisionEvent {
    /// `none`, `remind` or `compact`.
    pub decision: String,
    /// Why, when there is a reason.
    pub reason: Option<String>,
    /// The model the request is for.
    pub model: String,
    /// Seed 003's name of the effective count.
    pub t_est: usize,
    /// Seed 003's name of the window.
    pub max: usize,
    /// The effective count.
    pub effective: usize,
    /// The trigger, in tokens.
    pub trigger: usize,
    /// The usable budget, in tokens.
    pub usable: usize,
    /// The model's window, in tokens.
    pub window: usize,
    /// Whether a compaction was asked for.
    pub manual: bool,
    /// The task boundary the decision was taken at, if any.
    pub boundary: Option<String>,
}

impl EventData for DecisionEvent {
    const KIND: EventKind = EventKind::TriggerDecision;
}

/// The fields of a `compact.sent` event: what went to the model.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SentEvent {
    /// The chain's tip after the request.
    pub tip: String,
    /// Items the request carried.
    pub received: usize,
    /// Items sent.
    pub items: usize,
    /// Tokens sent.
    pub tokens: usize,
    /// Items of the last request sent again unchanged.
    pub reused_items: usize,
    /// The model the request is for.
    pub model: String,
    /// Whether the request left the session's chain.
    pub branched: bool,
    /// Why the request went out as the client sent it, when it did (`preflight_failed`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passthrough: Option<String>,
}

impl EventData for SentEvent {
    const KIND: EventKind = EventKind::Sent;
}

/// The fields of a `compact.calibration` event: a provider's count of a request we counted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CalibrationEvent {
    /// The model.
    pub model: String,
    /// The provider's count of the request's input.
    pub provider_tokens: u64,
    /// Compact's count of the same request.
    pub our_tokens: usize,
    /// This sample's ratio (the provider's count over ours).
    pub sample: f64,
    /// The model's calibration ratio after this sample.
    pub ratio: f64,
    /// Whether the ratio was clamped to its bounds (from usage only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clamped: Option<bool>,
    /// `usage` (a reply's usage) or `overflow` (an overflow error's count).
    pub source: String,
    /// Input tokens the provider served from its prompt cache (from usage only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
}

impl EventData for CalibrationEvent {
    const KIND: EventKind = EventKind::Calibration;
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
        assert_eq!(event.get("summarizer"), Some(&json!("checkpoint")));
        assert!(event.get("edited").is_none());
        assert_eq!(CompactedEvent::from_event(&event), Some(e));
        let other = Event::new(EventKind::Sent, json!({}));
        assert_eq!(CompactedEvent::from_event(&other), None);
    }
}
