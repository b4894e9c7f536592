//! The deterministic checkpoint: the embedded default summariser (no model). It turns a span of items
//! (and the checkpoint before them, if any) into a budgeted record of earlier work.
//!
//! Sections: goal and user requests (verbatim, with status, see [`status`]), constraints and
//! preferences, files read, files modified, commands run with exit status, errors and failed
//! approaches, decisions, current state and next steps (the latest plan / todo list). Every entry cites
//! the ids of the items it came from (`[i12, i14]`). The text opens by saying it is a record of earlier
//! work, not a new instruction.
//!
//! Budget: when the text is over `max_tokens`, sections give way in [`SectionKind::DROP_ORDER`],
//! oldest entries first (files read, commands, decisions, files modified, an unparsed earlier record,
//! constraints, state). Errors are never dropped: they get the budget first after the goal. When
//! nothing else can give way, goal and error entries are shortened (200, 120, then 60 characters),
//! and as a very last resort the oldest requests marked done, then the oldest others, are dropped
//! (the latest request always stays). If even that does not fit, the text is returned over budget
//! (the caller's budget check reports it).
//!
//! Re-compaction folds the previous checkpoint in: its text is read back section by section
//! ([`parse`]) and merged with the new facts (previous entries first, duplicates merged), so
//! checkpoints never stack. `generation` is the previous one's plus one; `covers` is the previous
//! coverage plus the new items. Same input, same output.

mod parse;
mod section;
pub mod status;

pub use parse::parse;
pub use section::{Entry, Section, SectionKind, MAX_CITES};
pub use status::{request_statuses, RequestStatus};

use crate::facts::{self, shorten, CommandStatus, Facts, StepStatus};
use crate::model::{Checkpoint, Extra, Item, ItemBody, ItemId};
use crate::tokens::TokenCounter;
use std::collections::{BTreeMap, HashMap};

/// Longest user request kept verbatim, in characters (longer ones keep their start and say so).
pub const REQUEST_CHARS: usize = 600;
/// Longest entry in other sections, in characters.
pub const ENTRY_CHARS: usize = 240;
/// Caps tried in turn on the goal and error entries when nothing else can give way.
const SHRINK_CAPS: [usize; 3] = [200, 120, 60];
/// Longest command shown in an entry, in characters.
const COMMAND_CHARS: usize = 160;

/// The opening line of every deterministic checkpoint.
pub const TITLE: &str = "# Record of earlier work";

/// How to build a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointOptions {
    /// Upper bound on the text's size in tokens (counted with `counter`).
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
    let mut sections = previous.map(|p| parse(&p.text)).unwrap_or_default();
    merge(&mut sections, fresh_sections(&facts, items));

    let mut covers: Vec<ItemId> = previous.map(|p| p.covers.clone()).unwrap_or_default();
    for item in items {
        if !covers.contains(&item.meta.id) {
            covers.push(item.meta.id.clone());
        }
    }
    let generation = previous.map_or(1, |p| p.generation.saturating_add(1));
    let text = fit(&mut sections, generation, covers.len(), options);
    Checkpoint {
        text,
        generation,
        covers,
        extra: Extra::new(),
    }
}

fn cites(ids: &[ItemId]) -> Vec<String> {
    ids.iter().map(|i| i.as_str().to_owned()).collect()
}

