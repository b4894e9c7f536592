//! Plain files of the three wire formats: a request object, a JSON array of messages (Chat, Anthropic)
//! or items (Responses), a single message or item, or JSONL with one message or item per line. All
//! decoding is done by [`crate::wire`].
//!
//! Arrays become the request's `messages` (`input` for Responses); for Anthropic, a leading
//! `{role: "system"}` message with text content becomes the request's `system`. In JSONL every line
//! is a record of its own, so a broken line is reported (or, leniently, skipped) on its own.

use super::source::{lines, Ctx};
use super::ImportError;
use crate::wire::{self, anthropic, list_key, openai_chat, openai_responses};
use compact_core::model::{Conversation, Envelope, Extra, Format, Item, Role};
use serde_json::{Map, Value};
use std::sync::Arc;

/// Imports a wire-format file of `format` (one of the three wire formats).
pub(crate) fn import(
    bytes: &[u8],
    format: Format,
    ctx: &mut Ctx<'_>,
) -> Result<Conversation, ImportError> {
    let conversation = match ctx.parse_document(bytes) {
        Ok(v) => document(v, format, bytes, ctx)?,
        Err(doc_err) => {
            let jsonl = lines(bytes)
                .find(|l| !l.is_blank())
                .is_some_and(|l| serde_json::from_slice::<Value>(l.bytes).is_ok());
            if jsonl {
                jsonl_file(bytes, format, ctx)?
            } else {
                return Err(doc_err);
            }
        }
    };
    // A wire request reports failures only through its results' error flags.
    ctx.stats.errors += conversation
        .items
        .iter()
        .filter(|i| i.as_tool_result().is_some_and(|r| r.is_error))
        .count();
    Ok(conversation)
}

/// A whole JSON document.
fn document(
    v: Value,
    format: Format,
    bytes: &[u8],
    ctx: &mut Ctx<'_>,
) -> Result<Conversation, ImportError> {
    let key = list_key(format);
    let request = match v {
        Value::Object(o) if o.contains_key("messages") || o.contains_key("input") => {
            Value::Object(o)
        }
        Value::Array(list) => wrap(format, key, list),
        Value::Object(o) => wrap(format, key, vec![Value::Object(o)]),
        _ => {
            return Err(ImportError::Malformed {
                at: ctx.at_offset(bytes, 0),
                what: format!("expected a {format} request, a list of messages or one message"),
            })
        }
    };
    ctx.stats.records_read += match request.get(key) {
        Some(Value::Array(list)) => list.len(),
        _ => 1,
    };
    wire::decode(format, &request).map_err(|source| ImportError::Decode {
        at: ctx.at_offset(bytes, 0),
        source,
    })
}

/// A request holding `list`.
fn wrap(format: Format, key: &str, mut list: Vec<Value>) -> Value {
    let mut request = Map::new();
    if format == Format::Anthropic {
        let leading_system = list
            .first()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .and_then(|m| m.get("content"))
            .filter(|c| c.is_string() || c.is_array())
            .cloned();
        if let Some(system) = leading_system {
            list.remove(0);
            request.insert("system".to_owned(), system);
        }
    }
    request.insert(key.to_owned(), Value::Array(list));
    Value::Object(request)
}

/// JSONL: one message or item per line.
fn jsonl_file(
    bytes: &[u8],
    format: Format,
    ctx: &mut Ctx<'_>,
) -> Result<Conversation, ImportError> {
    let mut conv = Conversation {
        format: Some(format),
        ..Conversation::default()
    };
    let key = list_key(format);
    let mut index: u32 = 0;
    let mut all: Vec<Item> = Vec::new();
    for line in lines(bytes) {
        let Some(v) = ctx.parse_line(&line)? else {
            continue;
        };
        let path = format!("/{key}/{index}");
        let mut items = Vec::new();
        let decoded = match format {
            Format::OpenAiResponses => {
                openai_responses::decode_item(&v, index, &path).map(|i| items.push(i))
            }
            Format::Anthropic if v.get("role").and_then(Value::as_str) == Some("system") => {
                items.push(anthropic_system(&v));
                Ok(())
            }
            Format::Anthropic => anthropic::decode_message(&v, index, &path, &mut items),
            _ => openai_chat::decode_message(&v, index, &path, &mut items),
        };
        if let Err(e) = decoded {
            ctx.decode_problem(ctx.at_line(&line, 1), e)?;
            continue;
        }
        index += 1;
        // Items keep a wire id (Responses) and otherwise get their content id, as in a request
        // file: the same message has the same id in the log and in a compacted request.
        all.extend(items);
    }
    conv.extend_unique(all);
    Ok(conv)
}

/// A `{role: "system", content}` line of an Anthropic JSONL file: the request's `system`.
fn anthropic_system(v: &Value) -> Item {
    let content = v.get("content").unwrap_or(&Value::Null);
    let mut item = Item::text(Role::System, super::source::text_of(content));
    item.meta.origin = Some(Format::Anthropic);
    item.meta.envelope = Some(Arc::new(Envelope {
        format: Some(Format::Anthropic),
        message: 0,
        extra: Extra::new(),
        content_was_string: content.is_string(),
        slot: Some("system"),
    }));
    item
}
