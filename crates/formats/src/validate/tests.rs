//! Every rule of the validator on small hand-written requests, valid and invalid.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::{validate, validate_against, Rule, Violation};
use compact_core::model::Format;
use serde_json::{json, Value};

/// `(path, rule)` of each violation of `request` in `format`.
fn found(request: &Value, format: Format) -> Vec<(String, Rule)> {
    validate(request, format)
        .into_iter()
        .map(|v| (v.path, v.rule))
        .collect()
}

fn one(path: &str, rule: Rule) -> Vec<(String, Rule)> {
    vec![(path.to_owned(), rule)]
}

fn anthropic(messages: Value) -> Value {
    json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages})
}

fn chat(messages: Value) -> Value {
    json!({"model": "gpt-5", "messages": messages})
}

fn responses(input: Value) -> Value {
    json!({"model": "gpt-5", "input": input})
}

fn tool_use(id: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": "ls"}})
}

fn tool_result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

// ---- Anthropic -------------------------------------------------------------------------------------

#[test]
fn anthropic_parallel_calls_answered_in_one_user_message_are_valid() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [text("Two at once."), tool_use("a"), tool_use("b")]},
        {"role": "user", "content": [tool_result("b"), tool_result("a"), text("and carry on")]},
        {"role": "assistant", "content": "Done."}
    ]));
    assert_eq!(found(&request, Format::Anthropic), vec![]);
}

#[test]
fn anthropic_consecutive_user_and_assistant_messages_are_merged_before_pairing() {
    // Each call in its own assistant message, each result in its own user message, as a transcript
    // that logs one block per record would be sent: the API merges them into two turns.
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "assistant", "content": [tool_use("b")]},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "user", "content": [tool_result("b")]},
        {"role": "user", "content": "next question"}
    ]));
    assert_eq!(found(&request, Format::Anthropic), vec![]);
}

#[test]
fn anthropic_call_answered_two_turns_later_is_unanswered_and_its_result_orphaned() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": "what happened?"},
        {"role": "assistant", "content": "Let me see."},
        {"role": "user", "content": [tool_result("a")]}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/1/content/0".to_owned(), Rule::UnansweredCall),
            ("/messages/4/content/0".to_owned(), Rule::OrphanResult),
        ]
    );
}

#[test]
fn anthropic_request_ending_with_an_unanswered_call_is_a_violation() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [text("Running."), tool_use("a")]}
    ]));
    let v = validate(&request, Format::Anthropic);
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].rule, Rule::UnansweredCall);
    assert_eq!(v[0].path, "/messages/1/content/1");
    assert!(v[0].message.contains("request ends"), "{}", v[0].message);
}

#[test]
fn anthropic_result_for_a_call_of_an_older_turn_is_an_orphan() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "assistant", "content": [tool_use("b")]},
        {"role": "user", "content": [tool_result("b"), tool_result("a")]}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        one("/messages/4/content/1", Rule::OrphanResult)
    );
}

#[test]
fn anthropic_result_in_the_first_turn_is_an_orphan() {
    let request = anthropic(json!([{"role": "user", "content": [tool_result("x"), text("hi")]}]));
    assert_eq!(
        found(&request, Format::Anthropic),
        one("/messages/0/content/0", Rule::OrphanResult)
    );
}

#[test]
fn anthropic_results_must_come_before_other_user_content() {
    // The text sits in an earlier user message: after merging it precedes the result.
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": "interrupting"},
        {"role": "user", "content": [tool_result("a")]}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        one("/messages/3/content/0", Rule::ResultAfterContent)
    );
}

#[test]
fn anthropic_duplicate_ids_and_duplicate_results() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a"), tool_result("a")]},
        {"role": "assistant", "content": [tool_use("a")]},
        {"role": "user", "content": [tool_result("a")]}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/2/content/1".to_owned(), Rule::DuplicateResult),
            ("/messages/3/content/0".to_owned(), Rule::DuplicateCallId),
        ]
    );
}

