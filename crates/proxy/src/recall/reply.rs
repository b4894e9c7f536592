//! A whole reply read for recall: is it a recall-only turn (every tool call is `compact_recall`,
//! no text meant for the client)? If so, its calls and the assistant turn as it goes back into the
//! request; and the detour request: the request, that turn, and one tool result per call.

use super::{Answer, TOOL_NAME};
use crate::route::Route;
use compact_formats::usage::{TokenUsage, UsageApi};
use serde_json::{json, Value};

/// One `compact_recall` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallCall {
    /// The call's id (Chat `tool_calls[].id`, Responses `call_id`, Anthropic `tool_use.id`).
    pub call_id: String,
    /// The `id` argument, when the arguments hold one.
    pub id: Option<String>,
}

/// A recall-only turn of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct RecallTurn {
    /// The turn as it goes back into the request: a Chat assistant message, the Responses output
    /// items, an Anthropic assistant message.
    pub history: Vec<Value>,
    /// Its calls, in order.
    pub calls: Vec<RecallCall>,
    /// The reply's (input, output) tokens, when it reported them.
    pub usage: Option<(u64, u64)>,
}

/// Whether `text` is something for the client to read.
fn has_text(text: Option<&str>) -> bool {
    text.is_some_and(|t| !t.trim().is_empty())
}

/// The `id` argument of arguments given as a JSON object or as its text.
fn id_argument(arguments: &Value) -> Option<String> {
    let parsed;
    let object = match arguments {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            &parsed
        }
        other => other,
    };
    object
        .get("id")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::to_owned)
}

/// (input, output) tokens of a whole reply's `usage` on `route`, when it reports either;
/// Anthropic's input is what it read from its cache and wrote to it as well as the rest (its
/// `input_tokens` alone leaves those out).
pub fn usage_tokens(route: Route, reply: &Value) -> Option<(u64, u64)> {
    let api = route.format().and_then(UsageApi::of)?;
    let usage = TokenUsage::read(api, reply.get("usage")?);
    (usage.input_tokens.is_some() || usage.output_tokens.is_some())
        .then(|| (usage.total_input(), usage.output_tokens.unwrap_or(0)))
}

/// The recall-only turn in `reply` (a whole reply body on `route`), or `None` when the reply is
/// the client's (text, another tool call, several choices, an unfinished or unknown shape).
pub fn recall_turn(route: Route, reply: &Value) -> Option<RecallTurn> {
    let (history, calls) = match route {
        Route::ChatCompletions => chat_turn(reply)?,
        Route::Responses => responses_turn(reply)?,
        Route::Messages => messages_turn(reply)?,
        Route::CountTokens | Route::Other => return None,
    };
    if calls.is_empty() {
        return None;
    }
    Some(RecallTurn {
        history,
        calls,
        usage: usage_tokens(route, reply),
    })
}

type Turn = (Vec<Value>, Vec<RecallCall>);

fn chat_turn(reply: &Value) -> Option<Turn> {
    let choices = reply["choices"].as_array()?;
    let [choice] = choices.as_slice() else {
        return None;
    };
    let message = &choice["message"];
    if has_text(message["content"].as_str()) || has_text(message["refusal"].as_str()) {
        return None;
    }
    let mut calls = Vec::new();
    for call in message["tool_calls"].as_array()? {
        if call["function"]["name"].as_str() != Some(TOOL_NAME) {
            return None;
        }
        calls.push(RecallCall {
            call_id: call["id"].as_str()?.to_owned(),
            id: id_argument(&call["function"]["arguments"]),
        });
    }
    let turn = json!({"role": "assistant", "content": message["content"].clone(),
                      "tool_calls": message["tool_calls"].clone()});
    Some((vec![turn], calls))
}

fn responses_turn(reply: &Value) -> Option<Turn> {
    if reply.get("status").and_then(Value::as_str) != Some("completed") {
        return None;
    }
    let mut calls = Vec::new();
    let mut history = Vec::new();
    for item in reply["output"].as_array()? {
        match item["type"].as_str()? {
            "function_call" if item["name"].as_str() == Some(TOOL_NAME) => {
                let call_id = item["call_id"].as_str()?;
                calls.push(RecallCall {
                    call_id: call_id.to_owned(),
                    id: id_argument(&item["arguments"]),
                });
                // Without its output item id and status: an input call needs neither, and an
                // unstored response's item ids cannot be referred to.
                history.push(json!({"type": "function_call", "call_id": call_id,
                                    "name": TOOL_NAME, "arguments": item["arguments"].clone()}));
            }
            // Reasoning goes back with the calls it led to, as the client would send it.
            "reasoning" => history.push(item.clone()),
            _ => return None,
        }
    }
    Some((history, calls))
}

fn messages_turn(reply: &Value) -> Option<Turn> {
    if reply.get("stop_reason").and_then(Value::as_str) != Some("tool_use") {
        return None;
    }
    let mut calls = Vec::new();
    let mut content = Vec::new();
    for block in reply["content"].as_array()? {
        match block["type"].as_str()? {
            "tool_use" if block["name"].as_str() == Some(TOOL_NAME) => {
                calls.push(RecallCall {
                    call_id: block["id"].as_str()?.to_owned(),
                    id: id_argument(&block["input"]),
                });
            }
            "text" if has_text(block["text"].as_str()) => return None,
            // An empty text block says nothing to anyone: it is not sent back.
            "text" => continue,
            "thinking" | "redacted_thinking" => {}
            _ => return None,
        }
        content.push(block.clone());
    }
    Some((
        vec![json!({"role": "assistant", "content": content})],
        calls,
    ))
}

