//! The artifact trail: for every file touched, what happened to it (read, created, modified,
//! deleted), the gist of its last change and the symbols seen in what was read and written.

use super::shorten;
use super::symbols::{code_names, definitions};
use super::tools::Action;
use crate::model::{ItemId, ToolCall};
use serde_json::Value;
use std::collections::HashSet;

/// Longest gist of a change, in characters.
const GIST_CHARS: usize = 100;
/// At most this many symbols are remembered per file (newest first).
pub const MAX_SYMBOLS: usize = 16;
/// At most this many symbols are read from one piece of text.
const SYMBOLS_PER_TEXT: usize = 12;
/// At most this many code names are taken from text an edit wrote (after its definitions).
const NAMES_PER_CHANGE: usize = 8;
/// At most this many code names are kept of a file's content as read.
const NAMES_PER_READ: usize = 16;

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    /// Only read.
    Read,
    /// Created in the span (and possibly changed again).
    Created,
    /// Changed.
    Modified,
    /// Deleted.
    Deleted,
}

impl FileOp {
    /// The word used in a checkpoint.
    pub fn as_str(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::Created => "created",
            FileOp::Modified => "modified",
            FileOp::Deleted => "deleted",
        }
    }
}

/// A file read or modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFact {
    /// The path as the tool call named it.
    pub path: String,
    /// The calls that touched it, oldest first.
    pub sources: Vec<ItemId>,
    /// What happened to it (the strongest change: a file created then edited stays created).
    pub op: FileOp,
    /// Number of changes (calls that modified it and did not fail).
    pub changes: usize,
    /// The gist of the last change (`+ added line`, `- removed line`, `wrote 40 lines`).
    pub last_change: Option<String>,
    /// Symbols seen in what was read and written, newest first.
    pub symbols: Vec<String>,
    /// The code names the file's content used most, as last read (its own symbols left out): the
    /// fields, calls and types an edit of it is likely to name.
    pub names: Vec<String>,
    /// Position of the last call that touched it.
    pub last_at: usize,
}

/// One change a tool call makes to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Change {
    pub path: String,
    pub op: FileOp,
    pub gist: Option<String>,
    /// The text written (for symbols).
    pub written: Option<String>,
}

/// Files in order of first mention.
#[derive(Debug, Default)]
pub(super) struct FileSet(pub Vec<FileFact>);

impl FileSet {
    fn entry(&mut self, path: &str, op: FileOp, at: usize) -> &mut FileFact {
        let idx = match self.0.iter().position(|f| f.path == path) {
            Some(i) => i,
            None => {
                self.0.push(FileFact {
                    path: path.to_owned(),
                    sources: Vec::new(),
                    op,
                    changes: 0,
                    last_change: None,
                    symbols: Vec::new(),
                    names: Vec::new(),
                    last_at: at,
                });
                self.0.len() - 1
            }
        };
        &mut self.0[idx]
    }

    /// Records a read of `path` by the call `id` at `at`, with the symbols of the text read.
    pub(super) fn read(&mut self, path: &str, id: &ItemId, at: usize, content: Option<&str>) {
        let f = self.entry(path, FileOp::Read, at);
        touch(f, id, at);
        if let Some(text) = content {
            add_symbols(f, &definitions(path, text, SYMBOLS_PER_TEXT));
            f.names = code_names(text, NAMES_PER_READ + SYMBOLS_PER_TEXT)
                .into_iter()
                .filter(|n| !is_symbol(&f.symbols, n))
                .take(NAMES_PER_READ)
                .collect();
        }
    }

    /// Records a change made by the call `id` at `at`.
    pub(super) fn change(&mut self, change: &Change, id: &ItemId, at: usize) {
        let f = self.entry(&change.path, change.op, at);
        touch(f, id, at);
        f.op = match (f.op, change.op) {
            (_, FileOp::Deleted) => FileOp::Deleted,
            (FileOp::Created, FileOp::Modified) => FileOp::Created,
            (_, FileOp::Read) => f.op,
            (_, op) => op,
        };
        f.changes += 1;
        if change.gist.is_some() {
            f.last_change.clone_from(&change.gist);
        }
        if let Some(text) = &change.written {
            // The definitions first, then the names the change used (fields, calls, types).
            let mut symbols = definitions(&change.path, text, SYMBOLS_PER_TEXT);
            for name in code_names(text, NAMES_PER_CHANGE) {
                if !is_symbol(&symbols, &name) {
                    symbols.push(name);
                }
            }
            add_symbols(f, &symbols);
        }
    }
}

