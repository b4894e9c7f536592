//! Checkpoint sections and entries: titles, the order they are written in, how an entry is written
//! (`- text [i3, i7]`, optionally followed by a verbatim block such as a fenced code block, optionally
//! under a `### group` sub-heading) and read back.

/// The sections of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectionKind {
    /// Parts of a previous record that map to no other section (e.g. a model-written summary's
    /// "Key technical concepts"), kept under their own sub-headings.
    Earlier,
    /// The user's requests, verbatim, with their status; the first is the original task.
    Goal,
    /// Constraints and preferences the user stated.
    Constraints,
    /// Files read (and not modified), with the symbols seen in them.
    FilesRead,
    /// Files created, edited or deleted: what happened, the last change, symbols.
    FilesModified,
    /// Commands that mattered (failed, or build / test commands, or re-run) with their last outcome.
    Commands,
    /// Failures: the command or tool, the error line, a count, and whether it was resolved.
    Errors,
    /// Decisions the assistant stated.
    Decisions,
    /// The latest plan / todo list and where work stopped.
    State,
}

impl SectionKind {
    /// Sections in the order they are written: the task first, where work stopped last (nearest to
    /// the messages that follow the checkpoint).
    pub const WRITE_ORDER: [SectionKind; 9] = [
        SectionKind::Goal,
        SectionKind::Constraints,
        SectionKind::FilesModified,
        SectionKind::FilesRead,
        SectionKind::Errors,
        SectionKind::Commands,
        SectionKind::Decisions,
        SectionKind::Earlier,
        SectionKind::State,
    ];

    /// The heading text (after `## `).
    pub fn title(self) -> &'static str {
        match self {
            SectionKind::Earlier => "Earlier record",
            SectionKind::Goal => "Goal and user requests",
            SectionKind::Constraints => "Constraints and preferences",
            SectionKind::FilesRead => "Files read",
            SectionKind::FilesModified => "Files modified",
            SectionKind::Commands => "Commands run",
            SectionKind::Errors => "Errors and failed approaches",
            SectionKind::Decisions => "Decisions",
            SectionKind::State => "Current state and next steps",
        }
    }

    /// The section with this heading text.
    pub fn from_title(title: &str) -> Option<SectionKind> {
        SectionKind::WRITE_ORDER
            .into_iter()
            .find(|k| k.title().eq_ignore_ascii_case(title.trim()))
    }
}

/// At most this many ids are cited per entry (the first and the latest ones); more are summarised
/// as `+N more`.
pub const MAX_CITES: usize = 3;

/// What the budget needs to know about an entry; not written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hint {
    /// Higher is newer (entries of a previous record are older than every new one).
    pub recency: u64,
    /// How often the fact was used: runs, changes, repeats, citations.
    pub uses: u32,
    /// Always kept (shortened rather than dropped): the original task, the latest requests, the
    /// open steps of the plan, where work stopped.
    pub keep: bool,
    /// Worth less than its section's other entries (a resolved failure, a finished step, a
    /// one-word reply, the names a file's content used).
    pub minor: bool,
}

/// One entry: a line of text, the ids of the items it came from, and optionally a verbatim block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The text (one line).
    pub text: String,
    /// Cited item ids, oldest first (already rendered ids).
    pub cites: Vec<String>,
    /// Verbatim lines written after the entry (a fenced code block), never reflowed.
    pub block: Option<String>,
    /// The `### ` sub-heading the entry is written under, if any.
    pub group: Option<String>,
    /// What the budget needs to know.
    pub hint: Hint,
}

impl Entry {
    /// An entry; newlines in `text` become ` / ` so every entry stays one line.
    pub fn new(text: &str, cites: impl IntoIterator<Item = String>) -> Entry {
        let one_line: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        Entry {
            text: one_line.join(" / "),
            cites: cites.into_iter().collect(),
            block: None,
            group: None,
            hint: Hint::default(),
        }
    }

