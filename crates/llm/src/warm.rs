//! The cache-warm summariser call: instead of a fresh prompt that makes the model read the whole
//! history uncached, send the conversation's own request back (same system prompt, tools and
//! messages, byte for byte) with the summarisation request appended as a last user turn, so the
//! provider serves the prefix from the prompt cache the agent's own calls warmed.
//!
//! It applies only when it can hit that cache: the request carries the conversation
//! ([`compact_engine::SummaryRequest::prefix`]) in the summariser's own wire format (Chat for an
//! OpenAI-compatible summariser, Messages for Anthropic) and for the summariser's model (a cache
//! is per model), the template is not plan mode, and the whole request fits the summariser's
//! window. Under [`CacheWarm::Auto`] it must also be cheaper by estimate: the whole request at the
//! cached price against the fresh prompt (only the items being replaced, tool outputs truncated)
//! at the full price, since a compaction that replaces a small part of a long request reads less
//! uncached than the whole request cached. Otherwise, or when the model answers without text (it
//! called a tool, refused), the summariser uses its fresh, budgeted prompt (map-reduce when too
//! large) as before.

use crate::error::LlmError;
use crate::input;
use crate::provider::{OutputCapField, ProviderKind, Sampling, StreamMode};
use crate::summarizer::{LlmSummarizer, Trace, WRAPPER_TOKENS};
use crate::template::system_prompt;
use compact_core::model::{Conversation, Format, Item, Role};
use compact_engine::SummaryRequest;
use compact_formats::wire;
use serde_json::{json, Value};
use std::fmt;
use std::str::FromStr;

/// Whether the summariser may send the conversation's own request back to read the prompt cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CacheWarm {
    /// When it applies (same wire format and model, fits the window) and its estimated cost is
    /// below the fresh prompt's.
    #[default]
    Auto,
    /// Whenever it applies, whatever the cost (the model reads the whole conversation, tool
    /// outputs untruncated).
    Always,
    /// Never: always a fresh prompt.
    Off,
}

impl CacheWarm {
    /// The configuration spelling.
    pub fn name(self) -> &'static str {
        match self {
            CacheWarm::Auto => "auto",
            CacheWarm::Always => "always",
            CacheWarm::Off => "off",
        }
    }
}

impl fmt::Display for CacheWarm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CacheWarm {
    type Err = LlmError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(CacheWarm::Auto),
            "always" => Ok(CacheWarm::Always),
            "off" => Ok(CacheWarm::Off),
            other => Err(LlmError::Config(format!(
                "unknown cache_warm `{other}` (expected auto, always or off)"
            ))),
        }
    }
}

/// Price of a cached input token relative to an uncached one when the registry does not price the
/// summariser's model: OpenAI's discount on its GPT-4.1 models (Anthropic's and GPT-5's are 0.1),
/// the least favourable current hosted one.
pub const DEFAULT_CACHED_PRICE_RATIO: f64 = 0.25;

/// Longest excerpt (characters) quoted to name the last message to record.
pub const EXCERPT_CHARS: usize = 120;

/// Opening of the appended request: it comes from the context manager, and the answer is text.
pub const WARM_OPENING: &str = "[This message comes from the agent's context manager, not from the user.] \
Pause the task: do not call any tool and do not continue the work. Answer with text only, following these \
instructions:\n\n";

/// A prepared cache-warm call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct WarmCall {
    /// The request body.
    pub(crate) body: Value,
    /// Input tokens by our own count (used when the provider reports none).
    pub(crate) estimate: usize,
    /// The summary's cap.
    pub(crate) max_out: usize,
}

/// The wire format a summariser of `kind` speaks, if it can send a conversation back as it is.
fn format_of(kind: ProviderKind) -> Option<Format> {
    match kind {
        ProviderKind::OpenAi => Some(Format::OpenAiChat),
        ProviderKind::Anthropic => Some(Format::Anthropic),
        ProviderKind::AnthropicCompaction => None,
    }
}

