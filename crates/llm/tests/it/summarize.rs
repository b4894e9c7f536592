//! End-to-end summarisation through both backends against the in-process simulator: happy paths
//! (JSON and streaming), the fault matrix, the chunked (map-reduce) path, the overflow steps, the
//! refusal retry, fallbacks, and plan mode.

use compact_core::model::{
    Arguments, Checkpoint, Conversation, Extra, Item, ItemBody, Part, Role, ToolCall, ToolCallKind,
    ToolResult,
};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{SummarizeError, Summarizer, SummaryRequest};
use compact_llm::{
    build, build_without_fallback, InputLimits, ProviderKind, RetryPolicy, StreamMode,
    SummarizerConfig, Template,
};
use compact_sim::{Fault, ScriptedReply, SimConfig, SimHandle, Simulator};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const KEY_ENV: &str = "COMPACT_LLM_TEST_API_KEY";
const KEY: &str = "sk-test-not-a-real-key";

fn call(id: &str, name: &str, args: serde_json::Value) -> Item {
    Item::new(ItemBody::ToolCall(ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: Arguments::Json(args),
        kind: ToolCallKind::Function,
        extra: Extra::new(),
    }))
}

fn result(id: &str, name: &str, text: &str, is_error: bool) -> Item {
    Item::new(ItemBody::ToolResult(ToolResult {
        call_id: id.into(),
        tool_name: Some(name.into()),
        parts: vec![Part::text(text)],
        is_error,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Extra::new(),
    }))
}

/// A small coding session: four turns, a failed build, file paths and a URL.
pub(crate) fn session() -> Conversation {
    let mut c = Conversation::default();
    c.push(Item::text(
        Role::User,
        "Fix the failing test in src/parser.rs; keep the public API unchanged.",
    ));
    c.push(call("c1", "read_file", json!({"path": "src/parser.rs"})));
    c.push(result(
        "c1",
        "read_file",
        "fn parse(input: &str) -> Result<Ast, Error> { todo!() }",
        false,
    ));
    c.push(Item::text(
        Role::Assistant,
        "The parser is unimplemented; I will implement it.",
    ));
    c.push(Item::text(Role::User, "Try building first."));
    c.push(call("c2", "bash", json!({"command": "cargo build"})));
    c.push(result(
        "c2",
        "bash",
        "error[E0425]: cannot find value `tokens` in this scope\nbuild failed",
        true,
    ));
    c.push(Item::text(
        Role::User,
        "Check the docs at https://docs.rs/nom/latest/nom/ for combinators.",
    ));
    c.push(Item::text(Role::Assistant, "Noted."));
    c.push(Item::text(Role::User, "Thanks, carry on."));
    c.push(Item::text(Role::Assistant, "Continuing."));
    c
}

pub(crate) fn request<'a>(items: &'a [Item], max_tokens: usize) -> SummaryRequest<'a> {
    SummaryRequest {
        items,
        previous: None,
        max_tokens,
        counter: TokenCounter::new(Encoding::O200kBase),
        also_preserve: None,
        prefix: None,
    }
}

pub(crate) fn config(kind: ProviderKind, sim: &SimHandle) -> SummarizerConfig {
    std::env::set_var(KEY_ENV, KEY);
    let mut c = SummarizerConfig::new(kind);
    c.base_url = match kind {
        ProviderKind::OpenAi => sim.openai_base_url(),
        ProviderKind::Anthropic | ProviderKind::AnthropicCompaction => sim.base_url(),
    };
    c.model = "summariser-model".into();
    c.api_key_env = KEY_ENV.into();
    c.timeout = Duration::from_secs(5);
    c.retries = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(20),
        retry_after_cap: Duration::from_secs(2),
    };
    c.safety_margin = 0;
    c
}

fn summarizer(c: SummarizerConfig) -> Arc<dyn Summarizer> {
    build(c).unwrap()
}

