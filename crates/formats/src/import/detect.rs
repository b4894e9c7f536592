//! Format auto-detection by content, with the file extension as a tie-breaker.

use super::source::{lines, strip_bom};
use compact_core::model::Format;
use serde_json::{Map, Value};

/// How many JSONL lines are examined before giving up on a decisive record.
const PROBE_LINES: usize = 64;

/// Header line aider writes at the start of each session.
pub(crate) const AIDER_SESSION_HEADER: &str = "# aider chat started at";

/// Responses item types that only the Responses format has.
const RESPONSES_ITEM_TYPES: &[&str] = &[
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "local_shell_call_output",
    "reasoning",
    "compaction",
    "item_reference",
    "web_search_call",
    "file_search_call",
    "computer_call",
    "computer_call_output",
    "image_generation_call",
    "code_interpreter_call",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
];

/// Content part types that only the Responses format has.
const RESPONSES_PART_TYPES: &[&str] = &[
    "input_text",
    "output_text",
    "input_image",
    "input_file",
    "refusal",
];

/// Content block types that only the Anthropic format has.
const ANTHROPIC_BLOCK_TYPES: &[&str] = &[
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "document",
    "server_tool_use",
    "web_search_tool_result",
    "search_result",
    "container_upload",
];

/// Content part types that only Chat Completions has.
const CHAT_PART_TYPES: &[&str] = &["image_url", "input_audio"];

/// Record types of a Codex rollout line.
const CODEX_RECORD_TYPES: &[&str] = &[
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
];

/// Record types of a Claude Code session line.
const CLAUDE_RECORD_TYPES: &[&str] = &["user", "assistant", "system", "summary"];

/// Detects the format of a file from its content; the extension of `file_name` breaks ties
/// (`.traj` -> SWE-agent, `.md` -> aider). `None` when nothing fits.
pub fn detect(bytes: &[u8], file_name: &str) -> Option<Format> {
    let body = strip_bom(bytes);
    let ext = file_name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    let first = body.iter().find(|b| !b.is_ascii_whitespace())?;
    if *first == b'/' && body_after_comments(body).starts_with(b"{") {
        // JSONL with leading `//` comment lines (added by whoever shared the transcript).
        return of_jsonl(bytes);
    }
    if matches!(first, b'{' | b'[') {
        if let Ok(v) = serde_json::from_slice::<Value>(body) {
            return of_document(&v, &ext);
        }
        if let Some(f) = of_jsonl(bytes) {
            return Some(f);
        }
        return match ext.as_str() {
            "traj" => Some(Format::SweAgent),
            _ => None,
        };
    }
    of_text(bytes, &ext)
}

/// The wire format of a list of messages or items (a request's `messages` or `input`, without the
/// request around them): the first message only one format could have written, else Chat
/// Completions when every element is a plain `{role, content}` message; `None` when an element is
/// neither. Hosts that hold messages rather than whole requests (the Python package) use it.
pub fn detect_messages(messages: &[Value]) -> Option<Format> {
    of_messages(messages.iter())
}

/// What follows the leading `//` comment lines (and blank lines) of `body`.
fn body_after_comments(body: &[u8]) -> &[u8] {
    let mut rest = body;
    loop {
        let start = rest
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .unwrap_or(rest.len());
        rest = &rest[start..];
        if !rest.starts_with(b"//") {
            return rest;
        }
        rest = match rest.iter().position(|b| *b == b'\n') {
            Some(p) => &rest[p + 1..],
            None => &[],
        };
    }
}

/// A whole JSON document.
fn of_document(v: &Value, ext: &str) -> Option<Format> {
    match v {
        Value::Object(o) => {
            if let Some(Value::Array(history)) = o.get("history") {
                return of_history(o, history, ext);
            }
            if let Some(Value::Array(steps)) = o.get("trajectory") {
                if steps
                    .iter()
                    .any(|s| s.get("action").is_some() && s.get("observation").is_some())
                {
                    return Some(Format::SweAgent);
                }
            }
            if super::atif::is_atif(o) {
                return Some(Format::Atif);
            }
            if o.contains_key("messages") {
                return Some(of_request_messages(o));
            }
            if o.contains_key("input") {
                return Some(Format::OpenAiResponses);
            }
            of_record(v)
        }
        Value::Array(a) => {
            if a.iter().any(is_openhands_event) {
                return Some(Format::OpenHands);
            }
            of_messages(a.iter())
        }
        _ => None,
    }
}

/// A document with a `history` array: SWE-agent (role messages) or OpenHands (events).
fn of_history(o: &Map<String, Value>, history: &[Value], ext: &str) -> Option<Format> {
    if history.iter().any(is_openhands_event) {
        return Some(Format::OpenHands);
    }
    if history.iter().any(|h| h.get("role").is_some())
        || ext == "traj"
        || o.contains_key("trajectory")
    {
        return Some(Format::SweAgent);
    }
    if o.contains_key("instance_id") || o.contains_key("instruction") {
        return Some(Format::OpenHands);
    }
    None
}

