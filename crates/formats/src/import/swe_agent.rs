//! SWE-agent trajectories (`.traj`): the `history[]` array is what the model saw.
//!
//! Entries with role `system`, `user` and `assistant` become messages; an assistant's `tool_calls`
//! become tool calls and `tool` entries their results (by `tool_call_ids`, else in call order).
//! Older runs have no tool calls: the command is a fenced block at the end of the assistant text (also
//! given as `action`) and the observation is the next user message. For those the importer synthesises
//! a [`ToolCallKind::Custom`] call with id `swe-h<index>` whose input is the action, removes the command
//! block from the assistant text, and turns the next user entry into the call's result. Item ids are
//! `h<index>` (`h<index>.k` when an entry yields several items). Files without `history` are read from
//! `trajectory[]` (each step's `response` and `observation`), with the same synthesised calls.

use super::source::{str_field, text_of, Ctx};
use super::{item_ids, stamp, ImportError};
use compact_core::model::{
    Arguments, Conversation, Envelope, Extra, Format, Item, ItemBody, Message, Part, Role,
    ToolCall, ToolCallKind, ToolResult,
};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;

/// Prefix of synthesised call ids.
pub const SYNTHETIC_CALL_PREFIX: &str = "swe-h";

/// Imports a `.traj` file.
pub(crate) fn import(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Conversation, ImportError> {
    let doc = ctx.parse_document(bytes)?;
    let history = match (
        doc.get("history").and_then(Value::as_array),
        doc.get("trajectory"),
    ) {
        (Some(h), _) if !h.is_empty() => h.clone(),
        (_, Some(Value::Array(steps))) => from_trajectory(steps),
        (Some(h), _) => h.clone(),
        _ => {
            return Err(ImportError::Malformed {
                at: ctx.at_offset(bytes, 0),
                what: "not a SWE-agent trajectory: no `history` or `trajectory` array".to_owned(),
            })
        }
    };
    let mut conv = Conversation::default();
    // Calls of the latest assistant entry that no result has answered yet.
    let mut open: VecDeque<String> = VecDeque::new();
    // The synthesised call the next user entry answers.
    let mut pending: Option<String> = None;
    for (idx, entry) in history.iter().enumerate() {
        ctx.stats.records_read += 1;
        let Some(role) = str_field(entry, "role") else {
            ctx.problem(
                ctx.at_offset(bytes, 0),
                format!("history[{idx}]: no `role`"),
            )?;
            continue;
        };
        let text = entry.get("content").map(text_of).unwrap_or_default();
        let mut bodies: Vec<ItemBody> = Vec::new();
        match role {
            "system" => bodies.push(message(Role::System, text)),
            "user" => match pending.take() {
                Some(call_id) if entry.get("is_demo").and_then(Value::as_bool) != Some(true) => {
                    bodies.push(result(call_id, text, ToolCallKind::Custom));
                }
                _ => bodies.push(message(Role::User, text)),
            },
            "assistant" => {
                pending = None;
                open.clear();
                let calls = entry
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .filter(|c| !c.is_empty());
                let action = str_field(entry, "action").unwrap_or_default();
                match calls {
                    Some(calls) => {
                        if !text.trim().is_empty() {
                            bodies.push(message(Role::Assistant, text));
                        }
                        for (k, call) in calls.iter().enumerate() {
                            let body =
                                function_call(call, &format!("{SYNTHETIC_CALL_PREFIX}{idx}.{k}"));
                            if let ItemBody::ToolCall(c) = &body {
                                open.push_back(c.call_id.clone());
                            }
                            bodies.push(body);
                        }
                    }
                    None if !action.trim().is_empty() => {
                        let thought = strip_command_block(&text, action);
                        if !thought.trim().is_empty() {
                            bodies.push(message(Role::Assistant, thought.to_owned()));
                        }
                        let call_id = format!("{SYNTHETIC_CALL_PREFIX}{idx}");
                        bodies.push(ItemBody::ToolCall(ToolCall {
                            call_id: call_id.clone(),
                            name: action
                                .split_whitespace()
                                .next()
                                .unwrap_or_default()
                                .to_owned(),
                            arguments: Arguments::Text(action.trim_end().to_owned()),
                            kind: ToolCallKind::Custom,
                            extra: Extra::new(),
                        }));
                        pending = Some(call_id);
                    }
                    None => bodies.push(message(Role::Assistant, text)),
                }
            }
            "tool" => {
                let ids: Vec<String> = entry
                    .get("tool_call_ids")
                    .and_then(Value::as_array)
                    .map(|ids| {
                        ids.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let ids = if ids.is_empty() {
                    open.pop_front().into_iter().collect()
                } else {
                    ids
                };
                let mut text = Some(text);
                for id in &ids {
                    open.retain(|o| o != id);
                    bodies.push(result(
                        id.clone(),
                        text.take().unwrap_or_default(),
                        ToolCallKind::Function,
                    ));
                }
                if let Some(text) = text {
                    // No call to answer: keep the output as an unpaired result.
                    bodies.push(result(String::new(), text, ToolCallKind::Function));
                }
            }
            other => {
                ctx.problem(
                    ctx.at_offset(bytes, 0),
                    format!("history[{idx}]: unknown role `{other}`"),
                )?;
                continue;
            }
        }
        let env = Arc::new(Envelope {
            format: None,
            message: u32::try_from(idx).unwrap_or(u32::MAX),
            extra: Extra::new(),
            content_was_string: true,
            slot: None,
        });
        let ids = item_ids(&format!("h{idx}"), bodies.len());
        for (body, id) in bodies.into_iter().zip(ids) {
            let mut item = Item::new(body);
            stamp(&mut item, id, None, Format::SweAgent);
            item.meta.envelope = Some(Arc::clone(&env));
            conv.items.push(item);
        }
    }
    Ok(conv)
}

/// History entries rebuilt from `trajectory[]` steps, for files that have no `history`: each step is
/// the model's `response` (with `thought` and `action`) and the `observation` that followed.
fn from_trajectory(steps: &[Value]) -> Vec<Value> {
    let mut out = Vec::with_capacity(steps.len() * 2);
    for step in steps {
        let response = str_field(step, "response").filter(|r| !r.trim().is_empty());
        let thought = str_field(step, "thought").unwrap_or_default();
        let action = str_field(step, "action").unwrap_or_default();
        let content = response.map_or_else(
            || format!("{thought}```\n{}\n```", action.trim_end()),
            str::to_owned,
        );
        out.push(
            json!({"role": "assistant", "content": content, "thought": thought, "action": action}),
        );
        if let Some(observation) = step.get("observation").filter(|o| !o.is_null()) {
            out.push(json!({"role": "user", "content": text_of(observation)}));
        }
    }
    out
}

/// A one-text-part message.
fn message(role: Role, text: String) -> ItemBody {
    ItemBody::Message(Message {
        role,
        parts: vec![Part::text(text)],
    })
}

/// A text result.
fn result(call_id: String, text: String, kind: ToolCallKind) -> ItemBody {
    ItemBody::ToolResult(ToolResult {
        call_id,
        tool_name: None,
        parts: vec![Part::text(text)],
        is_error: false,
        kind,
        content_was_string: true,
        extra: Extra::new(),
    })
}

/// A Chat Completions style `{id, function: {name, arguments}}` call (`fallback_id` when it has no id).
fn function_call(call: &Value, fallback_id: &str) -> ItemBody {
    let function = call.get("function").unwrap_or(&Value::Null);
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => Arguments::Text(s.clone()),
        Some(other) => Arguments::Json(other.clone()),
        None => Arguments::Text(String::new()),
    };
    ItemBody::ToolCall(ToolCall {
        call_id: str_field(call, "id").unwrap_or(fallback_id).to_owned(),
        name: str_field(function, "name").unwrap_or_default().to_owned(),
        arguments,
        kind: ToolCallKind::Function,
        extra: Extra::new(),
    })
}

/// Fences SWE-agent puts around the command at the end of an assistant message.
const FENCES: &[(&str, &str)] = &[("```", "```"), ("<command>", "</command>")];

/// The assistant text without its trailing command block, when the block holds exactly `action`;
/// otherwise the text unchanged.
fn strip_command_block<'t>(text: &'t str, action: &str) -> &'t str {
    let trimmed = text.trim_end();
    for (open, close) in FENCES {
        let Some(inner_end) = trimmed.strip_suffix(close) else {
            continue;
        };
        let Some(start) = inner_end.rfind(open) else {
            continue;
        };
        let inner = &inner_end[start + open.len()..];
        // A fence may carry a language tag on its first line (```bash).
        let inner = if *open == "```" {
            inner.split_once('\n').map_or(inner, |(_, body)| body)
        } else {
            inner
        };
        let same = inner.trim() == action.trim()
            || inner_end[start + open.len()..].trim() == action.trim();
        if same {
            return &text[..start];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::strip_command_block;

    #[test]
    fn strips_only_the_matching_trailing_block() {
        assert_eq!(
            strip_command_block("Look.\n```\nls -a\n```", "ls -a\n"),
            "Look.\n"
        );
        assert_eq!(
            strip_command_block("Look.\n```bash\nls -a\n```\n", "ls -a"),
            "Look.\n"
        );
        assert_eq!(
            strip_command_block("Edit.\n<command>\ncreate x.py\n</command>", "create x.py"),
            "Edit.\n"
        );
        assert_eq!(
            strip_command_block("Look.\n```\nls\n```", "ls -a"),
            "Look.\n```\nls\n```"
        );
        assert_eq!(strip_command_block("no block", "ls"), "no block");
        assert_eq!(strip_command_block("```", "ls"), "```");
    }
}
