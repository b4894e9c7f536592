//! The text a hook adds back: Compact's deterministic checkpoint of a span, under a short preface
//! saying what it is, within a token budget.

use compact_core::checkpoint::{build, CheckpointOptions};
use compact_core::model::Item;
use compact_core::tokens::{Encoding, TokenCounter};

/// Default budget of the hook's added context, in tokens: about 1.5% of a 200k window, room for
/// the failures, files, decisions and task list of a long span without crowding the agent's own
/// summary.
pub const DEFAULT_HOOK_TOKENS: usize = 3_000;

/// Smallest budget that leaves the checkpoint room for more than its header.
pub const MIN_HOOK_TOKENS: usize = 200;

/// Above this the hook would add more than the agent's own summary; a larger flag is refused.
pub const MAX_HOOK_TOKENS: usize = 50_000;

/// The opening line of what a hook adds.
pub const PREFACE: &str = "Compact: details the compaction summary may have left out (failed approaches with \
their error lines, files changed, decisions, constraints, the latest task list). Ids in brackets name \
transcript records; the `recall` tool of the `compact` MCP server returns one whole.";

/// The counter hooks budget with (exact `o200k_base`; Claude's own tokenizer is not public).
pub fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

/// The preface and the checkpoint of `items`, at most `max_tokens` tokens in all; `None` when the
/// span is empty. Deterministic.
pub fn hook_context(items: &[Item], max_tokens: usize) -> Option<String> {
    if items.is_empty() {
        return None;
    }
    let counter = counter();
    let preface = format!("{PREFACE}\n\n");
    let mut room = max_tokens.saturating_sub(counter.count_text(&preface));
    // The two parts are counted apart; a token spanning their seam could make the whole one more.
    for _ in 0..SEAM_RETRIES {
        let options = CheckpointOptions {
            max_tokens: room,
            counter,
        };
        let text = format!("{preface}{}", build(items, None, &options).text);
        let count = counter.count_text(&text);
        if count <= max_tokens {
            return Some(text);
        }
        room = room.saturating_sub(count - max_tokens);
    }
    None
}

/// Tries at fitting the preface and the checkpoint together (one suffices unless a token spans the
/// seam).
const SEAM_RETRIES: usize = 3;

/// Share of an entry's words (four letters or more) the agent's summary must hold for an entry
/// without anchors to count as already said.
const SAID_WORD_SHARE: f64 = 0.8;

/// The parts of a hook context (`context`, from [`hook_context`]) that the agent's own summary
/// (`summary`, Claude Code's `compact_summary`) lacks: each entry (a `- ` line and its indented
/// continuation) is dropped when every anchor it names (backquoted text, paths, `name(` calls,
/// bracketed ids excepted) appears in the summary, or, naming none, when the summary holds most of
/// its words. Headings stay only above a kept entry; `None` when nothing is new.
pub fn only_new(context: &str, summary: &str) -> Option<String> {
    let mut blocks: Vec<(bool, String)> = Vec::new();
    for line in context.lines() {
        let continuation = line.starts_with([' ', '\t']) && !line.trim().is_empty();
        match blocks.last_mut() {
            Some((true, entry)) if continuation => {
                entry.push('\n');
                entry.push_str(line);
            }
            _ => blocks.push((line.starts_with("- "), line.to_owned())),
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut kept = 0;
    for (is_entry, text) in blocks {
        if !is_entry {
            if let Some(level) = heading_level(&text) {
                // A heading closes the unused headings of its level or deeper (and their intros).
                if let Some(at) = pending
                    .iter()
                    .position(|h| heading_level(h).is_some_and(|l| l >= level))
                {
                    pending.truncate(at);
                }
                pending.push(text);
            } else if kept == 0 && out.is_empty() && pending.is_empty() {
                out.push(text); // the preface
            } else {
                pending.push(text);
            }
            continue;
        }
        if said(&text, summary) {
            continue;
        }
        out.append(&mut pending);
        out.push(text);
        kept += 1;
    }
    (kept > 0).then(|| out.join("\n"))
}

/// The level of a Markdown heading line (`## x`: 2).
fn heading_level(line: &str) -> Option<usize> {
    let level = line.chars().take_while(|&c| c == '#').count();
    (level > 0 && line[level..].starts_with(' ')).then_some(level)
}

/// True when the summary already says what `entry` says.
fn said(entry: &str, summary: &str) -> bool {
    let anchors = anchors(entry);
    if !anchors.is_empty() {
        return anchors.iter().all(|a| summary.contains(a.as_str()));
    }
    let words: Vec<&str> = entry
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 4)
        .collect();
    if words.is_empty() {
        return true;
    }
    let lower = summary.to_lowercase();
    let held = words
        .iter()
        .filter(|w| lower.contains(&w.to_lowercase()))
        .count();
    held as f64 >= SAID_WORD_SHARE * words.len() as f64
}

/// What identifies an entry: backquoted spans, paths and dotted or called names (`a/b.rs`,
/// `mod::f`, `parse(`), without the bracketed record ids the checkpoint cites.
fn anchors(entry: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, part) in entry.split('`').enumerate() {
        if i % 2 == 1 && !part.trim().is_empty() {
            out.push(part.trim().to_owned());
        }
    }
    for word in entry.split_whitespace() {
        if word.starts_with('[') {
            continue;
        }
        let w = word.trim_matches(|c: char| "`'\",;:()[]{}".contains(c));
        let path_like = w.contains('/')
            || w.contains("::")
            || (w.contains('.') && w.len() > 4 && !w.ends_with('.'));
        if path_like && w.chars().count() >= 4 && !out.iter().any(|a| a.contains(w)) {
            out.push(w.to_owned());
        }
    }
    out
}
