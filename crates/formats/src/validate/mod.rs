//! Provider rules: would the provider accept this request? A check of wire JSON against the rules each
//! API enforces on tool calls, roles and content, written independently of the encoders.
//!
//! [`validate`] reads only the request JSON (through `serde_json`): it shares no code with
//! [`crate::wire`] or with the core's normalisation, so an encoder bug cannot hide behind a validator
//! built from the same assumptions. Tests and `compactctl inspect` run it on what Compact emits; the
//! architecture invariant it pins is "every emitted request passes the provider-rules validator".
//!
//! ```
//! use compact_core::model::Format;
//! use compact_formats::validate::{validate, Rule};
//! use serde_json::json;
//!
//! let request = json!({
//!     "model": "claude-sonnet-4-5", "max_tokens": 512,
//!     "messages": [
//!         {"role": "user", "content": "List the files."},
//!         {"role": "assistant", "content": [
//!             {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
//!             {"type": "tool_use", "id": "t2", "name": "pwd", "input": {}}
//!         ]},
//!         // Two user messages in a row are one turn to the API: t2 is answered in time.
//!         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.rs"}]},
//!         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "/src"}]}
//!     ]
//! });
//! assert!(validate(&request, Format::Anthropic).is_empty());
//!
//! let mut broken = request.clone();
//! broken["messages"].as_array_mut().unwrap().pop();
//! let found = validate(&broken, Format::Anthropic);
//! assert_eq!(found.len(), 1);
//! assert_eq!(found[0].rule, Rule::UnansweredCall);
//! assert_eq!(found[0].path, "/messages/1/content/1");
//! ```
//!
//! The rules, per format (turns are counted **after** the provider's own merging of consecutive
//! messages of one role, which Anthropic does for user and for assistant messages):
//!
//! | format | rules |
//! |---|---|
//! | Anthropic Messages | `messages` is a non-empty array; roles are `user` / `assistant` / `system`; a `system` message (Claude Code sends one after the first user message) is transparent to turns, does not open the request, and holds no tool, thinking or compaction block; the first turn is a user turn; every `tool_use` is answered by a `tool_result` with its id in the next (merged) user turn, and `tool_result` blocks come before any other block of that turn; every `tool_result` answers a `tool_use` of the turn right before it, once; `tool_use` / `server_tool_use` / `mcp_tool_use` ids are unique (server calls are answered inside the assistant turn and need no `tool_result`); `tool_use` and thinking blocks only in assistant turns, `tool_result` only in user turns; no empty content (an empty string, an empty block list, or a text block with no visible text), except in a final assistant message; `thinking` blocks carry a non-empty `signature`, `redacted_thinking` blocks non-empty `data`. |
//! | OpenAI Chat Completions | `messages` is a non-empty array; roles are `system`, `developer`, `user`, `assistant`, `tool` or legacy `function`; every assistant `tool_calls[].id` is answered by a `tool` message with that `tool_call_id` before the next message that is not a `tool` message; every `tool` message answers, once, a call of the assistant message that opens its run of `tool` messages; call ids are unique; an assistant message has content or tool calls. |
//! | OpenAI Responses | `input` is a string (always valid) or an array of items; message roles are `user`, `assistant`, `system`, `developer`; every `function_call`, `custom_tool_call` and `local_shell_call` has exactly one output of the matching kind (`*_output`, by `call_id`) after it, every output follows its call, and call ids are unique. Other items (`reasoning`, `compaction`, unknown types) are opaque and valid. |
//!
//! A request that is not of the expected shape at all (no object, `messages` not an array, a block
//! without a `type`) gets [`Rule::Malformed`] violations for what cannot be read; the rest is still
//! checked. Transcript formats are not requests: [`validate`] checks a request of their wire target
//! ([`Format::wire_target`]: Claude Code -> Anthropic, Codex -> Responses, others -> Chat), which is
//! what Compact sends for them.
//!
//! Provider compaction (module `compaction`): in Anthropic threshold mode (a `compact_*` edit in
//! `context_management`) the rules above apply from the last `compaction` block on, as the server
//! reads nothing before it; otherwise a `compaction` block must be the only one and the first
//! content of the messages (on-demand mode), and may then open the request in an assistant
//! message. An Anthropic compaction call (top-level `compaction`) must be `{"type": "summarize"}`
//! without `context_management`, stop sequences, a structured output format, a forced tool, or
//! instructions over 16,384 characters. A Responses `compaction_trigger` must be the last input
//! item, once; a `compaction` item carries non-empty `encrypted_content`.
//!
//! [`validate_against`] adds the rule that reasoning is sent back unmodified: every Anthropic
//! `thinking` / `redacted_thinking` block, and every Responses `reasoning` item carrying
//! `encrypted_content`, must appear unchanged in the original request the output was made from;
//! and so must every provider compaction, the original's last one included.

