//! The HTTP server: accepts connections, routes requests to the endpoints, applies faults, enforces
//! the window and the body limit, records every request.

use crate::body::ChunkBody;
use crate::compaction::{self, AnthropicMode, Refusal};
use crate::config::SimConfig;
use crate::count::{
    common_prefix_bytes, common_prefix_tokens, count_chat, count_messages, count_responses, Counted,
};
use crate::fault::{Fault, FAULT_HEADER};
use crate::record::{Api, RecordedRequest};
use crate::reply::{Reply, Usage};
use crate::script::{default_reply, ScriptedReply};
use crate::{anthropic, openai};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Shared simulator state.
#[derive(Debug)]
pub(crate) struct State {
    pub(crate) config: Mutex<SimConfig>,
    pub(crate) faults: Mutex<VecDeque<Fault>>,
    pub(crate) replies: Mutex<VecDeque<ScriptedReply>>,
    pub(crate) records: Mutex<Vec<RecordedRequest>>,
    /// The renderings of the latest successful requests per endpoint, newest last (the prompt
    /// cache: a prefix any of them shares is served from it).
    previous: Mutex<HashMap<Api, VecDeque<String>>>,
    /// Provider compactions issued (to check what comes back).
    pub(crate) issued: Mutex<compaction::Issued>,
    seq: AtomicU64,
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it (test state stays usable).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl State {
    pub(crate) fn new(config: SimConfig) -> Self {
        State {
            config: Mutex::new(config),
            faults: Mutex::default(),
            replies: Mutex::default(),
            records: Mutex::default(),
            previous: Mutex::default(),
            issued: Mutex::default(),
            seq: AtomicU64::new(0),
        }
    }
}

/// The connection is dropped without a response (a simulated reset).
#[derive(Debug, thiserror::Error)]
#[error("simulated connection reset")]
pub(crate) struct Reset;

/// How a request is answered.
struct Answer {
    status: StatusCode,
    body: ChunkBody,
    sse: bool,
    retry_after: Option<u64>,
}

impl Answer {
    fn json(status: StatusCode, body: String) -> Self {
        Answer {
            status,
            body: ChunkBody::full(body),
            sse: false,
            retry_after: None,
        }
    }
}

fn api_of(path: &str) -> Api {
    let path = path.split('?').next().unwrap_or("");
    if azure_deployment_chat(path) {
        return Api::ChatCompletions;
    }
    match path {
        "/v1/chat/completions" | "/chat/completions" | "/openai/v1/chat/completions" => {
            Api::ChatCompletions
        }
        "/v1/responses" | "/responses" | "/openai/v1/responses" | "/openai/responses" => {
            Api::Responses
        }
        "/v1/responses/compact" | "/responses/compact" => Api::ResponsesCompact,
        "/v1/messages" | "/messages" => Api::Messages,
        "/v1/messages/count_tokens" | "/messages/count_tokens" => Api::CountTokens,
        _ => Api::Unknown,
    }
}

/// Azure OpenAI's `/openai/deployments/{deployment}/chat/completions`.
fn azure_deployment_chat(path: &str) -> bool {
    path.strip_prefix("/openai/deployments/")
        .and_then(|rest| rest.strip_suffix("/chat/completions"))
        .is_some_and(|deployment| !deployment.is_empty() && !deployment.contains('/'))
}

fn is_anthropic(api: Api) -> bool {
    matches!(api, Api::Messages | Api::CountTokens)
}

/// Handles one request: answers it and records it, or drops the connection for a reset fault
/// (recorded with status 0).
pub(crate) async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<ChunkBody>, Reset> {
    if crate::control::is_control(req.uri().path()) {
        return Ok(crate::control::handle(&state, req).await);
    }
    let seq = state.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let mut record = new_record(seq, &req);
    let config = lock(&state.config).clone();
    match respond(&state, &config, req, &mut record).await {
        Ok(answer) => Ok(finish(&state, record, answer)),
        Err(Reset) => {
            record.status = 0;
            lock(&state.records).push(record);
            Err(Reset)
        }
    }
}

/// The record of request number `seq` as it arrives: its endpoint, path, query and headers.
fn new_record(seq: u64, req: &Request<Incoming>) -> RecordedRequest {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().map(str::to_owned);
    let api = api_of(&path);
    let headers: Vec<(String, String)> = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    RecordedRequest {
        seq,
        api,
        path,
        query,
        headers,
        body: Value::Null,
        body_bytes: 0,
        raw: Bytes::new(),
        input_tokens: None,
        max_output: None,
        stream: false,
        status: 0,
        fault: None,
        usage: None,
    }
}

/// The answer to a request, filling in `record` on the way; `Err` for a reset fault. In order:
/// the fault to apply, the checks a provider makes before it reads the conversation, the count,
/// the faults and limits that replace the reply, a compaction alone, and the reply itself.
async fn respond(
    state: &State,
    config: &SimConfig,
    req: Request<Incoming>,
    record: &mut RecordedRequest,
) -> Result<Answer, Reset> {
    let (seq, api) = (record.seq, record.api);
    let fault = match fault_of(state, record) {
        Ok(fault) => fault,
        Err(answer) => return Ok(answer),
    };
    record.fault = fault.as_ref().map(|f| format!("{f:?}"));
    let (body, mode) = match admit(state, config, req, record).await {
        Ok(admitted) => admitted,
        Err(answer) => return Ok(answer),
    };
    let counted = match api {
        Api::ChatCompletions => count_chat(&body, config.openai_encoding),
        Api::Responses | Api::ResponsesCompact => count_responses(&body, config.openai_encoding),
        // The server reads nothing before the last compaction block.
        _ => count_messages(
            &compaction::anthropic_effective(&body),
            config.anthropic_encoding,
        ),
    };
    record.body = body.clone();
    record.input_tokens = Some(counted.input_tokens);
    record.max_output = counted.max_output;
    record.stream = counted.stream;

    if let Some(Fault::Slow { delay }) = &fault {
        tokio::time::sleep(*delay).await;
    }
    if let Some(answer) = fault_answer(seq, api, &counted, fault.as_ref()) {
        return Ok(answer);
    }
    if matches!(fault, Some(Fault::Reset)) {
        return Err(Reset);
    }
    let forced = matches!(fault, Some(Fault::Overflow));
    if let Some(answer) = overflow_answer(seq, api, &counted, config, forced) {
        return Ok(answer);
    }
    if api == Api::CountTokens {
        return Ok(Answer::json(
            StatusCode::OK,
            anthropic::count_tokens(counted.input_tokens),
        ));
    }

    if let Some(answer) = compaction_answer(state, seq, api, &mode, &body, &counted, fault.as_ref())
    {
        return Ok(answer);
    }
    let script = script_of(state, config, &body, &record.raw, &counted);
    let encoding = if is_anthropic(api) {
        config.anthropic_encoding
    } else {
        config.openai_encoding
    };
    let reply = Reply::new(script, counted.max_output, encoding);
    let mut usage = usage_of(state, api, &counted, config, &reply);
    let mut answer = match threshold_compaction(state, seq, api, &mode, &body, &counted) {
        None => success(seq, api, &counted, &reply, &usage),
        Some(done) => with_compaction(seq, api, &counted, &reply, &mut usage, &done),
    };
    if let Some(Fault::StreamCut { after_events }) = fault {
        answer.body = cut(answer.body, after_events);
    }
    if let (Some(Fault::StreamStall { after_events }), true) = (&fault, answer.sse) {
        answer.body = stall(answer.body, *after_events);
    }
    record.usage = Some(usage);
    Ok(answer)
}

/// The fault for this request: the one its fault header names, else the next queued one (only
/// for a known endpoint, so a stray request does not use it up). `Err` with the 400 for a header
/// that names no fault.
fn fault_of(state: &State, record: &RecordedRequest) -> Result<Option<Fault>, Answer> {
    match record.header(FAULT_HEADER).map(Fault::parse) {
        Some(Ok(f)) => Ok(Some(f)),
        Some(Err(e)) => Err(Answer::json(
            StatusCode::BAD_REQUEST,
            anthropic::invalid_request(record.seq, &e.to_string()),
        )),
        None if record.api != Api::Unknown => Ok(lock(&state.faults).pop_front()),
        None => Ok(None),
    }
}

/// Reads the body (recording its bytes) and makes the checks a provider makes before it reads
/// the conversation: the body limit, the path, JSON, the use of compactions and (if configured)
/// the provider's request rules. The body and the compaction mode it asks for, or the answer that
/// refuses it.
async fn admit(
    state: &State,
    config: &SimConfig,
    req: Request<Incoming>,
    record: &mut RecordedRequest,
) -> Result<(Value, AnthropicMode), Answer> {
    let (seq, api) = (record.seq, record.api);
    let bytes = match Limited::new(req.into_body(), config.max_body_bytes)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let body = if is_anthropic(api) {
                anthropic::request_too_large(seq)
            } else {
                serde_json::json!({"error": {"message": "Request body too large.", "type": "invalid_request_error", "param": null, "code": "request_too_large"}}).to_string()
            };
            return Err(Answer::json(StatusCode::PAYLOAD_TOO_LARGE, body));
        }
    };
    record.body_bytes = bytes.len();
    record.raw = bytes.clone();
    if api == Api::Unknown {
        let body = serde_json::json!({"error": {"message": format!("Unknown path {}", record.path), "type": "invalid_request_error", "param": null, "code": "unknown_url"}});
        return Err(Answer::json(StatusCode::NOT_FOUND, body.to_string()));
    }
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return Err(Answer::json(
                StatusCode::BAD_REQUEST,
                anthropic::invalid_request(seq, &format!("request body is not JSON: {e}")),
            ));
        }
    };
    let mode = match api {
        Api::Messages => compaction::anthropic_mode(&record.headers, &body, &lock(&state.issued)),
        Api::Responses | Api::ResponsesCompact => {
            compaction::check_openai_items(&body, &lock(&state.issued))
                .map(|()| AnthropicMode::None)
        }
        _ => Ok(AnthropicMode::None),
    };
    let mode = match mode {
        Ok(mode) => mode,
        Err(refusal) => {
            record.body = body;
            return Err(refusal_answer(seq, api, &refusal));
        }
    };
    if let Some(answer) = config
        .validate
        .then(|| rule_answer(seq, api, &body))
        .flatten()
    {
        record.body = body;
        return Err(answer);
    }
    Ok((body, mode))
}

