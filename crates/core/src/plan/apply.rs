//! [`Plan::apply`]: builds the compacted conversation from a plan and the checkpoint text. Pure and
//! deterministic; the input conversation is never modified.

use super::{Action, Plan};
use crate::model::{Checkpoint, Conversation, Item, ItemBody, ItemId};

/// Why a plan could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApplyError {
    /// The plan was built for a conversation with a different number of items.
    #[error("plan has {plan} items but the conversation has {conversation}")]
    Mismatch {
        /// Items in the plan.
        plan: usize,
        /// Items in the conversation.
        conversation: usize,
    },
    /// The plan has a checkpoint slot but no summary text was given.
    #[error("the plan summarises {items} items but no checkpoint text was given")]
    MissingSummary {
        /// Items covered.
        items: usize,
    },
}

impl Plan {
    /// The compacted conversation: kept items unchanged, truncated and referenced items replaced,
    /// summarised and dropped items removed, and the checkpoint (with `summary_text`) inserted at its
    /// slot. Tools, format and request fields are carried over; turns are renumbered.
    pub fn apply(
        &self,
        conv: &Conversation,
        summary_text: Option<&str>,
    ) -> Result<Conversation, ApplyError> {
        if self.items.len() != conv.items.len() {
            return Err(ApplyError::Mismatch {
                plan: self.items.len(),
                conversation: conv.items.len(),
            });
        }
        let checkpoint = match (&self.checkpoint, summary_text) {
            (None, _) => None,
            (Some(slot), Some(text)) => {
                let mut item = Item::new(ItemBody::Checkpoint(Checkpoint {
                    text: text.to_owned(),
                    generation: slot.generation,
                    covers: slot.covers.clone(),
                    extra: Default::default(),
                }));
                item.meta.id = ItemId::new(format!("checkpoint-{}", slot.generation));
                Some((slot.position, item))
            }
            (Some(slot), None) => {
                return Err(ApplyError::MissingSummary {
                    items: slot.covers.len(),
                })
            }
        };
        let mut items = Vec::with_capacity(conv.items.len() + 1);
        let mut checkpoint = checkpoint;
        for (plan, item) in self.items.iter().zip(&conv.items) {
            if checkpoint
                .as_ref()
                .is_some_and(|(pos, _)| *pos == plan.index)
            {
                if let Some((_, c)) = checkpoint.take() {
                    items.push(c);
                }
            }
            match &plan.action {
                Action::Keep => items.push(item.clone()),
                Action::Truncate { .. } | Action::Densify { .. } | Action::Reference { .. } => {
                    items.push(plan.replacement.clone().unwrap_or_else(|| item.clone()));
                }
                Action::SummarizeInto | Action::Drop => {}
            }
        }
        if let Some((_, c)) = checkpoint {
            items.push(c);
        }
        let mut out = Conversation {
            items,
            tools: conv.tools.clone(),
            format: conv.format,
            extra: conv.extra.clone(),
        };
        out.renumber_turns();
        Ok(out)
    }
}
