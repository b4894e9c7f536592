//! Review before a compaction applies: [`CompactManager::propose`] plans a manual compaction of the
//! session's current view and returns it (what goes, the checkpoint text) without changing anything;
//! [`CompactManager::apply`] applies that proposal, with the checkpoint as the user edited it, as
//! long as the session has not moved on since (otherwise [`SessionError::ProposalOutdated`]).

use crate::commit::FinishedCompaction;
use crate::error::SessionError;
use crate::event::CompactedEvent;
use crate::manager::{items_compressed, CompactManager};
use crate::manual::ManualCompaction;
use compact_core::model::{Conversation, ItemBody, CHECKPOINT_CLOSE, CHECKPOINT_OPEN};
use compact_engine::Report;

/// A planned compaction, not applied.
#[derive(Debug, Clone)]
pub struct Proposal {
    /// The session.
    pub session: String,
    /// The log version the proposal was made at: [`CompactManager::apply`] refuses it once the
    /// session's log has moved on.
    pub version: u64,
    /// The view the compaction would leave.
    pub conversation: Conversation,
    /// The new checkpoint's text (without its markers), when the compaction writes one: what the
    /// user may edit.
    pub checkpoint: Option<String>,
    /// Per item of the current view: its id and what would happen to it (`keep`, `truncate`,
    /// `reference`, `summarize`, `drop`).
    pub actions: Vec<(String, &'static str)>,
    /// The compaction report (tokens before and after, tiers, summariser).
    pub report: Report,
    items_compressed: usize,
}

/// Index of the checkpoint `view` holds that `before` does not (the one this compaction wrote).
fn new_checkpoint(before: &Conversation, view: &Conversation) -> Option<usize> {
    view.items.iter().position(|i| {
        matches!(i.body(), ItemBody::Checkpoint(_)) && !before.items.iter().any(|b| b == i)
    })
}

impl CompactManager {
    /// Plans a manual compaction of the session's current view (as [`CompactManager::manual_compact`]
    /// would run it) and returns it without logging or changing anything.
    pub fn propose(&self, session: &str) -> Result<Proposal, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        let (current, done, view) = self.plan_manual(session, state)?;
        let checkpoint = new_checkpoint(&current, &view).and_then(|i| match view.items[i].body() {
            ItemBody::Checkpoint(c) => Some(c.text.clone()),
            _ => None,
        });
        let actions = done
            .plan
            .items
            .iter()
            .map(|p| (p.id.to_string(), p.action.as_str()))
            .collect();
        Ok(Proposal {
            session: session.to_owned(),
            version: state.version,
            conversation: view,
            checkpoint,
            actions,
            items_compressed: items_compressed(&done),
            report: done.report,
        })
    }

    /// Applies `proposal`, with its checkpoint replaced by `edited_checkpoint` when given (markers,
    /// if the user kept them, are removed). Refused with [`SessionError::ProposalOutdated`] when
    /// the session's log moved on since the proposal, and with [`SessionError::MalformedRequest`]
    /// when the proposal has no checkpoint to edit or the edit makes the view exceed the usable
    /// budget; nothing changes then.
    pub fn apply(
        &self,
        proposal: &Proposal,
        edited_checkpoint: Option<&str>,
    ) -> Result<ManualCompaction, SessionError> {
        let session = proposal.session.as_str();
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        if state.version != proposal.version {
            return Err(SessionError::ProposalOutdated {
                session: session.to_owned(),
                proposed_at: proposal.version,
                now: state.version,
            });
        }
        let mut view = proposal.conversation.clone();
        let mut report = proposal.report.clone();
        let edited = edited_checkpoint.is_some();
        if let Some(text) = edited_checkpoint {
            let current = std::sync::Arc::clone(state.sent());
            let at = new_checkpoint(&current, &view).ok_or_else(|| {
                SessionError::MalformedRequest(
                    "the proposal writes no checkpoint, so there is nothing to edit".to_owned(),
                )
            })?;
            let body = strip_markers(text);
            if body.trim().is_empty() {
                return Err(SessionError::MalformedRequest(
                    "the edited checkpoint is empty".to_owned(),
                ));
            }
            if let ItemBody::Checkpoint(c) = view.items[at].body_mut() {
                c.text = body;
            }
            let counter = self.config().counter;
            let tokens = counter.total(&view);
            let usable = compact_core::budget::Budget::new(&self.config().policy).usable;
            if tokens > usable {
                return Err(SessionError::MalformedRequest(format!(
                    "the edited checkpoint makes the view {tokens} tokens, over the usable budget of {usable}"
                )));
            }
            report.tokens_after = tokens;
            report.summary_tokens = Some(counter.count_item(&view.items[at]));
        }
        let mut event = CompactedEvent::of("review", &report, proposal.items_compressed);
        event.edited = Some(edited);
        let saved = self.commit_compaction(
            session,
            state,
            FinishedCompaction {
                view: &view,
                tokens: report.tokens_after,
                trigger: "review",
                event: Some(event),
                before: Vec::new(),
                after: Vec::new(),
            },
        )?;
        report.warnings.extend(saved.warning);
        Ok(ManualCompaction {
            tokens_before: report.tokens_before,
            tokens_after: report.tokens_after,
            tokens_saved: report.tokens_before.saturating_sub(report.tokens_after),
            items_compressed: proposal.items_compressed,
            conversation: view,
            report,
            events: saved.event.into_iter().collect(),
        })
    }
}

/// The checkpoint body of `text`: without the `<compact-checkpoint ...>` and closing lines when the
/// user kept them.
fn strip_markers(text: &str) -> String {
    let mut body = text.trim();
    if body.starts_with(CHECKPOINT_OPEN) {
        body = body.split_once('\n').map_or("", |(_, rest)| rest);
    }
    if let Some(rest) = body.trim_end().strip_suffix(CHECKPOINT_CLOSE) {
        body = rest;
    }
    body.trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::strip_markers;

    #[test]
    fn markers_kept_by_the_user_are_removed() {
        assert_eq!(
            strip_markers(
                "<compact-checkpoint generation=\"2\">\n# Record\n- a\n</compact-checkpoint>\n"
            ),
            "# Record\n- a"
        );
        assert_eq!(strip_markers("  # Record\n- b  "), "# Record\n- b");
    }
}
