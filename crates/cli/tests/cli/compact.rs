//! `compactctl compact`: the bundled example in two windows, every strategy, every output format,
//! transcripts' default formats, the insufficient-budget exit, seed 003's 40% acceptance and
//! re-compaction folding the checkpoint.

use crate::support::{fixture, in_dir, inspect, read_json, run, run_env, temp_dir, Out};
use serde_json::Value;

const EXAMPLE: &str = "examples/session.json";
const STRATEGIES: [&str; 7] = [
    "tiered",
    "codex",
    "segmented",
    "observation-masking",
    "sliding-window",
    "deletion",
    "cfpm",
];
const WIRE_FORMATS: [&str; 3] = ["openai-chat", "openai-responses", "anthropic"];

/// Compacts `input` into `dir` with `extra` flags; returns the run, the output path and the report.
fn compact_into(
    dir: &std::path::Path,
    input: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Out, String, Value) {
    let out_path = in_dir(dir, "out.json");
    let report_path = in_dir(dir, "report.json");
    let mut args = vec![
        "compact",
        input,
        "-o",
        &out_path,
        "--report-json",
        &report_path,
    ];
    args.extend_from_slice(extra);
    let out = run_env(&args, env).ok();
    let report = read_json(&report_path);
    (out, out_path, report)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no numeric `{key}` in {v}"))
}

/// The output re-imports in `format` with every call paired, within the report's usable budget,
/// and the report's figures agree with a fresh `inspect` of input and output.
fn check_output(input: &str, out_path: &str, report: &Value, format: &str) -> Value {
    let before = inspect(input, &[]);
    let after = inspect(out_path, &[]);
    assert_eq!(after["format"], format, "{out_path}");
    assert_eq!(after["orphans"], 0, "orphans in the output: {after}");
    assert_eq!(
        after["validation"]["violations"], 0,
        "the provider would refuse the output: {}",
        after["validation"]
    );
    let total = u(&after["tokens"], "total");
    assert!(
        total <= u(report, "usable"),
        "{total} tokens over the usable {}",
        report["usable"]
    );
    assert_eq!(u(report, "tokens_before"), u(&before["tokens"], "total"));
    assert!(
        u(report, "tokens_after") < u(report, "tokens_before"),
        "{report}"
    );
    assert!(
        u(report, "items_before") >= u(report, "items_after"),
        "{report}"
    );
    after
}

#[test]
fn example_compacts_into_16k_and_8k() {
    for window in ["16000", "8000"] {
        let dir = temp_dir(&format!("example-{window}"));
        let (_, out_path, report) = compact_into(&dir, EXAMPLE, &["--window", window], &[]);
        for key in [
            "tokens_before",
            "tokens_after",
            "items_before",
            "items_after",
            "strategy",
            "tiers_applied",
        ] {
            assert!(report.get(key).is_some(), "report lacks `{key}`: {report}");
        }
        assert_eq!(report["strategy"], "tiered");
        assert!(
            !report["tiers_applied"].as_array().unwrap().is_empty(),
            "{report}"
        );
        let after = check_output(EXAMPLE, &out_path, &report, "openai-chat");
        // Same counter on both sides: the report's figures are the output's.
        assert_eq!(u(&report, "tokens_after"), u(&after["tokens"], "total"));
        assert_eq!(u(&report, "items_after"), u(&after, "items"));
        assert!(read_json(&out_path)["messages"].is_array());
    }
}

#[test]
fn every_strategy_compacts_the_example() {
    for strategy in STRATEGIES {
        let dir = temp_dir(strategy);
        // The example has four user turns: observation masking only masks outputs older than the
        // recent turns, so keep two.
        let env: &[(&str, &str)] = if strategy == "observation-masking" {
            &[("COMPACT_KEEP_RECENT_TURNS", "2")]
        } else {
            &[]
        };
        let (_, out_path, report) = compact_into(
            &dir,
            EXAMPLE,
            &["--window", "8000", "--strategy", strategy],
            env,
        );
        assert_eq!(report["strategy"], strategy);
        check_output(EXAMPLE, &out_path, &report, "openai-chat");
    }
    let out = run(&[
        "compact",
        EXAMPLE,
        "--window",
        "8000",
        "--strategy",
        "lossless-magic",
    ])
    .expect_code(2);
    assert!(
        out.stderr.contains("strategy") && out.stderr.contains("lossless-magic"),
        "{}",
        out.stderr
    );
}

