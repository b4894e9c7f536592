//! Cache-warm summariser figures for BENCHMARKS.md: generated coding sessions grow turn by turn
//! against the in-process simulator (two agent calls a turn), compacted through the compactor with
//! an LLM summariser whenever the request passes the trigger, with each `cache_warm` setting (`auto`,
//! `always`, `off`) and two strategies (`tiered`, which replaces only what it must, and `codex`,
//! which summarises all but the user's messages). Prints the summariser's input tokens, the cached
//! share and the cost at the registry's prices of the summariser model (also the agent's).
//!
//! `cargo run -p compact-bench --example cache_warm_bench`
//!
//! With transcript files (`-- [--window N] FILE...`), real sessions instead: each is imported
//! (lenient) and replayed call by call (a call before each run of assistant-side items, as
//! `compactctl replay` counts them), its request sent to the simulator as the agent's call in the
//! summariser's wire format, and compacted whenever it passes the trigger of an `N`-token window
//! (default 32,000). Prints one row per setting, summed over the files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use compact_core::model::{Conversation, Format};
use compact_core::policy::{Policy, StrategyName};
use compact_core::registry::ModelRegistry;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{Compactor, SummaryUsage};
use compact_formats::wire;
use compact_llm::http::{HeaderSpec, HttpClient, RetryLog};
use compact_llm::{build_without_fallback, CacheWarm, ProviderKind, RetryPolicy, SummarizerConfig};
use compact_sim::{ScriptedReply, SimConfig, SimHandle, Simulator};
use serde_json::{json, Value};
use std::time::Duration;

/// The agent's window: sessions pass its trigger several times.
const AGENT_WINDOW: usize = 64_000;
/// A summary of about 500 tokens, as summariser models write them.
fn summary_text() -> String {
    let line =
        "- src/module_N.rs: trailing-comma parse error fixed; tests in tests/parse.rs pass.\n";
    format!(
        "## Goal and user requests\n- fix parse errors (in progress)\n## Progress\n{}",
        line.repeat(25)
    )
}

/// One turn of a coding session: a request, a tool call, its output, and the agent's conclusion.
fn turn(format: Format, k: usize, seed: usize) -> Vec<Value> {
    let output = format!(
        "running 42 tests\n{}test result: FAILED. 40 passed; 2 failed (run {k})\n",
        format!("test parse::case_{seed}_{k} ... ok\n").repeat(40)
    );
    let ask = format!(
        "Step {k}: check src/module_{k}.rs for the parse error reported in issue #{seed}{k}."
    );
    let done = format!(
        "module_{k}: the parser rejected trailing commas in argument lists; fixed and re-ran. {}",
        "The remaining failures are in unrelated modules. ".repeat(3)
    );
    let id = format!("call_{k}");
    match format {
        Format::Anthropic => vec![
            json!({"role": "user", "content": ask}),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "bash",
                   "input": {"command": "cargo test"}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": output}]}),
            json!({"role": "assistant", "content": done}),
        ],
        _ => vec![
            json!({"role": "user", "content": ask}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function",
                   "function": {"name": "bash", "arguments": "{\"command\":\"cargo test\"}"}}]}),
            json!({"role": "tool", "tool_call_id": id, "content": output}),
            json!({"role": "assistant", "content": done}),
        ],
    }
}

fn opening(format: Format, model: &str) -> Value {
    let system =
        "You are a coding agent working in the repository `parser`. Use the tools to read, \
edit and test code; keep changes small.";
    let schema = json!({"type": "object", "properties": {"command": {"type": "string"}}});
    match format {
        Format::Anthropic => json!({"model": model, "max_tokens": 8192, "system": system,
            "tools": [{"name": "bash", "description": "Run a shell command", "input_schema": schema}],
            "messages": []}),
        _ => json!({"model": model, "max_tokens": 8192,
            "tools": [{"type": "function", "function": {"name": "bash", "description": "Run a shell command", "parameters": schema}}],
            "messages": [{"role": "system", "content": system}]}),
    }
}

async fn agent_call(sim: &SimHandle, http: &HttpClient, kind: ProviderKind, body: &Value) {
    let (url, headers) = match kind {
        ProviderKind::OpenAi => (
            format!("{}/chat/completions", sim.openai_base_url()),
            vec![],
        ),
        _ => (
            format!("{}/v1/messages", sim.base_url()),
            vec![HeaderSpec::Plain("anthropic-version", "2023-06-01".into())],
        ),
    };
    http.post_json(&url, &headers, &body.to_string(), &mut RetryLog::default())
        .await
        .unwrap();
}

