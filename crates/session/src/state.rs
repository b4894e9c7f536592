//! [`SessionState`]: what the manager holds in memory per session, and how it is rebuilt from the
//! session log after a restart.
//!
//! The state is a cache of the log: the chain of the items last received, those items, the view
//! (what the model is shown in their place: the last compacted view followed by the items received
//! since, before normalisation), what was sent, and its count. Everything in it can be rebuilt from
//! the log ([`SessionState::load`]); it changes only after the records describing the change were
//! appended to the store.

use crate::annotation::equivalent;
use crate::calibration::Calibration;
use crate::chain::ChainHash;
use crate::codec::share_envelopes;
use crate::error::SessionError;
use crate::event::{Event, EventKind};
use crate::provider::ProviderHeld;
use crate::record::{ItemSource, Record, ViewEntry, ViewRecord};
use crate::store::Store;
use compact_core::model::{Conversation, Item, ItemBody, ItemMeta};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// One session's state.
#[derive(Debug, Default)]
pub(crate) struct SessionState {
    /// The store version the state reflects.
    pub version: u64,
    /// Chain link of each received item of the current branch.
    pub chain: Vec<ChainHash>,
    /// Every chain link already in the log (a link is logged once, whatever branches come and go).
    pub logged: HashSet<ChainHash>,
    /// The items of the last request, as received.
    pub received: Vec<Item>,
    /// The view before normalisation: the last compacted view, then the items received since.
    /// (Shared with the caller that was handed it: the next extension copies it only if the
    /// caller still holds it.)
    pub view: Arc<Conversation>,
    /// What was sent, when normalisation changed the view (else the view itself was sent).
    pub repaired: Option<Arc<Conversation>>,
    /// True when the only change normalisation made to the view was hiding what a provider
    /// compaction supersedes: items that append cleanly to the view then append the same way to
    /// `repaired`, so the next call can take the fast path (and extends both).
    pub repair_hides_only: bool,
    /// Our count of what was sent.
    pub sent_tokens: usize,
    /// Tool-call ids in the view (a new call reusing one needs a repair).
    pub call_ids: HashSet<String>,
    /// Calibration ratios per model.
    pub calibration: Calibration,
    /// The model key of the last request.
    pub model: String,
    /// Overflow recoveries in the current turn.
    pub recovery_attempts: u32,
    /// Tokens after the last recovery of the current turn (the no-progress breaker).
    pub recovery_last_tokens: Option<usize>,
    /// Automatic compactions in a row that left the request above the trigger (the two-strike
    /// breaker: at [`crate::limits::MAX_STRIKES`] automatic compaction stops for the session), and
    /// the count the last of them reached (what could not shrink).
    pub strikes: u32,
    /// See `strikes`.
    pub strike_floor: usize,
    /// Index of the request's last user message when the strikes were counted: a new user turn
    /// resets them (what was the irreducible last turn can now be compacted).
    pub strike_turn: Option<usize>,
    /// True once a request was prepared (record_usage, recover and manual_compact need one).
    pub prepared: bool,
    /// True when the next preflight must recount and renormalise everything (after a reload).
    pub fresh: bool,
    /// Secrets seen in this session's items since the state was loaded (kind, text), and the
    /// redactor that also finds them in text derived from those items.
    pub known_secrets: Vec<(String, String)>,
    /// See `known_secrets`.
    pub redactor: Option<Arc<compact_core::redact::Redactor>>,
    /// True when an append found the log moved on (another writer appended first): the state no
    /// longer reflects the log, and the next call reloads it.
    pub stale: bool,
    /// The session's facts (replayed from its memory events).
    pub memory: compact_core::memory::Memory,
    /// The memory block the view holds, if any.
    pub memory_block: Option<String>,
    /// True when the next preflight must render the block again (a fact was forgotten or pinned).
    pub memory_refresh: bool,
    /// How much the request grew on the last calls that extended it (idle-time compaction asks
    /// whether the next call would reach the trigger).
    pub growth: Growth,
    /// What the provider holds of the session: its last compaction (replayed from the latest
    /// `compact.provider_state` event).
    pub provider: Option<ProviderHeld>,
    /// The context window a provider's overflow error stated (in its own tokens), when smaller
    /// than the policy's: every later call is prepared for it (replayed from `compact.recovery`
    /// events).
    pub provider_window: Option<usize>,
    /// Usage records made but not yet in the log (see [`crate::usage`]): `version` counts them,
    /// the store's version is `version` less their number.
    pub held: Vec<crate::reported::HeldUsage>,
}

