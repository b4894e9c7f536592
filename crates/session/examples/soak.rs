//! Soak test of the session runtime: many synthetic tool-using sessions, in the three wire formats,
//! each growing to at least [`GROWTH`] times the window, driven call by call through
//! `CompactManager::preflight` (SQLite store) against the provider simulator enforcing the window.
//!
//! Checks, for every call and session: no overflow (or any other error) from the simulator, every
//! request valid by the provider-rules validator (which includes every tool call paired with its
//! result), every item the host sent present in the session log, and the growth itself. Prints
//! sessions per second and the peak resident memory (`VmHWM`), and exits 1 on any failure.
//!
//! `scripts/soak` runs it: `SOAK_SESSIONS` sessions (default 1,000), `SOAK_THREADS` drivers
//! (default 2).
#![allow(clippy::print_stdout)]

use bytes::Bytes;
use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::validate::validate;
use compact_formats::wire::encode;
use compact_session::record::{ItemSource, Record};
use compact_session::{CompactManager, SessionConfig, SqliteStore, Store, Usage};
use compact_sim::{SimConfig, Simulator};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The simulated model's window: small, so that sessions cross it many times.
const WINDOW: usize = 8_192;
/// Output tokens each request asks for (and the policy reserves).
const MAX_OUTPUT: usize = 1_024;
/// Every session's history grows to at least this many windows.
const GROWTH: usize = 3;
/// Sessions when `SOAK_SESSIONS` is not set.
const DEFAULT_SESSIONS: usize = 1_000;
/// The wire formats the sessions take turns in.
const FORMATS: [Format; 3] = [
    Format::OpenAiChat,
    Format::OpenAiResponses,
    Format::Anthropic,
];

type HttpClient = Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>;

/// xorshift64*: deterministic sessions.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

/// What went wrong in one session.
type Failure = String;

struct Driver {
    manager: CompactManager,
    store: Arc<dyn Store>,
    client: HttpClient,
    runtime: tokio::runtime::Handle,
    openai: String,
    anthropic: String,
    counter: TokenCounter,
    sim: compact_sim::SimHandle,
}

impl Driver {
    /// Sends a prepared request to the simulator; the status and body.
    fn send(&self, format: Format, body: &Value) -> Result<(u16, String), Failure> {
        // Any answer but 200 (an overflow above all) fails the session: see `call`.
        let url = match format {
            Format::OpenAiChat => format!("{}/chat/completions", self.openai),
            Format::OpenAiResponses => format!("{}/responses", self.openai),
            _ => format!("{}/v1/messages", self.anthropic),
        };
        let request = hyper::Request::post(url)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        self.runtime.block_on(async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status().as_u16();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
        })
    }

    /// One model call: preflight, validate, send, record usage.
    fn call(&self, id: &str, format: Format, history: &Conversation) -> Result<(), Failure> {
        let prepared = self
            .manager
            .preflight(id, history)
            .map_err(|e| format!("preflight: {e}"))?;
        let encoded = encode(&prepared.conversation, format).map_err(|e| format!("encode: {e}"))?;
        let violations = validate(&encoded.value, format);
        if !violations.is_empty() {
            return Err(format!("invalid {format} request: {violations:?}"));
        }
        let (status, body) = self.send(format, &encoded.value)?;
        if status != 200 {
            return Err(format!(
                "simulator answered {status} ({} tokens sent by our count): {}",
                prepared.report.tokens,
                body.chars().take(300).collect::<String>()
            ));
        }
        let reply: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let usage = &reply["usage"];
        let input = usage["prompt_tokens"]
            .as_u64()
            .or_else(|| usage["input_tokens"].as_u64())
            .unwrap_or(0);
        if input > 0 {
            let usage = Usage {
                input_tokens: input,
                cache_read_input_tokens: usage["cache_read_input_tokens"].as_u64().unwrap_or(0),
                cache_creation_input_tokens: usage["cache_creation_input_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                cached_input_tokens: usage["prompt_tokens_details"]["cached_tokens"]
                    .as_u64()
                    .unwrap_or(0),
                ..Usage::default()
            };
            self.manager
                .record_usage(id, &usage)
                .map_err(|e| format!("record_usage: {e}"))?;
        }
        Ok(())
    }

    /// One whole session; the calls it made.
    fn session(&self, n: usize) -> Result<usize, Failure> {
        let id = format!("soak-{n}");
        let format = FORMATS[n % FORMATS.len()];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (n as u64 + 1));
        let mut history = Conversation {
            format: Some(format),
            ..Conversation::default()
        };
        let model = if format == Format::Anthropic {
            "claude-sonnet-4-5"
        } else {
            "gpt-4o"
        };
        history.extra.insert("model".into(), json!(model));
        let cap = if format == Format::OpenAiResponses {
            "max_output_tokens"
        } else {
            "max_tokens"
        };
        history.extra.insert(cap.into(), json!(MAX_OUTPUT));
        history.push(Item::text(
            Role::System,
            "You are a coding agent working in /work/app. Use the tools; keep answers short.",
        ));
        let mut calls = 0;
        let mut tool = 0;
        let mut turn = 0;
        while self.counter.total(&history) < GROWTH * WINDOW {
            turn += 1;
            history.push(Item::text(
                Role::User,
                format!("Step {turn}: fix the failing test in module {turn} and run the suite."),
            ));
            self.call(&id, format, &history)?;
            calls += 1;
            for _ in 0..1 + rng.below(3) {
                tool += 1;
                let call_id = if format == Format::Anthropic {
                    format!("toolu_{tool:04}")
                } else {
                    format!("call_{tool:04}")
                };
                let path = format!("src/module_{}.rs", rng.below(30));
                let (name, args) = if rng.below(2) == 0 {
                    ("read_file", json!({"path": path}))
                } else {
                    (
                        "bash",
                        json!({"command": format!("cargo test -p m{}", rng.below(9))}),
                    )
                };
                history.push(Item::new(ItemBody::ToolCall(ToolCall::function(
                    &call_id, name, args,
                ))));
                let lines = 10 + rng.below(70) as usize;
                let output: String = (0..lines)
                    .map(|l| {
                        if rng.below(25) == 0 {
                            format!(
                                "error[E0{}]: mismatched types at {path}:{l}\n",
                                rng.below(999)
                            )
                        } else {
                            format!("{path}:{l}: value={} ok\n", rng.below(100_000))
                        }
                    })
                    .collect();
                let output = self
                    .manager
                    .truncate_tool_output(&id, &call_id, &output)
                    .map_err(|e| format!("truncate_tool_output: {e}"))?;
                let mut result = ToolResult::text(&call_id, output);
                result.tool_name = Some(name.to_owned());
                history.push(Item::new(ItemBody::ToolResult(result)));
                self.call(&id, format, &history)?;
                calls += 1;
            }
            history.push(Item::text(
                Role::Assistant,
                format!("Module {turn} is fixed; the suite passes."),
            ));
        }
        // Every item the host sent is in the log.
        let logged: HashSet<String> = self
            .store
            .read(&id, 0)
            .map_err(|e| format!("reading the log: {e}"))?
            .into_iter()
            .filter_map(|s| match s.record {
                Record::Item(r) if r.source == ItemSource::Received => {
                    Some(r.item.meta.id.as_str().to_owned())
                }
                _ => None,
            })
            .collect();
        // The last assistant reply was never sent (no call after it).
        let sent = &history.items[..history.items.len() - 1];
        let missing = sent
            .iter()
            .filter(|i| !logged.contains(i.meta.id.as_str()))
            .count();
        if missing > 0 {
            return Err(format!("{missing} items missing from the session log"));
        }
        // The simulator keeps every request it answered: forget this session's.
        self.sim.clear();
        Ok(calls)
    }
}

