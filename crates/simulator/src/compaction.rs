//! Provider-side compaction as both providers ship it (see `formats.md`, "Provider-side compaction
//! on the wire"):
//!
//! - Anthropic threshold mode (beta `compact-2026-01-12`, a `compact_20260112` edit in
//!   `context_management`): when the input reaches the trigger, the reply opens with a `compaction`
//!   block (streamed as `content_block_start`, one `compaction_delta`, `content_block_stop`), then
//!   the normal reply, or only the block with `stop_reason: "compaction"` under
//!   `pause_after_compaction`; `usage.iterations` lists both passes and the top-level counts are the
//!   message pass's. Later requests are counted from the last block on (the server reads nothing
//!   before it).
//! - Anthropic on-demand mode (beta `compact-2026-09-04`, a top-level `compaction`): the reply is the
//!   signed block alone (`stop_reason: "compaction"`, top-level usage 0, the work in `iterations`),
//!   refused with `stop_sequences`, a structured output format, a forced tool, `context_management`,
//!   an unanswered `tool_use` or no messages; a later request must carry the block first, once,
//!   unchanged (`compaction_block_misplaced`, `compaction_signature_invalid`,
//!   `compaction_content_mismatch`). Faults: `compaction-empty;stop=<reason>` (HTTP 200, empty
//!   content, billed) and `compaction-unavailable` (529 `overloaded_error`).
//! - OpenAI Responses: `context_management: [{type: "compaction", compact_threshold}]` adds a
//!   `compaction` item to the output when the input reaches it; the in-band trigger (last input item
//!   `compaction_trigger`) answers with exactly one `compaction` item and, streamed, a
//!   `response.compaction.compacting` event; `POST /v1/responses/compact` returns the input's user
//!   messages and one compaction item (fault `not-found`: 404, as on some backends). A `compaction`
//!   item sent back must be one the simulator issued, unchanged.

use crate::body::sse;
use bytes::Bytes;
use compact_formats::sse::parse_body;
use serde_json::{json, Value};
use std::collections::HashMap;

/// Beta header value of threshold compaction.
pub const THRESHOLD_BETA: &str = "compact-2026-01-12";
/// Beta header value of on-demand compaction.
pub const ON_DEMAND_BETA: &str = "compact-2026-09-04";
/// The threshold edit's default trigger, in input tokens.
pub const DEFAULT_TRIGGER: u64 = 150_000;
/// The smallest trigger the API accepts.
pub const MIN_TRIGGER: u64 = 50_000;
/// Longest on-demand instructions, in characters.
pub const MAX_INSTRUCTIONS_CHARS: usize = 16_384;
/// Stop reasons of an on-demand reply that produced no summary.
pub const EMPTY_STOP_REASONS: [&str; 5] = [
    "max_tokens",
    "model_context_window_exceeded",
    "tool_use",
    "refusal",
    "end_turn",
];

/// The compactions this simulator issued, so that what comes back can be checked byte for byte.
#[derive(Debug, Default)]
pub struct Issued {
    /// Anthropic blocks by signature.
    blocks: HashMap<String, Value>,
    /// OpenAI items by encrypted payload.
    items: HashMap<String, Value>,
}

impl Issued {
    /// Remembers an Anthropic block (it carries a signature).
    pub fn block(&mut self, block: &Value) {
        if let Some(sig) = block.get("signature").and_then(Value::as_str) {
            self.blocks.insert(sig.to_owned(), block.clone());
        }
    }

    /// Every issued compaction as the JSON text sent.
    pub fn all(&self) -> Vec<String> {
        self.blocks
            .values()
            .chain(self.items.values())
            .map(Value::to_string)
            .collect()
    }

    /// Remembers an OpenAI compaction item.
    pub fn item(&mut self, item: &Value) {
        if let Some(enc) = item.get("encrypted_content").and_then(Value::as_str) {
            self.items.insert(enc.to_owned(), item.clone());
        }
    }
}

