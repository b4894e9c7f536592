//! The shell-output filter of `compactctl run`: what an agent reads of a command's output, cut to an
//! exact token budget, the error lines and the end kept.
//!
//! The runner streams whole lines as they arrive while they fit the head allowance
//! ([`head_allowance`], a quarter of the budget, tracked by [`HeadStreamer`]); the rest is held back.
//! When the command ends, [`finish_shell_output`] decides what follows the printed head:
//!
//! 1. Output that fits the budget passes unchanged, byte for byte (the held-back rest as it came).
//! 2. Otherwise the rest is densified losslessly ([`super::densify`]: terminal rendering, trailing
//!    blanks, identical runs counted), runs of similar lines (same indentation and first word once
//!    digits are ignored, no error signal) are collapsed to their first and last line around a
//!    count naming the reference id, and what is still over the room left by the head is cut: the
//!    tail gets the space the error lines from the removed middle do not need (they may take all of
//!    it but the tail's floor, 15%), around the marker naming the reference id (`compactctl recall
//!    <id>`) and how many error lines it had to leave out.
//!
//! The result (head + rest) never measures more than the budget. [`filter_shell_output`] does both
//! steps at once, exactly as the runner would, for replays. Same input, same output.

use super::cut::{self, CutOptions};
use super::{densify, is_error_line, thousands, Limit, Unit};
use crate::model::ItemId;
use crate::tokens::TokenCounter;

/// Default budget of one command's output, in tokens (both streams together). The corpus replay in
/// BENCHMARKS.md ("Shell output") at 500 / 1k / 2k: 1k saves 38% of shell-output tokens over Claude
/// Code and Codex together and keeps every distinct error message (500: 68-80%).
pub const DEFAULT_SHELL_BUDGET: usize = 1_000;
/// Smallest budget accepted: below it the marker alone would take most of the room.
pub const MIN_SHELL_BUDGET: usize = 100;
/// Largest budget accepted (about 4 MB of text); larger is a typo, not a budget.
pub const MAX_SHELL_BUDGET: usize = 1_000_000;

/// Share of the budget the runner may print while the command runs (progress is visible; the tail,
/// which usually holds the conclusion, keeps the larger share).
const HEAD_SHARE: f64 = 0.25;
/// Share of the room after the head that error lines from the removed middle may take: every
/// error line that fits, short of the tail's floor ([`TAIL_FLOOR_SHARE`]). Shell failures sit
/// mid-output more often than in the transcripts' tool outputs, and an agent acts on the error
/// lines; those left out are counted in the marker. Room the error lines do not need goes to the
/// tail. (Issue 45: with half the room, 87% of the corpus's error lines of cut outputs were kept.)
const ERROR_SHARE: f64 = 1.0 - TAIL_FLOOR_SHARE;
/// Share of the room after the head the tail always keeps (the conclusion: the last lines, the
/// summary a build or a test run prints); more when the last line needs more.
const TAIL_FLOOR_SHARE: f64 = 0.15;
/// Error lines may always take at least this share (what they had before issue 45).
const MIN_ERROR_SHARE: f64 = 0.5;
/// Tokens the cut sets aside for its marker, at most (the tail's share is of what is left).
const MARKER_RESERVE: usize = 48;
/// Similar lines are collapsed from this many in a row (first, count, last: three lines).
const MIN_SIMILAR_RUN: usize = 4;
/// Attempts at fitting head + rest before falling back to the marker alone; each attempt shrinks
/// the room by the measured excess (BPE counts are not exactly additive across the join).
const MAX_ATTEMPTS: usize = 6;

/// Tokens the runner may stream before holding the rest back.
pub fn head_allowance(budget: usize) -> usize {
    (budget as f64 * HEAD_SHARE) as usize
}

/// Tracks which lines the runner streams: whole lines, in order, while their counts fit the
/// allowance; the first line that does not fit closes the head for good.
///
/// A token is at least one byte, so a line that fits by its length in bytes is taken without
/// counting (kept aside, at most `allowance` bytes); the lines kept aside are counted only when a
/// line does not fit that way. The lines taken are exactly those counting each would take, and a
/// command whose output stays small never loads the tokenizer.
#[derive(Debug, Clone)]
pub struct HeadStreamer {
    allowance: usize,
    used: usize,
    uncounted: Vec<String>,
    uncounted_bytes: usize,
    open: bool,
}

