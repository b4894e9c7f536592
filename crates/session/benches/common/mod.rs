//! What the session benchmarks share: the counter, a tool-using history, a new user message, and
//! the calling thread's CPU time.

use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::wire::encode;
use serde_json::{json, Value};
use std::time::Duration;

pub fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

/// A tool-using history of about `tokens`, as Chat Completions JSON: a user step, a `read_file`
/// call, its result of `lines` lines of code, and the assistant's reply, until the size is reached.
pub fn history_json(tokens: usize, lines: usize) -> Value {
    let counter = counter();
    let mut conv = Conversation {
        format: Some(Format::OpenAiChat),
        ..Conversation::default()
    };
    conv.extra.insert("model".into(), json!("gpt-4o"));
    conv.push(Item::text(Role::System, "You are a coding agent."));
    let mut n = 0;
    while counter.total(&conv) < tokens {
        n += 1;
        conv.push(Item::text(
            Role::User,
            format!("Step {n}: look at module {n}."),
        ));
        let id = format!("call_{n}");
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            &id,
            "read_file",
            json!({"path": format!("src/m{n}.rs")}),
        ))));
        let text: String = (0..lines)
            .map(|l| format!("fn item_{n}_{l}(x: u32) -> u32 {{ x * {l} + {n} }}\n"))
            .collect();
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(&id, text))));
        conv.push(Item::text(Role::Assistant, format!("Module {n} is fine.")));
    }
    encode(&conv, Format::OpenAiChat).unwrap().value
}

/// The history plus a new user message of about `tokens`, `salt` making it unique.
pub fn with_message(history: &Value, salt: usize, tokens: usize) -> Value {
    let mut v = history.clone();
    let words: String = (0..tokens / 2)
        .map(|i| format!("w{} ", (i * 7 + salt) % 1000))
        .collect();
    v["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "user", "content": words}));
    v
}

/// The CPU time this thread has run (`CLOCK_THREAD_CPUTIME_ID`); `None` where it cannot be read.
#[cfg(unix)]
pub fn thread_cpu() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(Duration::new(
        u64::try_from(t.tv_sec).ok()?,
        u32::try_from(t.tv_nsec).ok()?,
    ))
}

#[cfg(not(unix))]
pub fn thread_cpu() -> Option<Duration> {
    None
}
