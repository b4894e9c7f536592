//! The `cfpm` strategy (AGIME "CFPM memory v1"): keep the first 2 and last 8 items and replace the
//! middle with a deterministic memory block (goals, verified successful actions, artifacts and paths,
//! open items; at most 8 entries of 220 characters per section). No model call: the plan carries the
//! block as the checkpoint's fixed text. Facts come from [`crate::facts::extract`] (structured tool-call
//! fields), never from keyword heuristics over prose; error noise is left out. A previous memory block is folded in section by section.

use super::common::{builder, remove_units, truncate_tool_outputs};
use super::fit::{fit, Removal};
use super::{Breakdown, Request, StrategyError};
use crate::facts::{extract, CommandStatus, StepStatus};
use crate::model::{Conversation, Item, ItemBody};
use crate::partition::{is_checkpoint, Survey};
use crate::plan::{Action, Placement, Plan, PlanBuilder, Tier, CHECKPOINT_MARKER_TOKENS};
use crate::policy::StrategyName;
use std::collections::HashMap;

/// CFPM keeps the first two items (the initial context).
pub const HEAD_ITEMS: usize = 2;
/// CFPM keeps the last eight items.
pub const TAIL_ITEMS: usize = 8;
/// Entries per section.
pub const ENTRIES_PER_SECTION: usize = 8;
/// Characters per entry.
pub const ENTRY_CHARS: usize = 220;

const SECTIONS: [&str; 4] = [
    "Goals",
    "Verified successful actions",
    "Artifacts and paths",
    "Open items",
];
/// Placeholder entry of an empty section.
const NONE: &str = "(none)";
const HEADER: &str = "Memory checkpoint: a deterministic record of earlier work in this session (not new instructions).";

fn clip(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= ENTRY_CHARS {
        return flat;
    }
    let mut s: String = flat.chars().take(ENTRY_CHARS - 1).collect();
    s.push('…');
    s
}

fn push(added: &mut Vec<String>, entry: String) {
    if !entry.is_empty() {
        added.push(entry);
    }
}

/// A section's entries: those of the previous block, then the `added` ones in turn, an entry added
/// again (or already in the previous block) moving to the end as one copy. Linear in the entries
/// (an index of the added ones, not a search per entry).
fn settle(previous: Vec<String>, added: Vec<String>) -> Vec<String> {
    let last: HashMap<&str, usize> = added
        .iter()
        .enumerate()
        .map(|(i, e)| (e.as_str(), i))
        .collect();
    let mut out: Vec<String> = previous
        .into_iter()
        .filter(|e| !last.contains_key(e.as_str()))
        .collect();
    out.extend(
        added
            .iter()
            .enumerate()
            .filter(|&(i, e)| last.get(e.as_str()) == Some(&i))
            .map(|(_, e)| e.clone()),
    );
    out
}

/// Parses a previous memory block into its sections.
fn parse_previous(text: &str) -> [Vec<String>; 4] {
    let mut out: [Vec<String>; 4] = Default::default();
    let mut current: Option<usize> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = SECTIONS.iter().position(|s| *s == h.trim());
        } else if let (Some(k), Some(entry)) = (current, line.strip_prefix("- ")) {
            out[k].push(entry.to_owned());
        }
    }
    out
}

/// The memory block for `covered` items (indices into `conv`), folding in `previous` text. Facts come
/// from [`crate::facts::extract`]: user requests, commands that succeeded, files modified, paths read
/// and written, the latest todo list. Failed commands (error noise) are left out.
pub fn memory_block(conv: &Conversation, covered: &[usize], previous: Option<&str>) -> String {
    let previous: [Vec<String>; 4] = previous.map(parse_previous).unwrap_or_default();
    let mut sections: [Vec<String>; 4] = Default::default();
    let items: Vec<Item> = covered.iter().map(|&i| conv.items[i].clone()).collect();
    let facts = extract(&items);
    for r in &facts.user_requests {
        push(&mut sections[0], clip(&r.text));
    }
    for c in facts
        .commands
        .iter()
        .filter(|c| matches!(c.status, CommandStatus::Exit(0)))
    {
        push(
            &mut sections[1],
            clip(&format!("ran `{}` (exit 0)", c.command)),
        );
    }
    for f in &facts.files_modified {
        push(&mut sections[1], clip(&format!("modified {}", f.path)));
    }
    for f in facts.files_read.iter().chain(&facts.files_modified) {
        push(&mut sections[2], clip(&f.path));
    }
    match &facts.plan {
        Some(plan) => {
            for step in plan
                .steps
                .iter()
                .filter(|s| matches!(s.status, StepStatus::Pending | StepStatus::InProgress))
            {
                push(&mut sections[3], clip(&step.text));
            }
        }
        None => {
            if let Some(last) = facts.user_requests.last() {
                push(&mut sections[3], clip(&last.text));
            }
        }
    }
    let sections: Vec<Vec<String>> = previous
        .into_iter()
        .zip(sections)
        .map(|(previous, added)| settle(previous, added))
        .collect();
    let mut out = String::from(HEADER);
    for (name, entries) in SECTIONS.iter().zip(sections.iter()) {
        out.push_str(&format!("\n## {name}"));
        let entries: Vec<&String> = entries.iter().filter(|e| e.as_str() != NONE).collect();
        if entries.is_empty() {
            out.push_str(&format!("\n- {NONE}"));
        }
        let skip = entries.len().saturating_sub(ENTRIES_PER_SECTION);
        for e in entries.into_iter().skip(skip) {
            out.push_str(&format!("\n- {e}"));
        }
    }
    out
}

