//! What the agent itself recorded about its context at its latest model call: Claude Code's
//! `message.usage` on assistant records (an Anthropic `usage`, read by `compact_formats::usage`:
//! input, cache read and cache creation tokens together), Codex's `token_count` events
//! (`last_token_usage.input_tokens` and `model_context_window`).
//! These are the provider's own counts, more exact than a count with another tokenizer.

use compact_formats::usage::{TokenUsage, UsageApi};
use serde_json::Value;

/// Most lines read back from the end of a transcript looking for a usage record.
const MAX_LINES_BACK: usize = 2_000;

/// The agent's own figures at its latest model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reported {
    /// Input tokens of the latest call (cached ones included).
    pub input_tokens: u64,
    /// The context window, when the agent records it (Codex).
    pub window: Option<u64>,
}

/// The latest usage recorded in a Claude Code transcript or a Codex rollout, if any.
pub fn last_reported(bytes: &[u8]) -> Option<Reported> {
    bytes
        .split(|&b| b == b'\n')
        .rev()
        .take(MAX_LINES_BACK)
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .find_map(|record| claude(&record).or_else(|| codex(&record)))
}

fn claude(record: &Value) -> Option<Reported> {
    if record.get("type")?.as_str()? != "assistant" {
        return None;
    }
    // The Anthropic reply's own `usage`, as Claude Code recorded it.
    let usage = record.get("message")?.get("usage")?;
    let input = TokenUsage::read(UsageApi::Messages, usage).total_input();
    (input > 0).then_some(Reported {
        input_tokens: input,
        window: None,
    })
}

fn codex(record: &Value) -> Option<Reported> {
    let payload = record.get("payload")?;
    if payload.get("type")?.as_str()? != "token_count" {
        return None;
    }
    let info = payload.get("info")?;
    let input = info
        .get("last_token_usage")?
        .get("input_tokens")?
        .as_u64()?;
    Some(Reported {
        input_tokens: input,
        window: info.get("model_context_window").and_then(Value::as_u64),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_claude_usage_adds_cached_input() {
        let log = concat!(
            r#"{"type":"assistant","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":100}}}"#,
            "\n",
            r#"{"type":"assistant","message":{"usage":{"input_tokens":8,"cache_creation_input_tokens":300,"cache_read_input_tokens":1000,"output_tokens":3}}}"#,
            "\n",
            r#"{"type":"user","message":{"role":"user","content":"hi"}}"#,
            "\n{cut off",
        );
        assert_eq!(
            last_reported(log.as_bytes()),
            Some(Reported {
                input_tokens: 1308,
                window: None
            })
        );
    }

    #[test]
    fn codex_token_counts_give_the_window_too() {
        let log = r#"{"type":"event_msg","payload":{"type":"token_count","info":{"last_token_usage":{"input_tokens":82511,"cached_input_tokens":78720},"model_context_window":258400}}}"#;
        assert_eq!(
            last_reported(log.as_bytes()),
            Some(Reported {
                input_tokens: 82_511,
                window: Some(258_400)
            })
        );
        assert_eq!(last_reported(b"not json\n{}\n"), None);
    }
}
