//! The sections of the new items alone, from their [`Facts`], each entry with its budget hint.

use super::section::{cite_id, Entry, Hint, Section, SectionKind};
use super::status::request_statuses;
use super::{ENTRY_CHARS, LAST_ACTION, LAST_MESSAGE, REQUEST_CHARS};
use crate::facts::{
    classify, command_key, shorten, Action, CommandStatus, Facts, FileOp, StepStatus,
};
use crate::model::{Item, ItemId};
use std::collections::BTreeMap;

/// Longest original task kept verbatim, in characters.
pub const ORIGINAL_CHARS: usize = 1_000;
/// Longest request between the original task and the latest ones, in characters: its opening says
/// what was asked, and more of them fit.
pub const OLDER_REQUEST_CHARS: usize = 240;
/// The last this-many user requests are always kept.
pub const LAST_REQUESTS: usize = 3;
/// Opening of an entry naming injected context (see [`Facts::context`]).
pub(super) const CONTEXT_OPENING: &str = "Loaded: ";
/// Recency of new entries starts here, above every entry of a previous record.
pub(super) const FRESH_RECENCY: u64 = 1 << 32;
/// Longest command shown in an entry, in characters.
const COMMAND_CHARS: usize = 100;
/// Symbols shown per file.
const SYMBOLS_SHOWN: usize = 12;
/// Opening of a detail entry listing the code names a file used (see `names_entry`).
pub(super) const NAMES_PREFIX: &str = "Names used in ";
/// Longest file entry, in characters: a path, what happened and the symbols.
const FILE_ENTRY_CHARS: usize = 400;
/// A reply shorter than this ("a", "yes", "2") is left out unless it is one of the latest.
const TERSE_REPLY_CHARS: usize = 5;
/// A request shorter than this ("thanks", "continue") means little on its own.
const SHORT_REQUEST_CHARS: usize = 12;

fn cites(ids: &[ItemId]) -> Vec<String> {
    ids.iter().map(|i| cite_id(i.as_str())).collect()
}

fn hint(at: usize, uses: usize) -> Hint {
    Hint {
        recency: FRESH_RECENCY + at as u64,
        uses: u32::try_from(uses).unwrap_or(u32::MAX),
        ..Hint::default()
    }
}

/// The sections for `items` (whose facts are `facts`). `first_is_original` says whether the first
/// request is the session's original task (no earlier record holds it).
pub(super) fn sections(
    facts: &Facts,
    items: &[Item],
    first_is_original: bool,
) -> BTreeMap<SectionKind, Section> {
    let mut out: BTreeMap<SectionKind, Section> = BTreeMap::new();
    goal(
        facts,
        first_is_original,
        out.entry(SectionKind::Goal).or_default(),
    );
    let constraints = out.entry(SectionKind::Constraints).or_default();
    // Which injected instructions were in force (a skill, AGENTS.md), by the line that names them:
    // one short entry each, worth a user's constraint (the rules themselves are minor).
    for c in &facts.context {
        let text = format!("{CONTEXT_OPENING}{}", c.text);
        let e = Entry::new(&text, cites(&c.sources));
        constraints
            .entries
            .push(e.with_hint(hint(c.at, c.sources.len())));
    }
    for c in &facts.constraints {
        let e = Entry::new(&shorten(&c.text, ENTRY_CHARS), cites(&c.sources));
        let mut h = hint(c.at, c.sources.len());
        // Injected instructions (a skill's text) are worth less than what the user said.
        h.minor = c.injected;
        constraints.entries.push(e.with_hint(h));
    }
    files(facts, &mut out);
    out.entry(SectionKind::Commands).or_default().entries = command_entries(facts);
    out.entry(SectionKind::Errors).or_default().entries = error_entries(facts);
    let decisions = out.entry(SectionKind::Decisions).or_default();
    for d in &facts.decisions {
        let e = Entry::new(&shorten(&d.text, ENTRY_CHARS), cites(&d.sources));
        decisions
            .entries
            .push(e.with_hint(hint(d.at, d.sources.len())));
    }
    state(facts, items, out.entry(SectionKind::State).or_default());
    out.retain(|_, s| !s.is_empty());
    out
}

fn goal(facts: &Facts, first_is_original: bool, goal: &mut Section) {
    let statuses = request_statuses(facts);
    let n = facts.user_requests.len();
    for (k, (req, status)) in facts.user_requests.iter().zip(statuses).enumerate() {
        let original = k == 0 && first_is_original;
        let keep = original || k + LAST_REQUESTS >= n;
        if !keep && req.text.chars().count() < TERSE_REPLY_CHARS {
            // "a", "yes", "1": an answer to a question the record no longer holds.
            continue;
        }
        let limit = match (original, keep) {
            (true, _) => ORIGINAL_CHARS,
            (false, true) => REQUEST_CHARS,
            (false, false) => OLDER_REQUEST_CHARS,
        };
        let text = format!("[{status}] \"{}\"", shorten(&req.text, limit));
        let mut h = hint(req.at, 1);
        h.keep = keep;
        h.minor = !keep && req.text.chars().count() < SHORT_REQUEST_CHARS;
        goal.entries
            .push(Entry::new(&text, cites(&req.sources)).with_hint(h));
    }
}