impl SessionState {
    /// Learns the window a provider's overflow error stated (the smallest one seen).
    pub fn learn_window(&mut self, limit: usize) {
        self.provider_window = Some(self.provider_window.map_or(limit, |w| w.min(limit)));
    }
}

/// The growth in tokens of the last [`Growth::CALLS`] extending calls.
#[derive(Debug, Default, Clone)]
pub(crate) struct Growth {
    last: [usize; Growth::CALLS],
    seen: usize,
}

impl Growth {
    /// Calls remembered.
    pub const CALLS: usize = 4;

    /// Notes one call's growth.
    pub fn note(&mut self, tokens: usize) {
        self.last[self.seen % Self::CALLS] = tokens;
        self.seen += 1;
    }

    /// What the next call is expected to add: the largest growth of the last calls (`None` before
    /// any call extended the request).
    pub fn expected(&self) -> Option<usize> {
        (self.seen > 0).then(|| self.last.iter().copied().max().unwrap_or(0))
    }
}

impl SessionState {
    /// What was sent last.
    pub fn sent(&self) -> &Arc<Conversation> {
        self.repaired.as_ref().unwrap_or(&self.view)
    }

    /// Number of leading items of `items` that are the items last received, and which of those
    /// are so only apart from what the chain leaves out (their per-call annotations, see
    /// [`crate::annotation`]; a redaction, after a reload): the caller replaces the held copies of
    /// those with the new ones, and the view's copies take their annotations.
    ///
    /// An item is recognised by its wire fingerprint when both copies have one (the same wire JSON
    /// at the same place: see [`compact_core::model::WireDigest`]) and their metadata agree, else by
    /// value, else by chain link (for items whose values differ only in what the chain bytes
    /// leave out), else by value apart from annotations and the string shape of their content
    /// ([`crate::annotation::equivalent`]: a link logged before annotations were left out of the
    /// chain covers them; a client may send a marked string as a block). A held item recognised
    /// by value adopts the new copy's fingerprint, so after a restart (items read back from the
    /// log have none) only the first call compares values.
    pub fn match_prefix(&mut self, items: &[Item]) -> (usize, Vec<usize>) {
        let mut tip = ChainHash::GENESIS;
        let mut differing = Vec::new();
        for (i, (held, new)) in self.received.iter_mut().zip(items).enumerate() {
            let same_wire = held.wire_digest().is_some()
                && held.wire_digest() == new.wire_digest()
                && same_meta(&held.meta, &new.meta);
            if !same_wire {
                if *held == *new {
                    if let Some(d) = new.wire_digest() {
                        held.set_wire_digest(d);
                    }
                } else if tip.next_item(new) == self.chain[i] || equivalent(held, new) {
                    differing.push(i);
                } else {
                    return (i, differing);
                }
            }
            tip = self.chain[i];
        }
        (self.received.len().min(items.len()), differing)
    }

    /// Recomputes the call-id index of the view.
    pub fn index_calls(&mut self) {
        self.call_ids = call_ids(&self.view.items);
    }

