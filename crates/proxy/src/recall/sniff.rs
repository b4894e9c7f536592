//! A streamed reply read for recall, event by event: [`Sniffer::push`] says
//! [`Verdict::Forward`] as soon as an event shows something for the client (text, another tool,
//! an error, a second choice), and [`Verdict::Recall`] when the stream ends as a recall-only turn;
//! until then the caller holds the bytes (bounded by [`MAX_HELD_BYTES`]). The turn is rebuilt from
//! the events into the whole-reply shape and judged by [`super::reply::recall_turn`], so both
//! paths apply one rule.

use super::reply::{recall_turn, RecallTurn};
use super::TOOL_NAME;
use crate::route::Route;
use compact_formats::sse::SseParser;
use serde_json::{json, Map, Value};

/// Most bytes of a stream held while it could still be a recall-only turn. Such a turn is a few
/// calls (and maybe some reasoning); a stream that grows past this goes to the client as it is.
pub const MAX_HELD_BYTES: usize = 4 * 1024 * 1024;

/// What is known of a stream so far.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Keep reading.
    Undecided,
    /// The reply is the client's: forward it (what was held first).
    Forward,
    /// The reply was a recall-only turn.
    Recall(RecallTurn),
}

/// Reads one streamed reply on a route.
#[derive(Debug)]
pub struct Sniffer {
    route: Route,
    sse: SseParser,
    held: usize,
    /// Chat: the message's tool calls by index, its finish reason and the usage.
    chat_calls: Vec<Map<String, Value>>,
    chat_finish: Value,
    usage: Value,
    /// Anthropic: the content blocks by index (inputs as text until their block stops).
    blocks: Vec<Value>,
    inputs: Vec<String>,
    stop_reason: Value,
}

impl Sniffer {
    /// A sniffer for a reply on `route`.
    pub fn new(route: Route) -> Self {
        Sniffer {
            route,
            sse: SseParser::default(),
            held: 0,
            chat_calls: Vec::new(),
            chat_finish: Value::Null,
            usage: Value::Null,
            blocks: Vec::new(),
            inputs: Vec::new(),
            stop_reason: Value::Null,
        }
    }

    /// Reads one chunk of the stream.
    pub fn push(&mut self, chunk: &[u8]) -> Verdict {
        self.held += chunk.len();
        if self.held > MAX_HELD_BYTES {
            return Verdict::Forward;
        }
        // An event too large to read is skipped (the stream is held under MAX_HELD_BYTES anyway).
        for event in self.sse.push(chunk).into_iter().flatten() {
            let verdict = self.event(event.event.as_deref(), &event.data);
            if verdict != Verdict::Undecided {
                return verdict;
            }
        }
        Verdict::Undecided
    }

    /// The stream ended without its terminal event: it is the client's (a cut stream is
    /// forwarded as it came, with the proxy's error event).
    pub fn end(&self) -> Verdict {
        Verdict::Forward
    }

    fn event(&mut self, name: Option<&str>, data: &str) -> Verdict {
        if self.route == Route::ChatCompletions && data.trim() == "[DONE]" {
            return self.chat_done();
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            return Verdict::Forward;
        };
        let kind = name
            .map(str::to_owned)
            .or_else(|| value["type"].as_str().map(str::to_owned))
            .unwrap_or_default();
        match self.route {
            Route::ChatCompletions => self.chat(&value),
            Route::Responses => responses(&kind, &value),
            Route::Messages => self.messages(&kind, &value),
            Route::CountTokens | Route::Other => Verdict::Forward,
        }
    }

    fn chat(&mut self, v: &Value) -> Verdict {
        if v.get("error").is_some_and(|e| !e.is_null()) {
            return Verdict::Forward;
        }
        if v["usage"].is_object() {
            self.usage = v["usage"].clone();
        }
        let Some(choices) = v["choices"].as_array() else {
            return Verdict::Forward;
        };
        for choice in choices {
            if choice["index"].as_u64().unwrap_or(0) != 0 {
                return Verdict::Forward;
            }
            let delta = &choice["delta"];
            let text = |k: &str| delta[k].as_str().is_some_and(|t| !t.trim().is_empty());
            if text("content") || text("refusal") {
                return Verdict::Forward;
            }
            for call in delta["tool_calls"].as_array().into_iter().flatten() {
                let Ok(i) = usize::try_from(call["index"].as_u64().unwrap_or(0)) else {
                    return Verdict::Forward;
                };
                if i > self.chat_calls.len() {
                    return Verdict::Forward;
                }
                if i == self.chat_calls.len() {
                    self.chat_calls.push(Map::new());
                }
                let slot = &mut self.chat_calls[i];
                if let Some(id) = call["id"].as_str() {
                    slot.insert("id".into(), json!(id));
                }
                if let Some(name) = call["function"]["name"].as_str() {
                    if name != TOOL_NAME {
                        return Verdict::Forward;
                    }
                    slot.insert("name".into(), json!(name));
                }
                if let Some(args) = call["function"]["arguments"].as_str() {
                    let old = slot.get("arguments").and_then(Value::as_str).unwrap_or("");
                    let joined = format!("{old}{args}");
                    slot.insert("arguments".into(), json!(joined));
                }
            }
            if !choice["finish_reason"].is_null() {
                self.chat_finish = choice["finish_reason"].clone();
            }
        }
        Verdict::Undecided
    }

