//! Provider wire code for the summariser's own calls: request bodies and response parsing (JSON and
//! SSE) for OpenAI-compatible Chat Completions and Anthropic Messages.

use crate::error::{excerpt, LlmError};
use crate::overflow::classify_stream_event;
use compact_formats::sse::{parse_body, SseEvent};
use compact_formats::usage::{TokenUsage, UsageApi};
use serde_json::{json, Value};

/// Which API a summariser speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (OpenAI, Azure, vLLM, Ollama, llama.cpp server, LiteLLM...).
    OpenAi,
    /// Anthropic Messages.
    Anthropic,
    /// Anthropic's own compaction (on-demand mode, beta `compact-2026-09-04`): the material goes in a
    /// Messages request with a top-level `compaction: {type: "summarize"}`, and the readable summary
    /// of the `compaction` block it returns is the checkpoint text. A reply without a summary (empty
    /// content, a refusal), a 529 `compaction_unavailable` or any error is a failed summary, so the
    /// compactor falls back to Compact's own checkpoint: the window stays Compact's to guarantee.
    AnthropicCompaction,
}

/// Beta header value of Anthropic's on-demand compaction.
pub const ANTHROPIC_COMPACTION_BETA: &str = "compact-2026-09-04";
/// Longest on-demand compaction instructions the API accepts, in characters.
pub const MAX_COMPACTION_INSTRUCTIONS_CHARS: usize = 16_384;

impl ProviderKind {
    /// Name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::OpenAi => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::AnthropicCompaction => "anthropic-compaction",
        }
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(ProviderKind::OpenAi),
            "anthropic" => Ok(ProviderKind::Anthropic),
            "anthropic-compaction" => Ok(ProviderKind::AnthropicCompaction),
            other => Err(LlmError::Config(format!(
                "unknown summariser provider `{other}` (expected openai, anthropic or anthropic-compaction)"
            ))),
        }
    }
}

/// Which field carries the output cap in Chat requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputCapField {
    /// `max_tokens` (understood by every OpenAI-compatible server).
    #[default]
    MaxTokens,
    /// `max_completion_tokens` (required by OpenAI's reasoning models).
    MaxCompletionTokens,
}

/// Whether responses are streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamMode {
    /// One JSON body.
    #[default]
    Off,
    /// Server-sent events (a cut stream is detected and retried).
    On,
}

/// Generation settings of a call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    /// Temperature (`None`: the provider's default, for models that reject the field).
    pub temperature: Option<f32>,
    /// Seed (OpenAI-compatible servers only; Anthropic has none).
    pub seed: Option<u64>,
    /// Output cap field for Chat.
    pub cap_field: OutputCapField,
    /// Streaming.
    pub stream: StreamMode,
}

/// A completed model call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The text.
    pub text: String,
    /// Input tokens reported by the provider.
    pub input_tokens: Option<u64>,
    /// Output tokens reported by the provider.
    pub output_tokens: Option<u64>,
    /// Part of the input the provider read from its prompt cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`).
    pub cached_input_tokens: Option<u64>,
    /// Generation stopped to call a tool (`tool_calls` / `tool_use`): any text is not the answer.
    pub tool_call: bool,
    /// Generation stopped at the output cap.
    pub truncated: bool,
    /// The provider flagged a refusal.
    pub refused: bool,
}

/// The request body for one system + user exchange.
pub fn request_body(
    kind: ProviderKind,
    model: &str,
    system: &str,
    user: &str,
    max_output: u64,
    s: &Sampling,
) -> Value {
    let stream = s.stream == StreamMode::On;
    match kind {
        ProviderKind::OpenAi => {
            let mut body = json!({
                "model": model,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            });
            let cap = match s.cap_field {
                OutputCapField::MaxTokens => "max_tokens",
                OutputCapField::MaxCompletionTokens => "max_completion_tokens",
            };
            body[cap] = json!(max_output);
            if let Some(t) = s.temperature {
                body["temperature"] = json!(t);
            }
            if let Some(seed) = s.seed {
                body["seed"] = json!(seed);
            }
            if stream {
                body["stream"] = json!(true);
                body["stream_options"] = json!({"include_usage": true});
            }
            body
        }
        ProviderKind::Anthropic => {
            let mut body = json!({
                "model": model,
                "max_tokens": max_output,
                "system": system,
                "messages": [{"role": "user", "content": user}],
            });
            if let Some(t) = s.temperature {
                body["temperature"] = json!(t);
            }
            if stream {
                body["stream"] = json!(true);
            }
            body
        }
        ProviderKind::AnthropicCompaction => {
            let instructions: String = system
                .chars()
                .take(MAX_COMPACTION_INSTRUCTIONS_CHARS)
                .collect();
            let mut body = json!({
                "model": model,
                "max_tokens": max_output,
                "messages": [{"role": "user", "content": user}],
                "compaction": {"type": "summarize", "instructions": instructions},
            });
            if stream {
                body["stream"] = json!(true);
            }
            body
        }
    }
}

