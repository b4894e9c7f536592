//! Provider compaction rules: where Anthropic `compaction` blocks and Responses `compaction` /
//! `compaction_trigger` items may stand, what a compaction call may not combine with, and (for
//! [`super::validate_against`]) that every provider compaction is sent back exactly as received.
//!
//! - Anthropic, threshold mode (the request enables a `compact_*` edit in `context_management`):
//!   blocks stand anywhere; the server ignores everything before the last one, so the other rules
//!   apply from the last block on.
//! - Anthropic, on-demand mode (any other request holding a block): exactly one block, the first
//!   content of the messages (its own first message, or the first block of the first message), the
//!   summarised messages gone.
//! - Anthropic compaction call (a top-level `compaction`): `{type: "summarize"}`, instructions at
//!   most 16,384 characters, and none of `context_management`, `stop_sequences`, a structured output
//!   format or a forced `tool_choice` (an unanswered `tool_use` and no messages are refused by the
//!   general rules).
//! - Responses: a `compaction_trigger` is the last input item, once; a `compaction` item carries a
//!   non-empty `encrypted_content`. A historical `compaction` item may stand anywhere.

use super::{type_name, Found, Rule};
use serde_json::{Map, Value};

/// Longest `compaction.instructions` the Messages API accepts, in characters.
pub(super) const MAX_INSTRUCTIONS_CHARS: usize = 16_384;

/// The Anthropic block type of a provider compaction.
pub(super) const COMPACTION: &str = "compaction";

/// Where the Anthropic rules start: the message and block of the last compaction block in threshold
/// mode (the server reads nothing before it), else the start of the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Scope {
    /// First message read.
    pub message: usize,
    /// First block read within that message.
    pub block: usize,
}

/// True when the request enables threshold compaction (`context_management.edits[]` holding a
/// `compact_*` edit).
fn threshold_mode(request: &Map<String, Value>) -> bool {
    request
        .get("context_management")
        .and_then(|c| c.get("edits"))
        .and_then(Value::as_array)
        .is_some_and(|edits| {
            edits.iter().any(|e| {
                e.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.starts_with("compact_"))
            })
        })
}

/// The `(message, block)` positions of every compaction block.
fn anthropic_blocks(messages: &[Value]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let Some(blocks) = m.get("content").and_then(Value::as_array) else {
            continue;
        };
        for (j, b) in blocks.iter().enumerate() {
            if b.get("type").and_then(Value::as_str) == Some(COMPACTION) {
                out.push((i, j));
            }
        }
    }
    out
}

/// Checks the Anthropic compaction rules and returns where the other rules start.
pub(super) fn anthropic(request: &Value, messages: &[Value], found: &mut Found) -> Scope {
    let Some(request) = request.as_object() else {
        return Scope::default();
    };
    if let Some(call) = request.get(COMPACTION) {
        compaction_call(request, call, found);
    }
    let blocks = anthropic_blocks(messages);
    if threshold_mode(request) {
        return blocks
            .last()
            .map_or(Scope::default(), |&(message, block)| Scope {
                message,
                block,
            });
    }
    for (k, &(i, j)) in blocks.iter().enumerate() {
        let message = if k > 0 {
            "a second compaction block: on-demand compaction allows exactly one (threshold mode needs `context_management`)"
        } else if (i, j) != (0, 0) {
            "the compaction block must be the first content of the messages, with the messages it summarises removed (threshold mode needs `context_management`)"
        } else {
            continue;
        };
        found.push(
            format!("/messages/{i}/content/{j}"),
            Rule::CompactionMisplaced,
            message,
        );
    }
    Scope::default()
}