mod anthropic;
mod compaction;
mod openai_chat;
mod openai_responses;
mod reasoning;
#[cfg(test)]
mod tests;

// A plain JSON helper shared with the wire module; the rules themselves share nothing with the
// encoders.
use crate::wire::type_name;
use compact_core::model::Format;
use serde_json::Value;
use std::fmt;

/// A provider rule a request can break.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// A value does not have the shape the API parses (not an object, a missing `type` or id...).
    Malformed,
    /// The request has no messages (Anthropic, Chat).
    NoMessages,
    /// A role the format does not know.
    InvalidRole,
    /// Anthropic: the first turn is not a user turn (or a `system` message opens the request).
    FirstTurnNotUser,
    /// Content that must not be empty is empty (or, for text blocks, only whitespace).
    EmptyContent,
    /// A block in a turn of the wrong role (`tool_use` or thinking from the user, `tool_result` from
    /// the assistant, any of them in an Anthropic `system` message).
    BlockInWrongRole,
    /// A tool call id used more than once.
    DuplicateCallId,
    /// A tool call not answered where the provider requires its result.
    UnansweredCall,
    /// A tool result with no call where the provider requires one.
    OrphanResult,
    /// A second result for one call.
    DuplicateResult,
    /// Anthropic: a `tool_result` block after other content in its user turn.
    ResultAfterContent,
    /// A `thinking` block without a signature, or a `redacted_thinking` block without data.
    UnsignedThinking,
    /// A thinking block or encrypted reasoning item that is not in the original request unchanged
    /// ([`validate_against`] only).
    ReasoningModified,
    /// A provider compaction where the provider refuses it: an Anthropic block that is not the
    /// only, first content in on-demand mode, a `compaction_trigger` that is not the last input item.
    CompactionMisplaced,
    /// A provider compaction call with an option the provider refuses alongside it (Anthropic
    /// `compaction` with `context_management`, stop sequences, a structured output format, a forced
    /// tool, over-long instructions, or not `{"type": "summarize"}`).
    CompactionCallInvalid,
    /// A provider compaction that is not in the original request unchanged, or the original's last
    /// one not sent ([`validate_against`] only).
    CompactionModified,
}

impl Rule {
    /// Every rule, in declaration order.
    pub const ALL: [Rule; 16] = [
        Rule::Malformed,
        Rule::NoMessages,
        Rule::InvalidRole,
        Rule::FirstTurnNotUser,
        Rule::EmptyContent,
        Rule::BlockInWrongRole,
        Rule::DuplicateCallId,
        Rule::UnansweredCall,
        Rule::OrphanResult,
        Rule::DuplicateResult,
        Rule::ResultAfterContent,
        Rule::UnsignedThinking,
        Rule::ReasoningModified,
        Rule::CompactionMisplaced,
        Rule::CompactionCallInvalid,
        Rule::CompactionModified,
    ];

    /// Snake-case name, for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Malformed => "malformed",
            Rule::NoMessages => "no_messages",
            Rule::InvalidRole => "invalid_role",
            Rule::FirstTurnNotUser => "first_turn_not_user",
            Rule::EmptyContent => "empty_content",
            Rule::BlockInWrongRole => "block_in_wrong_role",
            Rule::DuplicateCallId => "duplicate_call_id",
            Rule::UnansweredCall => "unanswered_call",
            Rule::OrphanResult => "orphan_result",
            Rule::DuplicateResult => "duplicate_result",
            Rule::ResultAfterContent => "result_after_content",
            Rule::UnsignedThinking => "unsigned_thinking",
            Rule::ReasoningModified => "reasoning_modified",
            Rule::CompactionMisplaced => "compaction_misplaced",
            Rule::CompactionCallInvalid => "compaction_call_invalid",
            Rule::CompactionModified => "compaction_modified",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One broken rule: where (a JSON pointer into the request), which rule, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer of the offending value (`/messages/12/content/0`; empty for the whole request).
    pub path: String,
    /// The rule broken.
    pub rule: Rule,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        write!(f, "at {path}: {} [{}]", self.message, self.rule)
    }
}