#[test]
fn to_writes_each_wire_format() {
    for format in WIRE_FORMATS {
        let dir = temp_dir(format);
        let (_, out_path, report) =
            compact_into(&dir, EXAMPLE, &["--window", "8000", "--to", format], &[]);
        assert_eq!(report["output_format"], format);
        check_output(EXAMPLE, &out_path, &report, format);
    }
    let out = run(&[
        "compact",
        EXAMPLE,
        "--window",
        "8000",
        "--to",
        "claude-code",
    ])
    .expect_code(2);
    assert!(out.stderr.contains("--to"), "{}", out.stderr);
}

#[test]
fn to_another_provider_meets_that_providers_rules() {
    // Valid for Anthropic, which merges the two assistant messages into one turn answered by the
    // next user message; written for Chat, each assistant message's call must be answered before the
    // next message.
    let dir = temp_dir("to-rules");
    let input = in_dir(&dir, "anthropic.json");
    let request = serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": [
        {"role": "user", "content": "List the files, then show the directory."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "pwd", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.rs b.rs"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "/src"}
        ]},
        {"role": "assistant", "content": "Two files in /src."}
    ]});
    std::fs::write(&input, request.to_string()).unwrap();
    assert_eq!(inspect(&input, &[])["validation"]["violations"], 0);
    for format in WIRE_FORMATS {
        let out_path = in_dir(&dir, &format!("{format}.json"));
        let args = [
            "compact", &input, "--window", "100000", "--to", format, "-o", &out_path,
        ];
        run(&args).ok();
        let after = inspect(&out_path, &[]);
        assert_eq!(after["validation"]["violations"], 0, "{format}: {after}");
    }
    let chat = read_json(&in_dir(&dir, "openai-chat.json"));
    let roles: Vec<&str> = chat["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant"
        ]
    );
}

#[test]
fn transcripts_default_to_their_providers_format() {
    for (file, window, format) in [
        ("claude-code-long.jsonl", "16000", "anthropic"),
        ("codex-rollout-long.jsonl", "4000", "openai-responses"),
    ] {
        let dir = temp_dir(file);
        let input = fixture(file);
        let (_, out_path, report) = compact_into(&dir, &input, &["--window", window], &[]);
        assert_eq!(report["output_format"], format, "{file}");
        // Read back as the provider's format (detection is the next test's concern).
        let after = inspect(&out_path, &["--format", format]);
        assert_eq!(after["orphans"], 0, "{file}: {after}");
        assert_eq!(
            u(&report, "tokens_before"),
            u(&inspect(&input, &[])["tokens"], "total")
        );
        assert!(
            u(&after["tokens"], "total") <= u(&report, "usable"),
            "{file}: {after}"
        );
    }
}

/// The request fields of an Anthropic message; the API rejects any other.
const ANTHROPIC_MESSAGE_FIELDS: [&str; 2] = ["role", "content"];

#[test]
fn claude_code_output_is_a_plain_anthropic_request() {
    let input = fixture("claude-code-long.jsonl");
    let dir = temp_dir("claude-code-request");
    let (_, out_path, report) = compact_into(&dir, &input, &["--window", "16000"], &[]);
    // Response-only fields of the transcript's records (`id`, `type`, `usage`, `stop_reason`, ...)
    // have no place in a request.
    for (i, m) in read_json(&out_path)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        for key in m.as_object().unwrap().keys() {
            assert!(
                ANTHROPIC_MESSAGE_FIELDS.contains(&key.as_str()),
                "message {i} carries `{key}`"
            );
        }
    }
    check_output(&input, &out_path, &report, "anthropic");
}

