//! Usage records held until the session's next append, and the thread that writes them when no
//! next append comes (`crate::usage` drives them from `record_usage`; see its documentation).
//! Here, under the manager, because the manager owns the flusher and catches held records up
//! after another writer's append.

use super::{events_to_export, redact_for_caller, CompactManager, Slot, SlotHandle};
use crate::calibration::{Calibration, CalibrationUpdate};
use crate::error::SessionError;
use crate::event::{CalibrationEvent, Event, EventData, EventKind};
use crate::export::ExportQueue;
use crate::limits::CONFLICT_RETRIES;
use crate::provider::ProviderHeld;
use crate::record::Record;
pub(crate) use crate::reported::CallFigures;
use crate::reported::{HeldUsage, Usage};
use crate::state::SessionState;
use crate::store::{Store, StoreError};
use compact_core::redact::Redactor;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a usage's records may be held before they are written alone (when the session's next
/// append has not carried them by then): what a crash of the process can lose is the usage records
/// of each session's last answered call younger than this.
pub(crate) const USAGE_FLUSH_AFTER: Duration = Duration::from_secs(1);

/// When the flusher wakes for a session due, it writes with it every session due within this
/// much more (their records held a little less long), all in one store call: quiet sessions are
/// written a few to a transaction rather than one each.
pub(crate) const USAGE_FLUSH_GATHER: Duration = Duration::from_millis(250);

/// Usage reports held at most per session before they are written at once (a host reporting usage
/// without preparing calls).
pub(crate) const MAX_HELD_USAGES: usize = 16;

impl SessionState {
    /// Records held, not yet in the log.
    pub(crate) fn held_records(&self) -> u64 {
        self.held.iter().map(|h| h.records.len() as u64).sum()
    }

    /// The version of the log this state was built from: [`SessionState::version`] less the
    /// records held.
    pub(crate) fn logged_version(&self) -> u64 {
        self.version.saturating_sub(self.held_records())
    }

    /// The held records (to be written before anything else is appended), cloned.
    pub(crate) fn held_log(&self) -> Vec<Record> {
        self.held
            .iter()
            .flat_map(|h| h.records.iter().cloned())
            .collect()
    }
}

/// Makes the records of a usage on `state`, takes its calibration and provider state in, and
/// holds the records (their sequence numbers reserved: the state's version counts them).
pub(crate) fn hold(
    redactor: Option<&Redactor>,
    session: &str,
    state: &mut SessionState,
    call: CallFigures,
    usage: Usage,
    since: Instant,
) -> CalibrationUpdate {
    let (mut records, calibration, update, held) = usage_records(state, &call, &usage);
    let events = records.iter_mut().filter_map(|r| match r {
        Record::Event(e) => Some(e),
        _ => None,
    });
    redact_for_caller(redactor, state, session, events);
    state.calibration = calibration;
    if held.is_some() {
        state.provider = held;
    }
    state.version += records.len() as u64;
    state.held.push(HeldUsage {
        call,
        usage,
        records,
        since,
    });
    update
}

/// Brings a state holding usage records up to date with what other writers appended, and makes
/// the held records again on top of it: each usage still measures its own call, and its
/// calibration follows the others' (as when the usage was recorded after their appends).
pub(crate) fn rebase_held(
    store: &dyn Store,
    redactor: Option<&Redactor>,
    session: &str,
    state: &mut SessionState,
) -> Result<(), SessionError> {
    state.version = state.logged_version();
    let held = std::mem::take(&mut state.held);
    state.catch_up(store, session)?;
    for h in held {
        hold(redactor, session, state, h.call, h.usage, h.since);
    }
    Ok(())
}