/// True for an OpenHands event: an action or an observation, not a role message (SWE-agent history
/// entries carry an `action` too).
fn is_openhands_event(v: &Value) -> bool {
    v.get("role").is_none()
        && (v.get("action").is_some_and(Value::is_string)
            || v.get("observation").is_some_and(Value::is_string))
}

/// JSONL: the first decisive record among the first lines.
fn of_jsonl(bytes: &[u8]) -> Option<Format> {
    let mut fallback = None;
    for line in lines(bytes).filter(|l| !l.is_blank()).take(PROBE_LINES) {
        let Ok(v) = serde_json::from_slice::<Value>(line.bytes) else {
            continue;
        };
        if let Some(f) = of_record(&v) {
            return Some(f);
        }
        if let Value::Object(o) = &v {
            if let Some(Value::Array(history)) = o.get("history") {
                if let Some(f) = of_history(o, history, "") {
                    return Some(f);
                }
            }
        }
        if is_openhands_event(&v) {
            return Some(Format::OpenHands);
        }
        if let Some(f) = decisive_message(&v) {
            return Some(f);
        }
        if fallback.is_none() && is_plain_message(&v) {
            fallback = Some(Format::OpenAiChat);
        }
    }
    fallback
}

/// One record of a transcript or one message/item.
fn of_record(v: &Value) -> Option<Format> {
    let o = v.as_object()?;
    let ty = o.get("type").and_then(Value::as_str).unwrap_or_default();
    if o.contains_key("payload") && CODEX_RECORD_TYPES.contains(&ty) {
        return Some(Format::CodexRollout);
    }
    let claude_keys = ["uuid", "sessionId", "leafUuid", "parentUuid"];
    if claude_keys.iter().any(|k| o.contains_key(*k))
        && (CLAUDE_RECORD_TYPES.contains(&ty) || o.contains_key("uuid"))
    {
        return Some(Format::ClaudeCode);
    }
    if is_openhands_event(v) {
        return Some(Format::OpenHands);
    }
    decisive_message(v).or_else(|| is_plain_message(v).then_some(Format::OpenAiChat))
}

/// A request with `messages`: Anthropic when it has a top-level `system` or Anthropic blocks,
/// else Chat Completions.
fn of_request_messages(o: &Map<String, Value>) -> Format {
    if o.contains_key("system") {
        return Format::Anthropic;
    }
    match o.get("messages") {
        Some(Value::Array(m)) => of_messages(m.iter()).unwrap_or(Format::OpenAiChat),
        _ => Format::OpenAiChat,
    }
}

/// A list of messages/items: the first decisive element, else Chat when they look like messages.
fn of_messages<'v>(items: impl Iterator<Item = &'v Value> + Clone) -> Option<Format> {
    if let Some(f) = items.clone().find_map(decisive_message) {
        return Some(f);
    }
    let mut any = false;
    for v in items {
        if !is_plain_message(v) {
            return None;
        }
        any = true;
    }
    any.then_some(Format::OpenAiChat)
}

/// `{role, content}` with a known role.
fn is_plain_message(v: &Value) -> bool {
    let role = v.get("role").and_then(Value::as_str);
    matches!(
        role,
        Some("user" | "assistant" | "system" | "developer" | "tool")
    ) && v.get("content").is_some()
}

/// The format only one wire format could have written this message or item in, if any.
fn decisive_message(v: &Value) -> Option<Format> {
    let o = v.as_object()?;
    let ty = o.get("type").and_then(Value::as_str);
    if let Some(t) = ty {
        if RESPONSES_ITEM_TYPES.contains(&t) || t == "message" {
            return Some(Format::OpenAiResponses);
        }
    }
    let role = o.get("role").and_then(Value::as_str);
    if role == Some("tool")
        || o.contains_key("tool_calls")
        || o.contains_key("tool_call_id")
        || o.contains_key("function_call")
    {
        return Some(Format::OpenAiChat);
    }
    if let Some(Value::Array(parts)) = o.get("content") {
        for p in parts {
            let Some(t) = p.get("type").and_then(Value::as_str) else {
                continue;
            };
            if RESPONSES_PART_TYPES.contains(&t) {
                return Some(Format::OpenAiResponses);
            }
            if ANTHROPIC_BLOCK_TYPES.contains(&t) || (t == "image" && p.get("source").is_some()) {
                return Some(Format::Anthropic);
            }
            if CHAT_PART_TYPES.contains(&t) || t == "file" {
                return Some(Format::OpenAiChat);
            }
        }
    }
    None
}

/// A text file: an aider chat history when it has aider's markers.
fn of_text(bytes: &[u8], ext: &str) -> Option<Format> {
    let mut user_lines = false;
    for line in lines(bytes) {
        if line.bytes.starts_with(AIDER_SESSION_HEADER.as_bytes()) {
            return Some(Format::Aider);
        }
        user_lines |= line.bytes.starts_with(b"#### ");
    }
    (user_lines && ext == "md").then_some(Format::Aider)
}
