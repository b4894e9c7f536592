//! [`CompactManager`]: opening, the per-session locks, and [`CompactManager::preflight`], the call
//! made before every model call. Recovery, usage, truncation and recall live in their own files.
//!
//! # Incremental preflight
//! Hosts resend their whole history on every call. The manager keeps, per session, the chain of the
//! items it last received ([`crate::chain`]) and the view it sent for them. A request whose first
//! items are exactly those items (compared by value; the chain decides for anything else) is an
//! *extension*: its new items are appended to the view sent last time, so what goes out starts with
//! exactly the items sent last time (the provider's prompt cache keeps hitting) and only the new
//! items are counted. Per-call annotations (`cache_control`, which clients move to the newest
//! message on every call) are not history: a moved one is still an extension, and the items sent
//! again take the request's current annotations and lose the old ones ([`crate::annotation`]).
//! Compaction runs only when the view plus the new items reaches the trigger, and it compacts that
//! view (folding its checkpoint), so nothing is summarised twice. A request that does not extend
//! the last one (history edited, forked, rolled back) is a *branch*: it is logged as such and
//! compacted from scratch, never mixed with the previous view.

pub(crate) mod held;

use crate::archive::Archive;
use crate::config::SessionConfig;
use crate::error::SessionError;
use crate::event::Event;
use crate::export::ExportQueue;
use crate::limits::{check_request, check_session_id, CONFLICT_RETRIES};
use crate::provider::ProviderHeld;
use crate::record::{Record, ViewEntry};
use crate::state::{call_ids, hides_only, SessionState};
use crate::store::{Store, StoreError};
use compact_core::model::{Conversation, Format, ItemMeta};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::plan::Action;
use compact_core::policy::{Decision, Policy};
use compact_engine::{CompactError, Compaction, Compactor, Report};
use held::UsageFlusher;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// What to send, and what preflight did.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The request to send (encode it with `compact_formats::wire::encode`). Shared with the
    /// session's state, so handing it out costs no copy; drop it once sent, and the next preflight
    /// extends it in place (while it is still held, the next preflight extends a copy).
    pub conversation: Arc<Conversation>,
    /// What preflight decided and did.
    pub report: PreflightReport,
    /// The events of this call (also in the session log).
    pub events: Vec<Event>,
}

impl Prepared {
    /// Whether the request goes out as the caller gave it (no compaction, and every item as it
    /// came), so a host can send its own bytes or objects instead of encoding the conversation.
    ///
    /// Items that carry the same wire fingerprint (decoded from the same wire JSON at the same
    /// place, body unchanged since) and equal metadata are equal without reading their bodies; the
    /// others are compared by value.
    pub fn sends_request_as_is(&self, request: &Conversation) -> bool {
        let (sent, asked) = (&self.conversation.items, &request.items);
        self.report.compaction.is_none()
            && sent.len() == asked.len()
            && sent.iter().zip(asked).all(|(a, b)| {
                let same_wire = a.wire_digest().is_some() && a.wire_digest() == b.wire_digest();
                (same_wire && same_meta(&a.meta, &b.meta)) || a == b
            })
    }
}

/// `a == b`, but an envelope shared by both (the same `Arc`, as an item and its copy in the view
/// share it) is equal without comparing its fields: the common case, and a walk of every
/// message-level field otherwise.
fn same_meta(a: &ItemMeta, b: &ItemMeta) -> bool {
    crate::state::same_meta(a, b)
        && match (&a.envelope, &b.envelope) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
            (None, None) => true,
            _ => false,
        }
}

