//! [`CompactManager::manual_compact`]: the programmatic manual trigger (seed 003's
//! `manual_compact`, seed 000's `/compact` reporting tokens saved and items compressed).

use crate::commit::FinishedCompaction;
use crate::error::SessionError;
use crate::event::{CompactedEvent, Event};
use crate::limits::manual_policy;
use crate::manager::{items_compressed, CompactManager};
use crate::state::SessionState;
use compact_core::model::Conversation;
use compact_engine::{block_on, Compaction, Report};
use std::sync::Arc;

/// What a manual compaction did.
#[derive(Debug, Clone)]
pub struct ManualCompaction {
    /// Tokens of the view before.
    pub tokens_before: usize,
    /// Tokens of the view after.
    pub tokens_after: usize,
    /// `tokens_before - tokens_after`.
    pub tokens_saved: usize,
    /// Items removed, replaced or cut.
    pub items_compressed: usize,
    /// The new view (what the next preflight builds on).
    pub conversation: Conversation,
    /// The compaction report.
    pub report: Report,
    /// The events (also in the log).
    pub events: Vec<Event>,
}

impl CompactManager {
    /// Runs a manual compaction of what `state` sent last (recounted when just loaded), without
    /// logging it: the view sent, the compaction, and the new view (with the request's tools,
    /// format and fields).
    pub(crate) fn plan_manual(
        &self,
        session: &str,
        state: &mut SessionState,
    ) -> Result<(Arc<Conversation>, Compaction, Conversation), SessionError> {
        if !state.prepared {
            return Err(SessionError::NothingPrepared(session.to_owned()));
        }
        let (current, sent_tokens) = self.current_with_block(state);
        let ratio = state.calibration.ratio(&state.model);
        let policy = manual_policy(&self.calibrated_policy(state, ratio), sent_tokens);
        let done = self
            .compactor(session, policy)
            .and_then(|c| block_on(c.compact(&current)))?;
        let view = view_of(&done, &current);
        Ok((current, done, view))
    }

    /// What was sent last and its count, with the memory block as the facts stand now (a
    /// compacted view carries it so).
    pub(crate) fn current_with_block(
        &self,
        state: &mut SessionState,
    ) -> (Arc<Conversation>, usize) {
        let (current, sent_tokens) = self.sent_now(state);
        let mut fresh = std::borrow::Cow::Borrowed(&*current);
        self.refresh_block(&state.memory, &mut fresh);
        let current = match fresh {
            std::borrow::Cow::Owned(refreshed) => Arc::new(refreshed),
            std::borrow::Cow::Borrowed(_) => current,
        };
        (current, sent_tokens)
    }
}

/// The view a compaction of `current` leaves: its conversation with `current`'s tools, format and
/// request fields, and the annotations of `current`'s items on the items it kept of them (none
/// on what it wrote: see [`crate::annotation`]).
pub(crate) fn view_of(done: &Compaction, current: &Conversation) -> Conversation {
    let mut view = done.conversation.clone();
    crate::annotation::follow(&mut view.items, &current.items);
    view.tools = current.tools.clone();
    view.format = current.format;
    view.extra = current.extra.clone();
    view
}

impl CompactManager {
    /// Compacts the session's current view now, aiming at half of it whatever the trigger says.
    /// `note` is logged with the event. The next preflight sends the new view plus what is new.
    pub fn manual_compact(
        &self,
        session: &str,
        note: &str,
    ) -> Result<ManualCompaction, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        let (_, mut done, view) = self.plan_manual(session, state)?;
        let compressed = items_compressed(&done);
        let mut event = CompactedEvent::of("manual", &done.report, compressed);
        event.note = Some(note.to_owned());
        let saved = self.commit_compaction(
            session,
            state,
            FinishedCompaction {
                view: &view,
                tokens: done.report.tokens_after,
                trigger: "manual",
                event: Some(event),
                before: Vec::new(),
                after: Vec::new(),
            },
        )?;
        done.report.warnings.extend(saved.warning);
        Ok(ManualCompaction {
            tokens_before: done.report.tokens_before,
            tokens_after: done.report.tokens_after,
            tokens_saved: done.report.saved(),
            items_compressed: compressed,
            conversation: view,
            report: done.report,
            events: saved.event.into_iter().collect(),
        })
    }
}