/// The agent's wire format, a simulator, an HTTP client for the agent's calls, and a compactor for
/// an agent `window` whose summariser (of `kind`, for `model`, `cache_warm` = `warm`) calls that
/// simulator.
async fn setup(
    kind: ProviderKind,
    model: &str,
    strategy: StrategyName,
    warm: CacheWarm,
    window: usize,
) -> (Format, SimHandle, HttpClient, Compactor) {
    let format = match kind {
        ProviderKind::OpenAi => Format::OpenAiChat,
        _ => Format::Anthropic,
    };
    let sim = Simulator::spawn(SimConfig::with_window(1_000_000))
        .await
        .unwrap();
    let http = HttpClient::new(Duration::from_secs(60), RetryPolicy::default()).unwrap();
    std::env::set_var("COMPACT_BENCH_KEY", "sk-bench");
    let mut c = SummarizerConfig::new(kind);
    c.base_url = match kind {
        ProviderKind::OpenAi => sim.openai_base_url(),
        _ => sim.base_url(),
    };
    c.model = model.to_owned();
    c.api_key_env = "COMPACT_BENCH_KEY".into();
    c.cache_warm = warm;
    let compactor = Compactor::new(
        Policy::for_window(window),
        build_without_fallback(c).unwrap(),
        TokenCounter::new(Encoding::O200kBase),
    )
    .unwrap()
    .with_strategy(strategy);
    (format, sim, http, compactor)
}

/// Runs one session of `turns` turns; returns the summariser usage summed over its compactions.
async fn session(
    kind: ProviderKind,
    model: &str,
    strategy: StrategyName,
    turns: usize,
    seed: usize,
    warm: CacheWarm,
) -> (usize, SummaryUsage) {
    let (format, sim, http, compactor) = setup(kind, model, strategy, warm, AGENT_WINDOW).await;
    let counter = TokenCounter::new(Encoding::O200kBase);
    let trigger = compactor.budget().trigger;
    let mut request = opening(format, model);
    let (mut compactions, mut usage) = (0, SummaryUsage::default());
    let mut answer: Option<Value> = None;
    for k in 0..turns {
        let [ask, call, output, done] = <[Value; 4]>::try_from(turn(format, k, seed)).unwrap();
        // Two agent calls a turn: after the user's request, and after the tool's output. Each
        // request is the previous one plus the model's answer and what followed it.
        let steps = [
            answer.take().into_iter().chain([ask]).collect::<Vec<_>>(),
            vec![call, output],
        ];
        for step in steps {
            request["messages"].as_array_mut().unwrap().extend(step);
            let conv = wire::decode(format, &request).unwrap();
            if counter.total(&conv) > trigger {
                for _ in 0..12 {
                    sim.push_reply(ScriptedReply::text(summary_text()));
                }
                let compacted = compactor.compact(&conv).await.unwrap();
                sim.clear();
                compactions += 1;
                usage = usage.plus(compacted.report.summary_usage);
                request = wire::encode(&compacted.conversation, format).unwrap().value;
            }
            agent_call(&sim, &http, kind, &request).await;
        }
        answer = Some(done);
    }
    (compactions, usage)
}

/// Replays one imported session call by call; returns (compactions, agent calls, summariser usage).
async fn corpus_session(
    kind: ProviderKind,
    model: &str,
    strategy: StrategyName,
    warm: CacheWarm,
    full: &Conversation,
    window: usize,
) -> (usize, usize, SummaryUsage) {
    let (format, sim, http, compactor) = setup(kind, model, strategy, warm, window).await;
    let counter = TokenCounter::new(Encoding::O200kBase);
    let trigger = compactor.budget().trigger;
    let items: Vec<_> = full
        .items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .cloned()
        .collect();
    // The agent's request fields: the summariser reads the cache only for its own model.
    let mut extra = compact_core::model::Extra::new();
    extra.insert("model".into(), json!(model));
    extra.insert("max_tokens".into(), json!(8192));
    let mut request = Conversation {
        items: Vec::new(),
        tools: full.tools.clone(),
        format: Some(format),
        extra,
    };
    let (mut compactions, mut calls, mut usage) = (0, 0, SummaryUsage::default());
    let mut next = 0;
    for point in compact_replay::call_points(&items) {
        for item in &items[next..point] {
            request.push(item.clone());
        }
        next = point;
        if counter.total(&request) > trigger {
            for _ in 0..12 {
                sim.push_reply(ScriptedReply::text(summary_text()));
            }
            let Ok(compacted) = compactor.compact(&request).await else {
                break; // Nothing more to gain (irreducible): the replay of this session ends.
            };
            sim.clear();
            compactions += 1;
            usage = usage.plus(compacted.report.summary_usage);
            request.items = compacted.conversation.items;
        }
        let Ok(encoded) = wire::encode(&request, format) else {
            break;
        };
        agent_call(&sim, &http, kind, &encoded.value).await;
        calls += 1;
    }
    (compactions, calls, usage)
}

