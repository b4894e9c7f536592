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
//!
//! A second part drives one session call after call (each call resends the grown history plus one
//! new 1k-token message), and a third times the decoding of the request, which the caller pays
//! before any preflight (it includes the wire fingerprints the manager compares).
//!
//! Every figure is given twice: wall time, and the CPU time of the calling thread
//! (`CLOCK_THREAD_CPUTIME_ID`), which a busy machine's preemptions do not inflate.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{counter, history_json, thread_cpu, with_message};
use compact_core::model::Format;
use compact_core::policy::Policy;
use compact_engine::{block_on, Compactor, DeterministicSummarizer};
use compact_formats::wire::decode;
use compact_session::{CompactManager, MemoryStore, SessionConfig, SqliteStore, Store};
use serde_json::Value;
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

fn percentiles(mut d: Vec<Duration>) -> (Duration, Duration) {
    d.sort();
    let at = |p: f64| d[((d.len() as f64 * p).ceil() as usize).min(d.len()) - 1];
    (at(0.50), at(0.99))
}

/// Wall and CPU times of a series of calls.
#[derive(Default)]
struct Times {
    wall: Vec<Duration>,
    cpu: Vec<Duration>,
}

impl Times {
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let c = thread_cpu();
        let t = Instant::now();
        let out = f();
        self.wall.push(t.elapsed());
        if let (Some(a), Some(b)) = (c, thread_cpu()) {
            self.cpu.push(b.saturating_sub(a));
        }
        out
    }

    /// p99 of wall time.
    fn p99(&self) -> Duration {
        percentiles(self.wall.clone()).1
    }

    fn print(&self, name: &str, baseline: Option<&Times>) {
        let (w50, w99) = percentiles(self.wall.clone());
        let mut line = format!("{name:<44} wall p50 {w50:>10.3?}  p99 {w99:>10.3?}");
        if !self.cpu.is_empty() {
            let (c50, c99) = percentiles(self.cpu.clone());
            line += &format!("   cpu p50 {c50:>10.3?}  p99 {c99:>10.3?}");
        }
        if let Some(b) = baseline {
            line += &format!(
                "   ({:.0}x faster at wall p99)",
                b.p99().as_secs_f64() / w99.as_secs_f64()
            );
        }
        println!("{line}");
    }
}

fn manager(store: Arc<dyn Store>) -> CompactManager {
    let config = SessionConfig::new(Policy::for_window(WINDOW), counter());
    CompactManager::open(config, store).unwrap()
}

/// The same with structured fact memory on (candidates read from every new item, the block kept).
fn manager_with_memory(store: Arc<dyn Store>) -> CompactManager {
    let config = SessionConfig::new(Policy::for_window(WINDOW), counter())
        .with_memory(Some(compact_session::MemoryConfig::default()));
    CompactManager::open(config, store).unwrap()
}

fn incremental(name: &str, manager: &CompactManager, history: &Value, requests: &[Value]) -> Times {
    for i in 0..SAMPLES {
        let h = decode(Format::OpenAiChat, history).unwrap();
        manager.preflight(&format!("{name}-{i}"), &h).unwrap();
    }
    let mut times = Times::default();
    for (i, r) in requests.iter().enumerate() {
        let request = decode(Format::OpenAiChat, r).unwrap();
        let session = format!("{name}-{i}");
        let prepared = times.time(|| manager.preflight(&session, &request).unwrap());
        assert_eq!(prepared.report.new_items, 1);
        assert!(prepared.report.compaction.is_none());
    }
    times
}

/// One session driven call after call: each request is the last one plus a new message.
fn growing(manager: &CompactManager, history: &Value) -> Times {
    let first = decode(Format::OpenAiChat, history).unwrap();
    manager.preflight("growing", &first).unwrap();
    let mut request = history.clone();
    let mut times = Times::default();
    for i in 0..SAMPLES {
        request = with_message(&request, i, MESSAGE_TOKENS);
        let decoded = decode(Format::OpenAiChat, &request).unwrap();
        let prepared = times.time(|| manager.preflight("growing", &decoded).unwrap());
        assert_eq!(prepared.report.new_items, 1);
        // With fact memory on, the view also holds the memory block.
        assert!(prepared.report.reused_items >= first.len() + i);
    }
    times
}

fn main() {
    let history = history_json(HISTORY_TOKENS, 120);
    let tokens = counter().total(&decode(Format::OpenAiChat, &history).unwrap());
    let requests: Vec<Value> = (0..SAMPLES)
        .map(|i| with_message(&history, i, MESSAGE_TOKENS))
        .collect();
    println!("history: {tokens} tokens; {SAMPLES} samples per variant; new message ~{MESSAGE_TOKENS} tokens");

    let compactor = Compactor::new(
        Policy::for_window(WINDOW),
        Arc::new(DeterministicSummarizer),
        counter(),
    )
    .unwrap();
    let mut stateless = Times::default();
    for r in &requests {
        let request = decode(Format::OpenAiChat, r).unwrap();
        let out = stateless.time(|| block_on(compactor.preflight(&request)).unwrap());
        assert!(out.report.is_none());
    }
    stateless.print("stateless Compactor::preflight", None);

    let dir = std::env::temp_dir().join(format!("compact-session-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let memory = manager(Arc::new(MemoryStore::new()));
    incremental("mem", &memory, &history, &requests)
        .print("CompactManager::preflight (memory)", Some(&stateless));
    let sqlite = manager(Arc::new(SqliteStore::open(dir.join("bench.db")).unwrap()));
    incremental("sql", &sqlite, &history, &requests)
        .print("CompactManager::preflight (sqlite)", Some(&stateless));
    growing(&memory, &history).print("  one growing session (memory)", Some(&stateless));
    let facts = manager_with_memory(Arc::new(MemoryStore::new()));
    incremental("facts", &facts, &history, &requests).print(
        "CompactManager::preflight (memory, fact memory on)",
        Some(&stateless),
    );
    growing(&facts, &history).print(
        "  one growing session (memory, fact memory on)",
        Some(&stateless),
    );
    growing(&sqlite, &history).print("  one growing session (sqlite)", Some(&stateless));

    let mut decoding = Times::default();
    for r in &requests {
        let conv = decoding.time(|| decode(Format::OpenAiChat, r).unwrap());
        assert!(conv.items.iter().all(|i| i.wire_digest().is_some()));
    }
    decoding.print("decode of the request (paid by the caller)", None);
    let _ = std::fs::remove_dir_all(&dir);
}
