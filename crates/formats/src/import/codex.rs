//! Codex CLI rollout JSONL: each line is `{timestamp, type, payload}`; the `response_item` payloads,
//! decoded as OpenAI Responses items, are the conversation the model saw.
//!
//! - `session_meta`: `base_instructions` (when recorded) becomes the system item sent as the request's
//!   `instructions`; `instructions` (AGENTS.md) is not added, the rollout also records it as a user
//!   message.
//! - `turn_context`: the first `model` goes to `Conversation::extra["model"]`; the record is skipped.
//! - `response_item`: one item each, id `L<line>`. `ghost_snapshot` items (the CLI's undo snapshots)
//!   stay opaque and hidden from the model. User messages the CLI injects (`<environment_context>`,
//!   `<user_instructions>`, AGENTS.md) are hidden from the user, like Claude Code's `isMeta`. A tool
//!   output is an error when [`output_failed`] says so.
//! - `event_msg`: `turn_aborted` becomes an opaque item labelled [`TURN_ABORTED`], hidden from the model
//!   (the engine can pin it); other events are UI mirrors of the response items and are skipped.
//! - `compacted`: with a `replacement_history` (newer CLIs record the exact new history), every
//!   earlier item is hidden from the model, the replacement items (ids `L<line>.k`) are added, and the
//!   replacement user message carrying the summary becomes the checkpoint (one is appended when none
//!   does). Without one (older CLIs), the CLI rebuilt the history from the initial context, the earlier
//!   user messages and the summary: user messages stay visible, everything else is hidden, and the
//!   checkpoint follows them. (The CLI also trims long user messages to a token budget; that is not
//!   modelled.)

use super::source::{lines, str_field, text_of, Ctx, Line};
use super::{stamp, ImportError};
use crate::wire::openai_responses::decode_item;
use compact_core::model::{
    Checkpoint, Conversation, Envelope, Extra, Format, Item, ItemBody, ItemId, Opaque, Part,
    PartKind, Role, Visibility,
};
use serde_json::Value;
use std::sync::Arc;

/// Label of the opaque item marking an aborted turn.
pub const TURN_ABORTED: &str = "turn_aborted";

/// Label of the opaque items holding the CLI's undo snapshots.
const GHOST_SNAPSHOT: &str = "ghost_snapshot";

/// Openings of user messages the CLI injects rather than the user types.
const INJECTED_PREFIXES: &[&str] = &[
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
];

/// Openings of tool outputs with which the CLI reports a call that did not run or failed to apply.
const FAILURE_PREFIXES: &[&str] = &[
    "exec command rejected",
    "failed in sandbox",
    "apply_patch verification failed",
    "execution error",
    "sandbox error",
];

/// Header of the plain-text output format (`Exit code: N\nWall time: ...\nOutput:\n...`).
const EXIT_CODE_HEADER: &str = "Exit code: ";
/// Line of the unified exec output format.
const PROCESS_EXITED: &str = "Process exited with code ";

/// Whether a `function_call_output` / `custom_tool_call_output` `output` reports failure: a non-zero
/// exit code (`Exit code: N` header, JSON `metadata.exit_code`, `Process exited with code N`) or one of
/// the CLI's failure messages.
pub fn output_failed(output: &Value) -> bool {
    let text = match output {
        Value::String(s) => s.as_str(),
        Value::Object(o) => return o.get("success").and_then(Value::as_bool) == Some(false),
        _ => return false,
    };
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(text) {
        if let Some(code) = o
            .get("metadata")
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64)
        {
            return code != 0;
        }
    }
    if let Some(rest) = text.strip_prefix(EXIT_CODE_HEADER) {
        let code = rest.lines().next().unwrap_or_default().trim();
        return code.parse::<i64>().is_ok_and(|c| c != 0);
    }
    if let Some(line) = text
        .lines()
        .take(8)
        .find_map(|l| l.strip_prefix(PROCESS_EXITED))
    {
        return line.trim().parse::<i64>().is_ok_and(|c| c != 0);
    }
    FAILURE_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// Imports a rollout.
