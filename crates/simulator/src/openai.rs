//! OpenAI wire shapes: Chat Completions and Responses bodies, SSE events, and their exact error bodies.

use crate::body::sse;
use crate::config::ChatOverflowWording;
use crate::count::Counted;
use crate::reply::{deltas, Finish, Reply, Usage};
use bytes::Bytes;
use serde_json::{json, Value};

/// Fixed base for `created` timestamps so that replies are deterministic.
const CREATED_BASE: u64 = 1_760_000_000;

/// The Chat overflow error body, or `None` when the request fits.
pub fn chat_overflow(c: &Counted, window: u64, wording: ChatOverflowWording) -> Option<String> {
    let out = c.max_output.unwrap_or(0);
    if c.input_tokens <= window && c.input_tokens + out <= window {
        return None;
    }
    Some(chat_overflow_body(c.input_tokens, out, window, wording))
}

/// The Chat overflow body for these numbers.
pub fn chat_overflow_body(
    input: u64,
    out: u64,
    window: u64,
    wording: ChatOverflowWording,
) -> String {
    let message = match (wording, input > window) {
        (ChatOverflowWording::ConfiguredLimit, _) => format!(
            "Input tokens exceed the configured limit of {window} tokens. Your messages resulted in {input} tokens. Please reduce the length of the messages."
        ),
        (ChatOverflowWording::Classic, true) => format!(
            "This model's maximum context length is {window} tokens. However, your messages resulted in {input} tokens. Please reduce the length of the messages."
        ),
        (ChatOverflowWording::Classic, false) => format!(
            "This model's maximum context length is {window} tokens. However, you requested {} tokens ({input} in the messages, {out} in the completion). Please reduce the length of the messages or completion.",
            input + out
        ),
    };
    json!({"error": {"message": message, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        .to_string()
}

/// The Responses overflow message.
pub const RESPONSES_OVERFLOW_MESSAGE: &str =
    "Your input exceeds the context window of this model. Please adjust your input and try again.";

/// The Responses HTTP 400 overflow body.
pub fn responses_overflow_body() -> String {
    json!({"error": {"message": RESPONSES_OVERFLOW_MESSAGE, "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}})
        .to_string()
}

/// OpenAI's 429 body (Chat and Responses).
pub fn rate_limit_body(model: &str) -> String {
    json!({"error": {"message": format!("Rate limit reached for {model} in organization org-sim on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s."), "type": "requests", "param": null, "code": "rate_limit_exceeded"}}).to_string()
}

/// OpenAI's 500 body.
pub fn server_error_body() -> String {
    json!({"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": null, "code": null}}).to_string()
}

fn finish_reason(f: Finish) -> &'static str {
    match f {
        Finish::Stop => "stop",
        Finish::Length => "length",
        Finish::ToolCalls => "tool_calls",
    }
}

fn chat_usage(u: &Usage) -> Value {
    json!({
        "prompt_tokens": u.input,
        "completion_tokens": u.output,
        "total_tokens": u.input + u.output,
        "prompt_tokens_details": {"cached_tokens": u.cached, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
    })
}

fn chat_tool_calls(seq: u64, reply: &Reply) -> Vec<Value> {
    reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": reply.call_id("call", seq, i), "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments.to_string()}})
        })
        .collect()
}

/// A non-streaming Chat Completions response.
pub fn chat_completion(seq: u64, model: &str, reply: &Reply, usage: &Usage) -> String {
    let mut message =
        json!({"role": "assistant", "content": reply.text, "refusal": null, "annotations": []});
    if !reply.tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(chat_tool_calls(seq, reply));
        if reply.text.is_empty() {
            message["content"] = Value::Null;
        }
    }
    json!({
        "id": format!("chatcmpl-sim-{seq}"), "object": "chat.completion", "created": CREATED_BASE + seq, "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(reply.finish)}],
        "usage": chat_usage(usage), "service_tier": "default", "system_fingerprint": "fp_sim"
    })
    .to_string()
}

/// The SSE events of a streaming Chat Completions response.
pub fn chat_stream(
    seq: u64,
    model: &str,
    reply: &Reply,
    usage: &Usage,
    include_usage: bool,
) -> Vec<Bytes> {
    let chunk = |delta: Value, finish: Option<&str>| {
        let v = json!({
            "id": format!("chatcmpl-sim-{seq}"), "object": "chat.completion.chunk", "created": CREATED_BASE + seq,
            "model": model, "system_fingerprint": "fp_sim",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        });
        sse(None, &v.to_string())
    };
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        None,
    )];
    for d in deltas(&reply.text) {
        out.push(chunk(json!({"content": d}), None));
    }
    for (i, call) in chat_tool_calls(seq, reply).into_iter().enumerate() {
        let head = json!({"tool_calls": [{"index": i, "id": call["id"], "type": "function",
                                           "function": {"name": call["function"]["name"], "arguments": ""}}]});
        out.push(chunk(head, None));
        let args = call["function"]["arguments"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        for d in deltas(&args) {
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": d}}]}),
                None,
            ));
        }
    }
    out.push(chunk(json!({}), Some(finish_reason(reply.finish))));
    if include_usage {
        let v = json!({"id": format!("chatcmpl-sim-{seq}"), "object": "chat.completion.chunk", "created": CREATED_BASE + seq,
                       "model": model, "choices": [], "usage": chat_usage(usage)});
        out.push(sse(None, &v.to_string()));
    }
    out.push(sse(None, "[DONE]"));
    out
}

pub(crate) fn responses_usage(u: &Usage) -> Value {
    json!({
        "input_tokens": u.input, "input_tokens_details": {"cached_tokens": u.cached},
        "output_tokens": u.output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input + u.output
    })
}

