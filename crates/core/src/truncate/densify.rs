//! Lossless densification of tool output: what the model reads is the same, in fewer tokens.
//!
//! Steps, in order: a whole-output JSON document is re-serialised compactly (key order kept); other
//! text is rendered line by line as a terminal would show it (ANSI escapes stripped, carriage-return
//! progress overwrites and erase-in-line applied), trailing whitespace trimmed, runs of identical
//! lines collapsed into one line with a count, and trailing blank lines dropped.

use super::terminal::render_line;
use std::borrow::Cow;

/// Identical consecutive lines are collapsed from this many on (two copies cost less than a count).
const MIN_REPEAT_RUN: usize = 3;

/// Densifies `text` (see the module documentation). Returns the input unchanged when no step applies.
pub fn densify(text: &str) -> String {
    if let Some(json) = compact_json(text) {
        return json;
    }
    let mut rendered: Vec<Cow<'_, str>> = text
        .split('\n')
        .map(|line| {
            if line.contains(['\u{1b}', '\r', '\u{8}']) {
                Cow::Owned(render_line(line).trim_end().to_owned())
            } else {
                Cow::Borrowed(line.trim_end())
            }
        })
        .collect();
    while rendered.last().is_some_and(|l| l.is_empty()) {
        rendered.pop();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < rendered.len() {
        let line = &rendered[i];
        let mut run = 1;
        while i + run < rendered.len() && rendered[i + run] == *line {
            run += 1;
        }
        if i > 0 {
            out.push('\n');
        }
        if run >= MIN_REPEAT_RUN {
            if line.is_empty() {
                out.push_str(&format!("({run} blank lines)"));
            } else {
                out.push_str(&format!("{line} (repeated {run} times)"));
            }
        } else {
            for k in 0..run {
                if k > 0 {
                    out.push('\n');
                }
                out.push_str(line);
            }
        }
        i += run;
    }
    out
}

/// Numbers with more significant digits than an `f64` holds would not survive a JSON round trip.
const MAX_EXACT_DIGITS: usize = 15;

/// True when `text` has a run of more than [`MAX_EXACT_DIGITS`] digits (such JSON is left as it is).
fn has_long_digit_run(text: &str) -> bool {
    let mut run = 0usize;
    for b in text.bytes() {
        if b.is_ascii_digit() {
            run += 1;
            if run > MAX_EXACT_DIGITS {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// The value of `text` when the whole of it (ignoring surrounding whitespace) is a JSON object or
/// array whose numbers all survive a round trip.
pub(crate) fn json_document(text: &str) -> Option<serde_json::Value> {
    let trimmed = text.trim();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) || has_long_digit_run(trimmed) {
        return None;
    }
    serde_json::from_str(trimmed).ok()
}

/// The compact form of `text` when it is a [`json_document`] and the compact form is shorter.
fn compact_json(text: &str) -> Option<String> {
    let value = json_document(text)?;
    let compact = serde_json::to_string(&value).ok()?;
    (compact.len() < text.len()).then_some(compact)
}
