//! A reply ready to be shaped for an endpoint: text, tool calls, output tokens, and the usage numbers.

use crate::script::{ScriptedReply, ScriptedToolCall};
use compact_core::tokens::Encoding;

/// Why generation stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finish {
    /// Natural end.
    Stop,
    /// The output cap was reached.
    Length,
    /// The reply ends with tool calls.
    ToolCalls,
}

/// A reply with its token accounting.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// Assistant text.
    pub text: String,
    /// Tool calls.
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Thinking before the text (signed in Anthropic replies).
    pub thinking: Option<String>,
    /// The scripted agent's step the calls run (in their ids).
    pub step: Option<usize>,
    /// Output tokens.
    pub output_tokens: u64,
    /// Why it stopped.
    pub finish: Finish,
}

/// Usage figures for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// All input tokens.
    pub input: u64,
    /// Of which served from the prompt cache.
    pub cached: u64,
    /// Of which written to the cache (Anthropic, when `cache_control` is present).
    pub cache_creation: u64,
    /// Output tokens.
    pub output: u64,
}

impl Reply {
    /// Builds a reply, cutting the text to `max_output` tokens when given.
    pub fn new(script: ScriptedReply, max_output: Option<u64>, encoding: Encoding) -> Reply {
        let mut text = script.text;
        let calls_tokens: u64 = script
            .tool_calls
            .iter()
            .map(|c| (encoding.count(&c.name) + encoding.count(&c.arguments.to_string())) as u64)
            .sum();
        let mut finish = if script.tool_calls.is_empty() {
            Finish::Stop
        } else {
            Finish::ToolCalls
        };
        // What a cut to the output cap cannot shorten: the calls and the thinking before the text.
        let fixed_tokens = calls_tokens
            + script
                .thinking
                .as_deref()
                .map_or(0, |t| encoding.count(t) as u64);
        let mut output = encoding.count(&text) as u64 + fixed_tokens;
        if let Some(cap) = max_output.filter(|cap| *cap > 0) {
            if output > cap {
                finish = Finish::Length;
                let budget = cap.saturating_sub(fixed_tokens);
                text = cut_to_tokens(&text, budget, encoding);
                output = encoding.count(&text) as u64 + fixed_tokens;
            }
        }
        Reply {
            text,
            tool_calls: script.tool_calls,
            thinking: script.thinking,
            step: script.step,
            output_tokens: output,
            finish,
        }
    }

    /// The id of the `i`-th call: its step, when the scripted agent made it, then the request's
    /// sequence number and the call's place (`<prefix>_simstep<N>_<seq>_<i>`, else
    /// `<prefix>_sim_<seq>_<i>`).
    pub fn call_id(&self, prefix: &str, seq: u64, i: usize) -> String {
        match self.step {
            Some(step) => format!("{prefix}_{}{step}_{seq}_{i}", crate::agent::STEP_MARKER),
            None => format!("{prefix}_sim_{seq}_{i}"),
        }
    }
}

/// The longest prefix of `text` (on a char boundary) with at most `budget` tokens.
fn cut_to_tokens(text: &str, budget: u64, encoding: Encoding) -> String {
    let (mut lo, mut hi) = (0usize, text.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let mut m = mid;
        while !text.is_char_boundary(m) {
            m -= 1;
        }
        if m <= lo {
            break;
        }
        if encoding.count(&text[..m]) as u64 <= budget {
            lo = m;
        } else {
            hi = m - 1;
        }
    }
    text[..lo].to_owned()
}

/// Characters per streamed text delta (real streams send a token or a few at a time).
pub const STREAM_DELTA_CHARS: usize = 12;

/// Splits text into stream deltas on char boundaries.
pub fn deltas(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks(STREAM_DELTA_CHARS)
        .map(|c| c.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_respects_cap() {
        let r = Reply::new(
            ScriptedReply::text("one two three four five six seven"),
            Some(3),
            Encoding::O200kBase,
        );
        assert_eq!(r.finish, Finish::Length);
        assert!(r.output_tokens <= 3);
        assert!(r.text.starts_with("one"));
    }
}