    /// Rebuilds a session's state from its log.
    pub fn load(store: &dyn Store, session: &str) -> Result<SessionState, SessionError> {
        let records = store.read(session, 0)?;
        let version = records.last().map_or(store.version(session)?, |s| s.seq);
        let mut state = SessionState {
            version,
            fresh: true,
            ..SessionState::default()
        };
        let mut by_hash: HashMap<ChainHash, (ChainHash, &Item)> = HashMap::new();
        let mut tip: Option<ChainHash> = None;
        let mut views: Vec<&ViewRecord> = Vec::new();
        for stored in &records {
            match &stored.record {
                Record::Item(r) if r.source == ItemSource::Received => {
                    state.logged.insert(r.hash);
                    by_hash.insert(r.hash, (r.parent, &r.item));
                    tip = Some(r.hash);
                }
                Record::Item(_) => {}
                Record::View(v) => views.push(v),
                Record::Event(e) => {
                    if let Some(t) = state.apply_event(e) {
                        tip = Some(t);
                    }
                }
            }
        }
        let inconsistent = |message: String| SessionError::Inconsistent {
            session: session.to_owned(),
            message,
        };
        // The current branch: from the last tip back to the first item.
        let mut chain = Vec::new();
        let mut items = Vec::new();
        let mut at = tip.unwrap_or(ChainHash::GENESIS);
        while at != ChainHash::GENESIS {
            let (parent, item) = by_hash
                .get(&at)
                .ok_or_else(|| inconsistent(format!("chain link {at} is not in the log")))?;
            chain.push(at);
            items.push((*item).clone());
            at = *parent;
            if chain.len() > by_hash.len() {
                return Err(inconsistent("the chain has a cycle".to_owned()));
            }
        }
        chain.reverse();
        items.reverse();
        share_envelopes(&mut items);
        let position: HashMap<ChainHash, usize> =
            chain.iter().enumerate().map(|(i, h)| (*h, i)).collect();
        // The newest view of a prefix of this branch, then the items received after it.
        let mut view_items: Vec<Item> = Vec::new();
        let mut covers = 0;
        if let Some(view) = views
            .iter()
            .rev()
            .find(|v| position.get(&v.tip) == Some(&(v.covers.wrapping_sub(1))))
        {
            for entry in &view.entries {
                match entry {
                    ViewEntry::Inline(item) => view_items.push(item.clone()),
                    ViewEntry::Logged(h) => {
                        let (_, item) = by_hash.get(h).ok_or_else(|| {
                            inconsistent(format!("view names {h}, not in the log"))
                        })?;
                        view_items.push((*item).clone());
                    }
                }
            }
            covers = view.covers;
        }
        view_items.extend(items.iter().skip(covers).cloned());
        share_envelopes(&mut view_items);
        state.chain = chain;
        state.received = items;
        let mut view = Conversation {
            items: view_items,
            ..Conversation::default()
        };
        view.renumber_turns();
        state.memory_block = crate::memory::block_in(&view);
        state.view = Arc::new(view);
        state.index_calls();
        Ok(state)
    }
}