/// A refusal: HTTP status, and the error code (`error.details.error_code`) with its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status.
    pub status: u16,
    /// Error type (`invalid_request_error`, `overloaded_error`).
    pub kind: &'static str,
    /// The compaction error code, if the provider gives one.
    pub code: Option<&'static str>,
    /// The message.
    pub message: String,
}

impl Refusal {
    fn invalid(code: Option<&'static str>, message: impl Into<String>) -> Self {
        Refusal {
            status: 400,
            kind: "invalid_request_error",
            code,
            message: message.into(),
        }
    }

    /// The Anthropic error body.
    pub fn anthropic_body(&self, seq: u64) -> String {
        let mut error = json!({"type": self.kind, "message": self.message});
        if let Some(code) = self.code {
            error["details"] = json!({"error_code": code});
        }
        json!({"type": "error", "error": error, "request_id": format!("req_sim_{seq}")}).to_string()
    }

    /// The OpenAI error body.
    pub fn openai_body(&self) -> String {
        json!({"error": {"message": self.message, "type": self.kind, "param": "input",
            "code": self.code.unwrap_or("invalid_request")}})
        .to_string()
    }
}

/// What an Anthropic request asks of compaction.
#[derive(Debug, Clone, PartialEq)]
pub enum AnthropicMode {
    /// Nothing: a normal request.
    None,
    /// Threshold mode: compact when the input reaches `trigger`.
    Threshold {
        /// Input tokens that fire it.
        trigger: u64,
        /// Answer with the block alone.
        pause: bool,
    },
    /// An on-demand compaction call.
    OnDemand,
}

fn has_beta(headers: &[(String, String)], beta: &str) -> bool {
    headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("anthropic-beta"))
        .any(|(_, v)| v.split(',').any(|b| b.trim() == beta))
}

fn compaction_blocks(body: &Value) -> Vec<(usize, usize, &Value)> {
    let mut out = Vec::new();
    for (i, m) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, b) in m["content"].as_array().into_iter().flatten().enumerate() {
            if b.get("type").and_then(Value::as_str) == Some("compaction") {
                out.push((i, j, b));
            }
        }
    }
    out
}

fn threshold_edit(body: &Value) -> Option<&Value> {
    body["context_management"]["edits"]
        .as_array()?
        .iter()
        .find(|e| e["type"] == "compact_20260112")
}

/// Checks an Anthropic request's compaction use; the mode, or the refusal the API gives.
pub fn anthropic_mode(
    headers: &[(String, String)],
    body: &Value,
    issued: &Issued,
) -> Result<AnthropicMode, Refusal> {
    let edit = threshold_edit(body);
    let call = body.get("compaction").filter(|c| !c.is_null());
    let blocks = compaction_blocks(body);
    if edit.is_some() && !has_beta(headers, THRESHOLD_BETA) {
        return Err(Refusal::invalid(
            None,
            format!("context_management.edits.0: `compact_20260112` requires the `anthropic-beta: {THRESHOLD_BETA}` header"),
        ));
    }
    if (call.is_some() || (!blocks.is_empty() && edit.is_none()))
        && !has_beta(headers, ON_DEMAND_BETA)
    {
        return Err(Refusal::invalid(
            None,
            format!("compaction: on-demand compaction requires the `anthropic-beta: {ON_DEMAND_BETA}` header"),
        ));
    }
    for (i, j, block) in &blocks {
        let sig = block.get("signature").and_then(Value::as_str);
        match sig.and_then(|s| issued.blocks.get(s)) {
            None => {
                return Err(Refusal::invalid(
                    Some("compaction_signature_invalid"),
                    format!(
                        "messages.{i}.content.{j}: the compaction block's signature is not valid"
                    ),
                ))
            }
            Some(known) if known != *block => {
                return Err(Refusal::invalid(
                    Some("compaction_content_mismatch"),
                    format!("messages.{i}.content.{j}: the compaction block was modified"),
                ))
            }
            Some(_) => {}
        }
    }
    if edit.is_none() {
        for (k, (i, j, _)) in blocks.iter().enumerate() {
            if k > 0 || (*i, *j) != (0, 0) {
                return Err(Refusal::invalid(
                    Some("compaction_block_misplaced"),
                    format!("messages.{i}.content.{j}: a compaction block must be the first content of the messages, exactly once"),
                ));
            }
        }
    }
    if let Some(call) = call {
        on_demand_call(body, call)?;
        return Ok(AnthropicMode::OnDemand);
    }
    match edit {
        None => Ok(AnthropicMode::None),
        Some(edit) => {
            let trigger = edit["trigger"]["value"].as_u64().unwrap_or(DEFAULT_TRIGGER);
            if trigger < MIN_TRIGGER {
                return Err(Refusal::invalid(
                    None,
                    format!(
                        "context_management.edits.0.trigger.value: must be at least {MIN_TRIGGER}"
                    ),
                ));
            }
            Ok(AnthropicMode::Threshold {
                trigger,
                pause: edit["pause_after_compaction"].as_bool().unwrap_or(false),
            })
        }
    }
}

