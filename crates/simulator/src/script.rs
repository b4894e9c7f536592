//! Scripted replies: what the simulated model says (text and/or tool calls) when a test wants more
//! than the default deterministic reply.

use serde_json::Value;

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
}

impl ScriptedReply {
    /// A text-only reply.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedReply {
            text: text.into(),
            tool_calls: Vec::new(),
        }
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

/// Longest excerpt of the last user message echoed by the default reply.
const ECHO_CHARS: usize = 200;

/// The default reply: deterministic, and telling the test what the simulator saw.
pub fn default_reply(input_tokens: u64, last_user: &str) -> ScriptedReply {
    let excerpt: String = last_user.chars().take(ECHO_CHARS).collect();
    ScriptedReply::text(format!(
        "Simulated reply ({input_tokens} input tokens). Last user message: {excerpt}"
    ))
}