#[test]
fn anthropic_server_tool_use_needs_no_tool_result() {
    let request = anthropic(json!([
        {"role": "user", "content": "search"},
        {"role": "assistant", "content": [
            {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"query": "rust"}},
            {"type": "web_search_tool_result", "tool_use_id": "srv_1", "content": []},
            text("Found it.")
        ]},
        {"role": "user", "content": "thanks"}
    ]));
    assert_eq!(found(&request, Format::Anthropic), vec![]);
}

#[test]
fn anthropic_roles_first_turn_and_empty_messages() {
    assert_eq!(
        found(&anthropic(json!([])), Format::Anthropic),
        one("/messages", Rule::NoMessages)
    );
    assert_eq!(
        found(&json!({"model": "m"}), Format::Anthropic),
        one("/messages", Rule::NoMessages)
    );
    let request = anthropic(json!([
        {"role": "assistant", "content": "I start."},
        {"role": "developer", "content": "no developer role in messages"},
        {"role": "user", "content": "ok"}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/0".to_owned(), Rule::FirstTurnNotUser),
            ("/messages/1/role".to_owned(), Rule::InvalidRole),
        ]
    );
}

/// Claude Code sends a `system` message after the first user message: the API takes it, and the
/// messages around it are turns as if it were not there.
#[test]
fn anthropic_system_messages_are_transparent_to_turns() {
    let request = anthropic(json!([
        {"role": "user", "content": [text("<system-reminder>\nctx\n</system-reminder>"), text("fix it")]},
        {"role": "system", "content": [
            {"type": "text", "text": "# Environment\n - Platform: linux", "cache_control": {"type": "ephemeral"}}
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "run it", "signature": "c2ln"}, tool_use("a")
        ]},
        {"role": "system", "content": "a note between a call and its result"},
        {"role": "user", "content": [tool_result("a")]},
        {"role": "assistant", "content": "Done."},
        {"role": "system", "content": "and one between two user messages"},
        {"role": "user", "content": "thanks"},
        {"role": "system", "content": "then"},
        {"role": "user", "content": "bye"}
    ]));
    assert_eq!(found(&request, Format::Anthropic), vec![]);
    // What the API rejects is still found through them: a result after other content of its (merged)
    // turn, a call left unanswered.
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "system", "content": "env"},
        {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
        {"role": "user", "content": "wait"},
        {"role": "system", "content": "env"},
        {"role": "user", "content": [tool_result("a")]}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/2/content/1".to_owned(), Rule::UnansweredCall),
            ("/messages/5/content/0".to_owned(), Rule::ResultAfterContent),
        ]
    );
}