fn on_demand_call(body: &Value, call: &Value) -> Result<(), Refusal> {
    if call["type"] != "summarize" {
        return Err(Refusal::invalid(
            None,
            "compaction.type: must be `summarize`",
        ));
    }
    if call["instructions"]
        .as_str()
        .is_some_and(|s| s.chars().count() > MAX_INSTRUCTIONS_CHARS)
    {
        return Err(Refusal::invalid(
            None,
            format!("compaction.instructions: at most {MAX_INSTRUCTIONS_CHARS} characters"),
        ));
    }
    let refused = [
        (
            "context_management",
            body.get("context_management").is_some(),
        ),
        (
            "stop_sequences",
            body["stop_sequences"]
                .as_array()
                .is_some_and(|s| !s.is_empty()),
        ),
        (
            "output_format",
            !body["output_format"].is_null() || !body["output_config"]["format"].is_null(),
        ),
        (
            "tool_choice",
            matches!(body["tool_choice"]["type"].as_str(), Some("any" | "tool")),
        ),
    ];
    if let Some((field, _)) = refused.iter().find(|(_, r)| *r) {
        return Err(Refusal::invalid(
            None,
            format!("{field}: not supported with on-demand compaction"),
        ));
    }
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    if messages.is_empty() {
        return Err(Refusal::invalid(
            Some("compaction_nothing_to_summarize"),
            "messages: there is nothing to summarize",
        ));
    }
    let last = &messages[messages.len() - 1];
    let unanswered = last["role"] == "assistant"
        && last["content"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|b| b["type"] == "tool_use");
    if unanswered {
        return Err(Refusal::invalid(
            None,
            "messages: the last assistant turn has a tool_use without a tool_result",
        ));
    }
    Ok(())
}

/// The request as the server reads it in threshold mode: messages from the last compaction block on.
pub fn anthropic_effective(body: &Value) -> Value {
    let Some(&(i, j, _)) = compaction_blocks(body).last() else {
        return body.clone();
    };
    let mut out = body.clone();
    if let Some(messages) = out["messages"].as_array_mut() {
        messages.drain(..i);
        if let Some(content) = messages[0]["content"].as_array_mut() {
            content.drain(..j);
        }
    }
    out
}

/// The summary text the simulator writes: deterministic, naming what it stands for; with `pad_to`,
/// lengthened with filler words to about that many tokens (a real model's summary is thousands of
/// tokens, which is what a cost comparison needs; the filler holds nothing).
pub fn summary_text(seq: u64, input_tokens: u64, last_user: &str, pad_to: Option<u64>) -> String {
    let tail: String = last_user.chars().take(200).collect();
    let mut text = format!(
        "Summary {seq} of {input_tokens} tokens of earlier conversation. The latest request was: {tail}"
    );
    if let Some(target) = pad_to {
        let have = compact_core::tokens::Encoding::O200kBase.count(&text) as u64;
        // " noted" is one o200k token.
        let words = usize::try_from(target.saturating_sub(have)).unwrap_or(0);
        text.reserve(words * 6);
        for _ in 0..words {
            text.push_str(" noted");
        }
    }
    text
}

