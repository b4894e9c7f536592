//! What the provider holds of a session: its last provider compaction as the runtime last saw it
//! ([`ProviderHeld`]), logged as a `compact.provider_state` event whenever it changes and rebuilt
//! from the latest one.
//!
//! Two things tell the runtime that the provider compacted: a reply whose usage says a compaction
//! pass ran (`record_usage` with [`crate::CompactionPass`]: the provider now stands for everything
//! it was sent, and the client will send the compaction back), and a request whose history holds a
//! provider compaction the state does not know yet (its item id and place, and what before it the
//! provider no longer reads: [`compact_core::provider::superseded`]). The log stays append-only:
//! each change is one more event; a log without such events (older ones) means "none held".

use crate::event::{Event, EventKind};
use crate::record::Record;
use crate::store::{Store, StoreError};
use compact_core::model::{CompactionWire, Conversation, ItemBody};
use compact_core::tokens::TokenCounter;
use serde_json::{json, Value};

/// Where the runtime learnt what the provider holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldSource {
    /// A reply said the provider compacted; the client has not sent the compaction back yet.
    Response,
    /// A request carried the compaction in its history.
    Request,
}

impl HeldSource {
    /// The spelling in the log.
    pub fn as_str(self) -> &'static str {
        match self {
            HeldSource::Response => "response",
            HeldSource::Request => "request",
        }
    }
}

/// The provider's last compaction of a session, and what it stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderHeld {
    /// How the runtime learnt it.
    pub source: HeldSource,
    /// The compaction's item id (from a request; `None` from a reply).
    pub item_id: Option<String>,
    /// Its place among the request's items (from a request).
    pub index: Option<usize>,
    /// `anthropic_block` or `openai_item` (from a request).
    pub wire: Option<&'static str>,
    /// Model-visible items it supersedes: from a request, those before it the provider no longer
    /// reads; from a reply, every item of the request it compacted.
    pub superseded_items: usize,
    /// Their tokens by our count (from a reply: our count of the whole request sent).
    pub superseded_tokens: usize,
}

fn wire_name(wire: CompactionWire) -> Option<&'static str> {
    match wire {
        CompactionWire::AnthropicBlock => Some("anthropic_block"),
        CompactionWire::OpenAiItem => Some("openai_item"),
        // A trigger asks for a compaction; it holds none.
        _ => None,
    }
}

impl ProviderHeld {
    /// The last provider compaction in `request` and what it supersedes, when it has one.
    pub fn in_request(request: &Conversation, counter: &TokenCounter) -> Option<ProviderHeld> {
        let index = compact_core::provider::last_compaction(request)?;
        let item = request.items.get(index)?;
        let ItemBody::ProviderCompaction(p) = item.body() else {
            return None;
        };
        let superseded = compact_core::provider::superseded(request, None);
        Some(ProviderHeld {
            source: HeldSource::Request,
            item_id: Some(item.meta.id.as_str().to_owned()),
            index: Some(index),
            wire: wire_name(p.wire()),
            superseded_items: superseded.len(),
            superseded_tokens: superseded
                .iter()
                .filter_map(|&i| request.items.get(i))
                .map(|i| counter.count_item(i))
                .sum(),
        })
    }

    /// What a reply that compacted leaves held: everything sent (`items` model-visible items
    /// other than system and developer messages, `tokens` our count of the whole request).
    pub fn from_reply(items: usize, tokens: usize) -> ProviderHeld {
        ProviderHeld {
            source: HeldSource::Response,
            item_id: None,
            index: None,
            wire: None,
            superseded_items: items,
            superseded_tokens: tokens,
        }
    }

    /// True when `self`, seen in a request, is news to a state holding `known`: another
    /// compaction, or the one a reply announced now sent back.
    pub fn changes(&self, known: Option<&ProviderHeld>) -> bool {
        known.is_none_or(|k| k.source != self.source || k.item_id != self.item_id)
    }