/// What to reply: the next scripted reply, else the configured agent's next step, else the default
/// reply (`raw` is the request's body, for a script's stubs).
fn script_of(
    state: &State,
    config: &SimConfig,
    body: &Value,
    raw: &Bytes,
    counted: &Counted,
) -> ScriptedReply {
    let queued = lock(&state.replies).pop_front();
    queued
        .or_else(|| crate::agent::reply(config.agent.as_ref()?, body))
        .unwrap_or_else(|| {
            let mut reply = default_reply(counted.input_tokens, &counted.last_user);
            // A summary the client asks for in the middle of the scripted task says how far it
            // got, so that the task goes on after the client's own compaction.
            if let Some(note) = config
                .agent
                .as_ref()
                .and_then(|_| crate::agent::progress_note(body))
            {
                reply.text = format!("{} {note}", reply.text);
            }
            reply
        })
        .resolve_stub(&String::from_utf8_lossy(raw))
}

/// The provider's 400 for a request that breaks its rules ([`SimConfig::validate`]): a changed
/// thinking block, or the first violation [`compact_formats::validate()`] finds.
fn rule_answer(seq: u64, api: Api, body: &Value) -> Option<Answer> {
    use compact_core::model::Format;
    let format = match api {
        Api::Messages => Format::Anthropic,
        Api::Responses => Format::OpenAiResponses,
        Api::ChatCompletions => Format::OpenAiChat,
        _ => return None,
    };
    let message = if api == Api::Messages {
        crate::agent::check_thinking(body)
    } else {
        None
    }
    .or_else(|| {
        compact_formats::validate::validate(body, format)
            .first()
            .map(ToString::to_string)
    })?;
    let body = if is_anthropic(api) {
        anthropic::invalid_request(seq, &message)
    } else {
        serde_json::json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}).to_string()
    };
    Some(Answer::json(StatusCode::BAD_REQUEST, body))
}

