//! `compact --summarizer openai|anthropic` end to end: the binary talks HTTP to the provider simulator
//! served in-process on 127.0.0.1, and the checkpoint comes from the simulated model.

use crate::support::{run_env, temp_dir};
use compact_sim::{SimConfig, Simulator};
use serde_json::Value;

/// A runtime that keeps serving the simulator on its worker threads while the test runs the binary.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn compact_through(kind: &str) {
    let rt = runtime();
    let sim = rt
        .block_on(Simulator::spawn(SimConfig::default()))
        .expect("simulator");
    let base = match kind {
        "openai" => sim.openai_base_url(),
        _ => sim.base_url(),
    };
    let dir = temp_dir(&format!("llm-{kind}"));
    let out = dir.join("out.json");
    let out = out.to_string_lossy();
    let key_var = if kind == "openai" {
        "OPENAI_API_KEY"
    } else {
        "ANTHROPIC_API_KEY"
    };
    let secret = "sk-test-do-not-print-0123456789";
    let run = run_env(
        &[
            "compact",
            "examples/session.json",
            "--window",
            "6000",
            "--summarizer",
            kind,
            "--base-url",
            &base,
            "--summarizer-model",
            "sim-small",
            "-o",
            &out,
            "--report-json",
            "-",
        ],
        &[(key_var, secret)],
    )
    .ok();
    let report: Value = run.json();
    assert_eq!(report["summarizer"], kind, "{report}");
    let usage = &report["summary_usage"];
    assert!(usage["calls"].as_u64().unwrap() >= 1, "{report}");
    assert!(usage["input_tokens"].as_u64().unwrap() > 0, "{report}");
    assert!(usage["output_tokens"].as_u64().unwrap() > 0, "{report}");
    assert!(report["tokens_after"].as_u64() < report["tokens_before"].as_u64());
    assert!(
        !run.stderr.contains(secret) && !run.stdout.contains(secret),
        "the API key leaked"
    );

    // The simulator saw real requests of the right API, within its window, with the key.
    let requests = sim.requests();
    assert!(!requests.is_empty());
    for r in &requests {
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(r.body["model"], "sim-small");
        let path_ok = if kind == "openai" {
            r.path.ends_with("/chat/completions")
        } else {
            r.path.ends_with("/messages")
        };
        assert!(path_ok, "{}", r.path);
        assert!(
            r.headers.iter().any(|(_, v)| v.contains(secret)),
            "key not sent"
        );
    }

    // The compacted request carries exactly one checkpoint, and it is the model's text.
    let text = std::fs::read_to_string(out.as_ref()).unwrap();
    assert_eq!(text.matches("<compact-checkpoint").count(), 1);
    let inspected = crate::support::inspect(&out, &[]);
    assert_eq!(inspected["orphans"], 0);
}

#[test]
fn compact_through_the_openai_backend() {
    compact_through("openai");
}

#[test]
fn compact_through_the_anthropic_backend() {
    compact_through("anthropic");
}

#[test]
fn an_unreachable_summariser_falls_back_without_losing_the_compaction() {
    // Nothing listens on port 9 of loopback: connection refused, retried, then the deterministic
    // checkpoint stands in with a warning.
    let run = run_env(
        &[
            "compact",
            "examples/session.json",
            "--window",
            "6000",
            "--summarizer",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "-o",
            "/dev/null",
            "--report-json",
            "-",
        ],
        &[("OPENAI_API_KEY", "x")],
    )
    .ok();
    assert!(
        run.stderr.contains("used the deterministic checkpoint"),
        "{}",
        run.stderr
    );
    // The report is honest about the failed attempts: the calls are counted, and the checkpoint
    // is credited to the summariser that wrote it.
    let report: Value = run.json();
    assert_eq!(report["summarizer"], "deterministic", "{report}");
    assert!(
        report["summary_usage"]["calls"].as_u64().unwrap() >= 1,
        "{report}"
    );
    assert!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("after")),
        "{report}"
    );
}
