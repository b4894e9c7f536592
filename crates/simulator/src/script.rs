//! Scripted replies: what the simulated model says (text and/or tool calls) when a test wants more
//! than the default deterministic reply. A tool call's string argument [`STUB_ID`] is replaced,
//! when the reply is made, by the id of the first reference stub (`[compact:ref <id>]`) the request
//! holds: so a test can script a model that recalls what it sees ([`ScriptedReply::recall_stub`]).

use serde_json::{json, Value};

/// A string argument replaced by the id of the first reference stub the request holds (left as it
/// is when there is none).
pub const STUB_ID: &str = "$stub_id";
/// The opening of a reference stub (Compact's `compact_core::plan::REFERENCE_PREFIX`).
const STUB_OPENING: &str = "[compact:ref ";
/// The tool a compaction proxy offers for recalling a stub's original.
pub const RECALL_TOOL: &str = "compact_recall";

/// One tool call in a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments (sent as a JSON string to OpenAI, as an object to Anthropic).
    pub arguments: Value,
}

/// A scripted reply, consumed by the next request (any endpoint).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScriptedReply {
    /// Assistant text (may be empty).
    pub text: String,
    /// Tool calls, after the text.
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Thinking before the text (Anthropic: a signed `thinking` block; ignored elsewhere).
    pub thinking: Option<String>,
    /// The scripted agent's step these calls run ([`crate::agent`]): carried in the call ids.
    pub step: Option<usize>,
}

impl ScriptedReply {
    /// A text-only reply.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedReply {
            text: text.into(),
            ..ScriptedReply::default()
        }
    }

    /// A reply that calls [`RECALL_TOOL`] on the first reference stub the request holds.
    pub fn recall_stub() -> Self {
        ScriptedReply::text("").with_tool_call(RECALL_TOOL, json!({"id": STUB_ID}))
    }

    /// The reply with [`STUB_ID`] arguments replaced by the first stub id in `request` (its raw
    /// text).
    pub fn resolve_stub(mut self, request: &str) -> Self {
        let Some(id) = first_stub_id(request) else {
            return self;
        };
        for call in &mut self.tool_calls {
            replace_placeholder(&mut call.arguments, id);
        }
        self
    }

    /// Adds a tool call (builder style).
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push(ScriptedToolCall {
            name: name.into(),
            arguments,
        });
        self
    }
}

/// The id of the first `[compact:ref <id>]` in `text`.
pub fn first_stub_id(text: &str) -> Option<&str> {
    let start = text.find(STUB_OPENING)? + STUB_OPENING.len();
    let rest = &text[start..];
    let end = rest.find(']')?;
    let id = &rest[..end];
    (!id.is_empty() && !id.contains(char::is_whitespace)).then_some(id)
}

fn replace_placeholder(value: &mut Value, id: &str) {
    match value {
        Value::String(s) if s == STUB_ID => *s = id.to_owned(),
        Value::Array(items) => items.iter_mut().for_each(|v| replace_placeholder(v, id)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_placeholder(v, id)),
        _ => {}
    }
}

/// Longest excerpt of the last user message echoed by the default reply.
const ECHO_CHARS: usize = 200;

/// The default reply: deterministic, and telling the test what the simulator saw.
pub fn default_reply(input_tokens: u64, last_user: &str) -> ScriptedReply {
    let excerpt: String = last_user.chars().take(ECHO_CHARS).collect();
    ScriptedReply::text(format!(
        "Simulated reply ({input_tokens} input tokens). Last user message: {excerpt}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholder_becomes_the_first_stub_id() {
        let request = r#"{"messages":[{"content":"[compact:ref i00aa11bb22] Output of `read` ..."},{"content":"[compact:ref i2] more"}]}"#;
        let reply = ScriptedReply::recall_stub().resolve_stub(request);
        assert_eq!(reply.tool_calls[0].name, RECALL_TOOL);
        assert_eq!(reply.tool_calls[0].arguments, json!({"id": "i00aa11bb22"}));
        let untouched = ScriptedReply::recall_stub().resolve_stub("no stubs here");
        assert_eq!(untouched.tool_calls[0].arguments, json!({"id": STUB_ID}));
    }
}