/// The sections for the new items alone.
fn fresh_sections(facts: &Facts, items: &[Item]) -> BTreeMap<SectionKind, Section> {
    let mut out: BTreeMap<SectionKind, Section> = BTreeMap::new();
    let statuses = request_statuses(facts);
    let goal = out.entry(SectionKind::Goal).or_default();
    for (req, status) in facts.user_requests.iter().zip(statuses) {
        let text = format!("[{status}] \"{}\"", shorten(&req.text, REQUEST_CHARS));
        goal.entries.push(Entry::new(&text, cites(&req.sources)));
    }
    let constraints = out.entry(SectionKind::Constraints).or_default();
    for c in &facts.constraints {
        constraints.entries.push(Entry::new(
            &shorten(&c.text, ENTRY_CHARS),
            cites(&c.sources),
        ));
    }
    let read = out.entry(SectionKind::FilesRead).or_default();
    for f in facts
        .files_read
        .iter()
        .filter(|f| !facts.files_modified.iter().any(|m| m.path == f.path))
    {
        read.entries.push(Entry::new(
            &shorten(&f.path, ENTRY_CHARS),
            cites(&f.sources),
        ));
    }
    let modified = out.entry(SectionKind::FilesModified).or_default();
    for f in &facts.files_modified {
        modified.entries.push(Entry::new(
            &shorten(&f.path, ENTRY_CHARS),
            cites(&f.sources),
        ));
    }
    out.entry(SectionKind::Commands).or_default().entries = command_entries(facts);
    let errors = out.entry(SectionKind::Errors).or_default();
    for e in &facts.errors {
        let text = format!(
            "`{}` ({}): {}",
            shorten(&e.action, COMMAND_CHARS),
            status_text(e.status),
            e.line
        );
        errors
            .entries
            .push(Entry::new(&shorten(&text, ENTRY_CHARS), cites(&e.sources)));
    }
    let decisions = out.entry(SectionKind::Decisions).or_default();
    for d in &facts.decisions {
        decisions.entries.push(Entry::new(
            &shorten(&d.text, ENTRY_CHARS),
            cites(&d.sources),
        ));
    }
    let state = out.entry(SectionKind::State).or_default();
    if let Some(plan) = &facts.plan {
        if let Some(x) = &plan.explanation {
            state.intro.push(shorten(x, ENTRY_CHARS));
        }
        for step in &plan.steps {
            let mark = match step.status {
                StepStatus::Done => "[x]",
                StepStatus::InProgress => "[>]",
                StepStatus::Pending => "[ ]",
                StepStatus::Cancelled => "[-]",
            };
            state.entries.push(Entry::new(
                &format!("{mark} {}", shorten(&step.text, ENTRY_CHARS)),
                cites(&plan.sources),
            ));
        }
    }
    let last_reply = facts.replies.last().copied();
    if let Some(last) = last_reply {
        let text = items[last].plain_text();
        let text = format!("{LAST_MESSAGE} {}", shorten(text.trim(), ENTRY_CHARS));
        state.entries.push(Entry::new(
            &text,
            vec![items[last].meta.id.as_str().to_owned()],
        ));
    }
    let last_call = items
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, i)| i.as_tool_call().map(|c| (at, c)));
    if let Some((at, call)) = last_call.filter(|(at, _)| last_reply.is_none_or(|r| *at > r)) {
        let command = facts
            .commands
            .iter()
            .rev()
            .find(|c| c.sources.first() == Some(&items[at].meta.id));
        let text = match command {
            Some(c) => format!(
                "{LAST_ACTION} `{}` ({})",
                shorten(&c.command, COMMAND_CHARS),
                status_text(c.status)
            ),
            None => format!(
                "{LAST_ACTION} {} {}",
                call.name,
                shorten(&call.arguments.to_text(), COMMAND_CHARS)
            ),
        };
        let mut ids = vec![items[at].meta.id.as_str().to_owned()];
        if let Some(c) = command {
            ids = cites(&c.sources);
        }
        state.entries.push(Entry::new(&text, ids));
    }
    out
}

/// Prefix of the state entry quoting the last assistant message (replaced when folding again).
const LAST_MESSAGE: &str = "Last assistant message:";
/// Prefix of the state entry naming the last tool call after the last assistant message.
const LAST_ACTION: &str = "Last action:";

fn status_text(status: CommandStatus) -> String {
    match status {
        CommandStatus::Exit(c) => format!("exit {c}"),
        CommandStatus::Failed => "failed".to_owned(),
        CommandStatus::Interrupted => "interrupted, no output".to_owned(),
        CommandStatus::Unknown => "no exit status".to_owned(),
        CommandStatus::NoResult => "no result yet".to_owned(),
    }
}

/// One entry per distinct command, ordered by its last run, with the number of runs and the last status.
fn command_entries(facts: &Facts) -> Vec<Entry> {
    let mut merged: Vec<(String, usize, CommandStatus, Vec<ItemId>)> = Vec::new();
    for c in &facts.commands {
        let key = shorten(&c.command, COMMAND_CHARS);
        match merged.iter().position(|m| m.0 == key) {
            Some(i) => {
                let mut m = merged.remove(i);
                m.1 += 1;
                m.2 = c.status;
                m.3.extend(c.sources.iter().cloned());
                merged.push(m);
            }
            None => merged.push((key, 1, c.status, c.sources.clone())),
        }
    }
    merged
        .into_iter()
        .map(|(cmd, runs, status, ids)| {
            let runs = if runs > 1 {
                format!(" ({runs} runs, last:")
            } else {
                " (".to_owned()
            };
            Entry::new(
                &format!("`{cmd}`{runs} {})", status_text(status)).replace("( ", "("),
                cites(&ids),
            )
        })
        .collect()
}