/// The answer to a refused compaction use.
fn refusal_answer(seq: u64, api: Api, refusal: &Refusal) -> Answer {
    let body = if is_anthropic(api) {
        refusal.anthropic_body(seq)
    } else {
        refusal.openai_body()
    };
    Answer::json(
        StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST),
        body,
    )
}

/// Requests answered by a compaction alone: the Anthropic on-demand call, the Responses in-band
/// trigger and the standalone compact endpoint.
fn compaction_answer(
    state: &State,
    seq: u64,
    api: Api,
    mode: &AnthropicMode,
    body: &Value,
    c: &Counted,
    fault: Option<&Fault>,
) -> Option<Answer> {
    let pad_to = lock(&state.config).compaction_summary_tokens;
    let summary = compaction::summary_text(seq, c.input_tokens, &c.last_user, pad_to);
    let summary_tokens = c
        .max_output
        .map_or(u64::MAX, |m| m.max(1))
        .min(compact_core::tokens::Encoding::O200kBase.count(&summary) as u64);
    match api {
        Api::Messages if *mode == AnthropicMode::OnDemand => {
            if matches!(fault, Some(Fault::CompactionUnavailable)) {
                let refusal = Refusal {
                    status: 529,
                    kind: "overloaded_error",
                    code: Some("compaction_unavailable"),
                    message: "Compaction is temporarily unavailable. Please retry.".to_owned(),
                };
                return Some(refusal_answer(seq, api, &refusal));
            }
            let (block, stop, out) = match fault {
                Some(Fault::CompactionEmpty { stop }) => (None, stop.clone(), 0),
                _ => {
                    let block = compaction::anthropic_block(seq, &summary);
                    lock(&state.issued).block(&block);
                    (Some(block), "compaction".to_owned(), summary_tokens)
                }
            };
            let iterations = compaction::iterations((c.input_tokens, out), None);
            let reply = compaction::on_demand_reply(
                seq,
                &c.model,
                block.as_ref(),
                &stop,
                iterations,
                c.stream,
            );
            Some(match reply {
                Ok(json) => Answer::json(StatusCode::OK, json),
                Err(events) => Answer {
                    status: StatusCode::OK,
                    body: ChunkBody::chunks(events),
                    sse: true,
                    retry_after: None,
                },
            })
        }
        Api::Responses if compaction::has_trigger(body) => {
            let item = compaction::openai_item(seq, c.input_tokens);
            lock(&state.issued).item(&item);
            let usage = Usage {
                input: c.input_tokens,
                cached: 0,
                cache_creation: 0,
                output: summary_tokens,
            };
            let done = openai::response_object(
                seq,
                &c.model,
                "completed",
                vec![item.clone()],
                Some(&usage),
                None,
            );
            if !c.stream {
                return Some(Answer::json(StatusCode::OK, done.to_string()));
            }
            let pending = openai::response_object(seq, &c.model, "in_progress", vec![], None, None);
            // The stream helper puts the item into the final response's output.
            let done =
                openai::response_object(seq, &c.model, "completed", vec![], Some(&usage), None);
            let ev = |name: &str, data: Value| crate::body::sse(Some(name), &data.to_string());
            let events = vec![
                ev(
                    "response.created",
                    serde_json::json!({"type": "response.created", "response": pending}),
                ),
                ev(
                    "response.completed",
                    serde_json::json!({"type": "response.completed", "response": done}),
                ),
            ];
            Some(Answer {
                status: StatusCode::OK,
                body: ChunkBody::chunks(compaction::responses_with_item_stream(
                    events, &item, true,
                )),
                sse: true,
                retry_after: None,
            })
        }
        Api::ResponsesCompact => {
            if matches!(fault, Some(Fault::NotFound)) {
                let body = serde_json::json!({"error": {"message": "Not found", "type": "invalid_request_error", "param": null, "code": null}});
                return Some(Answer::json(StatusCode::NOT_FOUND, body.to_string()));
            }
            let item = compaction::openai_item(seq, c.input_tokens);
            lock(&state.issued).item(&item);
            Some(Answer::json(
                StatusCode::OK,
                compaction::compact_endpoint(seq, body, &item, c.input_tokens, summary_tokens),
            ))
        }
        _ => None,
    }
}

