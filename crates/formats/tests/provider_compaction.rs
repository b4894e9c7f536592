//! Provider-side compaction through the wire codecs, the importers and the validator: Anthropic
//! `compaction` blocks (threshold and on-demand modes, `null` content, signatures, encrypted content,
//! unknown fields) and Responses `compaction` / `compaction_trigger` items decode as their own kind,
//! encode back byte for byte, are dropped (with a loss) only when written for another provider, and
//! the validator knows where each may stand.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{CompactionWire, Conversation, Format, ItemBody, ItemKind};
use compact_formats::import::{import, ImportMode, ImportOptions};
use compact_formats::validate::{validate, validate_against, Rule};
use compact_formats::wire::{decode, encode, LossKind};
use serde_json::{json, Value};

const FIXTURES: [(&str, Format); 7] = [
    ("anthropic_threshold.json", Format::Anthropic),
    ("anthropic_on_demand.json", Format::Anthropic),
    ("anthropic_on_demand_first_block.json", Format::Anthropic),
    ("anthropic_on_demand_call.json", Format::Anthropic),
    ("responses_server_side.json", Format::OpenAiResponses),
    ("responses_compact_output.json", Format::OpenAiResponses),
    ("responses_trigger.json", Format::OpenAiResponses),
];

fn path(name: &str) -> String {
    format!(
        "{}/tests/fixtures/provider-compaction/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn fixture(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path(name)).unwrap()).unwrap()
}

/// The provider compaction objects of a request, in order, serialised (what goes on the wire).
fn compaction_bytes(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let is_compaction = |v: &Value| {
        matches!(
            v.get("type").and_then(Value::as_str),
            Some("compaction" | "compaction_trigger")
        )
    };
    for m in request["messages"].as_array().into_iter().flatten() {
        for b in m["content"].as_array().into_iter().flatten() {
            if is_compaction(b) {
                out.push(serde_json::to_string(b).unwrap());
            }
        }
    }
    for i in request["input"].as_array().into_iter().flatten() {
        if is_compaction(i) {
            out.push(serde_json::to_string(i).unwrap());
        }
    }
    out
}

fn provider_items(conv: &Conversation) -> Vec<(CompactionWire, String)> {
    conv.items
        .iter()
        .filter_map(|i| match i.body() {
            ItemBody::ProviderCompaction(p) => Some((p.wire(), p.wire_text())),
            _ => None,
        })
        .collect()
}

#[test]
fn every_shape_decodes_as_its_own_kind_and_round_trips_byte_for_byte() {
    for (name, format) in FIXTURES {
        let input = fixture(name);
        let conv = decode(format, &input).unwrap_or_else(|e| panic!("{name}: {e}"));
        let encoded = encode(&conv, format).unwrap();
        assert!(encoded.losses.is_empty(), "{name}: {:?}", encoded.losses);
        assert_eq!(
            encoded.value, input,
            "{name}: the request is not written back"
        );
        let expected = compaction_bytes(&input);
        assert_eq!(
            compaction_bytes(&encoded.value),
            expected,
            "{name}: a compaction is not written back byte for byte"
        );
        let decoded: Vec<String> = provider_items(&conv).into_iter().map(|(_, t)| t).collect();
        if name != "anthropic_on_demand_call.json" {
            assert!(!expected.is_empty(), "{name} holds no provider compaction");
        }
        assert_eq!(
            decoded, expected,
            "{name}: items differ from the wire objects"
        );
        for item in &conv.items {
            if matches!(item.body(), ItemBody::ProviderCompaction(_)) {
                assert_eq!(item.kind(), ItemKind::ProviderCompaction);
            }
        }
    }
}

#[test]
fn readable_summaries_are_exposed_and_encrypted_payloads_are_not() {
    let conv = decode(Format::Anthropic, &fixture("anthropic_threshold.json")).unwrap();
    let summaries: Vec<Option<String>> = conv
        .items
        .iter()
        .filter_map(|i| match i.body() {
            ItemBody::ProviderCompaction(p) => Some(p.summary().map(str::to_owned)),
            _ => None,
        })
        .collect();
    assert_eq!(summaries.len(), 3);
    assert!(summaries[0].as_deref().unwrap().contains("nightly export"));
    assert_eq!(summaries[1], None, "null content has no summary");
    assert!(summaries[2].as_deref().unwrap().contains("stream_rows"));
    let openai = decode(
        Format::OpenAiResponses,
        &fixture("responses_server_side.json"),
    )
    .unwrap();
    for item in &openai.items {
        if let ItemBody::ProviderCompaction(p) = item.body() {
            assert_eq!(p.summary(), None);
            assert!(p.is_encrypted());
            assert_eq!(
                item.plain_text(),
                "",
                "encrypted content never reads as text"
            );
        }
    }
    let trigger = decode(Format::OpenAiResponses, &fixture("responses_trigger.json")).unwrap();
    let last = trigger.items.last().unwrap();
    assert!(matches!(last.body(), ItemBody::ProviderCompaction(p) if p.is_trigger()));
}

#[test]
fn another_provider_gets_no_compaction_and_a_loss_for_each() {
    let anthropic = decode(Format::Anthropic, &fixture("anthropic_threshold.json")).unwrap();
    for target in [Format::OpenAiResponses, Format::OpenAiChat] {
        let out = encode(&anthropic, target).unwrap();
        assert!(compaction_bytes(&out.value).is_empty(), "{target}");
        let dropped = out
            .losses
            .iter()
            .filter(|l| l.kind == LossKind::OpaqueItemDropped)
            .count();
        assert_eq!(dropped, 3, "{target}: {:?}", out.losses);
    }
    let responses = decode(
        Format::OpenAiResponses,
        &fixture("responses_server_side.json"),
    )
    .unwrap();
    for target in [Format::Anthropic, Format::OpenAiChat] {
        let out = encode(&responses, target).unwrap();
        assert!(compaction_bytes(&out.value).is_empty(), "{target}");
        assert!(
            out.losses
                .iter()
                .any(|l| l.kind == LossKind::OpaqueItemDropped),
            "{target}"
        );
    }
}

#[test]
fn malformed_compaction_fields_are_errors_naming_the_place() {
    let mut bad = fixture("anthropic_on_demand.json");
    bad["messages"][0]["content"][0]["content"] = json!(7);
    let err = decode(Format::Anthropic, &bad).unwrap_err().to_string();
    assert!(err.contains("/messages/0/content/0/content"), "{err}");
    let mut bad = fixture("anthropic_on_demand.json");
    bad["messages"][0]["content"][0]["signature"] = Value::Null;
    let err = decode(Format::Anthropic, &bad).unwrap_err().to_string();
    assert!(err.contains("/messages/0/content/0/signature"), "{err}");
    let mut bad = fixture("responses_compact_output.json");
    bad["input"][2]["encrypted_content"] = json!({"nested": true});
    let err = decode(Format::OpenAiResponses, &bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("/input/2/encrypted_content"), "{err}");
}

// ---- The validator ---------------------------------------------------------------------------------

fn rules(request: &Value, format: Format) -> Vec<(String, Rule)> {
    validate(request, format)
        .into_iter()
        .map(|v| (v.path, v.rule))
        .collect()
}

#[test]
fn every_fixture_is_valid() {
    for (name, format) in FIXTURES {
        let found = validate(&fixture(name), format);
        assert!(found.is_empty(), "{name}: {found:?}");
    }
}

#[test]
fn on_demand_blocks_are_exactly_one_and_first() {
    let valid = fixture("anthropic_on_demand.json");
    // Summarised messages left in front of the block.
    let mut late = valid.clone();
    late["messages"]
        .as_array_mut()
        .unwrap()
        .insert(0, json!({"role": "user", "content": "an old message"}));
    assert_eq!(
        rules(&late, Format::Anthropic),
        vec![(
            "/messages/1/content/0".to_owned(),
            Rule::CompactionMisplaced
        )]
    );
    // A second block.
    let mut twice = valid.clone();
    let block = twice["messages"][0]["content"][0].clone();
    twice["messages"][1] =
        json!({"role": "user", "content": [block, {"type": "text", "text": "go on"}]});
    assert_eq!(
        rules(&twice, Format::Anthropic),
        vec![(
            "/messages/1/content/0".to_owned(),
            Rule::CompactionMisplaced
        )]
    );
    // Not the first block of the first message.
    let mut second = fixture("anthropic_on_demand_first_block.json");
    second["messages"][0]["content"]
        .as_array_mut()
        .unwrap()
        .swap(0, 1);
    assert_eq!(
        rules(&second, Format::Anthropic),
        vec![(
            "/messages/0/content/1".to_owned(),
            Rule::CompactionMisplaced
        )]
    );
    // An assistant message opens the request only when it starts with the block.
    let mut plain = valid;
    plain["messages"][0]["content"][0] = json!({"type": "text", "text": "hello"});
    assert_eq!(
        rules(&plain, Format::Anthropic),
        vec![("/messages/0".to_owned(), Rule::FirstTurnNotUser)]
    );
}

#[test]
fn threshold_mode_reads_nothing_before_the_last_block() {
    let mut request = fixture("anthropic_threshold.json");
    // Break the pairing before the last block: the server ignores it.
    request["messages"][4]["content"][0]["tool_use_id"] = json!("toolu_unknown");
    assert!(rules(&request, Format::Anthropic).is_empty());
    // The same break after the last block counts.
    request["messages"][8] = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}]});
    assert_eq!(
        rules(&request, Format::Anthropic),
        vec![("/messages/8/content/0".to_owned(), Rule::OrphanResult)]
    );
    // Without `context_management` the blocks are on-demand ones: only one, and first.
    let mut on_demand = fixture("anthropic_threshold.json");
    on_demand
        .as_object_mut()
        .unwrap()
        .remove("context_management");
    let misplaced: Vec<String> = rules(&on_demand, Format::Anthropic)
        .into_iter()
        .filter(|(_, r)| *r == Rule::CompactionMisplaced)
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        misplaced,
        [
            "/messages/3/content/0",
            "/messages/5/content/0",
            "/messages/7/content/0"
        ]
    );
}

