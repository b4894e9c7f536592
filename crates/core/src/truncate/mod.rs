//! Tier 0: tool outputs truncated as they arrive, so one huge output never floods the context.
//!
//! [`truncate_output`] first densifies losslessly ([`densify`]); if the output is still over the
//! budget it keeps a head and a tail (split by [`TruncationPolicy`]`::head_fraction`, cut on line
//! boundaries when possible, UTF-8 safe) around one marker line saying how many tokens and lines were
//! removed and how to get them back (`compactctl recall <id>`). Lines with error signals from the
//! removed middle are kept, in order, between the marker and the tail while the budget allows. The
//! marker counts against the budget: the result is never over it. Same input, same output.
//!
//! Codex's JSON wrapper around a command's output (`{"output": "…", "metadata": {…}}`, one line) is
//! cut inside (module `wrapped`): the printed output by its lines as above, written back as the same
//! wrapper with every other byte kept, the limit applying to what is written back; when no such cut
//! fits, the wrapper is cut as the one line it is.
//!
//! The original is never lost: [`truncate_item`] returns a truncated copy with the same id; the caller
//! (the session log) keeps the original.

mod cut;
pub(crate) mod densify;
mod exit_code;
mod shell;
mod signals;
mod terminal;
mod wrapped;

pub use densify::densify;
pub use exit_code::{codex_output_span, codex_wrapped, exit_code, CodexWrapped};
pub use shell::{
    filter_shell_output, finish_counted, finish_shell_output, head_allowance, streamed_prefix,
    HeadStreamer, ShellCut, DEFAULT_SHELL_BUDGET, MAX_SHELL_BUDGET, MIN_SHELL_BUDGET,
};
pub use signals::{error_message_key, is_error_line, is_harness_header};
pub use terminal::render_line;

use crate::model::{Item, ItemBody, ItemId, Part, PartKind};
use crate::tokens::TokenCounter;

/// What a truncation budget is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncationMode {
    /// Never truncate.
    None,
    /// At most this many bytes (before the serialisation buffer).
    Bytes(usize),
    /// At most this many tokens (before the serialisation buffer).
    Tokens(usize),
}

/// Default tool-output budget: 5,000 tokens (seed 000, `TOOL_OUTPUT_MAX_TOKENS`).
pub const DEFAULT_MAX_TOKENS: usize = 5_000;
/// Default serialisation buffer: outputs are cut at budget x 1.2, leaving 20% for the JSON/wire
/// overhead around the text (seed 000, as Codex does).
pub const DEFAULT_SERIALIZATION_BUFFER: f64 = 1.2;
/// Default share of the kept budget given to the head (the rest goes to the tail): 50/50 (seed 000).
pub const DEFAULT_HEAD_FRACTION: f64 = 0.5;

/// How tool outputs are truncated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TruncationPolicy {
    /// The unit and size of the budget.
    pub mode: TruncationMode,
    /// Multiplier applied to the budget (the effective limit is `floor(n * serialization_buffer)`).
    pub serialization_buffer: f64,
    /// Share of the kept text taken from the start (0.0 ..= 1.0); the rest is taken from the end.
    pub head_fraction: f64,
    /// Keep lines with error signals from the removed middle where the budget allows.
    pub keep_error_lines: bool,
}

impl Default for TruncationPolicy {
    fn default() -> Self {
        TruncationPolicy {
            mode: TruncationMode::Tokens(DEFAULT_MAX_TOKENS),
            serialization_buffer: DEFAULT_SERIALIZATION_BUFFER,
            head_fraction: DEFAULT_HEAD_FRACTION,
            keep_error_lines: true,
        }
    }
}

/// The unit a limit is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Tokens of the counter.
    Tokens,
    /// UTF-8 bytes.
    Bytes,
}

/// An effective limit: the policy's size times its serialisation buffer, in a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit {
    /// The unit.
    pub unit: Unit,
    /// The most the output may measure.
    pub max: usize,
}

impl TruncationPolicy {
    /// A policy that never truncates.
    pub fn none() -> Self {
        TruncationPolicy {
            mode: TruncationMode::None,
            ..TruncationPolicy::default()
        }
    }

    /// A token policy of `n` tokens with the default buffer and split.
    pub fn tokens(n: usize) -> Self {
        TruncationPolicy {
            mode: TruncationMode::Tokens(n),
            ..TruncationPolicy::default()
        }
    }

    /// The effective limit (`None` when the mode is [`TruncationMode::None`]).
    pub fn limit(&self) -> Option<Limit> {
        let buffer = if self.serialization_buffer.is_finite() && self.serialization_buffer > 0.0 {
            self.serialization_buffer
        } else {
            1.0
        };
        let scale = |n: usize| {
            let scaled = (n as f64 * buffer).floor();
            if scaled >= usize::MAX as f64 {
                usize::MAX
            } else {
                scaled as usize
            }
        };
        match self.mode {
            TruncationMode::None => None,
            TruncationMode::Bytes(n) => Some(Limit {
                unit: Unit::Bytes,
                max: scale(n),
            }),
            TruncationMode::Tokens(n) => Some(Limit {
                unit: Unit::Tokens,
                max: scale(n),
            }),
        }
    }

    fn head_fraction(&self) -> f64 {
        if self.head_fraction.is_finite() {
            self.head_fraction.clamp(0.0, 1.0)
        } else {
            DEFAULT_HEAD_FRACTION
        }
    }
}

