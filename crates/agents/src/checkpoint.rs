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