#[tokio::test]
async fn openai_end_to_end() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_reply(ScriptedReply::text(
        "## Goal and user requests\n- fix the failing test (in progress)",
    ));
    let conv = session();
    let s = summarizer(config(ProviderKind::OpenAi, &sim));
    let summary = s.summarize(request(&conv.items, 500)).await.unwrap();
    assert_eq!(summary.produced_by, "openai");
    assert!(summary.text.starts_with(compact_llm::RECORD_HEADER));
    assert!(summary.text.contains("fix the failing test (in progress)"));
    assert!(summary.warnings.is_empty(), "{:?}", summary.warnings);
    let recs = sim.requests();
    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(r.body["model"], "summariser-model");
    assert_eq!(r.body["temperature"], 0.0);
    assert_eq!(r.body["seed"], 7);
    assert_eq!(r.body["max_tokens"], 500);
    let user = r.body["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("[tool result bash id=c2 ERROR]") && user.contains("src/parser.rs"));
    // The summary reports the provider's own usage.
    assert_eq!(summary.usage.calls, 1);
    assert_eq!(Some(summary.usage.input_tokens), r.input_tokens);
    assert!(summary.usage.output_tokens > 0);
}

#[tokio::test]
async fn anthropic_end_to_end_and_streaming() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_reply(ScriptedReply::text("- record from claude"));
    let conv = session();
    let s = summarizer(config(ProviderKind::Anthropic, &sim));
    let summary = s.summarize(request(&conv.items, 400)).await.unwrap();
    assert_eq!(summary.produced_by, "anthropic");
    assert!(summary.text.contains("record from claude"));
    let r = &sim.requests()[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert!(r.body.get("seed").is_none());
    assert_eq!(r.body["max_tokens"], 400);
    assert_eq!(Some(summary.usage.input_tokens), r.input_tokens);

    for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
        sim.push_reply(ScriptedReply::text(
            "streamed record with several words in it",
        ));
        let mut c = config(kind, &sim);
        c.stream = StreamMode::On;
        let summary = summarizer(c)
            .summarize(request(&conv.items, 400))
            .await
            .unwrap();
        assert!(
            summary
                .text
                .ends_with("streamed record with several words in it"),
            "{kind:?}: {}",
            summary.text
        );
        assert!(
            summary.usage.input_tokens > 0 && summary.usage.output_tokens > 0,
            "{kind:?}"
        );
        assert!(sim.requests().last().unwrap().stream);
    }
}

#[tokio::test]
async fn fault_matrix() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let conv = session();

    // 429 with Retry-After: honoured (the wait is the server's, not the tiny backoff).
    sim.push_fault(Fault::RateLimit {
        retry_after: Duration::from_secs(1),
    });
    let s = summarizer(config(ProviderKind::OpenAi, &sim));
    let summary = s.summarize(request(&conv.items, 300)).await.unwrap();
    assert_eq!(summary.produced_by, "openai");
    assert_eq!(summary.usage.calls, 2);
    assert!(
        summary
            .warnings
            .iter()
            .any(|w| w.contains("HTTP 429") && w.contains("retrying in 1000 ms")),
        "{:?}",
        summary.warnings
    );

    // 500, then a connection reset: both retried.
    for fault in [Fault::ServerError, Fault::Reset] {
        sim.clear();
        sim.push_fault(fault.clone());
        let summary = s.summarize(request(&conv.items, 300)).await.unwrap();
        assert_eq!(summary.produced_by, "openai", "{fault:?}");
        assert_eq!(sim.requests().len(), 2, "{fault:?}");
        assert_eq!(summary.usage.calls, 2);
    }

    // Malformed JSON: a typed error without fallback, the deterministic checkpoint with it; never retried.
    sim.clear();
    sim.push_fault(Fault::MalformedJson);
    let strict = build_without_fallback(config(ProviderKind::OpenAi, &sim)).unwrap();
    let err = strict
        .summarize(request(&conv.items, 300))
        .await
        .unwrap_err();
    assert!(
        matches!(err.cause(), SummarizeError::Transport(m) if m.contains("malformed")),
        "{err}"
    );
    assert_eq!(sim.requests().len(), 1);
    // The failed call is counted in the error, so a caller that falls back can report it.
    assert_eq!(err.usage().calls, 1, "{err:?}");
    sim.push_fault(Fault::MalformedJson);
    let summary = s.summarize(request(&conv.items, 300)).await.unwrap();
    assert_eq!(summary.produced_by, "deterministic");
    assert!(summary
        .warnings
        .iter()
        .any(|w| w.contains("fell back to the deterministic summariser")));

    // A stream cut mid-way is detected and retried.
    sim.clear();
    sim.push_reply(ScriptedReply::text(
        "this reply is long enough to be cut into several stream events",
    ));
    sim.push_fault(Fault::StreamCut { after_events: 2 });
    sim.push_reply(ScriptedReply::text("complete record"));
    let mut streaming = config(ProviderKind::Anthropic, &sim);
    streaming.stream = StreamMode::On;
    let summary = summarizer(streaming)
        .summarize(request(&conv.items, 300))
        .await
        .unwrap();
    assert!(
        summary.text.ends_with("complete record"),
        "{}",
        summary.text
    );
    assert_eq!(sim.requests().len(), 2);

    // A slow response times out; without retries and fallback that is a transport error.
    sim.clear();
    sim.push_fault(Fault::Slow {
        delay: Duration::from_millis(1_500),
    });
    let mut slow = config(ProviderKind::OpenAi, &sim);
    slow.timeout = Duration::from_millis(150);
    slow.retries = RetryPolicy::none();
    let err = build_without_fallback(slow)
        .unwrap()
        .summarize(request(&conv.items, 300))
        .await
        .unwrap_err();
    assert!(
        matches!(err.cause(), SummarizeError::Transport(m) if m.contains("timed out")),
        "{err}"
    );

    // Retries run out on persistent 500s: fallback with a warning; the history is untouched (the
    // summariser only returns a value).
    sim.clear();
    for _ in 0..4 {
        sim.push_fault(Fault::ServerError);
    }
    let before = conv.clone();
    let summary = s.summarize(request(&conv.items, 300)).await.unwrap();
    assert_eq!(summary.produced_by, "deterministic");
    assert_eq!(sim.requests().len(), 4);
    assert_eq!(conv, before);
}