    /// The same entry with a budget hint.
    pub fn with_hint(mut self, hint: Hint) -> Entry {
        self.hint = hint;
        self
    }

    /// The entry as written: `- text [a, b]`, then its block.
    pub fn render(&self) -> String {
        let mut out = format!("- {}", self.text);
        if !self.cites.is_empty() {
            let n = self.cites.len();
            let shown: Vec<String> = if n <= MAX_CITES {
                self.cites.clone()
            } else {
                vec![
                    self.cites[0].clone(),
                    format!("+{} more", n - 2),
                    self.cites[n - 1].clone(),
                ]
            };
            out.push_str(&format!(" [{}]", shown.join(", ")));
        }
        if let Some(block) = &self.block {
            out.push('\n');
            out.push_str(block.trim_end());
        }
        out
    }

    /// Parses a written entry line (`- text [a, b]`) back; `None` for other lines.
    pub fn parse(line: &str) -> Option<Entry> {
        let body = line.strip_prefix("- ")?.trim_end();
        if let Some(open) = body.rfind(" [") {
            if body.ends_with(']') {
                let inside = &body[open + 2..body.len() - 1];
                let looks_like_cites = !inside.is_empty()
                    && inside
                        .split(", ")
                        .all(|c| !c.contains(' ') || c.starts_with('+'));
                if looks_like_cites {
                    let cites = inside
                        .split(", ")
                        .filter(|c| !c.starts_with('+'))
                        .map(str::to_owned);
                    return Some(Entry::new(&body[..open], cites));
                }
            }
        }
        Some(Entry::new(body, Vec::new()))
    }
}

/// A section's entries and how many were left out for the budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// Entries, oldest first.
    pub entries: Vec<Entry>,
    /// Lines written before the entries (e.g. a plan's explanation).
    pub intro: Vec<String>,
    /// Entries left out for the budget.
    pub omitted: usize,
}

impl Section {
    /// True when nothing would be written.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.intro.is_empty() && self.omitted == 0
    }

    /// The section as written, heading included.
    pub fn render(&self, kind: SectionKind) -> String {
        let mut out = format!("## {}\n", kind.title());
        for line in &self.intro {
            out.push_str(line);
            out.push('\n');
        }
        if self.omitted > 0 {
            out.push_str(&omission_note(self.omitted));
            out.push('\n');
        }
        let mut group: Option<&str> = None;
        for e in &self.entries {
            if e.group.is_some() && e.group.as_deref() != group {
                group = e.group.as_deref();
                out.push_str(&format!("### {}\n", group.unwrap_or_default()));
            }
            out.push_str(&e.render());
            out.push('\n');
        }
        out
    }
}

/// The note standing for `n` entries left out.
pub(crate) fn omission_note(n: usize) -> String {
    format!("({n} more not shown)")
}

/// True for an omission note (current or older wording); such lines are recomputed, not carried.
pub(crate) fn is_omission_note(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('(') && (t.ends_with("omitted)") || t.ends_with("not shown)"))
}

/// The id as cited (see [`crate::model::ItemId::cited`]); `compactctl recall` accepts it.
pub fn cite_id(id: &str) -> String {
    crate::model::ItemId::new(id).cited()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cites_are_short_and_round_trip() {
        assert_eq!(cite_id("e2855f62-6fbf-4652-bbea-b905050f3fa1"), "e2855f62");
        assert_eq!(
            cite_id("e2855f62-6fbf-4652-bbea-b905050f3fa1.2"),
            "e2855f62.2"
        );
        assert_eq!(cite_id("i12"), "i12");
        let e = Entry::new(
            "run `x` [draft]",
            ["a".into(), "b".into(), "c".into(), "d".into()],
        );
        assert_eq!(e.render(), "- run `x` [draft] [a, +2 more, d]");
        let back = Entry::parse(&e.render()).unwrap_or_else(|| Entry::new("", []));
        assert_eq!(back.text, "run `x` [draft]");
        assert_eq!(back.cites, ["a", "d"]);
    }
}
