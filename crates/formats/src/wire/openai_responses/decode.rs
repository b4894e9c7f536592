//! Decoding Responses requests and input items into items.

use super::parts::{decode_content, INPUT_TEXT, OUTPUT_TEXT};
use crate::error::DecodeError;
use crate::wire::common::{checkpoint_of, envelope, new_item, Recognised};
use crate::wire::digest::{stamp, value_digest};
use crate::wire::json::{elem, unexpected, Fields};
use crate::wire::request::{decoded_head, Decoded};
use compact_core::model::{
    Arguments, CompactionWire, Envelope, Extra, Format, Item, ItemBody, ItemId, Message, Opaque,
    Part, ProviderCompaction, Reasoning, Role, ToolCall, ToolCallKind, ToolResult,
};
use serde_json::Value;
use std::sync::Arc;

const FORMAT: Format = Format::OpenAiResponses;

/// Envelope slot of the item decoded from `instructions`.
pub(crate) const INSTRUCTIONS: &str = "instructions";
/// Envelope slot of the item decoded from a plain-string `input`.
pub(crate) const INPUT: &str = "input";
/// `ToolCall::name` of a `local_shell_call` (the wire item has no name).
pub(crate) const LOCAL_SHELL: &str = "local_shell";

/// Decodes a request from its `from`-th input item on (0: the whole request; `instructions` and a
/// string `input` are decoded every time).
pub(crate) fn decode_request(req: &Value, from: usize) -> Result<Decoded, DecodeError> {
    let (mut f, list) = Fields::of_request(req, INPUT)?;
    let mut out = Decoded::default();
    match f.take_non_null(INSTRUCTIONS) {
        Some(v @ Value::String(_)) => out.items.push(slot_item(Role::System, v, INSTRUCTIONS)),
        Some(other) => f.put(INSTRUCTIONS, other),
        None => {}
    }
    let input_path = f.at(INPUT);
    // An array `input` is read where it is ([`Fields::of_request`]); `f` holds a `null` for it.
    let input = match list {
        Some(_) => {
            f.take(INPUT); // the `null` standing for the array
            None
        }
        None => f.take_non_null(INPUT),
    };
    match (input, list) {
        (_, Some(input)) if input.is_empty() => f.put(INPUT, Value::Array(Vec::new())),
        (Some(v @ Value::String(_)), _) => out.items.push(slot_item(Role::User, v, INPUT)),
        (_, Some(input)) => {
            out.lead();
            for (i, v) in input.iter().enumerate().skip(from) {
                let index = u32::try_from(i).unwrap_or(u32::MAX);
                let mut item = decode_item(v, index, &elem(&input_path, i))?;
                stamp(
                    std::slice::from_mut(&mut item),
                    value_digest(FORMAT, &index.to_string(), v),
                );
                out.items.push(item);
                out.end_message();
            }
        }
        (Some(other), None) => return Err(unexpected(input_path, "a string or an array", &other)),
        (None, None) => {}
    }
    if out.ends.is_empty() {
        out.lead();
    }
    out.head = decoded_head(FORMAT, f);
    Ok(out)
}

/// The item of a top-level string field (`instructions`, string `input`): `value` is the string.
fn slot_item(role: Role, value: Value, slot: &'static str) -> Item {
    let digest = value_digest(FORMAT, slot, &value);
    let part = Part::text(match value {
        Value::String(s) => s,
        other => other.to_string(),
    });
    let env = Arc::new(Envelope {
        format: Some(FORMAT),
        message: 0,
        extra: Extra::new(),
        content_was_string: true,
        slot: Some(slot),
    });
    let body = if role == Role::User {
        match checkpoint_of(part) {
            Recognised::Checkpoint(cp) => ItemBody::Checkpoint(cp),
            Recognised::Part(part) => ItemBody::Message(Message {
                role,
                parts: vec![part],
            }),
        }
    } else {
        ItemBody::Message(Message {
            role,
            parts: vec![part],
        })
    };
    let mut item = new_item(body, &env, FORMAT);
    stamp(std::slice::from_mut(&mut item), digest);
    item
}

