//! Conversions between the three wire formats: what survives, and the exact losses reported.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{
    Arguments, Checkpoint, Conversation, Format, Item, ItemBody, ItemKind, Role, ToolCall,
    ToolCallKind, ToolResult,
};
use compact_formats::wire::{decode, encode, Encoded, LossKind};
use compact_formats::EncodeError;
use serde_json::{json, Value};

const WIRE: [Format; 3] = [
    Format::OpenAiChat,
    Format::OpenAiResponses,
    Format::Anthropic,
];

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/wire/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn convert(from: Format, to: Format, v: &Value) -> Encoded {
    encode(&decode(from, v).unwrap(), to).unwrap()
}

/// `(item, kind)` of every loss.
fn losses(e: &Encoded) -> Vec<(Option<usize>, LossKind)> {
    e.losses.iter().map(|l| (l.item, l.kind)).collect()
}

/// Snapshot of every fixture converted to every other format, with its losses, kept as readable JSON
/// under `tests/fixtures/wire/converted/`. Run with `UPDATE_EXPECT=1` to rewrite them after a
/// deliberate change, then review the diff.
#[test]
fn conversions_match_their_snapshots() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let dir = format!(
        "{}/tests/fixtures/wire/converted",
        env!("CARGO_MANIFEST_DIR")
    );
    for (from, stem) in [
        (Format::Anthropic, "anthropic_agent"),
        (Format::Anthropic, "anthropic_claude_code"),
        (Format::OpenAiChat, "chat_agent"),
        (Format::OpenAiResponses, "responses_agent"),
    ] {
        for to in WIRE.into_iter().filter(|t| *t != from) {
            let out = convert(from, to, &fixture(&format!("{stem}.json")));
            let losses: Vec<String> = out.losses.iter().map(ToString::to_string).collect();
            let actual = json!({"request": out.value, "losses": losses});
            let path = format!("{dir}/{stem}.to-{to}.json");
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, serde_json::to_string_pretty(&actual).unwrap() + "\n")
                    .unwrap();
                continue;
            }
            let expected: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| {
                    panic!("{path}: {e} (run with UPDATE_EXPECT=1 to create it)")
                }))
                .unwrap();
            assert!(
                expected == actual,
                "{path} differs; actual:\n{}",
                serde_json::to_string_pretty(&actual).unwrap()
            );
        }
    }
}

