//! The control API, for tests and examples that run the simulator as a process of its own (the
//! Python package's tests, `examples/*.py`): the `/sim/` paths script what the simulated model
//! says, read what it received and change the window, as [`crate::SimHandle`] does in-process.
//!
//! - `POST /sim/replies` with `[{"text": "...", "tool_calls": [{"name": "...", "arguments": {...}}]}]`
//!   queues scripted replies (answer: `{"queued": N}`, the replies now waiting); a string argument
//!   `"$stub_id"` becomes the id of the first `[compact:ref <id>]` stub of the request answered, so
//!   `{"tool_calls": [{"name": "compact_recall", "arguments": {"id": "$stub_id"}}]}` scripts a model
//!   that recalls what it sees;
//! - `GET /sim/requests`: every request received so far (`seq`, `api`, `path`, `status`,
//!   `input_tokens`, `max_output`, `stream`, `fault`, and `usage`: `{input, cached,
//!   cache_creation, output}` for a request answered with a reply); `GET /sim/requests?bodies=1`
//!   adds each request's `headers` (lower-case names) and `body` (the JSON received, `null` when it
//!   was not JSON);
//! - `POST /sim/agent` with `{"trigger": "...", "steps": ["cmd", ...], "done": "..."}` sets the
//!   scripted agent's task ([`crate::agent`]; `null` turns it off);
//! - `POST /sim/window` with `{"window": N}` changes the context window;
//! - `POST /sim/clear` forgets recorded requests, queued faults and replies.
//!
//! Control requests are not recorded and never carry faults.

use crate::agent::AgentScript;
use crate::body::ChunkBody;
use crate::record::Api;
use crate::script::{ScriptedReply, ScriptedToolCall};
use crate::server::{lock, State};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

/// Largest control request body accepted.
const MAX_CONTROL_BYTES: usize = 16 * 1024 * 1024;

/// True for the paths this module answers.
pub(crate) fn is_control(path: &str) -> bool {
    path.starts_with("/sim/")
}

/// Answers one control request.
pub(crate) async fn handle(state: &State, req: Request<Incoming>) -> Response<ChunkBody> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let bodies = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv == "bodies=1"));
    let body = match http_body_util::Limited::new(req.into_body(), MAX_CONTROL_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            return answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"error": "body too large"}),
            )
        }
    };
    let parsed = || serde_json::from_slice::<Value>(&body);
    match (method, path.as_str()) {
        (Method::POST, "/sim/replies") => match parsed()
            .map_err(|e| e.to_string())
            .and_then(|v| replies(&v))
        {
            Ok(list) => {
                let mut queue = lock(&state.replies);
                queue.extend(list);
                answer(StatusCode::OK, json!({"queued": queue.len()}))
            }
            Err(e) => answer(StatusCode::BAD_REQUEST, json!({"error": e})),
        },
        (Method::GET, "/sim/requests") => {
            let records: Vec<Value> = lock(&state.records)
                .iter()
                .map(|r| {
                    let usage = r.usage.map(|u| json!({"input": u.input, "cached": u.cached,
                        "cache_creation": u.cache_creation, "output": u.output}));
                    let mut v = json!({"seq": r.seq, "api": api_name(r.api), "path": r.path, "status": r.status,
                           "input_tokens": r.input_tokens, "max_output": r.max_output,
                           "stream": r.stream, "fault": r.fault, "usage": usage});
                    if bodies {
                        let headers: serde_json::Map<String, Value> = r
                            .headers
                            .iter()
                            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                            .collect();
                        v["headers"] = Value::Object(headers);
                        v["body"] = r.body.clone();
                    }
                    v
                })
                .collect();
            answer(StatusCode::OK, Value::Array(records))
        }
        (Method::POST, "/sim/agent") => match parsed()
            .map_err(|e| e.to_string())
            .and_then(|v| agent_script(&v))
        {
            Ok(script) => {
                let on = script.is_some();
                lock(&state.config).agent = script;
                answer(StatusCode::OK, json!({"agent": on}))
            }
            Err(e) => answer(StatusCode::BAD_REQUEST, json!({"error": e})),
        },
        (Method::POST, "/sim/window") => {
            match parsed()
                .ok()
                .and_then(|v| v.get("window").and_then(Value::as_u64))
            {
                Some(window) => {
                    lock(&state.config).window = window;
                    answer(StatusCode::OK, json!({"window": window}))
                }
                None => answer(
                    StatusCode::BAD_REQUEST,
                    json!({"error": "expected {\"window\": N}"}),
                ),
            }
        }
        (Method::POST, "/sim/clear") => {
            lock(&state.records).clear();
            lock(&state.faults).clear();
            lock(&state.replies).clear();
            answer(StatusCode::OK, json!({}))
        }
        (_, other) => answer(
            StatusCode::NOT_FOUND,
            json!({"error": format!("unknown control path {other}")}),
        ),
    }
}

/// The scripted agent's task from its JSON form (`null`: none).
pub fn agent_script(v: &Value) -> Result<Option<AgentScript>, String> {
    if v.is_null() {
        return Ok(None);
    }
    let text = |key: &str| -> Result<String, String> {
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("agent: `{key}` must be a string"))
    };
    let steps = v
        .get("steps")
        .and_then(Value::as_array)
        .ok_or("agent: `steps` must be a list of commands")?
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("agent: `steps[{i}]` must be a string"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let trigger = text("trigger")?;
    if trigger.is_empty() {
        return Err("agent: `trigger` must not be empty".to_owned());
    }
    Ok(Some(AgentScript {
        trigger,
        steps,
        done: text("done")?,
    }))
}

/// Scripted replies from their JSON form.
fn replies(v: &Value) -> Result<Vec<ScriptedReply>, String> {
    let list = v.as_array().ok_or("expected a list of replies")?;
    list.iter()
        .enumerate()
        .map(|(i, r)| {
            let text = r.get("text").and_then(Value::as_str).unwrap_or_default();
            let mut reply = ScriptedReply::text(text);
            for (j, c) in r
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("replies[{i}].tool_calls[{j}]: no name"))?;
                reply.tool_calls.push(ScriptedToolCall {
                    name: name.to_owned(),
                    arguments: c.get("arguments").cloned().unwrap_or_else(|| json!({})),
                });
            }
            Ok(reply)
        })
        .collect()
}

fn api_name(api: Api) -> &'static str {
    match api {
        Api::ChatCompletions => "chat_completions",
        Api::Responses => "responses",
        Api::ResponsesCompact => "responses_compact",
        Api::Messages => "messages",
        Api::CountTokens => "count_tokens",
        Api::Unknown => "unknown",
    }
}

fn answer(status: StatusCode, body: Value) -> Response<ChunkBody> {
    let mut r = Response::new(ChunkBody::full(body.to_string()));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str("application/json") {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}