pub(crate) fn import(bytes: &[u8], ctx: &mut Ctx<'_>) -> Result<Conversation, ImportError> {
    let mut conv = Conversation::default();
    let mut index: u32 = 0;
    for line in lines(bytes) {
        let Some(record) = ctx.parse_line(&line)? else {
            continue;
        };
        let at = ctx.at_line(&line, 1);
        let (Some(ty), Some(payload)) = (str_field(&record, "type"), record.get("payload")) else {
            ctx.problem(at, "not a rollout record: expected `type` and `payload`")?;
            continue;
        };
        let ts = str_field(&record, "timestamp");
        match ty {
            "session_meta" => session_meta(payload, &line, ts, &mut conv, ctx),
            "turn_context" => {
                if let Some(model) = payload.get("model").filter(|m| m.is_string()) {
                    conv.extra.entry("model").or_insert_with(|| model.clone());
                }
                ctx.skip("turn_context");
            }
            "response_item" => {
                if let Some(item) = response_item(payload, index, &line, ts, ctx)? {
                    index += 1;
                    conv.items.push(item);
                }
            }
            "event_msg" => {
                let kind = str_field(payload, "type").unwrap_or("unknown");
                if kind == TURN_ABORTED {
                    let mut item = Item::new(ItemBody::Opaque(Opaque {
                        label: TURN_ABORTED.to_owned(),
                        role: Some(Role::User),
                        value: payload.clone(),
                    }));
                    stamp(
                        &mut item,
                        format!("L{}", line.number),
                        ts,
                        Format::CodexRollout,
                    );
                    item.meta.visibility = Visibility {
                        model: false,
                        user: true,
                    };
                    conv.items.push(item);
                } else {
                    ctx.skip(&format!("event_msg:{kind}"));
                }
            }
            "compacted" => compacted(payload, &line, ts, &mut index, &mut conv, ctx)?,
            other => ctx.skip(other),
        }
    }
    Ok(conv)
}

/// `session_meta`: the base instructions, when recorded, become the system item.
fn session_meta(
    payload: &Value,
    line: &Line<'_>,
    ts: Option<&str>,
    conv: &mut Conversation,
    ctx: &mut Ctx<'_>,
) {
    let base = payload.get("base_instructions").map(|b| match b {
        Value::Object(o) => o.get("text").map(text_of).unwrap_or_default(),
        other => text_of(other),
    });
    match base.filter(|b| !b.trim().is_empty()) {
        Some(text) => {
            let mut item = Item::text(Role::System, text);
            stamp(
                &mut item,
                format!("L{}", line.number),
                ts,
                Format::CodexRollout,
            );
            item.meta.envelope = Some(Arc::new(Envelope {
                format: Some(Format::OpenAiResponses),
                message: 0,
                extra: Extra::new(),
                content_was_string: true,
                slot: Some("instructions"),
            }));
            conv.items.push(item);
        }
        None => ctx.skip("session_meta"),
    }
}

/// One `response_item`, decoded and marked.
fn response_item(
    payload: &Value,
    index: u32,
    line: &Line<'_>,
    ts: Option<&str>,
    ctx: &mut Ctx<'_>,
) -> Result<Option<Item>, ImportError> {
    let mut item = match decode_item(payload, index, "/payload") {
        Ok(item) => item,
        Err(e) => {
            ctx.decode_problem(ctx.at_line(line, 1), e)?;
            return Ok(None);
        }
    };
    stamp(
        &mut item,
        format!("L{}", line.number),
        ts,
        Format::CodexRollout,
    );
    if mark(&mut item, payload) {
        ctx.stats.errors += 1;
    }
    Ok(Some(item))
}