#[test]
fn anthropic_system_messages_do_not_open_the_request_nor_hold_tool_blocks() {
    let request = anthropic(json!([
        {"role": "system", "content": "env"},
        {"role": "assistant", "content": "I start."}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        one("/messages/0", Rule::FirstTurnNotUser)
    );
    let request = anthropic(json!([
        {"role": "system", "content": "env"},
        {"role": "user", "content": "hi"}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        one("/messages/0", Rule::FirstTurnNotUser)
    );
    let request = anthropic(json!([
        {"role": "user", "content": "hi"},
        {"role": "system", "content": [text("env"), tool_use("s"), tool_result("s"),
            {"type": "thinking", "thinking": "hm", "signature": "c2ln"}]},
        {"role": "system", "content": ""},
        {"role": "system", "content": []},
        {"role": "tool", "content": "x"},
        // Per-turn controls (Claude Code after a resumed compaction): empty, and valid.
        {"role": "system", "content": [], "output_config": {"effort": "medium"}}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/1/content/1".to_owned(), Rule::BlockInWrongRole),
            ("/messages/1/content/2".to_owned(), Rule::BlockInWrongRole),
            ("/messages/1/content/3".to_owned(), Rule::BlockInWrongRole),
            ("/messages/2/content".to_owned(), Rule::EmptyContent),
            ("/messages/3/content".to_owned(), Rule::EmptyContent),
            ("/messages/4/role".to_owned(), Rule::InvalidRole),
        ]
    );
}

#[test]
fn anthropic_empty_content_except_a_final_assistant_prefill() {
    let request = anthropic(json!([
        {"role": "user", "content": ""},
        {"role": "assistant", "content": []},
        {"role": "user", "content": [text(" \n")]},
        {"role": "assistant", "content": ""}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/0/content".to_owned(), Rule::EmptyContent),
            ("/messages/1/content".to_owned(), Rule::EmptyContent),
            ("/messages/2/content/0".to_owned(), Rule::EmptyContent),
        ]
    );
}

#[test]
fn anthropic_blocks_in_the_wrong_role() {
    let request = anthropic(json!([
        {"role": "user", "content": [text("hi"), tool_use("u1"),
            {"type": "thinking", "thinking": "hm", "signature": "c2ln"}]},
        {"role": "assistant", "content": [tool_result("u1"), text("ok")]},
        {"role": "user", "content": "fine"}
    ]));
    let rules = found(&request, Format::Anthropic);
    assert!(rules.contains(&("/messages/0/content/1".to_owned(), Rule::BlockInWrongRole)));
    assert!(rules.contains(&("/messages/0/content/2".to_owned(), Rule::BlockInWrongRole)));
    assert!(rules.contains(&("/messages/1/content/0".to_owned(), Rule::BlockInWrongRole)));
}

#[test]
fn anthropic_thinking_needs_a_signature_and_redacted_thinking_data() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "c2ln"},
            {"type": "thinking", "thinking": "plan", "signature": ""},
            {"type": "thinking", "thinking": "plan"},
            {"type": "redacted_thinking", "data": "ZGF0YQ=="},
            {"type": "redacted_thinking"},
            text("Answer.")
        ]}
    ]));
    assert_eq!(
        found(&request, Format::Anthropic),
        vec![
            ("/messages/1/content/1".to_owned(), Rule::UnsignedThinking),
            ("/messages/1/content/2".to_owned(), Rule::UnsignedThinking),
            ("/messages/1/content/4".to_owned(), Rule::UnsignedThinking),
        ]
    );
}

#[test]
fn anthropic_malformed_shapes_are_reported_not_panicked_on() {
    assert_eq!(
        found(&json!([1, 2]), Format::Anthropic),
        one("", Rule::Malformed)
    );
    assert_eq!(
        found(&json!({"messages": "hi"}), Format::Anthropic),
        one("/messages", Rule::Malformed)
    );
    let request = anthropic(json!([
        "not a message",
        {"role": "user"},
        {"role": "user", "content": 3},
        {"role": "user", "content": [7, {"text": "no type"}, {"type": "tool_use", "name": "x", "input": {}},
            {"type": "tool_use", "id": "t", "name": "x", "input": "not an object"},
            {"type": "tool_result", "content": "no id"}]}
    ]));
    let rules = found(&request, Format::Anthropic);
    assert!(
        rules.iter().all(|(_, r)| *r == Rule::Malformed),
        "{rules:?}"
    );
    assert_eq!(rules.len(), 8, "{rules:?}");
}

// ---- Anthropic: reasoning against the original ------------------------------------------------------

#[test]
fn thinking_must_be_carried_unchanged_from_the_original() {
    let original = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan A", "signature": "sig-a"},
            {"type": "redacted_thinking", "data": "opaque"},
            text("Done.")
        ]}
    ]));
    let kept = anthropic(json!([
        {"role": "user", "content": "<compact-checkpoint generation=\"1\">\nearlier\n</compact-checkpoint>"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan A", "signature": "sig-a", "cache_control": {"type": "ephemeral"}},
            {"type": "redacted_thinking", "data": "opaque"}
        ]}
    ]));
    assert_eq!(
        validate_against(&kept, &original, Format::Anthropic),
        vec![]
    );
    let edited = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan A (shortened)", "signature": "sig-a"},
            {"type": "redacted_thinking", "data": "opaque!"}
        ]}
    ]));
    let rules: Vec<(String, Rule)> = validate_against(&edited, &original, Format::Anthropic)
        .into_iter()
        .map(|v| (v.path, v.rule))
        .collect();
    assert_eq!(
        rules,
        vec![
            ("/messages/1/content/0".to_owned(), Rule::ReasoningModified),
            ("/messages/1/content/1".to_owned(), Rule::ReasoningModified),
        ]
    );
}