/// The rows for real sessions (`files`), at `window`.
async fn corpus(files: &[String], window: usize) {
    let registry = ModelRegistry::builtin();
    let mut sessions = Vec::new();
    for f in files {
        let bytes = std::fs::read(f).unwrap();
        let options = compact_formats::import::ImportOptions {
            format: None,
            mode: compact_formats::import::ImportMode::Lenient,
        };
        match compact_formats::import::import(&bytes, f, &options) {
            Ok(i) => sessions.push(i.conversation),
            Err(e) => eprintln!("skipped {f}: {e}"),
        }
    }
    println!(
        "{} sessions; agent window {window} tokens; the agent's model is the summariser's.\n",
        sessions.len()
    );
    println!("| provider / model | strategy | cache_warm | compactions | agent calls | summariser calls | input tokens | cached | cached share | output tokens | cost (USD) | cost per call (USD) |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (kind, model) in SUMMARISERS {
        let pricing = pricing_of(&registry, model);
        for strategy in [StrategyName::Tiered, StrategyName::Codex] {
            for warm in [CacheWarm::Auto, CacheWarm::Always, CacheWarm::Off] {
                let (mut compactions, mut calls, mut u) = (0, 0, SummaryUsage::default());
                for conv in &sessions {
                    let (c, n, usage) =
                        corpus_session(kind, model, strategy, warm, conv, window).await;
                    compactions += c;
                    calls += n;
                    u = u.plus(usage);
                }
                println!(
                    "| {} / {model} | {} | {warm} | {compactions} | {calls} | {}",
                    kind.name(),
                    strategy.as_str(),
                    usage_columns(&u, &pricing)
                );
            }
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        let mut window = 32_000;
        if let Some(at) = args.iter().position(|a| a == "--window") {
            window = args[at + 1]
                .parse()
                .expect("--window takes a number of tokens");
            args.drain(at..at + 2);
        }
        corpus(&args, window).await;
        return;
    }
    let registry = ModelRegistry::builtin();
    let sessions = [(1, 120), (2, 200), (3, 320)];
    println!(
        "{} sessions of {:?} turns each per row; agent window {AGENT_WINDOW} tokens; the agent's model is the summariser's.\n",
        sessions.len(),
        sessions.iter().map(|s| s.1).collect::<Vec<_>>()
    );
    println!("| provider / model | strategy | cache_warm | compactions | summariser calls | input tokens | cached | cached share | output tokens | cost (USD) | cost per call (USD) |");
    println!("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (kind, model) in SUMMARISERS {
        let pricing = pricing_of(&registry, model);
        for strategy in [StrategyName::Tiered, StrategyName::Codex] {
            for warm in [CacheWarm::Auto, CacheWarm::Always, CacheWarm::Off] {
                let (mut compactions, mut u) = (0, SummaryUsage::default());
                for (seed, turns) in sessions {
                    let (c, usage) = session(kind, model, strategy, turns, seed, warm).await;
                    compactions += c;
                    u = u.plus(usage);
                }
                println!(
                    "| {} / {model} | {} | {warm} | {compactions} | {}",
                    kind.name(),
                    strategy.as_str(),
                    usage_columns(&u, &pricing)
                );
            }
        }
    }
}

/// The summarisers measured (each also the agent's model).
const SUMMARISERS: [(ProviderKind, &str); 2] = [
    (ProviderKind::OpenAi, "gpt-4.1-mini"),
    (ProviderKind::Anthropic, "claude-haiku-4-5"),
];

fn pricing_of(registry: &ModelRegistry, model: &str) -> compact_core::registry::Pricing {
    registry
        .lookup(model)
        .and_then(|m| m.pricing)
        .expect("the registry prices the model")
}

/// The summariser's columns of a row: calls, input, cached, cached share, output, cost and cost
/// per call at `pricing` (uncached input, cached input, output).
fn usage_columns(u: &SummaryUsage, pricing: &compact_core::registry::Pricing) -> String {
    let cost = pricing.cost(
        u.input_tokens - u.cached_input_tokens,
        u.cached_input_tokens,
        0,
        u.output_tokens,
    );
    format!(
        "{} | {} | {} | {:.0}% | {} | {cost:.4} | {:.5} |",
        u.calls,
        u.input_tokens,
        u.cached_input_tokens,
        share(u.cached_input_tokens, u.input_tokens),
        u.output_tokens,
        cost / f64::from(u.calls.max(1)),
    )
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
