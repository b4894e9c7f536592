//! Checkpoint sections and entries: titles, the order they are written in, the order they give way
//! when the budget is tight, and how an entry is written (`- text [i3, i7]`).

/// The sections of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SectionKind {
    /// A previous record that could not be read back section by section (e.g. a model-written summary).
    Earlier,
    /// The user's requests, verbatim, with their status.
    Goal,
    /// Constraints and preferences the user stated.
    Constraints,
    /// Files read (and not modified).
    FilesRead,
    /// Files created, edited or deleted.
    FilesModified,
    /// Commands run with their exit status.
    Commands,
    /// Errors and failed approaches (never dropped).
    Errors,
    /// Decisions the assistant stated.
    Decisions,
    /// The latest plan / todo list and where work stopped.
    State,
}

impl SectionKind {
    /// Sections in the order they are written.
    pub const WRITE_ORDER: [SectionKind; 9] = [
        SectionKind::Earlier,
        SectionKind::Goal,
        SectionKind::Constraints,
        SectionKind::FilesRead,
        SectionKind::FilesModified,
        SectionKind::Commands,
        SectionKind::Errors,
        SectionKind::Decisions,
        SectionKind::State,
    ];

    /// Sections in the order they give way when over budget (oldest entries first). The goal and the
    /// errors are never dropped; they are only shortened.
    pub const DROP_ORDER: [SectionKind; 7] = [
        SectionKind::FilesRead,
        SectionKind::Commands,
        SectionKind::Decisions,
        SectionKind::FilesModified,
        SectionKind::Earlier,
        SectionKind::Constraints,
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

/// At most this many ids are cited per entry; more are summarised as `+N more`.
pub const MAX_CITES: usize = 6;

/// One entry: a line of text and the ids of the items it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The text (one line).
    pub text: String,
    /// Cited item ids, oldest first (already rendered ids or `+N more`).
    pub cites: Vec<String>,
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
        }
    }

    /// The entry as written: `- text [a, b]`.
    pub fn render(&self) -> String {
        if self.cites.is_empty() {
            return format!("- {}", self.text);
        }
        let mut shown: Vec<&str> = self
            .cites
            .iter()
            .take(MAX_CITES)
            .map(String::as_str)
            .collect();
        let more;
        if self.cites.len() > MAX_CITES {
            more = format!("+{} more", self.cites.len() - MAX_CITES);
            shown.push(&more);
        }
        format!("- {} [{}]", self.text, shown.join(", "))
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
                        .map(str::to_owned)
                        .collect();
                    return Some(Entry {
                        text: body[..open].to_owned(),
                        cites,
                    });
                }
            }
        }
        Some(Entry {
            text: body.to_owned(),
            cites: Vec::new(),
        })
    }
}

/// A section's entries and how many were omitted for the budget.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Section {
    /// Entries, oldest first.
    pub entries: Vec<Entry>,
    /// Lines written before the entries (e.g. a plan's explanation).
    pub intro: Vec<String>,
    /// Entries omitted for the budget.
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
            let noun = if self.omitted == 1 {
                "entry"
            } else {
                "entries"
            };
            out.push_str(&format!("({} earlier {noun} omitted)\n", self.omitted));
        }
        for e in &self.entries {
            out.push_str(&e.render());
            out.push('\n');
        }
        out
    }
}