#[test]
fn transcript_items_keep_their_fields_in_their_wire_format() {
    // Items imported from a Claude Code transcript (origin claude-code, no envelope of the target)
    // still carry Anthropic fields such as cache_control.
    let req = json!({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    ]}]});
    let mut conv = decode(Format::Anthropic, &req).unwrap();
    for item in &mut conv.items {
        item.meta.envelope = None;
        item.meta.origin = Some(Format::ClaudeCode);
    }
    conv.format = Some(Format::ClaudeCode);
    let out = encode(&conv, Format::Anthropic).unwrap();
    assert!(out.losses.is_empty(), "{:?}", out.losses);
    assert_eq!(
        out.value["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
    let chat = encode(&conv, Format::OpenAiChat).unwrap();
    assert_eq!(losses(&chat), vec![(Some(0), LossKind::FieldsDropped)]);
    assert_eq!(chat.value["max_completion_tokens"], 5);
}

#[test]
fn every_fixture_converts_to_a_decodable_request_that_keeps_its_tool_pairs() {
    for (from, name) in [
        (Format::Anthropic, "anthropic_agent.json"),
        (Format::Anthropic, "anthropic_claude_code.json"),
        (Format::OpenAiChat, "chat_agent.json"),
        (Format::OpenAiResponses, "responses_agent.json"),
        (Format::OpenAiResponses, "responses_string_input.json"),
    ] {
        let src = decode(from, &fixture(name)).unwrap();
        let client_calls = src
            .items
            .iter()
            .filter(|i| {
                i.as_tool_call()
                    .is_some_and(|c| c.kind != ToolCallKind::Server)
            })
            .count();
        for to in WIRE.into_iter().filter(|t| *t != from) {
            let out = encode(&src, to).unwrap();
            let back = decode(to, &out.value).unwrap_or_else(|e| panic!("{name} -> {to}: {e}"));
            let pairing = back.pairing();
            assert_eq!(pairing.orphan_count(), 0, "{name} -> {to}: {pairing:?}");
            assert_eq!(pairing.pairs.len(), client_calls, "{name} -> {to}");
            // The converted request is itself lossless in its new format.
            assert_eq!(
                encode(&back, to).unwrap().value,
                out.value,
                "{name} -> {to}"
            );
            // Losses name real items, in order.
            let items: Vec<usize> = out.losses.iter().filter_map(|l| l.item).collect();
            assert!(items.windows(2).all(|w| w[0] <= w[1]) && items.iter().all(|i| *i < src.len()));
        }
    }
}

/// Claude Code's system message among the messages stays a system message at its place in Chat and
/// Responses (both have one); its `cache_control` is reported dropped as any block's is.
#[test]
fn claude_code_system_message_stays_a_system_message_in_openai_formats() {
    let v = fixture("anthropic_claude_code.json");
    for (to, list) in [
        (Format::OpenAiChat, "messages"),
        (Format::OpenAiResponses, "input"),
    ] {
        let out = convert(Format::Anthropic, to, &v);
        let messages = out.value[list].as_array().unwrap();
        let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
        assert_eq!(&roles[..3], ["system", "user", "system"], "{to}");
        let env = &messages[2];
        let text = env["content"]
            .as_str()
            .or_else(|| env["content"][0]["text"].as_str())
            .unwrap();
        assert!(text.starts_with("# Environment\n"), "{to}: {env}");
        // Item 2 is the system message.
        assert!(
            out.losses
                .iter()
                .any(|l| l.item == Some(2) && l.kind == LossKind::FieldsDropped),
            "{to}: {:?}",
            out.losses
        );
    }
}

#[test]
fn anthropic_to_chat_drops_thinking_and_error_flags() {
    let req = json!({
        "model": "claude-sonnet-4-5", "max_tokens": 1024, "top_k": 5,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "List files."},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Use ls.", "signature": "sig"},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {"cmd": "ls"}, "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ls: denied", "is_error": true},
                {"type": "text", "text": "Try sudo?"}
            ]}
        ]
    });
    let out = convert(Format::Anthropic, Format::OpenAiChat, &req);
    assert_eq!(
        out.value,
        json!({
            "model": "claude-sonnet-4-5", "max_completion_tokens": 1024,
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "List files."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "t1", "content": "ls: denied"},
                {"role": "user", "content": "Try sudo?"}
            ]
        })
    );
    assert_eq!(
        losses(&out),
        vec![
            (Some(2), LossKind::ReasoningDropped),
            (Some(3), LossKind::FieldsDropped),
            (Some(4), LossKind::ErrorFlagDropped),
            (None, LossKind::RequestFieldDropped),
        ]
    );
    assert_eq!(out.losses[3].detail, "top_k");
    assert_eq!(out.losses[1].detail, "tool call: cache_control");
}

