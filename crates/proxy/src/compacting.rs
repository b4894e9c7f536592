//! The compacting routes (`/v1/chat/completions`, `/v1/responses`, `/v1/messages`, with or without
//! `/v1`, and Azure OpenAI's paths: [`Route`]): decode the
//! request, preflight it through the session runtime, send the result upstream in the same wire
//! format, and handle the reply: usage fed back, streams forwarded as they arrive, and a context
//! overflow recovered transparently (compact harder and resend, at most the runtime's attempts per
//! turn; a hopeless request gets the upstream's error unchanged).
//!
//! What is forwarded untouched, and why:
//! - a provider compaction call (a Responses `compaction_trigger` as the last input item, an
//!   Anthropic request with a top-level `compaction`): it is the provider's own summariser call;
//! - a Responses request with `previous_response_id`: the history lives on the provider;
//! - a request that does not decode into the conversation model, or that the runtime cannot
//!   prepare: the upstream judges it as the client sent it.
//!
//! When preflight changes nothing, the client's own bytes are sent; otherwise the prepared
//! conversation is encoded (unknown fields are carried by the wire codec). A body that came with a
//! `Content-Encoding` is read decoded ([`crate::content_encoding`]); what goes upstream after
//! preflight is that JSON, uncompressed, while a request forwarded untouched keeps the client's
//! compressed bytes and header.

