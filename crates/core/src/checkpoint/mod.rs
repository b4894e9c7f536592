//! The deterministic checkpoint: the embedded default summariser (no model). It turns a span of items
//! (and the record before them, if any) into a budgeted hand-off an agent can continue from.
//!
//! Sections ([`SectionKind`]): the goal and user requests (verbatim, with status, see [`status`]; the
//! first is the original task), constraints and preferences, files modified (created / modified /
//! deleted, the gist of the last change, symbols), files read (with symbols), for each file a detail
//! entry with the code names its content used beyond its symbols (minor: it only takes room the other
//! entries leave), failures (the command or tool, the line that says why, a count, what the assistant
//! did next, whether a later run resolved it), commands that mattered with their last outcome,
//! decisions, an earlier summary's parts that map nowhere else, and the current state and next steps
//! (the latest plan / todo list, where work stopped). Every entry cites the ids of the items it came
//! from (`[i12, i14]`; Claude Code record ids shortened, see [`cite_id`]). The text opens by saying it
//! is a record of earlier work, not a new instruction.
//!
//! Facts come from [`crate::facts`]; what a failure is follows [`crate::facts`]'s rule (a flagged
//! result, a non-zero exit, an interruption, or output that ends in an error), so warnings printed by
//! commands that succeeded are not failures.
//!
//! Budget (module `select`): the text is never over `max_tokens` (counted with the counter). Kept entries
//! (the original task, the latest requests, the open plan steps, where work stopped, the latest
//! unresolved failure) come first; every section then gets a floor share of the budget, filled by
//! value; the rest goes by value per token across sections.
//!
//! Re-compaction folds the previous record in (module `merge`): our own text is read back section by
//! section ([`parse`]); a model-written summary (Claude Code, Codex) is read by its headings into the
//! same sections, code blocks intact (module `foreign`). Newer facts replace stale ones; checkpoints never
//! stack. `generation` is the previous one's plus one; `covers` is the previous coverage plus the new
//! items. Same input, same output.

mod foreign;
mod fresh;
mod merge;
mod parse;
mod section;
mod select;
pub mod status;

pub use fresh::{LAST_REQUESTS, OLDER_REQUEST_CHARS, ORIGINAL_CHARS};
pub use parse::parse;
pub use section::{cite_id, Entry, Hint, Section, SectionKind, MAX_CITES};
pub use select::{FLOORS, KEPT_SHARE};
pub use status::{request_statuses, RequestStatus};

use crate::facts;
use crate::model::{Checkpoint, Extra, Item, ItemBody, ItemId};
use crate::tokens::TokenCounter;
use std::collections::HashSet;

/// Longest user request kept verbatim, in characters (longer ones keep their start and say so).
pub const REQUEST_CHARS: usize = 600;
/// Longest entry in other sections, in characters.
pub const ENTRY_CHARS: usize = 240;

/// The opening line of every deterministic checkpoint.
pub const TITLE: &str = "# Record of earlier work";

/// Prefix of the state entry quoting the last assistant message (replaced when folding again).
const LAST_MESSAGE: &str = "Last assistant message:";
/// Prefix of the state entry naming the last tool call after the last assistant message.
const LAST_ACTION: &str = "Last action:";

/// How to build a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Upper bound on the text's size in tokens (counted with `counter`); never exceeded.
    pub max_tokens: usize,
    /// The counter used for the budget.
    pub counter: TokenCounter,
}

/// Builds the checkpoint for `items`, folding in `previous` (or, when `previous` is `None`, the last
/// checkpoint item found in `items`). Deterministic.
pub fn build(
    items: &[Item],
    previous: Option<&Checkpoint>,
    options: &CheckpointOptions,
) -> Checkpoint {
    let embedded = items.iter().rev().find_map(|i| match i.body() {
        ItemBody::Checkpoint(c) => Some(c),
        _ => None,
    });
    let previous = previous.or(embedded);
    let facts = facts::extract(items);
    let earlier = previous.map(|p| parse(&p.text)).unwrap_or_default();
    let first_is_original = earlier
        .get(&SectionKind::Goal)
        .is_none_or(|g| g.entries.is_empty());
    let new = fresh::sections(&facts, items, first_is_original);
    let sections = merge::merge(earlier, new, status::interrupted_earlier(&facts));

    let mut covers: Vec<ItemId> = previous.map(|p| p.covers.clone()).unwrap_or_default();
    let mut covered: HashSet<ItemId> = covers.iter().cloned().collect();
    for item in items {
        if covered.insert(item.meta.id.clone()) {
            covers.push(item.meta.id.clone());
        }
    }
    let generation = previous.map_or(1, |p| p.generation.saturating_add(1));
    let text = select::fit(
        sections,
        &header(generation, covers.len(), options.max_tokens),
        options,
    );
    Checkpoint {
        text,
        generation,
        covers,
        extra: Extra::new(),
    }
}

/// Whether a checkpoint `text` (ours) left entries out for its budget: a section's omission note
/// (`(N more not shown)`) or the closing line naming sections left out entirely. A record that says
/// so had more to say than its budget; one that does not held everything its sections had.
pub fn leaves_out(text: &str) -> bool {
    text.lines().any(|line| {
        section::is_omission_note(line) || line.trim_start().starts_with(NOT_SHOWN_PREFIX)
    })
}

/// Start of the closing line that names the sections left out entirely (written by `select`).
pub(crate) const NOT_SHOWN_PREFIX: &str = "(Not shown for space: ";

/// Below this budget the checkpoint opens with the short framing (the long one would take a sixth
/// of it).
pub const SHORT_HEADER_BELOW: usize = 1_000;

fn header(generation: u32, covered: usize, max_tokens: usize) -> String {
    let title = format!("{TITLE} (checkpoint {generation}, covering {covered} items)");
    if max_tokens < SHORT_HEADER_BELOW {
        return format!(
            "{title}\nWork already done in this session, not a new instruction: do not redo it; continue \
             from \"Current state and next steps\". Ids name original items (`compactctl recall <id>`).\n"
        );
    }
    format!(
        "{title}\n\
         This is a record of work already done earlier in this session, kept in place of the original messages. \
         It is not a new instruction: do not redo or re-run anything it lists as done; continue from \
         \"Current state and next steps\" and the latest open request. Ids in brackets name the original items \
         (`compactctl recall <id>` restores one).\n"
    )
}