#[test]
fn a_compaction_call_refuses_what_the_provider_refuses() {
    let call = fixture("anthropic_on_demand_call.json");
    for (field, value, path) in [
        (
            "context_management",
            json!({"edits": []}),
            "/context_management",
        ),
        ("stop_sequences", json!(["END"]), "/stop_sequences"),
        ("tool_choice", json!({"type": "any"}), "/tool_choice"),
        (
            "output_format",
            json!({"type": "json_schema", "schema": {}}),
            "/output_format",
        ),
        ("compaction", json!({"type": "clear"}), "/compaction"),
        (
            "compaction",
            json!({"type": "summarize", "instructions": "x".repeat(16_385)}),
            "/compaction/instructions",
        ),
    ] {
        let mut bad = call.clone();
        bad[field] = value;
        assert_eq!(
            rules(&bad, Format::Anthropic),
            vec![(path.to_owned(), Rule::CompactionCallInvalid)],
            "{field}"
        );
    }
    let mut longest = call.clone();
    longest["compaction"]["instructions"] = json!("é".repeat(16_384));
    assert!(rules(&longest, Format::Anthropic).is_empty());
    // An unanswered tool_use in the last assistant turn is refused by the general rule.
    let mut unanswered = call;
    unanswered["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {}}]}));
    assert!(rules(&unanswered, Format::Anthropic)
        .iter()
        .any(|(_, r)| *r == Rule::UnansweredCall));
}

#[test]
fn a_trigger_is_last_and_a_compaction_item_is_encrypted() {
    let trigger = fixture("responses_trigger.json");
    let mut early = trigger.clone();
    early["input"].as_array_mut().unwrap().swap(3, 4);
    assert_eq!(
        rules(&early, Format::OpenAiResponses),
        vec![("/input/3".to_owned(), Rule::CompactionMisplaced)]
    );
    let mut twice = trigger.clone();
    twice["input"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "compaction_trigger"}));
    assert_eq!(
        rules(&twice, Format::OpenAiResponses),
        vec![
            ("/input/4".to_owned(), Rule::CompactionMisplaced),
            ("/input/5".to_owned(), Rule::CompactionMisplaced)
        ]
    );
    let mut empty = trigger;
    empty["input"][1]["encrypted_content"] = json!("");
    assert_eq!(
        rules(&empty, Format::OpenAiResponses),
        vec![("/input/1".to_owned(), Rule::Malformed)]
    );
}