fn responses_output(seq: u64, reply: &Reply) -> Vec<Value> {
    let mut out = Vec::new();
    if !reply.text.is_empty() || reply.tool_calls.is_empty() {
        out.push(json!({"id": format!("msg_sim_{seq}"), "type": "message", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": reply.text, "annotations": []}]}));
    }
    for (i, c) in reply.tool_calls.iter().enumerate() {
        out.push(json!({"id": format!("fc_sim_{seq}_{i}"), "type": "function_call", "status": "completed",
                        "call_id": reply.call_id("call", seq, i), "name": c.name, "arguments": c.arguments.to_string()}));
    }
    out
}

pub(crate) fn response_object(
    seq: u64,
    model: &str,
    status: &str,
    output: Vec<Value>,
    usage: Option<&Usage>,
    reply: Option<&Reply>,
) -> Value {
    let incomplete = reply
        .filter(|r| r.finish == Finish::Length)
        .map(|_| json!({"reason": "max_output_tokens"}));
    json!({
        "id": format!("resp_sim_{seq}"), "object": "response", "created_at": CREATED_BASE + seq, "status": status,
        "error": null, "incomplete_details": incomplete, "model": model, "output": output,
        "usage": usage.map(responses_usage), "parallel_tool_calls": true, "store": false
    })
}

/// The status of a finished response: `incomplete` when the output cap cut it, else `completed`.
fn final_status(reply: &Reply) -> &'static str {
    if reply.finish == Finish::Length {
        "incomplete"
    } else {
        "completed"
    }
}

/// The response object of a finished reply (the non-streaming body and the last stream event).
fn final_response(seq: u64, model: &str, reply: &Reply, usage: &Usage) -> Value {
    response_object(
        seq,
        model,
        final_status(reply),
        responses_output(seq, reply),
        Some(usage),
        Some(reply),
    )
}

/// A non-streaming Responses response.
pub fn response(seq: u64, model: &str, reply: &Reply, usage: &Usage) -> String {
    final_response(seq, model, reply, usage).to_string()
}

/// Numbers Responses events in order.
struct Seq(u64);

impl Seq {
    fn ev(&mut self, name: &str, mut data: Value) -> Bytes {
        data["type"] = json!(name);
        data["sequence_number"] = json!(self.0);
        self.0 += 1;
        sse(Some(name), &data.to_string())
    }
}

/// The SSE events of a streaming Responses response.
pub fn response_stream(seq: u64, model: &str, reply: &Reply, usage: &Usage) -> Vec<Bytes> {
    let mut s = Seq(0);
    let pending = response_object(seq, model, "in_progress", vec![], None, None);
    let mut out = vec![
        s.ev("response.created", json!({"response": pending})),
        s.ev("response.in_progress", json!({"response": pending})),
    ];
    for (idx, item) in responses_output(seq, reply).into_iter().enumerate() {
        let id = item["id"].clone();
        if item["type"] == "message" {
            let mut empty = item.clone();
            empty["status"] = json!("in_progress");
            empty["content"] = json!([]);
            out.push(s.ev(
                "response.output_item.added",
                json!({"output_index": idx, "item": empty}),
            ));
            let part = json!({"type": "output_text", "text": "", "annotations": []});
            out.push(s.ev(
                "response.content_part.added",
                json!({"item_id": id, "output_index": idx, "content_index": 0, "part": part}),
            ));
            for d in deltas(&reply.text) {
                out.push(s.ev(
                    "response.output_text.delta",
                    json!({"item_id": id, "output_index": idx, "content_index": 0, "delta": d}),
                ));
            }
            out.push(s.ev(
                "response.output_text.done",
                json!({"item_id": id, "output_index": idx, "content_index": 0, "text": reply.text}),
            ));
            let part = json!({"type": "output_text", "text": reply.text, "annotations": []});
            out.push(s.ev(
                "response.content_part.done",
                json!({"item_id": id, "output_index": idx, "content_index": 0, "part": part}),
            ));
        } else {
            let mut empty = item.clone();
            empty["status"] = json!("in_progress");
            empty["arguments"] = json!("");
            out.push(s.ev(
                "response.output_item.added",
                json!({"output_index": idx, "item": empty}),
            ));
            let args = item["arguments"].as_str().unwrap_or("").to_owned();
            for d in deltas(&args) {
                out.push(s.ev(
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": idx, "delta": d}),
                ));
            }
            out.push(s.ev(
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": idx, "arguments": args}),
            ));
        }
        out.push(s.ev(
            "response.output_item.done",
            json!({"output_index": idx, "item": item}),
        ));
    }
    let name = format!("response.{}", final_status(reply));
    let done = final_response(seq, model, reply, usage);
    out.push(s.ev(&name, json!({"response": done})));
    out
}

/// The SSE events of a Responses stream that fails with a context overflow: HTTP 200, then
/// `response.created`, an `error` event and `response.failed`.
pub fn response_stream_overflow(seq: u64, model: &str) -> Vec<Bytes> {
    let mut s = Seq(0);
    let pending = response_object(seq, model, "in_progress", vec![], None, None);
    let created = s.ev("response.created", json!({"response": pending}));
    let error = s.ev(
        "error",
        json!({"error": {"type": "invalid_request_error", "code": "context_length_exceeded", "message": RESPONSES_OVERFLOW_MESSAGE, "param": "input"}}),
    );
    let mut failed = response_object(seq, model, "failed", vec![], None, None);
    failed["error"] =
        json!({"code": "context_length_exceeded", "message": RESPONSES_OVERFLOW_MESSAGE});
    let failed = s.ev("response.failed", json!({"response": failed}));
    vec![created, error, failed]
}