// ---- OpenAI Chat -----------------------------------------------------------------------------------

fn chat_call(id: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": "bash", "arguments": "{}"}})
}

fn tool_msg(id: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": "ok"})
}

#[test]
fn chat_parallel_calls_answered_in_any_order_are_valid() {
    let request = chat(json!([
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [chat_call("a"), chat_call("b")]},
        tool_msg("b"),
        tool_msg("a"),
        {"role": "assistant", "content": "done"}
    ]));
    assert_eq!(found(&request, Format::OpenAiChat), vec![]);
}

#[test]
fn chat_call_must_be_answered_before_the_next_non_tool_message() {
    let request = chat(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [chat_call("a"), chat_call("b")]},
        tool_msg("a"),
        {"role": "user", "content": "hurry"},
        tool_msg("b")
    ]));
    assert_eq!(
        found(&request, Format::OpenAiChat),
        vec![
            ("/messages/1/tool_calls/1".to_owned(), Rule::UnansweredCall),
            ("/messages/4".to_owned(), Rule::OrphanResult),
        ]
    );
}

#[test]
fn chat_request_ending_with_unanswered_calls() {
    let request = chat(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [chat_call("a")]}
    ]));
    assert_eq!(
        found(&request, Format::OpenAiChat),
        one("/messages/1/tool_calls/0", Rule::UnansweredCall)
    );
}

#[test]
fn chat_tool_message_must_answer_the_assistant_that_opens_its_run() {
    let request = chat(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [chat_call("a")]},
        tool_msg("a"),
        {"role": "assistant", "tool_calls": [chat_call("b")]},
        tool_msg("b"),
        tool_msg("a"),
        tool_msg("b")
    ]));
    assert_eq!(
        found(&request, Format::OpenAiChat),
        vec![
            ("/messages/5".to_owned(), Rule::OrphanResult),
            ("/messages/6".to_owned(), Rule::DuplicateResult),
        ]
    );
}

#[test]
fn chat_duplicate_ids_roles_and_empty_assistant() {
    let request = chat(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [chat_call("a")]},
        tool_msg("a"),
        {"role": "assistant", "tool_calls": [chat_call("a")]},
        tool_msg("a"),
        {"role": "model", "content": "?"},
        {"role": "assistant", "content": null},
        {"role": "user", "content": []}
    ]));
    assert_eq!(
        found(&request, Format::OpenAiChat),
        vec![
            ("/messages/3/tool_calls/0".to_owned(), Rule::DuplicateCallId),
            ("/messages/5/role".to_owned(), Rule::InvalidRole),
            ("/messages/6".to_owned(), Rule::EmptyContent),
            ("/messages/7/content".to_owned(), Rule::EmptyContent),
        ]
    );
    assert_eq!(
        found(&chat(json!([])), Format::OpenAiChat),
        one("/messages", Rule::NoMessages)
    );
}

#[test]
fn chat_tool_message_without_a_call_id_or_any_call() {
    let request = chat(json!([
        {"role": "user", "content": "go"},
        {"role": "tool", "content": "no id"},
        tool_msg("x")
    ]));
    assert_eq!(
        found(&request, Format::OpenAiChat),
        vec![
            ("/messages/1".to_owned(), Rule::Malformed),
            ("/messages/2".to_owned(), Rule::OrphanResult),
        ]
    );
}

// ---- OpenAI Responses ------------------------------------------------------------------------------

#[test]
fn responses_string_input_and_opaque_items_are_valid() {
    assert_eq!(
        found(&responses(json!("hello")), Format::OpenAiResponses),
        vec![]
    );
    let request = responses(json!([
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "compaction", "encrypted_content": "abc"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "ok"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "local_shell_call", "call_id": "c3", "action": {"type": "exec", "command": ["ls"]}},
        {"type": "local_shell_call_output", "call_id": "c3", "output": "a.rs"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    ]));
    assert_eq!(found(&request, Format::OpenAiResponses), vec![]);
}

