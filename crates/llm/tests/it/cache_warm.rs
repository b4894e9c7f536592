//! The cache-warm summariser call through the compactor against the simulator: after the agent's
//! own call, the summariser sends the same request back with its instruction appended and reads
//! most of its input from the prompt cache; with `cache_warm: off`, or when the request does not fit
//! the summariser's window, it sends the fresh (budgeted, map-reduce) prompt, which reads nothing.

use crate::summarize::config;
use compact_core::model::Format;
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{Compaction, Compactor};
use compact_formats::wire;
use compact_llm::http::{HeaderSpec, HttpClient, RetryLog};
use compact_llm::{build_without_fallback, CacheWarm, ProviderKind, RetryPolicy, StreamMode};
use compact_sim::{ScriptedReply, SimConfig, SimHandle, Simulator};
use serde_json::{json, Value};
use std::time::Duration;

/// The agent's (and the summariser's) model: a cache is per model.
const MODEL: &str = "summariser-model";
/// Turns of the generated session (about 250 tokens each).
const TURNS: usize = 60;
/// The agent's window: the session (~17k tokens) must be compacted to fit it.
const AGENT_WINDOW: usize = 16_000;

/// The agent's request for a long coding session, in `format` (Chat or Anthropic Messages).
fn agent_request(format: Format) -> Value {
    let system = "You are a coding agent working in the repository `parser`. Use the tools.";
    let mut messages = Vec::new();
    if format == Format::OpenAiChat {
        messages.push(json!({"role": "system", "content": system}));
    }
    for k in 0..TURNS {
        messages.push(json!({"role": "user", "content": format!(
            "Step {k}: check src/module_{k}.rs for the trailing-comma parse error and fix it."
        )}));
        messages.push(json!({"role": "assistant", "content": format!(
            "module_{k}: {} Fixed in commit c{k:04}.",
            "the parser rejected trailing commas in argument lists here; ".repeat(20)
        )}));
    }
    messages.push(json!({"role": "user", "content": "Now run the whole test suite."}));
    let tools = json!([{"name": "bash", "description": "Run a shell command",
                        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}]);
    match format {
        Format::Anthropic => json!({"model": MODEL, "max_tokens": 4096, "system": system,
                                    "tools": tools, "messages": messages}),
        _ => json!({"model": MODEL, "max_tokens": 4096, "messages": messages,
                    "tools": [{"type": "function", "function": {"name": "bash",
                               "description": "Run a shell command",
                               "parameters": tools[0]["input_schema"].clone()}}]}),
    }
}

/// The agent's own call (it warms the provider's cache for this prefix).
async fn agent_call(sim: &SimHandle, kind: ProviderKind, body: &Value) {
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
    let http = HttpClient::new(Duration::from_secs(5), RetryPolicy::default()).unwrap();
    sim.push_reply(ScriptedReply::text("Running the suite."));
    http.post_json(&url, &headers, &body.to_string(), &mut RetryLog::default())
        .await
        .unwrap();
}

/// Compacts the session after the agent's call, with the summariser configured by `tune`.
async fn compact(
    sim: &SimHandle,
    (kind, format): (ProviderKind, Format),
    strategy: StrategyName,
    tune: impl Fn(&mut compact_llm::SummarizerConfig),
) -> (Compaction, Value) {
    let agent = agent_request(format);
    let conv = wire::decode(format, &agent).unwrap();
    agent_call(sim, kind, &agent).await;
    let mut c = config(kind, sim);
    tune(&mut c);
    for _ in 0..8 {
        sim.push_reply(ScriptedReply::text(
            "## Goal and user requests\n- fix trailing-comma parse errors in src/module_*.rs (done)",
        ));
    }
    let compactor = Compactor::new(
        Policy::for_window(AGENT_WINDOW),
        build_without_fallback(c).unwrap(),
        TokenCounter::new(Encoding::O200kBase),
    )
    .unwrap()
    .with_strategy(strategy);
    let done = compactor.compact(&conv).await.unwrap();
    (done, agent)
}