#[test]
fn responses_to_anthropic_drops_encrypted_reasoning_and_compaction() {
    let req = json!({
        "model": "gpt-5",
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Repo at /r."}]},
            {"role": "user", "content": "Show the README."},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "cat it"}], "encrypted_content": "gAAA"},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"command\":[\"cat\",\"README.md\"]}"},
            {"type": "function_call_output", "call_id": "c1", "output": "# Demo"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
            {"type": "compaction", "encrypted_content": "gBBB"}
        ]
    });
    let out = convert(Format::OpenAiResponses, Format::Anthropic, &req);
    assert_eq!(
        out.value,
        json!({
            "model": "gpt-5",
            "system": "Repo at /r.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Show the README."}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c1", "name": "shell", "input": {"command": ["cat", "README.md"]}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "# Demo"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c2", "name": "apply_patch", "input": {"input": "*** Begin Patch"}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "ok"}]}
            ]
        })
    );
    assert_eq!(
        losses(&out),
        vec![
            (Some(0), LossKind::RoleChanged),
            (Some(2), LossKind::ReasoningDropped),
            (Some(5), LossKind::ArgumentsWrapped),
            (Some(5), LossKind::ToolKindChanged),
            (Some(7), LossKind::OpaqueItemDropped),
        ]
    );
}

#[test]
fn chat_to_anthropic_merges_roles_and_converts_data_urls() {
    let req = json!({
        "model": "gpt-4.1",
        "messages": [
            {"role": "system", "content": "S1"},
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/AA=="}}
            ]},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "g", "arguments": "[1]"}}
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "b", "content": "B"},
            {"role": "system", "content": "S2"},
            {"role": "user", "content": "thanks"}
        ]
    });
    let out = convert(Format::OpenAiChat, Format::Anthropic, &req);
    assert_eq!(out.value["system"], "S1");
    assert_eq!(
        out.value["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/AA=="}}
            ]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "a", "name": "f", "input": {}},
                {"type": "tool_use", "id": "b", "name": "g", "input": {"input": "[1]"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "A"},
                {"type": "tool_result", "tool_use_id": "b", "content": "B"},
                {"type": "text", "text": "S2"},
                {"type": "text", "text": "thanks"}
            ]}
        ])
    );
    assert_eq!(
        losses(&out),
        vec![
            (Some(1), LossKind::PartChanged),
            (Some(4), LossKind::ArgumentsWrapped),
            (Some(7), LossKind::MovedToUser),
        ]
    );
}

#[test]
fn anthropic_requests_open_with_a_user_turn() {
    use compact_formats::validate::validate;
    use compact_formats::wire::anthropic::LEADING_USER_TEXT;
    let placeholder = json!({"role": "user", "content": LEADING_USER_TEXT});
    // A Chat conversation that starts with the assistant.
    let chat = json!({"model": "m", "messages": [
        {"role": "system", "content": "S"},
        {"role": "assistant", "content": "Hello, what shall we build?"},
        {"role": "user", "content": "A kettle."}
    ]});
    let out = convert(Format::OpenAiChat, Format::Anthropic, &chat);
    assert_eq!(out.value["messages"][0], placeholder);
    assert_eq!(out.value["messages"][1]["role"], "assistant");
    assert_eq!(losses(&out), vec![(None, LossKind::PlaceholderAdded)]);
    assert_eq!(validate(&out.value, Format::Anthropic), vec![]);
    // An Anthropic conversation whose opening user message is no longer sent (as after compaction).
    let req = json!({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}
    ]});
    let mut conv = decode(Format::Anthropic, &req).unwrap();
    conv.items[0].meta.visibility.model = false;
    let out = encode(&conv, Format::Anthropic).unwrap();
    assert_eq!(out.value["messages"][0], placeholder);
    assert_eq!(out.value["messages"].as_array().unwrap().len(), 3);
    assert_eq!(validate(&out.value, Format::Anthropic), vec![]);
    // Claude Code's: its system message follows the opening user message, which is no longer sent.
    let v = fixture("anthropic_claude_code.json");
    let mut conv = decode(Format::Anthropic, &v).unwrap();
    conv.items[1].meta.visibility.model = false;
    let out = encode(&conv, Format::Anthropic).unwrap();
    assert_eq!(out.value["messages"][0], placeholder);
    assert_eq!(out.value["messages"][1], v["messages"][1]);
    assert_eq!(losses(&out), vec![(None, LossKind::PlaceholderAdded)]);
    assert_eq!(validate(&out.value, Format::Anthropic), vec![]);
    // A request that already opened with the assistant is written back as it was (exact round trip).
    let mut odd = req.clone();
    odd["messages"].as_array_mut().unwrap().remove(0);
    assert_eq!(
        convert(Format::Anthropic, Format::Anthropic, &odd).value,
        odd
    );
}