    fn chat_done(&self) -> Verdict {
        let calls: Vec<Value> = self
            .chat_calls
            .iter()
            .map(|c| {
                json!({"id": c.get("id").cloned().unwrap_or(Value::Null), "type": "function",
                       "function": {"name": c.get("name").cloned().unwrap_or(Value::Null),
                                    "arguments": c.get("arguments").cloned().unwrap_or(json!(""))}})
            })
            .collect();
        let whole = json!({"choices": [{"index": 0, "finish_reason": self.chat_finish,
            "message": {"role": "assistant", "content": null, "tool_calls": calls}}],
            "usage": self.usage});
        judge(Route::ChatCompletions, &whole)
    }

    fn messages(&mut self, kind: &str, v: &Value) -> Verdict {
        match kind {
            "message_start" => {
                if v["message"]["usage"].is_object() {
                    self.usage = v["message"]["usage"].clone();
                }
            }
            "ping" => {}
            "content_block_start" => {
                let block = &v["content_block"];
                match block["type"].as_str() {
                    Some("tool_use") if block["name"].as_str() == Some(TOOL_NAME) => {}
                    Some("text")
                        if block["text"].as_str().is_some_and(|t| !t.trim().is_empty()) =>
                    {
                        return Verdict::Forward
                    }
                    Some("text" | "thinking" | "redacted_thinking") => {}
                    _ => return Verdict::Forward,
                }
                self.blocks.push(block.clone());
                self.inputs.push(String::new());
            }
            "content_block_delta" => {
                let Some(i) = self.index(v) else {
                    return Verdict::Forward;
                };
                let delta = &v["delta"];
                let append = |block: &mut Value, key: &str, more: &str| {
                    let old = block[key].as_str().unwrap_or("").to_owned();
                    block[key] = json!(old + more);
                };
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let text = delta["text"].as_str().unwrap_or("");
                        if !text.trim().is_empty() {
                            return Verdict::Forward;
                        }
                        append(&mut self.blocks[i], "text", text);
                    }
                    Some("thinking_delta") => {
                        append(
                            &mut self.blocks[i],
                            "thinking",
                            delta["thinking"].as_str().unwrap_or(""),
                        );
                    }
                    Some("signature_delta") => {
                        self.blocks[i]["signature"] = delta["signature"].clone();
                    }
                    Some("input_json_delta") => {
                        self.inputs[i].push_str(delta["partial_json"].as_str().unwrap_or(""));
                    }
                    _ => return Verdict::Forward,
                }
            }
            "content_block_stop" => {
                let Some(i) = self.index(v) else {
                    return Verdict::Forward;
                };
                if self.blocks[i]["type"] == "tool_use" {
                    let text = self.inputs[i].trim();
                    let input = if text.is_empty() {
                        Ok(json!({}))
                    } else {
                        serde_json::from_str(text)
                    };
                    match input {
                        Ok(input) => self.blocks[i]["input"] = input,
                        Err(_) => return Verdict::Forward,
                    }
                }
            }
            "message_delta" => {
                self.stop_reason = v["delta"]["stop_reason"].clone();
                if let (Some(usage), Some(more)) =
                    (self.usage.as_object_mut(), v["usage"].as_object())
                {
                    usage.extend(more.clone());
                }
            }
            "message_stop" => {
                let whole = json!({"stop_reason": self.stop_reason, "content": self.blocks,
                                   "usage": self.usage});
                return judge(Route::Messages, &whole);
            }
            _ => return Verdict::Forward,
        }
        Verdict::Undecided
    }

    /// The block an Anthropic event names, when it was started.
    fn index(&self, v: &Value) -> Option<usize> {
        let i = usize::try_from(v["index"].as_u64()?).ok()?;
        (i < self.blocks.len()).then_some(i)
    }
}

fn responses(kind: &str, v: &Value) -> Verdict {
    match kind {
        "response.created"
        | "response.in_progress"
        | "response.function_call_arguments.delta"
        | "response.function_call_arguments.done"
        | "response.output_item.done"
        | "response.reasoning_summary_part.added"
        | "response.reasoning_summary_part.done"
        | "response.reasoning_summary_text.delta"
        | "response.reasoning_summary_text.done"
        | "response.reasoning_text.delta"
        | "response.reasoning_text.done" => Verdict::Undecided,
        "response.output_item.added" => {
            let item = &v["item"];
            match item["type"].as_str() {
                Some("function_call") if item["name"].as_str() == Some(TOOL_NAME) => {
                    Verdict::Undecided
                }
                Some("reasoning") => Verdict::Undecided,
                _ => Verdict::Forward,
            }
        }
        "response.completed" => judge(Route::Responses, &v["response"]),
        _ => Verdict::Forward,
    }
}

