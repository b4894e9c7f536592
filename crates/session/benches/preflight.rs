//! Benchmark: preflight of a 200k-token session after one new 1k-token message, incremental
//! (`CompactManager::preflight`, in-memory and SQLite stores) against the stateless
//! `Compactor::preflight` of the engine, in the same run. Run with
//! `cargo bench -p compact-session --bench preflight`.
//!
//! Every timed call gets a freshly decoded request (as a proxy would: the wire JSON decoded anew, so
//! no item carries a memoised count), holding the same 200k-token history plus a new 1k-token user
//! message. The incremental manager has seen the history before (each sample uses its own session,
//! warmed with the history once, untimed); the stateless compactor sees only the request. The
//! window is large enough that neither compacts: what is measured is the steady state, counting,
//! deciding, normalising and (for the manager) logging.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{block_on, Compactor, DeterministicSummarizer};
use compact_formats::wire::{decode, encode};
use compact_session::{CompactManager, MemoryStore, SessionConfig, SqliteStore, Store};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Samples per variant (p99 is the second slowest of 200).
const SAMPLES: usize = 200;
/// History size.
const HISTORY_TOKENS: usize = 200_000;
/// The new message.
const MESSAGE_TOKENS: usize = 1_000;
/// A window that holds the history without compacting.
const WINDOW: usize = 1_000_000;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

/// A tool-using history of about [`HISTORY_TOKENS`], as Chat Completions JSON.
fn history_json() -> Value {
    let mut conv = Conversation {
        format: Some(Format::OpenAiChat),
        ..Conversation::default()
    };
    conv.extra.insert("model".into(), json!("gpt-4o"));
    conv.push(Item::text(Role::System, "You are a coding agent."));
    let mut n = 0;
    while counter().total(&conv) < HISTORY_TOKENS {
        n += 1;
        conv.push(Item::text(
            Role::User,
            format!("Step {n}: look at module {n}."),
        ));
        let id = format!("call_{n}");
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            &id,
            "read_file",
            json!({"path": format!("src/m{n}.rs")}),
        ))));
        let text: String = (0..120)
            .map(|l| format!("fn item_{n}_{l}(x: u32) -> u32 {{ x * {l} + {n} }}\n"))
            .collect();
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(&id, text))));
        conv.push(Item::text(Role::Assistant, format!("Module {n} is fine.")));
    }
    encode(&conv, Format::OpenAiChat).unwrap().value
}

/// The history plus a new user message of about [`MESSAGE_TOKENS`], `salt` making it unique.
fn with_message(history: &Value, salt: usize) -> Value {
    let mut v = history.clone();
    let words: String = (0..MESSAGE_TOKENS / 2)
        .map(|i| format!("w{} ", (i * 7 + salt) % 1000))
        .collect();
    v["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": words}));
    v
}

fn percentiles(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    let at = |p: f64| d[((d.len() as f64 * p).ceil() as usize).min(d.len()) - 1];
    (at(0.50), at(0.99))
}

fn manager(store: Arc<dyn Store>) -> CompactManager {
    let config = SessionConfig::new(Policy::for_window(WINDOW), counter());
    CompactManager::open(config, store).unwrap()
}

fn incremental(
    name: &str,
    manager: &CompactManager,
    history: &Value,
    requests: &[Value],
) -> (Duration, Duration) {
    for i in 0..SAMPLES {
        let h = decode(Format::OpenAiChat, history).unwrap();
        manager.preflight(&format!("{name}-{i}"), &h).unwrap();
    }
    let mut times = Vec::with_capacity(SAMPLES);
    for (i, r) in requests.iter().enumerate() {
        let request = decode(Format::OpenAiChat, r).unwrap();
        let t = Instant::now();
        let prepared = manager.preflight(&format!("{name}-{i}"), &request).unwrap();
        times.push(t.elapsed());
        assert_eq!(prepared.report.new_items, 1);
        assert!(prepared.report.compaction.is_none());
    }
    percentiles(times)
}

fn main() {
    let history = history_json();
    let tokens = counter().total(&decode(Format::OpenAiChat, &history).unwrap());
    let requests: Vec<Value> = (0..SAMPLES).map(|i| with_message(&history, i)).collect();
    println!("history: {tokens} tokens; {SAMPLES} samples per variant; new message ~{MESSAGE_TOKENS} tokens");

    let compactor = Compactor::new(
        Policy::for_window(WINDOW),
        Arc::new(DeterministicSummarizer),
        counter(),
    )
    .unwrap();
    let mut stateless = Vec::with_capacity(SAMPLES);
    for r in &requests {
        let request = decode(Format::OpenAiChat, r).unwrap();
        let t = Instant::now();
        let out = block_on(compactor.preflight(&request)).unwrap();
        stateless.push(t.elapsed());
        assert!(out.report.is_none());
    }
    let (s50, s99) = percentiles(stateless);
    println!("stateless Compactor::preflight      p50 {s50:>10.3?}  p99 {s99:>10.3?}");

    let memory = manager(Arc::new(MemoryStore::new()));
    let (m50, m99) = incremental("mem", &memory, &history, &requests);
    println!(
        "CompactManager::preflight (memory)  p50 {m50:>10.3?}  p99 {m99:>10.3?}  ({:.0}x faster at p99)",
        s99.as_secs_f64() / m99.as_secs_f64()
    );

    let dir = std::env::temp_dir().join(format!("compact-session-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = manager(Arc::new(SqliteStore::open(dir.join("bench.db")).unwrap()));
    let (q50, q99) = incremental("sql", &sqlite, &history, &requests);
    println!(
        "CompactManager::preflight (sqlite)  p50 {q50:>10.3?}  p99 {q99:>10.3?}  ({:.0}x faster at p99)",
        s99.as_secs_f64() / q99.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