/// Writes the usage records the state in `slot` holds, alone, after the log's version; when
/// another writer appended first, the state catches up and the records are made again on top
/// (up to [`CONFLICT_RETRIES`] times). The slot is emptied when the state cannot be brought up
/// to date (its next call reloads it; the held records are lost, as a failed append's were).
pub(crate) fn write_held(
    store: &dyn Store,
    redactor: Option<&Redactor>,
    exports: Option<&ExportQueue>,
    session: &str,
    slot: &mut Slot<'_>,
) -> Result<(), SessionError> {
    let mut conflicts = 0;
    loop {
        let Some(state) = slot.as_mut() else {
            return Ok(());
        };
        if state.held.is_empty() {
            return Ok(());
        }
        if state.stale {
            if let Err(e) = rebase_held(store, redactor, session, state) {
                **slot = None;
                return Err(e);
            }
        }
        let records = state.held_log();
        let events = events_to_export(&records, exports.is_some());
        match store.append(session, state.logged_version(), records) {
            Ok(version) => {
                state.held.clear();
                state.version = version;
                if let Some(exports) = exports {
                    exports.emit(session, &events);
                }
                return Ok(());
            }
            Err(StoreError::Conflict { .. }) if conflicts < CONFLICT_RETRIES => {
                conflicts += 1;
                state.stale = true;
            }
            Err(e) => {
                state.stale |= matches!(e, StoreError::Conflict { .. });
                return Err(e.into());
            }
        }
    }
}

/// The thread that writes held usage records once they are [`USAGE_FLUSH_AFTER`] old, and every
/// held record when it is dropped (with the manager).
pub(crate) struct UsageFlusher {
    shared: Arc<Flush>,
    thread: Option<JoinHandle<()>>,
}

/// What the flusher thread and the manager share.
struct Flush {
    store: Arc<dyn Store>,
    redactor: Option<Arc<Redactor>>,
    exports: Option<Arc<ExportQueue>>,
    queue: Mutex<FlushQueue>,
    signal: Condvar,
}

/// The sessions holding usage records, each with when to look at it again.
#[derive(Default)]
struct FlushQueue {
    due: HashMap<String, (SlotHandle, Instant)>,
    /// When the thread wakes next, while it waits with a deadline (a session due later needs no
    /// signal).
    wakes_at: Option<Instant>,
    /// Set when the flusher is dropped: write everything, then end.
    stop: bool,
}

impl std::fmt::Debug for UsageFlusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UsageFlusher").finish_non_exhaustive()
    }
}

