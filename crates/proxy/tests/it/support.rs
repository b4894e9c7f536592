//! The harness (simulator + proxy + an HTTP client) and a client that drives a tool-using
//! conversation in each wire format, streaming or not, the way an SDK would.
#![allow(dead_code)]

use bytes::Bytes;
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_proxy::{MemoryLog, Proxy, ProxyConfig, Upstream};
use compact_session::{MemoryStore, SessionConfig, Store};
use compact_sim::{ScriptedReply, SimConfig, SimHandle, Simulator};
use http_body_util::{BodyExt, Full};
use hyper::header::HeaderMap;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// The window of the proxy's sessions in most tests: small, so that a few dozen tool calls
/// overflow it several times.
pub const WINDOW: usize = 16_000;
/// Output tokens the test clients ask for.
pub const MAX_OUTPUT: u64 = 512;

/// A last change to the proxy's configuration.
pub type Adjust = Arc<dyn Fn(&mut ProxyConfig) + Send + Sync>;

/// Settings of one harness.
#[derive(Clone)]
pub struct Options {
    /// The window the proxy compacts for.
    pub window: usize,
    /// The simulator's real window.
    pub sim_window: u64,
    pub admin_token: Option<String>,
    pub upstream_timeout: Duration,
    pub stream_idle_timeout: Duration,
    pub max_body_bytes: usize,
    /// Last changes to the proxy's configuration (model routes...).
    pub adjust: Option<Adjust>,
    /// The store, when shared with another harness's proxy (a replica).
    pub store: Option<Arc<MemoryStore>>,
    /// The upstream, when another harness's simulator (a replica of its proxy).
    pub upstream: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: WINDOW,
            sim_window: WINDOW as u64,
            admin_token: None,
            upstream_timeout: Duration::from_secs(30),
            stream_idle_timeout: Duration::from_secs(30),
            max_body_bytes: 4 * 1024 * 1024,
            adjust: None,
            store: None,
            upstream: None,
        }
    }
}

/// A simulator, a proxy in front of it, and a client.
pub struct Harness {
    pub sim: SimHandle,
    pub proxy: Proxy,
    pub addr: SocketAddr,
    pub log: HarnessLog,
    pub store: Arc<MemoryStore>,
    client: Client<HttpConnector, Full<Bytes>>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

/// The log lines of one harness's proxy: every event in its `serve` span (its own, and its
/// dependencies' within the levels `compact_proxy::log::LEAKY_TARGETS` allows), at every level, as
/// `compact_proxy::log::json_line` writes them. One subscriber per test process keeps them all.
pub struct HarnessLog {
    scope: u64,
}

impl HarnessLog {
    pub fn new() -> HarnessLog {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        all_lines();
        HarnessLog {
            scope: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }

    pub fn lines(&self) -> Vec<String> {
        all_lines().lines_of(self.scope)
    }

    /// The span a proxy's `serve` runs in for its lines to be these.
    pub fn span(&self) -> tracing::Span {
        tracing::info_span!("harness", log_scope = self.scope)
    }
}

/// The process's log: installed once as the global subscriber.
fn all_lines() -> &'static MemoryLog {
    static LOG: std::sync::OnceLock<MemoryLog> = std::sync::OnceLock::new();
    LOG.get_or_init(|| {
        let log = MemoryLog::default();
        let _ = tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(log.clone()),
        );
        log
    })
}

/// A reply as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