use crate::content_encoding::RequestBody;
use crate::decoders::{Held, Scan};
use crate::handler::{forward_untouched, url_for};
use crate::headers;
use crate::log::{emit, Level};
use crate::recall::detour::{self, hold, without_tool, Detours};
use crate::recall::sniff::Verdict;
use crate::recall::{self, RecallTurn};
use crate::reply::{error_response, full, stream_error_event, ErrorKind, ProxyBody};
use crate::route::{Family, Route};
use crate::session_id::{client_session, parent_id, session_id, SESSION_HEADER};
use crate::state::Shared;
use crate::stream::{StreamBody, StreamEnd, UsageTap};
use crate::usage::usage_in;
use bytes::Bytes;
use compact_core::model::{Conversation, Format};
use compact_formats::overflow::{classify, classify_stream_event};
use compact_formats::sse::SseParser;
use compact_formats::wire::encode;
use compact_session::{CompactManager, Recovery, Usage};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::http::request::Parts;
use hyper::http::response::Parts as ReplyParts;
use hyper::{Method, Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// Largest error body read to check for a context overflow (provider error bodies are small).
const MAX_ERROR_BODY_BYTES: usize = 1024 * 1024;
/// Largest non-streamed reply read whole (for its usage).
const MAX_REPLY_BYTES: usize = 256 * 1024 * 1024;
/// Responses stream events that come before any output: the proxy holds them back until the next
/// event says whether the request failed for its size.
const RESPONSES_PREAMBLE: [&str; 2] = ["response.created", "response.in_progress"];
/// Most bytes held back while looking past the preamble.
const MAX_PEEK_BYTES: usize = 256 * 1024;

/// The response header that says a request went upstream untouched, and why (`undecodable`,
/// `preflight_failed`, `encode_failed`, `no_policy_for_window`, `provider_compaction`,
/// `previous_response_id`).
pub const PASSTHROUGH_HEADER: &str = "x-compact-passthrough";

/// Pass-through reasons that are the protocol working as meant (the provider's own compaction call,
/// a history kept by the provider), not a request Compact failed to handle: logged at info level.
const EXPECTED_PASSTHROUGH: [&str; 2] = ["provider_compaction", "previous_response_id"];

/// Handles a request on a compacting route; the response and log fields.
pub(crate) async fn handle(
    shared: &Shared,
    route: Route,
    family: Family,
    format: Format,
    parts: &Parts,
    body: RequestBody,
    started: Instant,
) -> (Response<ProxyBody>, Option<Value>) {
    let (value, session, parent, mut held, kept) =
        match read_request(shared, route, format, parts, &body.plain) {
            Ok(read) => read,
            Err(message) => {
                return (
                    error_response(family, ErrorKind::InvalidRequest, &message),
                    None,
                )
            }
        };
    let body_len = body.plain.len();
    // An Azure deployment's path names the model when the body does not.
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .or_else(|| Route::deployment(parts.uri.path()))
        .map(str::to_owned);
    let call = Call {
        shared,
        route,
        family,
        model: model.clone(),
        parts,
        started,
    };
    if let Some(reason) = untouched_reason(route, &value) {
        return call.untouched(body.sent, &session, reason).await;
    }
    let decoded = match kept {
        Some(keep) => held.decode_reusing(format, &value, keep),
        None => held.decode(format, &value),
    };
    if decoded.is_err() {
        return call.untouched(body.sent, &session, "undecodable").await;
    }
    let window = shared.config.window_for(family, model.as_deref());
    let backend = shared.config.backend_for(model.as_deref());
    let manager = match shared.managers.for_route(window, backend) {
        Ok(m) => m,
        Err(_) => {
            return call
                .untouched(body.sent, &session, "no_policy_for_window")
                .await
        }
    };
    if let Some(parent) = parent {
        if let Err(message) = link(shared, &manager, &session, parent).await {
            return (
                error_response(family, ErrorKind::InvalidRequest, &message),
                None,
            );
        }
    }
    let place = Place::of(shared, &manager);
    let prepared = {
        let manager = Arc::clone(&manager);
        let session = session.clone();
        run_blocking(place, move || {
            let conversation = held.decoder.conversation();
            let prepared = manager.preflight(&session, conversation);
            let unchanged = prepared
                .as_ref()
                .is_ok_and(|p| p.sends_request_as_is(conversation));
            (held, prepared, unchanged)
        })
        .await
    };
    let (mut held, prepared, unchanged) = match prepared {
        Ok((h, Ok(p), u)) => (h, p, u),
        Ok((h, Err(e), _)) => {
            emit(
                Level::Warn,
                "preflight_failed",
                json!({"route": route.label(), "session": session, "error": e.to_string()}),
            );
            record_fallback(place, &manager, &session, h, "preflight_failed").await;
            return call
                .untouched(body.sent, &session, "preflight_failed")
                .await;
        }
        Err(_) => {
            return call
                .untouched(body.sent, &session, "preflight_failed")
                .await
        }
    };
    let report = &prepared.report;
    if let Some(c) = &report.compaction {
        shared.metrics.compaction(c.tokens_before, c.tokens_after);
    }
    let mut detail = json!({"session": session, "window": window, "tokens": report.tokens,
        "effective_tokens": report.effective_tokens, "new_items": report.new_items,
        "reused_items": report.reused_items, "branched": report.branched,
        "compacted": report.compaction.is_some(),
        "tokens_before": report.compaction.as_ref().map(|c| c.tokens_before),
        "recoveries": 0});
    // The tool comes with what Compact changed: a request sent as the client made it goes out as
    // it came, even when it names references (a `compactctl run` marker in a tool output: the
    // agent's shell recalls those), so that the tools, and the prompt cache behind them, change
    // only where the conversation does.
    let offer =
        !unchanged && offers_recall(shared, route, &session, &value, &prepared.conversation);
    // With the tool offered, the request is written out once, with it (the bytes without it are
    // made only if a detour needs them).
    let outgoing = match (unchanged, offer) {
        (true, _) => Outgoing::Bytes(body.plain),
        (false, _) => match encode(&prepared.conversation, format) {
            Ok(encoded) if offer => Outgoing::Offered {
                request: encoded.value,
                bytes: None,
            },
            Ok(encoded) => Outgoing::Bytes(Bytes::from(encoded.value.to_string())),
            Err(_) => {
                record_fallback(place, &manager, &session, held, "encode_failed").await;
                return call.untouched(body.sent, &session, "encode_failed").await;
            }
        },
    };
    held.keep(value, body_len);
    shared.decoders.put(&session, held);
    let turn = Turn {
        shared,
        route,
        family,
        format,
        url: url_for(shared, family, model.as_deref(), parts),
        headers: headers::upstream_compacted(&parts.headers),
        manager,
        place,
        session,
        client_session: client_session(&parts.headers).map(|(_, id)| id.to_owned()),
    };
    shared.metrics.added_latency(started.elapsed());
    let (response, recoveries, detours) = turn.run(prepared.conversation, outgoing).await;
    detail["recoveries"] = json!(recoveries);
    if detours.offered {
        detail["recall"] = detours.to_json();
    }
    (response, Some(detail))
}

/// The request's JSON object, its session id, its parent session (a subagent's), the session's
/// held decode and, when the object was rebuilt from the last request's (see
/// [`crate::decoders`]), how many leading messages it took over; or why the request is refused.
#[allow(clippy::type_complexity)]
fn read_request(
    shared: &Shared,
    route: Route,
    format: Format,
    parts: &Parts,
    body: &Bytes,
) -> Result<(Value, String, Option<String>, Held, Option<usize>), String> {
    let parent = parent_id(&parts.headers).map_err(|e| e.to_string())?;
    // A session named by its header: its held decode is known before the body is read, and the
    // body is scanned only from where it differs from the last one (see [`Held::scan`]).
    if parts.headers.contains_key(SESSION_HEADER) {
        if let Ok(session) = session_id(&parts.headers, route, &Value::Null) {
            let mut held = shared.decoders.take(&session).unwrap_or_default();
            match held.scan(body, format) {
                Some(scan) => {
                    if let Some((value, kept)) = held.rebuild(body, &scan) {
                        return Ok((value, session, parent, held, Some(kept)));
                    }
                }
                // Not a JSON object: the full parse below says why; the held decode stays.
                None => shared.decoders.put(&session, held),
            }
        }
    }
    // Scanned first: the session's last request gives the members and messages that did not
    // change, so only the rest is parsed.
    else if let Some(scan) = Scan::of(body, format) {
        if let Some(opening) = scan.opening(format) {
            let session = session_id(&parts.headers, route, &opening).map_err(|e| e.to_string())?;
            let mut held = shared.decoders.take(&session).unwrap_or_default();
            if let Some((value, kept)) = held.rebuild(body, &scan) {
                return Ok((value, session, parent, held, Some(kept)));
            }
        }
    }
    let value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return Err("the request body must be a JSON object".to_owned()),
        Err(e) => return Err(format!("the request body is not valid JSON: {e}")),
    };
    let session = session_id(&parts.headers, route, &value).map_err(|e| e.to_string())?;
    let held = shared.decoders.take(&session).unwrap_or_default();
    Ok((value, session, parent, held, None))
}