impl Limit {
    /// The size of `text` in this limit's unit.
    pub fn measure(&self, counter: &TokenCounter, text: &str) -> usize {
        match self.unit {
            Unit::Tokens => counter.count_text(text),
            Unit::Bytes => text.len(),
        }
    }
}

/// The outcome of truncating one output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// The text the model will see.
    pub text: String,
    /// True when `text` differs from the input.
    pub changed: bool,
    /// True when lossless densification changed the text.
    pub densified: bool,
    /// True when a head/tail cut removed content (a marker was inserted).
    pub truncated: bool,
    /// Tokens removed by the cut (0 when only densified).
    pub removed_tokens: usize,
    /// Lines removed by the cut (a partly kept line counts as removed).
    pub removed_lines: usize,
    /// Error lines from the removed middle that were kept.
    pub kept_error_lines: usize,
    /// Tokens of the input.
    pub original_tokens: usize,
    /// Tokens of `text`.
    pub tokens: usize,
}

/// Opening of the marker line that replaces a removed middle (`[… N tokens / M lines truncated ...]`).
pub const MARKER_OPEN: &str = "[… ";

/// Truncates one tool output to the policy's limit (see the module documentation). `reference` is the
/// id the marker names for restoring the full output.
pub fn truncate_output(
    text: &str,
    policy: &TruncationPolicy,
    counter: &TokenCounter,
    reference: &ItemId,
) -> Truncation {
    let original_tokens = counter.count_text(text);
    let unchanged = Truncation {
        text: text.to_owned(),
        changed: false,
        densified: false,
        truncated: false,
        removed_tokens: 0,
        removed_lines: 0,
        kept_error_lines: 0,
        original_tokens,
        tokens: original_tokens,
    };
    let Some(limit) = policy.limit() else {
        return unchanged;
    };
    let size = match limit.unit {
        Unit::Tokens => original_tokens,
        Unit::Bytes => text.len(),
    };
    if size <= limit.max {
        return unchanged;
    }
    if let Some(cut) =
        wrapped::truncate_wrapped(text, limit, policy, counter, reference, original_tokens)
    {
        return cut;
    }
    let dense = densify(text);
    let densified = dense != text;
    let dense_tokens = if densified {
        counter.count_text(&dense)
    } else {
        original_tokens
    };
    if limit.measure(counter, &dense) <= limit.max {
        return Truncation {
            text: dense,
            changed: true,
            densified,
            tokens: dense_tokens,
            ..unchanged
        };
    }
    let cut = cut::cut(
        &dense,
        dense_tokens,
        &cut::CutOptions {
            limit,
            head_fraction: policy.head_fraction(),
            keep_error_lines: policy.keep_error_lines,
            error_share: cut::ERROR_SHARE,
            reference,
        },
        counter,
    );
    let tokens = counter.count_text(&cut.text);
    Truncation {
        text: cut.text,
        changed: true,
        densified,
        truncated: true,
        removed_tokens: cut.removed_tokens,
        removed_lines: cut.removed_lines,
        kept_error_lines: cut.kept_error_lines,
        original_tokens,
        tokens,
    }
}

/// The truncated copy of a tool-result item (same id and metadata), or `None` when the item is not a
/// tool result or is already within the limit. Several text parts are joined into one (newline
/// separated) before cutting; media parts are left as they are.
pub fn truncate_item(
    item: &Item,
    policy: &TruncationPolicy,
    counter: &TokenCounter,
) -> Option<Item> {
    truncate_item_with_report(item, policy, counter).map(|(item, _)| item)
}

/// Like [`truncate_item`], also returning what the truncation did.
pub fn truncate_item_with_report(
    item: &Item,
    policy: &TruncationPolicy,
    counter: &TokenCounter,
) -> Option<(Item, Truncation)> {
    let result = item.as_tool_result()?;
    let texts: Vec<&str> = result.parts.iter().filter_map(Part::as_text).collect();
    if texts.is_empty() {
        return None;
    }
    let joined = texts.join("\n");
    let outcome = truncate_output(&joined, policy, counter, &item.meta.id);
    if !outcome.changed {
        return None;
    }
    let mut new_result = result.clone();
    new_result.parts = replace_text_parts(std::mem::take(&mut new_result.parts), &outcome.text);
    let mut copy = item.clone();
    copy.set_body(ItemBody::ToolResult(new_result));
    Some((copy, outcome))
}

/// Formats `n` with thousands separators (`12,345`).
pub(crate) fn thousands(n: usize) -> String {
    let digits: Vec<char> = n.to_string().chars().collect();
    let groups: Vec<String> = digits
        .rchunks(3)
        .rev()
        .map(|g| g.iter().collect())
        .collect();
    groups.join(",")
}

/// `parts` with all text parts replaced by one text part holding `text`, placed where the first text
/// part was (keeping that part's extra fields); media and opaque parts stay as they are.
pub(crate) fn replace_text_parts(parts: Vec<Part>, text: &str) -> Vec<Part> {
    let mut out = Vec::with_capacity(parts.len());
    let mut placed = false;
    for part in parts {
        if let PartKind::Text(_) = part.kind {
            if !placed {
                placed = true;
                out.push(Part {
                    kind: PartKind::Text(text.to_owned()),
                    extra: part.extra,
                });
            }
        } else {
            out.push(part);
        }
    }
    out
}