/// What one preflight decided and did.
#[derive(Debug, Clone, PartialEq)]
pub struct PreflightReport {
    /// The decision taken on the effective count.
    pub decision: Decision,
    /// Our count of the request sent (system prompt, tool declarations, every model-visible item,
    /// the pending input and the provider's framing: `TokenCounter::total`).
    pub tokens: usize,
    /// Our count of the request before any compaction, times the calibration ratio: what the
    /// decision was taken on.
    pub effective_tokens: usize,
    /// The calibration ratio used.
    pub ratio: f64,
    /// Items of the request not seen in the session's last request.
    pub new_items: usize,
    /// Leading items of the request sent that are identical to the request sent last time.
    pub reused_items: usize,
    /// True when the request did not extend the last one (a branch, compacted from scratch).
    pub branched: bool,
    /// True when the request was counted whole (a first call, a branch, a repair, a new provider
    /// compaction, changed tools) rather than its new items on top of the last count.
    pub counted_whole: bool,
    /// True when the latest user message asked for compaction.
    pub manual: bool,
    /// The compaction report, when a compaction ran.
    pub compaction: Option<Report>,
    /// Non-fatal problems.
    pub warnings: Vec<String>,
}

/// The session runtime: between an agent loop and its model. See the crate documentation.
///
/// Calls on different sessions run in parallel; calls on one session are serialised by a
/// per-session lock held for the whole call (compaction included).
pub struct CompactManager {
    config: SessionConfig,
    store: Arc<dyn Store>,
    archive: Option<Arc<dyn Archive>>,
    exports: Option<Arc<ExportQueue>>,
    sessions: Mutex<Sessions>,
    /// Writes held usage records ([`crate::usage`]), started at the first usage report (`None`
    /// inside when no thread could be started).
    flusher: OnceLock<Option<UsageFlusher>>,
}

/// A session's slot, shared by the calls on it (`None` until loaded from the store).
pub(crate) type SlotHandle = Arc<Mutex<Option<SessionState>>>;

/// The sessions held in memory: each one's slot and when it was last used (a tick of this map).
#[derive(Default)]
struct Sessions {
    slots: HashMap<String, (SlotHandle, u64)>,
    tick: u64,
    /// Per session: when its last preflight or usage report ended, and whether an idle check
    /// ran since (see [`CompactManager::quiet_sessions`]). Dropped with the session's slot.
    activity: HashMap<String, Activity>,
}

/// The last call on a session, for idle-time compaction ([`crate::idle`]).
#[derive(Debug, Clone, Copy)]
struct Activity {
    last_call: std::time::Instant,
    checked: bool,
}

impl Sessions {
    /// Drops the least recently used idle sessions (no call holds their slot) until at most
    /// seven eighths of `cap` remain, so that the scan runs once per `cap / 8` new sessions.
    fn evict(&mut self, cap: usize) {
        if self.slots.len() <= cap {
            return;
        }
        let keep = cap - cap / 8;
        let mut idle: Vec<(u64, String)> = self
            .slots
            .iter()
            .filter(|(_, (slot, _))| Arc::strong_count(slot) == 1)
            .map(|(id, (_, used))| (*used, id.clone()))
            .collect();
        idle.sort_unstable();
        let excess = self.slots.len().saturating_sub(keep);
        for (_, id) in idle.into_iter().take(excess) {
            self.slots.remove(&id);
            self.activity.remove(&id);
        }
    }
}

impl Drop for CompactManager {
    /// Writes the usage records still held (the flusher's thread does, and ends).
    fn drop(&mut self) {
        drop(self.flusher.take());
    }
}

impl std::fmt::Debug for CompactManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactManager")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// A locked session slot (`None` until loaded from the store).
pub(crate) type Slot<'a> = MutexGuard<'a, Option<SessionState>>;

impl CompactManager {
    /// A manager with `config` over `store`. Fails when the policy is invalid.
    pub fn open(config: SessionConfig, store: Arc<dyn Store>) -> Result<Self, SessionError> {
        config.policy.validate().map_err(CompactError::from)?;
        Ok(CompactManager {
            config,
            store,
            archive: None,
            exports: None,
            sessions: Mutex::new(Sessions::default()),
            flusher: OnceLock::new(),
        })
    }

    /// The thread writing held usage records, started on first use.
    pub(crate) fn usage_flusher(&self) -> Option<&UsageFlusher> {
        self.flusher
            .get_or_init(|| {
                UsageFlusher::start(
                    Arc::clone(&self.store),
                    self.config.redactor.clone(),
                    self.exports.clone(),
                )
            })
            .as_ref()
    }

