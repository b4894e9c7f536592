//! Candidates: what [`crate::facts::extract`] read from a span of items, and what a checkpoint or a
//! provider's summary states ([`crate::checkpoint::parse`]), as memory [`Candidate`]s. Nothing is
//! re-extracted here: this module only maps facts to kinds, subjects, texts and confidences.

use super::fact::{Candidate, FactKind, Origin};
use crate::checkpoint::{parse, SectionKind};
use crate::facts::{command_key, CommandFact, CommandStatus, Facts, FileOp};

/// Longest fact text, in characters (one line of the memory block).
pub const FACT_CHARS: usize = 240;

/// Confidence of what the user stated in their own words.
const USER_CONFIDENCE: f64 = 0.9;
/// Confidence of a rule read from context a harness injected (AGENTS.md, a skill).
const INJECTED_CONFIDENCE: f64 = 0.6;
/// Confidence of a decision the assistant stated.
const DECISION_CONFIDENCE: f64 = 0.75;
/// Confidence of what a tool call did (a file written, a dependency added, a failure).
const TOOL_CONFIDENCE: f64 = 0.85;
/// Confidence of a file only read (it may move; reading proves it was there).
const READ_CONFIDENCE: f64 = 0.6;
/// Confidence of a statement read from a summary (a model wrote it).
const SUMMARY_CONFIDENCE: f64 = 0.5;

/// Subject prefix of a directory a command entered (where a folder is holds beyond the session).
pub const DIRECTORY_SUBJECT: &str = "dir ";

/// Words that make a user's constraint a preference.
const PREFERENCE_CUES: &[&str] = &[
    "prefer",
    "i like",
    "i'd rather",
    "i would rather",
    "rather than",
];

/// Package managers' commands that add a dependency: (program, subcommand) and the name shown.
const ADDERS: &[(&str, &str)] = &[
    ("cargo", "add"),
    ("npm", "install"),
    ("npm", "i"),
    ("npm", "add"),
    ("yarn", "add"),
    ("pnpm", "add"),
    ("pip", "install"),
    ("pip3", "install"),
    ("uv", "add"),
    ("poetry", "add"),
    ("go", "get"),
    ("gem", "install"),
    ("bundle", "add"),
];

/// The candidates in `facts` (extracted from items whose ids the facts cite).
pub fn from_facts(facts: &Facts) -> Vec<Candidate> {
    let mut out = Vec::new();
    for s in &facts.constraints {
        let lower = s.text.to_lowercase();
        let kind = if PREFERENCE_CUES.iter().any(|c| lower.contains(c)) {
            FactKind::Preference
        } else {
            FactKind::Constraint
        };
        let confidence = if s.injected {
            INJECTED_CONFIDENCE
        } else {
            USER_CONFIDENCE
        };
        out.push(statement(kind, &s.text, confidence, ids(&s.sources)));
    }
    for s in &facts.decisions {
        out.push(statement(
            FactKind::Decision,
            &s.text,
            DECISION_CONFIDENCE,
            ids(&s.sources),
        ));
    }
    for f in &facts.files_modified {
        let text = format!("{} ({})", f.path, f.op.as_str());
        out.push(Candidate {
            kind: FactKind::FileState,
            subject: format!("file {}", f.path),
            text: clip(&text),
            path: absolute(&f.path),
            confidence: TOOL_CONFIDENCE,
            sources: ids(&f.sources),
            origin: Origin::Items,
        });
    }
    for f in facts.files_read.iter().filter(|f| f.op == FileOp::Read) {
        out.push(Candidate {
            kind: FactKind::FileState,
            subject: format!("read {}", f.path),
            text: clip(&format!("{} (read)", f.path)),
            path: absolute(&f.path),
            confidence: READ_CONFIDENCE,
            sources: ids(&f.sources),
            origin: Origin::Items,
        });
    }
    for c in facts.commands.iter().filter(|c| succeeded(c)) {
        if let Some(dir) = entered_directory(&c.command) {
            out.push(Candidate {
                kind: FactKind::FileState,
                subject: format!("{DIRECTORY_SUBJECT}{dir}"),
                text: clip(&format!("{dir} (directory)")),
                path: Some(dir.to_owned()),
                confidence: TOOL_CONFIDENCE,
                sources: ids(&c.sources),
                origin: Origin::Items,
            });
        }
        for (manager, name) in dependencies(&c.command) {
            out.push(Candidate {
                kind: FactKind::Dependency,
                subject: format!("dependency {manager} {}", bare_name(&name)),
                text: clip(&format!("{name} added with `{manager}`")),
                path: None,
                confidence: TOOL_CONFIDENCE,
                sources: ids(&c.sources),
                origin: Origin::Items,
            });
        }
    }
    for e in &facts.errors {
        let state = if e.resolved_by.is_some() {
            "resolved later"
        } else {
            "unresolved"
        };
        let text = format!("`{}` failed: {} ({state})", e.action, e.line);
        out.push(Candidate {
            kind: FactKind::Error,
            subject: format!("error {} | {}", command_key(&e.action), e.line),
            text: clip(&text),
            path: e.path.as_deref().and_then(absolute),
            confidence: TOOL_CONFIDENCE,
            sources: ids(&e.sources),
            origin: Origin::Items,
        });
    }
    out
}