#[test]
fn interleaved_thinking_does_not_split_a_chat_assistant_message() {
    use compact_formats::validate::validate;
    // Thinking between two parallel calls (interleaved thinking) is dropped for Chat where it stands:
    // both calls stay in one assistant message, answered by the tool messages after it.
    let req = json!({"model": "m", "max_tokens": 5, "messages": [
        {"role": "user", "content": "Look at both files."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "read", "input": {"path": "a.rs"}},
            {"type": "thinking", "thinking": "Also b.", "signature": "c2ln"},
            {"type": "tool_use", "id": "b", "name": "read", "input": {"path": "b.rs"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "A"},
            {"type": "tool_result", "tool_use_id": "b", "content": "B"}
        ]}
    ]});
    let out = convert(Format::Anthropic, Format::OpenAiChat, &req);
    let roles: Vec<&str> = out.value["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool"]);
    assert_eq!(
        out.value["messages"][1]["tool_calls"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(losses(&out), vec![(Some(2), LossKind::ReasoningDropped)]);
    assert_eq!(validate(&out.value, Format::OpenAiChat), vec![]);
}

#[test]
fn legacy_function_calls_get_ids_in_other_formats() {
    let req = json!({"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "function_call": {"name": "run", "arguments": "{\"x\":1}"}},
        {"role": "function", "name": "run", "content": "done"}
    ]});
    for to in [Format::OpenAiResponses, Format::Anthropic] {
        let out = convert(Format::OpenAiChat, to, &req);
        assert_eq!(
            losses(&out),
            vec![(Some(1), LossKind::IdSynthesized)],
            "{to}"
        );
        let back = decode(to, &out.value).unwrap();
        let p = back.pairing();
        assert_eq!((p.pairs.len(), p.orphan_count()), (1, 0), "{to}");
        assert_eq!(
            back.items[1].as_tool_call().unwrap().call_id,
            "call_legacy_1"
        );
    }
}

#[test]
fn responses_to_chat_keeps_custom_tools_and_drops_reasoning() {
    let req = json!({
        "model": "gpt-5", "max_output_tokens": 100,
        "tools": [{"type": "custom", "name": "apply_patch", "description": "patch"}, {"type": "web_search"}],
        "input": [
            {"role": "user", "content": "patch it"},
            {"type": "reasoning", "id": "rs", "summary": [], "encrypted_content": "x"},
            {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": "diff"},
            {"type": "custom_tool_call_output", "call_id": "c", "output": [{"type": "input_text", "text": "ok"}]}
        ]
    });
    let out = convert(Format::OpenAiResponses, Format::OpenAiChat, &req);
    assert_eq!(
        out.value,
        json!({
            "model": "gpt-5", "max_completion_tokens": 100,
            "messages": [
                {"role": "user", "content": "patch it"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c", "type": "custom", "custom": {"name": "apply_patch", "input": "diff"}}
                ]},
                {"role": "tool", "tool_call_id": "c", "content": "ok"}
            ],
            "tools": [{"type": "custom", "custom": {"name": "apply_patch", "description": "patch"}}]
        })
    );
    assert_eq!(
        losses(&out),
        vec![
            (Some(1), LossKind::ReasoningDropped),
            (None, LossKind::ToolSpecDropped)
        ]
    );
    // And back: the custom call and its output keep their kind.
    let back = convert(Format::OpenAiChat, Format::OpenAiResponses, &out.value);
    assert_eq!(back.value["input"][2]["type"], "custom_tool_call_output");
    assert_eq!(
        back.value["tools"][0],
        json!({"type": "custom", "name": "apply_patch", "description": "patch"})
    );
}

