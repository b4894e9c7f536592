//! Folding a previous record (ours, or a model-written summary read by [`super::foreign`]) into the
//! sections of the new items. Newer facts replace stale ones: a file's entry is merged by path (the
//! new state first, an earlier summary's description after it), a command's by command, a request's
//! by its text (the new status wins); a new plan replaces the old one, and where work stopped is
//! always the newest; an earlier summary's open items are kept apart, marked as possibly done since.
//! Everything from the previous record is older than everything new.

use super::fresh::{FRESH_RECENCY, NAMES_PREFIX};
use super::section::{Entry, Hint, Section, SectionKind};
use super::status::RequestStatus;
use super::{LAST_ACTION, LAST_MESSAGE};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Sub-heading for a previous summary's open items once newer work exists.
const EARLIER_OPEN: &str = "Open items of an earlier summary (check whether still open)";
/// Plan-step marks written by [`super::fresh`].
const STEP_MARKS: [&str; 4] = ["[x] ", "[>] ", "[ ] ", "[-] "];
/// Words a file entry's description starts with when we wrote it.
const FILE_OPS: [&str; 4] = ["created", "modified", "deleted", "read"];

/// Merges `fresh` into `previous` (see the module documentation). `interrupted_earlier`: the new
/// items open with the user stopping the work, so the previous record's latest request (ours, still
/// in progress or open) is marked interrupted.
pub(super) fn merge(
    mut previous: BTreeMap<SectionKind, Section>,
    mut fresh: BTreeMap<SectionKind, Section>,
    interrupted_earlier: bool,
) -> BTreeMap<SectionKind, Section> {
    age(&mut previous);
    if interrupted_earlier {
        if let Some(last) = previous
            .get_mut(&SectionKind::Goal)
            .and_then(|g| g.entries.last_mut())
        {
            mark_interrupted(last);
        }
    }
    let fresh_state = fresh
        .get(&SectionKind::State)
        .is_some_and(|s| !s.is_empty());
    let fresh_plan = fresh
        .get(&SectionKind::State)
        .is_some_and(|s| s.entries.iter().any(|e| is_step(&e.text)));
    if let Some(old) = previous.remove(&SectionKind::State) {
        let (kept, moved) = old_state(old, fresh_state, fresh_plan);
        if !kept.is_empty() {
            previous.insert(SectionKind::State, kept);
        }
        previous
            .entry(SectionKind::Earlier)
            .or_default()
            .entries
            .extend(moved);
    }
    if fresh
        .get(&SectionKind::Goal)
        .is_none_or(|g| g.entries.is_empty())
    {
        if let Some(last) = previous
            .get_mut(&SectionKind::Goal)
            .and_then(|g| g.entries.last_mut())
        {
            last.hint.keep = true;
        }
    }
    if let Some(new) = fresh.remove(&SectionKind::FilesModified) {
        for e in new.entries {
            merge_file(&mut previous, SectionKind::FilesModified, e);
        }
    }
    if let Some(new) = fresh.remove(&SectionKind::FilesRead) {
        for e in new.entries {
            merge_file(&mut previous, SectionKind::FilesRead, e);
        }
    }
    for (kind, new) in fresh {
        let old = previous.entry(kind).or_default();
        if kind == SectionKind::State {
            old.intro = new.intro;
        } else {
            old.intro.extend(new.intro);
        }
        merge_entries(kind, &mut old.entries, new.entries);
    }
    previous.retain(|_, s| !s.is_empty());
    previous
}

/// Appends the `new` entries of a `kind` section to `entries`; one with the [`key`] of an entry
/// already there replaces the first such entry, merged with it, at the end. Linear: entries are
/// found through an index by key, not by a search per new entry.
fn merge_entries(kind: SectionKind, entries: &mut Vec<Entry>, new: Vec<Entry>) {
    let mut slots: Vec<Option<Entry>> = std::mem::take(entries).into_iter().map(Some).collect();
    // Per key, the slots holding an entry with that key, in order.
    let mut by_key: HashMap<String, VecDeque<usize>> = HashMap::new();
    for (i, e) in slots.iter().enumerate() {
        if let Some(e) = e {
            by_key.entry(key(kind, &e.text)).or_default().push_back(i);
        }
    }
    for entry in new {
        let same = by_key.entry(key(kind, &entry.text)).or_default();
        let merged = match same.pop_front().and_then(|i| slots[i].take()) {
            Some(mut old) => {
                let mut merged = entry;
                merged.cites = union(&old.cites, &merged.cites);
                if merged.block.is_none() {
                    merged.block = old.block.take();
                }
                merged.hint.keep |= old.hint.keep;
                merged
            }
            None => entry,
        };
        same.push_back(slots.len());
        slots.push(Some(merged));
    }
    *entries = slots.into_iter().flatten().collect();
}

/// Gives every entry of the previous record an old recency (in write order) and marks the original
/// task (the first request) as always kept.
fn age(previous: &mut BTreeMap<SectionKind, Section>) {
    let mut n: u64 = 0;
    for kind in SectionKind::WRITE_ORDER {
        let Some(section) = previous.get_mut(&kind) else {
            continue;
        };
        for (i, e) in section.entries.iter_mut().enumerate() {
            n += 1;
            e.hint = Hint {
                recency: n.min(FRESH_RECENCY - 1),
                uses: u32::try_from(e.cites.len()).unwrap_or(u32::MAX),
                keep: kind == SectionKind::Goal && i == 0,
                minor: e.text.starts_with("[-] ") || e.text.starts_with(NAMES_PREFIX),
            };
        }
    }
}

