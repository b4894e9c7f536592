//! The reversible stage of `tiered`, run before any lossy tier: what it removes the context still
//! shows elsewhere, or the session log gives back by id.
//!
//! 1. **Superseded outputs** ([`Staleness`]) become stubs naming the item that supersedes them: a file
//!    read whose lines a later read shows again, a read of a file rewritten or changed later, a
//!    command run again. The latest copy of a file (read after its last change) or of a command is
//!    never superseded.
//! 2. **Repeated blocks**: a paragraph (text between blank lines) of at least [`MIN_BLOCK_CHARS`]
//!    that a later tool output still sent repeats word for word becomes a one-line marker naming
//!    that output (boilerplate reminders agents append to every read, overlapping reads).
//! 3. **Densifiers** ([`crate::reversible`]): gutters, search output, JSON records, repeated lines,
//!    blobs.
//! 4. **Tool-call arguments** (`replaced.rs`): the replaced text of a successful edit, the content of
//!    a whole-file write that a later write or whole read shows again: first line and a recall marker.
//!
//! Before these, `tiered` drops the reasoning of finished assistant runs
//! (`common::drop_past_reasoning`), which both providers discard themselves, as part of the stage.
//!
//! Pinned items and failed outputs (flagged, or a command that exited non-zero) are never touched:
//! what failed is what the agent must not repeat, word for word.

use super::{Request, Staleness};
use crate::model::{Item, ItemBody};
use crate::plan::{is_reference, Action, PlanBuilder, Supersession, Tier};
use crate::reversible::densify_output;
use crate::truncate::replace_text_parts;
use std::borrow::Cow;
use std::collections::HashMap;

/// Paragraphs shorter than this (in bytes) are never replaced by a marker.
pub const MIN_BLOCK_CHARS: usize = 240;

/// What the stage did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StageCounts {
    /// Superseded outputs replaced by stubs.
    pub superseded: usize,
    /// Outputs rewritten (repeated blocks marked and/or densified) and tool calls whose replaced
    /// text or superseded content was cut.
    pub rewritten: usize,
}

/// True when `item` is a tool result that failed: flagged, or read as failed by the facts module (an
/// exit code other than 0 in its text or its structured status, an interrupted call).
fn failed(item: &Item) -> bool {
    item.as_tool_result()
        .is_some_and(|r| r.is_error || crate::facts::failure_of(item).is_some())
}

/// The text of a tool result made only of text parts.
fn text_only(item: &Item) -> Option<String> {
    let ItemBody::ToolResult(r) = item.body() else {
        return None;
    };
    let mut texts = Vec::with_capacity(r.parts.len());
    for p in &r.parts {
        texts.push(p.as_text()?);
    }
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// `text` (the output of item `at`) with each paragraph of at least [`MIN_BLOCK_CHARS`] that a later
/// output holds (`later`: paragraph -> item) replaced by a marker naming that output (`id_of`), or
/// `None` when none is; its own paragraphs are then remembered for the earlier outputs.
fn mark_repeated_blocks<'t, 'i>(
    text: &'t str,
    at: usize,
    later: &mut HashMap<&'t str, usize>,
    id_of: impl Fn(usize) -> &'i crate::model::ItemId,
) -> Option<String> {
    let blocks: Vec<&str> = text.split("\n\n").collect();
    let repeated: Vec<Option<usize>> = blocks
        .iter()
        .map(|block| {
            let key = block.trim();
            (key.len() >= MIN_BLOCK_CHARS)
                .then(|| later.get(key).copied())
                .flatten()
        })
        .collect();
    for block in &blocks {
        let key = block.trim();
        if key.len() >= MIN_BLOCK_CHARS {
            later.entry(key).or_insert(at);
        }
    }
    if repeated.iter().all(Option::is_none) {
        return None;
    }
    let parts: Vec<Cow<'_, str>> = blocks
        .iter()
        .zip(&repeated)
        .map(|(block, by)| match by {
            Some(by) => Cow::Owned(format!(
                "[compact: a {}-character block repeated word for word in `{}`]",
                block.len(),
                id_of(*by)
            )),
            None => Cow::Borrowed(*block),
        })
        .collect();
    Some(parts.join("\n\n"))
}

/// Runs the stage on `b` (see the module documentation).
pub fn run(b: &mut PlanBuilder<'_>, req: &Request<'_>, staleness: &Staleness) -> StageCounts {
    let conv = req.conversation;
    let survey = b.survey();
    let mut counts = StageCounts::default();
    // Failed outputs stay byte for byte: what failed is what the agent must not repeat.
    let failures: Vec<bool> = conv.items.iter().map(failed).collect();
    let candidate = |b: &PlanBuilder<'_>, i: usize| {
        survey.pins[i].is_none()
            && *b.action(i) == Action::Keep
            && matches!(conv.items[i].body(), ItemBody::ToolResult(_))
            && !is_reference(&conv.items[i])
            && !failures[i]
    };
    for i in 0..conv.items.len() {
        let (Some(by), Some(reason)) = (staleness.superseded_by[i], staleness.reasons[i]) else {
            continue;
        };
        if !candidate(b, i) {
            continue;
        }
        let covered = !matches!(reason, super::stale::Reason::Modified);
        let s = Supersession {
            by: &conv.items[by].meta.id,
            reason: reason.as_str(),
            covered,
        };
        if b.reference_superseded(i, Tier::Reversible, s) > 0 {
            counts.superseded += 1;
        }
    }
    // Tool-call arguments the files no longer hold or a later item shows again.
    let cuts = super::replaced::CallCuts::of(conv, &failures);
    for (i, keys) in cuts.keys.iter().enumerate() {
        if keys.is_empty() || survey.pins[i].is_some() || *b.action(i) != Action::Keep {
            continue;
        }
        let Some(replacement) = super::replaced::cut_arguments(&conv.items[i], keys) else {
            continue;
        };
        let how = if keys.contains(&"content") {
            "superseded-write"
        } else {
            "edit-text"
        };
        let action = Action::Densify { how: how.into() };
        if b.rewrite(i, replacement, action, Tier::Reversible) > 0 {
            counts.rewritten += 1;
        }
    }
    // Newest first: a block is replaced when a later output still sent holds it.
    let mut later: HashMap<&str, usize> = HashMap::new();
    let texts: Vec<Option<String>> = (0..conv.items.len())
        .map(|i| candidate(b, i).then(|| text_only(&conv.items[i])).flatten())
        .collect();
    for i in (0..conv.items.len()).rev() {
        let Some(text) = texts[i].as_deref() else {
            continue;
        };
        let marked = mark_repeated_blocks(text, i, &mut later, |at| &conv.items[at].meta.id);
        let base = marked.as_deref().unwrap_or(text);
        let mut how: Vec<&str> = Vec::new();
        if marked.is_some() {
            how.push("blocks");
        }
        let new_text = match (densify_output(base, &conv.items[i].meta.id), marked) {
            (Some(d), _) => {
                how.extend(d.how);
                d.text
            }
            (None, Some(marked)) => marked,
            (None, None) => continue,
        };
        let mut replacement = conv.items[i].clone();
        if let ItemBody::ToolResult(r) = replacement.body_mut() {
            r.parts = replace_text_parts(std::mem::take(&mut r.parts), &new_text);
        }
        let action = Action::Densify { how: how.join(",") };
        if b.rewrite(i, replacement, action, Tier::Reversible) > 0 {
            counts.rewritten += 1;
        }
    }
    counts
}
