//! What the agent of a transcript sent: before each of its model calls, its whole history so far as
//! one request in its provider's wire format. A host in front of the provider (the proxy, the Python
//! binding) receives these requests; the golden comparisons of those hosts drive them with it.

use crate::calls::call_points;
use crate::load::undo_source_compactions;
use crate::ReplayError;
use compact_core::model::{Conversation, Format};
use compact_formats::import::{import, ImportMode, ImportOptions};
use compact_formats::wire::encode;
use serde_json::Value;

/// A transcript's model calls as its agent made them (the history is the agent's own, never a
/// compacted view: compacting is the host's business).
#[derive(Debug, Clone)]
pub struct AgentCalls {
    conversation: Conversation,
    /// Item index of each call that has a history to send (the items before it are its history).
    points: Vec<usize>,
    wire: Format,
}

impl AgentCalls {
    /// Imports `bytes` (named `file_name`) and undoes the compactions recorded in it, as
    /// [`crate::load_job`] does: the agent's history is what it produced.
    pub fn load(
        bytes: &[u8],
        file_name: &str,
        mode: ImportMode,
    ) -> Result<AgentCalls, ReplayError> {
        let imported = import(bytes, file_name, &ImportOptions { format: None, mode })
            .map_err(|e| ReplayError::Import(e.to_string()))?;
        let mut conversation = imported.conversation;
        undo_source_compactions(&mut conversation);
        Ok(AgentCalls::of(conversation))
    }

    /// The calls of a conversation already loaded. A call point with nothing before it (a transcript
    /// that opens with the assistant) has no request and is left out.
    pub fn of(conversation: Conversation) -> AgentCalls {
        let points = call_points(&conversation.items)
            .into_iter()
            .filter(|&p| p > 0)
            .collect();
        let wire = conversation.format.unwrap_or(Format::Native).wire_target();
        AgentCalls {
            conversation,
            points,
            wire,
        }
    }

    /// The wire format the agent spoke: the transcript's provider format ([`Format::wire_target`]).
    pub fn wire_format(&self) -> Format {
        self.wire
    }

    /// How many calls have a request.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// True when no call has a request.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The request of the `call`-th call (0-based; `None` past the last): every item before it, the
    /// transcript's tools and request fields, encoded in [`AgentCalls::wire_format`]. The model
    /// name and the output limit are the sender's to add.
    pub fn request(&self, call: usize) -> Option<Result<Value, ReplayError>> {
        let end = *self.points.get(call)?;
        let history = Conversation {
            items: self.conversation.items[..end].to_vec(),
            tools: self.conversation.tools.clone(),
            format: self.conversation.format,
            extra: self.conversation.extra.clone(),
        };
        Some(
            encode(&history, self.wire)
                .map(|encoded| encoded.value)
                .map_err(|e| ReplayError::Encode(e.to_string())),
        )
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_core::model::{Item, Role};

    #[test]
    fn each_call_sends_the_history_before_it() {
        let mut conversation = Conversation::default();
        for (role, text) in [
            (Role::Assistant, "hello first"),
            (Role::User, "fix it"),
            (Role::Assistant, "done"),
            (Role::User, "thanks"),
            (Role::Assistant, "welcome"),
        ] {
            conversation.push(Item::text(role, text));
        }
        conversation.format = Some(Format::ClaudeCode);
        let calls = AgentCalls::of(conversation);
        assert_eq!(calls.wire_format(), Format::Anthropic);
        assert_eq!(calls.len(), 2, "the opening assistant turn has no request");
        let second = calls.request(1).unwrap().unwrap();
        let messages = second["messages"].as_array().unwrap();
        // Anthropic's placeholder user turn before the opening assistant one, then the four items.
        assert_eq!(messages.len(), 5);
        assert_eq!(messages[1]["role"], "assistant");
        assert_eq!(messages[4]["role"], "user");
        assert_eq!(messages[4]["content"][0]["text"], "thanks");
        assert!(calls.request(2).is_none());
    }
}