/// A compaction the server runs before answering (threshold modes).
struct Fired {
    /// The block or item, first in the reply.
    first: Value,
    /// Input and output tokens of the compaction pass.
    pass: (u64, u64),
    /// Anthropic: answer with the block alone.
    pause: bool,
}

/// Whether a threshold compaction fires for this request, and what it made.
fn threshold_compaction(
    state: &State,
    seq: u64,
    api: Api,
    mode: &AnthropicMode,
    body: &Value,
    c: &Counted,
) -> Option<Fired> {
    let pad_to = lock(&state.config).compaction_summary_tokens;
    let summary = compaction::summary_text(seq, c.input_tokens, &c.last_user, pad_to);
    let summary_tokens = compact_core::tokens::Encoding::O200kBase.count(&summary) as u64;
    match (api, mode) {
        (Api::Messages, AnthropicMode::Threshold { trigger, pause })
            if c.input_tokens >= *trigger =>
        {
            let first = compaction::anthropic_block(seq, &summary);
            lock(&state.issued).block(&first);
            Some(Fired {
                first,
                pass: (c.input_tokens, summary_tokens),
                pause: *pause,
            })
        }
        (Api::Responses, _) => {
            let threshold = compaction::openai_threshold(body)?;
            if c.input_tokens < threshold {
                return None;
            }
            let first = compaction::openai_item(seq, c.input_tokens);
            lock(&state.issued).item(&first);
            Some(Fired {
                first,
                pass: (c.input_tokens, summary_tokens),
                pause: false,
            })
        }
        _ => None,
    }
}