fn touch(f: &mut FileFact, id: &ItemId, at: usize) {
    if !f.sources.contains(id) {
        f.sources.push(id.clone());
    }
    f.last_at = f.last_at.max(at);
}

/// True when `name` is one of `symbols` (a function symbol is written `name()`).
pub(crate) fn is_symbol(symbols: &[String], name: &str) -> bool {
    symbols.iter().any(|s| s.trim_end_matches("()") == name)
}

/// Puts `new` symbols first (newest first), without duplicates, at most [`MAX_SYMBOLS`].
fn add_symbols(f: &mut FileFact, new: &[String]) {
    if new.is_empty() {
        return;
    }
    let mut all: Vec<String> = new.to_vec();
    all.extend(f.symbols.drain(..).filter(|s| !new.contains(s)));
    all.truncate(MAX_SYMBOLS);
    f.symbols = all;
}

/// The changes `call` makes, read from its arguments (`actions` are its classified actions).
pub(super) fn changes_of(
    call: &ToolCall,
    actions: &[Action],
    command: Option<&str>,
) -> Vec<Change> {
    let modified: Vec<&str> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Modify(p) => Some(p.as_str()),
            _ => None,
        })
        .collect();
    if modified.is_empty() {
        return Vec::new();
    }
    let args = call.arguments.to_value().unwrap_or(Value::Null);
    let raw = call.arguments.to_text();
    let patch = ["input", "patch"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .filter(|p| p.contains("*** Begin Patch"))
        .or_else(|| raw.contains("*** Begin Patch").then_some(raw.as_str()));
    let patch = patch.or_else(|| match &args {
        Value::String(s) if s.contains("*** Begin Patch") => Some(s.as_str()),
        _ => None,
    });
    if let Some(patch) = patch {
        return patch_changes(patch);
    }
    if let Some(cmd) = command {
        let deleted = super::shell::files(cmd).deleted;
        return modified
            .iter()
            .map(|p| Change {
                path: (*p).to_owned(),
                op: if deleted.iter().any(|d| d == p) {
                    FileOp::Deleted
                } else {
                    FileOp::Modified
                },
                gist: Some(format!("via `{}`", shorten(cmd, 60))),
                written: None,
            })
            .collect();
    }
    let name = call.name.to_ascii_lowercase();
    let str_arg = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str))
            .map(str::to_owned)
    };
    let editor_command = str_arg(&["command"]).unwrap_or_default();
    let old = str_arg(&["old_string", "old_str"]);
    let new = str_arg(&["new_string", "new_str", "new_source"]);
    let content = str_arg(&["content", "file_text", "contents", "text"]);
    let edits = args.get("edits").and_then(Value::as_array);
    let (op, gist, written) = if name.contains("delete") || editor_command == "delete" {
        (FileOp::Deleted, None, None)
    } else if let Some(edits) = edits.filter(|e| !e.is_empty()) {
        let pairs: Vec<(&str, &str)> = edits
            .iter()
            .map(|e| {
                let get = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                (get("old_string"), get("new_string"))
            })
            .collect();
        let gist = pairs.iter().rev().find_map(|(o, n)| diff_gist(o, n));
        let gist = gist.map(|g| format!("{g} ({} edits)", pairs.len()));
        let written = pairs.iter().map(|p| p.1).collect::<Vec<_>>().join("\n");
        (FileOp::Modified, gist, Some(written))
    } else if let Some(new) = new {
        let gist = diff_gist(old.as_deref().unwrap_or(""), &new);
        (FileOp::Modified, gist, Some(new))
    } else if let Some(content) = content {
        let created = name.contains("create") || editor_command == "create";
        let op = if created {
            FileOp::Created
        } else {
            FileOp::Modified
        };
        let gist = format!("wrote {} lines", content.lines().count());
        (op, Some(gist), Some(content))
    } else {
        (FileOp::Modified, None, None)
    };
    modified
        .iter()
        .map(|p| Change {
            path: (*p).to_owned(),
            op,
            gist: gist.clone(),
            written: written.clone(),
        })
        .collect()
}