fn judge(route: Route, whole: &Value) -> Verdict {
    match recall_turn(route, whole) {
        Some(turn) => Verdict::Recall(turn),
        None => Verdict::Forward,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;

    fn feed(route: Route, events: &[String]) -> Verdict {
        let mut s = Sniffer::new(route);
        for e in events {
            match s.push(e.as_bytes()) {
                Verdict::Undecided => {}
                other => return other,
            }
        }
        s.end()
    }

    fn data(v: &Value) -> String {
        format!("data: {v}\n\n")
    }

    fn named(name: &str, v: &Value) -> String {
        format!("event: {name}\ndata: {v}\n\n")
    }

    #[test]
    fn a_chat_stream_of_recall_calls_is_a_recall_turn() {
        let head =
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]});
        let call = |name: &str| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": ""}}]}}]})
        };
        let args = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": "{\"id\": \"i9\"}"}}]}}]});
        let finish = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]});
        let events = [
            data(&head),
            data(&call(TOOL_NAME)),
            data(&args),
            data(&finish),
            "data: [DONE]\n\n".to_owned(),
        ];
        let Verdict::Recall(turn) = feed(Route::ChatCompletions, &events) else {
            panic!("not a recall turn");
        };
        assert_eq!(turn.calls[0].id.as_deref(), Some("i9"));
        assert_eq!(turn.calls[0].call_id, "c1");
        // Another tool decides at once; so does text; a cut stream is forwarded.
        let mut s = Sniffer::new(Route::ChatCompletions);
        assert_eq!(s.push(data(&call("read")).as_bytes()), Verdict::Forward);
        let text = json!({"choices": [{"index": 0, "delta": {"content": "Hi"}}]});
        assert_eq!(
            feed(Route::ChatCompletions, &[data(&text)]),
            Verdict::Forward
        );
        assert_eq!(feed(Route::ChatCompletions, &events[..3]), Verdict::Forward);
    }

    #[test]
    fn an_anthropic_stream_is_rebuilt_block_by_block() {
        let events = [
            named(
                "message_start",
                &json!({"type": "message_start", "message": {"usage": {"input_tokens": 5}}}),
            ),
            named(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "thinking_delta", "thinking": "need the file"}}),
            ),
            named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "signature_delta", "signature": "sig"}}),
            ),
            named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": 0}),
            ),
            named(
                "content_block_start",
                &json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {}}}),
            ),
            named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "{\"id\":"}}),
            ),
            named(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": "\"i4\"}"}}),
            ),
            named(
                "content_block_stop",
                &json!({"type": "content_block_stop", "index": 1}),
            ),
            named(
                "message_delta",
                &json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 7}}),
            ),
            named("message_stop", &json!({"type": "message_stop"})),
        ];
        let Verdict::Recall(turn) = feed(Route::Messages, &events) else {
            panic!("not a recall turn");
        };
        let content = &turn.history[0]["content"];
        assert_eq!(content[0]["thinking"], "need the file");
        assert_eq!(content[0]["signature"], "sig");
        assert_eq!(content[1]["input"], json!({"id": "i4"}));
        assert_eq!(turn.usage, Some((5, 7)));
        let text = named(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        );
        let said = named(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": "Let me check."}}),
        );
        assert_eq!(
            feed(Route::Messages, &[events[0].clone(), text, said]),
            Verdict::Forward
        );
    }

    #[test]
    fn a_responses_stream_is_judged_on_its_completed_response() {
        let added = named(
            "response.output_item.added",
            &json!({"type": "response.output_item.added",
            "item": {"type": "function_call", "name": TOOL_NAME, "call_id": "call_1", "arguments": ""}}),
        );
        let completed = named(
            "response.completed",
            &json!({"type": "response.completed",
            "response": {"status": "completed", "output": [{"type": "function_call", "name": TOOL_NAME,
            "call_id": "call_1", "arguments": "{\"id\":\"i5\"}"}], "usage": {"input_tokens": 9, "output_tokens": 2}}}),
        );
        let Verdict::Recall(turn) = feed(Route::Responses, &[added.clone(), completed]) else {
            panic!("not a recall turn");
        };
        assert_eq!(turn.calls[0].id.as_deref(), Some("i5"));
        let message = named(
            "response.output_item.added",
            &json!({"type": "response.output_item.added",
            "item": {"type": "message", "content": []}}),
        );
        assert_eq!(feed(Route::Responses, &[added, message]), Verdict::Forward);
    }
}
