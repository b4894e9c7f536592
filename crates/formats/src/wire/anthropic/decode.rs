//! Decoding Anthropic Messages requests and messages into items.

use super::blocks::{decode_block, Block};
use crate::error::DecodeError;
use crate::wire::common::{envelope, new_item, push_parts};
use crate::wire::digest::{stamp, value_digest};
use crate::wire::json::{elem, unexpected, Fields};
use crate::wire::request::{decode_messages, decoded_head, Decoded};
use compact_core::model::{Envelope, Format, Item, ItemBody, Message, Part, Role};
use serde_json::Value;
use std::sync::Arc;

const FORMAT: Format = Format::Anthropic;

/// Decodes a request from its `from`-th message on (0: the whole request; `system` is decoded
/// every time).
pub(crate) fn decode_request(req: &Value, from: usize) -> Result<Decoded, DecodeError> {
    let (mut f, messages) = Fields::of_request(req, "messages")?;
    let mut out = Decoded::default();
    let items = &mut out.items;
    if let Some(system) = f.take_non_null("system") {
        let mut item = decode_system(&system, &f.at("system"))?;
        stamp(
            std::slice::from_mut(&mut item),
            value_digest(FORMAT, "system", &system),
        );
        items.push(item);
    }
    out.lead();
    // The Messages API requires a message; the encoder writes a placeholder one for a conversation
    // without any, so an empty list could not be written back as it was.
    if messages.is_some_and(Vec::is_empty) {
        return Err(DecodeError::new(
            f.at("messages"),
            "no messages (a Messages request needs at least one)",
        ));
    }
    decode_messages(FORMAT, &mut f, messages, from, &mut out, decode_message)?;
    out.head = decoded_head(FORMAT, f);
    Ok(out)
}

/// Decodes the `system` field (a string or text blocks) into one system item with slot `"system"`.
fn decode_system(system: &Value, path: &str) -> Result<Item, DecodeError> {
    let (parts, was_string) = match system {
        Value::String(s) => (vec![Part::text(s.clone())], true),
        Value::Array(blocks) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, b) in blocks.iter().enumerate() {
                match decode_block(b, &elem(path, i))? {
                    Block::Part(p) => parts.push(p),
                    Block::Body(_) => {
                        return Err(DecodeError::new(
                            elem(path, i),
                            "expected a text block in `system`",
                        ))
                    }
                }
            }
            (parts, false)
        }
        other => return Err(unexpected(path, "a string or an array", other)),
    };
    let env = Arc::new(Envelope {
        format: Some(FORMAT),
        message: 0,
        extra: Default::default(),
        content_was_string: was_string,
        slot: Some("system"),
    });
    Ok(new_item(
        ItemBody::Message(Message {
            role: Role::System,
            parts,
        }),
        &env,
        FORMAT,
    ))
}

/// Decodes one Anthropic `{role, content}` message (the `index`-th of its request, found at `path`)
/// into items appended to `out`, all sharing one envelope.
///
/// The role is `user`, `assistant` or `system`: Claude Code puts a `system` message among the
/// messages (right after the first user message, with its environment), which becomes a system
/// message item at its place.
pub fn decode_message(
    msg: &Value,
    index: u32,
    path: &str,
    out: &mut Vec<Item>,
) -> Result<(), DecodeError> {
    let mut f = Fields::of(msg, path)?;
    let role = match f.tag("role")?.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        other => {
            return Err(DecodeError::new(
                f.at("role"),
                format!("expected `user`, `assistant` or `system`, got `{other}`"),
            ))
        }
    };
    let content_path = f.at("content");
    let content = f.req("content")?;
    let mut bodies: Vec<ItemBody> = Vec::new();
    let was_string = match content {
        Value::String(s) => {
            push_parts(&mut bodies, role, vec![Part::text(s)]);
            true
        }
        Value::Array(blocks) => {
            let mut pending: Vec<Part> = Vec::new();
            for (i, b) in blocks.iter().enumerate() {
                match decode_block(b, &elem(&content_path, i))? {
                    Block::Part(p) => pending.push(p),
                    Block::Body(body) => {
                        push_parts(&mut bodies, role, std::mem::take(&mut pending));
                        bodies.push(body);
                    }
                }
            }
            push_parts(&mut bodies, role, pending);
            false
        }
        other => return Err(unexpected(content_path, "a string or an array", &other)),
    };
    if bodies.is_empty() {
        bodies.push(ItemBody::Message(Message {
            role,
            parts: Vec::new(),
        }));
    }
    // The role is implied by the first item unless, say, a user message starts with a tool call: then
    // it stays in extra, where the encoder finds it.
    if bodies.first().map(implied_role) == Some(role) {
        f.take("role");
    }
    let env = envelope(FORMAT, index, f.rest(), was_string);
    out.extend(bodies.into_iter().map(|b| new_item(b, &env, FORMAT)));
    Ok(())
}

/// The role of the message an item body is encoded into when nothing else says otherwise.
pub(crate) fn implied_role(body: &ItemBody) -> Role {
    match body {
        ItemBody::Message(m) if m.role == Role::Assistant => Role::Assistant,
        ItemBody::Message(m) if m.role == Role::System => Role::System,
        ItemBody::Message(_) | ItemBody::Checkpoint(_) => Role::User,
        ItemBody::ToolResult(r) if r.kind != compact_core::model::ToolCallKind::Server => {
            Role::User
        }
        ItemBody::Opaque(o) if matches!(o.role, Some(Role::User | Role::Tool)) => Role::User,
        _ => Role::Assistant,
    }
}