#[tokio::test]
async fn the_summariser_reads_the_agents_prompt_cache() {
    for (kind, format, stream) in [
        (ProviderKind::OpenAi, Format::OpenAiChat, StreamMode::Off),
        (ProviderKind::Anthropic, Format::Anthropic, StreamMode::On),
    ] {
        let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
        // The default setting, with a strategy that replaces most of the request (Codex's).
        let (done, agent) = compact(&sim, (kind, format), StrategyName::Codex, |c| {
            c.stream = stream
        })
        .await;
        let usage = done.report.summary_usage;
        assert_eq!(done.report.summarizer.as_deref(), Some(kind.name()));
        assert_eq!(usage.calls, 1, "{kind:?}: {:?}", done.report.warnings);
        assert!(
            usage.cached_input_tokens * 100 >= usage.input_tokens * 80,
            "{kind:?}: {usage:?}"
        );
        // The summariser's request is the agent's, byte for byte, with the instruction at the end.
        let sent = sim.requests().last().unwrap().body.clone();
        let (ours, theirs) = (
            sent["messages"].as_array().unwrap(),
            agent["messages"].as_array().unwrap(),
        );
        assert_eq!(sent["tools"].to_string(), agent["tools"].to_string());
        assert_eq!(sent["system"].to_string(), agent["system"].to_string());
        let last = theirs.len() - 1;
        for (a, b) in theirs[..last].iter().zip(ours) {
            assert_eq!(a.to_string(), b.to_string(), "{kind:?}");
        }
        let instruction = match kind {
            ProviderKind::OpenAi => ours.last().unwrap()["content"].clone(),
            _ => ours.last().unwrap()["content"][1]["text"].clone(),
        };
        let instruction = instruction.as_str().unwrap();
        assert!(
            instruction.contains("up to and including message"),
            "{instruction}"
        );
        assert!(
            done.report.to_json()["summary_usage"]["cached_input_tokens"]
                .as_u64()
                .is_some_and(|n| n > 0)
        );
    }
}