/// A long session: 60 tool results of ~400 tokens each.
fn long_session() -> Conversation {
    let mut c = Conversation::default();
    c.push(Item::text(
        Role::User,
        "Audit every module under src/ for unsafe code.",
    ));
    for i in 0..60 {
        c.push(call(
            &format!("c{i}"),
            "read_file",
            json!({"path": format!("src/module_{i}.rs")}),
        ));
        let body: String = (0..80)
            .map(|l| format!("line {l} of module {i} "))
            .collect::<Vec<_>>()
            .join("\n");
        c.push(result(&format!("c{i}"), "read_file", &body, false));
    }
    c.push(Item::text(Role::Assistant, "All modules read."));
    c
}

#[tokio::test]
async fn chunked_summarisation_never_overflows() {
    const WINDOW: u64 = 2_500;
    let sim = Simulator::spawn(SimConfig::with_window(WINDOW))
        .await
        .unwrap();
    let conv = long_session();
    let mut c = config(ProviderKind::OpenAi, &sim);
    c.context_window = WINDOW as usize;
    let summary = summarizer(c)
        .summarize(request(&conv.items, 300))
        .await
        .unwrap();
    assert_eq!(summary.produced_by, "openai", "{:?}", summary.warnings);
    let recs = sim.requests();
    assert!(
        recs.len() > 3,
        "expected map-reduce, got {} requests",
        recs.len()
    );
    for r in &recs {
        assert_eq!(r.status, 200, "request {} was rejected", r.seq);
        assert!(
            r.input_tokens.unwrap() + r.max_output.unwrap() <= WINDOW,
            "request {} needs {} + {}",
            r.seq,
            r.input_tokens.unwrap(),
            r.max_output.unwrap()
        );
    }
    let last = recs.last().unwrap();
    assert!(last.body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("records of consecutive parts"));
    assert!(summary.warnings.iter().any(|w| w.contains("chunks")));
    assert_eq!(summary.usage.calls as usize, recs.len());
}