fn files(facts: &Facts, out: &mut BTreeMap<SectionKind, Section>) {
    let modified = out.entry(SectionKind::FilesModified).or_default();
    for f in &facts.files_modified {
        let mut text = format!("{} — {}", f.path, f.op.as_str());
        match (f.op, f.changes) {
            (FileOp::Created, n) if n > 1 => text.push_str(&format!(", then modified ×{}", n - 1)),
            (_, n) if n > 1 => text.push_str(&format!(" ×{n}")),
            _ => {}
        }
        if f.op != FileOp::Deleted {
            if let Some(g) = &f.last_change {
                text.push_str(&format!("; last: {g}"));
            }
            push_symbols(&mut text, &f.symbols);
        }
        let e = Entry::new(&shorten(&text, FILE_ENTRY_CHARS), cites(&f.sources));
        modified
            .entries
            .push(e.with_hint(hint(f.last_at, f.changes)));
        if f.op != FileOp::Deleted {
            modified.entries.extend(names_entry(f));
        }
    }
    let read = out.entry(SectionKind::FilesRead).or_default();
    for f in facts
        .files_read
        .iter()
        .filter(|f| !facts.files_modified.iter().any(|m| m.path == f.path))
    {
        let mut text = f.path.clone();
        push_symbols(&mut text, &f.symbols);
        let e = Entry::new(&shorten(&text, FILE_ENTRY_CHARS), cites(&f.sources));
        read.entries
            .push(e.with_hint(hint(f.last_at, f.sources.len())));
        read.entries.extend(names_entry(f));
    }
}

/// A detail entry: the code names a file's content used, beyond the symbols its own entry shows.
/// Minor, so it only takes room the other entries leave (see `select`).
fn names_entry(f: &crate::facts::FileFact) -> Option<Entry> {
    let names: Vec<&str> = f
        .names
        .iter()
        .map(String::as_str)
        .filter(|n| !crate::facts::is_symbol(&f.symbols, n))
        .collect();
    if names.is_empty() {
        return None;
    }
    let text = format!("{NAMES_PREFIX}{}: {}", f.path, names.join(", "));
    let mut h = hint(f.last_at, 1);
    h.minor = true;
    // The latest item that touched the file is citation enough for a detail.
    let last = f.sources.last().map(|id| cite_id(id.as_str()));
    Some(Entry::new(&shorten(&text, FILE_ENTRY_CHARS), last).with_hint(h))
}

fn push_symbols(text: &mut String, symbols: &[String]) {
    if !symbols.is_empty() {
        let shown: Vec<&str> = symbols
            .iter()
            .take(SYMBOLS_SHOWN)
            .map(String::as_str)
            .collect();
        text.push_str(&format!("; symbols: {}", shown.join(", ")));
    }
}

/// How a run ended, in words: the exit code when there is one, else whether it failed.
pub(super) fn outcome(status: CommandStatus, failed: bool) -> String {
    match status {
        CommandStatus::Exit(c) => format!("exit {c}"),
        CommandStatus::Failed => "failed".to_owned(),
        CommandStatus::Interrupted => "interrupted".to_owned(),
        CommandStatus::Unknown if failed => "failed".to_owned(),
        CommandStatus::Unknown => "ok".to_owned(),
        CommandStatus::NoResult => "no result yet".to_owned(),
    }
}

/// First words of commands that build, test, lint, or change the repository's history: worth
/// remembering even when they succeeded once.
const MATTERING: &[&str] = &[
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "npx",
    "pytest",
    "tox",
    "nox",
    "go",
    "make",
    "cmake",
    "mvn",
    "gradle",
    "./gradlew",
    "tsc",
    "eslint",
    "ruff",
    "mypy",
    "jest",
    "vitest",
    "uv",
    "poetry",
    "dotnet",
    "swift",
    "xcodebuild",
    "docker",
    "bazel",
    "just",
    "deno",
    "mix",
    "rspec",
    "phpunit",
];
/// `git` / `gh` subcommands that change state.
const MATTERING_GIT: &[&str] = &[
    "commit", "push", "merge", "rebase", "reset", "checkout", "pr",
];

fn matters(key: &str) -> bool {
    let mut words = key.split_whitespace();
    let first = words.next().unwrap_or("");
    let second = words.next().unwrap_or("");
    MATTERING.contains(&first)
        || (matches!(first, "python" | "python3") && second == "-m")
        || (matches!(first, "git" | "gh") && MATTERING_GIT.contains(&second))
}

