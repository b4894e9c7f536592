//! The three wire request formats Compact reads and writes: OpenAI Chat Completions, OpenAI Responses
//! and Anthropic Messages.
//!
//! [`decode`] turns a request into a flat [`Conversation`]; [`encode`] turns a conversation into a
//! request. Encoding to the format a conversation was decoded from is lossless: items that share an
//! [`Envelope`](compact_core::model::Envelope) are regrouped into their wire message and every unknown
//! field is re-emitted where it was (request, message, block / part, nested object), so
//! `encode(decode(v)) == v` for any request `v` that decodes. (Equality is of JSON values: key order
//! inside an object may differ.)
//!
//! ```
//! use compact_core::model::Format;
//! use compact_formats::wire::{decode, encode, LossKind};
//! use serde_json::json;
//!
//! let request = json!({
//!     "model": "claude-sonnet-4-5", "max_tokens": 512,
//!     "messages": [
//!         {"role": "user", "content": "Run the tests."},
//!         {"role": "assistant", "content": [
//!             {"type": "thinking", "thinking": "Use cargo.", "signature": "c2ln"},
//!             {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "cargo test"},
//!              "cache_control": {"type": "ephemeral"}}
//!         ]},
//!         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
//!     ]
//! });
//! let conv = decode(Format::Anthropic, &request)?;
//! assert_eq!(conv.len(), 4); // user, thinking, tool call, tool result
//! assert_eq!(encode(&conv, Format::Anthropic)?.value, request);
//!
//! let chat = encode(&conv, Format::OpenAiChat)?;
//! assert_eq!(chat.value["messages"][2]["role"], "tool");
//! assert!(chat.losses.iter().any(|l| l.kind == LossKind::ReasoningDropped));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Encoding to another format builds canonical objects for it and reports what could not be carried
//! in [`Encoded::losses`] (one [`Loss`] per item and kind, request-level losses last):
//!
//! | From -> to             | Lost or changed ([`LossKind`])                                                        |
//! |------------------------|---------------------------------------------------------------------------------------|
//! | any -> another format  | unknown fields of the source at any level (`cache_control`, `annotations`, `name`, item `id`/`status`...): `FieldsDropped`; opaque items (`compaction`, `item_reference`, `web_search_call`...): `OpaqueItemDropped`; opaque parts: `PartDropped`; request fields with no counterpart (`tool_choice`, `metadata`, `thinking`, `reasoning`...): `RequestFieldDropped`; provider tools in `tools[]`: `ToolSpecDropped` |
//! | Anthropic -> OpenAI    | `thinking` (signatures) and `redacted_thinking`: `ReasoningDropped`; `server_tool_use` / `*_tool_result`: `ServerToolDropped`; `is_error: true`: `ErrorFlagDropped`; base64 images become `data:` URLs, text documents become text: `PartChanged`; URL documents (Chat): `PartDropped`; non-text tool output (Chat): `PartDropped` |
//! | Responses -> Anthropic | `reasoning` (summaries, `encrypted_content`): `ReasoningDropped`; developer role: `RoleChanged`; custom / local shell calls become `tool_use`: `ToolKindChanged`, free-text input wrapped as `{"input": ...}`: `ArgumentsWrapped`, and custom tools in `tools[]` become tools taking `{"input": string}`: `ToolKindChanged`; OpenAI file ids: `PartDropped`; `data:` URL images become base64: `PartChanged`; refusals become text: `PartChanged` |
//! | Chat -> Anthropic      | developer role: `RoleChanged`; system messages after the first non-system one: `MovedToUser`; `data:` URL images become base64: `PartChanged`; audio and file ids: `PartDropped`; image `detail`: `FieldsDropped`; legacy `function_call`: `IdSynthesized` |
//! | Responses -> Chat      | reasoning: `ReasoningDropped`; local shell calls become function calls: `ToolKindChanged`; non-text tool output: `PartDropped` (custom tools and calls map 1:1) |
//! | Chat -> Responses      | audio: `PartDropped`; legacy `function_call`: `IdSynthesized`; `name` on messages: `FieldsDropped` |
//!
//! Rules for items that did not come from the target format: an Anthropic request gets leading
//! system / developer items as `system`, every item in a message of its own, then adjacent messages of
//! one role merged with `tool_result` blocks first; a Chat request gets consecutive assistant text and
//! tool calls in one assistant message; a Responses request gets one item per item. An Anthropic
//! request that would open with an assistant turn (compaction removed what came before it, or the
//! source started with the assistant) gets a placeholder user message first
//! ([`anthropic::LEADING_USER_TEXT`], reported as `PlaceholderAdded`), unless that turn was already
//! the first message of its source Anthropic request (written back as it was); one that would have
//! no message at all (compaction left only system text) gets the placeholder as its message, and a
//! request with an empty `messages` list does not decode. Reasoning is never
//! moved between providers (signatures and encrypted payloads are bound to the provider that made
//! them); reasoning built in memory is written when the target can carry it. Items hidden from the
//! model (`Visibility::model == false`) are never encoded and are not losses.

