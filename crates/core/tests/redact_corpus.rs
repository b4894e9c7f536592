//! False positives of the secret-assignment detector on real agent output: runs the redactor over
//! every tool output of the shared corpus (Claude Code `tool_result` blocks, Codex
//! `function_call_output`s, OpenHands observations, SWE-agent observations; aider logs have no tool
//! outputs) and counts what `secret_assignment` and `password_assignment` find. The corpus holds no
//! live credential, so every match is a false positive or an already fake value (BENCHMARKS.md,
//! "Redaction: secret assignments"). `COMPACT_SHOW_MATCHES=1` prints each match with its line, to
//! inspect them by hand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/corpus.rs"]
mod corpus;

use compact_core::redact::Redactor;
use serde_json::Value;

/// The detectors this test counts.
const KINDS: &[&str] = &["secret_assignment", "password_assignment"];

/// Collects the tool output texts of one JSON value (a transcript line, a whole file).
fn tool_outputs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| tool_outputs(i, out)),
        Value::Object(map) => {
            let kind = map.get("type").and_then(Value::as_str).unwrap_or("");
            let text_of = |field: &str| map.get(field);
            let output = match kind {
                "tool_result" => text_of("content"),
                "function_call_output" | "custom_tool_call_output" => text_of("output"),
                _ if map.contains_key("observation") && map.contains_key("content") => {
                    text_of("content")
                }
                _ if map.contains_key("action") => text_of("observation"),
                _ => None,
            };
            match output {
                Some(Value::String(s)) => out.push(s),
                Some(Value::Array(blocks)) => out.extend(
                    blocks
                        .iter()
                        .filter_map(|b| b.get("text").and_then(Value::as_str)),
                ),
                _ => {}
            }
            map.values().for_each(|v| tool_outputs(v, out));
        }
        _ => {}
    }
}

#[test]
fn secret_assignments_in_corpus_tool_outputs() {
    let Some(dir) = corpus::dir() else {
        return;
    };
    let show = std::env::var_os("COMPACT_SHOW_MATCHES").is_some();
    let redactor = Redactor::new();
    let (mut outputs, mut matches) = (0, 0);
    for file in corpus::files(&dir) {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let values: Vec<Value> = match serde_json::from_str::<Value>(&text) {
            Ok(v) => vec![v],
            Err(_) => text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        };
        let mut texts = Vec::new();
        for v in &values {
            tool_outputs(v, &mut texts);
        }
        outputs += texts.len();
        for t in texts {
            for (range, kind) in redactor.find(t) {
                if !KINDS.contains(&kind) {
                    continue;
                }
                matches += 1;
                if show {
                    let mut start = range.start.saturating_sub(60);
                    while !t.is_char_boundary(start) {
                        start -= 1;
                    }
                    let context = t[start..range.start].replace('\n', "⏎");
                    let name = file.file_name().unwrap().to_string_lossy();
                    eprintln!("{kind}\t{name}\t{context}⟨{}⟩", &t[range]);
                }
            }
        }
    }
    println!("{outputs} tool outputs, {matches} secret or password assignments found");
    assert!(
        outputs > 1_000,
        "{outputs} tool outputs: the walker lost a format"
    );
    // The corpus holds no live credential: each match is a false positive to look at (0 when the
    // detector was written; see BENCHMARKS.md).
    assert_eq!(
        matches, 0,
        "false positives: run with COMPACT_SHOW_MATCHES=1 to see them"
    );
}