    /// The thread writing held usage records, when it was started.
    pub(crate) fn held_usage_flusher(&self) -> Option<&UsageFlusher> {
        self.flusher.get().and_then(Option::as_ref)
    }

    /// The same manager, archiving every compaction (the full pre-compaction transcript and the
    /// checkpoint, after the log has them) in `archive`. A failed archive write is a warning in the
    /// report, never a failed call.
    pub fn with_archive(mut self, archive: Arc<dyn Archive>) -> Self {
        self.archive = Some(archive);
        self
    }

    /// The same manager, exporting every event it logs through `exports` (console, JSONL, a
    /// callback; see [`crate::export`]). Exporting never slows or fails a call.
    pub fn with_exports(mut self, exports: Arc<ExportQueue>) -> Self {
        self.exports = Some(exports);
        self
    }

    /// The export queue, when there is one (its counts of exported and dropped events).
    pub fn exports(&self) -> Option<&Arc<ExportQueue>> {
        self.exports.as_ref()
    }

    /// The archive, when there is one.
    pub fn archive(&self) -> Option<&Arc<dyn Archive>> {
        self.archive.as_ref()
    }

    /// The settings.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The session's lock, created on first use.
    pub(crate) fn handle(&self, session: &str) -> SlotHandle {
        let mut map = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.tick += 1;
        let tick = map.tick;
        let slot = match map.slots.get_mut(session) {
            Some((slot, used)) => {
                *used = tick;
                Arc::clone(slot)
            }
            None => {
                let slot = Arc::new(Mutex::new(None));
                map.slots
                    .insert(session.to_owned(), (Arc::clone(&slot), tick));
                slot
            }
        };
        // The slot just handed out is held, so it is never among the evicted.
        map.evict(self.config.max_cached_sessions.max(1));
        slot
    }

    /// The session's lock when the manager holds it, without creating it or marking it used.
    pub(crate) fn held_handle(&self, session: &str) -> Option<SlotHandle> {
        let map = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.slots.get(session).map(|(slot, _)| Arc::clone(slot))
    }

    /// Notes that a call on `session` just ended (the idle clock starts again).
    pub(crate) fn note_call(&self, session: &str) {
        let mut map = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !map.slots.contains_key(session) {
            return;
        }
        let now = std::time::Instant::now();
        map.activity.insert(
            session.to_owned(),
            Activity {
                last_call: now,
                checked: false,
            },
        );
    }

    /// The sessions held in memory whose last preflight or usage report ended at least `quiet`
    /// ago and that no idle check has looked at since; each is marked checked (the next call on
    /// it clears the mark). What [`crate::IdleCompactor`] polls.
    pub fn quiet_sessions(&self, quiet: std::time::Duration) -> Vec<String> {
        let mut map = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = std::time::Instant::now();
        let mut quiet_ones = Vec::new();
        for (id, a) in &mut map.activity {
            if !a.checked && now.saturating_duration_since(a.last_call) >= quiet {
                a.checked = true;
                quiet_ones.push(id.clone());
            }
        }
        quiet_ones.sort_unstable();
        quiet_ones
    }

    /// Number of sessions whose state is held in memory (at most
    /// [`SessionConfig::max_cached_sessions`], plus those in use).
    pub fn cached_sessions(&self) -> usize {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .slots
            .len()
    }

    /// True when this manager holds `session`'s state in memory (a caller with several managers
    /// over one store, one per window, sends a manual or reviewed compaction to the one that holds
    /// the session, so that no other writer makes its next call meet a conflict).
    pub fn holds(&self, session: &str) -> bool {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .slots
            .contains_key(session)
    }

    /// Drops the in-memory state of `session` unless a call is using it (its next call reloads it
    /// from the store); true when it was dropped. Nothing is lost: the state is a cache of the log.
    pub fn evict(&self, session: &str) -> bool {
        // Its held usage records are written first (a failure leaves them held: not evicted).
        if self.flush_session(session).is_err() {
            return false;
        }
        let mut map = self
            .sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match map.slots.get(session) {
            Some((slot, _)) if Arc::strong_count(slot) == 1 => {
                map.slots.remove(session);
                map.activity.remove(session);
                true
            }
            _ => false,
        }
    }