pub fn session_config(window: usize) -> SessionConfig {
    let mut policy = Policy::for_window(window);
    policy.reserved_output_tokens = MAX_OUTPUT as usize * 2;
    SessionConfig::new(policy, TokenCounter::new(Encoding::O200kBase))
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::with(Options::default()).await
    }

    pub async fn with(options: Options) -> Harness {
        let sim = Simulator::spawn(SimConfig::with_window(options.sim_window))
            .await
            .unwrap();
        let mut config = ProxyConfig::new(session_config(options.window));
        config.listen = SocketAddr::from(([127, 0, 0, 1], 0));
        config.openai = Upstream {
            base_url: options.upstream.clone().unwrap_or_else(|| sim.base_url()),
            context_window: Some(options.window),
        };
        config.anthropic = config.openai.clone();
        config.admin_token = options.admin_token.clone();
        config.upstream_timeout = options.upstream_timeout;
        config.stream_idle_timeout = options.stream_idle_timeout;
        config.max_body_bytes = options.max_body_bytes;
        config.drain_timeout = Duration::from_secs(10);
        if let Some(adjust) = &options.adjust {
            adjust(&mut config);
        }
        let store = options
            .store
            .clone()
            .unwrap_or_else(|| Arc::new(MemoryStore::new()));
        let log = HarnessLog::new();
        let proxy = Proxy::new(config, store.clone() as Arc<dyn Store>).unwrap();
        let listener = proxy.bind().await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let serving = proxy.clone();
        let task = tokio::spawn(
            async move {
                serving
                    .serve(listener, async {
                        let _ = rx.await;
                    })
                    .await
                    .unwrap();
            }
            .instrument(log.span()),
        );
        Harness {
            sim,
            proxy,
            addr,
            log,
            store,
            client: Client::builder(TokioExecutor::new()).build_http(),
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sends a request and reads the whole reply.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> Reply {
        let response = self.open(method, path, headers, body).await;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
        }
    }

    /// Sends a request and returns the response with its body unread.
    pub async fn open(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> hyper::Response<hyper::body::Incoming> {
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(self.url(path))
            .header("content-type", "application/json");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        self.client
            .request(builder.body(Full::new(body)).unwrap())
            .await
            .unwrap()
    }

    /// A request to send later (owns everything it needs, so it can be spawned).
    pub fn detached(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: Bytes,
    ) -> impl std::future::Future<Output = Reply> + Send + 'static {
        let client = self.client.clone();
        let mut builder = hyper::Request::builder()
            .method("POST")
            .uri(self.url(path))
            .header("content-type", "application/json");
        for (k, v) in headers {
            builder = builder.header(*k, *v);
        }
        let request = builder.body(Full::new(body)).unwrap();
        async move {
            let (parts, body) = client.request(request).await.unwrap().into_parts();
            let body = body
                .collect()
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            Reply {
                status: parts.status.as_u16(),
                headers: parts.headers,
                body,
            }
        }
    }

    pub async fn post(&self, path: &str, headers: &[(&str, &str)], body: &Value) -> Reply {
        self.send("POST", path, headers, Bytes::from(body.to_string()))
            .await
    }

    pub async fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send("GET", path, headers, Bytes::new()).await
    }

    /// Signals shutdown and waits for the proxy to drain.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.unwrap();
        }
    }

    /// Signals shutdown without waiting.
    pub fn begin_shutdown(&mut self) -> JoinHandle<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.task.take().unwrap()
    }
}

/// The three wire formats, as a client speaks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Chat,
    Responses,
    Anthropic,
}

pub const WIRES: [Wire; 3] = [Wire::Chat, Wire::Responses, Wire::Anthropic];

/// What a client read from one reply.
#[derive(Debug, Default)]
pub struct Turn {
    /// The assistant's turn as it goes back into the history (Chat: one message; Responses: the
    /// output items; Anthropic: one message).
    pub history: Vec<Value>,
    pub text: String,
    /// (call id, tool name, arguments JSON).
    pub calls: Vec<(String, String, String)>,
    /// Error events seen in a stream.
    pub errors: Vec<String>,
    /// Whether the stream ended with its terminal event.
    pub complete: bool,
}

pub const SYSTEM: &str = "You are a careful coding agent. Use the tools to read and fix files.";

