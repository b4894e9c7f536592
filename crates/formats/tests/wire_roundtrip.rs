//! Round trips of hand-written wire fixtures: decode -> encode to the same format gives back an equal
//! JSON value (unknown fields included), and the decoded items are what the fixture holds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Format, ItemBody, ItemKind, Role, ToolCallKind};
use compact_formats::wire::{decode, encode};
use serde_json::Value;
use std::collections::BTreeMap;

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/wire/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Decodes, re-encodes and asserts equality; returns the conversation.
fn round_trip(format: Format, v: &Value) -> compact_core::model::Conversation {
    let conv = decode(format, v).unwrap_or_else(|e| panic!("decode failed: {e}"));
    let enc = encode(&conv, format).unwrap();
    if enc.value != *v {
        panic!(
            "round trip differs\n--- input\n{}\n--- output\n{}",
            serde_json::to_string_pretty(v).unwrap(),
            serde_json::to_string_pretty(&enc.value).unwrap()
        );
    }
    assert!(
        enc.losses.is_empty(),
        "same-format encode reported losses: {:?}",
        enc.losses
    );
    conv
}

fn kinds(conv: &compact_core::model::Conversation) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    for i in &conv.items {
        *m.entry(i.kind().as_str()).or_insert(0) += 1;
    }
    m
}

#[test]
fn anthropic_fixture_round_trips() {
    let conv = round_trip(Format::Anthropic, &fixture("anthropic_agent.json"));
    let k = kinds(&conv);
    assert_eq!(k["system"], 1);
    assert_eq!(k["tool_call"], 5, "{k:?}");
    assert_eq!(k["tool_result"], 5, "{k:?}");
    assert_eq!(k["reasoning"], 2);
    assert_eq!(k["checkpoint"], 1);
    let pairing = conv.pairing();
    assert_eq!(pairing.pairs.len(), 5);
    assert_eq!(pairing.orphan_count(), 0);
    // The system prompt keeps its slot; every item remembers its origin.
    let sys = &conv.items[0];
    assert_eq!(sys.meta.envelope.as_ref().unwrap().slot, Some("system"));
    assert!(conv
        .items
        .iter()
        .all(|i| i.meta.origin == Some(Format::Anthropic)));
    // Tool names are resolved onto results; the error flag and the server pair are modelled.
    let results: Vec<_> = conv
        .items
        .iter()
        .filter_map(|i| i.as_tool_result())
        .collect();
    assert!(results.iter().all(|r| r.tool_name.is_some()));
    assert!(results[0].is_error && !results[2].is_error);
    assert!(conv.items.iter().any(|i| i
        .as_tool_call()
        .is_some_and(|c| c.kind == ToolCallKind::Server)));
    // Thinking keeps its signature.
    let sig = conv.items.iter().find_map(|i| match i.body() {
        ItemBody::Reasoning(r) => r.signature.clone(),
        _ => None,
    });
    assert_eq!(sig.as_deref(), Some("EqQBCkYIBxgCKkBsig0001"));
    // Items of one wire message share one envelope.
    let a = conv
        .items
        .iter()
        .filter(|i| i.meta.envelope.as_ref().unwrap().message == 1)
        .count();
    assert_eq!(a, 3);
    assert_eq!(conv.tools.len(), 3);
    assert_eq!(conv.extra["model"], "claude-sonnet-4-5");
}

#[test]
fn chat_fixture_round_trips() {
    let conv = round_trip(Format::OpenAiChat, &fixture("chat_agent.json"));
    let k = kinds(&conv);
    assert_eq!(k["tool_call"], 5, "{k:?}");
    assert_eq!(k["tool_result"], 5, "{k:?}");
    assert_eq!(k["developer"], 1);
    assert_eq!(k["checkpoint"], 1);
    let pairing = conv.pairing();
    assert_eq!(pairing.pairs.len(), 5);
    assert_eq!(pairing.orphan_count(), 0);
    let legacy = conv
        .items
        .iter()
        .filter_map(|i| i.as_tool_result())
        .last()
        .unwrap();
    assert_eq!(legacy.tool_name.as_deref(), Some("run"));
    let custom = conv
        .items
        .iter()
        .filter_map(|i| i.as_tool_call())
        .find(|c| c.kind == ToolCallKind::Custom);
    assert_eq!(custom.unwrap().name, "apply_patch");
    let r1 = conv
        .items
        .iter()
        .filter_map(|i| i.as_tool_result())
        .next()
        .unwrap();
    assert_eq!(r1.tool_name.as_deref(), Some("read_file"));
}

