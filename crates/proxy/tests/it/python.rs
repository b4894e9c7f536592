//! The official client SDKs (`openai`, `anthropic`, `openai-agents`) drive a long tool-using
//! conversation (several windows) through the proxy, streaming and not: `tests/python/drive.py`
//! fails on any API error (a context overflow included) or a damaged reply. The Python
//! interpreter with the SDKs is `$COMPACT_TEST_PYTHON` (`scripts/services start` exports it);
//! without it these tests skip, saying so, unless `COMPACT_REQUIRE_SERVICES` (or `CI=true`) is
//! set: then they fail.

use crate::support::{script_tool_call, tokens_of, Harness, WINDOW};
use compact_sim::ScriptedReply;
use serde_json::Value;

/// Tool-calling steps of each run (with 40-line outputs: more than three windows of history).
const STEPS: usize = 40;

pub(crate) fn python() -> Option<String> {
    let var = "COMPACT_TEST_PYTHON";
    if let Some(v) = std::env::var(var).ok().filter(|v| !v.is_empty()) {
        return Some(v);
    }
    let required = std::env::var_os("COMPACT_REQUIRE_SERVICES").is_some_and(|v| v != "0")
        || std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !required,
        "the Python SDKs are required (COMPACT_REQUIRE_SERVICES or CI is set) but {var} is not set: \
         run `eval \"$(scripts/services start)\"` first"
    );
    println!("{var} not set: skipping (needs the Python SDKs; `eval \"$(scripts/services start)\"` installs them)");
    None
}

async fn drive(sdk: &str, stream: bool) {
    let Some(python) = python() else { return };
    let h = Harness::start().await;
    for step in 0..STEPS {
        script_tool_call(&h.sim, step);
    }
    h.sim.push_reply(ScriptedReply::text("All done."));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/drive.py");
    let mut args = vec![
        script.to_owned(),
        sdk.to_owned(),
        format!("http://{}", h.addr),
        STEPS.to_string(),
    ];
    if stream {
        args.push("--stream".to_owned());
    }
    let output = tokio::process::Command::new(&python)
        .args(&args)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{sdk} stream={stream} failed:\n{stderr}\n{stdout}"
    );
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    let history = tokens_of(&summary["history"]);
    assert!(
        history >= 3 * WINDOW,
        "{sdk}: the history is only {history} tokens"
    );

    let upstream = h.sim.requests();
    assert_eq!(
        upstream.len(),
        STEPS + 1,
        "{sdk}: one upstream request per model call"
    );
    assert!(
        upstream.iter().all(|r| r.status == 200),
        "{sdk}: an upstream request failed"
    );
    assert!(upstream.iter().all(|r| r.stream == stream));
    assert!(upstream
        .iter()
        .all(|r| r.input_tokens.unwrap() as usize <= WINDOW));
    assert!(
        h.proxy.metrics().compactions() >= 1,
        "{sdk}: nothing was compacted"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_chat_completions() {
    drive("openai-chat", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_chat_completions_streaming() {
    drive("openai-chat", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_responses() {
    drive("openai-responses", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_sdk_responses_streaming() {
    drive("openai-responses", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_sdk_messages() {
    drive("anthropic", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_sdk_messages_streaming() {
    drive("anthropic", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_agents_sdk_chat_completions() {
    drive("agents-chat", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_agents_sdk_responses_streaming() {
    drive("agents-responses", true).await;
}
