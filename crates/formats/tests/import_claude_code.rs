//! The Claude Code importer on hand-written sessions of the record shapes met in real files: parallel
//! tool calls logged as sibling records, progress records in the chain, subagent transcripts, comment
//! lines, a line lost mid-chain, and a file with nothing the model would see.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Format, Item, ItemKind};
use compact_core::normalize::{normalize, ProviderRules};
use compact_formats::import::{detect, import, ImportError, ImportMode, ImportOptions, Imported};
use compact_formats::wire::encode;
use serde_json::Value;
use std::sync::Arc;

use ItemKind::{Assistant as A, Reasoning as R, ToolCall as C, ToolResult as T, User as U};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-code");

fn load(name: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
}

fn run(name: &str, mode: ImportMode) -> Result<Imported, ImportError> {
    import(&load(name), name, &ImportOptions { format: None, mode })
}

fn kinds(imp: &Imported) -> Vec<ItemKind> {
    imp.conversation.items.iter().map(Item::kind).collect()
}

fn visible(imp: &Imported) -> Vec<bool> {
    imp.conversation
        .items
        .iter()
        .map(|i| i.meta.visibility.model)
        .collect()
}

/// The uuid the fixture generator gives record `n`.
fn uuid(n: u32) -> String {
    format!("0000{n:04}-cccc-4ddd-8eee-{n:012}")
}

fn block_types(message: &Value) -> Vec<&str> {
    message["content"]
        .as_array()
        .map(|b| b.iter().filter_map(|b| b["type"].as_str()).collect())
        .unwrap_or_default()
}

#[test]
fn parallel_calls_and_their_sibling_results_are_all_kept() {
    let imp = run("session-parallel.jsonl", ImportMode::Strict).unwrap();
    // thinking, text and both calls of one response; both results (one reached only through a
    // progress record, the other a sibling off the chain); the answer.
    assert_eq!(kinds(&imp), vec![U, R, A, C, C, T, T, A]);
    assert!(visible(&imp).iter().all(|v| *v));
    assert_eq!(imp.stats.off_branch_items, 0);
    assert_eq!(imp.stats.errors, 1);
    assert_eq!(imp.stats.skipped_kinds.get("progress"), Some(&1));
    let pairing = imp.conversation.pairing();
    assert_eq!(pairing.orphan_count(), 0);
    // The two results share one envelope: one user turn, as Claude Code sent it.
    let items = &imp.conversation.items;
    let (a, b) = (&items[5].meta.envelope, &items[6].meta.envelope);
    assert!(matches!((a, b), (Some(x), Some(y)) if Arc::ptr_eq(x, y)));
    let request = encode(&imp.conversation, Format::Anthropic).unwrap().value;
    let messages = request["messages"].as_array().unwrap();
    let shape: Vec<(&str, Vec<&str>)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), block_types(m)))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("user", vec![]),
            (
                "assistant",
                vec!["thinking", "text", "tool_use", "tool_use"]
            ),
            ("user", vec!["tool_result", "tool_result"]),
            ("assistant", vec!["text"]),
        ]
    );
    assert!(normalize(&imp.conversation, &ProviderRules::Anthropic)
        .diagnostics
        .is_empty());
}

#[test]
fn a_subagent_transcript_is_a_conversation_of_its_own() {
    let name = "agent-a7c41e2.jsonl";
    assert_eq!(detect(&load(name), name), Some(Format::ClaudeCode));
    let imp = run(name, ImportMode::Strict).unwrap();
    assert!(imp.stats.subagent);
    assert_eq!(kinds(&imp), vec![U, C, T, A]);
    assert!(visible(&imp).iter().all(|v| *v));
    assert_eq!(imp.stats.skipped_kinds.get("sidechain"), None);
    // A session file with a few sidechain records is not a subagent transcript.
    let session = import(
        &std::fs::read(format!("{FIXTURES}/session-sidechain.jsonl")).unwrap(),
        "session-sidechain.jsonl",
        &ImportOptions::default(),
    )
    .unwrap();
    assert!(!session.stats.subagent);
}