#[test]
fn anthropic_images_become_data_urls_for_openai() {
    let req = json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}},
        {"type": "image", "source": {"type": "url", "url": "https://x.invalid/a.png"}}
    ]}]});
    let chat = convert(Format::Anthropic, Format::OpenAiChat, &req);
    assert_eq!(
        chat.value["messages"][0]["content"],
        json!([
            {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}},
            {"type": "image_url", "image_url": {"url": "https://x.invalid/a.png"}}
        ])
    );
    assert_eq!(losses(&chat), vec![(Some(0), LossKind::PartChanged)]);
    let resp = convert(Format::Anthropic, Format::OpenAiResponses, &req);
    assert_eq!(
        resp.value["input"][0]["content"][0],
        json!({"type": "input_image", "image_url": "data:image/gif;base64,R0lG"})
    );
    assert_eq!(resp.value["max_output_tokens"], 10);
}

fn native_conversation() -> Conversation {
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "sys"));
    conv.push(Item::text(Role::User, "fix it"));
    conv.push(Item::new(ItemBody::ToolCall(ToolCall {
        call_id: "k1".into(),
        name: "bash".into(),
        arguments: Arguments::Json(json!({"command": "make"})),
        kind: ToolCallKind::Function,
        extra: Default::default(),
    })));
    conv.push(Item::new(ItemBody::ToolResult(ToolResult {
        call_id: "k1".into(),
        tool_name: Some("bash".into()),
        parts: vec![compact_core::model::Part::text("ok")],
        is_error: false,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Default::default(),
    })));
    let cp = Checkpoint {
        text: "Earlier: ran make.".into(),
        generation: 1,
        ..Checkpoint::default()
    };
    conv.push(Item::new(ItemBody::Checkpoint(cp)));
    conv.push(Item::text(Role::Assistant, "done"));
    conv
}

#[test]
fn native_conversations_encode_without_loss_and_checkpoints_come_back() {
    let conv = native_conversation();
    for to in WIRE {
        let out = encode(&conv, to).unwrap();
        assert!(out.losses.is_empty(), "{to}: {:?}", out.losses);
        let back = decode(to, &out.value).unwrap();
        let kinds: Vec<ItemKind> = back.items.iter().map(Item::kind).collect();
        assert_eq!(
            kinds,
            vec![
                ItemKind::System,
                ItemKind::User,
                ItemKind::ToolCall,
                ItemKind::ToolResult,
                ItemKind::Checkpoint,
                ItemKind::Assistant
            ],
            "{to}"
        );
        let ItemBody::Checkpoint(cp) = back.items[4].body() else {
            unreachable!()
        };
        assert_eq!((cp.text.as_str(), cp.generation), ("Earlier: ran make.", 1));
        assert_eq!(
            back.items[3].as_tool_result().unwrap().tool_name.as_deref(),
            Some("bash")
        );
    }
}

#[test]
fn encoding_to_a_transcript_format_is_an_error() {
    let err = encode(&native_conversation(), Format::ClaudeCode).unwrap_err();
    assert_eq!(err, EncodeError::NotWireFormat(Format::ClaudeCode));
}

#[test]
fn message_level_fields_of_another_format_are_reported() {
    let req = json!({"model": "m", "stop": null, "messages": [
        {"role": "user", "name": "dana", "content": "hi"},
        {"role": "assistant", "content": "hello", "refusal": null}
    ]});
    let out = convert(Format::OpenAiChat, Format::OpenAiResponses, &req);
    assert_eq!(losses(&out), vec![(Some(0), LossKind::FieldsDropped)]);
    assert_eq!(out.losses[0].detail, "message: name");
    assert_eq!(
        out.value,
        json!({"model": "m", "input": [
            {"type": "message", "role": "user", "content": "hi"},
            {"type": "message", "role": "assistant", "content": "hello"}
        ]})
    );
}