#[test]
fn floor_over_budget_exits_3_and_explains() {
    // The 2,900-token system prompt is pinned: no strategy may cut it.
    let out = run(&["compact", &fixture("big-system.json"), "--window", "2000"]).expect_code(3);
    assert!(
        out.stdout.is_empty(),
        "no output on failure: {}",
        out.stdout
    );
    assert!(out.stderr.contains("floor"), "{}", out.stderr);
    assert!(out.stderr.contains("pinned"), "{}", out.stderr);
    // A window below the policy's minimum is bad input.
    run(&["compact", &fixture("big-system.json"), "--window", "300"]).expect_code(2);
}

#[test]
fn manual_compaction_saves_at_least_40_percent() {
    // Seed 003 acceptance: the prepared fixture, over budget in a 16k window, loses >= 40%.
    let input = fixture("claude-code-long.jsonl");
    let dir = temp_dir("acceptance");
    let (_, out_path, report) = compact_into(&dir, &input, &["--window", "16000"], &[]);
    let before = u(&inspect(&input, &[])["tokens"], "total");
    let after = u(
        &inspect(&out_path, &["--format", "anthropic"])["tokens"],
        "total",
    );
    assert_eq!(u(&report, "tokens_before"), before);
    assert!(
        after * 10 <= before * 6,
        "{before} -> {after} tokens: less than 40% saved"
    );
}