/// Peak resident memory in KiB (`VmHWM`), when the system reports it.
fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> std::process::ExitCode {
    let sessions = env_usize("SOAK_SESSIONS", DEFAULT_SESSIONS);
    let threads = env_usize("SOAK_THREADS", 2).max(1);
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    else {
        eprintln!("soak: cannot start a runtime");
        return std::process::ExitCode::FAILURE;
    };
    let Ok(sim) = runtime.block_on(Simulator::spawn(SimConfig::with_window(WINDOW as u64))) else {
        eprintln!("soak: cannot start the simulator");
        return std::process::ExitCode::FAILURE;
    };
    let dir = std::env::temp_dir().join(format!("compact-soak-{}", std::process::id()));
    let store: Arc<dyn Store> = match std::fs::create_dir_all(&dir)
        .map_err(|e| e.to_string())
        .and_then(|()| SqliteStore::open(dir.join("soak.db")).map_err(|e| e.to_string()))
    {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("soak: cannot open the store: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let counter = TokenCounter::new(Encoding::O200kBase);
    let mut policy = Policy::for_window(WINDOW);
    policy.reserved_output_tokens = MAX_OUTPUT;
    let manager =
        match CompactManager::open(SessionConfig::new(policy, counter), Arc::clone(&store)) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("soak: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
    let driver = Driver {
        manager,
        store,
        client: Client::builder(TokioExecutor::new()).build_http(),
        runtime: runtime.handle().clone(),
        openai: sim.openai_base_url(),
        anthropic: sim.base_url(),
        counter,
        sim,
    };
    println!(
        "soak: {sessions} sessions, {threads} threads, window {WINDOW}, each growing to {GROWTH}x the window"
    );
    let next = AtomicUsize::new(0);
    let calls = AtomicUsize::new(0);
    let started = Instant::now();
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut failures = Vec::new();
                    loop {
                        let n = next.fetch_add(1, Ordering::Relaxed);
                        if n >= sessions {
                            return failures;
                        }
                        match driver.session(n) {
                            Ok(c) => {
                                calls.fetch_add(c, Ordering::Relaxed);
                            }
                            Err(e) => failures.push(format!("session soak-{n}: {e}")),
                        }
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                w.join()
                    .unwrap_or_else(|_| vec!["a driver panicked".to_owned()])
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let calls = calls.load(Ordering::Relaxed);
    drop(driver);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "soak: {sessions} sessions, {calls} calls in {elapsed:.1} s: {:.1} sessions/s, {:.0} calls/s; failed sessions: {}; peak memory (VmHWM) {} MiB",
        sessions as f64 / elapsed,
        calls as f64 / elapsed,
        failures.len(),
        peak_kib().map_or_else(|| "?".to_owned(), |k| (k / 1024).to_string())
    );
    if failures.is_empty() {
        println!("soak: ok");
        std::process::ExitCode::SUCCESS
    } else {
        for f in failures.iter().take(20) {
            eprintln!("soak: FAILED {f}");
        }
        eprintln!("soak: {} failed sessions", failures.len());
        std::process::ExitCode::FAILURE
    }
}
