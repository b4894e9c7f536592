//! The provider's usage in a reply (a whole JSON body or one stream event), as the session
//! runtime's [`Usage`]: OpenAI Chat `usage.prompt_tokens`, Responses `usage.input_tokens` (in
//! `response.completed` when streaming), Anthropic `usage.input_tokens` plus its cache counts (in
//! `message_start` when streaming).

use crate::route::Route;
use compact_session::Usage;
use serde_json::Value;

/// The input-token usage in `value`, when it carries one.
pub fn usage_in(route: Route, value: &Value) -> Option<Usage> {
    let holder = [value, &value["response"], &value["message"]]
        .into_iter()
        .find(|v| v.get("usage").is_some_and(Value::is_object))?;
    let usage = &holder["usage"];
    let count = |key: &str| usage.get(key).and_then(Value::as_u64);
    let model = holder
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match route {
        Route::ChatCompletions => Some(Usage {
            input_tokens: count("prompt_tokens")?,
            model,
            ..Usage::default()
        }),
        Route::Responses => Some(Usage {
            input_tokens: count("input_tokens")?,
            model,
            ..Usage::default()
        }),
        Route::Messages => Some(Usage {
            input_tokens: count("input_tokens")?,
            cache_read_input_tokens: count("cache_read_input_tokens").unwrap_or(0),
            cache_creation_input_tokens: count("cache_creation_input_tokens").unwrap_or(0),
            model,
        }),
        Route::CountTokens | Route::Other => None,
    }
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
            usage_in(Route::Messages, &start).map(|u| u.total_input()),
            Some(108)
        );
        let delta = json!({"type": "message_delta", "usage": {"output_tokens": 9}});
        assert!(usage_in(Route::Messages, &delta).is_none());
    }
}