/// Appends `turn` and one tool result per answer to `request` (its `messages` or `input`).
/// Returns false, leaving the request unchanged, when the request has no list to append to.
pub fn append(route: Route, request: &mut Value, turn: &RecallTurn, answers: &[Answer]) -> bool {
    let key = if route == Route::Responses {
        "input"
    } else {
        "messages"
    };
    let Some(object) = request.as_object_mut() else {
        return false;
    };
    // A Responses `input` may be a plain string: it is one user message.
    if let Some(Value::String(text)) = object.get(key) {
        let message = json!({"type": "message", "role": "user", "content": text});
        object.insert(key.to_owned(), Value::Array(vec![message]));
    }
    let Some(list) = object.get_mut(key).and_then(Value::as_array_mut) else {
        return false;
    };
    list.extend(turn.history.iter().cloned());
    match route {
        Route::ChatCompletions => list.extend(
            answers
                .iter()
                .map(|a| json!({"role": "tool", "tool_call_id": a.call_id, "content": a.text})),
        ),
        Route::Responses => list.extend(answers.iter().map(
            |a| json!({"type": "function_call_output", "call_id": a.call_id, "output": a.text}),
        )),
        _ => {
            let blocks: Vec<Value> = answers
                .iter()
                .map(|a| {
                    let mut block =
                        json!({"type": "tool_result", "tool_use_id": a.call_id, "content": a.text});
                    if a.is_error {
                        block["is_error"] = json!(true);
                    }
                    block
                })
                .collect();
            list.push(json!({"role": "user", "content": blocks}));
        }
    }
    true
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn chat(content: Value, calls: &[(&str, &str)]) -> Value {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({"id": format!("c{i}"), "type": "function",
                "function": {"name": name, "arguments": args}})
            })
            .collect();
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content,
               "tool_calls": calls}, "finish_reason": "tool_calls"}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 3}})
    }

    #[test]
    fn only_a_turn_of_recall_calls_alone_is_taken() {
        let only = chat(
            Value::Null,
            &[(TOOL_NAME, r#"{"id": "i1"}"#), (TOOL_NAME, "{}")],
        );
        let turn = recall_turn(Route::ChatCompletions, &only).unwrap();
        assert_eq!(turn.calls[0].id.as_deref(), Some("i1"));
        assert_eq!(turn.calls[1].id, None);
        assert_eq!(turn.usage, Some((10, 3)));
        let mixed = chat(
            Value::Null,
            &[(TOOL_NAME, r#"{"id": "i1"}"#), ("read", "{}")],
        );
        assert!(recall_turn(Route::ChatCompletions, &mixed).is_none());
        let with_text = chat(json!("Let me look."), &[(TOOL_NAME, r#"{"id": "i1"}"#)]);
        assert!(recall_turn(Route::ChatCompletions, &with_text).is_none());
        assert!(recall_turn(Route::ChatCompletions, &chat(json!("hi"), &[])).is_none());

        let responses = json!({"status": "completed", "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "call_id": "call_1", "name": TOOL_NAME, "arguments": "{\"id\":\"i2\"}"}]});
        let turn = recall_turn(Route::Responses, &responses).unwrap();
        assert_eq!(turn.history.len(), 2);
        assert_eq!(turn.history[0]["id"], "rs_1");
        assert!(turn.history[1].get("id").is_none());
        assert_eq!(turn.history[1]["call_id"], "call_1");
        assert_eq!(turn.calls[0].id.as_deref(), Some("i2"));
        let message = json!({"status": "completed", "output": [
            {"type": "function_call", "call_id": "call_1", "name": TOOL_NAME, "arguments": "{}"},
            {"type": "message", "content": [{"type": "output_text", "text": "done"}]}]});
        assert!(recall_turn(Route::Responses, &message).is_none());

        let messages = json!({"stop_reason": "tool_use", "content": [
            {"type": "text", "text": ""},
            {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {"id": "i3"}}]});
        let turn = recall_turn(Route::Messages, &messages).unwrap();
        assert_eq!(turn.history[0]["content"].as_array().unwrap().len(), 1);
        let said = json!({"stop_reason": "tool_use", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": TOOL_NAME, "input": {"id": "i3"}}]});
        assert!(recall_turn(Route::Messages, &said).is_none());
    }

    #[test]
    fn answers_go_back_in_each_formats_shape() {
        let turn = RecallTurn {
            history: vec![json!({"role": "assistant", "content": []})],
            calls: vec![],
            usage: None,
        };
        let answers = [
            Answer::found("t1", "the original".into()),
            Answer::failed("t2", Some("nope"), super::super::Outcome::NotFound, ""),
        ];
        let mut messages = json!({"messages": [{"role": "user", "content": "hi"}]});
        assert!(append(Route::Messages, &mut messages, &turn, &answers));
        let results = &messages["messages"][2]["content"];
        assert_eq!(results[0]["content"], "the original");
        assert!(results[0].get("is_error").is_none());
        assert_eq!(results[1]["is_error"], true);
        let mut chat = json!({"messages": []});
        assert!(append(Route::ChatCompletions, &mut chat, &turn, &answers));
        assert_eq!(chat["messages"][1]["tool_call_id"], "t1");
        let mut responses = json!({"input": "hello"});
        assert!(append(Route::Responses, &mut responses, &turn, &answers));
        assert_eq!(responses["input"][0]["content"], "hello");
        assert_eq!(responses["input"][2]["type"], "function_call_output");
        assert!(!append(Route::Responses, &mut json!({}), &turn, &answers));
    }
}