/// The normal reply with a threshold compaction first. The message pass reads the summary and what
/// follows it, not the whole input: its usage is the top-level one, the compaction pass's is only in
/// `iterations` (Anthropic).
fn with_compaction(
    seq: u64,
    api: Api,
    c: &Counted,
    reply: &Reply,
    usage: &mut Usage,
    fired: &Fired,
) -> Answer {
    usage.input = fired.pass.1 + c.input_tokens.min(u64::from(MESSAGE_PASS_TAIL_TOKENS));
    usage.cached = usage.cached.min(usage.input);
    usage.cache_creation = usage.cache_creation.min(usage.input - usage.cached);
    let normal = success(seq, api, c, reply, usage);
    let output = if fired.pause { 0 } else { usage.output };
    let iterations = compaction::iterations(fired.pass, Some((usage.input, output)));
    let mut answer = normal;
    let mut chunks = Vec::new();
    while let Some(chunk) = answer.body.take_chunk() {
        chunks.push(chunk);
    }
    answer.body = match (api, answer.sse) {
        (Api::Messages, true) => ChunkBody::chunks(compaction::threshold_stream(
            chunks,
            &fired.first,
            fired.pause,
            iterations,
        )),
        (Api::Messages, false) => ChunkBody::full(compaction::threshold_json(
            &join(&chunks),
            &fired.first,
            fired.pause,
            iterations,
        )),
        (_, true) => ChunkBody::chunks(compaction::responses_with_item_stream(
            chunks,
            &fired.first,
            false,
        )),
        (_, false) => ChunkBody::full(compaction::responses_with_item_json(
            &join(&chunks),
            &fired.first,
        )),
    };
    answer
}