/// Parses a successful response body.
pub fn parse_response(
    kind: ProviderKind,
    stream: StreamMode,
    body: &str,
) -> Result<Completion, LlmError> {
    match (kind, stream) {
        (ProviderKind::OpenAi, StreamMode::Off) => parse_chat(body),
        (ProviderKind::Anthropic, StreamMode::Off) => parse_messages(body),
        (ProviderKind::OpenAi, StreamMode::On) => parse_chat_stream(body),
        (ProviderKind::Anthropic, StreamMode::On) => parse_messages_stream(body),
        (ProviderKind::AnthropicCompaction, StreamMode::Off) => {
            let v = json_of(body)?;
            Ok(compaction_completion(
                v["content"].as_array().map_or(&[][..], Vec::as_slice),
                v["stop_reason"].as_str(),
                &v["usage"],
            ))
        }
        (ProviderKind::AnthropicCompaction, StreamMode::On) => {
            // On demand, the whole block comes in one `content_block_start`; the stop reason and
            // the usage (with its iterations) in `message_delta`.
            let mut blocks = Vec::new();
            let mut stop = None;
            let mut usage = Value::Null;
            for ev in parse_body(body.as_bytes()) {
                let Ok(v) = serde_json::from_str::<Value>(&ev.data) else {
                    continue;
                };
                match v["type"].as_str() {
                    Some("content_block_start") => blocks.push(v["content_block"].clone()),
                    Some("message_delta") => {
                        stop = v["delta"]["stop_reason"].as_str().map(str::to_owned);
                        usage = v["usage"].clone();
                    }
                    Some("error") => {
                        return Err(LlmError::Malformed(format!(
                            "error event in the stream: `{}`",
                            excerpt(&ev.data)
                        )))
                    }
                    _ => {}
                }
            }
            Ok(compaction_completion(&blocks, stop.as_deref(), &usage))
        }
    }
}

/// The completion of an on-demand compaction reply: the `compaction` block's readable summary
/// (empty when there is none: no block, `null` content, or only encrypted content); the cost is
/// the sum of the usage's iterations (the top-level counts are 0).
fn compaction_completion(content: &[Value], stop: Option<&str>, usage: &Value) -> Completion {
    let text = content
        .iter()
        .find(|b| b["type"] == "compaction")
        .and_then(|b| b["content"].as_str())
        .unwrap_or("")
        .to_owned();
    let usage = TokenUsage::read(UsageApi::Messages, usage);
    Completion {
        text,
        input_tokens: usage.billed_input().or(usage.input_tokens),
        output_tokens: usage.billed_output().or(usage.output_tokens),
        cached_input_tokens: usage.billed_cache_read().or(usage.cache_read_input_tokens),
        tool_call: false,
        truncated: matches!(stop, Some("max_tokens" | "model_context_window_exceeded")),
        refused: stop == Some("refusal"),
    }
}

fn json_of(body: &str) -> Result<Value, LlmError> {
    serde_json::from_str(body)
        .map_err(|e| LlmError::Malformed(format!("{e} in `{}`", excerpt(body))))
}

fn parse_chat(body: &str) -> Result<Completion, LlmError> {
    let v = json_of(body)?;
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| LlmError::Malformed(format!("no choices in `{}`", excerpt(body))))?;
    let message = choice
        .get("message")
        .ok_or_else(|| LlmError::Malformed("choice without message".into()))?;
    let usage = TokenUsage::read(UsageApi::Chat, v.get("usage").unwrap_or(&Value::Null));
    Ok(Completion {
        text: message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned(),
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cached_input_tokens: usage.cached_input(),
        tool_call: message
            .get("tool_calls")
            .and_then(Value::as_array)
            .is_some_and(|c| !c.is_empty())
            || choice.get("finish_reason").and_then(Value::as_str) == Some("tool_calls"),
        truncated: choice.get("finish_reason").and_then(Value::as_str) == Some("length"),
        refused: message.get("refusal").is_some_and(|r| !r.is_null())
            || choice.get("finish_reason").and_then(Value::as_str) == Some("content_filter"),
    })
}