/// Sets visibility and error flags from what the payload says; true when it flagged a failed call.
fn mark(item: &mut Item, payload: &Value) -> bool {
    match item.body() {
        ItemBody::Opaque(o) if o.label == GHOST_SNAPSHOT => {
            item.meta.visibility = Visibility {
                model: false,
                user: false,
            };
        }
        ItemBody::Message(m) if m.role == Role::User && m.parts.iter().any(is_injected) => {
            item.meta.visibility.user = false;
        }
        ItemBody::ToolResult(_) if payload.get("output").is_some_and(output_failed) => {
            if let ItemBody::ToolResult(r) = item.body_mut() {
                r.is_error = true;
            }
            return true;
        }
        _ => {}
    }
    false
}

/// True for a text part the CLI injects.
fn is_injected(part: &Part) -> bool {
    matches!(&part.kind, PartKind::Text(t) if INJECTED_PREFIXES.iter().any(|p| t.trim_start().starts_with(p)))
}

/// `compacted`: hide what came before, add the replacement history and the checkpoint.
fn compacted(
    payload: &Value,
    line: &Line<'_>,
    ts: Option<&str>,
    index: &mut u32,
    conv: &mut Conversation,
    ctx: &mut Ctx<'_>,
) -> Result<(), ImportError> {
    ctx.stats.compactions += 1;
    let summary = str_field(payload, "message").unwrap_or_default().to_owned();
    let replacement = payload.get("replacement_history").and_then(Value::as_array);
    let mut covers: Vec<ItemId> = Vec::new();
    for item in conv.items.iter_mut().filter(|i| i.meta.visibility.model) {
        let user_message = item.role() == Role::User && matches!(item.body(), ItemBody::Message(_));
        if replacement.is_none() && user_message {
            continue;
        }
        item.meta.visibility.model = false;
        covers.push(item.meta.id.clone());
    }
    let generation = u32::try_from(ctx.stats.compactions).unwrap_or(u32::MAX);
    let checkpoint = Checkpoint {
        text: summary.clone(),
        generation,
        covers,
        extra: Extra::new(),
    };
    let mut placed = false;
    if let Some(history) = replacement {
        for (k, v) in history.iter().enumerate() {
            let mut item =
                match decode_item(v, *index, &format!("/payload/replacement_history/{k}")) {
                    Ok(item) => item,
                    Err(e) => {
                        ctx.decode_problem(ctx.at_line(line, 1), e)?;
                        continue;
                    }
                };
            *index += 1;
            stamp(
                &mut item,
                format!("L{}.{k}", line.number),
                ts,
                Format::CodexRollout,
            );
            let is_summary = !placed
                && !summary.is_empty()
                && item.role() == Role::User
                && matches!(item.body(), ItemBody::Message(_))
                && item.plain_text().trim() == summary.trim();
            if is_summary {
                item.set_body(ItemBody::Checkpoint(checkpoint.clone()));
                placed = true;
            } else {
                // A copy of an earlier output: flagged, but its error was counted where it first ran.
                mark(&mut item, v);
            }
            conv.items.push(item);
        }
    }
    if !placed {
        let mut item = Item::new(ItemBody::Checkpoint(checkpoint));
        stamp(
            &mut item,
            format!("L{}", line.number),
            ts,
            Format::CodexRollout,
        );
        conv.items.push(item);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::output_failed;
    use serde_json::json;

    #[test]
    fn exit_codes_and_failure_messages() {
        let failed = |s: &str| output_failed(&json!(s));
        assert!(failed(
            "Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom"
        ));
        assert!(!failed("Exit code: 0\nWall time: 0.2 seconds\nOutput:\n"));
        assert!(failed(
            r#"{"output":"x","metadata":{"exit_code":127,"duration_seconds":0.1}}"#
        ));
        assert!(!failed(
            r#"{"output":"Exit code: 1","metadata":{"exit_code":0}}"#
        ));
        assert!(failed(
            "Chunk ID: 1\nWall time: 1.0 seconds\nProcess exited with code 2\nOutput:\n"
        ));
        assert!(failed("exec command rejected by user"));
        assert!(failed(
            "failed in sandbox: sandbox error: command timed out"
        ));
        assert!(!failed("Plan updated"));
        assert!(!failed("Exit code: not-a-number"));
        assert!(!output_failed(&json!(null)));
        assert!(output_failed(&json!({"success": false})));
    }
}
