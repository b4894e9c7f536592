//! Anthropic wire shapes: Messages bodies, SSE events, count_tokens, and the exact error bodies.

use crate::body::sse;
use crate::count::Counted;
use crate::reply::{deltas, Finish, Reply, Usage};
use bytes::Bytes;
use serde_json::{json, Value};

fn error_body(seq: u64, kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": format!("req_sim_{seq}")}).to_string()
}

/// The overflow error body, or `None` when the request fits: "prompt is too long" when the input
/// alone is over the window, the `max_tokens` variant when input plus output is.
pub fn overflow(seq: u64, c: &Counted, window: u64) -> Option<String> {
    let out = c.max_output.unwrap_or(0);
    if c.input_tokens > window {
        return Some(prompt_too_long(seq, c.input_tokens, window));
    }
    if c.input_tokens + out > window {
        let msg = format!(
            "input length and `max_tokens` exceed context limit: {} + {out} > {window}, decrease input length or `max_tokens` and try again",
            c.input_tokens
        );
        return Some(error_body(seq, "invalid_request_error", &msg));
    }
    None
}

/// "prompt is too long: N tokens > M maximum".
pub fn prompt_too_long(seq: u64, input: u64, window: u64) -> String {
    error_body(
        seq,
        "invalid_request_error",
        &format!("prompt is too long: {input} tokens > {window} maximum"),
    )
}

/// HTTP 413 body.
pub fn request_too_large(seq: u64) -> String {
    error_body(
        seq,
        "request_too_large",
        "Request exceeds the maximum allowed number of bytes.",
    )
}

/// HTTP 429 body.
pub fn rate_limit_body(seq: u64) -> String {
    error_body(
        seq,
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
    )
}

/// HTTP 500 body.
pub fn server_error_body(seq: u64) -> String {
    error_body(seq, "api_error", "Internal server error")
}

/// A 400 body for malformed requests.
pub fn invalid_request(seq: u64, message: &str) -> String {
    error_body(seq, "invalid_request_error", message)
}

fn stop_reason(f: Finish) -> &'static str {
    match f {
        Finish::Stop => "end_turn",
        Finish::Length => "max_tokens",
        Finish::ToolCalls => "tool_use",
    }
}

fn usage_json(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input.saturating_sub(u.cached + u.cache_creation),
        "cache_creation_input_tokens": u.cache_creation,
        "cache_read_input_tokens": u.cached,
        "output_tokens": u.output,
        "service_tier": "standard"
    })
}

fn content(seq: u64, reply: &Reply) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(thinking) = &reply.thinking {
        out.push(json!({"type": "thinking", "thinking": thinking, "signature": crate::agent::signature(thinking)}));
    }
    if !reply.text.is_empty() || reply.tool_calls.is_empty() {
        out.push(json!({"type": "text", "text": reply.text}));
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        out.push(json!({"type": "tool_use", "id": reply.call_id("toolu", seq, i), "name": c.name, "input": c.arguments}));
    }
    out
}

/// A non-streaming Messages response.
pub fn message(seq: u64, model: &str, reply: &Reply, usage: &Usage) -> String {
    json!({
        "id": format!("msg_sim_{seq}"), "type": "message", "role": "assistant", "model": model,
        "content": content(seq, reply), "stop_reason": stop_reason(reply.finish), "stop_sequence": null,
        "usage": usage_json(usage)
    })
    .to_string()
}

/// The SSE events of a streaming Messages response.
pub fn message_stream(seq: u64, model: &str, reply: &Reply, usage: &Usage) -> Vec<Bytes> {
    let ev = |name: &str, mut data: Value| {
        data["type"] = json!(name);
        sse(Some(name), &data.to_string())
    };
    let mut start_usage = usage_json(usage);
    start_usage["output_tokens"] = json!(1);
    let start = json!({"id": format!("msg_sim_{seq}"), "type": "message", "role": "assistant", "model": model,
                       "content": [], "stop_reason": null, "stop_sequence": null, "usage": start_usage});
    let mut out = vec![ev("message_start", json!({"message": start}))];
    for (idx, block) in content(seq, reply).into_iter().enumerate() {
        if block["type"] == "thinking" {
            out.push(ev(
                "content_block_start",
                json!({"index": idx, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ));
            for d in deltas(block["thinking"].as_str().unwrap_or("")) {
                out.push(ev(
                    "content_block_delta",
                    json!({"index": idx, "delta": {"type": "thinking_delta", "thinking": d}}),
                ));
            }
            out.push(ev(
                "content_block_delta",
                json!({"index": idx, "delta": {"type": "signature_delta", "signature": block["signature"]}}),
            ));
        } else if block["type"] == "text" {
            out.push(ev(
                "content_block_start",
                json!({"index": idx, "content_block": {"type": "text", "text": ""}}),
            ));
            if idx == 0 {
                out.push(ev("ping", json!({})));
            }
            for d in deltas(block["text"].as_str().unwrap_or("")) {
                out.push(ev(
                    "content_block_delta",
                    json!({"index": idx, "delta": {"type": "text_delta", "text": d}}),
                ));
            }
        } else {
            let mut head = block.clone();
            head["input"] = json!({});
            out.push(ev(
                "content_block_start",
                json!({"index": idx, "content_block": head}),
            ));
            for d in deltas(&block["input"].to_string()) {
                out.push(ev(
                    "content_block_delta",
                    json!({"index": idx, "delta": {"type": "input_json_delta", "partial_json": d}}),
                ));
            }
        }
        out.push(ev("content_block_stop", json!({"index": idx})));
    }
    out.push(ev(
        "message_delta",
        json!({"delta": {"stop_reason": stop_reason(reply.finish), "stop_sequence": null}, "usage": {"output_tokens": usage.output}}),
    ));
    out.push(ev("message_stop", json!({})));
    out
}

/// A count_tokens response.
pub fn count_tokens(input: u64) -> String {
    json!({"input_tokens": input}).to_string()
}
