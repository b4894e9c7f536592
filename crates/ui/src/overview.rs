//! What a page shows of a session, read from its log in one pass: every call (the tokens sent, the
//! count before any compaction, the window and trigger it ran at, the reused prefix), every
//! compaction (its view record, strategy, tiers, tokens before and after), and the row of the
//! session list (agent, model, calls, tokens now and peak, compactions, tokens saved, last
//! activity).

use compact_session::event::{
    CalibrationEvent, CompactedEvent, DecisionEvent, EstimateEvent, EventData, EventKind,
    LinkedEvent, SentEvent,
};
use compact_session::record::{ItemSource, Record, Stored};
use compact_session::{Store, StoreError};
use serde_json::Value;

/// One model call (a preflight that sent a request).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Call {
    /// Tokens sent (after compaction, when one ran).
    pub tokens: usize,
    /// The calibrated count before any compaction (the trigger decision's input).
    pub counted: usize,
    /// The window it ran at.
    pub window: Option<usize>,
    /// The trigger it ran at.
    pub trigger: Option<usize>,
    /// Items sent.
    pub items: usize,
    /// Of those, the leading items sent by the call before too.
    pub reused_items: usize,
    /// The share of this request's tokens the provider read from its prompt cache: as its usage
    /// reported ([`Call::cache_measured`]; the `compact.calibration` event after the call), else
    /// the share that repeats the previous request's prefix exactly (what a prompt cache can
    /// serve), estimated from the reused items: the whole previous request when it was reused
    /// whole, else its reused share.
    pub cache_share: f64,
    /// True when [`Call::cache_share`] is the provider's report, not the estimate.
    pub cache_measured: bool,
    /// When it was sent (ms since the Unix epoch).
    pub at_ms: u64,
}

/// One compaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Compaction {
    /// Index of the call it ran in (into [`Overview::calls`]; may equal its length when the call
    /// failed after it).
    pub call: usize,
    /// Sequence number of the view record it wrote.
    pub view_seq: u64,
    /// `auto`, `manual`, `recovery`.
    pub trigger: String,
    /// The strategy.
    pub strategy: String,
    /// The tiers it applied.
    pub tiers: Vec<String>,
    /// The summariser that wrote the checkpoint.
    pub summarizer: String,
    /// Request tokens before.
    pub tokens_before: usize,
    /// Request tokens after.
    pub tokens_after: usize,
    /// Items it changed.
    pub items_compressed: usize,
}

/// A session as the pages show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overview {
    /// The session id.
    pub id: String,
    /// The transcript or wire format its items came in (what agent or API produced them).
    pub agent: String,
    /// The model of its latest call.
    pub model: String,
    /// Its calls.
    pub calls: Vec<Call>,
    /// Its compactions.
    pub compactions: Vec<Compaction>,
    /// Items received (the history of the latest call, or the items logged, whichever is more).
    pub items: usize,
    /// Records in its log.
    pub records: u64,
    /// Its latest event (ms since the Unix epoch).
    pub last_ms: Option<u64>,
    /// The session that started it, when it is a subagent's (`compact.session_linked`).
    pub parent: Option<String>,
}

impl Overview {
    /// Reads a session from `store`: its first item (for the agent) and its events, without
    /// decoding the rest of its items.
    pub fn load(store: &dyn Store, id: &str) -> Result<Overview, StoreError> {
        let mut records = store.read_kind(id, 0, "item", 1)?;
        records.extend(store.read_kind(id, 0, "event", usize::MAX)?);
        Ok(Overview::read(id, &records))
    }

