//! The provider's usage in a reply (a whole JSON body or one stream event), as the session
//! runtime's [`Usage`]: `compact_formats::usage` reads the `usage` object (OpenAI Chat
//! `prompt_tokens`, Responses `input_tokens` in `response.completed` when streaming, Anthropic
//! `input_tokens` plus its cache counts in `message_start` when streaming); here it becomes the
//! input the session calibrates with, and a provider's compaction pass.

use crate::route::Route;
use compact_formats::usage::{usage_holder, TokenUsage, UsageApi};
use compact_session::{CompactionPass, Usage};
use serde_json::Value;

/// The input-token usage in `value`, when it carries one.
pub fn usage_in(route: Route, value: &Value) -> Option<Usage> {
    let api = route.format().and_then(UsageApi::of)?;
    let holder = usage_holder(value)?;
    let usage = TokenUsage::read(api, &holder["usage"]);
    let model = holder
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match api {
        UsageApi::Chat => Some(Usage {
            input_tokens: usage.input_tokens?,
            cached_input_tokens: usage.cached_tokens.unwrap_or(0),
            model,
            ..Usage::default()
        }),
        UsageApi::Responses => {
            let input_tokens = usage.input_tokens?;
            let output_tokens = usage.output_tokens.unwrap_or(0);
            // A server-side compaction shows as a `compaction` item in the output.
            let compacted = holder["output"]
                .as_array()
                .is_some_and(|o| o.iter().any(|i| i["type"] == "compaction"));
            Some(Usage {
                input_tokens,
                cached_input_tokens: usage.cached_tokens.unwrap_or(0),
                model,
                provider_compaction: compacted.then_some(CompactionPass {
                    input_tokens,
                    output_tokens,
                    billed_input_tokens: input_tokens,
                    billed_output_tokens: output_tokens,
                }),
                ..Usage::default()
            })
        }
        UsageApi::Messages => match compaction_pass(&usage) {
            // The top-level counts exclude the compaction pass, which read the whole request.
            Some(pass) => Some(Usage {
                input_tokens: pass.input_tokens,
                model,
                provider_compaction: Some(pass),
                ..Usage::default()
            }),
            None => Some(Usage {
                input_tokens: usage.input_tokens?,
                cache_read_input_tokens: usage.cache_read_input_tokens.unwrap_or(0),
                cache_creation_input_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
                model,
                ..Usage::default()
            }),
        },
    }
}

/// The compaction pass of an Anthropic `usage.iterations`, with the bill of every iteration.
fn compaction_pass(usage: &TokenUsage) -> Option<CompactionPass> {
    let pass = usage.compaction()?;
    Some(CompactionPass {
        input_tokens: pass.input_tokens.unwrap_or(0),
        output_tokens: pass.output_tokens.unwrap_or(0),
        billed_input_tokens: usage.billed_input().unwrap_or(0),
        billed_output_tokens: usage.billed_output().unwrap_or(0),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_each_provider_shape() {
        let chat = json!({"model": "m", "usage": {"prompt_tokens": 10, "completion_tokens": 2}});
        assert_eq!(
            usage_in(Route::ChatCompletions, &chat).map(|u| u.input_tokens),
            Some(10)
        );
        let chunk = json!({"choices": [], "usage": null});
        assert!(usage_in(Route::ChatCompletions, &chunk).is_none());
        let completed = json!({"type": "response.completed", "response": {"model": "m", "usage": {"input_tokens": 7}}});
        let u = usage_in(Route::Responses, &completed).unwrap();
        assert_eq!((u.input_tokens, u.model.as_deref()), (7, Some("m")));
        let start = json!({"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 3, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 5}}});
        assert_eq!(
            usage_in(Route::Messages, &start).map(|u| (u.total_input(), u.cached_input())),
            Some((108, 100))
        );
        // OpenAI's cached part of the input, on both routes.
        let cached_chat = json!({"usage": {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 768}}});
        let u = usage_in(Route::ChatCompletions, &cached_chat).unwrap();
        assert_eq!((u.total_input(), u.cached_input()), (1000, 768));
        let cached_responses = json!({"response": {"usage": {"input_tokens": 2048, "input_tokens_details": {"cached_tokens": 1024}}}});
        let u = usage_in(Route::Responses, &cached_responses).unwrap();
        assert_eq!((u.total_input(), u.cached_input()), (2048, 1024));
        let delta = json!({"type": "message_delta", "usage": {"output_tokens": 9}});
        assert!(usage_in(Route::Messages, &delta).is_none());
        // A compaction pass: the request's size is what it read; the bill is every iteration.
        let compacted = json!({"type": "message_delta", "usage": {"input_tokens": 300, "output_tokens": 9,
            "iterations": [{"type": "compaction", "input_tokens": 60000, "output_tokens": 400},
                           {"type": "message", "input_tokens": 300, "output_tokens": 9}]}});
        let u = usage_in(Route::Messages, &compacted).unwrap();
        assert_eq!(u.input_tokens, 60000);
        let pass = u.provider_compaction.unwrap();
        assert_eq!(
            (pass.billed_input_tokens, pass.billed_output_tokens),
            (60300, 409)
        );
    }
}
