//! Decoding a request again when only its end is new: a host that resends its whole history on
//! every call (the Python binding, one per session) keeps the last decoded conversation, says how
//! many leading messages it knows to be unchanged, and only the others are decoded.
//!
//! The result is the conversation [`decode`](super::decode) gives for the whole request, items,
//! ids, turns and fingerprints included: the items of message `i` depend only on the format, `i`
//! and the message's JSON; an item's turn only on the items before it; ids are made unique and
//! tool result names resolved in order, from earlier items only. So the items of an unchanged
//! prefix, as finished by the last decode, are what a full decode would finish them as.

use super::request::Decoded;
use super::{decode_from, resolve_tool_names};
use crate::error::DecodeError;
use compact_core::model::{Conversation, Format};
use serde_json::Value;

/// The last request decoded for one caller, kept so that the next one is decoded from its first
/// new message on.
#[derive(Debug, Clone, Default)]
pub struct IncrementalDecode {
    format: Option<Format>,
    conversation: Conversation,
    /// How many of the conversation's items the request's own fields gave (Anthropic `system`,
    /// Responses `instructions`).
    leading: usize,
    /// Per message (input item) of the last request, how many items there are up to its end.
    ends: Vec<usize>,
    /// Messages of the last request that were decoded (the others were kept).
    decoded: usize,
}

impl IncrementalDecode {
    /// Nothing decoded yet.
    pub fn new() -> IncrementalDecode {
        IncrementalDecode::default()
    }

    /// Decodes `request`, a request of `format`, and returns its conversation. The items of its
    /// first `keep` messages (input items) are those of the last request decoded: the caller
    /// vouches that those messages are the same JSON values as then (they are not read). Nothing
    /// is kept when the format differs, and no more than the last request had; the request's own
    /// fields that become items (Anthropic `system`, Responses `instructions`) are decoded every
    /// time, and when they differ from the last request's (by fingerprint) every message is
    /// decoded again. On an error the state is dropped (the next call decodes everything).
    pub fn decode(
        &mut self,
        format: Format,
        request: &Value,
        keep: usize,
    ) -> Result<&Conversation, DecodeError> {
        let total = message_count(format, request);
        let mut keep = if self.format == Some(format) {
            keep.min(self.ends.len()).min(total)
        } else {
            0
        };
        let mut fresh = match decode_from(format, request, keep) {
            Ok(d) => d,
            Err(e) => {
                *self = IncrementalDecode::default();
                return Err(e);
            }
        };
        if keep > 0 && !self.same_leading(&fresh) {
            keep = 0;
            fresh = match decode_from(format, request, 0) {
                Ok(d) => d,
                Err(e) => {
                    *self = IncrementalDecode::default();
                    return Err(e);
                }
            };
        }
        let Decoded {
            head,
            mut items,
            leading,
            ends,
        } = fresh;
        let mut kept = std::mem::take(&mut self.conversation).items;
        if keep == 0 {
            kept.clear();
            self.leading = leading;
            self.ends = ends;
        } else {
            let kept_items = self.ends[keep - 1];
            kept.truncate(kept_items);
            items.drain(..leading);
            self.ends.truncate(keep);
            self.ends
                .extend(ends.into_iter().map(|e| kept_items + e - leading));
        }
        let mut conversation = Conversation {
            items: kept,
            ..head
        };
        // The kept items are the last decode's, their ids made unique: only the new ones are.
        conversation.extend_unique_after(items);
        resolve_tool_names(&mut conversation);
        self.conversation = conversation;
        self.format = Some(format);
        self.decoded = self.ends.len() - keep;
        Ok(&self.conversation)
    }

    /// The conversation of the last request decoded (empty before the first, or after an error).
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// Messages (input items) of the last request decoded.
    pub fn messages(&self) -> usize {
        self.ends.len()
    }

    /// Messages of the last request decoded that were decoded by that call (the others were
    /// kept from the call before).
    pub fn decoded(&self) -> usize {
        self.decoded
    }

    /// Whether the request's own items are those held (same count, same fingerprints).
    fn same_leading(&self, fresh: &Decoded) -> bool {
        let held = &self.conversation.items;
        fresh.leading == self.leading
            && held.len() >= self.leading
            && fresh.items[..fresh.leading]
                .iter()
                .zip(&held[..self.leading])
                .all(|(a, b)| a.wire_digest().is_some() && a.wire_digest() == b.wire_digest())
    }
}