#[test]
fn responses_fixture_round_trips() {
    let conv = round_trip(Format::OpenAiResponses, &fixture("responses_agent.json"));
    let k = kinds(&conv);
    assert_eq!(k["tool_call"], 4, "{k:?}");
    assert_eq!(k["tool_result"], 4, "{k:?}");
    assert_eq!(k["reasoning"], 2);
    assert_eq!(k["opaque"], 2);
    assert_eq!(k["provider_compaction"], 1);
    assert_eq!(k["checkpoint"], 1);
    assert_eq!(conv.pairing().orphan_count(), 0);
    assert_eq!(conv.items[0].role(), Role::System);
    assert_eq!(
        conv.items[0].meta.envelope.as_ref().unwrap().slot,
        Some("instructions")
    );
    let enc = conv.items.iter().find_map(|i| match i.body() {
        ItemBody::Reasoning(r) => r.encrypted.clone(),
        _ => None,
    });
    assert_eq!(enc.as_deref(), Some("gAAAAABoRfx1encryptedpayload=="));
    assert!(conv
        .items
        .iter()
        .any(|i| matches!(i.body(), ItemBody::ProviderCompaction(p) if p.is_encrypted())));
    assert!(conv.find("fc_01").is_some(), "wire ids become item ids");
    let shell = conv
        .items
        .iter()
        .filter_map(|i| i.as_tool_result())
        .find(|r| r.kind == ToolCallKind::LocalShell);
    assert_eq!(shell.unwrap().call_id, "call_c");
}

#[test]
fn responses_string_input_round_trips() {
    let conv = round_trip(
        Format::OpenAiResponses,
        &fixture("responses_string_input.json"),
    );
    assert_eq!(conv.len(), 2);
    assert_eq!(conv.items[1].kind(), ItemKind::User);
}

#[test]
fn hidden_items_are_not_encoded() {
    let v = fixture("chat_agent.json");
    let mut conv = decode(Format::OpenAiChat, &v).unwrap();
    let n = v["messages"].as_array().unwrap().len();
    conv.items[0].meta.visibility.model = false;
    let enc = encode(&conv, Format::OpenAiChat).unwrap();
    assert_eq!(enc.value["messages"].as_array().unwrap().len(), n - 1);
    assert!(enc.losses.is_empty());
}

#[test]
fn edited_items_re_encode_in_place() {
    let v = fixture("anthropic_agent.json");
    let mut conv = decode(Format::Anthropic, &v).unwrap();
    let idx = conv
        .items
        .iter()
        .position(|i| i.as_tool_result().is_some())
        .unwrap();
    if let ItemBody::ToolResult(r) = conv.items[idx].body_mut() {
        r.parts = vec![compact_core::model::Part::text("[output truncated]")];
    }
    let out = encode(&conv, Format::Anthropic).unwrap().value;
    let block = &out["messages"][2]["content"][0];
    assert_eq!(block["content"], "[output truncated]");
    assert_eq!(block["cache_control"]["type"], "ephemeral");
    assert_eq!(block["is_error"], true);
    assert_eq!(
        out["messages"][2]["content"][1]["text"],
        "It started after the UTF-8 change."
    );
}

/// Claude Code (2.1.328, claude-opus-5-5) sends a `role: "system"` message among the messages, right
/// after the first user message: it decodes as a system item at its place, is written back as it
/// was (its bytes included), and the request passes the provider-rules validator.
#[test]
fn claude_code_system_message_round_trips() {
    let v = fixture("anthropic_claude_code.json");
    let conv = round_trip(Format::Anthropic, &v);
    let kinds: Vec<ItemKind> = conv.items.iter().map(|i| i.kind()).collect();
    assert_eq!(
        kinds,
        [
            ItemKind::System,
            ItemKind::User,
            ItemKind::System,
            ItemKind::Reasoning,
            ItemKind::Assistant,
            ItemKind::ToolCall,
            ItemKind::ToolResult,
        ]
    );
    let env = conv.items[2].meta.envelope.as_ref().unwrap();
    assert_eq!((env.message, env.slot), (1, None));
    assert_eq!(conv.items[2].role(), Role::System);
    assert!(conv.items[2].plain_text().starts_with("# Environment\n"));
    assert_eq!(conv.pairing().pairs.len(), 1);
    let out = encode(&conv, Format::Anthropic).unwrap().value;
    let bytes = |v: &Value| serde_json::to_string(v).unwrap();
    assert_eq!(bytes(&out["messages"]), bytes(&v["messages"]));
    assert_eq!(
        compact_formats::validate::validate(&v, Format::Anthropic),
        vec![]
    );
}

/// A system message with string content, message-level fields and a block the decoder does not
/// model comes back as it was; one opening the request too (written back as received).
#[test]
fn anthropic_system_messages_of_every_shape_round_trip() {
    let v = serde_json::json!({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Today is Saturday.", "x_tag": 1},
        {"role": "system", "content": [
            {"type": "text", "text": "a"},
            {"type": "x_block", "data": [1]},
            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}
        ]},
        {"role": "assistant", "content": "hello"},
        {"role": "system", "content": []}
    ]});
    let conv = round_trip(Format::Anthropic, &v);
    assert_eq!(
        conv.items
            .iter()
            .filter(|i| i.role() == Role::System)
            .count(),
        3
    );
    let first = serde_json::json!({"messages": [{"role": "system", "content": "env"},
        {"role": "user", "content": "hi"}]});
    round_trip(Format::Anthropic, &first);
}