    /// Reads `records` (a whole log, or its first item and its events, in order).
    pub fn read(id: &str, records: &[Stored]) -> Overview {
        let mut o = Overview {
            id: id.to_owned(),
            ..Overview::default()
        };
        let (mut counted, mut window, mut trigger) = (0, None, None);
        let mut received = 0;
        for stored in records {
            o.records = o.records.max(stored.seq);
            let e = match &stored.record {
                Record::Item(r) => {
                    if r.source == ItemSource::Received {
                        received += 1;
                        if o.agent.is_empty() {
                            if let Some(f) = r.item.meta.origin {
                                o.agent = f.to_string();
                            }
                        }
                    }
                    continue;
                }
                Record::View(_) => continue,
                Record::Event(e) => e,
            };
            o.last_ms = Some(e.at_ms);
            match e.kind {
                EventKind::SessionLinked if o.parent.is_none() => {
                    o.parent = LinkedEvent::from_event(e)
                        .map(|l| l.parent)
                        .filter(|p| !p.is_empty());
                }
                EventKind::TokenEstimate => {
                    counted = EstimateEvent::from_event(e).map_or(0, |c| c.effective);
                }
                EventKind::TriggerDecision => {
                    if let Some(d) = DecisionEvent::from_event(e) {
                        // An older log may lack them: absent, not zero.
                        window = e.get("window").map(|_| d.window);
                        trigger = e.get("trigger").map(|_| d.trigger);
                        if !d.model.is_empty() {
                            o.model = d.model;
                        }
                    }
                }
                EventKind::Compacted => {
                    if let Some(c) = CompactedEvent::from_event(e) {
                        o.compactions.push(Compaction {
                            call: o.calls.len(),
                            view_seq: c.view_seq,
                            trigger: c.trigger,
                            strategy: c.strategy,
                            tiers: Vec::new(),
                            summarizer: c.summarizer.unwrap_or_default(),
                            tokens_before: c.tokens_before,
                            tokens_after: c.tokens_after,
                            items_compressed: c.items_compressed,
                        });
                    }
                }
                EventKind::PolicyApplied => {
                    if let Some(c) = o.compactions.last_mut().filter(|c| c.call == o.calls.len()) {
                        c.tiers = e
                            .get("tiers")
                            .and_then(Value::as_array)
                            .map(|t| {
                                t.iter()
                                    .filter_map(|v| match v {
                                        Value::String(s) => Some(s.clone()),
                                        Value::Number(n) => Some(format!("tier {n}")),
                                        _ => None,
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                    }
                }
                EventKind::Sent => {
                    let sent = SentEvent::from_event(e).unwrap_or_default();
                    o.items = o.items.max(sent.received);
                    let (tokens, items, reused_items) =
                        (sent.tokens, sent.items, sent.reused_items);
                    let cache_share = match o.calls.last() {
                        Some(prev) if prev.items > 0 && tokens > 0 => {
                            let reused = prev.tokens as f64 * reused_items.min(prev.items) as f64
                                / prev.items as f64;
                            (reused / tokens as f64).min(1.0)
                        }
                        _ => 0.0,
                    };
                    o.calls.push(Call {
                        tokens,
                        counted: counted.max(tokens),
                        window,
                        trigger,
                        items,
                        reused_items,
                        cache_share,
                        cache_measured: false,
                        at_ms: e.at_ms,
                    });
                }
                EventKind::Calibration => {
                    // The provider's usage for the last call sent: its cached share, measured.
                    let c = CalibrationEvent::from_event(e).unwrap_or_default();
                    let provider = c.provider_tokens;
                    if let (Some(cached), Some(call)) = (c.cached_input_tokens, o.calls.last_mut())
                    {
                        if provider > 0 && c.source == "usage" {
                            call.cache_share = (cached as f64 / provider as f64).min(1.0);
                            call.cache_measured = true;
                        }
                    }
                }
                _ => {}
            }
        }
        o.items = o.items.max(received);
        o
    }

    /// Tokens of the latest request.
    pub fn tokens_now(&self) -> usize {
        self.calls.last().map_or(0, |c| c.tokens)
    }

    /// The largest count of any call, before compaction.
    pub fn tokens_peak(&self) -> usize {
        self.calls.iter().map(|c| c.counted).max().unwrap_or(0)
    }

    /// Tokens every compaction removed, summed.
    pub fn tokens_saved(&self) -> usize {
        self.compactions
            .iter()
            .map(|c| c.tokens_before.saturating_sub(c.tokens_after))
            .sum()
    }

    /// Calls whose cached share the provider reported.
    pub fn cache_measured(&self) -> usize {
        self.calls.iter().filter(|c| c.cache_measured).count()
    }

    /// The share of all tokens sent that the provider read from its cache (as reported, else as
    /// estimated per call).
    pub fn cache_share(&self) -> Option<f64> {
        let total: f64 = self.calls.iter().map(|c| c.tokens as f64).sum();
        (total > 0.0).then(|| {
            self.calls
                .iter()
                .map(|c| c.cache_share * c.tokens as f64)
                .sum::<f64>()
                / total
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_session::event::Event;
    use serde_json::json;

    fn event(seq: u64, kind: EventKind, data: Value) -> Stored {
        let mut e = Event::new(kind, data);
        e.at_ms = seq * 1_000;
        Stored {
            seq,
            record: Record::Event(e),
        }
    }

    #[test]
    fn calls_compactions_and_the_reused_prefix_are_read_from_the_events() {
        let log = vec![
            event(1, EventKind::TokenEstimate, json!({"effective": 100})),
            event(
                2,
                EventKind::TriggerDecision,
                json!({"window": 1000, "trigger": 800, "model": "m"}),
            ),
            event(
                3,
                EventKind::Sent,
                json!({"tokens": 100, "items": 2, "reused_items": 0}),
            ),
            event(4, EventKind::TokenEstimate, json!({"effective": 900})),
            event(
                5,
                EventKind::TriggerDecision,
                json!({"window": 1000, "trigger": 800, "model": "m"}),
            ),
            event(
                6,
                EventKind::Compacted,
                json!({"view_seq": 3, "strategy": "tiered", "tokens_before": 900, "tokens_after": 300, "trigger": "auto"}),
            ),
            event(7, EventKind::PolicyApplied, json!({"tiers": [0, "fit"]})),
            event(
                8,
                EventKind::Sent,
                json!({"tokens": 300, "items": 4, "reused_items": 1}),
            ),
            event(
                9,
                EventKind::Sent,
                json!({"tokens": 400, "items": 5, "reused_items": 4}),
            ),
        ];
        let o = Overview::read("s", &log);
        assert_eq!(o.calls.len(), 3);
        assert_eq!(o.model, "m");
        assert_eq!(o.compactions.len(), 1);
        assert_eq!(o.compactions[0].call, 1);
        assert_eq!(o.compactions[0].tiers, ["tier 0", "fit"]);
        assert_eq!(o.tokens_now(), 400);
        assert_eq!(o.tokens_peak(), 900);
        assert_eq!(o.tokens_saved(), 600);
        assert!((o.calls[1].cache_share - 50.0 / 300.0).abs() < 1e-9);
        assert!((o.calls[2].cache_share - 0.75).abs() < 1e-9);
        assert_eq!(o.last_ms, Some(9_000));
        assert_eq!(o.cache_measured(), 0);
    }

    #[test]
    fn a_reported_cache_read_replaces_the_estimate_of_its_call() {
        let mut log = vec![
            event(
                1,
                EventKind::Sent,
                json!({"tokens": 100, "items": 2, "reused_items": 0}),
            ),
            event(
                2,
                EventKind::Sent,
                json!({"tokens": 400, "items": 5, "reused_items": 2}),
            ),
        ];
        log.push(event(
            3,
            EventKind::Calibration,
            json!({"source": "usage", "provider_tokens": 420, "cached_input_tokens": 105}),
        ));
        let o = Overview::read("s", &log);
        assert!((o.calls[0].cache_share - 0.0).abs() < 1e-9);
        assert!(!o.calls[0].cache_measured);
        assert!((o.calls[1].cache_share - 0.25).abs() < 1e-9);
        assert!(o.calls[1].cache_measured);
        assert_eq!(o.cache_measured(), 1);
        // A calibration from an overflow error (no usage) changes nothing.
        log.push(event(
            4,
            EventKind::Calibration,
            json!({"source": "overflow", "provider_tokens": 420, "cached_input_tokens": 420}),
        ));
        assert!((Overview::read("s", &log).calls[1].cache_share - 0.25).abs() < 1e-9);
    }
}