#[tokio::test]
async fn overflow_steps_remove_tool_outputs_middle_out() {
    // The summariser believes the window is large; the provider's is smaller: only removing tool
    // outputs makes the call fit.
    let conv = long_session();
    let items = &conv.items[..21]; // ten tool pairs of ~400 tokens
    let sim = Simulator::spawn(SimConfig::with_window(4_500))
        .await
        .unwrap();
    let mut c = config(ProviderKind::OpenAi, &sim);
    c.context_window = 100_000;
    let summary = summarizer(c.clone())
        .summarize(request(items, 300))
        .await
        .unwrap();
    assert_eq!(summary.produced_by, "openai", "{:?}", summary.warnings);
    let recs = sim.requests();
    let statuses: Vec<u16> = recs.iter().map(|r| r.status).collect();
    // 0, 10 and 20 % removed still overflow; 50 % fits.
    assert_eq!(statuses, vec![400, 400, 400, 200]);
    let steps: Vec<&String> = summary
        .warnings
        .iter()
        .filter(|w| w.contains("context overflow with"))
        .collect();
    assert_eq!(steps.len(), 3);
    assert!(
        steps[0].contains("with 0% of tool outputs removed")
            && steps[2].contains("with 20% of tool outputs removed"),
        "{steps:?}"
    );
    let sent = recs.last().unwrap().body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        sent.matches(compact_llm::input::REMOVED_TOOL_OUTPUT)
            .count(),
        5
    );
    // Middle-out: the oldest and newest outputs survive, the middle ones go.
    for kept in [0, 1, 7, 8, 9] {
        assert!(
            sent.contains(&format!("of module {kept} ")),
            "module {kept} should survive"
        );
    }
    for removed in [2, 3, 4, 5, 6] {
        assert!(
            !sent.contains(&format!("of module {removed} ")),
            "module {removed} should be removed"
        );
    }

    // Even with every tool output removed the call does not fit: fall back.
    sim.clear();
    sim.set_window(50);
    let summary = summarizer(c).summarize(request(items, 300)).await.unwrap();
    assert_eq!(summary.produced_by, "deterministic");
    assert_eq!(sim.requests().len(), compact_llm::OVERFLOW_STEPS.len());
    assert!(summary
        .warnings
        .iter()
        .any(|w| w.contains("100% of tool outputs removed")));
}

#[tokio::test]
async fn refusal_retries_with_brief_then_falls_back() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let conv = session();
    let s = summarizer(config(ProviderKind::OpenAi, &sim));
    sim.push_reply(ScriptedReply::text(
        "I'm sorry, but I can't help with that.",
    ));
    sim.push_reply(ScriptedReply::text("- brief record"));
    let summary = s.summarize(request(&conv.items, 300)).await.unwrap();
    assert!(summary.text.ends_with("- brief record"));
    assert!(summary
        .warnings
        .iter()
        .any(|w| w.contains("retrying once with the brief template")));
    let recs = sim.requests();
    assert!(recs[1].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("at most ten bullets"));

    sim.clear();
    sim.push_reply(ScriptedReply::text(""));
    sim.push_reply(ScriptedReply::text("I cannot do that."));
    let summary = s.summarize(request(&conv.items, 300)).await.unwrap();
    assert_eq!(summary.produced_by, "deterministic");
    assert!(summary.warnings.iter().any(|w| w.contains("fell back")));
    assert_eq!(summary.usage.calls, 2);
}