fn parse_messages(body: &str) -> Result<Completion, LlmError> {
    let v = json_of(body)?;
    let content = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::Malformed(format!("no content in `{}`", excerpt(body))))?;
    let text: Vec<&str> = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    // A reply with `usage` (even `null`) reports an input, 0 when it counts none.
    let usage = v
        .get("usage")
        .map(|u| TokenUsage::read(UsageApi::Messages, u));
    let stop = v.get("stop_reason").and_then(Value::as_str);
    Ok(Completion {
        text: text.concat(),
        input_tokens: usage.as_ref().map(TokenUsage::total_input),
        output_tokens: usage.as_ref().and_then(|u| u.output_tokens),
        cached_input_tokens: usage.as_ref().and_then(TokenUsage::cached_input),
        tool_call: stop == Some("tool_use"),
        truncated: stop == Some("max_tokens"),
        refused: stop == Some("refusal"),
    })
}

/// An error object inside a stream: an overflow, or a status-like error.
fn stream_error(ev: &SseEvent, v: &Value) -> LlmError {
    if let Some(o) = classify_stream_event(ev.event.as_deref(), &ev.data) {
        return LlmError::Overflow(o);
    }
    let kind = v
        .get("error")
        .and_then(|e| e.get("type"))
        .and_then(Value::as_str)
        .unwrap_or("");
    // Anthropic's mid-stream `overloaded_error` corresponds to HTTP 529; other errors to 500.
    let status = if kind == "overloaded_error" { 529 } else { 500 };
    LlmError::Status {
        status,
        body: excerpt(&ev.data),
    }
}

fn parse_chat_stream(body: &str) -> Result<Completion, LlmError> {
    let mut out = Completion::default();
    let mut done = false;
    for ev in parse_body(body.as_bytes()) {
        if ev.data.trim() == "[DONE]" {
            done = true;
            break;
        }
        let v = json_of(&ev.data)?;
        if v.get("error").is_some() {
            return Err(stream_error(&ev, &v));
        }
        if let Some(choice) = v
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        {
            let delta = choice.get("delta");
            if let Some(t) = delta.and_then(|d| d.get("content")).and_then(Value::as_str) {
                out.text.push_str(t);
            }
            if delta
                .and_then(|d| d.get("refusal"))
                .is_some_and(|r| !r.is_null())
            {
                out.refused = true;
            }
            if delta
                .and_then(|d| d.get("tool_calls"))
                .and_then(Value::as_array)
                .is_some_and(|c| !c.is_empty())
            {
                out.tool_call = true;
            }
            match choice.get("finish_reason").and_then(Value::as_str) {
                Some("length") => out.truncated = true,
                Some("content_filter") => out.refused = true,
                Some("tool_calls") => out.tool_call = true,
                _ => {}
            }
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            let u = TokenUsage::read(UsageApi::Chat, u);
            out.input_tokens = u.input_tokens;
            out.output_tokens = u.output_tokens;
            out.cached_input_tokens = u.cached_input();
        }
    }
    if !done {
        return Err(LlmError::StreamCut(
            "chat stream ended without [DONE]".into(),
        ));
    }
    Ok(out)
}

fn parse_messages_stream(body: &str) -> Result<Completion, LlmError> {
    let mut out = Completion::default();
    let mut done = false;
    for ev in parse_body(body.as_bytes()) {
        let v = json_of(&ev.data)?;
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "error" => return Err(stream_error(&ev, &v)),
            "message_start" => {
                // The input is in `message_start`, the output in `message_delta`.
                let usage = v
                    .get("message")
                    .and_then(|m| m.get("usage"))
                    .map(|u| TokenUsage::read(UsageApi::Messages, u));
                out.input_tokens = usage.as_ref().map(TokenUsage::total_input);
                out.cached_input_tokens = usage.as_ref().and_then(TokenUsage::cached_input);
            }
            "content_block_delta" => {
                if let Some(t) = v
                    .get("delta")
                    .filter(|d| d.get("type").and_then(Value::as_str) == Some("text_delta"))
                    .and_then(|d| d.get("text"))
                    .and_then(Value::as_str)
                {
                    out.text.push_str(t);
                }
            }
            "message_delta" => {
                match v
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    Some("max_tokens") => out.truncated = true,
                    Some("refusal") => out.refused = true,
                    Some("tool_use") => out.tool_call = true,
                    _ => {}
                }
                out.output_tokens = v
                    .get("usage")
                    .and_then(|u| TokenUsage::read(UsageApi::Messages, u).output_tokens);
            }
            "message_stop" => {
                done = true;
                break;
            }
            _ => {}
        }
    }
    if !done {
        return Err(LlmError::StreamCut(
            "message stream ended without message_stop".into(),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_without_choices_is_malformed() {
        assert!(matches!(
            parse_chat("{\"id\":1}"),
            Err(LlmError::Malformed(_))
        ));
        assert!(matches!(
            parse_chat("{\"id\": \"x\", \"choices\": [{"),
            Err(LlmError::Malformed(_))
        ));
    }
}