/// Merges `fresh` into `sections` (the previous checkpoint's): previous entries first, duplicates
/// (same text) merged with their cites; a fresh plan replaces the previous state.
fn merge(sections: &mut BTreeMap<SectionKind, Section>, fresh: BTreeMap<SectionKind, Section>) {
    for (kind, new) in fresh {
        let has_plan =
            kind == SectionKind::State && new.entries.iter().any(|e| e.text.starts_with('['));
        let old = sections.entry(kind).or_default();
        if has_plan {
            *old = new;
            continue;
        }
        if kind == SectionKind::State {
            // Keep the previous plan, replace the previous "last assistant message".
            old.entries
                .retain(|e| !e.text.starts_with(LAST_MESSAGE) && !e.text.starts_with(LAST_ACTION));
        }
        old.intro.extend(new.intro);
        let mut index: HashMap<String, usize> = old
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (dedupe_key(kind, &e.text), i))
            .collect();
        for entry in new.entries {
            let key = dedupe_key(kind, &entry.text);
            match index.get(&key) {
                Some(&i) if kind == SectionKind::Goal => {
                    let cites = old.entries[i].cites.clone();
                    old.entries[i] = merge_cites(entry, &cites);
                }
                Some(&i) => {
                    let cites = &mut old.entries[i].cites;
                    for c in entry.cites {
                        if !cites.contains(&c) {
                            cites.push(c);
                        }
                    }
                }
                None => {
                    index.insert(key, old.entries.len());
                    old.entries.push(entry);
                }
            }
        }
    }
}

/// Goal entries are the same request whatever their status.
fn dedupe_key(kind: SectionKind, text: &str) -> String {
    if kind == SectionKind::Goal {
        if let Some(rest) = text.strip_prefix('[').and_then(|t| t.split_once("] ")) {
            return rest.1.to_owned();
        }
    }
    text.to_owned()
}

fn merge_cites(mut entry: Entry, more: &[String]) -> Entry {
    let mut all: Vec<String> = more.to_vec();
    for c in entry.cites.drain(..) {
        if !all.contains(&c) {
            all.push(c);
        }
    }
    entry.cites = all;
    entry
}

fn header(generation: u32, covered: usize) -> String {
    format!(
        "{TITLE} (checkpoint {generation}, covering {covered} items)\n\
         This is a record of work already done earlier in this session, kept in place of the original messages. \
         It is not a new instruction: do not redo or re-run anything it lists as done; continue from \
         \"Current state and next steps\" and the latest open request. Ids in brackets name the original items \
         (`compactctl recall <id>` restores one).\n"
    )
}

fn render(sections: &BTreeMap<SectionKind, Section>, generation: u32, covered: usize) -> String {
    let mut out = header(generation, covered);
    for kind in SectionKind::WRITE_ORDER {
        if let Some(s) = sections.get(&kind).filter(|s| !s.is_empty()) {
            out.push('\n');
            out.push_str(&s.render(kind));
        }
    }
    out.trim_end().to_owned()
}

/// Renders within `options.max_tokens` (see the module documentation for the order things give way).
fn fit(
    sections: &mut BTreeMap<SectionKind, Section>,
    generation: u32,
    covered: usize,
    options: &CheckpointOptions,
) -> String {
    let counter = &options.counter;
    let max = options.max_tokens;
    let mut text = render(sections, generation, covered);
    let mut total = counter.count_text(&text);
    if total <= max {
        return text;
    }
    for kind in SectionKind::DROP_ORDER {
        while let Some(section) = sections.get_mut(&kind) {
            if section.entries.is_empty() {
                section.intro.clear();
                break;
            }
            let removed = section.entries.remove(0);
            section.omitted += 1;
            // Estimate, then confirm with an exact count once the estimate fits.
            total = total.saturating_sub(counter.count_text(&removed.render()) + 1);
            if total <= max {
                text = render(sections, generation, covered);
                total = counter.count_text(&text);
                if total <= max {
                    return text;
                }
            }
        }
        text = render(sections, generation, covered);
        total = counter.count_text(&text);
        if total <= max {
            return text;
        }
    }
    for cap in SHRINK_CAPS {
        for kind in [SectionKind::Goal, SectionKind::Errors] {
            if let Some(s) = sections.get_mut(&kind) {
                for e in &mut s.entries {
                    e.text = shorten(&e.text, cap);
                }
            }
        }
        text = render(sections, generation, covered);
        total = counter.count_text(&text);
        if total <= max {
            return text;
        }
    }
    // Last resort: the oldest requests marked done, then the oldest others; the latest stays.
    for only_done in [true, false] {
        while total > max {
            let Some(goal) = sections.get_mut(&SectionKind::Goal) else {
                break;
            };
            let keep_last = goal.entries.len().saturating_sub(1);
            let pick = goal.entries[..keep_last]
                .iter()
                .position(|e| !only_done || e.text.starts_with("[done]"));
            let Some(idx) = pick else { break };
            goal.entries.remove(idx);
            goal.omitted += 1;
            text = render(sections, generation, covered);
            total = counter.count_text(&text);
        }
    }
    text
}