#[tokio::test]
async fn also_preserve_and_prompt_file() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let conv = session();
    let dir = std::env::temp_dir().join(format!("compact-llm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("prompt.txt");
    std::fs::write(&file, "CUSTOM PROMPT: list the files only.").unwrap();
    let mut c = config(ProviderKind::OpenAi, &sim);
    c.prompt_file = Some(file);
    c.limits = InputLimits {
        tool_output_chars: 10,
        ..InputLimits::default()
    };
    let s = summarizer(c);
    let mut req = request(&conv.items, 300);
    req.also_preserve = Some("the exact compiler error codes");
    let earlier = Checkpoint {
        text: "EARLIER RECORD: the lexer was rewritten.".into(),
        generation: 1,
        ..Checkpoint::default()
    };
    req.previous = Some(&earlier);
    s.summarize(req).await.unwrap();
    let r = &sim.requests()[0];
    let system = r.body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("CUSTOM PROMPT") && !system.contains("## Goal and user requests"));
    assert!(system.contains("the exact compiler error codes"));
    let user = r.body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("chars omitted"),
        "tool outputs are truncated to the limit"
    );
    assert!(user.contains(
        "[earlier record, to be folded into the new one]\nEARLIER RECORD: the lexer was rewritten."
    ));
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn plan_mode_enforces_never_drop_rules() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let conv = session();
    let mut c = config(ProviderKind::OpenAi, &sim);
    c.template = Template::Plan;
    let s = summarizer(c);
    // t1 holds the failed build, t2 the docs URL: the model drops both.
    let plan = json!({
        "turns": [
            {"turnId": "t0", "strategy": "keep", "relevanceScore": 0.9, "reason": "the task"},
            {"turnId": "t1", "strategy": "drop", "relevanceScore": 0.1, "reason": "noise"},
            {"turnId": "t2", "strategy": "DROP", "relevanceScore": 0.2, "reason": "noise"},
            {"turnId": "t3", "strategy": "drop", "relevanceScore": 0.0, "reason": "chit-chat"}
        ],
        "extractedFacts": [{"type": "constraint", "content": "public API must not change", "source": "t0"}],
        "estimatedTokens": 300
    });
    sim.push_reply(ScriptedReply::text(format!("```json\n{plan}\n```")));
    let summary = s.summarize(request(&conv.items, 2_000)).await.unwrap();
    assert_eq!(summary.produced_by, "openai", "{:?}", summary.warnings);
    let t = &summary.text;
    assert!(t.contains("public API must not change"));
    assert!(t.contains("error[E0425]"), "failed approach kept: {t}");
    assert!(t.contains("https://docs.rs/nom/latest/nom/") && t.contains("src/parser.rs"));
    assert!(t.contains("### t0 (kept)") && t.contains("Fix the failing test"));
    assert!(t.contains("Dropped turns (no lasting value): t3"));
    assert!(summary
        .warnings
        .iter()
        .any(|w| w.contains("turn t1") && w.contains("failed approach")));
    assert!(summary
        .warnings
        .iter()
        .any(|w| w.contains("turn t2") && w.contains("paths or URLs")));

    // Invalid plans fall back to the deterministic checkpoint.
    for bad in [
        "not json at all",
        r#"{"turns": [{"turnId": "t9", "strategy": "keep", "relevanceScore": 1}]}"#,
    ] {
        sim.push_reply(ScriptedReply::text(bad));
        let summary = s.summarize(request(&conv.items, 2_000)).await.unwrap();
        assert_eq!(summary.produced_by, "deterministic", "{bad}");
        assert!(
            summary.warnings.iter().any(|w| w.contains("plan")),
            "{:?}",
            summary.warnings
        );
    }
}

#[tokio::test]
async fn provider_window_is_learned_after_the_steps() {
    // Configured for 100k tokens, the provider has 2,000: every tool-output step overflows, then the
    // summariser plans again with the window the provider named and map-reduces within it.
    const WINDOW: u64 = 2_000;
    let sim = Simulator::spawn(SimConfig::with_window(WINDOW))
        .await
        .unwrap();
    let conv = long_session();
    let mut c = config(ProviderKind::Anthropic, &sim);
    c.context_window = 100_000;
    let summary = summarizer(c)
        .summarize(request(&conv.items, 300))
        .await
        .unwrap();
    assert_eq!(summary.produced_by, "anthropic", "{:?}", summary.warnings);
    assert!(summary
        .warnings
        .iter()
        .any(|w| w.contains("the provider's window is 2000 tokens")));
    let recs = sim.requests();
    let steps = compact_llm::OVERFLOW_STEPS.len();
    assert!(recs[..steps].iter().all(|r| r.status == 400));
    assert!(recs.len() > steps + 2);
    for r in &recs[steps..] {
        assert_eq!(r.status, 200, "request {}", r.seq);
        assert!(r.input_tokens.unwrap() + r.max_output.unwrap() <= WINDOW);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn works_without_a_tokio_runtime_in_the_caller() {
    // The engine drives summarisers with a std-only `block_on`: the summariser must bring its own
    // reactor when it finds none.
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    sim.push_reply(ScriptedReply::text("record made off-runtime"));
    let s = summarizer(config(ProviderKind::OpenAi, &sim));
    let summary = std::thread::spawn(move || {
        let conv = session();
        compact_engine::block_on(s.summarize(request(&conv.items, 300)))
    })
    .join()
    .unwrap()
    .unwrap();
    assert!(summary.text.ends_with("record made off-runtime"));
    assert_eq!(summary.produced_by, "openai");
}