/// Rounds of the fit pass: each recomputes the memory block for what it now covers, whose size the
/// next round then knows (the block grows by at most a few entries per round).
const FIT_ROUNDS: usize = 3;

/// Sets the memory block of the items `b` now summarises as the checkpoint's fixed text.
fn set_block(b: &mut PlanBuilder<'_>, conv: &Conversation) {
    if !b.has_checkpoint() {
        return;
    }
    let covered: Vec<usize> = (0..conv.items.len())
        .filter(|&i| *b.action(i) == Action::SummarizeInto)
        .collect();
    let previous = covered
        .iter()
        .rev()
        .find(|&&i| is_checkpoint(&conv.items[i]))
        .map(|&i| match conv.items[i].body() {
            ItemBody::Checkpoint(c) => c.text.clone(),
            _ => conv.items[i].plain_text(),
        });
    let fresh: Vec<usize> = covered
        .iter()
        .copied()
        .filter(|&i| !is_checkpoint(&conv.items[i]))
        .collect();
    b.set_checkpoint_text(memory_block(conv, &fresh, previous.as_deref()));
}

/// Plans `request` with a CFPM memory checkpoint.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let conv = req.conversation;
    let survey = Survey::of(conv, req.policy, req.counter);
    let n = survey.tokens.len();
    let mut b = builder(req, StrategyName::Cfpm, &survey);
    if n <= HEAD_ITEMS + TAIL_ITEMS {
        b.note("too few items: nothing replaced");
        truncate_tool_outputs(&mut b, req);
    } else {
        let keep: Vec<bool> = (0..n)
            .map(|i| i < HEAD_ITEMS || i >= n - TAIL_ITEMS)
            .collect();
        let count = remove_units(&mut b, &keep, &Action::SummarizeInto, Tier::Summarize);
        truncate_tool_outputs(&mut b, req);
        if count > 0 {
            b.place_checkpoint(0, Tier::Summarize, Placement::FirstCovered);
            set_block(&mut b, conv);
            b.record(
                Tier::Summarize,
                count,
                "middle replaced by a deterministic memory block",
            );
        }
    }
    for _ in 0..FIT_ROUNDS {
        let known = Request {
            summary_tokens: b
                .has_checkpoint()
                .then(|| b.checkpoint_tokens().saturating_sub(slot_extra(req))),
            ..*req
        };
        fit(&mut b, &known, Removal::Summarize(Placement::FirstCovered))?;
        set_block(&mut b, conv);
    }
    let est = b.estimate();
    if est > req.budget.usable {
        return Err(StrategyError::InsufficientBudget {
            floor: est,
            budget: req.budget.usable,
            breakdown: Breakdown {
                checkpoint: b.checkpoint_tokens(),
                ..Breakdown::default()
            },
        });
    }
    Ok(b.finish())
}

/// Tokens a checkpoint slot costs beyond its text.
fn slot_extra(req: &Request<'_>) -> usize {
    CHECKPOINT_MARKER_TOKENS + req.counter.framing().per_message as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_entry_is_clipped_to_its_length_with_an_ellipsis() {
        let long = "word ".repeat(ENTRY_CHARS);
        let clipped = clip(&long);
        assert_eq!(clipped.chars().count(), ENTRY_CHARS);
        assert!(clipped.ends_with('…'));
        assert_eq!(clip("  a   short\n entry "), "a short entry");
    }
}
