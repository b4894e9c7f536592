//! Inputs found by fuzzing (`fuzz/`, see FUZZING.md), minimised, with what they must do now.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::Format;
use compact_formats::wire::{decode, encode};
use serde_json::{json, Value};

/// Decodes `request`, expecting a decode error at `path`.
fn refused_at(format: Format, request: Value, path: &str) {
    match decode(format, &request) {
        Ok(conv) => panic!(
            "{format} decoded {request} and wrote back {}",
            encode(&conv, format).unwrap().value
        ),
        Err(e) => {
            assert_eq!(e.path, path, "{e}");
            assert!(e.message.contains("must not be empty"), "{e}");
        }
    }
}

/// An empty tool call id was decoded as "no id" (the model's mark of a legacy Chat
/// `function_call`), so `encode(decode(v))` wrote something else: a Chat `tool` message became a
/// legacy `function` message, an Anthropic or Responses id became `call_legacy_<n>`. An empty id is
/// now a decode error naming it (providers reject empty ids too).
#[test]
fn an_empty_tool_call_id_is_a_decode_error() {
    refused_at(
        Format::OpenAiChat,
        json!({"messages": [{"role": "tool", "tool_call_id": "", "content": "x"}]}),
        "/messages/0/tool_call_id",
    );
    refused_at(
        Format::OpenAiChat,
        json!({"messages": [{"role": "assistant", "tool_calls": [
            {"id": "", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ]}]}),
        "/messages/0/tool_calls/0/id",
    );
    refused_at(
        Format::Anthropic,
        json!({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": ""}
        ]}]}),
        "/messages/0/content/0/tool_use_id",
    );
    refused_at(
        Format::Anthropic,
        json!({"messages": [{"role": "assistant", "content": [
            {"type": "tool_use", "id": "", "name": "bash", "input": {}}
        ]}]}),
        "/messages/0/content/0/id",
    );
    refused_at(
        Format::OpenAiResponses,
        json!({"input": [{"type": "function_call", "call_id": "", "name": "f", "arguments": "{}"}]}),
        "/input/0/call_id",
    );
    refused_at(
        Format::OpenAiResponses,
        json!({"input": [{"type": "function_call_output", "call_id": "", "output": "ok"}]}),
        "/input/0/call_id",
    );
}

/// The legacy Chat forms, which have no id, still decode and write back as they were.
#[test]
fn legacy_function_messages_still_round_trip() {
    let request = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "function", "name": "f", "content": "ok"}
    ]});
    let conv = decode(Format::OpenAiChat, &request).unwrap();
    assert_eq!(encode(&conv, Format::OpenAiChat).unwrap().value, request);
}

/// Found by the `strategies` target: a Responses conversation whose only user message was hidden
/// from the model, compacted into 8k by `observation-masking` (which dropped every message but the
/// system and developer text), was written as an Anthropic request with `messages: []`, which the
/// API rejects. Such a conversation now gets the placeholder user message; an empty `messages` list
/// does not decode (it could not be written back as it was).
#[test]
fn an_anthropic_request_always_has_a_message() {
    use compact_core::model::{Conversation, Item, Role};
    use compact_formats::validate::validate;
    use compact_formats::LossKind;

    let mut conv = Conversation {
        format: Some(Format::OpenAiResponses),
        ..Conversation::default()
    };
    conv.push(Item::text(Role::System, "You are a careful coding agent."));
    conv.push(Item::text(Role::Developer, "Keep step 0 small."));
    let sent = encode(&conv, Format::Anthropic).unwrap();
    assert!(
        validate(&sent.value, Format::Anthropic).is_empty(),
        "{}",
        sent.value
    );
    assert_eq!(sent.value["messages"][0]["role"], "user");
    assert!(sent
        .losses
        .iter()
        .any(|l| l.kind == LossKind::PlaceholderAdded));

    let e = decode(
        Format::Anthropic,
        &json!({"system": "You are helpful.", "messages": []}),
    )
    .unwrap_err();
    assert_eq!(e.path, "/messages");
}
