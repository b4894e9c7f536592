//! The runtime's calls on a session's facts ([`crate::memory`] holds what they are built on): the
//! block a compaction renders, the facts of a session, their lifecycle (forget, pin, unpin), and
//! the pre-tool gate's rewrites.

use crate::memory::{block_in, change_event, gate_event, inject};
use crate::record::Record;
use crate::Event;
use compact_core::memory::{Change, Lifecycle, Memory};
use compact_core::model::Conversation;

impl crate::CompactManager {
    /// Renders the memory block of `memory` into `conv` (copied only then) when memory is on and
    /// the block `conv` holds is another: what every compaction (automatic, manual, reviewed or an
    /// overflow recovery) compacts, since the prompt changes from the checkpoint on anyway and the
    /// block takes in what was learnt since it was last rendered.
    pub(crate) fn refresh_block(
        &self,
        memory: &compact_core::memory::Memory,
        conv: &mut std::borrow::Cow<'_, Conversation>,
    ) {
        let Some(mc) = self.config().memory.as_ref() else {
            return;
        };
        let fresh =
            compact_core::memory::render::render(memory, mc.budget_tokens, &self.config().counter);
        if block_in(conv) != fresh {
            let conv = conv.to_mut();
            inject(conv, fresh.as_deref());
            conv.renumber_turns();
        }
    }

    /// After a manual, reviewed or recovery compaction adopted `view`: the block the session's
    /// view holds now.
    pub(crate) fn note_block(&self, state: &mut crate::state::SessionState, view: &Conversation) {
        if self.config().memory.is_some() {
            state.memory_block = block_in(view);
            state.memory_refresh = false;
        }
    }

    /// The facts of `session` (or of a project's memory log, [`crate::memory::project_session`]), rebuilt from its
    /// log when the session is not held in memory.
    pub fn memory(&self, session: &str) -> Result<Memory, crate::SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        Ok(state.memory.clone())
    }

    /// Moves fact `fact` of `session` to `to` (forget, pin, unpin), logged as a
    /// `compact.memory_lifecycle` event; the session's next preflight renders its memory block
    /// again, so a forgotten fact is never injected again. `Ok(None)` when it was there already.
    pub fn set_fact_lifecycle(
        &self,
        session: &str,
        fact: &str,
        to: Lifecycle,
    ) -> Result<Option<Change>, crate::SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        let mut memory = state.memory.clone();
        let change =
            memory
                .set_lifecycle(fact, to)
                .map_err(|source| crate::SessionError::Memory {
                    session: session.to_owned(),
                    source,
                })?;
        let Some(change) = change else {
            return Ok(None);
        };
        self.append(session, state, vec![Record::Event(change_event(&change))])?;
        state.memory = memory;
        state.memory_refresh = true;
        Ok(Some(change))
    }

    /// Forgets fact `fact` of `session`: see [`crate::CompactManager::set_fact_lifecycle`].
    pub fn forget(&self, session: &str, fact: &str) -> Result<Option<Change>, crate::SessionError> {
        self.set_fact_lifecycle(session, fact, Lifecycle::Forgotten)
    }

    /// Logs a pre-tool gate rewrite in `session` (`compact.memory_gate`), creating the session's
    /// log if needed; returns the event as logged (redacted).
    pub fn log_gate_rewrite(
        &self,
        session: &str,
        tool: &str,
        rewrite: &compact_core::memory::Rewrite,
    ) -> Result<Event, crate::SessionError> {
        crate::limits::check_session_id(session)?;
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        if slot.is_none() {
            self.store().create(session)?;
        }
        let state = self.existing(session, &mut slot)?;
        let mut event = gate_event(tool, rewrite);
        self.redact_events(session, state, std::slice::from_mut(&mut event));
        self.append(session, state, vec![Record::Event(event.clone())])?;
        Ok(event)
    }
}