/// The options a compaction call may not carry.
fn compaction_call(request: &Map<String, Value>, call: &Value, found: &mut Found) {
    let mut refuse = |path: &str, why: String| found.push(path, Rule::CompactionCallInvalid, why);
    match call.get("type").and_then(Value::as_str) {
        Some("summarize") => {}
        _ => refuse(
            "/compaction",
            format!(
                "`compaction` must be `{{\"type\": \"summarize\"}}`, not {}",
                type_name(call)
            ),
        ),
    }
    match call.get("instructions") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.chars().count() <= MAX_INSTRUCTIONS_CHARS => {}
        Some(Value::String(s)) => refuse(
            "/compaction/instructions",
            format!(
                "the instructions have {} characters; at most {MAX_INSTRUCTIONS_CHARS} are accepted",
                s.chars().count()
            ),
        ),
        Some(other) => refuse(
            "/compaction/instructions",
            format!("the instructions are {}, not a string", type_name(other)),
        ),
    }
    if request.contains_key("context_management") {
        refuse(
            "/context_management",
            "on-demand compaction cannot be combined with `context_management`".to_owned(),
        );
    }
    if request
        .get("stop_sequences")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
    {
        refuse(
            "/stop_sequences",
            "a compaction call cannot carry stop sequences".to_owned(),
        );
    }
    let structured = request.get("output_format").is_some_and(|v| !v.is_null())
        || request
            .get("output_config")
            .and_then(|c| c.get("format"))
            .is_some_and(|v| !v.is_null());
    if structured {
        refuse(
            "/output_format",
            "a compaction call cannot ask for a structured output format".to_owned(),
        );
    }
    let forced = request
        .get("tool_choice")
        .and_then(|t| t.get("type"))
        .and_then(Value::as_str)
        .is_some_and(|t| t == "any" || t == "tool");
    if forced {
        refuse(
            "/tool_choice",
            "a compaction call cannot force a tool (`tool_choice` any or tool)".to_owned(),
        );
    }
}

/// The shape of one Anthropic compaction block: `content` a string or null, `signature` a string,
/// `encrypted_content` a string or null. Returns the malformation, if any.
pub(super) fn block_shape(block: &Map<String, Value>) -> Option<String> {
    for (key, nullable) in [
        ("content", true),
        ("signature", false),
        ("encrypted_content", true),
    ] {
        match block.get(key) {
            None | Some(Value::String(_)) => {}
            Some(Value::Null) if nullable => {}
            Some(other) => return Some(format!("`{key}` is {}", type_name(other))),
        }
    }
    None
}

/// Checks one Responses input item of type `compaction` or `compaction_trigger` at `path`
/// (`index` of `count` items).
pub(super) fn responses_item(
    ty: &str,
    item: &Map<String, Value>,
    path: &str,
    index: usize,
    count: usize,
    triggers_before: usize,
    found: &mut Found,
) {
    if ty == "compaction_trigger" {
        if triggers_before > 0 {
            found.push(
                path,
                Rule::CompactionMisplaced,
                "a second `compaction_trigger`: a request asks for one compaction",
            );
        } else if index + 1 != count {
            found.push(
                path,
                Rule::CompactionMisplaced,
                "a `compaction_trigger` must be the last input item",
            );
        }
        return;
    }
    match item.get("encrypted_content") {
        Some(Value::String(s)) if !s.is_empty() => {}
        Some(Value::String(_)) => found.push(
            path,
            Rule::Malformed,
            "`compaction` item: `encrypted_content` is empty",
        ),
        Some(other) => found.push(
            path,
            Rule::Malformed,
            format!(
                "`compaction` item: `encrypted_content` is {}",
                type_name(other)
            ),
        ),
        None => found.push(
            path,
            Rule::Malformed,
            "`compaction` item: `encrypted_content` is missing",
        ),
    }
}

/// The provider compactions of a request (Anthropic blocks or Responses `compaction` items), with
/// their paths.
fn compactions(request: &Value, anthropic: bool) -> Vec<(String, &Value)> {
    if anthropic {
        let messages = request
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        anthropic_blocks(messages)
            .into_iter()
            .map(|(i, j)| {
                (
                    format!("/messages/{i}/content/{j}"),
                    &messages[i]["content"][j],
                )
            })
            .collect()
    } else {
        let items = request
            .get("input")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        items
            .iter()
            .enumerate()
            .filter(|(_, item)| item.get("type").and_then(Value::as_str) == Some(COMPACTION))
            .map(|(i, item)| (format!("/input/{i}"), item))
            .collect()
    }
}

/// [`super::validate_against`]'s compaction rule: every provider compaction of `request` is in
/// `original`, equal as a JSON value (so byte for byte once serialised), and the last one of
/// `original` is still sent (the provider's state is in it).
pub(super) fn check_unchanged(
    request: &Value,
    original: &Value,
    anthropic: bool,
    found: &mut Found,
) {
    let known = compactions(original, anthropic);
    let sent = compactions(request, anthropic);
    for (path, value) in &sent {
        if !known.iter().any(|(_, k)| k == value) {
            found.push(
                path,
                Rule::CompactionModified,
                "this provider compaction is not in the original request unchanged",
            );
        }
    }
    if let Some((path, last)) = known.last() {
        if !sent.iter().any(|(_, v)| v == last) {
            found.push(
                "",
                Rule::CompactionModified,
                format!("the original's last provider compaction ({path}) is not sent"),
            );
        }
    }
}
