//! Codex's wrapped outputs cut by their lines: a shell result recorded as one line of JSON,
//! `{"output": "<what the command printed>", "metadata": {"exit_code": N, ...}}`, has its printed
//! output densified and cut as a plain output would be (head and tail by lines, error lines from
//! the middle kept, the marker), and is written back as the same wrapper: every byte outside the
//! `output` string (the metadata, unknown fields, their order and spacing) stays as it was. The
//! limit applies to the wrapper written back. When that cannot be made to fit, the caller cuts the
//! text as one line, as it does any text.

use super::{codex_output_span, codex_wrapped, cut, densify, Limit, Truncation, TruncationPolicy};
use crate::model::ItemId;
use crate::tokens::TokenCounter;

/// Attempts at fitting the written-back wrapper; each shrinks the printed output's room by the
/// measured excess, or grows it by the measured slack once a cut fits (the escaping does not cost
/// the same everywhere).
const MAX_ATTEMPTS: usize = 8;

/// The cut of `text` when it is a Codex wrapper whose printed output, cut by its lines, fits
/// `limit` once written back; `None` otherwise (not a wrapper, or no cut of it fits). `text`
/// measures over the limit; `original_tokens` are its tokens.
pub(super) fn truncate_wrapped(
    text: &str,
    limit: Limit,
    policy: &TruncationPolicy,
    counter: &TokenCounter,
    reference: &ItemId,
    original_tokens: usize,
) -> Option<Truncation> {
    let wrapped = codex_wrapped(text)?;
    let span = codex_output_span(text)?;
    let (before, after) = (text.get(..span.start)?, text.get(span.end..)?);
    let encode = |output: &str| -> Option<String> {
        let literal = serde_json::to_string(output).ok()?;
        Some(format!("{before}{literal}{after}"))
    };
    let dense = densify(&wrapped.output);
    let written = encode(&dense)?;
    let written_size = limit.measure(counter, &written);
    let finish = |text: String, cut: Option<&cut::Cut>| {
        let tokens = counter.count_text(&text);
        Truncation {
            text,
            changed: true,
            densified: dense != wrapped.output,
            truncated: cut.is_some(),
            removed_tokens: cut.map_or(0, |c| c.removed_tokens),
            removed_lines: cut.map_or(0, |c| c.removed_lines),
            kept_error_lines: cut.map_or(0, |c| c.kept_error_lines),
            original_tokens,
            tokens,
        }
    };
    if written_size <= limit.max {
        return Some(finish(written, None));
    }
    // What the wrapper costs around an empty output, and what writing the output back costs per
    // unit of the output itself (escapes: `\n`, `\"`, `\\`, `\u001b`).
    let frame = limit.measure(counter, &encode("")?);
    let dense_size = limit.measure(counter, &dense);
    if frame >= limit.max || dense_size == 0 {
        return None;
    }
    let ratio = (written_size.saturating_sub(frame) as f64 / dense_size as f64).clamp(0.25, 8.0);
    let mut room = (((limit.max - frame) as f64 / ratio).floor() as usize).min(dense_size - 1);
    let dense_tokens = counter.count_text(&dense);
    let cut_to = |room: usize| {
        cut::cut(
            &dense,
            dense_tokens,
            &cut::CutOptions {
                limit: Limit {
                    unit: limit.unit,
                    max: room,
                },
                head_fraction: policy.head_fraction(),
                keep_error_lines: policy.keep_error_lines,
                error_share: cut::ERROR_SHARE,
                reference,
            },
            counter,
        )
    };
    // The largest room whose cut fits once written back: shrink by the measured excess until one
    // fits, then grow by the measured slack while the cut still fits (the ratio is an average).
    let mut best: Option<(String, cut::Cut)> = None;
    for _ in 0..MAX_ATTEMPTS {
        if room == 0 {
            break;
        }
        let cut = cut_to(room);
        let out = encode(&cut.text)?;
        let size = limit.measure(counter, &out);
        if size <= limit.max {
            let slack = limit.max - size;
            best = Some((out, cut));
            let grown = (room + (slack as f64 / ratio).floor() as usize).min(dense_size - 1);
            if grown == room {
                break;
            }
            room = grown;
        } else if best.is_some() {
            // Grown past the limit: the last cut that fitted stands.
            break;
        } else {
            let shrink = ((size - limit.max) as f64 / ratio).ceil() as usize;
            room = room.saturating_sub(shrink.max(1));
        }
    }
    best.map(|(out, cut)| finish(out, Some(&cut)))
}