/// Checks `request`, a request of the wire `format` (a transcript format means its wire target), and
/// returns every violation found, in request order (by path). Empty means the provider's rules are
/// met. Never panics, whatever the JSON.
pub fn validate(request: &Value, format: Format) -> Vec<Violation> {
    let mut found = Found::default();
    match format.wire_target() {
        Format::Anthropic => anthropic::check(request, &mut found),
        Format::OpenAiResponses => openai_responses::check(request, &mut found),
        _ => openai_chat::check(request, &mut found),
    }
    found.sorted()
}

/// [`validate`], plus the reasoning rule: every thinking block (Anthropic) and every reasoning item
/// with an encrypted payload (Responses) in `request` must appear unchanged in `original`, the request
/// it was derived from (for instance, the uncompacted conversation encoded to the same format).
pub fn validate_against(request: &Value, original: &Value, format: Format) -> Vec<Violation> {
    let mut found = Found(validate(request, format));
    match format.wire_target() {
        Format::Anthropic => {
            reasoning::check_thinking(request, original, &mut found);
            compaction::check_unchanged(request, original, true, &mut found);
        }
        Format::OpenAiResponses => {
            reasoning::check_encrypted(request, original, &mut found);
            compaction::check_unchanged(request, original, false, &mut found);
        }
        _ => {}
    }
    found.sorted()
}

/// Violations being collected.
#[derive(Debug, Default)]
struct Found(Vec<Violation>);

impl Found {
    fn push(&mut self, path: impl Into<String>, rule: Rule, message: impl Into<String>) {
        self.0.push(Violation {
            path: path.into(),
            rule,
            message: message.into(),
        });
    }

    /// The violations by path, array indices compared as numbers (stable: one path keeps the order its
    /// violations were found in).
    fn sorted(mut self) -> Vec<Violation> {
        self.0
            .sort_by(|a, b| path_key(&a.path).cmp(&path_key(&b.path)));
        self.0
    }
}

/// `value` as an object, or a `Malformed` violation at `path` naming `what` it should have been.
fn object_at<'a>(
    value: &'a Value,
    path: &str,
    what: &str,
    found: &mut Found,
) -> Option<&'a serde_json::Map<String, Value>> {
    let object = value.as_object();
    if object.is_none() {
        found.push(
            path,
            Rule::Malformed,
            format!("{what} is {}, not an object", type_name(value)),
        );
    }
    object
}

/// The request as an object, or a violation when it is not one.
fn request_object<'a>(
    request: &'a Value,
    found: &mut Found,
) -> Option<&'a serde_json::Map<String, Value>> {
    object_at(request, "", "the request", found)
}

/// The request's non-empty `messages` list (Anthropic, Chat), or the violation that there is none.
fn messages_of<'a>(request: &'a Value, found: &mut Found) -> Option<&'a [Value]> {
    let messages = match request_object(request, found)?.get("messages") {
        Some(Value::Array(m)) => m,
        Some(other) => {
            found.push(
                "/messages",
                Rule::Malformed,
                format!("`messages` is {}, not an array", type_name(other)),
            );
            return None;
        }
        None => {
            found.push(
                "/messages",
                Rule::NoMessages,
                "the request has no `messages`",
            );
            return None;
        }
    };
    if messages.is_empty() {
        found.push("/messages", Rule::NoMessages, "`messages` is empty");
        return None;
    }
    Some(messages)
}

/// A JSON pointer's segments, indices as numbers (so `/messages/9` sorts before `/messages/10`).
fn path_key(path: &str) -> Vec<Result<usize, &str>> {
    path.split('/')
        .skip(1)
        .map(|s| s.parse::<usize>().map_err(|_| s))
        .collect()
}

/// A non-empty string member of an object, or the reason it is not one.
fn id_field<'a>(o: &'a serde_json::Map<String, Value>, key: &str) -> Result<&'a str, String> {
    match o.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        Some(Value::String(_)) => Err(format!("`{key}` is empty")),
        Some(other) => Err(format!("`{key}` is {}, not a string", type_name(other))),
        None => Err(format!("`{key}` is missing")),
    }
}
