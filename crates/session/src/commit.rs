//! [`CompactManager::commit_compaction`]: how a finished compaction of a session's current view
//! is saved, whatever triggered it (a manual request, a reviewed proposal, idle time, an overflow
//! recovery): the view record and its event appended after the session's version, then the view
//! adopted (the archive written, the state's view replaced, the memory block noted). A preflight's
//! own compaction is logged with the call's other records (see [`crate::preflight`]) but writes
//! its event with the same [`CompactedEvent`].

use crate::error::SessionError;
use crate::event::{CompactedEvent, Event, EventData};
use crate::manager::CompactManager;
use crate::record::Record;
use crate::state::{view_record, SessionState};
use compact_core::model::Conversation;

/// One compaction of the current view, ready to be saved.
pub(crate) struct FinishedCompaction<'a> {
    /// The view it leaves.
    pub view: &'a Conversation,
    /// Its count.
    pub tokens: usize,
    /// The name its view record is logged under (`manual`, `review`, `idle`, `recovery`).
    pub trigger: &'a str,
    /// Its `compact.compacted` event (the view's sequence number is filled in here), or none
    /// (an overflow recovery reports itself with its own event).
    pub event: Option<CompactedEvent>,
    /// Records logged before the view record (a calibration the compaction is based on).
    pub before: Vec<Record>,
    /// Records logged after it (the event of the trigger).
    pub after: Vec<Record>,
}

/// What saving it gave.
pub(crate) struct Saved {
    /// The `compact.compacted` event as logged (redacted), when one was.
    pub event: Option<Event>,
    /// A warning when the archive could not keep the transcript.
    pub warning: Option<String>,
}

impl CompactManager {
    /// Saves `done`: its records appended after the state's version (nothing changes when the
    /// append fails), then the state adopts the view.
    pub(crate) fn commit_compaction(
        &self,
        session: &str,
        state: &mut SessionState,
        done: FinishedCompaction<'_>,
    ) -> Result<Saved, SessionError> {
        let FinishedCompaction {
            view,
            tokens,
            trigger,
            event,
            mut before,
            after,
        } = done;
        let view_seq = state.version + before.len() as u64 + 1;
        let event = event.map(|mut e| {
            e.view_seq = view_seq;
            let mut event = e.to_event();
            self.redact_events(session, state, std::slice::from_mut(&mut event));
            event
        });
        before.push(Record::View(view_record(
            view,
            &state.received,
            &state.chain,
            trigger,
        )));
        before.extend(event.iter().cloned().map(Record::Event));
        before.extend(after);
        self.append(session, state, before)?;
        let warning = self.adopt_view(session, state, view, tokens);
        self.note_block(state, view);
        Ok(Saved { event, warning })
    }
}
