//! OpenHands event streams: a JSON list of events, a JSON evaluation record whose `history` holds
//! them, or JSONL of evaluation records (or of events).
//!
//! - An action with `tool_call_metadata` is a tool call (id `tool_call_id`, name `function_name`,
//!   arguments as the model wrote them in `model_response` when present, else `args`); a non-empty
//!   `args.thought` becomes an assistant message before it. Calls from one model response share an
//!   envelope.
//! - An observation with `tool_call_metadata` is that call's result; `error` observations and non-zero
//!   exit codes set `is_error`.
//! - `message` actions are user or assistant messages (by `source`); `system` actions the system prompt.
//! - An `error` observation with no call is shown to the model as a user message: so it is here, and it
//!   counts as an error. `recall` observations (workspace context the agent injects) are kept as opaque
//!   items. Agent-state changes, `null` observations and recall requests are skipped (counted).
//! - Legacy events (no `source`, no ids): each non-message action is a synthesised call `oh-<index>`
//!   answered by the next observation.
//!
//! Item ids: `e<event id>` (`e<index>` without ids), prefixed `r<k>.` when the file holds several
//! evaluation records; `.k` is appended when an event yields several items.

use super::source::{lines, str_field, text_of, Ctx};
use super::{item_ids, stamp, ImportError};
use compact_core::model::{
    Arguments, Conversation, Envelope, Extra, Format, Item, ItemBody, Message, Opaque, Part, Role,
    ToolCall, ToolCallKind, ToolResult,
};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// Prefix of synthesised call ids for legacy events.
pub const SYNTHETIC_CALL_PREFIX: &str = "oh-";