/// Checkpoint generations in a written conversation (the checkpoint's wire marker).
fn generations(path: &str) -> Vec<u32> {
    let text = std::fs::read_to_string(path).unwrap();
    let marker = "<compact-checkpoint generation=\\\"";
    text.match_indices(marker)
        .map(|(at, _)| {
            let rest = &text[at + marker.len()..];
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn recompaction_folds_the_checkpoint() {
    let first_dir = temp_dir("fold-1");
    let (_, first, report) = compact_into(&first_dir, EXAMPLE, &["--window", "6000"], &[]);
    assert!(
        report["tiers_applied"]
            .as_array()
            .unwrap()
            .contains(&Value::from(2)),
        "{report}"
    );
    assert_eq!(generations(&first), vec![1]);
    let second_dir = temp_dir("fold-2");
    let (_, second, report) = compact_into(&second_dir, &first, &["--window", "3000"], &[]);
    assert!(
        report["tiers_applied"]
            .as_array()
            .unwrap()
            .contains(&Value::from(2)),
        "{report}"
    );
    assert_eq!(
        generations(&second),
        vec![2],
        "exactly one checkpoint, folded"
    );
    assert_eq!(inspect(&second, &[])["orphans"], 0);
}

#[test]
fn summary_max_tokens_bounds_the_checkpoint() {
    let sizes: Vec<u64> = [None, Some("150")]
        .into_iter()
        .map(|limit| {
            let dir = temp_dir(&format!("summary-max-{}", limit.unwrap_or("default")));
            let mut flags = vec!["--window", "6000"];
            if let Some(l) = limit {
                flags.extend(["--summary-max-tokens", l]);
            }
            let (_, _, report) = compact_into(&dir, EXAMPLE, &flags, &[]);
            u(&report, "summary_tokens")
        })
        .collect();
    assert!(sizes[1] <= 150, "{sizes:?}");
    assert!(sizes[1] < sizes[0], "{sizes:?}");
}

#[test]
fn conversation_to_stdout_and_report_to_dev_stdout() {
    let out = run(&["compact", EXAMPLE, "--window", "8000"]).ok();
    let doc: Value =
        serde_json::from_str(&out.stdout).expect("stdout is the compacted conversation");
    assert!(doc["messages"].is_array());
    assert!(out.stderr.contains("compacted"), "{}", out.stderr);
    // `/dev/stdout` means standard output (it must never be replaced by a file).
    let dir = temp_dir("dev-stdout");
    let out_path = in_dir(&dir, "out.json");
    let out = run(&[
        "compact",
        EXAMPLE,
        "--window",
        "8000",
        "-o",
        &out_path,
        "--report-json",
        "/dev/stdout",
    ])
    .ok();
    let report: Value = serde_json::from_str(&out.stdout).expect("stdout is the report");
    assert_eq!(report["strategy"], "tiered");
    assert!(std::fs::symlink_metadata("/dev/stdout").map_or(true, |m| !m.is_file()));
}

#[cfg(unix)]
#[test]
fn report_through_a_symlink_keeps_the_link() {
    let dir = temp_dir("symlink");
    let target = in_dir(&dir, "report-target.json");
    let link = in_dir(&dir, "report.json");
    std::fs::write(&target, "old").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let out_path = in_dir(&dir, "out.json");
    run(&[
        "compact",
        EXAMPLE,
        "--window",
        "8000",
        "-o",
        &out_path,
        "--report-json",
        &link,
    ])
    .ok();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "the link was replaced"
    );
    assert_eq!(read_json(&target)["strategy"], "tiered");
}

#[test]
fn a_message_flagged_protected_survives_compaction_unchanged() {
    let dir = temp_dir("protected-flag");
    let mut request: Value = read_json(&format!("{}/{EXAMPLE}", crate::support::root().display()));
    // An early tool output (11k characters): without the flag, a 6k window cannot keep it.
    let messages = request["messages"].as_array_mut().unwrap();
    let flagged = messages
        .iter()
        .position(|m| {
            m["role"] == "tool" && m["content"].as_str().is_some_and(|c| c.len() > 10_000)
        })
        .unwrap();
    let call_id = messages[flagged]["tool_call_id"].clone();
    let plain = in_dir(&dir, "plain.json");
    std::fs::write(&plain, serde_json::to_vec(&request).unwrap()).unwrap();
    request["messages"][flagged]["protected"] = Value::Bool(true);
    let original = request["messages"][flagged].clone();
    let input = in_dir(&dir, "flagged.json");
    std::fs::write(&input, serde_json::to_vec(&request).unwrap()).unwrap();

    let kept = |out_path: &str| -> Vec<Value> {
        read_json(out_path)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["tool_call_id"] == call_id)
            .cloned()
            .collect()
    };
    for strategy in STRATEGIES {
        let (_, out_path, _) = compact_into(
            &dir,
            &plain,
            &["--window", "6000", "--strategy", strategy],
            &[],
        );
        assert_ne!(
            kept(&out_path),
            vec![original.clone()],
            "{strategy} without the flag"
        );
        let (_, out_path, report) = compact_into(
            &dir,
            &input,
            &["--window", "6000", "--strategy", strategy],
            &[],
        );
        // The flagged message is sent exactly as written (flag included), and so is its call.
        assert_eq!(kept(&out_path), vec![original.clone()], "{strategy}");
        let calls = read_json(&out_path)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .filter(|c| c["id"] == call_id)
            .count();
        assert_eq!(calls, 1, "{strategy}: the flagged result's call");
        check_output(&input, &out_path, &report, "openai-chat");
    }
    // The key is the policy's `protected_flag`: under another name, `protected` means nothing.
    let (_, out_path, _) = compact_into(
        &dir,
        &input,
        &["--window", "6000"],
        &[("COMPACT_PROTECTED_FLAG", "pin")],
    );
    assert_ne!(kept(&out_path), vec![original.clone()]);
    request["messages"][flagged]["pin"] = Value::Bool(true);
    std::fs::write(&input, serde_json::to_vec(&request).unwrap()).unwrap();
    let (_, out_path, _) = compact_into(
        &dir,
        &input,
        &["--window", "6000"],
        &[("COMPACT_PROTECTED_FLAG", "pin")],
    );
    assert_eq!(kept(&out_path), vec![request["messages"][flagged].clone()]);
}