/// The cache-warm call for `request`, or `None` when the path does not apply (see the module docs).
pub(crate) fn prepare(s: &LlmSummarizer, request: &SummaryRequest<'_>) -> Option<WarmCall> {
    if s.cache_warm == CacheWarm::Off || request.max_tokens == 0 {
        return None;
    }
    let prefix = request.prefix?;
    let format = format_of(s.kind).filter(|f| prefix.format == Some(*f))?;
    let last = request.items.last()?;
    let at = prefix
        .items
        .iter()
        .position(|i| i.meta.id == last.meta.id)?;
    let encoded = wire::encode(prefix, format).ok()?.value;
    if encoded.get("model").and_then(Value::as_str) != Some(s.model.as_str()) {
        return None;
    }
    let total = encoded.get("messages").and_then(Value::as_array)?.len();
    let mut head = prefix.clone();
    head.items.truncate(at + 1);
    let upto = wire::encode(&head, format)
        .ok()?
        .value
        .get("messages")
        .and_then(Value::as_array)
        .map(Vec::len)
        .filter(|n| (1..=total).contains(n))?;
    let instruction = instruction(s, request, (upto, total), &prefix.items[at]);
    let body = warm_body(
        &encoded,
        s.kind,
        &instruction,
        request.max_tokens as u64,
        &s.sampling,
    )?;
    let estimate = s.counter.total(prefix) + s.counter.count_text(&instruction);
    let thinking = thinking_budget(&encoded) as usize;
    let needed = estimate + WRAPPER_TOKENS + s.safety_margin + request.max_tokens + thinking;
    if needed > s.context_window {
        return None;
    }
    if s.cache_warm == CacheWarm::Auto {
        // In uncached-token units: the whole request mostly read from the cache, against the
        // fresh prompt's material and instructions read in full.
        let (total, tail) = (s.counter.total(prefix), uncached_tail(s, prefix));
        let warm = s.cached_price_ratio * total.saturating_sub(tail) as f64
            + (tail + s.counter.count_text(&instruction)) as f64;
        let blocks = input::render(request.items, request.previous, &s.limits, &s.counter);
        let fresh = input::total_tokens(&blocks)
            + s.counter.count_text(&system_prompt(
                &s.prompt,
                request.also_preserve.or(s.also_preserve.as_deref()),
                request.max_tokens,
            ));
        if warm >= fresh as f64 {
            return None;
        }
    }
    Some(WarmCall {
        body,
        estimate,
        max_out: request.max_tokens,
    })
}

/// Tokens the agent's last call cannot have cached: the model's last answer (its last run of
/// assistant items) and everything after it.
fn uncached_tail(s: &LlmSummarizer, prefix: &Conversation) -> usize {
    let items = &prefix.items;
    let mut start = items.len();
    if let Some(last) = items.iter().rposition(|i| i.role() == Role::Assistant) {
        start = last;
        while start > 0 && items[start - 1].role() == Role::Assistant {
            start -= 1;
        }
    }
    items[start..]
        .iter()
        .filter(|i| i.meta.visibility.model)
        .map(|i| s.counter.count_item(i))
        .sum()
}

/// Makes the prepared call. `Some(text)` on success; `None` when the answer is no summary (no text,
/// a tool call, a refusal) or the call failed, with a warning: the caller then uses the fresh prompt
/// (the failed call's usage stays counted in `trace`).
pub(crate) async fn run(s: &LlmSummarizer, call: &WarmCall, trace: &mut Trace) -> Option<String> {
    let why = match s.send(&call.body, call.estimate, call.max_out, trace).await {
        Ok(c) if !c.tool_call => return Some(c.text.trim().to_owned()),
        Ok(_) => "the model called a tool instead of answering".to_owned(),
        Err(e) => e.to_string(),
    };
    trace.warnings.push(format!(
        "{} summariser: the cache-warm call gave no summary ({why}); summarising with a fresh prompt",
        s.kind.name()
    ));
    None
}

/// The appended request: the template's instructions, which messages to record (by position and a
/// quoted excerpt of the last one), and how to treat the previous checkpoint.
fn instruction(
    s: &LlmSummarizer,
    request: &SummaryRequest<'_>,
    (upto, total): (usize, usize),
    last: &Item,
) -> String {
    let also = request.also_preserve.or(s.also_preserve.as_deref());
    let mut out = String::from(WARM_OPENING);
    out.push_str(&system_prompt(&s.prompt, also, request.max_tokens));
    out.push_str(&format!(
        "\nWhat to record: the conversation above, from its start up to and including message {upto} of \
{total} (the one containing \"{}\"). The messages from message {upto} back are about to be replaced by \
your record; the system prompt, the tool declarations and the messages after message {upto} stay in the \
context as they are and need no record.\n",
        excerpt(last)
    ));
    if request.previous.is_some() {
        out.push_str(
            "The conversation already opens with a record of even earlier work: fold what it says into \
your record (keep what still matters) instead of referring to it.\n",
        );
    }
    out.push_str("Answer now with the record only.");
    out
}