impl SessionState {
    /// Takes in what an event of the log says about the state (facts, what the provider holds,
    /// a learned window, calibration, the last call's model); for a `compact.sent` event, the
    /// chain tip it was sent at.
    fn apply_event(&mut self, e: &Event) -> Option<ChainHash> {
        if let Some(change) = crate::memory::event_change(e) {
            self.memory.apply(&change);
        }
        if let Some(held) = ProviderHeld::from_event(e) {
            self.provider = held;
        }
        match e.kind {
            EventKind::Recovery => {
                if let Some(limit) = e
                    .get("limit")
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|l| usize::try_from(l).ok())
                {
                    self.learn_window(limit);
                }
                None
            }
            EventKind::Calibration => {
                let model = e.get("model").and_then(|v| v.as_str());
                let ratio = e.get("ratio").and_then(serde_json::Value::as_f64);
                if let (Some(model), Some(ratio)) = (model, ratio) {
                    self.calibration.set(model, ratio);
                }
                None
            }
            EventKind::Sent => {
                self.prepared = true;
                if let Some(m) = e.get("model").and_then(|v| v.as_str()) {
                    m.clone_into(&mut self.model);
                }
                e.get("tip")
                    .and_then(|v| v.as_str())
                    .and_then(ChainHash::parse)
            }
            _ => None,
        }
    }

    /// Brings a state that is behind the log up to date with the records other writers appended
    /// after [`SessionState::version`] (another process sharing the store: a second proxy behind
    /// a load balancer, a hook). Reads only those records: events are taken in as a reload would
    /// (a usage recorded elsewhere leaves the view, and the next call's fast path, as they were);
    /// new items extend the chain and the view, or a new view record replaces it, and the next
    /// call recounts. What cannot be rebuilt from the new records alone (a branch back to items
    /// the state no longer holds, a view of an older prefix) is reloaded from the whole log.
    pub fn catch_up(&mut self, store: &dyn Store, session: &str) -> Result<(), SessionError> {
        let records = store.read(session, self.version)?;
        let contiguous = records.first().is_some_and(|r| r.seq == self.version + 1)
            && records.windows(2).all(|w| w[1].seq == w[0].seq + 1);
        if !contiguous {
            // Nothing new where something was expected, or a gap: the log is not the one held.
            return self.reload(store, session);
        }
        let old_tip = self.chain.last().copied().unwrap_or(ChainHash::GENESIS);
        let mut tip = old_tip;
        let mut new_items: HashMap<ChainHash, (ChainHash, &Item)> = HashMap::new();
        let mut view: Option<&ViewRecord> = None;
        let mut events_only = true;
        for stored in &records {
            match &stored.record {
                Record::Item(r) if r.source == ItemSource::Received => {
                    events_only = false;
                    self.logged.insert(r.hash);
                    new_items.insert(r.hash, (r.parent, &r.item));
                    tip = r.hash;
                }
                Record::Item(_) => {}
                Record::View(v) => {
                    events_only = false;
                    view = Some(v);
                }
                Record::Event(e) => {
                    if let Some(t) = self.apply_event(e) {
                        tip = t;
                    }
                }
            }
        }
        let version = records.last().map_or(self.version, |r| r.seq);
        if events_only && tip == old_tip {
            self.version = version;
            self.stale = false;
            return Ok(());
        }
        // The branch now current: back from the new tip through the new items to a link of the
        // chain held (or the start).
        let mut added: Vec<(ChainHash, &Item)> = Vec::new();
        let mut at = tip;
        while at != ChainHash::GENESIS && self.chain.last().is_none_or(|&t| t != at) {
            match new_items.get(&at) {
                Some(&(parent, item)) => {
                    added.push((at, item));
                    at = parent;
                }
                None => break,
            }
            if added.len() > new_items.len() {
                return self.reload(store, session);
            }
        }
        let keep = if at == ChainHash::GENESIS {
            0
        } else {
            match self.chain.iter().rposition(|&h| h == at) {
                Some(i) => i + 1,
                // A link of an older branch: only the whole log knows its items.
                None => return self.reload(store, session),
            }
        };
        added.reverse();
        let extends = keep == self.chain.len();
        let mut appended: Vec<Item> = added.iter().map(|(_, item)| (*item).clone()).collect();
        share_envelopes(&mut appended);
        self.chain.truncate(keep);
        self.chain.extend(added.iter().map(|(h, _)| *h));
        self.received.truncate(keep);
        self.received.extend(appended.iter().cloned());
        let position_ok = |v: &ViewRecord| {
            v.covers
                .checked_sub(1)
                .is_some_and(|i| self.chain.get(i) == Some(&v.tip))
        };
        match view.filter(|v| position_ok(v)) {
            Some(v) => {
                let Some(items) = self.view_of(v, &new_items) else {
                    return self.reload(store, session);
                };
                let mut conv = Conversation {
                    items,
                    ..Conversation::default()
                };
                conv.renumber_turns();
                self.view = Arc::new(conv);
            }
            None if extends && view.is_none() => {
                let conv = Arc::make_mut(&mut self.view);
                conv.items.extend(appended);
                conv.renumber_turns();
            }
            // A branch, or a view of a prefix older than the state's.
            None => return self.reload(store, session),
        }
        self.memory_block = crate::memory::block_in(&self.view);
        self.repaired = None;
        self.repair_hides_only = false;
        self.index_calls();
        self.version = version;
        self.fresh = true;
        self.stale = false;
        Ok(())
    }

    /// The items of view record `v` (of a prefix of the chain held) followed by the items received
    /// after it; `None` when it names an item neither held nor among `new_items`.
    fn view_of(
        &self,
        v: &ViewRecord,
        new_items: &HashMap<ChainHash, (ChainHash, &Item)>,
    ) -> Option<Vec<Item>> {
        let by_hash: HashMap<ChainHash, &Item> = self
            .chain
            .iter()
            .copied()
            .zip(self.received.iter())
            .collect();
        let mut items = Vec::with_capacity(v.entries.len() + self.received.len());
        for entry in &v.entries {
            match entry {
                ViewEntry::Inline(item) => items.push(item.clone()),
                ViewEntry::Logged(h) => {
                    let item = by_hash
                        .get(h)
                        .copied()
                        .or_else(|| new_items.get(h).map(|(_, item)| *item))?;
                    items.push(item.clone());
                }
            }
        }
        items.extend(self.received.iter().skip(v.covers).cloned());
        share_envelopes(&mut items);
        Some(items)
    }

    /// Replaces the state with one rebuilt from the whole log; what the log does not hold (the
    /// secrets this process found, the growth of the last calls) is kept.
    fn reload(&mut self, store: &dyn Store, session: &str) -> Result<(), SessionError> {
        let mut fresh = SessionState::load(store, session)?;
        fresh.known_secrets = std::mem::take(&mut self.known_secrets);
        fresh.redactor = self.redactor.take();
        fresh.growth = std::mem::take(&mut self.growth);
        *self = fresh;
        Ok(())
    }
}

