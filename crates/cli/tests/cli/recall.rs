//! `compactctl recall FILE ID`: the original text behind a reference stub or truncation marker.

use crate::support::{in_dir, read_json, run, temp_dir};
use serde_json::Value;

const EXAMPLE: &str = "examples/session.json";

/// The ids named by `[compact:ref ID]` stubs in a compacted conversation.
fn referenced_ids(doc: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    for m in doc["messages"].as_array().unwrap() {
        if let Some(text) = m["content"].as_str() {
            if let Some(rest) = text.strip_prefix("[compact:ref ") {
                ids.push(rest.split(']').next().unwrap().to_owned());
            }
        }
    }
    ids
}

#[test]
fn recall_prints_the_original_of_a_referenced_output() {
    let dir = temp_dir("recall");
    let out_path = in_dir(&dir, "out.json");
    run(&["compact", EXAMPLE, "--window", "16000", "-o", &out_path]).ok();
    let compacted = read_json(&out_path);
    let ids = referenced_ids(&compacted);
    assert!(!ids.is_empty(), "no reference stubs at 16k");
    let original = read_json(EXAMPLE);
    let messages = original["messages"].as_array().unwrap();
    for id in &ids {
        // The stub keeps the result's call id: find the original tool message by it.
        let stub = compacted["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| {
                m["content"]
                    .as_str()
                    .is_some_and(|t| t.starts_with(&format!("[compact:ref {id}]")))
            })
            .unwrap();
        let call_id = stub["tool_call_id"].as_str().unwrap();
        let full = messages
            .iter()
            .find(|m| m["tool_call_id"] == call_id)
            .unwrap()["content"]
            .as_str()
            .unwrap();
        let out = run(&["recall", EXAMPLE, id]).ok();
        // Byte for byte; a text without a final newline gets one.
        let want = if full.ends_with('\n') {
            full.to_owned()
        } else {
            format!("{full}\n")
        };
        assert_eq!(out.stdout, want, "recall {id}");
        assert!(
            full.len() > stub["content"].as_str().unwrap().len(),
            "the stub is shorter than the original"
        );
    }
}

#[test]
fn unknown_id_is_bad_input() {
    let out = run(&["recall", EXAMPLE, "no-such-item"]).expect_code(2);
    assert!(out.stderr.contains("no-such-item"), "{}", out.stderr);
}

#[test]
fn recall_restores_a_truncated_output() {
    let dir = temp_dir("recall-truncated");
    let out_path = in_dir(&dir, "out.json");
    run(&["compact", EXAMPLE, "--window", "16000", "-o", &out_path]).ok();
    let compacted = read_json(&out_path);
    let original = read_json(EXAMPLE);
    let marker = "compactctl recall ";
    let mut seen = 0;
    for m in compacted["messages"].as_array().unwrap() {
        let Some(text) = m["content"].as_str() else {
            continue;
        };
        let Some(at) = text.find(marker) else {
            continue;
        };
        let id: String = text[at + marker.len()..]
            .chars()
            .take_while(|c| *c != ']')
            .collect();
        let call_id = m["tool_call_id"].as_str().unwrap();
        let full = original["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["tool_call_id"] == call_id)
            .unwrap()["content"]
            .as_str()
            .unwrap();
        assert!(
            text.len() < full.len(),
            "{id}: the truncated form is not shorter"
        );
        let out = run(&["recall", EXAMPLE, &id]).ok();
        assert_eq!(out.stdout.trim_end_matches('\n'), full, "recall {id}");
        seen += 1;
    }
    assert!(seen > 0, "no truncation marker at 16k");
}

#[test]
fn recall_is_byte_exact() {
    // The Read result of the Claude Code fixture ends with a newline: it comes back unchanged.
    let path = crate::support::fixture("claude-code.jsonl");
    let record = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|r| r["uuid"] == "cc000005")
        .unwrap();
    let full = record["message"]["content"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(full.ends_with('\n'));
    let out = run(&["recall", &path, "cc000005"]).ok();
    assert_eq!(out.stdout, full);
}