/// Tokens of the request the message pass after a threshold compaction reads besides the summary
/// (the latest turn, roughly).
const MESSAGE_PASS_TAIL_TOKENS: u32 = 2_000;

fn join(chunks: &[Bytes]) -> String {
    chunks
        .iter()
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect()
}

/// Answers for faults that replace the reply.
fn fault_answer(seq: u64, api: Api, c: &Counted, fault: Option<&Fault>) -> Option<Answer> {
    match fault? {
        Fault::RateLimit { retry_after } => {
            let body = if is_anthropic(api) {
                anthropic::rate_limit_body(seq)
            } else {
                openai::rate_limit_body(&c.model)
            };
            let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
            Some(Answer {
                retry_after: Some(secs),
                ..Answer::json(StatusCode::TOO_MANY_REQUESTS, body)
            })
        }
        Fault::ServerError => {
            let body = if is_anthropic(api) {
                anthropic::server_error_body(seq)
            } else {
                openai::server_error_body()
            };
            Some(Answer::json(StatusCode::INTERNAL_SERVER_ERROR, body))
        }
        Fault::MalformedJson => Some(Answer::json(
            StatusCode::OK,
            format!("{{\"id\": \"sim-{seq}\", \"choices\": [{{\"message\": "),
        )),
        Fault::MalformedSse => Some(Answer {
            status: StatusCode::OK,
            body: ChunkBody::chunks(vec![
                Bytes::from(format!(
                    "event: message\ndata: {{\"id\": \"sim-{seq}\", \"delta\": \n\n"
                )),
                Bytes::from_static(b"data: }}} not json\n\nnonsense without a blank line"),
            ]),
            sse: true,
            retry_after: None,
        }),
        _ => None,
    }
}

/// The overflow answer when the request does not fit (or the fault forces it).
fn overflow_answer(
    seq: u64,
    api: Api,
    c: &Counted,
    config: &SimConfig,
    forced: bool,
) -> Option<Answer> {
    let window = if forced {
        c.input_tokens.saturating_sub(1)
    } else {
        config.window
    };
    match api {
        Api::ChatCompletions => openai::chat_overflow(c, window, config.chat_wording)
            .map(|b| Answer::json(StatusCode::BAD_REQUEST, b)),
        Api::Responses | Api::ResponsesCompact => {
            if c.input_tokens + c.max_output.unwrap_or(0) <= window {
                return None;
            }
            if c.stream {
                let events = openai::response_stream_overflow(seq, &c.model);
                return Some(Answer {
                    status: StatusCode::OK,
                    body: ChunkBody::chunks(events),
                    sse: true,
                    retry_after: None,
                });
            }
            Some(Answer::json(
                StatusCode::BAD_REQUEST,
                openai::responses_overflow_body(),
            ))
        }
        Api::Messages | Api::CountTokens => {
            // count_tokens only checks the input.
            if api == Api::CountTokens {
                return (c.input_tokens > window).then(|| {
                    Answer::json(
                        StatusCode::BAD_REQUEST,
                        anthropic::prompt_too_long(seq, c.input_tokens, window),
                    )
                });
            }
            anthropic::overflow(seq, c, window).map(|b| Answer::json(StatusCode::BAD_REQUEST, b))
        }
        Api::Unknown => None,
    }
}

/// Prompts the cache holds per endpoint: enough that a client's side requests (titles, token
/// counts) or a few sessions in turn do not evict each other's prefixes.
const CACHED_PROMPTS: usize = 8;