/// A signed Anthropic compaction block.
pub fn anthropic_block(seq: u64, summary: &str) -> Value {
    json!({"type": "compaction", "content": summary, "signature": format!("c2ltLXNpZw{seq}")})
}

/// An OpenAI compaction item.
pub fn openai_item(seq: u64, input_tokens: u64) -> Value {
    json!({"type": "compaction", "id": format!("cmp_sim_{seq}"),
        "encrypted_content": format!("gAAAAB{seq:08}{input_tokens:010}c2ltLWNvbXBhY3Rpb24="), "created_by": "sim"})
}

/// `usage.iterations` for a compaction pass and, when given, the message pass after it.
pub fn iterations(compaction: (u64, u64), message: Option<(u64, u64)>) -> Value {
    let mut out = vec![
        json!({"type": "compaction", "input_tokens": compaction.0, "output_tokens": compaction.1}),
    ];
    if let Some((i, o)) = message {
        out.push(json!({"type": "message", "input_tokens": i, "output_tokens": o}));
    }
    Value::Array(out)
}

/// An on-demand reply: the block alone (or no content with `stop`), as JSON or SSE events.
pub fn on_demand_reply(
    seq: u64,
    model: &str,
    block: Option<&Value>,
    stop: &str,
    iterations: Value,
    stream: bool,
) -> Result<String, Vec<Bytes>> {
    let content: Vec<Value> = block.cloned().into_iter().collect();
    let usage = json!({"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0, "iterations": iterations});
    if !stream {
        return Ok(json!({"id": format!("msg_sim_{seq}"), "type": "message", "role": "assistant",
            "model": model, "content": content, "stop_reason": stop, "stop_sequence": null, "usage": usage})
        .to_string());
    }
    let ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse(Some(name), &data.to_string())
    };
    let start = json!({"id": format!("msg_sim_{seq}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 0, "output_tokens": 0}});
    let mut out = vec![ev("message_start", json!({"message": start}))];
    if let Some(block) = block {
        // On demand, the whole block comes in its start event.
        out.push(ev(
            "content_block_start",
            json!({"index": 0, "content_block": block}),
        ));
        out.push(ev("content_block_stop", json!({"index": 0})));
    }
    out.push(ev(
        "message_delta",
        json!({"delta": {"stop_reason": stop, "stop_sequence": null}, "usage": usage}),
    ));
    out.push(ev("message_stop", json!({})));
    Err(out)
}

/// The name and data of an SSE event this simulator wrote (one named event a chunk).
fn parse_event(bytes: &Bytes) -> Option<(String, Value)> {
    let [event] = <[_; 1]>::try_from(parse_body(bytes)).ok()?;
    Some((event.event?, serde_json::from_str(&event.data).ok()?))
}

/// A threshold-mode reply: `block` first, then (unless `pause`) the normal reply `normal` (a JSON
/// body, or SSE events), with `iterations` in its usage.
pub fn threshold_json(normal: &str, block: &Value, pause: bool, iterations: Value) -> String {
    let mut v: Value = serde_json::from_str(normal).unwrap_or(Value::Null);
    let mut content = vec![block.clone()];
    if !pause {
        content.extend(v["content"].as_array().cloned().unwrap_or_default());
    } else {
        v["stop_reason"] = json!("compaction");
        v["usage"]["output_tokens"] = json!(0);
    }
    v["content"] = Value::Array(content);
    v["usage"]["iterations"] = iterations;
    v.to_string()
}

/// [`threshold_json`] for a stream: the block's three events after `message_start`, the normal
/// blocks' indices shifted by one.
pub fn threshold_stream(
    normal: Vec<Bytes>,
    block: &Value,
    pause: bool,
    iterations: Value,
) -> Vec<Bytes> {
    let ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse(Some(name), &data.to_string())
    };
    let mut head = block.clone();
    head["content"] = Value::Null;
    let compaction_events = [
        ev(
            "content_block_start",
            json!({"index": 0, "content_block": head}),
        ),
        ev(
            "content_block_delta",
            json!({"index": 0, "delta": {"type": "compaction_delta", "content": block["content"]}}),
        ),
        ev("content_block_stop", json!({"index": 0})),
    ];
    let mut out = Vec::new();
    for bytes in normal {
        let Some((name, mut data)) = parse_event(&bytes) else {
            out.push(bytes);
            continue;
        };
        match name.as_str() {
            "message_start" => {
                out.push(bytes);
                out.extend(compaction_events.iter().cloned());
            }
            "content_block_start" | "content_block_delta" | "content_block_stop" | "ping" => {
                if pause {
                    continue;
                }
                if let Some(i) = data["index"].as_u64() {
                    data["index"] = json!(i + 1);
                }
                out.push(ev(&name, data));
            }
            "message_delta" => {
                if pause {
                    data["delta"]["stop_reason"] = json!("compaction");
                    data["usage"]["output_tokens"] = json!(0);
                }
                data["usage"]["iterations"] = iterations.clone();
                out.push(ev(&name, data));
            }
            _ => out.push(bytes),
        }
    }
    out
}

/// Checks the `compaction` items of a Responses input: each one issued here, unchanged.
pub fn check_openai_items(body: &Value, issued: &Issued) -> Result<(), Refusal> {
    for (i, item) in body["input"].as_array().into_iter().flatten().enumerate() {
        if item["type"] != "compaction" {
            continue;
        }
        let known = item["encrypted_content"]
            .as_str()
            .and_then(|e| issued.items.get(e));
        if known != Some(item) {
            return Err(Refusal::invalid(
                Some("invalid_encrypted_content"),
                format!(
                    "input[{i}]: the compaction item's encrypted content could not be verified"
                ),
            ));
        }
    }
    Ok(())
}

/// True when the last input item is a `compaction_trigger`.
pub fn has_trigger(body: &Value) -> bool {
    body["input"]
        .as_array()
        .and_then(|i| i.last())
        .is_some_and(|i| i["type"] == "compaction_trigger")
}

/// The Responses server-side threshold (`context_management[].compact_threshold`), if set.
pub fn openai_threshold(body: &Value) -> Option<u64> {
    body["context_management"]
        .as_array()?
        .iter()
        .find(|e| e["type"] == "compaction")
        .and_then(|e| e["compact_threshold"].as_u64())
}

/// A Responses reply with `item` first in its output (JSON body): the server-side threshold.
pub fn responses_with_item_json(normal: &str, item: &Value) -> String {
    let mut v: Value = serde_json::from_str(normal).unwrap_or(Value::Null);
    let mut output = vec![item.clone()];
    output.extend(v["output"].as_array().cloned().unwrap_or_default());
    v["output"] = Value::Array(output);
    v.to_string()
}

/// A Responses stream with `item` added first (and, for the in-band trigger, the `compacting`
/// event before it); output indices and sequence numbers renumbered.
pub fn responses_with_item_stream(
    normal: Vec<Bytes>,
    item: &Value,
    compacting: bool,
) -> Vec<Bytes> {
    let mut events: Vec<(String, Value)> = Vec::new();
    let mut inserted = false;
    for bytes in &normal {
        let Some((name, mut data)) = parse_event(bytes) else {
            continue;
        };
        if !inserted && name != "response.created" && name != "response.in_progress" {
            let id = item["id"].clone();
            if compacting {
                events.push((
                    "response.compaction.compacting".into(),
                    json!({"item_id": id, "output_index": 0}),
                ));
            }
            let mut added = item.clone();
            added["status"] = json!("in_progress");
            events.push((
                "response.output_item.added".into(),
                json!({"output_index": 0, "item": item}),
            ));
            events.push((
                "response.output_item.done".into(),
                json!({"output_index": 0, "item": item}),
            ));
            inserted = true;
        }
        if let Some(i) = data["output_index"].as_u64() {
            data["output_index"] = json!(i + 1);
        }
        if let Some(output) = data["response"]["output"].as_array_mut() {
            if !output.is_empty() || name == "response.completed" {
                output.insert(0, item.clone());
            }
        }
        events.push((name, data));
    }
    events
        .into_iter()
        .enumerate()
        .map(|(k, (name, mut data))| {
            data["type"] = json!(name);
            data["sequence_number"] = json!(k);
            sse(Some(&name), &data.to_string())
        })
        .collect()
}

/// `POST /v1/responses/compact`: the input's user messages, then one compaction item.
pub fn compact_endpoint(
    seq: u64,
    body: &Value,
    item: &Value,
    input_tokens: u64,
    output_tokens: u64,
) -> String {
    let mut output: Vec<Value> = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["role"] == "user" && i["type"].as_str().is_none_or(|t| t == "message"))
        .cloned()
        .collect();
    if let Some(s) = body["input"].as_str() {
        output.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": s}]}));
    }
    output.push(item.clone());
    json!({"id": format!("resp_cmp_sim_{seq}"), "object": "response.compaction", "created_at": 1_767_000_000 + seq,
        "output": output, "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens}})
    .to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_stream_puts_the_block_first_and_shifts_the_rest() {
        let normal = vec![
            sse(
                Some("message_start"),
                &json!({"type": "message_start", "message": {}}).to_string(),
            ),
            sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0}).to_string(),
            ),
            sse(
                Some("message_delta"),
                &json!({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 3}})
                    .to_string(),
            ),
        ];
        let block = anthropic_block(1, "sum");
        let out = threshold_stream(normal, &block, false, iterations((10, 2), Some((5, 3))));
        let names: Vec<String> = out.iter().filter_map(parse_event).map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "message_delta"
            ]
        );
        let (_, shifted) = parse_event(&out[4]).unwrap();
        assert_eq!(shifted["index"], 1);
        let (_, delta) = parse_event(&out[2]).unwrap();
        assert_eq!(delta["delta"]["type"], "compaction_delta");
        assert_eq!(delta["delta"]["content"], "sum");
    }

    #[test]
    fn placement_and_modification_are_refused_with_their_codes() {
        let headers = vec![("anthropic-beta".to_owned(), ON_DEMAND_BETA.to_owned())];
        let mut issued = Issued::default();
        let block = anthropic_block(3, "summary");
        issued.block(&block);
        let first = json!({"messages": [{"role": "assistant", "content": [block.clone()]}, {"role": "user", "content": "go"}]});
        assert_eq!(
            anthropic_mode(&headers, &first, &issued),
            Ok(AnthropicMode::None)
        );
        let late = json!({"messages": [{"role": "user", "content": "old"}, {"role": "assistant", "content": [block.clone()]}]});
        assert_eq!(
            anthropic_mode(&headers, &late, &issued).unwrap_err().code,
            Some("compaction_block_misplaced")
        );
        let mut edited = block.clone();
        edited["content"] = json!("other");
        let changed = json!({"messages": [{"role": "assistant", "content": [edited]}]});
        assert_eq!(
            anthropic_mode(&headers, &changed, &issued)
                .unwrap_err()
                .code,
            Some("compaction_content_mismatch")
        );
        let no_beta = anthropic_mode(&[], &first, &issued).unwrap_err();
        assert_eq!(no_beta.status, 400);
        let empty = json!({"messages": [], "compaction": {"type": "summarize"}});
        assert_eq!(
            anthropic_mode(&headers, &empty, &issued).unwrap_err().code,
            Some("compaction_nothing_to_summarize")
        );
    }
}
