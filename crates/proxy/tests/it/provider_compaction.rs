//! Provider-side compaction through the proxy, driven by the official SDKs
//! (`tests/python/provider_compaction.py`): a Codex-style Responses session that compacts with the
//! in-band trigger, and Anthropic sessions in threshold and on-demand mode, each for more than three
//! windows of tool output. Zero client errors, every upstream request answered 200, and every
//! provider compaction that reaches the upstream is byte for byte what the client sent back and,
//! as a JSON value, what the simulator issued (the SDKs re-serialise objects in their own key
//! order, so the provider's and the client's bytes differ in order only). Skips like the other SDK
//! tests without `$COMPACT_TEST_PYTHON`.

use crate::python::python;
use crate::support::{script_tool_call, tokens_of, Harness, Options};
use compact_sim::ScriptedReply;
use serde_json::Value;
use std::collections::HashSet;

/// The provider compactions of an upstream request body, serialised.
fn compactions_in(body: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut visit = |v: &Value| {
        if v["type"] == "compaction" {
            out.push(serde_json::to_string(v).unwrap());
        }
    };
    for m in body["messages"].as_array().into_iter().flatten() {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .for_each(&mut visit);
    }
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .for_each(&mut visit);
    out
}

async fn drive(mode: &str, steps: usize, lines: usize, window: usize) {
    let Some(python) = python() else { return };
    let h = Harness::with(Options {
        window,
        sim_window: window as u64,
        max_body_bytes: 32 * 1024 * 1024,
        ..Options::default()
    })
    .await;
    for step in 0..steps {
        script_tool_call(&h.sim, step);
    }
    h.sim.push_reply(ScriptedReply::text("All done."));
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/provider_compaction.py"
    );
    let output = tokio::process::Command::new(&python)
        .args([
            script,
            mode,
            &format!("http://{}", h.addr),
            &steps.to_string(),
            &lines.to_string(),
        ])
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{mode} failed:\n{stderr}");
    let summary: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert!(
        !summary["compactions"].as_array().unwrap().is_empty(),
        "{mode}: the provider never compacted"
    );

    let upstream = h.sim.requests();
    assert_eq!(
        upstream.len(),
        summary["calls"].as_u64().unwrap() as usize,
        "{mode}: one upstream request per model call"
    );
    let failed: Vec<String> = upstream
        .iter()
        .filter(|r| r.status != 200)
        .map(|r| format!("#{} {} -> {}", r.seq, r.path, r.status))
        .collect();
    assert!(failed.is_empty(), "{mode}: upstream errors: {failed:?}");
    // What the provider sent (as values: the SDK re-serialises objects in its own key order) and
    // what the client holds, byte for byte: every compaction reaching the upstream is both, so the
    // proxy neither changed nor reordered a byte of it.
    let issued: Vec<Value> = h
        .sim
        .issued_compactions()
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    let held: HashSet<String> = summary["compactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    let mut carried = 0;
    for r in &upstream {
        for c in compactions_in(&r.body) {
            assert!(
                held.contains(&c),
                "{mode}: request #{} carries a compaction that is not byte for byte the client's: {c}",
                r.seq
            );
            let value: Value = serde_json::from_str(&c).unwrap();
            assert!(
                issued.contains(&value),
                "{mode}: request #{} carries a compaction the provider did not send: {c}",
                r.seq
            );
            carried += 1;
        }
    }
    assert!(carried > 0, "{mode}: no compaction was ever sent back");
    assert!(
        upstream
            .iter()
            .all(|r| r.input_tokens.unwrap() as usize <= window),
        "{mode}: a request went over the window"
    );
    if mode == "anthropic-threshold" {
        // The client keeps the whole history; what the last block supersedes (the provider reads
        // nothing before it) never goes upstream again: the message holding it comes first.
        let mut with_block = 0;
        for r in &upstream {
            let messages = r.body["messages"].as_array().unwrap();
            let holds = |m: &Value| {
                m["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|p| p["type"] == "compaction"))
            };
            if let Some(last) = messages.iter().rposition(holds) {
                with_block += 1;
                assert_eq!(
                    last, 0,
                    "{mode}: request #{} sends {last} messages its last compaction supersedes",
                    r.seq
                );
            }
        }
        assert!(with_block > 0, "{mode}: no request carried a compaction");
    }
    // More than three windows of tool output went through the session.
    let outputs: usize = (0..steps)
        .map(|s| {
            tokens_of(&Value::String(crate::support::tool_output(
                &format!("src/file_{s}.rs"),
                s,
                lines,
            )))
        })
        .sum();
    assert!(
        outputs >= 3 * window,
        "{mode}: only {outputs} tokens of tool output"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_in_band_trigger_session_through_the_proxy() {
    drive("codex-trigger", 40, 60, 16_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_threshold_session_through_the_proxy() {
    drive("anthropic-threshold", 36, 220, 64_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_on_demand_session_through_the_proxy() {
    drive("anthropic-on-demand", 40, 60, 16_000).await;
}
