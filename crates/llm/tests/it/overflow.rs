//! Table-driven tests of the context-overflow classifier: real error bodies classify with their
//! numbers; near-misses (rate limits, per-string limits, output caps, unrelated errors) do not.

use compact_llm::{classify, classify_stream_event, ContextOverflow, ProviderHint};

struct Case {
    name: &'static str,
    status: u16,
    body: &'static str,
    expect: Option<(Option<u64>, Option<u64>, ProviderHint)>,
}

const CASES: &[Case] = &[
    Case {
        name: "openai chat: messages resulted in",
        status: 400,
        body: r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        expect: Some((Some(128_000), Some(130_000), ProviderHint::OpenAiChat)),
    },
    Case {
        name: "openai chat: you requested (messages + completion)",
        status: 400,
        body: r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, you requested 9000 tokens (7000 in the messages, 2000 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        expect: Some((Some(8_192), Some(9_000), ProviderHint::OpenAiChat)),
    },
    Case {
        name: "openai gpt-5: configured limit",
        status: 400,
        body: r#"{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 289411 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
        expect: Some((Some(272_000), Some(289_411), ProviderHint::Azure)),
    },
    Case {
        name: "openai responses http",
        status: 400,
        body: r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
        expect: Some((None, None, ProviderHint::OpenAiResponses)),
    },
    Case {
        name: "anthropic prompt is too long",
        status: 400,
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208656 tokens > 200000 maximum"},"request_id":"req_011CV"}"#,
        expect: Some((Some(200_000), Some(208_656), ProviderHint::Anthropic)),
    },
    Case {
        name: "anthropic max_tokens variant",
        status: 400,
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 189136 + 20000 > 204648, decrease input length or `max_tokens` and try again"}}"#,
        expect: Some((Some(204_648), Some(209_136), ProviderHint::Anthropic)),
    },
    Case {
        name: "anthropic 413 request_too_large",
        status: 413,
        body: r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#,
        expect: Some((None, None, ProviderHint::Anthropic)),
    },
    Case {
        name: "gemini",
        status: 400,
        body: r#"{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#,
        expect: Some((Some(1_048_576), Some(1_200_000), ProviderHint::Gemini)),
    },
    Case {
        name: "azure classic",
        status: 400,
        body: r#"{"error":{"message":"This model's maximum context length is 16384 tokens. However, your messages resulted in 17001 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded","status":400}}"#,
        expect: Some((Some(16_384), Some(17_001), ProviderHint::OpenAiChat)),
    },
    Case {
        name: "litellm",
        status: 400,
        body: r#"{"error":{"message":"litellm.ContextWindowExceededError: litellm.BadRequestError: ContextWindowExceededError: OpenAIException - This model's maximum context length is 4097 tokens. However, your messages resulted in 5000 tokens.","type":null,"param":null,"code":"400"}}"#,
        expect: Some((Some(4_097), Some(5_000), ProviderHint::LiteLlm)),
    },
    Case {
        name: "vllm you requested",
        status: 400,
        body: r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
        expect: Some((Some(4_096), Some(5_000), ProviderHint::OpenAiChat)),
    },
    Case {
        name: "vllm max_tokens too large with input",
        status: 400,
        body: r#"{"object":"error","message":"'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).","type":"BadRequestError","param":null,"code":400}"#,
        expect: Some((Some(4_096), Some(4_500), ProviderHint::OpenAiChat)),
    },
    Case {
        name: "vllm longer than context length",
        status: 400,
        body: r#"{"object":"error","message":"Input prompt (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","code":400}"#,
        expect: Some((Some(4_096), Some(5_000), ProviderHint::Vllm)),
    },
    Case {
        name: "llama.cpp server",
        status: 400,
        body: r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5120,"n_ctx":4096}}"#,
        expect: Some((Some(4_096), Some(5_120), ProviderHint::LlamaCpp)),
    },
    Case {
        name: "ollama",
        status: 400,
        body: r#"{"error":{"message":"prompt too long; exceeded max context length by 1200 tokens","type":"api_error","param":null,"code":null}}"#,
        expect: Some((None, None, ProviderHint::Ollama)),
    },
    Case {
        name: "openrouter",
        status: 400,
        body: r#"{"error":{"message":"This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (130000 of text input, 10000 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.","code":400}}"#,
        expect: Some((Some(131_072), Some(140_000), ProviderHint::OpenRouter)),
    },
    Case {
        name: "maximum input length is",
        status: 400,
        body: r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 5000 `inputs` tokens and 100 `max_new_tokens`; maximum input length is 4095 tokens"}"#,
        expect: Some((Some(4_095), None, ProviderHint::Generic)),
    },
    Case {
        name: "exceed context limit (bare text)",
        status: 400,
        body: "Error: request would exceed context limit",
        expect: Some((None, None, ProviderHint::Anthropic)),
    },
    Case {
        name: "plain 413 from a proxy",
        status: 413,
        body: "<html><body>413 Request Entity Too Large</body></html>",
        expect: Some((None, None, ProviderHint::Generic)),
    },
    // Near-misses.
    Case {
        name: "string_above_max_length is not an overflow",
        status: 400,
        body: r#"{"error":{"message":"Invalid 'messages[2].content': string too long. Expected a string with maximum length 10485760, but got a string with length 12000000 instead.","type":"invalid_request_error","param":"messages[2].content","code":"string_above_max_length"}}"#,
        expect: None,
    },
    Case {
        name: "tokens-per-minute rate limit",
        status: 429,
        body: r#"{"error":{"message":"Request too large for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Requested 50000. The input or output tokens must be reduced in order to run successfully.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#,
        expect: None,
    },
    Case {
        name: "rate-limit code on a 400 with overflow-like words",
        status: 400,
        body: r#"{"error":{"message":"maximum context length is 8192 tokens","type":"tokens","code":"rate_limit_exceeded"}}"#,
        expect: None,
    },
    Case {
        name: "anthropic rate limit",
        status: 429,
        body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#,
        expect: None,
    },
    Case {
        name: "openai max_tokens above the model's output cap",
        status: 400,
        body: r#"{"error":{"message":"max_tokens is too large: 200000. This model supports at most 16384 completion tokens, whereas you provided 200000.","type":"invalid_request_error","param":"max_tokens","code":"invalid_value"}}"#,
        expect: None,
    },
    Case {
        name: "anthropic max_tokens above the output cap",
        status: 400,
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 300000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5"}}"#,
        expect: None,
    },
    Case {
        name: "anthropic max_tokens alone over the window",
        status: 400,
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 100 + 250000 > 200000, decrease input length or `max_tokens` and try again"}}"#,
        expect: None,
    },
    Case {
        name: "unrelated invalid request",
        status: 400,
        body: r#"{"error":{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[3].role","code":null}}"#,
        expect: None,
    },
    Case {
        name: "server error",
        status: 500,
        body: r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#,
        expect: None,
    },
    Case {
        name: "success is never an overflow",
        status: 200,
        body: r#"{"error":{"code":"context_length_exceeded"}}"#,
        expect: None,
    },
];

