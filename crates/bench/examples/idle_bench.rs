//! Idle-time compaction figures for BENCHMARKS.md: the preflight latency an agent waits for, on
//! every call of generated tool-using sessions, with and without idle-time compaction
//! (`CompactManager::idle_compact` run in the quiet time before each call, as the
//! `IdleCompactor` thread does after `policy.idle_delay_ms`), for two summarisers: the
//! deterministic checkpoint (the default) and an LLM summariser over HTTP against the in-process
//! simulator, whose every summary call takes `--model-ms` milliseconds (the simulator's `slow`
//! fault), standing for the model's time to write a summary.
//!
//! `cargo run --release -p compact-bench --example idle_bench -- [--sessions N] [--steps N] [--model-ms MS]`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use compact_core::model::Format;
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::wire;
use compact_llm::{build_without_fallback, ProviderKind, SummarizerConfig};
use compact_session::{CompactManager, IdleOutcome, MemoryStore, SessionConfig};
use compact_sim::{Fault, ScriptedReply, SimConfig, SimHandle, Simulator};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WINDOW: usize = 32_000;

/// One step of a coding session: an assistant tool call and its output (30 to 90 lines), and
/// every fifth step a user message.
fn step(k: usize, seed: usize, messages: &mut Vec<Value>) {
    let id = format!("call_{seed}_{k}");
    let file = format!("src/module_{}.rs", (k * 7 + seed) % 23);
    messages.push(
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": id,
        "type": "function", "function": {"name": "read_file",
        "arguments": json!({"path": file}).to_string()}}]}),
    );
    let lines = 30 + (k * 13 + seed * 5) % 61;
    let body: String = (0..lines)
        .map(|i| {
            format!("    let value_{i} = compute_{k}_{i}(input, {i}); // step {k} of {file}\n")
        })
        .collect();
    messages.push(json!({"role": "tool", "tool_call_id": id, "content": body}));
    if k % 5 == 4 {
        messages.push(json!({"role": "user", "content": format!(
            "Step {k} looks right. Now check how {file} handles an empty input."
        )}));
    }
}

fn summary_text() -> String {
    let line = "- src/module_N.rs: read; compute_* calls checked for empty input.\n";
    format!(
        "## Goal and user requests\n- handle empty input (in progress)\n## Progress\n{}",
        line.repeat(20)
    )
}

/// Latencies of every preflight of `sessions` sessions of `steps` steps, in milliseconds, and the
/// number of compactions in preflights and in idle time.
fn run(
    manager: &CompactManager,
    sim: Option<&SimHandle>,
    model_ms: u64,
    sessions: usize,
    steps: usize,
    idle: bool,
) -> (Vec<f64>, usize, usize) {
    let (mut latencies, mut in_call, mut in_idle) = (Vec::new(), 0, 0);
    // Queued before anything that may summarise: each summary call takes the model's time.
    let prime = |sim: Option<&SimHandle>| {
        if let Some(sim) = sim {
            for _ in 0..16 {
                sim.push_fault(Fault::Slow {
                    delay: Duration::from_millis(model_ms),
                });
                sim.push_reply(ScriptedReply::text(summary_text()));
            }
        }
    };
    for seed in 0..sessions {
        let session = format!("s{seed}");
        let mut messages = vec![
            json!({"role": "system", "content": "You are a coding agent. Keep answers short."}),
            json!({"role": "user", "content": "Make every module handle an empty input."}),
        ];
        for k in 0..steps {
            step(k, seed, &mut messages);
            let request = json!({"model": "gpt-4.1-mini", "messages": messages});
            let conv = wire::decode(Format::OpenAiChat, &request).unwrap();
            prime(sim);
            let started = Instant::now();
            let prepared = manager.preflight(&session, &conv).unwrap();
            latencies.push(started.elapsed().as_secs_f64() * 1_000.0);
            in_call += usize::from(prepared.report.compaction.is_some());
            if let Some(sim) = sim {
                sim.clear();
            }
            if idle {
                // The quiet time between this call and the next (the model answering, the tool
                // running): what the idle compactor does then.
                prime(sim);
                if let IdleOutcome::Compacted { .. } = manager.idle_compact(&session).unwrap() {
                    in_idle += 1;
                }
                if let Some(sim) = sim {
                    sim.clear();
                }
            }
        }
    }
    (latencies, in_call, in_idle)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut sessions, mut steps, mut model_ms) = (6usize, 160usize, 1_500u64);
    while let Some(a) = args.next() {
        let v: u64 = args.next().and_then(|v| v.parse().ok()).expect("a number");
        match a.as_str() {
            "--sessions" => sessions = v as usize,
            "--steps" => steps = v as usize,
            "--model-ms" => model_ms = v,
            other => {
                eprintln!(
                    "idle_bench: unknown argument {other} (--sessions N, --steps N, --model-ms N)"
                );
                std::process::exit(2);
            }
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt
        .block_on(Simulator::spawn(SimConfig::with_window(1_000_000)))
        .unwrap();
    std::env::set_var("COMPACT_BENCH_KEY", "sk-bench");
    println!(
        "| summariser | idle-time compaction | calls | compactions in a call / in idle time | preflight p50 | p90 | p99 | max | calls over 100 ms |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for llm in [false, true] {
        for idle in [false, true] {
            let mut config = SessionConfig::new(
                Policy::for_window(WINDOW),
                TokenCounter::new(Encoding::O200kBase),
            );
            if llm {
                let mut c = SummarizerConfig::new(ProviderKind::OpenAi);
                c.base_url = sim.openai_base_url();
                c.model = "gpt-4.1-mini".to_owned();
                c.api_key_env = "COMPACT_BENCH_KEY".into();
                config = config.with_summarizer(build_without_fallback(c).unwrap());
            }
            let manager = CompactManager::open(config, Arc::new(MemoryStore::new())).unwrap();
            let (mut lat, in_call, in_idle) = run(
                &manager,
                llm.then_some(&sim),
                model_ms,
                sessions,
                steps,
                idle,
            );
            lat.sort_by(f64::total_cmp);
            let slow = lat.iter().filter(|&&l| l > 100.0).count();
            println!(
                "| {} | {} | {} | {in_call} / {in_idle} | {:.2} ms | {:.2} ms | {:.2} ms | {:.0} ms | {slow} |",
                if llm {
                    format!("LLM over HTTP ({model_ms} ms a summary call)")
                } else {
                    "deterministic".to_owned()
                },
                if idle { "on" } else { "off" },
                lat.len(),
                pct(&lat, 0.5),
                pct(&lat, 0.9),
                pct(&lat, 0.99),
                lat.last().unwrap(),
            );
        }
    }
}