#[test]
fn responses_calls_need_exactly_one_output_of_their_kind_after_them() {
    let request = responses(json!([
        {"role": "user", "content": "go"},
        {"type": "function_call_output", "call_id": "c1", "output": "too early"},
        {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "function_call_output", "call_id": "c1", "output": "again"},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "wrong kind"},
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"}
    ]));
    assert_eq!(
        found(&request, Format::OpenAiResponses),
        vec![
            ("/input/1".to_owned(), Rule::OrphanResult),
            ("/input/3".to_owned(), Rule::UnansweredCall),
            ("/input/5".to_owned(), Rule::DuplicateResult),
            ("/input/6".to_owned(), Rule::OrphanResult),
            ("/input/7".to_owned(), Rule::DuplicateCallId),
        ]
    );
}

#[test]
fn responses_roles_and_shapes() {
    let request = responses(json!([
        {"role": "tool", "content": "no"},
        {"type": "message", "content": "no role"},
        {"type": "function_call", "name": "shell", "arguments": "{}"},
        5,
        {"content": "neither type nor role"}
    ]));
    assert_eq!(
        found(&request, Format::OpenAiResponses),
        vec![
            ("/input/0/role".to_owned(), Rule::InvalidRole),
            ("/input/1".to_owned(), Rule::InvalidRole),
            ("/input/2".to_owned(), Rule::Malformed),
            ("/input/3".to_owned(), Rule::Malformed),
            ("/input/4".to_owned(), Rule::Malformed),
        ]
    );
    assert_eq!(
        found(&responses(json!(3)), Format::OpenAiResponses),
        one("/input", Rule::Malformed)
    );
}

#[test]
fn responses_encrypted_reasoning_must_be_unchanged() {
    let original = responses(json!([
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"}
    ]));
    let same = responses(json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz"},
        {"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "no payload"}]}
    ]));
    assert_eq!(
        validate_against(&same, &original, Format::OpenAiResponses),
        vec![]
    );
    let changed = responses(json!([
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "xyz!"}
    ]));
    assert_eq!(
        validate_against(&changed, &original, Format::OpenAiResponses)
            .into_iter()
            .map(|v| v.rule)
            .collect::<Vec<_>>(),
        vec![Rule::ReasoningModified]
    );
}

// ---- Shared ----------------------------------------------------------------------------------------

#[test]
fn transcript_formats_are_checked_as_their_wire_target() {
    let request = anthropic(json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [tool_use("a")]}
    ]));
    assert_eq!(
        validate(&request, Format::ClaudeCode),
        validate(&request, Format::Anthropic)
    );
    let chat_request = chat(json!([{"role": "user", "content": "hi"}]));
    assert_eq!(found(&chat_request, Format::SweAgent), vec![]);
}

#[test]
fn violations_display_path_message_and_rule_and_sort_numerically() {
    let v = Violation {
        path: "/messages/3/content/0".into(),
        rule: Rule::OrphanResult,
        message: "tool_result `x` answers nothing".into(),
    };
    assert_eq!(
        v.to_string(),
        "at /messages/3/content/0: tool_result `x` answers nothing [orphan_result]"
    );
    let mut messages = vec![json!({"role": "user", "content": "go"})];
    for i in 0..12 {
        messages.push(json!({"role": "assistant", "content": [tool_use(&format!("c{i}"))]}));
        messages.push(json!({"role": "user", "content": "no answer"}));
    }
    let paths: Vec<String> = validate(&anthropic(Value::Array(messages)), Format::Anthropic)
        .into_iter()
        .map(|v| v.path)
        .collect();
    assert_eq!(paths.len(), 12);
    assert_eq!(paths[4], "/messages/9/content/0");
    assert_eq!(paths[5], "/messages/11/content/0");
    let names: std::collections::HashSet<&str> = Rule::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(names.len(), Rule::ALL.len());
}
