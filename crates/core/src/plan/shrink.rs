//! Middle-truncation of one item for a plan: the adapter between plans and [`crate::truncate`] (tool
//! outputs through `truncate_item`; user and assistant messages through `truncate_output` on their
//! joined text, media parts kept; tool-call arguments by middle-cutting their longest string values).

use crate::model::{Arguments, Item, ItemBody, Part};
use crate::tokens::TokenCounter;
use crate::truncate::{truncate_item, truncate_output, TruncationMode, TruncationPolicy};
use serde_json::Value;

/// `item` middle-truncated to at most `to_tokens` tokens of text, or `None` when it has no text to cut
/// or already fits. The limit is exact (no serialisation buffer: callers pass scaled limits).
pub(super) fn shrink_item(
    item: &Item,
    to_tokens: usize,
    head_fraction: f64,
    counter: &TokenCounter,
) -> Option<Item> {
    let policy = TruncationPolicy {
        mode: TruncationMode::Tokens(to_tokens),
        serialization_buffer: 1.0,
        head_fraction,
        keep_error_lines: true,
    };
    match item.body() {
        ItemBody::ToolResult(_) => truncate_item(item, &policy, counter),
        ItemBody::Message(m) => {
            let texts: Vec<&str> = m.parts.iter().filter_map(Part::as_text).collect();
            if texts.is_empty() {
                return None;
            }
            let outcome = truncate_output(&texts.join("\n"), &policy, counter, &item.meta.id);
            if !outcome.changed {
                return None;
            }
            let mut msg = m.clone();
            msg.parts =
                crate::truncate::replace_text_parts(std::mem::take(&mut msg.parts), &outcome.text);
            let mut copy = item.clone();
            copy.set_body(ItemBody::Message(msg));
            Some(copy)
        }
        ItemBody::ToolCall(_) => shrink_call(item, to_tokens, counter),
        _ => None,
    }
}

/// Characters of a string value tried first per token of the target (a generous chars-per-token
/// ratio, halved until the call fits).
const CHARS_PER_TOKEN_START: usize = 4;
/// String values are never cut below this many characters: a path or a command name stays readable.
const MIN_KEPT_CHARS: usize = 48;

/// `s` cut to about `max_chars` characters, head and tail kept around a marker saying what was cut.
fn cut_middle(s: &str, max_chars: usize) -> Option<String> {
    let n = s.chars().count();
    if n <= max_chars {
        return None;
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    let mut out: String = s.chars().take(head).collect();
    out.push_str(&format!(
        "\n…[compact: {} characters cut]…\n",
        n - head - tail
    ));
    out.extend(s.chars().skip(n - tail));
    Some(out)
}

/// Cuts every string value of `v` longer than `max_chars`; returns whether anything changed.
fn cut_strings(v: &mut Value, max_chars: usize) -> bool {
    match v {
        Value::String(s) => match cut_middle(s, max_chars) {
            Some(cut) => {
                *s = cut;
                true
            }
            None => false,
        },
        Value::Array(a) => a
            .iter_mut()
            .fold(false, |acc, x| cut_strings(x, max_chars) | acc),
        Value::Object(o) => o
            .values_mut()
            .fold(false, |acc, x| cut_strings(x, max_chars) | acc),
        _ => false,
    }
}

/// The call with its arguments cut until the item costs at most `to_tokens` (or its strings reach
/// [`MIN_KEPT_CHARS`]); JSON arguments stay valid JSON. `None` when nothing can be cut.
fn shrink_call(item: &Item, to_tokens: usize, counter: &TokenCounter) -> Option<Item> {
    let ItemBody::ToolCall(call) = item.body() else {
        return None;
    };
    if counter.count_item(item) <= to_tokens {
        return None;
    }
    let mut max_chars = to_tokens
        .saturating_mul(CHARS_PER_TOKEN_START)
        .max(MIN_KEPT_CHARS);
    let mut best: Option<Item> = None;
    loop {
        let arguments = match &call.arguments {
            Arguments::Json(v) => {
                let mut v = v.clone();
                cut_strings(&mut v, max_chars).then_some(Arguments::Json(v))
            }
            Arguments::Text(t) => match serde_json::from_str::<Value>(t) {
                Ok(mut v) if v.is_object() || v.is_array() => {
                    cut_strings(&mut v, max_chars).then(|| Arguments::Text(v.to_string()))
                }
                _ => cut_middle(t, max_chars).map(Arguments::Text),
            },
        };
        if let Some(arguments) = arguments {
            let mut c = call.clone();
            c.arguments = arguments;
            let mut copy = item.clone();
            copy.set_body(ItemBody::ToolCall(c));
            let fits = counter.count_item(&copy) <= to_tokens;
            best = Some(copy);
            if fits {
                return best;
            }
        }
        if max_chars <= MIN_KEPT_CHARS {
            return best;
        }
        max_chars = (max_chars / 2).max(MIN_KEPT_CHARS);
    }
}