/// Decodes one Responses input item (the `index`-th of `input`, found at `path`).
pub fn decode_item(v: &Value, index: u32, path: &str) -> Result<Item, DecodeError> {
    let mut f = Fields::of(v, path)?;
    let ty = f.opt_tag("type")?;
    let wire_id = f.peek_str("id").map(str::to_owned);
    let mut env_extra = Extra::new();
    let mut was_string = false;
    let body = match ty.as_deref() {
        None | Some("message") => {
            let role = match f.req_str("role")?.as_str() {
                "user" => Role::User,
                "assistant" => Role::Assistant,
                "system" => Role::System,
                "developer" => Role::Developer,
                other => {
                    return Err(DecodeError::new(
                        f.at("role"),
                        format!(
                            "expected one of user, assistant, system, developer; got `{other}`"
                        ),
                    ))
                }
            };
            let text_type = if role == Role::Assistant {
                OUTPUT_TEXT
            } else {
                INPUT_TEXT
            };
            let path = f.at("content");
            let (mut parts, string) = decode_content(f.req("content")?, &path, text_type)?;
            was_string = string;
            env_extra = f.rest();
            match (role, parts.len()) {
                (Role::User, 1) => match checkpoint_of(parts.remove(0)) {
                    Recognised::Checkpoint(cp) => ItemBody::Checkpoint(cp),
                    Recognised::Part(part) => ItemBody::Message(Message {
                        role,
                        parts: vec![part],
                    }),
                },
                _ => ItemBody::Message(Message { role, parts }),
            }
        }
        Some("function_call") | Some("custom_tool_call") => {
            let custom = ty.as_deref() == Some("custom_tool_call");
            f.take("type");
            let call_id = f.req_id("call_id")?;
            let name = f.req_str("name")?;
            let (arguments, kind) = if custom {
                (Arguments::Text(f.req_str("input")?), ToolCallKind::Custom)
            } else {
                let arguments = match f.req("arguments")? {
                    Value::String(s) => Arguments::Text(s),
                    other => Arguments::Json(other),
                };
                (arguments, ToolCallKind::Function)
            };
            ItemBody::ToolCall(ToolCall {
                call_id,
                name,
                arguments,
                kind,
                extra: f.rest(),
            })
        }
        Some("local_shell_call") => {
            f.take("type");
            let call_id = f.req_id("call_id")?;
            let action = f.req("action")?;
            ItemBody::ToolCall(ToolCall {
                call_id,
                name: LOCAL_SHELL.to_owned(),
                arguments: Arguments::Json(action),
                kind: ToolCallKind::LocalShell,
                extra: f.rest(),
            })
        }
        Some(
            t @ ("function_call_output" | "custom_tool_call_output" | "local_shell_call_output"),
        ) => {
            let kind = match t {
                "function_call_output" => ToolCallKind::Function,
                "custom_tool_call_output" => ToolCallKind::Custom,
                _ => ToolCallKind::LocalShell,
            };
            f.take("type");
            let call_id = output_call_id(&mut f, kind)?;
            let path = f.at("output");
            let (parts, string) = decode_content(f.req("output")?, &path, INPUT_TEXT)?;
            ItemBody::ToolResult(ToolResult {
                call_id,
                tool_name: None,
                parts,
                is_error: false,
                kind,
                content_was_string: string,
                extra: f.rest(),
            })
        }
        Some(t @ ("compaction" | "compaction_trigger")) => {
            let wire = if t == "compaction" {
                CompactionWire::OpenAiItem
            } else {
                CompactionWire::OpenAiTrigger
            };
            if let Some(other) = f.peek("encrypted_content").filter(|v| !v.is_string()) {
                return Err(unexpected(f.at("encrypted_content"), "a string", other));
            }
            ItemBody::ProviderCompaction(ProviderCompaction::new(wire, v.clone()))
        }
        Some("reasoning") => match reasoning(f)? {
            Some(r) => ItemBody::Reasoning(r),
            None => opaque(v, "reasoning"),
        },
        Some(other) => opaque(v, other),
    };
    let env = envelope(FORMAT, index, env_extra, was_string);
    let mut item = new_item(body, &env, FORMAT);
    if let Some(id) = wire_id {
        item.meta.id = ItemId::new(id);
    }
    Ok(item)
}

/// The call id of an output item. A `local_shell_call_output` may name its call by `id` alone; that
/// `id` then stays in extra and the encoder writes no `call_id` (it also leaves a `call_id` equal to
/// `id` in extra, so both spellings round-trip).
fn output_call_id(f: &mut Fields, kind: ToolCallKind) -> Result<String, DecodeError> {
    if kind == ToolCallKind::LocalShell {
        let id = f
            .peek_str("id")
            .filter(|id| !id.is_empty())
            .map(str::to_owned);
        match (f.peek_str("call_id").map(str::to_owned), id) {
            (Some(c), Some(id)) if c == id => return Ok(c),
            (None, Some(id)) => return Ok(id),
            _ => {}
        }
    }
    f.req_id("call_id")
}

/// A reasoning item whose `summary` is a list of `summary_text` parts; `None` for any other shape
/// (the item is then carried as opaque).
fn reasoning(mut f: Fields) -> Result<Option<Reasoning>, DecodeError> {
    let Some(Value::Array(summary)) = f.peek("summary") else {
        return Ok(None);
    };
    let mut texts = Vec::with_capacity(summary.len());
    for s in summary {
        let Some(o) = s.as_object() else {
            return Ok(None);
        };
        let text = o.get("text").and_then(Value::as_str);
        match text {
            Some(t)
                if o.len() == 2
                    && o.get("type").and_then(Value::as_str) == Some("summary_text") =>
            {
                texts.push(t.to_owned());
            }
            _ => return Ok(None),
        }
    }
    f.take("type");
    f.take("summary");
    let encrypted = f.opt_str("encrypted_content")?;
    Ok(Some(Reasoning {
        summary: texts,
        encrypted,
        extra: f.rest(),
        ..Reasoning::default()
    }))
}

/// An item carried untouched.
fn opaque(v: &Value, label: &str) -> ItemBody {
    let role = match v.get("role").and_then(Value::as_str) {
        Some("user") => Some(Role::User),
        Some("assistant") => Some(Role::Assistant),
        Some("system") => Some(Role::System),
        Some("developer") => Some(Role::Developer),
        _ if label.ends_with("_output") => Some(Role::Tool),
        _ => None,
    };
    ItemBody::Opaque(Opaque {
        label: label.to_owned(),
        role,
        value: v.clone(),
    })
}