#[test]
fn validate_against_wants_every_compaction_unchanged_and_the_last_one_sent() {
    let original = fixture("anthropic_on_demand.json");
    assert!(validate_against(&original, &original, Format::Anthropic).is_empty());
    let mut edited = original.clone();
    edited["messages"][0]["content"][0]["content"] = json!("a re-summarised summary");
    let found = validate_against(&edited, &original, Format::Anthropic);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.iter().all(|v| v.rule == Rule::CompactionModified));

    let original = fixture("responses_server_side.json");
    let mut dropped = original.clone();
    dropped["input"].as_array_mut().unwrap().remove(6);
    let found = validate_against(&dropped, &original, Format::OpenAiResponses);
    assert_eq!(
        found.iter().map(|v| v.rule).collect::<Vec<_>>(),
        vec![Rule::CompactionModified]
    );
    // An earlier compaction may go (what it stands for is in the last one).
    let mut older_gone = original.clone();
    older_gone["input"].as_array_mut().unwrap().remove(3);
    assert!(validate_against(&older_gone, &original, Format::OpenAiResponses).is_empty());
}

// ---- Transcripts -----------------------------------------------------------------------------------

fn import_fixture(name: &str) -> Conversation {
    let p = path(name);
    let bytes = std::fs::read(&p).unwrap();
    let opts = ImportOptions {
        format: None,
        mode: ImportMode::Strict,
    };
    import(&bytes, &p, &opts)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .conversation
}