    /// Locks a slot. A slot poisoned by a panic is emptied: its state is reloaded from the log.
    pub(crate) fn lock(handle: &Mutex<Option<SessionState>>) -> Slot<'_> {
        match handle.lock() {
            Ok(guard) => guard,
            Err(poisoned) => {
                handle.clear_poison();
                let mut guard = poisoned.into_inner();
                *guard = None;
                guard
            }
        }
    }

    /// The state of an existing session, loaded from the log when not in memory.
    pub(crate) fn existing<'a>(
        &self,
        session: &str,
        slot: &'a mut Slot<'_>,
    ) -> Result<&'a mut SessionState, SessionError> {
        check_session_id(session)?;
        if let Some(state) = slot.as_mut() {
            // Another process sharing the store (a second proxy behind a load balancer) may have
            // appended since: one indexed read says, and only what it appended is read.
            let version = match self.store.version(session) {
                Ok(v) => v,
                Err(StoreError::UnknownSession(s)) => {
                    **slot = None;
                    return Err(SessionError::UnknownSession(s));
                }
                Err(e) => return Err(e.into()),
            };
            if state.stale || version != state.logged_version() {
                let caught_up = if state.held.is_empty() {
                    state.catch_up(self.store.as_ref(), session)
                } else {
                    // Usage records held: made again on top of what the others appended.
                    held::rebase_held(
                        self.store.as_ref(),
                        self.config.redactor.as_deref(),
                        session,
                        state,
                    )
                };
                if let Err(e) = caught_up {
                    **slot = None;
                    return Err(e);
                }
            }
        }
        if slot.is_none() {
            let state = SessionState::load(self.store.as_ref(), session).map_err(|e| match e {
                SessionError::Store(StoreError::UnknownSession(s)) => {
                    SessionError::UnknownSession(s)
                }
                other => other,
            })?;
            **slot = Some(state);
        }
        slot.as_mut()
            .ok_or_else(|| SessionError::UnknownSession(session.to_owned()))
    }

    /// Appends `records` after the state's version, in one transaction with the usage records the
    /// state holds (first: their sequence numbers were reserved); on success the state's version
    /// moves on. On a conflict (another writer) the state is marked stale (the next call catches
    /// up) and keeps its held records.
    pub(crate) fn append(
        &self,
        session: &str,
        state: &mut SessionState,
        records: Vec<Record>,
    ) -> Result<(), SessionError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut records = if state.held.is_empty() {
            records
        } else {
            let mut all = state.held_log();
            all.extend(records);
            all
        };
        self.redact_records(session, state, &mut records);
        // The events are exported once the log holds them (redacted as logged).
        let events = events_to_export(&records, self.exports.is_some());
        match self.store.append(session, state.logged_version(), records) {
            Ok(version) => {
                state.held.clear();
                state.version = version;
                if let Some(exports) = &self.exports {
                    exports.emit(session, &events);
                }
                Ok(())
            }
            Err(e) => {
                state.stale |= matches!(e, StoreError::Conflict { .. });
                Err(e.into())
            }
        }
    }

    /// Redacts the secrets of records about to be logged ([`SessionConfig::redactor`]); the
    /// session id salts the placeholders. Secrets found in the items are remembered for the
    /// session, so that text derived from them (a reference stub's list of names, a checkpoint)
    /// loses them too, even without the context that gave them away.
    fn redact_records(&self, session: &str, state: &mut SessionState, records: &mut [Record]) {
        let Some(base) = self.config.redactor.as_ref() else {
            return;
        };
        let mut grew = false;
        // Per item record: did the built-in scan find anything (the common answer is no).
        let mut holds: Vec<bool> = Vec::with_capacity(records.len());
        for record in records.iter() {
            if let Record::Item(i) = record {
                let found = base.secrets(&i.item);
                holds.push(!found.is_empty());
                for found in found {
                    if !state.known_secrets.contains(&found) {
                        state.known_secrets.push(found);
                        grew = true;
                    }
                }
            }
        }
        if grew {
            state.redactor = Some(Arc::new(base.with_known(&state.known_secrets)));
        }
        let r = state.redactor.as_ref().unwrap_or(base);
        let mut holds = holds.into_iter();
        for record in records {
            match record {
                Record::Item(i) => {
                    // An item the scan found clean needs a second look only for secrets the
                    // session saw before (in other items).
                    let found = holds.next().unwrap_or(true);
                    if found || state.redactor.is_some() {
                        r.redact_item(session, &mut i.item);
                    }
                }
                Record::View(v) => {
                    for entry in &mut v.entries {
                        if let ViewEntry::Inline(item) = entry {
                            r.redact_item(session, item);
                        }
                    }
                }
                // An event the manager redacted for its caller is searched again only when this
                // append's items taught the redactor a new secret.
                Record::Event(e) if grew || !e.is_redacted() => redact_event(r, session, e),
                Record::Event(_) => {}
            }
        }
    }

    /// Redacts the secrets of events handed to the caller (the same redaction as the log's).
    pub(crate) fn redact_events(&self, session: &str, state: &SessionState, events: &mut [Event]) {
        redact_for_caller(self.config.redactor.as_deref(), state, session, events);
    }

    /// The model key of a request: its `model` field, else the policy's model, else `default`.
    pub(crate) fn model_key(&self, request: &Conversation) -> String {
        request
            .extra
            .get("model")
            .and_then(|m| m.as_str())
            .map(str::to_owned)
            .or_else(|| self.config.policy.model.clone())
            .unwrap_or_else(|| "default".to_owned())
    }

    /// A compactor for `policy`.
    /// A compactor for `session` under `policy`; its summariser sees the session's text redacted
    /// when [`SessionConfig::redact_summarizer_input`] is set.
    pub(crate) fn compactor(
        &self,
        session: &str,
        policy: Policy,
    ) -> Result<Compactor, CompactError> {
        let summarizer: Arc<dyn compact_engine::Summarizer> =
            match (&self.config.redactor, self.config.redact_summarizer_input) {
                (Some(redactor), true) => Arc::new(crate::redacting::RedactingSummarizer::new(
                    Arc::clone(&self.config.summarizer),
                    Arc::clone(redactor),
                    session,
                )),
                _ => Arc::clone(&self.config.summarizer),
            };
        Compactor::new(policy, summarizer, self.config.counter)
    }

    /// What was sent last and its count, recounted (and normalised) when the state was just loaded
    /// from the log, whose count is not known yet: a manual or reviewed compaction can then run on a
    /// session this process has not served (`compactctl sessions compact`).
    pub(crate) fn sent_now(&self, state: &mut SessionState) -> (Arc<Conversation>, usize) {
        if state.fresh {
            let rules = ProviderRules::for_format(state.view.format.unwrap_or(Format::OpenAiChat));
            let normalized = normalize(&state.view, &rules);
            if !normalized.diagnostics.is_empty() {
                state.repair_hides_only = hides_only(&normalized.diagnostics);
                state.repaired = Some(Arc::new(normalized.conversation));
            }
            state.sent_tokens = self.config.counter.total(state.sent());
        }
        (Arc::clone(state.sent()), state.sent_tokens)
    }

    /// The session's policy: the configured one, its window lowered to what a provider's overflow
    /// error stated ([`SessionState::provider_window`]) once one did, so that the overflow does not
    /// happen again.
    pub(crate) fn policy_for(&self, state: &SessionState) -> Cow<'_, Policy> {
        match state.provider_window {
            Some(window) if window < self.config.policy.max_context_tokens => {
                let mut policy = self.config.policy.clone();
                policy.max_context_tokens = window;
                Cow::Owned(policy)
            }
            _ => Cow::Borrowed(&self.config.policy),
        }
    }

    /// The policy compaction runs with: the session's ([`CompactManager::policy_for`]), under its
    /// calibration `ratio`: when the provider counts more than we do, the window is shrunk by the
    /// ratio so that the compacted request fits the provider's count (a ratio below 1 is not used to
    /// grow the window: the reserved output and buffer are real tokens).
    pub(crate) fn calibrated_policy(&self, state: &SessionState, ratio: f64) -> Policy {
        let mut policy = self.policy_for(state).into_owned();
        if ratio > 1.0 {
            policy.max_context_tokens = (policy.max_context_tokens as f64 / ratio).floor() as usize;
        }
        policy
    }

    /// Prepares `request` for sending in session `session` (created on first use): counts it,
    /// decides, compacts when due, normalises, logs every new item and event, and returns what to
    /// send. See the module documentation for how a resent history is recognised.
    ///
    /// Errors: an invalid session id or an empty or malformed request (nothing is logged); a store
    /// failure (nothing is logged); a request over the usable budget that cannot be compacted (its
    /// items are logged first).
    pub fn preflight(
        &self,
        session: &str,
        request: &Conversation,
    ) -> Result<Prepared, SessionError> {
        check_session_id(session)?;
        check_request(request)?;
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        // A log this call creates is empty: its state needs no read of it.
        if slot.is_none() && self.store.create(session)? {
            *slot = Some(SessionState::new_session(session)?);
        }
        // Another writer appending between the version check and this call's append (the same
        // session's turns served by two processes at once) costs a catch-up and a second try.
        let mut conflicts = 0;
        let prepared = loop {
            let state = self.existing(session, &mut slot)?;
            match self.preflight_locked(session, state, request) {
                Err(SessionError::Store(StoreError::Conflict { .. }))
                    if conflicts < CONFLICT_RETRIES =>
                {
                    conflicts += 1;
                }
                other => break other,
            }
        };
        drop(slot);
        self.note_call(session);
        prepared
    }
}