#[test]
fn classifies_the_table() {
    let mut failures = Vec::new();
    for case in CASES {
        let got = classify(case.status, case.body);
        let want = case
            .expect
            .map(|(limit, requested, provider_hint)| ContextOverflow {
                limit,
                requested,
                provider_hint,
            });
        if got != want {
            failures.push(format!("{}: got {got:?}, want {want:?}", case.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn streaming_events() {
    let error_event = r#"{"type":"error","sequence_number":2,"error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again.","param":"input"}}"#;
    let got = classify_stream_event(Some("error"), error_event).unwrap();
    assert_eq!(got.provider_hint, ProviderHint::OpenAiResponses);

    let top_level = r#"{"type":"error","code":"context_length_exceeded","message":"Your input exceeds the context window of this model.","param":"input","sequence_number":1}"#;
    assert!(classify_stream_event(Some("error"), top_level).is_some());

    let failed = r#"{"type":"response.failed","sequence_number":3,"response":{"id":"resp_1","status":"failed","error":{"code":"context_length_exceeded","message":"Your input exceeds the context window of this model. Please adjust your input and try again."}}}"#;
    assert_eq!(
        classify_stream_event(Some("response.failed"), failed)
            .unwrap()
            .provider_hint,
        ProviderHint::OpenAiResponses
    );

    let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 300000 tokens > 200000 maximum"}}"#;
    let a = classify_stream_event(Some("error"), anthropic).unwrap();
    assert_eq!((a.limit, a.requested), (Some(200_000), Some(300_000)));

    // Near-misses in streams.
    let overloaded =
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    assert!(classify_stream_event(Some("error"), overloaded).is_none());
    let failed_other = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"The model failed."}}}"#;
    assert!(classify_stream_event(Some("response.failed"), failed_other).is_none());
    let delta =
        r#"{"type":"response.output_text.delta","delta":"maximum context length is 5 tokens"}"#;
    assert!(classify_stream_event(None, delta).is_none());
    assert!(classify_stream_event(None, "not json").is_none());
}