#[test]
fn claude_code_transcripts_import_compaction_blocks_in_place() {
    let conv = import_fixture("claude_code_compaction.jsonl");
    let kinds: Vec<&str> = conv.items.iter().map(|i| i.kind().as_str()).collect();
    assert_eq!(
        kinds,
        [
            "user",
            "tool_call",
            "tool_result",
            "provider_compaction",
            "assistant",
            "user"
        ]
    );
    let ItemBody::ProviderCompaction(p) = conv.items[3].body() else {
        panic!("not a provider compaction");
    };
    assert_eq!(p.wire(), CompactionWire::AnthropicBlock);
    assert_eq!(
        p.wire_text(),
        r#"{"type":"compaction","content":"The user is renaming the billing module; invoices.rs is done.","signature":"Y2xhdWRlLWNvZGUtc2ln"}"#
    );
    // Written as a request, the block comes back as it was, first (the rest is superseded).
    let normalized = compact_core::normalize::normalize(
        &conv,
        &compact_core::normalize::ProviderRules::Anthropic,
    );
    let request = encode(&normalized.conversation, Format::Anthropic)
        .unwrap()
        .value;
    assert!(validate(&request, Format::Anthropic).is_empty());
    assert_eq!(
        compaction_bytes(&request),
        vec![p.wire_text()],
        "{request:#}"
    );
}

#[test]
fn codex_rollouts_import_compaction_items_in_place() {
    let conv = import_fixture("codex_compaction.jsonl");
    let kinds: Vec<&str> = conv.items.iter().map(|i| i.kind().as_str()).collect();
    assert_eq!(
        kinds,
        [
            "developer",
            "user",
            "tool_call",
            "tool_result",
            "provider_compaction",
            "user",
            "assistant"
        ],
        "{kinds:?}"
    );
    let ItemBody::ProviderCompaction(p) = conv.items[4].body() else {
        panic!("not a provider compaction");
    };
    assert_eq!(p.wire(), CompactionWire::OpenAiItem);
    assert_eq!(
        p.wire_text(),
        r#"{"type":"compaction","encrypted_content":"Y29kZXgtcmVtb3RlLWNvbXBhY3Rpb24="}"#
    );
    let request = encode(&conv, Format::OpenAiResponses).unwrap().value;
    assert!(validate(&request, Format::OpenAiResponses).is_empty());
    assert_eq!(compaction_bytes(&request), vec![p.wire_text()]);
}
