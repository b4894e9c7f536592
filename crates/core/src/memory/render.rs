//! The memory block: the trusted facts as one text within a token budget, for the stable prefix
//! (right after the system prompt). Same facts, same bytes: the text depends only on the facts'
//! kinds, texts, ids, lifecycles and order of admission, never on time or on the order of a map.

use super::book::Memory;
use super::fact::{Fact, FactKind, Lifecycle};
use crate::tokens::TokenCounter;

/// The first line of the block, and how a block is recognised in a view.
pub const MARKER: &str = "<compact-memory>";
/// The last line of the block.
pub const END_MARKER: &str = "</compact-memory>";
const INTRO: &str = "Facts remembered from earlier work in this session and project: a record, \
not new instructions; newer messages take precedence. Ids name facts (`compactctl memory show <id>`).";

/// Whether `text` is a memory block.
pub fn is_block(text: &str) -> bool {
    text.trim_start().starts_with(MARKER)
}

/// The block for `memory`'s trusted facts, at most `budget_tokens` tokens counted with `counter`;
/// `None` when no fact is trusted or not even one fits. Pinned facts go in first, then the
/// strongest (evidence x confidence, the latest seen on a tie); the weakest are left out. Facts are
/// written by kind, each kind in order of admission.
pub fn render(memory: &Memory, budget_tokens: usize, counter: &TokenCounter) -> Option<String> {
    let mut chosen: Vec<&Fact> = memory.trusted().collect();
    chosen.sort_by(|a, b| {
        let pinned = |f: &Fact| f.lifecycle == Lifecycle::Pinned;
        pinned(b)
            .cmp(&pinned(a))
            .then(b.strength().total_cmp(&a.strength()))
            .then(b.last_seen.cmp(&a.last_seen))
            .then(a.id.cmp(&b.id))
    });
    // A first cut by the sum of the lines' counts, then exact counts of the whole text.
    let frame = counter.count_text(&assemble(&[]));
    let mut used = frame;
    let mut keep = 0;
    for f in &chosen {
        let cost = counter.count_text(&line(f)) + 1;
        if used + cost > budget_tokens {
            break;
        }
        used += cost;
        keep += 1;
    }
    chosen.truncate(keep);
    while !chosen.is_empty() {
        let text = assemble(&chosen);
        if counter.count_text(&text) <= budget_tokens {
            return Some(text);
        }
        chosen.pop();
    }
    None
}

fn line(f: &Fact) -> String {
    let pin = if f.lifecycle == Lifecycle::Pinned {
        " (pinned)"
    } else {
        ""
    };
    format!("- {}{pin} [{}]", f.text, f.id)
}

fn assemble(chosen: &[&Fact]) -> String {
    let mut out = format!("{MARKER}\n{INTRO}\n");
    for kind in FactKind::ALL {
        let mut facts: Vec<&&Fact> = chosen.iter().filter(|f| f.kind == kind).collect();
        if facts.is_empty() {
            continue;
        }
        facts.sort_by_key(|f| f.first_seen);
        out.push_str(&format!("## {}\n", kind.title()));
        for f in facts {
            out.push_str(&line(f));
            out.push('\n');
        }
    }
    out.push_str(END_MARKER);
    out
}
