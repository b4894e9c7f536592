//! Decoding Chat Completions requests and messages into items.

use super::parts::decode_content;
use crate::error::DecodeError;
use crate::wire::common::{envelope, new_item, push_parts};
use crate::wire::json::{elem, nest, unexpected, Fields};
use crate::wire::request::{decode_messages, decoded_head, Decoded};
use compact_core::model::{
    Arguments, Format, Item, ItemBody, Message, Role, ToolCall, ToolCallKind, ToolResult,
};
use serde_json::Value;

const FORMAT: Format = Format::OpenAiChat;

/// Decodes a request from its `from`-th message on (0: the whole request).
pub(crate) fn decode_request(req: &Value, from: usize) -> Result<Decoded, DecodeError> {
    let (mut f, messages) = Fields::of_request(req, "messages")?;
    let mut out = Decoded::default();
    decode_messages(FORMAT, &mut f, messages, from, &mut out, decode_message)?;
    out.head = decoded_head(FORMAT, f);
    Ok(out)
}

/// Decodes one Chat message (the `index`-th of its request, found at `path`) into items appended to
/// `out`, all sharing one envelope.
pub fn decode_message(
    msg: &Value,
    index: u32,
    path: &str,
    out: &mut Vec<Item>,
) -> Result<(), DecodeError> {
    let mut f = Fields::of(msg, path)?;
    let role_name = f.req_str("role")?;
    let mut bodies: Vec<ItemBody> = Vec::new();
    let was_string;
    match role_name.as_str() {
        "system" | "developer" | "user" => {
            let role = match role_name.as_str() {
                "system" => Role::System,
                "developer" => Role::Developer,
                _ => Role::User,
            };
            let content = decode_content(&mut f)?;
            was_string = content.as_ref().is_none_or(|c| c.1);
            push_parts(&mut bodies, role, content.map(|c| c.0).unwrap_or_default());
            if bodies.is_empty() {
                bodies.push(ItemBody::Message(Message {
                    role,
                    parts: Vec::new(),
                }));
            }
        }
        "assistant" => {
            let content = decode_content(&mut f)?;
            was_string = content.as_ref().is_none_or(|c| c.1);
            if let Some((parts, _)) = content {
                bodies.push(ItemBody::Message(Message {
                    role: Role::Assistant,
                    parts,
                }));
            }
            match f.take("tool_calls") {
                Some(Value::Array(calls)) if !calls.is_empty() => {
                    let cpath = f.at("tool_calls");
                    for (i, c) in calls.iter().enumerate() {
                        bodies.push(ItemBody::ToolCall(decode_tool_call(c, &elem(&cpath, i))?));
                    }
                }
                Some(Value::Array(empty)) => f.put("tool_calls", Value::Array(empty)),
                Some(Value::Null) => f.put("tool_calls", Value::Null),
                Some(other) => return Err(unexpected(f.at("tool_calls"), "an array", &other)),
                None => {}
            }
            if let Some(fc) = f.take_non_null("function_call") {
                let mut c = Fields::of(&fc, &f.at("function_call"))?;
                let name = c.req_str("name")?;
                let arguments = arguments(&mut c)?;
                bodies.push(ItemBody::ToolCall(ToolCall {
                    call_id: String::new(),
                    name,
                    arguments,
                    kind: ToolCallKind::Function,
                    extra: c.rest(),
                }));
            }
            if bodies.is_empty() {
                bodies.push(ItemBody::Message(Message {
                    role: Role::Assistant,
                    parts: Vec::new(),
                }));
            }
        }
        "tool" | "function" => {
            let (call_id, tool_name) = if role_name == "tool" {
                (f.req_id("tool_call_id")?, None)
            } else {
                (String::new(), Some(f.req_str("name")?))
            };
            let content = decode_content(&mut f)?;
            was_string = content.as_ref().is_none_or(|c| c.1);
            bodies.push(ItemBody::ToolResult(ToolResult {
                call_id,
                tool_name,
                parts: content.map(|c| c.0).unwrap_or_default(),
                is_error: false,
                kind: ToolCallKind::Function,
                content_was_string: was_string,
                extra: Default::default(),
            }));
        }
        other => {
            return Err(DecodeError::new(
                f.at("role"),
                format!(
                "expected one of system, developer, user, assistant, tool, function; got `{other}`"
            ),
            ))
        }
    }
    let env = envelope(FORMAT, index, f.rest(), was_string);
    out.extend(bodies.into_iter().map(|b| new_item(b, &env, FORMAT)));
    Ok(())
}

/// `arguments` of a function call: a string (normally JSON text) or, from lenient clients, any JSON.
fn arguments(f: &mut Fields) -> Result<Arguments, DecodeError> {
    match f.req("arguments")? {
        Value::String(s) => Ok(Arguments::Text(s)),
        other => Ok(Arguments::Json(other)),
    }
}

/// One `tool_calls` entry. Its `type` stays in extra (it is optional in practice).
fn decode_tool_call(v: &Value, path: &str) -> Result<ToolCall, DecodeError> {
    let mut f = Fields::of(v, path)?;
    let call_id = f.req_id("id")?;
    let ty = f.opt_tag("type")?;
    if ty.as_deref() == Some("custom") {
        let mut c = f.nested("custom")?;
        let name = c.req_str("name")?;
        let input = c.req_str("input")?;
        let mut extra = f.rest();
        nest(&mut extra, "custom", c.rest());
        return Ok(ToolCall {
            call_id,
            name,
            arguments: Arguments::Text(input),
            kind: ToolCallKind::Custom,
            extra,
        });
    }
    let mut c = f.nested("function")?;
    let name = c.req_str("name")?;
    let arguments = arguments(&mut c)?;
    let mut extra = f.rest();
    nest(&mut extra, "function", c.rest());
    Ok(ToolCall {
        call_id,
        name,
        arguments,
        kind: ToolCallKind::Function,
        extra,
    })
}