impl HeadStreamer {
    /// A streamer with `allowance` tokens.
    pub fn new(allowance: usize) -> HeadStreamer {
        HeadStreamer {
            allowance,
            used: 0,
            uncounted: Vec::new(),
            uncounted_bytes: 0,
            open: true,
        }
    }

    /// Whether the complete line `line` (with its newline) is printed now.
    pub fn take(&mut self, line: &str, counter: &TokenCounter) -> bool {
        if !self.open {
            return false;
        }
        if self.used + self.uncounted_bytes + line.len() <= self.allowance {
            self.uncounted_bytes += line.len();
            self.uncounted.push(line.to_owned());
            return true;
        }
        self.used += self
            .uncounted
            .drain(..)
            .map(|l| counter.count_text(&l))
            .sum::<usize>();
        self.uncounted_bytes = 0;
        let cost = counter.count_text(line);
        if self.used + cost > self.allowance {
            self.open = false;
            return false;
        }
        self.used += cost;
        true
    }

    /// Closes the head (the output ended without a newline, or the stream is no longer followed).
    pub fn close(&mut self) {
        self.open = false;
    }
}

/// The bytes of `text` the runner would have streamed with `allowance` tokens: whole lines (each with
/// its newline) while they fit.
pub fn streamed_prefix(text: &str, allowance: usize, counter: &TokenCounter) -> usize {
    let mut streamer = HeadStreamer::new(allowance);
    let mut printed = 0;
    for line in text.split_inclusive('\n') {
        if !line.ends_with('\n') || !streamer.take(line, counter) {
            break;
        }
        printed += line.len();
    }
    printed
}

/// What follows the printed head of one output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellCut {
    /// The text to print after the head.
    pub rest: String,
    /// True when head + rest differs from the output.
    pub changed: bool,
    /// Tokens of the whole output.
    pub original_tokens: usize,
    /// Tokens of head + rest.
    pub tokens: usize,
}

/// What follows `text[..printed]` (the streamed head, whole lines) so that head + rest fits `budget`
/// tokens (see the module documentation); `reference` is the id the marker names.
pub fn finish_shell_output(
    text: &str,
    printed: usize,
    budget: usize,
    counter: &TokenCounter,
    reference: &ItemId,
) -> ShellCut {
    finish_counted(
        text,
        counter.count_text(text),
        printed,
        budget,
        counter,
        reference,
    )
}

/// [`finish_shell_output`] for a caller that already counted `text` (`original_tokens`).
pub fn finish_counted(
    text: &str,
    original_tokens: usize,
    printed: usize,
    budget: usize,
    counter: &TokenCounter,
    reference: &ItemId,
) -> ShellCut {
    let printed = printed.min(text.len());
    let printed = if text.is_char_boundary(printed) {
        printed
    } else {
        0
    };
    if original_tokens <= budget {
        return ShellCut {
            rest: text[printed..].to_owned(),
            changed: false,
            original_tokens,
            tokens: original_tokens,
        };
    }
    let head = &text[..printed];
    let newline = if text.ends_with('\n') { "\n" } else { "" };
    let dense = collapse_similar(&densify(&text[printed..]), reference);
    let dense_tokens = counter.count_text(&dense);
    let mut room = budget.saturating_sub(counter.count_text(head));
    let head_fraction = if printed == 0 { HEAD_SHARE } else { 0.0 };
    let last_line = dense.trim_end().rsplit('\n').next().unwrap_or("");
    let last_line_tokens = counter.count_text(last_line) + 2;
    for _ in 0..MAX_ATTEMPTS {
        let body = if dense_tokens < room {
            dense.clone()
        } else {
            let limit = Limit {
                unit: Unit::Tokens,
                max: room.saturating_sub(1),
            };
            let opts = CutOptions {
                limit,
                head_fraction,
                keep_error_lines: true,
                error_share: error_share(last_line_tokens, room, head_fraction),
                reference,
            };
            cut::cut(&dense, dense_tokens, &opts, counter).text
        };
        let rest = format!("{body}{newline}");
        let tokens = counter.count_text(&format!("{head}{rest}"));
        if tokens <= budget {
            return ShellCut {
                rest,
                changed: true,
                original_tokens,
                tokens,
            };
        }
        room = room.saturating_sub(tokens - budget);
    }
    // The head alone nearly fills the budget: the marker alone after it, or nothing.
    let short = format!("[… output truncated; compactctl recall {reference}]\n");
    let rest = if counter.count_text(&format!("{head}{short}")) <= budget {
        short
    } else {
        String::new()
    };
    let tokens = counter.count_text(&format!("{head}{rest}"));
    ShellCut {
        rest,
        changed: true,
        original_tokens,
        tokens,
    }
}