/// One entry per command that mattered (failed once, re-run, or a build / test / commit command) and
/// whose last run did not fail (those are failures), with its runs and last outcome.
fn command_entries(facts: &Facts) -> Vec<Entry> {
    struct Run<'a> {
        key: String,
        command: &'a str,
        runs: usize,
        failed_once: bool,
        last: CommandStatus,
        last_failed: bool,
        at: usize,
        ids: Vec<ItemId>,
    }
    let mut runs: Vec<Run<'_>> = Vec::new();
    for c in &facts.commands {
        let key = command_key(&c.command);
        match runs.iter_mut().find(|r| r.key == key) {
            Some(r) => {
                r.runs += 1;
                r.failed_once |= c.failed;
                r.last = c.status;
                r.last_failed = c.failed;
                r.at = c.at;
                r.command = &c.command;
                r.ids.extend(c.sources.iter().cloned());
            }
            None => runs.push(Run {
                key,
                command: &c.command,
                runs: 1,
                failed_once: c.failed,
                last: c.status,
                last_failed: c.failed,
                at: c.at,
                ids: c.sources.clone(),
            }),
        }
    }
    runs.sort_by_key(|r| r.at);
    runs.into_iter()
        // A command whose last run failed is in the failures already.
        .filter(|r| !r.last_failed && (r.failed_once || r.runs > 1 || matters(&r.key)))
        .map(|r| {
            let outcome = outcome(r.last, r.last_failed);
            let runs = if r.runs > 1 {
                format!("{} runs, last: ", r.runs)
            } else {
                String::new()
            };
            let text = format!("`{}` ({runs}{outcome})", shorten(r.command, COMMAND_CHARS));
            Entry::new(&text, cites(&r.ids)).with_hint(hint(r.at, r.runs))
        })
        .collect()
}

/// One entry per failure: what was attempted, how it ended, how often, the line that says why,
/// what the assistant said next, and whether a later run resolved it. The latest unresolved failure
/// is always kept.
fn error_entries(facts: &Facts) -> Vec<Entry> {
    let latest_open = facts
        .errors
        .iter()
        .enumerate()
        .filter(|(_, e)| e.resolved_by.is_none())
        .max_by_key(|(_, e)| e.at)
        .map(|(i, _)| i);
    facts
        .errors
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let count = if e.count > 1 {
                format!(" ×{}", e.count)
            } else {
                String::new()
            };
            let mut text = format!(
                "`{}` ({}{count}): {}",
                shorten(&e.action, COMMAND_CHARS),
                outcome(e.status, true),
                e.line
            );
            if let Some(f) = &e.followup {
                text.push_str(&format!(" — then: {f}"));
            }
            let mut ids = cites(&e.sources);
            if let Some(r) = &e.resolved_by {
                text.push_str(" — resolved by a later run");
                ids.push(cite_id(r.as_str()));
            }
            let mut h = hint(e.at, e.count);
            h.minor = e.resolved_by.is_some();
            h.keep = Some(i) == latest_open;
            Entry::new(&shorten(&text, ENTRY_CHARS + 120), ids).with_hint(h)
        })
        .collect()
}

fn state(facts: &Facts, items: &[Item], state: &mut Section) {
    if let Some(plan) = &facts.plan {
        if let Some(x) = &plan.explanation {
            state.intro.push(shorten(x, ENTRY_CHARS));
        }
        for step in &plan.steps {
            let (mark, open) = match step.status {
                StepStatus::Done => ("[x]", false),
                StepStatus::InProgress => ("[>]", true),
                StepStatus::Pending => ("[ ]", true),
                StepStatus::Cancelled => ("[-]", false),
            };
            let mut h = hint(plan.at, 1);
            h.keep = open;
            h.minor = step.status == StepStatus::Cancelled;
            let text = format!("{mark} {}", shorten(&step.text, ENTRY_CHARS));
            state
                .entries
                .push(Entry::new(&text, cites(&plan.sources)).with_hint(h));
        }
    }
    let last_reply = facts.replies.last().copied();
    if let Some(last) = last_reply {
        let text = items[last].plain_text();
        let text = format!("{LAST_MESSAGE} {}", shorten(text.trim(), ENTRY_CHARS));
        let mut h = hint(last, 1);
        h.keep = true;
        let e = Entry::new(&text, vec![cite_id(items[last].meta.id.as_str())]);
        state.entries.push(e.with_hint(h));
    }
    let last_call = items
        .iter()
        .enumerate()
        .rev()
        .find_map(|(at, i)| i.as_tool_call().map(|c| (at, c)));
    if let Some((at, call)) = last_call.filter(|(at, _)| last_reply.is_none_or(|r| *at > r)) {
        let id = &items[at].meta.id;
        let command = facts
            .commands
            .iter()
            .rev()
            .find(|c| c.sources.first() == Some(id));
        let (text, ids) = match command {
            Some(c) => (
                format!(
                    "{LAST_ACTION} `{}` ({})",
                    shorten(&c.command, COMMAND_CHARS),
                    outcome(c.status, c.failed)
                ),
                cites(&c.sources),
            ),
            None => {
                let target = classify(call).into_iter().find_map(|a| match a {
                    Action::Read(p) | Action::Modify(p) => Some(p),
                    _ => None,
                });
                let what = target.unwrap_or_else(|| call.arguments.to_text());
                (
                    format!(
                        "{LAST_ACTION} {} {}",
                        call.name,
                        shorten(&what, COMMAND_CHARS)
                    ),
                    vec![cite_id(id.as_str())],
                )
            }
        };
        let mut h = hint(at, 1);
        h.keep = true;
        state.entries.push(Entry::new(&text, ids).with_hint(h));
    }
}
