//! Each API's `usage`, whole and streamed, and what absent or malformed fields read as.

use super::*;
use serde_json::json;

fn read(api: UsageApi, value: Value) -> TokenUsage {
    TokenUsage::read(api, &value)
}

#[test]
fn chat_whole_and_its_last_stream_chunk() {
    let reply = json!({"model": "gpt-4o", "choices": [],
        "usage": {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020,
                  "prompt_tokens_details": {"cached_tokens": 768, "audio_tokens": 0}}});
    let holder = usage_holder(&reply).unwrap();
    assert_eq!(holder["model"], "gpt-4o");
    let u = TokenUsage::read(UsageApi::Chat, &holder["usage"]);
    assert_eq!(
        u,
        TokenUsage {
            input_tokens: Some(1000),
            output_tokens: Some(20),
            cached_tokens: Some(768),
            ..TokenUsage::default()
        }
    );
    // OpenAI's input holds its cached part: nothing is added.
    assert_eq!((u.total_input(), u.cached_input()), (1000, Some(768)));
    // Chunks before the last carry `usage: null` (with `include_usage`) or none.
    assert_eq!(
        usage_holder(&json!({"choices": [{"delta": {}}], "usage": null})),
        None
    );
    assert_eq!(usage_holder(&json!({"choices": []})), None);
    // Chat's fields only: a Responses-style name is not Chat's input.
    assert_eq!(
        read(UsageApi::Chat, json!({"input_tokens": 5})).input_tokens,
        None
    );
}

#[test]
fn responses_whole_and_response_completed() {
    let usage = json!({"input_tokens": 2048, "output_tokens": 300,
        "input_tokens_details": {"cached_tokens": 1024},
        "output_tokens_details": {"reasoning_tokens": 128}, "total_tokens": 2348});
    let u = read(UsageApi::Responses, usage.clone());
    assert_eq!(
        (
            u.input_tokens,
            u.output_tokens,
            u.cached_input(),
            u.total_input()
        ),
        (Some(2048), Some(300), Some(1024), 2048)
    );
    let completed = json!({"type": "response.completed",
        "response": {"model": "gpt-5", "status": "completed", "usage": usage}});
    let holder = usage_holder(&completed).unwrap();
    assert_eq!(holder["model"], "gpt-5");
    assert_eq!(TokenUsage::read(UsageApi::Responses, &holder["usage"]), u);
    // `response.created` has `usage: null`.
    assert_eq!(
        usage_holder(&json!({"type": "response.created", "response": {"usage": null}})),
        None
    );
    assert_eq!(
        read(UsageApi::Responses, json!({"prompt_tokens": 5})).input_tokens,
        None
    );
}

#[test]
fn anthropic_whole_adds_cache_reads_and_writes_to_the_input() {
    let u = read(
        UsageApi::Messages,
        json!({"input_tokens": 3, "cache_read_input_tokens": 100,
               "cache_creation_input_tokens": 5, "output_tokens": 40,
               "cache_creation": {"ephemeral_5m_input_tokens": 5}, "service_tier": "standard"}),
    );
    assert_eq!(
        u,
        TokenUsage {
            input_tokens: Some(3),
            output_tokens: Some(40),
            cached_tokens: None,
            cache_read_input_tokens: Some(100),
            cache_creation_input_tokens: Some(5),
            iterations: None,
        }
    );
    assert_eq!((u.total_input(), u.cached_input()), (108, Some(100)));
    assert_eq!(u.compaction(), None);
    assert_eq!(u.billed_input(), None);
}