/// Usage with the cached prefix: the longest prefix shared with one of the latest successful
/// requests to the same endpoint.
fn usage_of(state: &State, api: Api, c: &Counted, config: &SimConfig, reply: &Reply) -> Usage {
    let (encoding, rule) = if is_anthropic(api) {
        (config.anthropic_encoding, config.anthropic_cache)
    } else {
        (config.openai_encoding, config.openai_cache)
    };
    let mut previous = lock(&state.previous);
    let recent = previous.entry(api).or_default();
    let longest = recent
        .iter()
        .max_by_key(|p| common_prefix_bytes(p, &c.rendering));
    let prefix = longest.map_or(0, |p| common_prefix_tokens(p, &c.rendering, encoding));
    if recent.len() == CACHED_PROMPTS {
        recent.pop_front();
    }
    recent.push_back(c.rendering.clone());
    let cached = rule.apply(prefix).min(c.input_tokens);
    let cache_creation = if is_anthropic(api) && c.has_cache_control {
        c.input_tokens - cached
    } else {
        0
    };
    Usage {
        input: c.input_tokens,
        cached,
        cache_creation,
        output: reply.output_tokens,
    }
}

fn success(seq: u64, api: Api, c: &Counted, reply: &Reply, usage: &Usage) -> Answer {
    let (stream, body) = match (api, c.stream) {
        (Api::ChatCompletions, true) => (
            true,
            ChunkBody::chunks(openai::chat_stream(
                seq,
                &c.model,
                reply,
                usage,
                c.include_usage,
            )),
        ),
        (Api::ChatCompletions, false) => (
            false,
            ChunkBody::full(openai::chat_completion(seq, &c.model, reply, usage)),
        ),
        (Api::Responses, true) => (
            true,
            ChunkBody::chunks(openai::response_stream(seq, &c.model, reply, usage)),
        ),
        (Api::Responses, false) => (
            false,
            ChunkBody::full(openai::response(seq, &c.model, reply, usage)),
        ),
        (_, true) => (
            true,
            ChunkBody::chunks(anthropic::message_stream(seq, &c.model, reply, usage)),
        ),
        (_, false) => (
            false,
            ChunkBody::full(anthropic::message(seq, &c.model, reply, usage)),
        ),
    };
    Answer {
        status: StatusCode::OK,
        body,
        sse: stream,
        retry_after: None,
    }
}

/// Keeps the first `after` chunks (non-streaming bodies: the first half of the bytes) and breaks the connection.
fn cut(mut body: ChunkBody, after: usize) -> ChunkBody {
    let mut chunks: Vec<Bytes> = Vec::new();
    while let Some(chunk) = body.take_chunk() {
        chunks.push(chunk);
    }
    if chunks.len() == 1 {
        let whole = chunks.remove(0);
        return ChunkBody::cut_after(vec![whole.slice(..whole.len() / 2)]);
    }
    chunks.truncate(after);
    ChunkBody::cut_after(chunks)
}

/// Keeps the first `after` chunks, then stalls with the connection open.
fn stall(mut body: ChunkBody, after: usize) -> ChunkBody {
    let mut chunks: Vec<Bytes> = Vec::new();
    while let Some(chunk) = body.take_chunk() {
        chunks.push(chunk);
    }
    chunks.truncate(after);
    ChunkBody::stall_after(chunks)
}

fn finish(state: &State, mut record: RecordedRequest, answer: Answer) -> Response<ChunkBody> {
    record.status = answer.status.as_u16();
    let anthropic = is_anthropic(record.api);
    let seq = record.seq;
    lock(&state.records).push(record);
    let mut builder = Response::builder().status(answer.status);
    builder = if answer.sse {
        builder
            .header("content-type", "text/event-stream; charset=utf-8")
            .header("cache-control", "no-cache")
    } else {
        builder.header("content-type", "application/json")
    };
    builder = builder.header(
        if anthropic {
            "request-id"
        } else {
            "x-request-id"
        },
        format!("req_sim_{seq}"),
    );
    if let Some(secs) = answer.retry_after {
        builder = builder.header("retry-after", secs.to_string());
    }
    let status = answer.status;
    builder.body(answer.body).unwrap_or_else(|_| {
        let mut r = Response::new(ChunkBody::default());
        *r.status_mut() = status;
        r
    })
}
