//! Reading a previous checkpoint back into sections, so compacting again folds it in instead of
//! stacking a summary of a summary.

use super::section::{Entry, Section, SectionKind};
use std::collections::BTreeMap;

/// Longest line carried from a previous record that is not in checkpoint form.
const MAX_FOREIGN_LINE_CHARS: usize = 400;

/// The sections of a previous checkpoint text. Text in checkpoint form (`## <section>` headings and
/// `- entry [ids]` lines) is read section by section; anything else (a model-written summary) becomes
/// the entries of [`SectionKind::Earlier`], one per non-empty line.
pub fn parse(text: &str) -> BTreeMap<SectionKind, Section> {
    let mut out: BTreeMap<SectionKind, Section> = BTreeMap::new();
    let mut current: Option<SectionKind> = None;
    let mut foreign: Vec<Entry> = Vec::new();
    let mut in_header = true;
    for line in text.lines() {
        if let Some(title) = line.strip_prefix("## ") {
            current = SectionKind::from_title(title);
            in_header = false;
            if current.is_none() {
                foreign.push(Entry::new(line, Vec::new()));
            }
            continue;
        }
        let trimmed = line.trim();
        if trimmed.is_empty() || (in_header && line.starts_with('#')) {
            continue;
        }
        match current {
            Some(kind) => {
                let section = out.entry(kind).or_default();
                if let Some(entry) = Entry::parse(line) {
                    section.entries.push(entry);
                } else if trimmed.starts_with('(') && trimmed.ends_with("omitted)") {
                    // Omission notes are recomputed.
                } else {
                    section.intro.push(line.to_owned());
                }
            }
            None if in_header => {}
            None => foreign.push(Entry::new(
                &crate::facts::shorten(trimmed, MAX_FOREIGN_LINE_CHARS),
                Vec::new(),
            )),
        }
    }
    if out.is_empty() {
        // Not in checkpoint form at all: carry every line.
        let lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
        foreign = lines
            .map(|l| {
                Entry::new(
                    &crate::facts::shorten(l, MAX_FOREIGN_LINE_CHARS),
                    Vec::new(),
                )
            })
            .collect();
    }
    if !foreign.is_empty() {
        out.entry(SectionKind::Earlier)
            .or_default()
            .entries
            .extend(foreign);
    }
    out
}