#[tokio::test]
async fn switched_off_the_summariser_reads_nothing_cached() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let chat = (ProviderKind::OpenAi, Format::OpenAiChat);
    let (done, _) = compact(&sim, chat, StrategyName::Codex, |c| {
        c.cache_warm = CacheWarm::Off;
    })
    .await;
    let usage = done.report.summary_usage;
    assert!(usage.calls >= 1 && usage.input_tokens > 0);
    assert_eq!(usage.cached_input_tokens, 0, "{usage:?}");
    let sent = sim.requests().last().unwrap().body.clone();
    assert_eq!(sent["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_prefix_too_large_for_the_summariser_uses_the_budgeted_prompt() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let chat = (ProviderKind::OpenAi, Format::OpenAiChat);
    let (done, _) = compact(&sim, chat, StrategyName::Tiered, |c| {
        c.cache_warm = CacheWarm::Always;
        c.context_window = 8_000;
    })
    .await;
    let usage = done.report.summary_usage;
    assert!(usage.calls >= 2, "map-reduce: {usage:?}");
    assert_eq!(usage.cached_input_tokens, 0, "{usage:?}");
    for r in sim.requests().iter().skip(1) {
        let messages = r.body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "a fresh system + user prompt");
        assert!(messages[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You maintain the working memory"));
    }
    assert!(done
        .report
        .warnings
        .iter()
        .any(|w| w.contains("summarising in")));
}

#[tokio::test]
async fn a_tool_call_instead_of_a_summary_falls_back_to_the_fresh_prompt_once() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let agent = agent_request(Format::OpenAiChat);
    let conv = wire::decode(Format::OpenAiChat, &agent).unwrap();
    agent_call(&sim, ProviderKind::OpenAi, &agent).await;
    let mut c = config(ProviderKind::OpenAi, &sim);
    c.cache_warm = CacheWarm::Always;
    sim.push_reply(
        ScriptedReply::text("I will run the tests first.")
            .with_tool_call("bash", json!({"command": "cargo test"})),
    );
    sim.push_reply(ScriptedReply::text("- fixed trailing commas (done)"));
    let compactor = Compactor::new(
        Policy::for_window(AGENT_WINDOW),
        build_without_fallback(c).unwrap(),
        TokenCounter::new(Encoding::O200kBase),
    )
    .unwrap()
    .with_strategy(StrategyName::Tiered);
    let done = compactor.compact(&conv).await.unwrap();
    let usage = done.report.summary_usage;
    assert_eq!(usage.calls, 2, "{:?}", done.report.warnings);
    assert!(usage.cached_input_tokens > 0, "the failed call is counted");
    assert!(done
        .report
        .warnings
        .iter()
        .any(|w| w.contains("cache-warm call gave no summary")));
    assert_eq!(done.report.summarizer.as_deref(), Some("openai"));
}

/// Through the session runtime: an agent's conversation grows call by call through
/// `CompactManager::preflight`, each prepared request goes to the simulator as the agent's call,
/// and when a preflight compacts, its summariser (the agent's model, `cache_warm` at its default)
/// sends back the request the model last saw and reads most of it from the cache that call warmed.
#[test]
fn through_the_session_runtime_the_summariser_reads_the_cache_the_agents_calls_warmed() {
    use compact_session::event::EventKind;
    use compact_session::{CompactManager, MemoryStore, SessionConfig, Store};
    use std::sync::Arc;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sim = rt.block_on(Simulator::spawn(SimConfig::default())).unwrap();
    let c = config(ProviderKind::OpenAi, &sim);
    assert_eq!(c.cache_warm, CacheWarm::Auto);
    let mut policy = Policy::for_window(AGENT_WINDOW);
    policy.strategy = StrategyName::Codex;
    let session = SessionConfig::new(policy, TokenCounter::new(Encoding::O200kBase))
        .with_summarizer(build_without_fallback(c).unwrap());
    let store = Arc::new(MemoryStore::new());
    let manager = CompactManager::open(session, store.clone()).unwrap();

    let full = wire::decode(Format::OpenAiChat, &agent_request(Format::OpenAiChat)).unwrap();
    let mut conv = compact_core::model::Conversation {
        items: Vec::new(),
        ..full.clone()
    };
    let mut compacted = 0;
    for item in full.items {
        let opens_call = item.role() == compact_core::model::Role::User;
        conv.push(item);
        if !opens_call {
            continue;
        }
        // The agent calls the model with what the runtime prepared (preflight runs on this
        // thread, outside the runtime: the summariser brings its own for its call).
        let prepared = manager.preflight("warm", &conv).unwrap();
        if prepared.report.compaction.is_some() {
            compacted += 1;
        }
        let mut body = wire::encode(&prepared.conversation, Format::OpenAiChat)
            .unwrap()
            .value;
        body["model"] = json!(MODEL);
        rt.block_on(agent_call(&sim, ProviderKind::OpenAi, &body));
    }
    assert!(compacted >= 1, "the session outgrows the window");
    let summaries: Vec<(u64, u64)> = store
        .read("warm", 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            compact_session::record::Record::Event(e) if e.kind == EventKind::SummaryCreated => {
                Some((
                    e.get("summarizer_input_tokens")?.as_u64()?,
                    e.get("summarizer_cached_input_tokens")?.as_u64()?,
                ))
            }
            _ => None,
        })
        .collect();
    assert_eq!(summaries.len(), compacted, "{summaries:?}");
    for (input, cached) in &summaries {
        assert!(
            cached * 100 >= input * 80,
            "the summariser read its input from the agent's cache: {summaries:?}"
        );
    }
}