/// The length of the request's message list (`messages`, or Responses' `input` when a list).
fn message_count(format: Format, request: &Value) -> usize {
    request
        .get(super::list_key(format))
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::wire::decode;
    use serde_json::json;

    /// The incremental decode equals the full one, fingerprints included.
    fn same_as_full(inc: &mut IncrementalDecode, format: Format, request: &Value, keep: usize) {
        let full = decode(format, request).unwrap();
        let got = inc.decode(format, request, keep).unwrap().clone();
        assert_eq!(got, full);
        for (a, b) in got.items.iter().zip(&full.items) {
            assert_eq!(a.meta.id, b.meta.id);
            assert_eq!(a.meta.turn, b.meta.turn);
            assert_eq!(a.wire_digest(), b.wire_digest());
        }
    }

    fn chat(n: usize) -> Vec<Value> {
        let mut m = vec![json!({"role": "system", "content": "Be brief."})];
        for i in 0..n {
            let id = format!("c{i}");
            m.push(json!({"role": "user", "content": format!("step {i}")}));
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": id, "type": "function", "function": {"name": "read", "arguments": "{}"}}]}));
            // The same output every time: ids collide and get `~k` suffixes.
            m.push(json!({"role": "tool", "tool_call_id": id, "content": "same"}));
            m.push(json!({"role": "user", "content": "same"}));
        }
        m
    }

    #[test]
    fn appended_messages_alone_are_decoded() {
        let mut inc = IncrementalDecode::new();
        let mut messages = chat(3);
        same_as_full(
            &mut inc,
            Format::OpenAiChat,
            &json!({"model": "m", "messages": messages}),
            0,
        );
        assert_eq!(inc.decoded(), 13);
        let held = messages.len();
        messages.extend(chat(2).into_iter().skip(1));
        let request = json!({"model": "m2", "messages": messages, "tools": [
            {"type": "function", "function": {"name": "read"}}]});
        same_as_full(&mut inc, Format::OpenAiChat, &request, held);
        assert_eq!(inc.decoded(), 8);
        assert_eq!(inc.messages(), 21);
        // Truncated (a branch) then grown again.
        messages.truncate(6);
        messages.push(json!({"role": "user", "content": "other"}));
        same_as_full(
            &mut inc,
            Format::OpenAiChat,
            &json!({"messages": messages}),
            6,
        );
        assert_eq!(inc.decoded(), 1);
        // More kept than held, or another format: capped, or nothing kept.
        same_as_full(
            &mut inc,
            Format::OpenAiChat,
            &json!({"messages": messages}),
            99,
        );
        assert_eq!(inc.decoded(), 0);
        let anthropic = json!({"messages": [{"role": "user", "content": "hi"}]});
        same_as_full(&mut inc, Format::Anthropic, &anthropic, 1);
        assert_eq!(inc.decoded(), 1);
    }

    #[test]
    fn a_changed_system_decodes_everything_again() {
        let messages = json!([
            {"role": "user", "content": "same"},
            {"role": "assistant", "content": [{"type": "text", "text": "same"}]},
            {"role": "user", "content": "more"}
        ]);
        let mut inc = IncrementalDecode::new();
        same_as_full(
            &mut inc,
            Format::Anthropic,
            &json!({"system": "a", "messages": messages}),
            0,
        );
        same_as_full(
            &mut inc,
            Format::Anthropic,
            &json!({"system": "same", "messages": messages}),
            3,
        );
        assert_eq!(inc.decoded(), 3);
        same_as_full(
            &mut inc,
            Format::Anthropic,
            &json!({"system": "same", "messages": messages}),
            3,
        );
        assert_eq!(inc.decoded(), 0);
        let responses = json!({"instructions": "a", "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c", "output": "ok"}]});
        same_as_full(&mut inc, Format::OpenAiResponses, &responses, 0);
        let mut changed = responses.clone();
        changed["instructions"] = json!("b");
        same_as_full(&mut inc, Format::OpenAiResponses, &changed, 3);
        assert_eq!(inc.decoded(), 3);
        changed["input"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": "next"}));
        same_as_full(&mut inc, Format::OpenAiResponses, &changed, 3);
        assert_eq!(inc.decoded(), 1);
    }

    /// Claude Code's request shape: a system message right after the first user message.
    #[test]
    fn a_system_message_among_the_messages_is_kept_like_any_other() {
        let mut messages = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "<system-reminder>r</system-reminder>"},
                {"type": "text", "text": "fix it"}]}),
            json!({"role": "system", "content": [{"type": "text", "text": "# Environment",
                "cache_control": {"type": "ephemeral"}}]}),
            json!({"role": "assistant", "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.rs"}]}),
        ];
        let request = |m: &[Value]| json!({"system": "s", "messages": m});
        let mut inc = IncrementalDecode::new();
        same_as_full(&mut inc, Format::Anthropic, &request(&messages[..1]), 0);
        for k in 1..messages.len() {
            same_as_full(&mut inc, Format::Anthropic, &request(&messages[..=k]), k);
            assert_eq!(inc.decoded(), 1);
        }
        messages.push(json!({"role": "system", "content": "later"}));
        same_as_full(&mut inc, Format::Anthropic, &request(&messages), 4);
        assert_eq!(inc.decoded(), 1);
        let roles: Vec<_> = inc.conversation().items.iter().map(|i| i.role()).collect();
        assert_eq!(roles[2], compact_core::model::Role::System);
        assert_eq!(roles.last(), Some(&compact_core::model::Role::System));
    }

    #[test]
    fn an_error_drops_the_state() {
        let mut inc = IncrementalDecode::new();
        let good = json!({"messages": [{"role": "user", "content": "a"}]});
        inc.decode(Format::OpenAiChat, &good, 0).unwrap();
        let bad = json!({"messages": [{"role": "user", "content": "a"}, {"role": "nobody"}]});
        let e = inc.decode(Format::OpenAiChat, &bad, 1).unwrap_err();
        assert_eq!(e.path, "/messages/1/role");
        assert_eq!(inc.messages(), 0);
        assert!(inc.conversation().is_empty());
        same_as_full(&mut inc, Format::OpenAiChat, &good, 1);
        assert_eq!(inc.decoded(), 1);
    }
}