/// Share of `room` the error lines of the removed middle may take: all but the tail's floor
/// ([`ERROR_SHARE`]), less where the last line (`last_line_tokens`) would not fit the tail's share
/// otherwise, never less than [`MIN_ERROR_SHARE`]. The tail's share of the room is
/// `(1 - error share) x (1 - head_fraction)` once the marker's reserve is set aside.
fn error_share(last_line_tokens: usize, room: usize, head_fraction: f64) -> f64 {
    let tail_room = room.saturating_sub(MARKER_RESERVE) as f64 * (1.0 - head_fraction);
    let tail_share = (last_line_tokens as f64 / tail_room.max(1.0)).max(TAIL_FLOOR_SHARE);
    (1.0 - tail_share).clamp(MIN_ERROR_SHARE, ERROR_SHARE)
}

/// The whole filtered output of `text` as the runner prints it (streamed head + finished rest).
pub fn filter_shell_output(
    text: &str,
    budget: usize,
    counter: &TokenCounter,
    reference: &ItemId,
) -> (String, ShellCut) {
    let printed = streamed_prefix(text, head_allowance(budget), counter);
    let cut = finish_shell_output(text, printed, budget, counter, reference);
    (format!("{}{}", &text[..printed], cut.rest), cut)
}

/// The key lines are compared by: indentation and first word with digits ignored.
fn similarity_key(line: &str) -> Option<(usize, String)> {
    let body = line.trim_start();
    if body.is_empty() || is_error_line(line) {
        return None;
    }
    let word = body.split_whitespace().next().unwrap_or("");
    let word: String = word.chars().filter(|c| !c.is_ascii_digit()).collect();
    Some((line.len() - body.len(), word))
}

/// Runs of at least [`MIN_SIMILAR_RUN`] similar lines become their first line, a count naming
/// `reference`, and their last line.
fn collapse_similar(text: &str, reference: &ItemId) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let keys: Vec<Option<(usize, String)>> = lines.iter().map(|l| similarity_key(l)).collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let mut run = 1;
        if keys[i].is_some() {
            while i + run < lines.len() && keys[i + run] == keys[i] {
                run += 1;
            }
        }
        if run >= MIN_SIMILAR_RUN {
            out.push(lines[i].to_owned());
            out.push(format!(
                "[… {} similar lines; compactctl recall {reference}]",
                thousands(run - 2)
            ));
            out.push(lines[i + run - 1].to_owned());
        } else {
            out.extend(lines[i..i + run].iter().map(|l| (*l).to_owned()));
        }
        i += run;
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens::Encoding;

    fn counter() -> TokenCounter {
        TokenCounter::new(Encoding::O200kBase)
    }

    #[test]
    fn similar_lines_collapse_but_errors_break_the_run() {
        let id = ItemId::new("i0123456789");
        let text =
            "test a ... ok\ntest b ... ok\ntest c ... ok\ntest d ... ok\ntest e ... FAILED\ndone";
        let out = collapse_similar(text, &id);
        assert_eq!(
            out,
            "test a ... ok\n[… 2 similar lines; compactctl recall i0123456789]\ntest d ... ok\n\
             test e ... FAILED\ndone"
        );
    }

    #[test]
    fn similar_means_the_same_first_word_once_digits_are_ignored() {
        let id = ItemId::new("i0123456789");
        // step1 .. step6: one word once the digits go, so the run collapses.
        let steps: Vec<String> = (1..=6).map(|k| format!("step{k} done")).collect();
        let out = collapse_similar(&steps.join("\n"), &id);
        assert!(out.contains("[… 4 similar lines"), "{out}");
        // Different words with the same digits are not similar.
        let words = "alpha 1 ok\nbeta 1 ok\ngamma 1 ok\ndelta 1 ok\nepsilon 1 ok";
        assert_eq!(collapse_similar(words, &id), words);
    }

    #[test]
    fn streamed_prefix_stops_at_the_first_line_over_the_allowance() {
        let c = counter();
        let text = "one\ntwo\nthree four five six seven eight nine ten\neleven\n";
        let printed = streamed_prefix(text, 4, &c);
        assert_eq!(&text[..printed], "one\ntwo\n");
        assert_eq!(streamed_prefix("no newline", 100, &c), 0);
    }
}