impl Wire {
    pub fn path(self) -> &'static str {
        match self {
            Wire::Chat => "/v1/chat/completions",
            Wire::Responses => "/v1/responses",
            Wire::Anthropic => "/v1/messages",
        }
    }

    /// The list the history lives in.
    pub fn list_key(self) -> &'static str {
        match self {
            Wire::Responses => "input",
            _ => "messages",
        }
    }

    /// A first request with a system prompt, one tool and one user message; unknown fields at
    /// the request, message and part level.
    pub fn first_request(self, model: &str, user: &str, stream: bool) -> Value {
        let tool_schema = json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]});
        let mut request = match self {
            Wire::Chat => json!({
                "model": model, "max_tokens": MAX_OUTPUT, "x_client_tag": {"keep": [1, 2]},
                "messages": [{"role": "system", "content": SYSTEM},
                             {"role": "user", "content": [{"type": "text", "text": user, "x_part_note": "kept"}], "x_msg_note": true}],
                "tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": tool_schema}}]
            }),
            Wire::Responses => json!({
                "model": model, "max_output_tokens": MAX_OUTPUT, "instructions": SYSTEM, "store": false,
                "x_client_tag": {"keep": [1, 2]},
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": user, "x_part_note": "kept"}], "x_msg_note": true}],
                "tools": [{"type": "function", "name": "read_file", "description": "Read a file", "parameters": tool_schema}]
            }),
            Wire::Anthropic => json!({
                "model": model, "max_tokens": MAX_OUTPUT, "system": SYSTEM, "x_client_tag": {"keep": [1, 2]},
                "messages": [{"role": "user", "content": [{"type": "text", "text": user, "x_part_note": "kept"}], "x_msg_note": true}],
                "tools": [{"name": "read_file", "description": "Read a file", "input_schema": tool_schema}]
            }),
        };
        if stream {
            request["stream"] = json!(true);
            if self == Wire::Chat {
                request["stream_options"] = json!({"include_usage": true});
            }
        }
        request
    }

    /// Appends the assistant's turn and the results of its tool calls.
    pub fn extend(self, request: &mut Value, turn: &Turn, outputs: &[String]) {
        let list = request[self.list_key()].as_array_mut().unwrap();
        list.extend(turn.history.iter().cloned());
        match self {
            Wire::Chat => {
                for ((id, _, _), out) in turn.calls.iter().zip(outputs) {
                    list.push(json!({"role": "tool", "tool_call_id": id, "content": out}));
                }
            }
            Wire::Responses => {
                for ((id, _, _), out) in turn.calls.iter().zip(outputs) {
                    list.push(
                        json!({"type": "function_call_output", "call_id": id, "output": out}),
                    );
                }
            }
            Wire::Anthropic => {
                let blocks: Vec<Value> = turn
                    .calls
                    .iter()
                    .zip(outputs)
                    .map(|((id, _, _), out)| json!({"type": "tool_result", "tool_use_id": id, "content": out}))
                    .collect();
                list.push(json!({"role": "user", "content": blocks}));
            }
        }
    }

    /// Reads a reply, streamed or not.
    pub fn read(self, stream: bool, body: &[u8]) -> Turn {
        if stream {
            self.read_stream(body)
        } else {
            self.read_whole(&serde_json::from_slice(body).unwrap())
        }
    }

    fn read_whole(self, v: &Value) -> Turn {
        let mut turn = Turn {
            complete: true,
            ..Turn::default()
        };
        match self {
            Wire::Chat => {
                let message = v["choices"][0]["message"].clone();
                turn.text = message["content"].as_str().unwrap_or("").to_owned();
                for c in message["tool_calls"].as_array().into_iter().flatten() {
                    turn.calls.push((
                        c["id"].as_str().unwrap().to_owned(),
                        c["function"]["name"].as_str().unwrap().to_owned(),
                        c["function"]["arguments"].as_str().unwrap().to_owned(),
                    ));
                }
                turn.history.push(message);
            }
            Wire::Responses => {
                for item in v["output"].as_array().unwrap() {
                    match item["type"].as_str() {
                        Some("message") => {
                            for p in item["content"].as_array().into_iter().flatten() {
                                turn.text.push_str(p["text"].as_str().unwrap_or(""));
                            }
                        }
                        Some("function_call") => turn.calls.push((
                            item["call_id"].as_str().unwrap().to_owned(),
                            item["name"].as_str().unwrap().to_owned(),
                            item["arguments"].as_str().unwrap().to_owned(),
                        )),
                        _ => {}
                    }
                    turn.history.push(item.clone());
                }
            }
            Wire::Anthropic => {
                let content = v["content"].clone();
                for b in content.as_array().unwrap() {
                    match b["type"].as_str() {
                        Some("text") => turn.text.push_str(b["text"].as_str().unwrap()),
                        Some("tool_use") => turn.calls.push((
                            b["id"].as_str().unwrap().to_owned(),
                            b["name"].as_str().unwrap().to_owned(),
                            b["input"].to_string(),
                        )),
                        _ => {}
                    }
                }
                turn.history
                    .push(json!({"role": "assistant", "content": content}));
            }
        }
        turn
    }

    fn read_stream(self, body: &[u8]) -> Turn {
        let events = compact_formats::sse::SseParser::default()
            .push(body)
            .into_iter()
            .flatten();
        let mut turn = Turn::default();
        // Chat: text and tool calls by index; Anthropic: blocks by index.
        let mut chat_calls: Vec<(String, String, String)> = Vec::new();
        let mut blocks: Vec<Value> = Vec::new();
        let mut partial: Vec<String> = Vec::new();
        for e in events {
            if e.data == "[DONE]" {
                turn.complete = true;
                continue;
            }
            let v: Value = match serde_json::from_str(&e.data) {
                Ok(v) => v,
                Err(_) => {
                    turn.errors.push(format!("unparsable event: {}", e.data));
                    continue;
                }
            };
            let ty = e
                .event
                .clone()
                .or_else(|| v["type"].as_str().map(str::to_owned))
                .unwrap_or_default();
            if ty == "error" || v.get("error").is_some_and(|x| !x.is_null()) && self == Wire::Chat {
                turn.errors.push(e.data.clone());
                continue;
            }
            match self {
                Wire::Chat => {
                    let delta = &v["choices"][0]["delta"];
                    if let Some(t) = delta["content"].as_str() {
                        turn.text.push_str(t);
                    }
                    for c in delta["tool_calls"].as_array().into_iter().flatten() {
                        let i = c["index"].as_u64().unwrap() as usize;
                        if chat_calls.len() <= i {
                            chat_calls.resize(i + 1, Default::default());
                        }
                        if let Some(id) = c["id"].as_str() {
                            chat_calls[i].0 = id.to_owned();
                        }
                        if let Some(n) = c["function"]["name"].as_str() {
                            chat_calls[i].1 = n.to_owned();
                        }
                        if let Some(a) = c["function"]["arguments"].as_str() {
                            chat_calls[i].2.push_str(a);
                        }
                    }
                }
                Wire::Responses => {
                    if ty == "response.completed" {
                        turn = Turn {
                            errors: std::mem::take(&mut turn.errors),
                            ..self.read_whole(&v["response"])
                        };
                        turn.complete = true;
                    } else if ty == "response.failed" {
                        turn.errors.push(e.data.clone());
                    }
                }
                Wire::Anthropic => match ty.as_str() {
                    "content_block_start" => {
                        blocks.push(v["content_block"].clone());
                        partial.push(String::new());
                    }
                    "content_block_delta" => {
                        let i = v["index"].as_u64().unwrap() as usize;
                        match v["delta"]["type"].as_str() {
                            Some("text_delta") => {
                                let t = v["delta"]["text"].as_str().unwrap();
                                let old = blocks[i]["text"].as_str().unwrap_or("").to_owned();
                                blocks[i]["text"] = json!(old + t);
                            }
                            Some("input_json_delta") => {
                                partial[i].push_str(v["delta"]["partial_json"].as_str().unwrap())
                            }
                            _ => {}
                        }
                    }
                    "content_block_stop" => {
                        let i = v["index"].as_u64().unwrap() as usize;
                        if blocks[i]["type"] == "tool_use" {
                            blocks[i]["input"] = serde_json::from_str(&partial[i]).unwrap();
                        }
                    }
                    "message_stop" => turn.complete = true,
                    _ => {}
                },
            }
        }
        match self {
            Wire::Chat => {
                let mut message = json!({"role": "assistant", "content": turn.text});
                if !chat_calls.is_empty() {
                    message["tool_calls"] = chat_calls
                        .iter()
                        .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
                        .collect();
                }
                turn.calls = chat_calls;
                turn.history.push(message);
            }
            Wire::Anthropic => {
                let v = json!({"content": blocks});
                let whole = self.read_whole(&v);
                turn.text = whole.text;
                turn.calls = whole.calls;
                turn.history = whole.history;
            }
            Wire::Responses => {}
        }
        turn
    }
}

/// A tool output of about `lines` lines naming `file`: realistic enough for the tokenizer.
pub fn tool_output(file: &str, step: usize, lines: usize) -> String {
    (0..lines)
        .map(|i| {
            if i % 17 == 3 {
                format!("{file}:{i}: error[E0308]: mismatched types (step {step})")
            } else {
                format!("{file}:{i}: fn handler_{step}_{i}(req: &Request) -> Result<Response, Error> {{ route(req, {}) }}", i * 7 + step)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Queues the simulator's next reply: some text and one `read_file` call.
pub fn script_tool_call(sim: &SimHandle, step: usize) {
    sim.push_reply(
        ScriptedReply::text(format!("Step {step}: reading the next file."))
            .with_tool_call("read_file", json!({"path": format!("src/file_{step}.rs")})),
    );
}

/// Client-side size of a request, in tokens.
pub fn tokens_of(v: &Value) -> usize {
    Encoding::O200kBase.count(&v.to_string())
}