/// Whether the request as prepared gets the `compact_recall` tool: recall is on, the request
/// holds a reference, and the client has no tool of that name (then it is said in the log).
fn offers_recall(
    shared: &Shared,
    route: Route,
    session: &str,
    client: &Value,
    prepared: &Conversation,
) -> bool {
    if !shared.config.recall.enabled || !recall::holds_reference(prepared) {
        return false;
    }
    if recall::tool::declared(client) {
        emit(
            Level::Info,
            "recall_not_offered",
            json!({"route": route.label(), "session": session,
                   "reason": "the client declares a tool named compact_recall"}),
        );
        return false;
    }
    true
}

/// The prepared request as it is about to be sent.
enum Outgoing {
    /// Its bytes (recall not offered).
    Bytes(Bytes),
    /// Its JSON, which gets the `compact_recall` tool, and its bytes without the tool when known.
    Offered {
        request: Value,
        bytes: Option<Bytes>,
    },
}

/// Links a subagent's `session` to `parent` (the log is read once per process per pair); the
/// message of a link the log refuses (a cycle, another parent).
async fn link(
    shared: &Shared,
    manager: &Arc<CompactManager>,
    session: &str,
    parent: String,
) -> Result<(), String> {
    let first = {
        let mut linked = shared.linked.lock().unwrap_or_else(|e| e.into_inner());
        if linked.len() >= crate::state::MAX_LINKED_CACHED {
            linked.clear();
        }
        linked.insert((session.to_owned(), parent.clone()))
    };
    if !first {
        return Ok(());
    }
    let (m, s, p) = (Arc::clone(manager), session.to_owned(), parent.clone());
    let outcome = run_blocking(Place::of(shared, manager), move || m.link_parent(&s, &p)).await;
    let failed = match outcome {
        Ok(Ok(_)) => return Ok(()),
        Ok(Err(e)) => e.to_string(),
        Err(()) => "linking the session to its parent failed".to_owned(),
    };
    shared
        .linked
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(session.to_owned(), parent));
    Err(failed)
}

/// Logs a request sent on untouched after the session runtime had it decoded, so that the turn is
/// still a call of the session (a warning when even that fails: the client's next request, which
/// repeats this one's items, logs them then).
async fn record_fallback(
    place: Place,
    manager: &Arc<CompactManager>,
    session: &str,
    held: Held,
    reason: &'static str,
) {
    let recorded = {
        let manager = Arc::clone(manager);
        let session = session.to_owned();
        run_blocking(place, move || {
            manager
                .record_passthrough(&session, held.decoder.conversation(), reason)
                .map_err(|e| e.to_string())
        })
        .await
    };
    let error = match recorded {
        Ok(Ok(())) => return,
        Ok(Err(e)) => e,
        Err(()) => "the recording task panicked".to_owned(),
    };
    emit(
        Level::Warn,
        "passthrough_not_recorded",
        json!({"session": session, "reason": reason, "error": error}),
    );
}

/// Where a request's session work (a preflight: store writes, maybe a compaction; a usage; a
/// link) runs. It blocks, so the choice is between the thread handling the request and another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// On the worker thread handling the request, as a plain call: the request's buffers are
    /// allocated and freed on one thread and no other thread is woken. Only for work that makes no
    /// network call and needs no runtime of its own (a local store, no model summariser, no
    /// archive): it is CPU work and a short local write, which a worker may do as it does the
    /// request's parsing (admission bounds how many requests are worked on at once).
    Worker,
    /// Off the worker's scheduler: on a multi-thread runtime (`compactctl serve`) in place, with
    /// `block_in_place` handing this worker's other tasks to another thread (a PostgreSQL store's
    /// client and a model summariser block on runtimes of their own, which is allowed there);
    /// elsewhere (a current-thread runtime) on the blocking pool.
    Handoff,
}

