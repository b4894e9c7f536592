//! [`CompactManager::record_usage`]: after each response, the provider's count of the request
//! updates the session's calibration ([`crate::calibration`]).
//!
//! # Held records
//! The calibration changes at once, but the usage's record (the `compact.calibration` event) is
//! held in the session's state ([`HeldUsage`]) with its sequence number reserved (the state's
//! version counts the held records, the store's is that less them), and written first in the
//! session's next append: an agent's request costs one transaction, not two. A session whose next append does not come
//! within `USAGE_FLUSH_AFTER` has them written by the manager's flusher thread (`UsageFlusher`,
//! with the other sessions due within `USAGE_FLUSH_GATHER`, in one `Store::append_many`); [`CompactManager::flush`], evicting the session and dropping the manager
//! write them too. When another writer appended meanwhile, the state catches up and the held
//! usages are made again on top (`rebase_held`), each still measuring its own call. What a crash
//! can lose is therefore the usage records of each session's last answered call younger than
//! `USAGE_FLUSH_AFTER`; never a turn (docs/design/session.md, "Invariants"). A usage that
//! changes more than the calibration (the provider compacted: what it holds changed; the request
//! sent after an overflow recovery went through) is written at once, with whatever was held:
//! other readers (another replica, the admin API) act on it.

use crate::calibration::CalibrationUpdate;
use crate::error::SessionError;
use crate::manager::held::{hold, write_held, CallFigures, MAX_HELD_USAGES};
use crate::manager::{CompactManager, Slot};
use crate::reported::Usage;
use compact_core::model::Role;
use std::sync::Arc;
use std::time::Instant;

impl CompactManager {
    /// Records the provider's usage for the request the session's last preflight returned, and
    /// updates the calibration ratio of its model. Returns what changed.
    ///
    /// The calibration changes at once; the records saying so are held and logged in the
    /// transaction of the session's next append (its next turn), or alone once held
    /// `USAGE_FLUSH_AFTER` (1 s), or when the manager is flushed ([`CompactManager::flush`]), evicts
    /// the session or is dropped (see the module documentation).
    pub fn record_usage(
        &self,
        session: &str,
        usage: &Usage,
    ) -> Result<CalibrationUpdate, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        // The state as this process's last preflight left it, even if another writer appended
        // since (the figures of that call are what the usage measures).
        let state = match slot.as_mut() {
            Some(state) => state,
            None => self.existing(session, &mut slot)?,
        };
        if !state.prepared || state.sent_tokens == 0 {
            return Err(SessionError::NothingPrepared(session.to_owned()));
        }
        // What the usage measures is the call this process prepared: its figures are taken now,
        // so that a record that must wait for another writer's (the next turn, served elsewhere)
        // still compares the provider's count with this call's.
        let call = CallFigures {
            model: usage.model.clone().unwrap_or_else(|| state.model.clone()),
            sent_tokens: state.sent_tokens,
            recovery_attempts: state.recovery_attempts,
            sent_items: state
                .sent()
                .items
                .iter()
                .filter(|i| {
                    i.meta.visibility.model && !matches!(i.role(), Role::System | Role::Developer)
                })
                .count(),
        };
        let redactor = self.config().redactor.as_deref();
        let update = hold(
            redactor,
            session,
            state,
            call,
            usage.clone(),
            Instant::now(),
        );
        // A usage that changes more than the calibration (the provider compacted, a recovery
        // went through) is state other readers act on (another replica, the admin API): written
        // now, like too many reports without a turn between them (or no thread to write them
        // later). A failure leaves them held for the next append.
        let urgent = state.held.last().is_some_and(|h| h.records.len() > 1);
        let flusher = self.usage_flusher();
        if urgent || state.held.len() > MAX_HELD_USAGES || flusher.is_none() {
            let _ = self.write_held(session, &mut slot);
        } else if let Some(flusher) = flusher {
            flusher.schedule(session, &handle);
        }
        drop(slot);
        self.note_call(session);
        Ok(update)
    }

    /// Writes the usage records held for every session now (what the manager's drop does, and
    /// what the flusher does for a session after `USAGE_FLUSH_AFTER`, 1 s). The first error is
    /// returned; the records of a session that could not be written stay held.
    pub fn flush(&self) -> Result<(), SessionError> {
        let Some(flusher) = self.held_usage_flusher() else {
            return Ok(());
        };
        let mut first = Ok(());
        for (session, handle) in flusher.take_all() {
            let mut slot = Self::lock(&handle);
            if let Err(e) = self.write_held(&session, &mut slot) {
                if first.is_ok() {
                    first = Err(e);
                }
            }
        }
        first
    }

    /// Writes `session`'s held usage records now, if it has any.
    pub(crate) fn flush_session(&self, session: &str) -> Result<(), SessionError> {
        let Some(handle) = self
            .held_usage_flusher()
            .and_then(|flusher| flusher.take(session))
        else {
            return Ok(());
        };
        let mut slot = Self::lock(&handle);
        self.write_held(session, &mut slot)
    }

    /// Writes the records the state in `slot` holds, alone (see [`write_held`]).
    fn write_held(&self, session: &str, slot: &mut Slot<'_>) -> Result<(), SessionError> {
        write_held(
            self.store().as_ref(),
            self.config().redactor.as_deref(),
            self.exports().map(Arc::as_ref),
            session,
            slot,
        )
    }
}