    /// The `compact.provider_state` event recording it.
    pub fn event(&self) -> Event {
        Event::new(
            EventKind::ProviderState,
            json!({"source": self.source.as_str(), "item_id": self.item_id, "index": self.index,
                   "wire": self.wire, "superseded_items": self.superseded_items,
                   "superseded_tokens": self.superseded_tokens}),
        )
    }

    /// The `compact.provider_state` event recording that the provider holds nothing any more.
    pub fn cleared_event() -> Event {
        Event::new(EventKind::ProviderState, json!({"source": "none"}))
    }

    /// Reads a `compact.provider_state` event: `Some(Some(held))`, `Some(None)` when it records
    /// that the provider holds nothing any more ([`ProviderHeld::cleared_event`]), `None` when `e`
    /// is another kind or names a source this version does not know. Fields it does not know are
    /// ignored; a missing count reads as 0.
    pub fn from_event(e: &Event) -> Option<Option<ProviderHeld>> {
        if e.kind != EventKind::ProviderState {
            return None;
        }
        let source = match e.get("source").and_then(Value::as_str)? {
            "response" => HeldSource::Response,
            "request" => HeldSource::Request,
            "none" => return Some(None),
            _ => return None,
        };
        let count = |key: &str| {
            e.get(key)
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
        };
        Some(Some(ProviderHeld {
            source,
            item_id: e.get("item_id").and_then(Value::as_str).map(str::to_owned),
            index: count("index"),
            wire: match e.get("wire").and_then(Value::as_str) {
                Some("anthropic_block") => Some("anthropic_block"),
                Some("openai_item") => Some("openai_item"),
                _ => None,
            },
            superseded_items: count("superseded_items").unwrap_or(0),
            superseded_tokens: count("superseded_tokens").unwrap_or(0),
        }))
    }

    /// The fields as JSON (the admin API's and `compactctl sessions`'s form).
    pub fn to_json(&self) -> Value {
        let mut e = self.event().to_json();
        if let Some(m) = e.as_object_mut() {
            m.remove("event");
            m.remove("ts_ms");
        }
        e
    }
}

/// What the provider holds of `session` by its log (its latest `compact.provider_state` event),
/// read from the log's events alone; `None` when no provider compaction was seen.
pub fn provider_state(
    store: &dyn Store,
    session: &str,
) -> Result<Option<ProviderHeld>, StoreError> {
    Ok(store
        .read_kind(session, 0, "event", usize::MAX)?
        .iter()
        .rev()
        .find_map(|s| match &s.record {
            Record::Event(e) => ProviderHeld::from_event(e),
            _ => None,
        })
        .flatten())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn event(data: Value) -> Event {
        let mut e = Event::new(EventKind::ProviderState, data);
        e.at_ms = 1;
        e
    }

    #[test]
    fn an_event_round_trips_and_unknown_or_missing_fields_are_tolerated() {
        let held = ProviderHeld {
            source: HeldSource::Request,
            item_id: Some("msg_1#0".into()),
            index: Some(7),
            wire: Some("anthropic_block"),
            superseded_items: 6,
            superseded_tokens: 1234,
        };
        assert_eq!(ProviderHeld::from_event(&held.event()), Some(Some(held)));
        // A clearing reads as "none held", which is not "no state event".
        assert_eq!(
            ProviderHeld::from_event(&ProviderHeld::cleared_event()),
            Some(None)
        );
        // A later writer's extra field is ignored; a missing count reads as 0.
        let e = event(json!({"source": "response", "superseded_tokens": 90, "covers": {"x": 1}}));
        assert_eq!(
            ProviderHeld::from_event(&e),
            Some(Some(ProviderHeld::from_reply(0, 90)))
        );
        // An unknown source is not a state; another event kind neither.
        assert_eq!(
            ProviderHeld::from_event(&event(json!({"source": "x"}))),
            None
        );
        let mut other = held_event();
        other.kind = EventKind::Sent;
        assert_eq!(ProviderHeld::from_event(&other), None);
    }

    fn held_event() -> Event {
        ProviderHeld::from_reply(1, 2).event()
    }
}
