//! The ~20 KB Chat Completions request of the proxy benchmarks (`proxy_latency`, `proxy_cpu`): a
//! system prompt, a user message, tool calls each with a 30-line output, and a last user message.

use serde_json::json;

/// The request, at least `kb` KiB of messages, for `model`.
pub fn body(kb: usize, model: &str) -> String {
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful coding agent."}),
        json!({"role": "user", "content": "Fix the failing tests."}),
    ];
    let mut step = 0;
    while serde_json::to_string(&messages).unwrap_or_default().len() < kb * 1024 {
        let id = format!("call_{step}");
        let output: String = (0..30)
            .map(|i| {
                format!("src/lib.rs:{i}: fn handler_{step}_{i}() -> Result<(), Error> {{ ok }}\n")
            })
            .collect();
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
        step += 1;
    }
    messages.push(json!({"role": "user", "content": "Go on."}));
    json!({"model": model, "max_tokens": 64, "messages": messages}).to_string()
}