impl Place {
    /// Where `manager`'s work runs for the proxy sharing `shared`.
    pub(crate) fn of(shared: &Shared, manager: &CompactManager) -> Place {
        Place::choose(
            shared.config.store_on_worker,
            manager.config().summarizer.costs_a_call(),
            shared.config.archive.is_some(),
        )
    }

    fn choose(store_on_worker: bool, summary_calls_a_model: bool, archives: bool) -> Place {
        if store_on_worker && !summary_calls_a_model && !archives {
            Place::Worker
        } else {
            Place::Handoff
        }
    }
}

/// Runs blocking session work at `place`. A panic is an error either way, as `spawn_blocking`
/// reports it.
async fn run_blocking<T: Send + 'static>(
    place: Place,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ()> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match place {
        Place::Worker => caught(work),
        Place::Handoff if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| caught(work))
        }
        Place::Handoff => tokio::task::spawn_blocking(work).await.map_err(|_| ()),
    }
}

/// `work`'s result, or `Err` when it panicked.
fn caught<T>(work: impl FnOnce() -> T) -> Result<T, ()> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|_| ())
}

/// Why a request on a compacting route goes upstream as it came, if it does.
fn untouched_reason(route: Route, value: &Value) -> Option<&'static str> {
    match route {
        Route::Responses => {
            let last_is_trigger = value["input"]
                .as_array()
                .and_then(|items| items.last())
                .and_then(|item| item.get("type"))
                .and_then(Value::as_str)
                == Some("compaction_trigger");
            if last_is_trigger {
                return Some("provider_compaction");
            }
            if !value["previous_response_id"].is_null() {
                return Some("previous_response_id");
            }
            None
        }
        Route::Messages => (!value["compaction"].is_null()).then_some("provider_compaction"),
        _ => None,
    }
}

/// A request on a compacting route, as it came.
struct Call<'a> {
    shared: &'a Shared,
    route: Route,
    family: Family,
    model: Option<String>,
    parts: &'a Parts,
    started: Instant,
}

impl Call<'_> {
    /// Sends the request upstream as the client sent it.
    async fn untouched(
        &self,
        body: Bytes,
        session: &str,
        reason: &'static str,
    ) -> (Response<ProxyBody>, Option<Value>) {
        self.shared.metrics.passthrough(reason);
        if !EXPECTED_PASSTHROUGH.contains(&reason) {
            emit(
                Level::Warn,
                "passthrough",
                json!({"route": self.route.label(), "session": session, "reason": reason}),
            );
        }
        let mut response = forward_untouched(
            self.shared,
            self.route,
            self.family,
            self.model.as_deref(),
            self.parts,
            body,
            self.started,
        )
        .await;
        response.headers_mut().insert(
            PASSTHROUGH_HEADER,
            hyper::header::HeaderValue::from_static(reason),
        );
        (
            response,
            Some(json!({"session": session, "passthrough": reason})),
        )
    }
}

/// One turn: a prepared request, sent and retried after overflows.
struct Turn<'a> {
    shared: &'a Shared,
    route: Route,
    family: Family,
    format: Format,
    url: String,
    headers: hyper::HeaderMap,
    manager: Arc<CompactManager>,
    /// Where the session work of the turn runs.
    place: Place,
    session: String,
    /// The client's own session id (Claude Code's, Codex's): the session its hooks keep
    /// `compactctl run` outputs under.
    client_session: Option<String>,
}

/// What one upstream call gave.
enum Outcome {
    /// Answer the client with this.
    Done(Response<ProxyBody>),
    /// The upstream said the request is too long: recover, or answer with `fallback` (the
    /// upstream's reply, unchanged).
    Overflow {
        status: u16,
        body: String,
        fallback: Fallback,
    },
    /// The reply is a recall-only turn: answer it and send again, or answer with `fallback` (the
    /// reply, unchanged).
    Recall {
        turn: RecallTurn,
        fallback: Fallback,
    },
}

/// How one upstream call is made.
#[derive(Debug, Clone, Copy)]
struct Pass {
    /// The request carries the `compact_recall` tool: read the reply for a recall-only turn.
    sniff: bool,
    /// The request is the one the runtime prepared (not a detour): its usage calibrates counts.
    prepared: bool,
}

/// The upstream's overflow reply, built into a response only when it goes to the client (a
/// stream that is retried is dropped without being counted as a broken stream).
enum Fallback {
    /// A whole reply.
    Ready(Response<ProxyBody>),
    /// A stream: what was read of it, and the rest.
    Stream {
        parts: ReplyParts,
        head: Vec<Bytes>,
        incoming: Incoming,
        prepared: bool,
    },
}