/// The candidates a checkpoint or a summary states (its constraints and decisions; the rest of a
/// summary restates what the items already gave), citing the item that holds it.
pub fn from_summary(text: &str, source: &str) -> Vec<Candidate> {
    let sections = parse(text);
    let mut out = Vec::new();
    for (section, kind) in [
        (SectionKind::Constraints, FactKind::Constraint),
        (SectionKind::Decisions, FactKind::Decision),
    ] {
        let Some(s) = sections.get(&section) else {
            continue;
        };
        for e in &s.entries {
            out.push(Candidate {
                origin: Origin::Summary,
                ..statement(kind, &e.text, SUMMARY_CONFIDENCE, vec![source.to_owned()])
            });
        }
    }
    out
}

fn statement(kind: FactKind, text: &str, confidence: f64, sources: Vec<String>) -> Candidate {
    let text = clip(text);
    Candidate {
        kind,
        subject: subject_of(&text),
        text,
        path: None,
        confidence,
        sources,
        origin: Origin::Items,
    }
}

/// A statement's subject: itself, lowercased, whitespace collapsed, closing punctuation dropped
/// (so `Never push to main.` and `never push to main` are one fact).
fn subject_of(text: &str) -> String {
    let flat = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    flat.trim_end_matches(['.', '!', ';', ',']).to_owned()
}

/// One line, at most [`FACT_CHARS`] characters.
fn clip(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::facts::shorten(&flat, FACT_CHARS)
}

fn ids(sources: &[crate::model::ItemId]) -> Vec<String> {
    sources.iter().map(|s| s.as_str().to_owned()).collect()
}

/// An absolute path (`/...`, `C:\...`) as it was named; `None` for a relative one.
fn absolute(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let windows = b.len() > 2
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && (b[2] == b'\\' || b[2] == b'/');
    (path.starts_with('/') || windows).then(|| path.to_owned())
}

fn succeeded(c: &CommandFact) -> bool {
    !c.failed && matches!(c.status, CommandStatus::Exit(0) | CommandStatus::Unknown)
}

/// The absolute directory a command that succeeded entered first (`cd /abs/dir` alone or before
/// `&&`).
fn entered_directory(command: &str) -> Option<&str> {
    let rest = command.trim().strip_prefix("cd ")?;
    let dir = rest.split("&&").next()?.trim();
    let dir = dir.trim_end_matches('/');
    let plain = !dir.is_empty()
        && !dir.contains(char::is_whitespace)
        && !dir.contains(['$', '`', '*', '?', ';', '|', '\'', '"', '~']);
    (plain && absolute(dir).is_some() && dir.len() > 1).then_some(dir)
}

/// The dependencies a command line adds: (manager command, package as written).
fn dependencies(command: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for segment in command.split(['&', ';', '|']) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| !w.contains('=')) else {
            continue;
        };
        let words = &words[at..];
        if words.len() < 3 {
            continue;
        }
        let (program, sub) = (words[0], words[1]);
        if !ADDERS.contains(&(program, sub)) {
            continue;
        }
        let mut skip_next = false;
        for w in &words[2..] {
            if skip_next {
                skip_next = false;
                continue;
            }
            if w.starts_with('-') {
                // `-r requirements.txt`, `--features x`: the next word is the flag's value.
                skip_next = !w.contains('=')
                    && matches!(
                        *w,
                        "-r" | "--requirement"
                            | "-F"
                            | "--features"
                            | "--registry"
                            | "--path"
                            | "--git"
                            | "--rev"
                            | "--branch"
                            | "--tag"
                            | "-p"
                            | "--package"
                    );
                continue;
            }
            let plain = w
                .chars()
                .all(|c| c.is_alphanumeric() || "@/._-=<>~^:".contains(c));
            if plain && !w.starts_with('.') && !w.starts_with('/') {
                out.push((format!("{program} {sub}"), (*w).to_owned()));
            }
        }
    }
    out
}

/// A package without its version (`serde@1.0` -> `serde`, `requests==2.31` -> `requests`,
/// `@types/node@20` -> `@types/node`).
fn bare_name(package: &str) -> &str {
    let (scoped, rest) = match package.strip_prefix('@') {
        Some(r) => (1, r),
        None => (0, package),
    };
    let end = rest
        .find(['@', '=', '<', '>', '~', '^'])
        .unwrap_or(rest.len());
    &package[..end + scoped]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_are_read_from_package_manager_commands() {
        assert_eq!(
            dependencies("cd /x && cargo add serde@1 --features derive tokio"),
            [
                ("cargo add".to_owned(), "serde@1".to_owned()),
                ("cargo add".to_owned(), "tokio".to_owned())
            ]
        );
        assert!(dependencies("npm install").is_empty());
        assert!(dependencies("pip install -r requirements.txt").is_empty());
        assert!(dependencies("cargo build").is_empty());
        assert_eq!(bare_name("serde@1"), "serde");
        assert_eq!(bare_name("@types/node@20"), "@types/node");
        assert_eq!(bare_name("requests==2.31"), "requests");
    }

    #[test]
    fn only_plain_absolute_directories_are_entered() {
        assert_eq!(entered_directory("cd /srv/app && make"), Some("/srv/app"));
        assert_eq!(entered_directory("cd /srv/app/"), Some("/srv/app"));
        assert_eq!(entered_directory("cd app && make"), None);
        assert_eq!(entered_directory("cd $HOME/app"), None);
        assert_eq!(entered_directory("cd /"), None);
        assert_eq!(entered_directory("ls /srv"), None);
    }
}
