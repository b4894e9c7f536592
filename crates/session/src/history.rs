//! Reading a session back: [`CompactManager::history`] (the items of its current branch, as
//! received) and [`CompactManager::view`] (what the model is shown in their place), for exports
//! and inspection (`compactctl sessions export`).

use crate::error::SessionError;
use crate::event::EventKind;
use crate::manager::CompactManager;
use crate::record::Record;
use crate::{Store, StoreError};
use compact_core::model::Conversation;
use std::sync::Arc;

/// What `session`'s calls last ran with, read from the log's events alone (one read, newest
/// first): the context window of its latest `compact.trigger_decision` and the model its latest
/// `compact.sent` named. A manual or reviewed compaction of a stored session plans for that window
/// and, where a proxy routes models to different compaction backends, with that model's backend.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LastCall {
    /// The window, `None` when no call was decided yet.
    pub window: Option<usize>,
    /// The model, `None` when no call named one.
    pub model: Option<String>,
}

/// [`LastCall`] of `session`.
pub fn last_call(store: &dyn Store, session: &str) -> Result<LastCall, StoreError> {
    let mut last = LastCall::default();
    for stored in store
        .read_kind(session, 0, "event", usize::MAX)?
        .iter()
        .rev()
    {
        if last.window.is_some() && last.model.is_some() {
            break;
        }
        let Record::Event(e) = &stored.record else {
            continue;
        };
        match e.kind {
            EventKind::TriggerDecision if last.window.is_none() => {
                last.window = e
                    .get("window")
                    .and_then(serde_json::Value::as_u64)
                    .and_then(|w| usize::try_from(w).ok());
            }
            EventKind::Sent if last.model.is_none() => {
                last.model = e
                    .get("model")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned);
            }
            _ => {}
        }
    }
    Ok(last)
}

/// The context window `session` last ran at ([`last_call`]'s window).
pub fn last_window(store: &dyn Store, session: &str) -> Result<Option<usize>, StoreError> {
    Ok(last_call(store, session)?.window)
}

impl CompactManager {
    /// The items of the session's current branch, exactly as received, with the tools, format and
    /// request fields of the last request (when it was prepared by this manager) or none (when the
    /// session was read back from the log, which keeps items only).
    pub fn history(&self, session: &str) -> Result<Conversation, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        let mut history = Conversation {
            items: state.received.clone(),
            tools: state.view.tools.clone(),
            format: state.view.format,
            extra: state.view.extra.clone(),
        };
        history.renumber_turns();
        Ok(history)
    }

    /// The session's current view before normalisation: its last compacted view followed by the
    /// items received since (the history itself when it was never compacted).
    pub fn view(&self, session: &str) -> Result<Arc<Conversation>, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        Ok(Arc::clone(&state.view))
    }

    /// The request the latest `preflight` (or recovery) of `session` prepared, as it was sent
    /// (normalisation repairs included): what [`CompactManager::recover`] expects back after a
    /// provider's overflow error. Hosts that do not keep the prepared conversation themselves (the
    /// Python package) read it here.
    pub fn last_sent(&self, session: &str) -> Result<Arc<Conversation>, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        if !state.prepared {
            return Err(SessionError::NothingPrepared(session.to_owned()));
        }
        Ok(Arc::clone(state.sent()))
    }
}