#[test]
fn anthropic_stream_splits_usage_over_message_start_and_message_delta() {
    let start = json!({"type": "message_start", "message": {"id": "msg_1", "model": "claude",
        "usage": {"input_tokens": 3, "cache_read_input_tokens": 100,
                  "cache_creation_input_tokens": 5, "output_tokens": 1}}});
    let holder = usage_holder(&start).unwrap();
    assert_eq!(holder["model"], "claude");
    let input = TokenUsage::read(UsageApi::Messages, &holder["usage"]);
    assert_eq!(
        (input.total_input(), input.cached_input()),
        (108, Some(100))
    );
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
        "usage": {"output_tokens": 9}});
    let holder = usage_holder(&delta).unwrap();
    let output = TokenUsage::read(UsageApi::Messages, &holder["usage"]);
    assert_eq!((output.input_tokens, output.output_tokens), (None, Some(9)));
    assert_eq!(output.total_input(), 0);
    // Other events carry none.
    assert_eq!(
        usage_holder(&json!({"type": "content_block_delta", "delta": {"text": "hi"}})),
        None
    );
}

#[test]
fn anthropic_iterations_of_a_compacting_reply() {
    let u = read(
        UsageApi::Messages,
        json!({"input_tokens": 300, "output_tokens": 9, "iterations": [
            {"type": "compaction", "input_tokens": 60000, "output_tokens": 400,
             "cache_read_input_tokens": 50},
            {"type": "message", "input_tokens": 300, "output_tokens": 9},
            "not an object"]}),
    );
    let pass = u.compaction().unwrap();
    assert_eq!(
        (pass.input_tokens, pass.output_tokens),
        (Some(60000), Some(400))
    );
    assert_eq!(u.billed_input(), Some(60300));
    assert_eq!(u.billed_output(), Some(409));
    assert_eq!(u.billed_cache_read(), Some(50));
    assert_eq!(u.iterations.as_ref().map(Vec::len), Some(3));
    // Iterations without a compaction pass: none found, the bill still summed.
    let plain = read(
        UsageApi::Messages,
        json!({"iterations": [{"type": "message", "input_tokens": 7}]}),
    );
    assert_eq!((plain.compaction(), plain.billed_input()), (None, Some(7)));
    // `iterations` not a list: as if absent.
    assert_eq!(
        read(
            UsageApi::Messages,
            json!({"iterations": {"type": "compaction"}})
        )
        .iterations,
        None
    );
}

#[test]
fn absent_and_malformed_fields_read_as_none_never_a_panic() {
    for api in [UsageApi::Chat, UsageApi::Responses, UsageApi::Messages] {
        for usage in [
            json!(null),
            json!(5),
            json!("usage"),
            json!([1, 2]),
            json!({}),
        ] {
            let u = TokenUsage::read(api, &usage);
            assert_eq!(u, TokenUsage::default(), "{api:?} {usage}");
            assert_eq!((u.total_input(), u.cached_input()), (0, None));
        }
    }
    let bad = json!({"prompt_tokens": "12", "completion_tokens": -3, "input_tokens": 1.5,
        "output_tokens": null, "cache_read_input_tokens": true,
        "prompt_tokens_details": 4, "input_tokens_details": {"cached_tokens": "1"}});
    for api in [UsageApi::Chat, UsageApi::Responses, UsageApi::Messages] {
        assert_eq!(
            TokenUsage::read(api, &bad),
            TokenUsage::default(),
            "{api:?}"
        );
    }
    // Counts that would overflow a sum saturate.
    let huge = read(
        UsageApi::Messages,
        json!({"input_tokens": u64::MAX, "cache_read_input_tokens": 1,
               "iterations": [{"input_tokens": u64::MAX}, {"input_tokens": 1}]}),
    );
    assert_eq!(
        (huge.total_input(), huge.billed_input()),
        (u64::MAX, Some(u64::MAX))
    );
}

#[test]
fn the_api_of_each_wire_format() {
    assert_eq!(UsageApi::of(Format::OpenAiChat), Some(UsageApi::Chat));
    assert_eq!(
        UsageApi::of(Format::OpenAiResponses),
        Some(UsageApi::Responses)
    );
    assert_eq!(UsageApi::of(Format::Anthropic), Some(UsageApi::Messages));
    assert_eq!(UsageApi::of(Format::ClaudeCode), None);
}