/// Redacts `events` with the session's redactor (`base` grown by the secrets its items taught it),
/// the same redaction as the log's, and marks them redacted so that logging them does not search
/// them again. Nothing without a redactor.
pub(crate) fn redact_for_caller<'a>(
    base: Option<&compact_core::redact::Redactor>,
    state: &SessionState,
    session: &str,
    events: impl IntoIterator<Item = &'a mut Event>,
) {
    if let Some(base) = base {
        let r = state.redactor.as_deref().unwrap_or(base);
        for e in events {
            redact_event(r, session, e);
            e.mark_redacted();
        }
    }
}

/// Redacts the string values of an event's data.
fn redact_event(r: &compact_core::redact::Redactor, session: &str, e: &mut Event) {
    for (_, v) in e.data.iter_mut() {
        r.redact_value(session, v);
    }
}

/// Leading items equal in both.
impl CompactManager {
    /// After an append whose last two records are a new view and its event: archives the
    /// compaction (when an archive is set) and makes the view the one sent next. Returns the
    /// archive's warning, if its write failed (the log already holds everything).
    pub(crate) fn adopt_view(
        &self,
        session: &str,
        state: &mut SessionState,
        view: &Conversation,
        tokens: usize,
    ) -> Option<String> {
        let warning = crate::archive::after_compaction(
            self.archive().map(|a| a.as_ref()),
            self.store.as_ref(),
            state
                .redactor
                .as_deref()
                .or(self.config.redactor.as_deref()),
            session,
            state.version - 1,
            &state.received,
            view,
        );
        state.call_ids = call_ids(&view.items);
        state.view = Arc::new(view.clone());
        state.repaired = None;
        state.repair_hides_only = false;
        state.sent_tokens = tokens;
        warning
    }
}

pub(crate) fn items_compressed(done: &Compaction) -> usize {
    done.plan
        .items
        .iter()
        .filter(|p| !matches!(p.action, Action::Keep))
        .count()
}

impl CompactManager {
    /// What the provider holds of `session` by the manager's state (loaded from the log when the
    /// manager does not hold the session).
    pub fn provider_held(&self, session: &str) -> Result<Option<ProviderHeld>, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        Ok(state.provider.clone())
    }
}

/// The events among `records`, copied for the export queue when there is one (none otherwise).
pub(crate) fn events_to_export(records: &[Record], exporting: bool) -> Vec<Event> {
    if !exporting {
        return Vec::new();
    }
    records
        .iter()
        .filter_map(|r| match r {
            Record::Event(e) => Some(e.clone()),
            _ => None,
        })
        .collect()
}