impl UsageFlusher {
    /// Starts the thread; `None` when the system refuses one (usage is then written at once).
    pub(crate) fn start(
        store: Arc<dyn Store>,
        redactor: Option<Arc<Redactor>>,
        exports: Option<Arc<ExportQueue>>,
    ) -> Option<UsageFlusher> {
        let shared = Arc::new(Flush {
            store,
            redactor,
            exports,
            queue: Mutex::new(FlushQueue::default()),
            signal: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("compact-usage-flush".to_owned())
            .spawn(move || theirs.run())
            .ok()?;
        Some(UsageFlusher {
            shared,
            thread: Some(thread),
        })
    }

    /// Notes that `session` holds usage records (from now): it is looked at once they are
    /// [`USAGE_FLUSH_AFTER`] old. A session already noted keeps its earlier time.
    pub(crate) fn schedule(&self, session: &str, handle: &SlotHandle) {
        let due = Instant::now() + USAGE_FLUSH_AFTER;
        let mut queue = self.shared.lock();
        if queue.stop || queue.due.contains_key(session) {
            return;
        }
        queue
            .due
            .insert(session.to_owned(), (Arc::clone(handle), due));
        if queue.wakes_at.is_none_or(|at| at > due) {
            self.shared.signal.notify_one();
        }
    }

    /// Takes `session` off the queue: its slot, when it was on it.
    pub(crate) fn take(&self, session: &str) -> Option<SlotHandle> {
        self.shared.lock().due.remove(session).map(|(slot, _)| slot)
    }

    /// Takes every session off the queue.
    pub(crate) fn take_all(&self) -> Vec<(String, SlotHandle)> {
        self.shared
            .lock()
            .due
            .drain()
            .map(|(session, (slot, _))| (session, slot))
            .collect()
    }
}

impl Drop for UsageFlusher {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.signal.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Flush {
    fn lock(&self) -> MutexGuard<'_, FlushQueue> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The thread: waits for the earliest session due, writes what it holds when old enough, and
    /// everything at the end.
    fn run(&self) {
        let mut queue = self.lock();
        loop {
            let now = Instant::now();
            let stop = queue.stop;
            let mut ready = Vec::new();
            let earliest = queue.due.values().map(|(_, due)| *due).min();
            if stop || earliest.is_some_and(|at| at <= now) {
                // With the first session due, the others due soon (see USAGE_FLUSH_GATHER).
                let by = now + USAGE_FLUSH_GATHER;
                queue.due.retain(|session, (slot, due)| {
                    let go = stop || *due <= by;
                    if go {
                        ready.push((session.clone(), Arc::clone(slot)));
                    }
                    !go
                });
            }
            if !ready.is_empty() {
                queue.wakes_at = None;
                drop(queue);
                let again = self.write_together(ready, now + USAGE_FLUSH_GATHER, stop);
                queue = self.lock();
                for (session, entry) in again {
                    queue.due.entry(session).or_insert(entry);
                }
                continue;
            }
            if stop {
                return;
            }
            let next = queue.due.values().map(|(_, due)| *due).min();
            queue.wakes_at = next;
            queue = match next {
                Some(at) => {
                    self.signal
                        .wait_timeout(queue, at.saturating_duration_since(now))
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .0
                }
                None => self
                    .signal
                    .wait(queue)
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            };
            queue.wakes_at = None;
        }
    }

    /// Writes what the `ready` sessions hold whose oldest report is due by `by` (every one when
    /// `force`), in one store call ([`Store::append_many`]); the sessions to look at again, with
    /// when. A session whose slot a call holds, that another writer appended to, or whose append
    /// met a conflict is written alone ([`Flush::write`], [`write_held`]), after the others.
    fn write_together(
        &self,
        ready: Vec<(String, SlotHandle)>,
        by: Instant,
        force: bool,
    ) -> Vec<(String, (SlotHandle, Instant))> {
        let mut again = Vec::new();
        let mut alone = Vec::new();
        {
            let mut locked: Vec<(&String, &SlotHandle, Slot<'_>)> = Vec::new();
            for (session, handle) in &ready {
                // Never waits for a slot while holding others: a busy one is written alone.
                let slot = match handle.try_lock() {
                    Ok(slot) => slot,
                    Err(std::sync::TryLockError::WouldBlock) => {
                        alone.push((session, handle));
                        continue;
                    }
                    // As `CompactManager::lock`: a poisoned slot is emptied (reloaded next call).
                    Err(std::sync::TryLockError::Poisoned(p)) => {
                        let mut slot = p.into_inner();
                        *slot = None;
                        handle.clear_poison();
                        slot
                    }
                };
                let Some(since) = slot.as_ref().and_then(|s| s.held.first()).map(|h| h.since)
                else {
                    continue;
                };
                let due = since + USAGE_FLUSH_AFTER;
                if !force && due > by {
                    again.push((session.clone(), (Arc::clone(handle), due)));
                } else if slot.as_ref().is_some_and(|s| s.stale) {
                    alone.push((session, handle));
                } else {
                    locked.push((session, handle, slot));
                }
            }
            let mut exported = Vec::with_capacity(locked.len());
            let appends = locked
                .iter()
                .filter_map(|(session, _, slot)| {
                    let state = slot.as_ref()?;
                    let records = state.held_log();
                    exported.push(events_to_export(&records, self.exports.is_some()));
                    Some(((*session).clone(), state.logged_version(), records))
                })
                .collect();
            let outcomes = self.store.append_many(appends);
            for (((session, handle, mut slot), outcome), events) in
                locked.into_iter().zip(outcomes).zip(exported)
            {
                let Some(state) = slot.as_mut() else {
                    continue;
                };
                match outcome {
                    Ok(version) => {
                        state.held.clear();
                        state.version = version;
                        if let Some(exports) = &self.exports {
                            exports.emit(session, &events);
                        }
                    }
                    Err(StoreError::Conflict { .. }) => {
                        // Another writer appended first: caught up and made again, alone.
                        state.stale = true;
                        let written = self.write_alone(session, &mut slot);
                        if written.is_err() && !force {
                            again.push((
                                session.clone(),
                                (Arc::clone(handle), Instant::now() + USAGE_FLUSH_AFTER),
                            ));
                        }
                    }
                    // A store that failed is tried again a period later (at the end, lost).
                    Err(_) if !force => again.push((
                        session.clone(),
                        (Arc::clone(handle), Instant::now() + USAGE_FLUSH_AFTER),
                    )),
                    Err(_) => {}
                }
            }
        }
        for (session, handle) in alone {
            if let Some(due) = self.write(session, handle, force) {
                again.push((session.clone(), (Arc::clone(handle), due)));
            }
        }
        again
    }

    /// [`write_held`] with this flusher's store, redactor and exports.
    fn write_alone(&self, session: &str, slot: &mut Slot<'_>) -> Result<(), SessionError> {
        write_held(
            self.store.as_ref(),
            self.redactor.as_deref(),
            self.exports.as_deref(),
            session,
            slot,
        )
    }

    /// Writes what `session` holds when its oldest report is due (always when `force`); when to
    /// look again, if it still holds something.
    fn write(&self, session: &str, handle: &SlotHandle, force: bool) -> Option<Instant> {
        let mut slot = CompactManager::lock(handle);
        let since = slot.as_ref()?.held.first()?.since;
        let due = since + USAGE_FLUSH_AFTER;
        if !force && due > Instant::now() {
            return Some(due);
        }
        let written = self.write_alone(session, &mut slot);
        // A store that failed is tried again a period later (at the end, the records are lost).
        (written.is_err() && !force).then(|| Instant::now() + USAGE_FLUSH_AFTER)
    }
}

/// The records of a usage (calibration, a recovery that went through, the provider's own
/// compaction), the calibration and provider state they leave, and the update.
fn usage_records(
    state: &SessionState,
    call: &CallFigures,
    usage: &Usage,
) -> (
    Vec<Record>,
    Calibration,
    CalibrationUpdate,
    Option<ProviderHeld>,
) {
    let mut calibration = state.calibration.clone();
    let update = calibration.observe(&call.model, usage.total_input(), call.sent_tokens);
    let event = CalibrationEvent {
        model: update.model.clone(),
        provider_tokens: update.provider_tokens,
        our_tokens: update.our_tokens,
        sample: update.sample,
        ratio: update.ratio,
        clamped: Some(update.clamped),
        source: "usage".to_owned(),
        // What the provider served from its prompt cache: the web view's cache-hit share per
        // call, as measured.
        cached_input_tokens: Some(usage.cached_input()),
    }
    .to_event();
    let mut records = vec![Record::Event(event)];
    if call.recovery_attempts > 0 {
        // The request sent after an overflow recovery went through.
        records.push(Record::Event(Event::new(
            EventKind::OverflowRecovered,
            json!({"model": update.model, "attempts": call.recovery_attempts,
                   "t_est": call.sent_tokens, "provider_tokens": update.provider_tokens}),
        )));
    }
    if let Some(pass) = usage.provider_compaction {
        // The provider now holds a compaction of everything it was sent: the client sends it
        // back next, and what it stands for is the first thing the next compaction drops.
        records.push(Record::Event(Event::new(
            EventKind::ProviderCompaction,
            json!({"model": update.model, "input_tokens": pass.input_tokens,
                   "output_tokens": pass.output_tokens,
                   "billed_input_tokens": pass.billed_input_tokens,
                   "billed_output_tokens": pass.billed_output_tokens}),
        )));
    }
    let held = usage
        .provider_compaction
        .map(|_| ProviderHeld::from_reply(call.sent_items, call.sent_tokens));
    if let Some(held) = &held {
        records.push(Record::Event(held.event()));
    }
    (records, calibration, update, held)
}
