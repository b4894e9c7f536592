//! The reversible stage's rewriters of one tool output: each either loses nothing (an exact round
//! trip back to the original, checked on every use: a rewrite that would not come back exactly is
//! not made) or replaces what it removes by a marker naming the item id that restores it from the
//! session log (`compactctl recall`, the MCP `recall` tool, the proxy's `compact_recall`).
//!
//! | name | what it rewrites | loss |
//! |---|---|---|
//! | `gutter` | line-number gutters of file reads (`     12→code`, `cat -n`'s `    12\tcode`): the padding goes | none (round trip) |
//! | `grep` | search output (`path:line:text`): consecutive lines of one file under one `path:` header | none (round trip) |
//! | `columns` | JSON arrays of objects with the same keys: one key list and rows of values | none (round trip of the JSON value) |
//! | `tables` | markdown tables padded to their column widths: the padding goes (the prose around stays) | none (round trip) |
//! | `repeats` | runs of identical lines (logs, test output): the first line and a count | none (round trip) |
//! | `diff` | unified diffs with wide context: runs of unchanged lines beyond three on each side of a change | a marker with the id |
//! | `blob` | base64 or minified runs of thousands of characters without a space | a marker with the id |
//!
//! Cross-item rules (superseded outputs, repeated blocks) live in the strategy
//! (`strategy/reversible.rs`); these functions see one text at a time and are pure.

mod blob;
mod columns;
mod diff;
mod grep;
mod gutter;
mod lines;
mod tables;

pub use blob::{strip_blobs, BLOB_MIN_CHARS};
pub use columns::{columnar, expand_columns, COLUMNS_KEY, ROWS_KEY};
pub use diff::{trim_diff_context, DIFF_CONTEXT};
pub use grep::{group_by_file, ungroup};
pub use gutter::{pad_gutter, unpad_gutter};
pub use lines::{collapse_repeats, expand_repeats};
pub use tables::{pad_tables, unpad_tables};

use crate::model::ItemId;

/// `encoded` when it is shorter than `text` and `decode` gives `text` back exactly: the one check
/// every lossless rewriter makes before its rewrite is used.
fn checked(text: &str, encoded: String, decode: impl Fn(&str) -> String) -> Option<String> {
    (encoded.len() < text.len() && decode(&encoded) == text).then_some(encoded)
}

/// A rewritten output and the rewriters that changed it, in the order they ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Densified {
    /// The new text.
    pub text: String,
    /// Names of the rewriters that changed it (`gutter`, `grep`, `columns`, `tables`, `diff`,
    /// `repeats`, `blob`).
    pub how: Vec<&'static str>,
}

/// Rewrites one tool output with every rewriter that applies (see the module documentation);
/// `None` when none changes it. `reference` is the id a marker names.
pub fn densify_output(text: &str, reference: &ItemId) -> Option<Densified> {
    let mut how = Vec::new();
    let mut current: Option<String> = None;
    if let Some(json) = columnar(text) {
        how.push("columns");
        current = Some(json);
    } else if let Some(unpadded) = unpad_gutter(text) {
        // A file read: its lines are content, so only the gutter changes.
        how.push("gutter");
        current = Some(unpadded);
    } else if let Some(trimmed) = trim_diff_context(text, reference) {
        // A diff: its changed lines are kept whole, whatever they look like.
        how.push("diff");
        current = Some(trimmed);
    } else {
        if let Some(grouped) = group_by_file(text) {
            how.push("grep");
            current = Some(grouped);
        }
        if let Some(unpadded) = unpad_tables(current.as_deref().unwrap_or(text)) {
            how.push("tables");
            current = Some(unpadded);
        }
        if let Some(collapsed) = collapse_repeats(current.as_deref().unwrap_or(text)) {
            how.push("repeats");
            current = Some(collapsed);
        }
    }
    let base = current.as_deref().unwrap_or(text);
    if let Some(stripped) = strip_blobs(base, reference) {
        how.push("blob");
        current = Some(stripped);
    }
    let text_out = current?;
    (text_out.len() < text.len()).then_some(Densified {
        text: text_out,
        how,
    })
}