/// Rewrites a request entry we wrote as `[in progress] "..."` or `[open] "..."` to say the user
/// interrupted it; a finished request, or a model's summary line, is left as it is.
fn mark_interrupted(entry: &mut Entry) {
    for status in [RequestStatus::InProgress, RequestStatus::Open] {
        let prefix = format!("[{status}] ");
        if let Some(rest) = entry.text.strip_prefix(&prefix) {
            entry.text = format!("[{}] {rest}", RequestStatus::Interrupted);
            return;
        }
    }
}

fn is_step(text: &str) -> bool {
    STEP_MARKS.iter().any(|m| text.starts_with(m))
}

/// What stays of the previous state (`kept`) and what moves to the earlier record (`moved`).
fn old_state(old: Section, fresh_state: bool, fresh_plan: bool) -> (Section, Vec<Entry>) {
    if !fresh_state {
        let mut kept = old;
        for e in &mut kept.entries {
            e.hint.keep = !e.hint.minor;
        }
        return (kept, Vec::new());
    }
    let mut kept = Section::default();
    let mut moved = Vec::new();
    for mut e in old.entries {
        let last = e.text.starts_with(LAST_MESSAGE) || e.text.starts_with(LAST_ACTION);
        if is_step(&e.text) {
            if !fresh_plan {
                kept.entries.push(e);
            }
        } else if !last && is_open_items(e.group.as_deref()) {
            e.group = Some(EARLIER_OPEN.to_owned());
            moved.push(e);
        }
    }
    if !fresh_plan && !kept.entries.is_empty() {
        kept.intro = old.intro;
    }
    (kept, moved)
}

/// True for an earlier summary's list of open items ("Pending Tasks", "Remaining work"), as opposed
/// to its "Current Work" or "Next Step", which newer work supersedes.
fn is_open_items(group: Option<&str>) -> bool {
    let lower = group.unwrap_or_default().to_ascii_lowercase();
    ["pending", "todo", "to do", "remaining", "open", "task"]
        .iter()
        .any(|w| lower.contains(w))
}

/// The merge key of an entry: a request without its status, a command, or the text.
fn key(kind: SectionKind, text: &str) -> String {
    match kind {
        SectionKind::Goal => text
            .strip_prefix('[')
            .and_then(|t| t.split_once("] "))
            .map_or(text, |(_, rest)| rest)
            .to_owned(),
        SectionKind::Commands => text
            .strip_prefix('`')
            .and_then(|t| t.split_once('`'))
            .map_or(text, |(cmd, _)| cmd)
            .to_owned(),
        _ => text.to_owned(),
    }
}

/// A file entry's path (the text before ` — ` or `; `).
fn path_of(text: &str) -> &str {
    let end = [text.find(" — "), text.find("; ")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(text.len());
    &text[..end]
}

/// Merges a new file entry (`kind` is its section) with the previous record's entry for the same
/// path, wherever it was.
fn merge_file(previous: &mut BTreeMap<SectionKind, Section>, kind: SectionKind, mut entry: Entry) {
    let path = path_of(&entry.text).to_owned();
    let mut found: Option<(SectionKind, Entry)> = None;
    for k in [SectionKind::FilesModified, SectionKind::FilesRead] {
        if let Some(s) = previous.get_mut(&k) {
            if let Some(i) = s
                .entries
                .iter()
                .position(|e| same_path(path_of(&e.text), &path))
            {
                found = Some((k, s.entries.remove(i)));
                break;
            }
        }
    }
    let target = match found {
        // Read again after an earlier change: still a modified file, now recent.
        Some((SectionKind::FilesModified, mut old)) if kind == SectionKind::FilesRead => {
            old.cites = union(&old.cites, &entry.cites);
            old.hint.recency = entry.hint.recency;
            entry = old;
            SectionKind::FilesModified
        }
        Some((_, old)) => {
            if let Some((_, description)) = old.text.split_once(" — ") {
                let ours = FILE_OPS.iter().any(|op| description.starts_with(op));
                if !ours {
                    let earlier = crate::facts::shorten(description, 160);
                    entry.text = format!("{}; earlier: {earlier}", entry.text);
                }
            }
            entry.cites = union(&old.cites, &entry.cites);
            if entry.block.is_none() {
                entry.block = old.block;
            }
            kind
        }
        None => kind,
    };
    previous.entry(target).or_default().entries.push(entry);
}

/// The same file named two ways: equal, or one a suffix of the other at a `/` (an absolute path in a
/// tool call, a relative one in a summary).
fn same_path(a: &str, b: &str) -> bool {
    let suffix = |long: &str, short: &str| {
        long.len() > short.len()
            && long.ends_with(short)
            && long.as_bytes()[long.len() - short.len() - 1] == b'/'
    };
    a == b || (b.contains('/') && suffix(a, b)) || (a.contains('/') && suffix(b, a))
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = a.to_vec();
    for c in b {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}
