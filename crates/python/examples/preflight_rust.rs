//! The Rust side of `bench/python.sh`: the same preflight the Python binding times, called from
//! Rust on the same wire JSON. Each sample opens its own session, warms it with the history
//! (untimed), then times what a Rust host does for the next call: decode the request (the history
//! plus one new message), `CompactManager::preflight`, and encode the result when it changed (an
//! unchanged request is sent as the host's own bytes).
//!
//! `cargo run --release -p compact-python --example preflight_rust -- SESSION.json SAMPLES`
//! (`SESSION.json`: `{"history": [...], "messages": [[...], ...]}`, Chat Completions messages;
//! bench/python_preflight.py writes it). Prints one JSON line of percentiles in microseconds: wall
//! time and the calling thread's CPU time; and (`kept_cpu_*`) the CPU time of a Rust host that
//! keeps its decoded history between calls (`IncrementalDecode`, as the binding does) and
//! decodes only the new message (the request JSON it keeps, so its freeing is not timed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::model::Format;
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::wire::{decode, encode, IncrementalDecode};
use compact_session::{CompactManager, MemoryStore, SessionConfig};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

/// A window that holds the history without compacting (the steady state is measured).
const WINDOW: usize = 1_000_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let samples: usize = args.get(2).map_or(200, |s| s.parse().unwrap());
    let history = doc["history"].as_array().unwrap().clone();
    let news = doc["messages"].as_array().unwrap();
    let config = SessionConfig::new(
        Policy::for_window(WINDOW),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, Arc::new(MemoryStore::new())).unwrap();
    let request = |messages: Vec<Value>| json!({"model": "gpt-4o", "messages": messages});
    let mut times = Vec::with_capacity(samples);
    let mut cpu = Vec::with_capacity(samples);
    // A Rust host that keeps its decoded history between calls (`IncrementalDecode`, as the
    // binding does per session) and decodes only the new message.
    let mut kept_cpu = Vec::with_capacity(samples);
    for i in 0..samples {
        let session = format!("k{i}");
        let mut decoder = IncrementalDecode::new();
        let warm = request(history.clone());
        manager
            .preflight(
                &session,
                decoder.decode(Format::OpenAiChat, &warm, 0).unwrap(),
            )
            .unwrap();
        let mut messages = history.clone();
        messages.push(news[i % news.len()].clone());
        let value = request(messages);
        let cpu_start = thread_cpu_ns();
        let conversation = decoder
            .decode(Format::OpenAiChat, &value, history.len())
            .unwrap();
        let prepared = manager.preflight(&session, conversation).unwrap();
        let unchanged = prepared.sends_request_as_is(conversation);
        let sent = if unchanged {
            None
        } else {
            Some(
                encode(&prepared.conversation, Format::OpenAiChat)
                    .unwrap()
                    .value,
            )
        };
        drop(prepared);
        kept_cpu.push((thread_cpu_ns() - cpu_start) as f64 / 1e3);
        assert_eq!(decoder.decoded(), 1);
        std::hint::black_box(sent);
    }
    for i in 0..samples {
        let session = format!("s{i}");
        let warm = decode(Format::OpenAiChat, &request(history.clone())).unwrap();
        manager.preflight(&session, &warm).unwrap();
        let mut messages = history.clone();
        messages.push(news[i % news.len()].clone());
        let value = request(messages);
        let start = Instant::now();
        let cpu_start = thread_cpu_ns();
        let conversation = decode(Format::OpenAiChat, &value).unwrap();
        let prepared = manager.preflight(&session, &conversation).unwrap();
        let unchanged = prepared.sends_request_as_is(&conversation);
        let sent = if unchanged {
            None
        } else {
            Some(
                encode(&prepared.conversation, Format::OpenAiChat)
                    .unwrap()
                    .value,
            )
        };
        // The host is done with the request: freeing it is part of the call (the binding pays it).
        drop(prepared);
        drop(conversation);
        drop(value);
        cpu.push((thread_cpu_ns() - cpu_start) as f64 / 1e3);
        times.push(start.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(sent);
    }
    times.sort_by(f64::total_cmp);
    cpu.sort_by(f64::total_cmp);
    kept_cpu.sort_by(f64::total_cmp);
    let at = |v: &[f64], q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{}",
        json!({"side": "rust", "samples": samples,
               "wall_p50_us": at(&times, 0.5), "wall_p90_us": at(&times, 0.9),
               "cpu_p50_us": at(&cpu, 0.5), "cpu_p90_us": at(&cpu, 0.9),
               "kept_cpu_p50_us": at(&kept_cpu, 0.5), "kept_cpu_p90_us": at(&kept_cpu, 0.9)})
    );
}

/// CPU time of the calling thread, in nanoseconds (preemptions on a busy machine do not count).
#[cfg(unix)]
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

#[cfg(not(unix))]
fn thread_cpu_ns() -> u64 {
    0
}