#[test]
fn a_transcript_opening_with_the_assistant_is_exported_as_a_valid_request() {
    // Issue 45: a subagent transcript whose first record is the assistant's was written as an
    // Anthropic request unchanged, its first message not the user's.
    use compact_formats::validate::validate;
    use compact_formats::wire::anthropic::LEADING_USER_TEXT;
    use compact_formats::wire::LossKind;
    let name = "agent-opens-with-assistant.jsonl";
    let imp = run(name, ImportMode::Strict).unwrap();
    assert_eq!(kinds(&imp)[..2], [A, C]);
    let out = encode(&imp.conversation, Format::Anthropic).unwrap();
    let messages = out.value["messages"].as_array().unwrap();
    assert_eq!(
        messages[0],
        serde_json::json!({"role": "user", "content": LEADING_USER_TEXT})
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][1]["name"], "Read");
    assert!(out
        .losses
        .iter()
        .any(|l| l.kind == LossKind::PlaceholderAdded));
    assert_eq!(validate(&out.value, Format::Anthropic), vec![]);
    // The other wire formats accept a conversation that opens with the assistant.
    for format in [Format::OpenAiChat, Format::OpenAiResponses] {
        let out = encode(&imp.conversation, format).unwrap();
        assert_eq!(validate(&out.value, format), vec![], "{format}");
    }
}

#[test]
fn comment_lines_are_named_in_strict_mode_and_skipped_in_lenient_mode() {
    let name = "session-comment.jsonl";
    assert_eq!(detect(&load(name), name), Some(Format::ClaudeCode));
    assert_eq!(detect(&load(name), "input"), Some(Format::ClaudeCode));
    let err = run(name, ImportMode::Strict).unwrap_err().to_string();
    assert!(err.contains("session-comment.jsonl:1:1"), "{err}");
    assert!(err.contains("comment"), "{err}");
    let imp = run(name, ImportMode::Lenient).unwrap();
    assert_eq!(imp.warnings.len(), 2);
    assert_eq!(imp.warnings[1].at.line, 2);
    assert_eq!(kinds(&imp), vec![U, A]);
    assert_eq!(imp.stats.records_malformed, 2);
}

#[test]
fn a_lost_line_is_bridged_and_a_rewind_after_it_still_resolves() {
    let name = "session-broken-chain.jsonl";
    let err = run(name, ImportMode::Strict).unwrap_err().to_string();
    assert!(err.contains("session-broken-chain.jsonl:3:"), "{err}");
    let imp = run(name, ImportMode::Lenient).unwrap();
    assert_eq!(imp.warnings.len(), 1);
    // 41 user, 42 text, [43 lost], 44 result of the lost call, 45, then the abandoned 46/47 and the
    // edited prompt 48 with its answer 49.
    assert_eq!(kinds(&imp), vec![U, A, T, A, U, A, U, A]);
    assert_eq!(
        visible(&imp),
        [true, true, true, true, false, false, true, true]
    );
    assert_eq!(imp.stats.off_branch_items, 2);
    let ids: Vec<&str> = imp
        .conversation
        .items
        .iter()
        .map(|i| i.meta.id.as_str())
        .collect();
    assert_eq!(ids[6], uuid(48));
    // The result of the lost call is an orphan: normalisation removes it from what is sent.
    let sent = normalize(&imp.conversation, &ProviderRules::Anthropic);
    assert_eq!(sent.diagnostics.len(), 1);
    let request = encode(&sent.conversation, Format::Anthropic).unwrap().value;
    let text = request.to_string();
    assert!(!text.contains("tool_result"), "{text}");
    assert!(text.contains("docs/api.md"));
    assert!(!text.contains("Which docs folder?"));
}

#[test]
fn a_file_with_nothing_for_the_model_is_an_error_with_a_reason() {
    let err = run("session-empty.jsonl", ImportMode::Strict).unwrap_err();
    assert!(matches!(err, ImportError::NothingVisible { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("session-empty.jsonl"), "{text}");
    assert!(text.contains("3 records read"), "{text}");
    assert!(text.contains("summary"), "{text}");
}