pub mod anthropic;
mod common;
mod digest;
mod incremental;
mod json;
mod loss;
pub mod openai_chat;
pub mod openai_responses;
mod part;
mod request;

use crate::error::{DecodeError, EncodeError};
use compact_core::model::{Conversation, Format, ItemBody};
use serde_json::Value;
use std::collections::HashMap;

pub use incremental::IncrementalDecode;
pub(crate) use json::type_name;
pub use loss::{Loss, LossKind};
pub(crate) use request::decode_tools;

/// An encoded request and what the encoding dropped or changed (empty for a same-format encode).
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    /// The request JSON.
    pub value: Value,
    /// Everything the conversion could not carry, in item order.
    pub losses: Vec<Loss>,
}

/// The request member holding the message list: `input` for Responses, `messages` for Chat and
/// Anthropic.
pub fn list_key(format: Format) -> &'static str {
    if format == Format::OpenAiResponses {
        "input"
    } else {
        "messages"
    }
}

/// Decodes a whole request of a wire `format` into a conversation (tool result names resolved).
pub fn decode(format: Format, request: &Value) -> Result<Conversation, DecodeError> {
    let mut conv = decode_from(format, request, 0)?.into_conversation();
    resolve_tool_names(&mut conv);
    Ok(conv)
}

/// Decodes a request's own fields and its messages from the `from`-th on.
fn decode_from(
    format: Format,
    request: &Value,
    from: usize,
) -> Result<request::Decoded, DecodeError> {
    match format {
        Format::OpenAiChat => openai_chat::decode_request(request, from),
        Format::OpenAiResponses => openai_responses::decode_request(request, from),
        Format::Anthropic => anthropic::decode_request(request, from),
        other => Err(DecodeError::new(
            "",
            format!("`{other}` is not a wire format (expected openai-chat, openai-responses or anthropic)"),
        )),
    }
}

/// Encodes a conversation as a request of a wire `format`, reporting every loss.
pub fn encode(conv: &Conversation, format: Format) -> Result<Encoded, EncodeError> {
    let mut losses = Vec::new();
    if format.is_wire() {
        common::note_envelopes(&conv.items, format, &mut losses);
    }
    let value = match format {
        Format::OpenAiChat => openai_chat::encode_request(conv, &mut losses),
        Format::OpenAiResponses => openai_responses::encode_request(conv, &mut losses),
        Format::Anthropic => anthropic::encode_request(conv, &mut losses),
        other => return Err(EncodeError::NotWireFormat(other)),
    };
    // Item order, request-level losses last (the sort is stable, so each item's losses keep their order).
    losses.sort_by_key(|l| l.item.unwrap_or(usize::MAX));
    Ok(Encoded { value, losses })
}

/// Fills `ToolResult::tool_name` from the call each result answers (the most recent earlier call with
/// the same id), for results whose wire form does not carry the name.
pub fn resolve_tool_names(conv: &mut Conversation) {
    let mut names: HashMap<String, String> = HashMap::new();
    for item in &mut conv.items {
        let pending = match item.body() {
            ItemBody::ToolCall(c) => {
                names.insert(c.call_id.clone(), c.name.clone());
                None
            }
            ItemBody::ToolResult(r) if r.tool_name.is_none() => names.get(&r.call_id).cloned(),
            _ => None,
        };
        if let Some(name) = pending {
            // The name follows from the items before this one, so the item still stands for the
            // same wire JSON at the same place: its fingerprint stays.
            let digest = item.wire_digest();
            if let ItemBody::ToolResult(r) = item.body_mut() {
                r.tool_name = Some(name);
            }
            if let Some(d) = digest {
                item.set_wire_digest(d);
            }
        }
    }
}
