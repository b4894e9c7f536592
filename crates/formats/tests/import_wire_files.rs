//! Plain wire-format files: request objects, JSON arrays of messages/items and JSONL with one message
//! or item per line are detected and decoded through the wire decoders.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Format, ItemKind};
use compact_formats::import::{detect, import, ImportMode, ImportOptions};
use serde_json::Value;

const WIRE_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/wire");

fn strict() -> ImportOptions {
    ImportOptions::default()
}

fn kinds(bytes: &[u8], name: &str) -> (Format, Vec<ItemKind>) {
    let imp = import(bytes, name, &strict()).unwrap_or_else(|e| panic!("{name}: {e}"));
    (
        imp.format,
        imp.conversation.items.iter().map(|i| i.kind()).collect(),
    )
}

#[test]
fn request_files_import_like_the_wire_decoder() {
    let cases = [
        ("anthropic_agent.json", Format::Anthropic),
        ("chat_agent.json", Format::OpenAiChat),
        ("responses_agent.json", Format::OpenAiResponses),
        ("responses_string_input.json", Format::OpenAiResponses),
    ];
    for (name, format) in cases {
        let path = format!("{WIRE_FIXTURES}/{name}");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(detect(&bytes, name), Some(format), "{name}");
        let imp = import(&bytes, name, &strict()).unwrap();
        let value: Value = serde_json::from_slice(&bytes).unwrap();
        let direct = compact_formats::wire::decode(format, &value).unwrap();
        assert_eq!(imp.conversation.items.len(), direct.items.len(), "{name}");
        let a: Vec<ItemKind> = imp.conversation.items.iter().map(|i| i.kind()).collect();
        let b: Vec<ItemKind> = direct.items.iter().map(|i| i.kind()).collect();
        assert_eq!(a, b, "{name}");
        assert_eq!(imp.conversation.format, Some(format));
    }
}

const CHAT_JSONL: &str = r#"{"role":"system","content":"You are terse."}
{"role":"user","content":"List the files."}
{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}}]}
{"role":"tool","tool_call_id":"call_1","content":"Cargo.toml\nsrc"}
{"role":"assistant","content":"Two entries: Cargo.toml and src."}
"#;

#[test]
fn chat_jsonl_of_messages() {
    let (format, k) = kinds(CHAT_JSONL.as_bytes(), "chat.jsonl");
    assert_eq!(format, Format::OpenAiChat);
    assert_eq!(
        k,
        [
            ItemKind::System,
            ItemKind::User,
            ItemKind::ToolCall,
            ItemKind::ToolResult,
            ItemKind::Assistant
        ]
    );
    let imp = import(CHAT_JSONL.as_bytes(), "chat.jsonl", &strict()).unwrap();
    assert_eq!(
        imp.conversation.items[3]
            .as_tool_result()
            .unwrap()
            .tool_name
            .as_deref(),
        Some("ls")
    );
    assert_eq!(imp.conversation.pairing().pairs, vec![(2, 3)]);
    assert_eq!(imp.stats.records_read, 5);
}

#[test]
fn chat_jsonl_with_a_broken_line() {
    let broken = CHAT_JSONL.replace(r#"{"role":"tool","#, r#"{"role":"tool""#);
    let err = import(broken.as_bytes(), "chat.jsonl", &strict()).unwrap_err();
    assert_eq!(err.location().unwrap().line, 4, "{err}");
    let lenient = ImportOptions {
        format: None,
        mode: ImportMode::Lenient,
    };
    let imp = import(broken.as_bytes(), "chat.jsonl", &lenient).unwrap();
    assert_eq!(imp.conversation.items.len(), 4);
    assert_eq!(imp.warnings.len(), 1);
}

#[test]
fn anthropic_array_of_messages() {
    let text = r#"[
      {"role": "user", "content": "Read main.rs"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Read it.", "signature": "c2ln"},
        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "main.rs"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}", "is_error": true}]}
    ]"#;
    let (format, k) = kinds(text.as_bytes(), "msgs.json");
    assert_eq!(format, Format::Anthropic);
    assert_eq!(
        k,
        [
            ItemKind::User,
            ItemKind::Reasoning,
            ItemKind::ToolCall,
            ItemKind::ToolResult
        ]
    );
    let imp = import(text.as_bytes(), "msgs.json", &strict()).unwrap();
    assert!(imp.conversation.items[3].as_tool_result().unwrap().is_error);
    assert_eq!(imp.stats.records_read, 3);
}

#[test]
fn anthropic_array_with_a_leading_system_message() {
    let text = r#"[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"text","text":"hi"}]}]"#;
    let opts = ImportOptions {
        format: Some(Format::Anthropic),
        mode: ImportMode::Strict,
    };
    let imp = import(text.as_bytes(), "m.json", &opts).unwrap();
    let k: Vec<ItemKind> = imp.conversation.items.iter().map(|i| i.kind()).collect();
    assert_eq!(k, [ItemKind::System, ItemKind::User]);
}

#[test]
fn responses_items_as_array_and_jsonl() {
    let items = [
        r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"run tests"}]}"#,
        r#"{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"command\":[\"cargo\",\"test\"]}"}"#,
        r#"{"type":"function_call_output","call_id":"c1","output":"ok"}"#,
        r#"{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}"#,
    ];
    let want = [
        ItemKind::User,
        ItemKind::ToolCall,
        ItemKind::ToolResult,
        ItemKind::Reasoning,
    ];
    let array = format!("[{}]", items.join(","));
    assert_eq!(
        kinds(array.as_bytes(), "input.json"),
        (Format::OpenAiResponses, want.to_vec())
    );
    let jsonl = items.join("\n");
    assert_eq!(
        kinds(jsonl.as_bytes(), "input.jsonl"),
        (Format::OpenAiResponses, want.to_vec())
    );
}

#[test]
fn single_message_document() {
    let (format, k) = kinds(br#"{"role":"user","content":"hello"}"#, "one.json");
    assert_eq!(format, Format::OpenAiChat);
    assert_eq!(k, [ItemKind::User]);
}

#[test]
fn forced_format_that_does_not_fit_is_a_decode_error() {
    let opts = ImportOptions {
        format: Some(Format::Anthropic),
        mode: ImportMode::Strict,
    };
    let err = import(CHAT_JSONL.as_bytes(), "chat.jsonl", &opts).unwrap_err();
    assert!(err.to_string().starts_with("chat.jsonl:"), "{err}");
}