/// Changes of an apply_patch body: one per file section, with its first added line as the gist.
fn patch_changes(patch: &str) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    let mut added: Vec<&str> = Vec::new();
    let mut removed: Vec<&str> = Vec::new();
    let finish = |out: &mut Vec<Change>, added: &mut Vec<&str>, removed: &mut Vec<&str>| {
        if let Some(last) = out.last_mut() {
            if last.op != FileOp::Deleted {
                last.gist = diff_gist(&removed.join("\n"), &added.join("\n"));
                last.written = Some(added.join("\n"));
            }
        }
        added.clear();
        removed.clear();
    };
    for line in patch.lines() {
        let t = line.trim();
        let header = [
            ("*** Update File:", FileOp::Modified),
            ("*** Add File:", FileOp::Created),
            ("*** Delete File:", FileOp::Deleted),
        ]
        .iter()
        .find_map(|(h, op)| t.strip_prefix(h).map(|p| (p.trim(), *op)));
        if let Some((path, op)) = header {
            finish(&mut out, &mut added, &mut removed);
            out.push(Change {
                path: path.to_owned(),
                op,
                gist: None,
                written: None,
            });
        } else if let Some(dest) = t.strip_prefix("*** Move to:") {
            if let Some(last) = out.last_mut() {
                last.path = dest.trim().to_owned();
            }
        } else if let Some(a) = line.strip_prefix('+') {
            added.push(a);
        } else if let Some(r) = line.strip_prefix('-') {
            removed.push(r);
        }
    }
    finish(&mut out, &mut added, &mut removed);
    out
}

/// True for a line that says something (at least three letters or digits, not only braces).
fn telling(line: &str) -> bool {
    line.chars().filter(|c| c.is_alphanumeric()).count() >= 3
}

/// The gist of replacing `old` by `new`: the first telling line added (`+ line`), else the first
/// removed (`- line`).
pub(super) fn diff_gist(old: &str, new: &str) -> Option<String> {
    let old_lines: HashSet<&str> = old.lines().map(str::trim).collect();
    let new_lines: HashSet<&str> = new.lines().map(str::trim).collect();
    let added = new
        .lines()
        .map(str::trim)
        .find(|l| telling(l) && !old_lines.contains(l));
    if let Some(l) = added {
        return Some(format!("+ {}", shorten(l, GIST_CHARS)));
    }
    old.lines()
        .map(str::trim)
        .find(|l| telling(l) && !new_lines.contains(l))
        .map(|l| format!("- {}", shorten(l, GIST_CHARS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gists() {
        assert_eq!(
            diff_gist("let a = 1;\n}", "let a = 1;\nlet b = 2;\n}").as_deref(),
            Some("+ let b = 2;")
        );
        assert_eq!(
            diff_gist("keep();\ndrop_me();", "keep();").as_deref(),
            Some("- drop_me();")
        );
        assert_eq!(diff_gist("}", "}\n"), None);
    }

    #[test]
    fn patch_sections() {
        let p = "*** Begin Patch\n*** Update File: a.rs\n@@\n-fn old() {}\n+fn new() {}\n*** Add File: b.md\n+# Beta\n*** Delete File: c.txt\n*** End Patch";
        let c = patch_changes(p);
        assert_eq!(c.len(), 3);
        assert_eq!(
            (c[0].op, c[0].gist.as_deref()),
            (FileOp::Modified, Some("+ fn new() {}"))
        );
        assert_eq!(
            (c[1].op, c[1].gist.as_deref()),
            (FileOp::Created, Some("+ # Beta"))
        );
        assert_eq!((c[2].op, c[2].gist.as_deref()), (FileOp::Deleted, None));
    }
}