/// Imports an OpenHands file.
pub(crate) fn import(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Conversation, ImportError> {
    let mut st = State::default();
    match ctx.parse_document(bytes) {
        Ok(Value::Array(events)) => {
            ctx.stats.sessions = 1;
            st.events(&events, "", bytes, ctx)?;
        }
        Ok(Value::Object(o)) => match o.get("history") {
            Some(Value::Array(events)) => {
                ctx.stats.sessions = 1;
                st.events(events, "", bytes, ctx)?;
            }
            _ => st.events(&[Value::Object(o)], "", bytes, ctx)?,
        },
        Ok(_) => {
            return Err(ImportError::Malformed {
                at: ctx.at_offset(bytes, 0),
                what:
                    "not an OpenHands file: expected a list of events or an object with `history`"
                        .to_owned(),
            })
        }
        Err(doc_err) => {
            // JSONL: evaluation records (each with a `history`) or bare events.
            let first_ok = lines(bytes)
                .find(|l| !l.is_blank())
                .is_some_and(|l| serde_json::from_slice::<Value>(l.bytes).is_ok());
            if !first_ok {
                return Err(doc_err);
            }
            let mut records = Vec::new();
            for line in lines(bytes) {
                let before = ctx.stats.records_read;
                if let Some(v) = ctx.parse_line(&line)? {
                    records.push(v);
                }
                // Records are counted as events below, not as lines.
                ctx.stats.records_read = before;
            }
            let with_history = records
                .iter()
                .filter(|r| r.get("history").is_some())
                .count();
            if with_history > 0 {
                ctx.stats.sessions = with_history;
                for (k, r) in records.iter().enumerate() {
                    let prefix = if with_history > 1 {
                        format!("r{k}.")
                    } else {
                        String::new()
                    };
                    match r.get("history") {
                        Some(Value::Array(events)) => {
                            st.reset();
                            st.events(events, &prefix, bytes, ctx)?;
                        }
                        _ => ctx.skip("record_without_history"),
                    }
                }
            } else {
                st.events(&records, "", bytes, ctx)?;
            }
        }
    }
    Ok(st.conv)
}

/// Importer state.
#[derive(Default)]
struct State {
    conv: Conversation,
    /// Legacy calls awaiting their observation.
    open: VecDeque<String>,
    /// The model response the last tool call came from, and its envelope.
    response: Option<(String, Arc<Envelope>)>,
    /// Wire message counter for envelopes.
    messages: u32,
}

impl State {
    /// Forgets per-session state.
    fn reset(&mut self) {
        self.open.clear();
        self.response = None;
    }

    /// Imports a list of events.
    fn events(
        &mut self,
        events: &[Value],
        prefix: &str,
        bytes: &[u8],
        ctx: &mut Ctx<'_>,
    ) -> Result<(), ImportError> {
        for (idx, e) in events.iter().enumerate() {
            ctx.stats.records_read += 1;
            if !e.is_object() {
                ctx.problem(
                    ctx.at_offset(bytes, 0),
                    format!("event {idx}: expected an object"),
                )?;
                continue;
            }
            let base = match e.get("id").and_then(Value::as_i64) {
                Some(id) => format!("{prefix}e{id}"),
                None => format!("{prefix}e{idx}"),
            };
            let legacy = e.get("source").is_none() && e.get("id").is_none();
            let (bodies, env) = if let Some(action) = str_field(e, "action") {
                self.action(e, action, legacy, idx, prefix, ctx)
            } else if let Some(observation) = str_field(e, "observation") {
                (self.observation(e, observation, legacy, ctx), None)
            } else {
                ctx.skip("unknown_event");
                continue;
            };
            if bodies.is_empty() {
                continue;
            }
            let ids = item_ids(&base, bodies.len());
            for (body, id) in bodies.into_iter().zip(ids) {
                let mut item = Item::new(body);
                stamp(&mut item, id, str_field(e, "timestamp"), Format::OpenHands);
                item.meta.envelope = env.clone();
                self.conv.items.push(item);
            }
        }
        Ok(())
    }

    /// The items of an action event.
    fn action(
        &mut self,
        e: &Value,
        action: &str,
        legacy: bool,
        idx: usize,
        prefix: &str,
        ctx: &mut Ctx<'_>,
    ) -> (Vec<ItemBody>, Option<Arc<Envelope>>) {
        let args = e.get("args").unwrap_or(e);
        let thought = str_field(args, "thought").unwrap_or_default();
        match (
            action,
            e.get("tool_call_metadata").filter(|m| m.is_object()),
        ) {
            (_, Some(meta)) => {
                let mut bodies = Vec::new();
                if !thought.trim().is_empty() {
                    bodies.push(message(Role::Assistant, thought.to_owned()));
                }
                let call_id = str_field(meta, "tool_call_id")
                    .unwrap_or_default()
                    .to_owned();
                let name = str_field(meta, "function_name")
                    .unwrap_or(action)
                    .to_owned();
                let arguments = model_arguments(meta, &call_id)
                    .unwrap_or_else(|| Arguments::Json(args.clone()));
                bodies.push(ItemBody::ToolCall(ToolCall {
                    call_id,
                    name,
                    arguments,
                    kind: ToolCallKind::Function,
                    extra: Extra::new(),
                }));
                let response_id = meta
                    .get("model_response")
                    .and_then(|r| str_field(r, "id"))
                    .unwrap_or_default()
                    .to_owned();
                let env = match &self.response {
                    Some((id, env)) if *id == response_id && !id.is_empty() => Arc::clone(env),
                    _ => {
                        let env = Arc::new(Envelope {
                            message: self.messages,
                            ..Envelope::default()
                        });
                        self.messages += 1;
                        self.response = Some((response_id, Arc::clone(&env)));
                        env
                    }
                };
                (bodies, Some(env))
            }
            ("message", None) => {
                let text = str_field(args, "content")
                    .or_else(|| str_field(e, "message"))
                    .or_else(|| str_field(e, "content"))
                    .unwrap_or_default();
                let role = if str_field(e, "source") == Some("agent") {
                    Role::Assistant
                } else {
                    Role::User
                };
                (vec![message(role, text.to_owned())], None)
            }
            ("system", None) => {
                let text = str_field(args, "content")
                    .or_else(|| str_field(e, "message"))
                    .unwrap_or_default();
                (vec![message(Role::System, text.to_owned())], None)
            }
            ("finish", None) => {
                let text = if thought.trim().is_empty() {
                    str_field(e, "message").unwrap_or_default()
                } else {
                    thought
                };
                if text.trim().is_empty() {
                    ctx.skip("action:finish");
                    return (Vec::new(), None);
                }
                (vec![message(Role::Assistant, text.to_owned())], None)
            }
            (_, None) if legacy => {
                let mut bodies = Vec::new();
                if !thought.trim().is_empty() {
                    bodies.push(message(Role::Assistant, thought.to_owned()));
                }
                let mut arguments = args.clone();
                if let Value::Object(o) = &mut arguments {
                    for key in ["action", "thought"] {
                        o.remove(key);
                    }
                }
                let call_id = format!("{prefix}{SYNTHETIC_CALL_PREFIX}{idx}");
                self.open.push_back(call_id.clone());
                bodies.push(ItemBody::ToolCall(ToolCall {
                    call_id,
                    name: action.to_owned(),
                    arguments: Arguments::Json(arguments),
                    kind: ToolCallKind::Function,
                    extra: Extra::new(),
                }));
                (bodies, None)
            }
            (_, None) => {
                ctx.skip(&format!("action:{action}"));
                (Vec::new(), None)
            }
        }
    }

    /// The items of an observation event.
    fn observation(
        &mut self,
        e: &Value,
        observation: &str,
        legacy: bool,
        ctx: &mut Ctx<'_>,
    ) -> Vec<ItemBody> {
        let text = e.get("content").map(text_of).unwrap_or_default();
        let failed = observation == "error" || exit_code(e).is_some_and(|c| c != 0);
        if let Some(meta) = e.get("tool_call_metadata").filter(|m| m.is_object()) {
            if failed {
                ctx.stats.errors += 1;
            }
            return vec![ItemBody::ToolResult(ToolResult {
                call_id: str_field(meta, "tool_call_id")
                    .unwrap_or_default()
                    .to_owned(),
                tool_name: str_field(meta, "function_name").map(str::to_owned),
                parts: vec![Part::text(text)],
                is_error: failed,
                kind: ToolCallKind::Function,
                content_was_string: true,
                extra: Extra::new(),
            })];
        }
        if legacy {
            if failed {
                ctx.stats.errors += 1;
            }
            let call_id = self.open.pop_front().unwrap_or_default();
            return vec![ItemBody::ToolResult(ToolResult {
                call_id,
                tool_name: None,
                parts: vec![Part::text(text)],
                is_error: failed,
                kind: ToolCallKind::Function,
                content_was_string: true,
                extra: Extra::new(),
            })];
        }
        match observation {
            "error" => {
                ctx.stats.errors += 1;
                vec![message(Role::User, text)]
            }
            "recall" => vec![ItemBody::Opaque(Opaque {
                label: "recall".to_owned(),
                role: Some(Role::User),
                value: e.clone(),
            })],
            other => {
                ctx.skip(&format!("observation:{other}"));
                Vec::new()
            }
        }
    }
}

/// The exit code an observation reports (`extras.metadata.exit_code`, `extras.exit_code` or a
/// top-level `exit_code` in legacy events).
fn exit_code(e: &Value) -> Option<i64> {
    let extras = e.get("extras");
    extras
        .and_then(|x| x.get("metadata"))
        .and_then(|m| m.get("exit_code"))
        .or_else(|| extras.and_then(|x| x.get("exit_code")))
        .or_else(|| e.get("exit_code"))
        .and_then(Value::as_i64)
}

/// The arguments string the model wrote for `call_id`, found in the metadata's `model_response`.
fn model_arguments(meta: &Value, call_id: &str) -> Option<Arguments> {
    let choices = meta.get("model_response")?.get("choices")?.as_array()?;
    choices.iter().find_map(|choice| {
        let calls = choice.get("message")?.get("tool_calls")?.as_array()?;
        let call = calls.iter().find(|c| str_field(c, "id") == Some(call_id))?;
        match call.get("function")?.get("arguments")? {
            Value::String(s) => Some(Arguments::Text(s.clone())),
            other => Some(Arguments::Json(other.clone())),
        }
    })
}

/// A one-text-part message.
fn message(role: Role, text: String) -> ItemBody {
    ItemBody::Message(Message {
        role,
        parts: vec![Part::text(text)],
    })
}
