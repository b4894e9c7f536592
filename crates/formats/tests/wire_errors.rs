//! Malformed requests give a `DecodeError` naming the JSON-pointer path of the offending value.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::Format;
use compact_formats::wire::{anthropic, decode, openai_chat, openai_responses};
use serde_json::{json, Value};

fn path_of(format: Format, v: Value) -> String {
    let err = decode(format, &v).expect_err("must not decode");
    let shown = err.to_string();
    assert!(
        shown.contains(&err.path) && shown.contains(&err.message),
        "{shown}"
    );
    err.path
}

#[test]
fn anthropic_errors_name_the_path() {
    let a = Format::Anthropic;
    assert_eq!(path_of(a, json!([1, 2])), "");
    assert_eq!(path_of(a, json!({"model": "m"})), "/messages");
    assert_eq!(path_of(a, json!({"messages": {}})), "/messages");
    assert_eq!(
        path_of(
            a,
            json!({"messages": [{"role": "user", "content": "a"}, 7]})
        ),
        "/messages/1"
    );
    assert_eq!(
        path_of(a, json!({"messages": [{"role": "tool", "content": "a"}]})),
        "/messages/0/role"
    );
    assert_eq!(
        path_of(a, json!({"messages": [{"role": "user"}]})),
        "/messages/0/content"
    );
    assert_eq!(
        path_of(a, json!({"messages": [{"role": "user", "content": 3}]})),
        "/messages/0/content"
    );
    assert_eq!(path_of(a, json!({"system": 5, "messages": []})), "/system");
    assert_eq!(
        path_of(
            a,
            json!({"system": [{"type": "tool_use", "id": "x", "name": "n", "input": {}}], "messages": []})
        ),
        "/system/0"
    );
    let no_id = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "x"}, {"type": "tool_use", "name": "bash", "input": {}}]}
    ]});
    assert_eq!(path_of(a, no_id), "/messages/1/content/1/id");
    let bad_result = json!({"messages": [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "x"},
        {"type": "tool_result", "content": "y"}
    ]}]});
    assert_eq!(path_of(a, bad_result), "/messages/0/content/1/tool_use_id");
    let bad_flag = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}]}]});
    assert_eq!(path_of(a, bad_flag), "/messages/0/content/0/is_error");
    let nested = json!({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text"}]}]}]});
    assert_eq!(path_of(a, nested), "/messages/0/content/0/content/0/text");
    let no_source = json!({"messages": [{"role": "user", "content": [{"type": "image"}]}]});
    assert_eq!(path_of(a, no_source), "/messages/0/content/0/source");
    let bad_media = json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": 1}}]}]});
    assert_eq!(path_of(a, bad_media), "/messages/0/content/0/source/data");
    let untyped = json!({"messages": [{"role": "user", "content": [{"text": "x"}]}]});
    assert_eq!(path_of(a, untyped), "/messages/0/content/0/type");
}

#[test]
fn chat_errors_name_the_path() {
    let c = Format::OpenAiChat;
    assert_eq!(path_of(c, json!("hello")), "");
    assert_eq!(
        path_of(c, json!({"messages": [{"content": "x"}]})),
        "/messages/0/role"
    );
    assert_eq!(
        path_of(c, json!({"messages": [{"role": "robot", "content": "x"}]})),
        "/messages/0/role"
    );
    assert_eq!(
        path_of(c, json!({"messages": [{"role": "tool", "content": "x"}]})),
        "/messages/0/tool_call_id"
    );
    assert_eq!(
        path_of(
            c,
            json!({"messages": [{"role": "function", "content": "x"}]})
        ),
        "/messages/0/name"
    );
    assert_eq!(
        path_of(
            c,
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]})
        ),
        "/messages/0/content/0/text"
    );
    assert_eq!(
        path_of(
            c,
            json!({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})
        ),
        "/messages/0/content/0/image_url"
    );
    assert_eq!(
        path_of(
            c,
            json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]}]})
        ),
        "/messages/0/content/0/image_url/url"
    );
    let calls = |calls: Value| json!({"messages": [{"role": "assistant", "content": null, "tool_calls": calls}]});
    assert_eq!(path_of(c, calls(json!("x"))), "/messages/0/tool_calls");
    assert_eq!(
        path_of(c, calls(json!([{"id": "a", "type": "function"}]))),
        "/messages/0/tool_calls/0/function"
    );
    assert_eq!(
        path_of(
            c,
            calls(json!([{"type": "function", "function": {"name": "f", "arguments": "{}"}}]))
        ),
        "/messages/0/tool_calls/0/id"
    );
    assert_eq!(
        path_of(
            c,
            calls(json!([{"id": "a", "function": {"name": 3, "arguments": "{}"}}]))
        ),
        "/messages/0/tool_calls/0/function/name"
    );
    assert_eq!(
        path_of(c, calls(json!([{"id": "a", "type": 1, "function": {}}]))),
        "/messages/0/tool_calls/0/type"
    );
    let fc = json!({"messages": [{"role": "assistant", "function_call": {"name": "f"}}]});
    assert_eq!(path_of(c, fc), "/messages/0/function_call/arguments");
}