impl Turn<'_> {
    /// Sends `outgoing` (the prepared request) and answers the client. When it gets the
    /// `compact_recall` tool, recall-only replies are answered and sent again, at most
    /// `RecallConfig::max_detours` times; past that, or when a detour overflows, the prepared
    /// request goes out again without the tool.
    async fn run(
        &self,
        mut sent: Arc<Conversation>,
        outgoing: Outgoing,
    ) -> (Response<ProxyBody>, u32, Detours) {
        let max = self.manager.config().overflow_max_retries;
        let mut recoveries = 0;
        let mut detours = Detours::default();
        // The prepared request without the tool (`None` until needed while the tool is offered),
        // and the request with the tool (and any detour turns) while it is.
        let (mut outgoing, mut current) = match outgoing {
            Outgoing::Bytes(bytes) => (Some(bytes), None),
            Outgoing::Offered { request, bytes } => (bytes, Some(request)),
        };
        let mut created_tools = false;
        if let Some(request) = current.take() {
            match self.offer(request, &mut detours) {
                Ok((request, created)) => (current, created_tools) = (Some(request), created),
                Err(request) => {
                    outgoing = outgoing.or_else(|| Some(Bytes::from(request.to_string())));
                }
            }
        }
        let mut in_detour = false;
        loop {
            let pass = Pass {
                sniff: current.is_some(),
                prepared: !in_detour,
            };
            let body = match (&current, &outgoing) {
                (Some(v), _) => Bytes::from(v.to_string()),
                (None, Some(bytes)) => bytes.clone(),
                // Not reached: the bytes are made whenever the tool is dropped.
                (None, None) => {
                    let message = "the proxy lost the request it was about to send";
                    let response = error_response(self.family, ErrorKind::BadGateway, message);
                    return (response, recoveries, detours);
                }
            };
            let (status, body, fallback) = match self.send_once(body, pass).await {
                Outcome::Done(response) => return (response, recoveries, detours),
                Outcome::Recall { turn, fallback } => {
                    let Some(request) = current.take() else {
                        return (self.fallback(fallback), recoveries, detours);
                    };
                    if outgoing.is_none() {
                        // The first detour: the request without the tool, kept for a fallback.
                        outgoing = Some(without_tool(&request, created_tools));
                    }
                    if let Some((input, output)) = turn.usage {
                        detours.input_tokens += input;
                        detours.output_tokens += output;
                    }
                    if detours.detours >= self.shared.config.recall.max_detours {
                        self.shared.metrics.recall_bound_reached();
                        detours.gave_up = Some("bound");
                        in_detour = false;
                        continue;
                    }
                    match self.detour(request, &turn).await {
                        Some(next) => {
                            detours.detours += 1;
                            detours.calls += u32::try_from(turn.calls.len()).unwrap_or(u32::MAX);
                            self.shared.metrics.recall_detour();
                            current = Some(next);
                            in_detour = true;
                            continue;
                        }
                        None => return (self.fallback(fallback), recoveries, detours),
                    }
                }
                Outcome::Overflow { .. } if in_detour => {
                    // The originals do not fit: the model goes on without them.
                    self.note(
                        "recall_detour_overflowed",
                        json!({"detours": detours.detours}),
                    );
                    detours.gave_up = Some("overflow");
                    current = None;
                    in_detour = false;
                    continue;
                }
                Outcome::Overflow {
                    status,
                    body,
                    fallback,
                } => (status, body, fallback),
            };
            // The runtime bounds attempts per turn; this bound only turns a regression into an
            // error answer instead of a loop.
            if recoveries > max {
                return (self.fallback(fallback), recoveries, detours);
            }
            let recovered = {
                let manager = Arc::clone(&self.manager);
                let session = self.session.clone();
                let request = Arc::clone(&sent);
                tokio::task::spawn_blocking(move || {
                    manager.recover(&session, &request, status, &body)
                })
                .await
            };
            let next = match recovered {
                Ok(Ok(Recovery::Retry(next))) => next,
                Ok(Ok(Recovery::GiveUp(reason))) => {
                    self.note("recovery_gave_up", json!({"reason": reason.to_string()}));
                    return (self.fallback(fallback), recoveries, detours);
                }
                Ok(Err(e)) => {
                    self.note("recovery_failed", json!({"error": e.to_string()}));
                    return (self.fallback(fallback), recoveries, detours);
                }
                Err(_) => return (self.fallback(fallback), recoveries, detours),
            };
            let Ok(encoded) = encode(&next, self.format) else {
                return (self.fallback(fallback), recoveries, detours);
            };
            recoveries += 1;
            self.shared.metrics.recovery();
            // Recall stays offered after a recovery while it was (the bound still counts).
            if current.is_some() && recall::holds_reference(&next) {
                match self.offer(encoded.value, &mut detours) {
                    Ok((request, created)) => {
                        (current, created_tools) = (Some(request), created);
                        outgoing = None;
                    }
                    Err(request) => {
                        current = None;
                        outgoing = Some(Bytes::from(request.to_string()));
                    }
                }
            } else {
                outgoing = Some(Bytes::from(encoded.value.to_string()));
                current = None;
            }
            sent = Arc::new(next);
        }
    }

    /// `request` with the tool added and whether `tools` was added with it; the request as it
    /// was when the tool cannot be added (its `tools` is not a list).
    fn offer(&self, mut request: Value, detours: &mut Detours) -> Result<(Value, bool), Value> {
        let created = request.get("tools").is_none();
        if !recall::tool::inject(self.route, &mut request) {
            return Err(request);
        }
        if !detours.offered {
            detours.offered = true;
            self.shared.metrics.recall_offered();
        }
        Ok((request, created))
    }

    /// The detour request: `request`, the model's turn, and the answers to its calls from the
    /// session log (`None` when the request has no list to append them to).
    async fn detour(&self, request: Value, turn: &RecallTurn) -> Option<Value> {
        let answered = detour::answer_turn(
            &self.manager,
            self.shared
                .config
                .kept_outputs
                .as_ref()
                .map(|k| (k, self.client_session.as_deref())),
            &self.session,
            turn,
            &request,
            self.shared.config.max_body_bytes,
        )
        .await;
        let mut answers = Vec::with_capacity(answered.len());
        for (answer, outcome, failure) in answered {
            self.shared.metrics.recall_call(outcome);
            if let Some(error) = failure {
                self.note("recall_failed", json!({"error": error}));
            }
            answers.push(answer);
        }
        detour::append(self.route, request, turn, &answers)
    }

    fn fallback(&self, fallback: Fallback) -> Response<ProxyBody> {
        match fallback {
            Fallback::Ready(response) => response,
            Fallback::Stream {
                parts,
                head,
                incoming,
                prepared,
            } => self.stream_response(&parts, head, Some(incoming), prepared),
        }
    }

    /// A streamed reply: `head`, then the rest of `inner`, read for usage (recorded when it
    /// answers the `prepared` request) and ended cleanly.
    fn stream_response(
        &self,
        parts: &ReplyParts,
        head: Vec<Bytes>,
        inner: Option<Incoming>,
        prepared: bool,
    ) -> Response<ProxyBody> {
        let error_event = stream_error_event(
            self.family,
            self.route == Route::Responses,
            "the upstream stream was interrupted; the proxy ended it",
        );
        let body = StreamBody::new(head, inner, self.shared.config.stream_idle_timeout)
            .with_tap(UsageTap::new(self.route))
            .with_error_event(error_event)
            .on_end(self.on_stream_end(prepared));
        with_parts(parts, BodyExt::boxed_unsync(body))
    }

    fn note(&self, event: &str, mut fields: Value) {
        fields["route"] = json!(self.route.label());
        fields["session"] = json!(self.session);
        emit(Level::Warn, event, fields);
    }

    fn error(&self, kind: ErrorKind, message: &str) -> Outcome {
        Outcome::Done(error_response(self.family, kind, message))
    }

    async fn send_once(&self, outgoing: Bytes, pass: Pass) -> Outcome {
        let config = &self.shared.config;
        let sent = self
            .shared
            .client
            .send(
                Method::POST,
                &self.url,
                &self.headers,
                outgoing,
                config.upstream_timeout,
            )
            .await;
        let reply = match sent {
            Ok(r) => r,
            Err(e) => {
                self.shared.metrics.upstream_error(e.kind());
                self.note(
                    "upstream_error",
                    json!({"kind": e.kind(), "error": e.to_string()}),
                );
                let kind = match e {
                    crate::upstream::UpstreamError::Timeout(_) => ErrorKind::Timeout,
                    _ => ErrorKind::BadGateway,
                };
                return self.error(kind, &e.to_string());
            }
        };
        let (reply_parts, incoming) = reply.into_parts();
        let status = reply_parts.status;
        if !status.is_success() {
            return self.error_reply(reply_parts, incoming).await;
        }
        if is_event_stream(&reply_parts) {
            return self.stream_reply(reply_parts, incoming, pass).await;
        }
        if !is_json(&reply_parts) {
            let body = StreamBody::new(Vec::new(), Some(incoming), config.stream_idle_timeout);
            return Outcome::Done(with_parts(&reply_parts, BodyExt::boxed_unsync(body)));
        }
        let collected = tokio::time::timeout(
            config.upstream_timeout,
            Limited::new(incoming, MAX_REPLY_BYTES).collect(),
        )
        .await;
        let bytes = match collected {
            Ok(Ok(b)) => b.to_bytes(),
            Ok(Err(_)) => {
                self.shared.metrics.upstream_error("stream_broken");
                return self.error(
                    ErrorKind::BadGateway,
                    "the upstream's reply broke off before it was complete",
                );
            }
            Err(_) => {
                self.shared.metrics.upstream_error("timeout");
                return self.error(
                    ErrorKind::Timeout,
                    "the upstream's reply did not complete in time",
                );
            }
        };
        let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
            self.shared.metrics.upstream_error("malformed_body");
            return self.error(
                ErrorKind::BadGateway,
                "the upstream's reply is not valid JSON",
            );
        };
        if let (Some(usage), true) = (usage_in(self.route, &value), pass.prepared) {
            // Recorded before the reply goes back, so this replica's next preflight decides on
            // it. A usage reporting a provider compaction or a finished recovery is logged at once
            // (other replicas and the admin API act on it); a plain calibration is logged with
            // the session's next append, or alone within a second (docs/design/session.md).
            let manager = Arc::clone(&self.manager);
            let session = self.session.clone();
            let _ = run_blocking(self.place, move || {
                // A usage that cannot be recorded (the store failing) only costs one
                // calibration sample.
                let _ = manager.record_usage(&session, &usage);
            })
            .await;
        }
        let reply = with_parts(&reply_parts, full(bytes));
        if let (true, Some(turn)) = (pass.sniff, recall::reply::recall_turn(self.route, &value)) {
            return Outcome::Recall {
                turn,
                fallback: Fallback::Ready(reply),
            };
        }
        Outcome::Done(reply)
    }

    /// An error status: an overflow candidate is read whole and classified; anything else (429
    /// with its `Retry-After`, 5xx...) goes to the client unchanged, streamed.
    async fn error_reply(&self, reply_parts: ReplyParts, incoming: Incoming) -> Outcome {
        let status = reply_parts.status;
        self.shared
            .metrics
            .upstream_error(if status.is_server_error() {
                "status_5xx"
            } else {
                "status_4xx"
            });
        if !matches!(
            status,
            StatusCode::BAD_REQUEST | StatusCode::PAYLOAD_TOO_LARGE
        ) {
            let body = StreamBody::new(
                Vec::new(),
                Some(incoming),
                self.shared.config.stream_idle_timeout,
            );
            return Outcome::Done(with_parts(&reply_parts, BodyExt::boxed_unsync(body)));
        }
        let collected = tokio::time::timeout(
            self.shared.config.upstream_timeout,
            Limited::new(incoming, MAX_ERROR_BODY_BYTES).collect(),
        )
        .await;
        let Ok(Ok(bytes)) = collected.map(|r| r.map(http_body_util::Collected::to_bytes)) else {
            return self.error(
                ErrorKind::BadGateway,
                "the upstream's error reply could not be read",
            );
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let reply = with_parts(&reply_parts, full(bytes));
        if classify(status.as_u16(), &text).is_some() {
            return Outcome::Overflow {
                status: status.as_u16(),
                body: text,
                fallback: Fallback::Ready(reply),
            };
        }
        Outcome::Done(reply)
    }

    /// A streamed reply: a Responses stream is looked at past its preamble (it reports an
    /// overflow as an event after HTTP 200); a reply to a request with the `compact_recall` tool
    /// is held until it is known to be the client's (or a recall-only turn); then everything is
    /// forwarded as it arrives.
    async fn stream_reply(
        &self,
        reply_parts: ReplyParts,
        mut incoming: Incoming,
        pass: Pass,
    ) -> Outcome {
        let idle = self.shared.config.stream_idle_timeout;
        let mut head = Vec::new();
        if self.route == Route::Responses {
            let peeked = peek_responses(&mut incoming, idle).await;
            if peeked.broken {
                return self.broken_stream(&reply_parts, peeked.head, pass);
            }
            if let Some(error) = peeked.overflow {
                return Outcome::Overflow {
                    status: StatusCode::BAD_REQUEST.as_u16(),
                    body: json!({"error": error}).to_string(),
                    fallback: Fallback::Stream {
                        parts: reply_parts,
                        head: peeked.head,
                        incoming,
                        prepared: pass.prepared,
                    },
                };
            }
            head = peeked.head;
        }
        if pass.sniff {
            let (verdict, broken) = hold(&mut incoming, &mut head, self.route, idle).await;
            if broken {
                return self.broken_stream(&reply_parts, head, pass);
            }
            if let Verdict::Recall(turn) = verdict {
                return Outcome::Recall {
                    turn,
                    fallback: Fallback::Stream {
                        parts: reply_parts,
                        head,
                        incoming,
                        prepared: pass.prepared,
                    },
                };
            }
        }
        Outcome::Done(self.stream_response(&reply_parts, head, Some(incoming), pass.prepared))
    }

    /// A stream that broke while held: what was read, then the proxy's error event.
    fn broken_stream(&self, parts: &ReplyParts, mut head: Vec<Bytes>, pass: Pass) -> Outcome {
        head.push(stream_error_event(
            self.family,
            self.route == Route::Responses,
            "the upstream stream was interrupted; the proxy ended it",
        ));
        self.shared.metrics.upstream_error("stream_broken");
        Outcome::Done(self.stream_response(parts, head, None, pass.prepared))
    }

    fn on_stream_end(&self, prepared: bool) -> crate::stream::OnEnd {
        let manager = Arc::clone(&self.manager);
        let place = self.place;
        let session = self.session.clone();
        let metrics = Arc::clone(&self.shared.metrics);
        let route = self.route.label();
        Box::new(move |end: StreamEnd, usage: Option<Usage>| {
            if let (Some(usage), true) = (usage, prepared) {
                record_usage(place, manager, session.clone(), usage);
            }
            let kind = match end {
                StreamEnd::Completed => return,
                StreamEnd::UpstreamBroken => "stream_broken",
                StreamEnd::Idle => "stream_idle",
                StreamEnd::ClientGone => "client_gone",
            };
            if end != StreamEnd::ClientGone {
                metrics.upstream_error(kind);
            }
            emit(
                Level::Warn,
                "stream_ended",
                json!({"route": route, "session": session, "end": kind}),
            );
        })
    }
}