/// The first [`EXCERPT_CHARS`] characters of an item's text, whitespace collapsed.
fn excerpt(item: &Item) -> String {
    let text = item.plain_text();
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.is_empty() {
        return format!("a {} without text", item.kind().as_str());
    }
    let mut cut: String = joined.chars().take(EXCERPT_CHARS).collect();
    if cut.len() < joined.len() {
        cut.push('…');
    }
    cut.replace('"', "'")
}

/// The thinking budget an Anthropic request declares (0 when none): the output cap must exceed it.
fn thinking_budget(body: &Value) -> u64 {
    body.get("thinking")
        .and_then(|t| t.get("budget_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The cache-warm request body: `encoded` (a conversation's own request in the summariser's wire
/// format) with every message, the system prompt, the tools and `tool_choice` left byte for byte
/// as they are, `instruction` appended as a last user turn (Anthropic: as a text block of the last
/// message when that is a user message, since roles alternate), and the output cap, streaming and
/// sampling set as the summariser's own calls set them. `None` when `encoded` has no messages or
/// `kind` cannot send a conversation back.
pub fn warm_body(
    encoded: &Value,
    kind: ProviderKind,
    instruction: &str,
    max_out: u64,
    sampling: &Sampling,
) -> Option<Value> {
    let mut body = encoded.clone();
    let obj = body.as_object_mut()?;
    let messages = obj.get_mut("messages")?.as_array_mut()?;
    let stream = sampling.stream == StreamMode::On;
    match kind {
        ProviderKind::OpenAi => {
            messages.push(json!({"role": "user", "content": instruction}));
            obj.remove("max_tokens");
            obj.remove("max_completion_tokens");
            let cap = match sampling.cap_field {
                OutputCapField::MaxTokens => "max_tokens",
                OutputCapField::MaxCompletionTokens => "max_completion_tokens",
            };
            obj.insert(cap.to_owned(), json!(max_out));
            if let Some(t) = sampling.temperature {
                obj.insert("temperature".to_owned(), json!(t));
            }
            if let Some(seed) = sampling.seed {
                obj.insert("seed".to_owned(), json!(seed));
            }
            // One answer, as text.
            obj.remove("n");
            if stream {
                obj.insert("stream".to_owned(), json!(true));
                obj.insert("stream_options".to_owned(), json!({"include_usage": true}));
            } else {
                obj.remove("stream");
                obj.remove("stream_options");
            }
        }
        ProviderKind::Anthropic => {
            let block = json!({"type": "text", "text": instruction});
            match messages.last_mut() {
                Some(m) if m.get("role").and_then(Value::as_str) == Some("user") => {
                    match m.get_mut("content")? {
                        Value::Array(blocks) => blocks.push(block),
                        Value::String(text) => {
                            let first = json!({"type": "text", "text": text.as_str()});
                            m["content"] = json!([first, block]);
                        }
                        _ => return None,
                    }
                }
                _ => messages.push(json!({"role": "user", "content": [block]})),
            }
            let thinking = thinking_budget(encoded);
            obj.insert("max_tokens".to_owned(), json!(max_out + thinking));
            // Extended thinking accepts only its default temperature.
            match sampling.temperature {
                Some(t) if thinking == 0 => {
                    obj.insert("temperature".to_owned(), json!(t));
                }
                _ => {}
            }
            if stream {
                obj.insert("stream".to_owned(), json!(true));
            } else {
                obj.remove("stream");
            }
        }
        ProviderKind::AnthropicCompaction => return None,
    }
    Some(body)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn sampling(stream: StreamMode) -> Sampling {
        Sampling {
            temperature: Some(0.0),
            seed: Some(7),
            cap_field: OutputCapField::MaxTokens,
            stream,
        }
    }

    fn messages(v: &Value) -> &Vec<Value> {
        v["messages"].as_array().unwrap()
    }

    #[test]
    fn chat_prefix_is_kept_byte_for_byte() {
        let agent = json!({
            "model": "m", "max_completion_tokens": 4096, "stream": true,
            "stream_options": {"include_usage": true}, "tool_choice": "auto",
            "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
            "messages": [
                {"role": "system", "content": "You are a coding agent."},
                {"role": "user", "content": "Fix the build."},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                  "function": {"name": "bash", "arguments": "{\"command\":\"make\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}
            ]
        });
        let body = warm_body(
            &agent,
            ProviderKind::OpenAi,
            "record it",
            500,
            &sampling(StreamMode::Off),
        )
        .unwrap();
        let (sent, agent_msgs) = (messages(&body), messages(&agent));
        assert_eq!(sent.len(), agent_msgs.len() + 1);
        for (a, b) in agent_msgs.iter().zip(sent) {
            assert_eq!(a.to_string(), b.to_string());
        }
        assert_eq!(
            sent.last().unwrap(),
            &json!({"role": "user", "content": "record it"})
        );
        assert_eq!(body["tools"].to_string(), agent["tools"].to_string());
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(body["max_tokens"], 500);
        assert!(body.get("max_completion_tokens").is_none());
        assert!(body.get("stream").is_none() && body.get("stream_options").is_none());
        assert_eq!(body["seed"], 7);
    }

    #[test]
    fn anthropic_appends_to_a_last_user_message() {
        let agent = json!({
            "model": "m", "max_tokens": 8000, "system": [{"type": "text", "text": "sys"}],
            "tool_choice": {"type": "auto"},
            "messages": [
                {"role": "user", "content": "Run it."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok",
                  "cache_control": {"type": "ephemeral"}}]}
            ]
        });
        let body = warm_body(
            &agent,
            ProviderKind::Anthropic,
            "record it",
            400,
            &sampling(StreamMode::On),
        )
        .unwrap();
        let sent = messages(&body);
        assert_eq!(sent.len(), 3, "roles alternate: no second user message");
        assert_eq!(sent[..2], messages(&agent)[..2]);
        let last = sent[2]["content"].as_array().unwrap();
        assert_eq!(last[0], messages(&agent)[2]["content"][0]);
        assert_eq!(last[1], json!({"type": "text", "text": "record it"}));
        assert_eq!(body["system"], agent["system"]);
        assert_eq!(body["tool_choice"], agent["tool_choice"]);
        assert_eq!(body["max_tokens"], 400);
        assert_eq!(body["stream"], true);

        // A string content becomes the same text as a block; after an assistant turn, a new message.
        let short = |request: &Value, kind: ProviderKind| {
            warm_body(request, kind, "x", 10, &sampling(StreamMode::Off))
        };
        let mut s = agent.clone();
        s["messages"] = json!([{"role": "user", "content": "hi"}]);
        let body = short(&s, ProviderKind::Anthropic).unwrap();
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "text", "text": "hi"}, {"type": "text", "text": "x"}])
        );
        s["messages"] =
            json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}]);
        s["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
        let body = short(&s, ProviderKind::Anthropic).unwrap();
        assert_eq!(messages(&body).len(), 3);
        assert_eq!(body["messages"][2]["role"], "user");
        assert_eq!(
            body["max_tokens"], 1034,
            "the cap is above the thinking budget"
        );
        assert!(body.get("temperature").is_none());
        assert!(short(&s, ProviderKind::AnthropicCompaction).is_none());
    }

    /// A summariser of `kind` for model `m` on a local (never contacted) endpoint.
    fn summarizer(kind: ProviderKind, window: usize, mode: CacheWarm) -> LlmSummarizer {
        let mut c = crate::SummarizerConfig::new(kind);
        c.base_url = "http://127.0.0.1:9/v1".into();
        c.api_key_env = "COMPACT_TEST_SURELY_UNSET_KEY".into();
        c.model = "m".into();
        c.context_window = window;
        c.safety_margin = 0;
        c.cache_warm = mode;
        crate::build_summarizer(c, None).unwrap()
    }

    fn chat_request(model: &str) -> Value {
        let mut messages = vec![json!({"role": "system", "content": "You are a coding agent."})];
        for i in 0..6 {
            messages.push(json!({"role": "user", "content": format!(
                "Step {i}: edit src/f{i}.rs. {}",
                "Keep the public API unchanged and run the tests after each edit. ".repeat(12)
            )}));
            messages.push(json!({"role": "assistant", "content": format!("Edited src/f{i}.rs.")}));
        }
        json!({"model": model, "messages": messages, "max_tokens": 2048,
               "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}]})
    }

    fn request<'a>(conv: &'a compact_core::model::Conversation, n: usize) -> SummaryRequest<'a> {
        SummaryRequest {
            items: &conv.items[1..n],
            previous: None,
            max_tokens: 300,
            counter: compact_core::tokens::TokenCounter::new(
                compact_core::tokens::Encoding::O200kBase,
            ),
            also_preserve: None,
            prefix: Some(conv),
        }
    }

    #[test]
    fn applies_only_for_the_same_format_model_and_a_fitting_window() {
        let agent = chat_request("m");
        let conv = wire::decode(Format::OpenAiChat, &agent).unwrap();
        let s = summarizer(ProviderKind::OpenAi, 128_000, CacheWarm::Always);
        let call = prepare(&s, &request(&conv, 7)).expect("the warm path applies");
        let sent = messages(&call.body);
        let agent_msgs = messages(&agent);
        assert_eq!(sent.len(), agent_msgs.len() + 1);
        for (a, b) in agent_msgs.iter().zip(sent) {
            assert_eq!(a.to_string(), b.to_string(), "byte-identical prefix");
        }
        assert_eq!(call.body["tools"].to_string(), agent["tools"].to_string());
        let instruction = sent.last().unwrap()["content"].as_str().unwrap();
        assert!(instruction.starts_with(WARM_OPENING), "{instruction}");
        // Items 1..7 are the first six messages after the system prompt: message 7 of 13.
        assert!(
            instruction.contains("up to and including message 7 of 13"),
            "{instruction}"
        );
        assert!(
            instruction.contains("\"Edited src/f2.rs.\""),
            "{instruction}"
        );
        assert_eq!(call.max_out, 300);

        // Another model, another format, switched off, a window too small, no prefix: no warm call.
        let other = wire::decode(Format::OpenAiChat, &chat_request("other")).unwrap();
        assert!(prepare(&s, &request(&other, 7)).is_none());
        let anthropic = summarizer(ProviderKind::Anthropic, 128_000, CacheWarm::Always);
        assert!(prepare(&anthropic, &request(&conv, 7)).is_none());
        let off = summarizer(ProviderKind::OpenAi, 128_000, CacheWarm::Off);
        assert!(prepare(&off, &request(&conv, 7)).is_none());
        let small = summarizer(ProviderKind::OpenAi, 400, CacheWarm::Always);
        assert!(prepare(&small, &request(&conv, 7)).is_none());
        let mut none = request(&conv, 7);
        none.prefix = None;
        assert!(prepare(&s, &none).is_none());
    }

    #[test]
    fn auto_sends_the_request_back_only_when_that_is_cheaper() {
        let conv = wire::decode(Format::OpenAiChat, &chat_request("m")).unwrap();
        let s = summarizer(ProviderKind::OpenAi, 128_000, CacheWarm::Auto);
        // Replacing most of the request: reading it cached costs less than the material in full.
        assert!(prepare(&s, &request(&conv, 11)).is_some());
        // Replacing two messages of thirteen: the fresh prompt costs less.
        assert!(prepare(&s, &request(&conv, 3)).is_none());
        let always = summarizer(ProviderKind::OpenAi, 128_000, CacheWarm::Always);
        assert!(prepare(&always, &request(&conv, 3)).is_some());
    }

    #[test]
    fn anthropic_conversation_with_a_previous_checkpoint() {
        let agent = json!({"model": "m", "max_tokens": 1000, "system": "sys",
            "messages": [{"role": "user", "content": "Earlier record."},
                         {"role": "assistant", "content": "Understood."},
                         {"role": "user", "content": "Now run the tests."}]});
        let conv = wire::decode(Format::Anthropic, &agent).unwrap();
        let s = summarizer(ProviderKind::Anthropic, 128_000, CacheWarm::Always);
        let checkpoint = compact_core::model::Checkpoint::default();
        let mut r = request(&conv, 2);
        r.items = &conv.items[1..3];
        r.previous = Some(&checkpoint);
        let call = prepare(&s, &r).unwrap();
        let sent = messages(&call.body);
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[..2], messages(&agent)[..2]);
        let text = sent[2]["content"][1]["text"].as_str().unwrap();
        assert!(
            text.contains("message 2 of 3") && text.contains("fold"),
            "{text}"
        );
    }

    #[test]
    fn setting_spellings() {
        assert_eq!("auto".parse::<CacheWarm>().unwrap(), CacheWarm::Auto);
        assert_eq!(" OFF ".parse::<CacheWarm>().unwrap(), CacheWarm::Off);
        assert_eq!("always".parse::<CacheWarm>().unwrap(), CacheWarm::Always);
        assert!("on".parse::<CacheWarm>().is_err());
        assert_eq!(CacheWarm::default(), CacheWarm::Auto);
    }
}