#[test]
fn responses_errors_name_the_path() {
    let r = Format::OpenAiResponses;
    assert_eq!(path_of(r, json!({"input": 3})), "/input");
    assert_eq!(path_of(r, json!({"input": ["hi"]})), "/input/0");
    assert_eq!(
        path_of(r, json!({"input": [{"content": "x"}]})),
        "/input/0/role"
    );
    assert_eq!(
        path_of(r, json!({"input": [{"role": "tool", "content": "x"}]})),
        "/input/0/role"
    );
    assert_eq!(
        path_of(r, json!({"input": [{"role": "user"}]})),
        "/input/0/content"
    );
    assert_eq!(path_of(r, json!({"input": [{"type": 4}]})), "/input/0/type");
    let fc = json!({"input": [{"role": "user", "content": "x"}, {"type": "function_call", "name": "f", "arguments": "{}"}]});
    assert_eq!(path_of(r, fc), "/input/1/call_id");
    let out = json!({"input": [{"type": "function_call_output", "call_id": "c", "output": 5}]});
    assert_eq!(path_of(r, out), "/input/0/output");
    let part = json!({"input": [{"role": "user", "content": [{"type": "input_text"}]}]});
    assert_eq!(path_of(r, part), "/input/0/content/0/text");
    let shell = json!({"input": [{"type": "local_shell_call_output", "output": "x"}]});
    assert_eq!(path_of(r, shell), "/input/0/call_id");
}

#[test]
fn transcript_formats_are_not_wire_formats() {
    let err = decode(Format::ClaudeCode, &json!({})).unwrap_err();
    assert!(err.to_string().contains("not a wire format"), "{err}");
}

#[test]
fn per_message_decoders_report_the_callers_path() {
    let mut out = Vec::new();
    let err = anthropic::decode_message(
        &json!({"role": "user", "content": [{"type": "tool_use"}]}),
        4,
        "/lines/9/message",
        &mut out,
    )
    .unwrap_err();
    assert_eq!(err.path, "/lines/9/message/content/0/id");
    let err = openai_chat::decode_message(&json!(null), 0, "/history/2", &mut out).unwrap_err();
    assert_eq!(err.path, "/history/2");
    let err = openai_responses::decode_item(
        &json!({"type": "custom_tool_call", "call_id": "c", "name": "n"}),
        0,
        "/p",
    )
    .unwrap_err();
    assert_eq!(err.path, "/p/input");
    assert!(out.is_empty());
}

#[test]
fn unknown_shapes_are_carried_not_rejected() {
    // Unknown block, part and item types are opaque, never errors.
    let a = json!({"messages": [{"role": "user", "content": [{"type": "search_result", "source": "s", "content": []}]}]});
    assert!(decode(Format::Anthropic, &a).is_ok());
    let c = json!({"messages": [{"role": "user", "content": [{"type": "video", "video": {}}, {"no_type": true}]}]});
    assert!(decode(Format::OpenAiChat, &c).is_ok());
    let r = json!({"input": [{"type": "mcp_list_tools", "tools": []}, {"type": "reasoning", "summary": "odd"}]});
    assert!(decode(Format::OpenAiResponses, &r).is_ok());
}