/// What was read of a Responses stream before deciding.
struct Peeked {
    head: Vec<Bytes>,
    broken: bool,
    /// The error object of an overflow reported in the stream.
    overflow: Option<Value>,
}

async fn peek_responses(incoming: &mut Incoming, idle: std::time::Duration) -> Peeked {
    let mut peeked = Peeked {
        head: Vec::new(),
        broken: false,
        overflow: None,
    };
    let mut sse = SseParser::default();
    let mut held = 0;
    loop {
        let frame = match tokio::time::timeout(idle, incoming.frame()).await {
            Err(_) | Ok(None) => return peeked,
            Ok(Some(Err(_))) => {
                peeked.broken = true;
                return peeked;
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        held += data.len();
        let events = sse.push(&data);
        peeked.head.push(data);
        // An event too large to read is skipped, as any unreadable one.
        for event in events.into_iter().flatten() {
            let value: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
            let name = event
                .event
                .clone()
                .or_else(|| value.get("type").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default();
            if RESPONSES_PREAMBLE.contains(&name.as_str()) {
                continue;
            }
            if classify_stream_event(event.event.as_deref(), &event.data).is_some() {
                let error = value
                    .get("response")
                    .and_then(|r| r.get("error"))
                    .or_else(|| value.get("error"))
                    .cloned()
                    .unwrap_or(value);
                peeked.overflow = Some(error);
            }
            return peeked;
        }
        if held > MAX_PEEK_BYTES {
            return peeked;
        }
    }
}

/// Records the usage of a streamed reply once it ended: at [`Place::Worker`] on this thread (the
/// stream is over; only its last frame waits for it), else on the blocking pool.
fn record_usage(place: Place, manager: Arc<CompactManager>, session: String, usage: Usage) {
    // A usage that cannot be recorded (the session moved on meanwhile) only costs one calibration
    // sample.
    if place == Place::Worker {
        let _ = caught(|| manager.record_usage(&session, &usage));
    } else if tokio::runtime::Handle::try_current().is_ok() {
        tokio::task::spawn_blocking(move || {
            let _ = manager.record_usage(&session, &usage);
        });
    }
}

fn is_event_stream(parts: &ReplyParts) -> bool {
    content_type(parts).starts_with("text/event-stream")
}

fn is_json(parts: &ReplyParts) -> bool {
    let ct = content_type(parts);
    ct.is_empty() || ct.contains("json")
}

fn content_type(parts: &ReplyParts) -> String {
    parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn with_parts(parts: &ReplyParts, body: ProxyBody) -> Response<ProxyBody> {
    let mut response = Response::new(body);
    *response.status_mut() = parts.status;
    *response.headers_mut() = headers::client_response(&parts.headers);
    response
}

#[cfg(test)]
#[allow(clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn session_work_stays_on_the_worker_only_without_network_calls() {
        // A local store, the deterministic checkpoint, no archive: on the request's thread.
        assert_eq!(Place::choose(true, false, false), Place::Worker);
        // A store with a runtime of its own, a model summariser, an archive: handed off.
        assert_eq!(Place::choose(false, false, false), Place::Handoff);
        assert_eq!(Place::choose(true, true, false), Place::Handoff);
        assert_eq!(Place::choose(true, false, true), Place::Handoff);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn work_on_the_worker_runs_on_the_calling_thread_and_a_panic_is_an_error() {
        let here = std::thread::current().id();
        let ran_on = run_blocking(Place::Worker, || std::thread::current().id()).await;
        assert_eq!(ran_on, Ok(here));
        let panicked = run_blocking(Place::Worker, || -> u8 { panic!("a preflight bug") }).await;
        assert_eq!(panicked, Err(()));
        let handed_off = run_blocking(Place::Handoff, || 7).await;
        assert_eq!(handed_off, Ok(7));
    }
}