/// The ids of the model-visible tool calls among `items`.
pub(crate) fn call_ids(items: &[Item]) -> HashSet<String> {
    items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .filter_map(|i| match i.body() {
            ItemBody::ToolCall(c) => Some(c.call_id.clone()),
            _ => None,
        })
        .collect()
}

/// The view record for `view`, standing for the received items `received` (chain `chain`): items
/// equal to a received item with the same id are named by their chain link, others stored inline.
pub(crate) fn view_record(
    view: &Conversation,
    received: &[Item],
    chain: &[ChainHash],
    trigger: &str,
) -> ViewRecord {
    let by_id: HashMap<&str, usize> = received
        .iter()
        .enumerate()
        .map(|(i, item)| (item.meta.id.as_str(), i))
        .collect();
    let entries = view
        .items
        .iter()
        .map(|item| match by_id.get(item.meta.id.as_str()) {
            Some(&i) if same_but_turn(&received[i], item) => ViewEntry::Logged(chain[i]),
            _ => ViewEntry::Inline(item.clone()),
        })
        .collect();
    ViewRecord {
        tip: chain.last().copied().unwrap_or(ChainHash::GENESIS),
        covers: received.len(),
        trigger: trigger.to_owned(),
        entries,
    }
}

/// Equal in everything the log keeps (the turn index is derived from position).
fn same_but_turn(a: &Item, b: &Item) -> bool {
    let (m, n) = (&a.meta, &b.meta);
    a.body() == b.body()
        && m.id == n.id
        && m.protected == n.protected
        && m.visibility == n.visibility
        && m.timestamp == n.timestamp
        && m.origin == n.origin
        && m.envelope == n.envelope
}

/// Equal metadata, the envelope aside (the wire fingerprint covers the message it describes).
/// (Destructured so that a new metadata field cannot be forgotten here.)
pub(crate) fn same_meta(a: &ItemMeta, b: &ItemMeta) -> bool {
    let ItemMeta {
        id,
        protected,
        visibility,
        turn,
        timestamp,
        origin,
        envelope: _,
    } = a;
    *id == b.id
        && *protected == b.protected
        && *visibility == b.visibility
        && *turn == b.turn
        && *timestamp == b.timestamp
        && *origin == b.origin
}

/// True when normalisation's only repair was hiding what a provider compaction supersedes.
pub(crate) fn hides_only(diagnostics: &[compact_core::normalize::Diagnostic]) -> bool {
    !diagnostics.is_empty()
        && diagnostics.iter().all(|d| {
            matches!(
                d,
                compact_core::normalize::Diagnostic::HidSupersededByProviderCompaction { .. }
            )
        })
}
