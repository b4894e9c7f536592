//! Which tool outputs the agent no longer needs to see whole, read from the conversation alone.
//!
//! An output is **superseded** when a later call shows the same thing again or shows that it is out
//! of date: a later read of the same file whose lines cover this one's, the file rewritten whole
//! (`Write`) or changed (an edit, a patch) later, or the same command run again. Replacing a
//! superseded output by a reference stub loses nothing the context does not hold in a newer form
//! (the session log keeps the old copy). An output is the **latest view** when it is the newest read
//! of its file or the newest run of its command: the agent's working set, given up last.
//!
//! Tier 1 and the fit pass reference outputs in [`Staleness::reference_order`]: superseded outputs
//! first, then the others oldest first, then the latest views, and the outputs in the agent's focus
//! (`focus.rs`) last.

use crate::facts::{classify, command_key, Action};
use crate::model::{Conversation, ItemBody, ToolCall};
use serde_json::Value;
use std::collections::HashMap;

/// Argument keys that narrow a read to part of a file.
pub(super) const RANGE_KEYS: &[&str] = &[
    "offset",
    "limit",
    "view_range",
    "start_line",
    "end_line",
    "lines",
];

/// Why a result is superseded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A later read shows the same lines (or more) of the same file.
    Reread,
    /// The file was rewritten whole later.
    Rewritten,
    /// The file was changed later: this copy is out of date (the change, and any later read, show
    /// what it is now).
    Modified,
    /// The same command was run again.
    Rerun,
}

impl Reason {
    /// Short phrase for stubs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Reread => "read again later",
            Reason::Rewritten => "file rewritten later",
            Reason::Modified => "file changed later",
            Reason::Rerun => "command run again later",
        }
    }
}

/// How each tool result of a conversation stands against the later ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Staleness {
    /// For each item: the index of the later item that supersedes it (tool results only).
    pub superseded_by: Vec<Option<usize>>,
    /// For each item: why it is superseded (set with `superseded_by`).
    pub reasons: Vec<Option<Reason>>,
    /// For each item: true for the newest read of a file or the newest run of a command.
    pub latest_view: Vec<bool>,
    /// For each item: the lines a file read covers, when its arguments name them (`(first, last)`,
    /// 1-based and inclusive; `u64::MAX` for "to the end").
    pub lines: Vec<Option<(u64, u64)>>,
}

/// The part of a file one read shows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Span {
    /// The whole file.
    Whole,
    /// Lines `first..=last` (1-based; `last == u64::MAX` reads to the end).
    Lines(u64, u64),
    /// A range only known by its spelling (an unparsed command or argument set): covers only itself.
    Opaque(String),
}

impl Span {
    fn covers(&self, other: &Span) -> bool {
        match (self, other) {
            (Span::Whole, _) => true,
            (Span::Lines(a, b), Span::Lines(c, d)) => a <= c && d <= b,
            (Span::Opaque(a), Span::Opaque(b)) => a == b,
            _ => false,
        }
    }

    fn lines(&self) -> Option<(u64, u64)> {
        match self {
            Span::Lines(a, b) => Some((*a, *b)),
            _ => None,
        }
    }
}

/// What one result shows or does.
#[derive(Debug, Clone, PartialEq, Eq)]
enum View {
    /// A file, whole or in part.
    Read(String, Span),
    /// A file rewritten whole.
    Rewrite(String),
    /// A file changed in part.
    Modify(String),
    /// A command's output.
    Command(String),
}

fn as_line(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
}

/// The span a read tool's arguments name: `offset`/`limit` (Claude Code: first line and count),
/// `view_range: [first, last]` (`-1` to the end), `start_line`/`end_line`.
fn span_of(call: &ToolCall) -> Span {
    let Some(args) = call.arguments.to_value() else {
        return Span::Whole;
    };
    if !RANGE_KEYS.iter().any(|k| args.get(*k).is_some()) {
        return Span::Whole;
    }
    let offset = args.get("offset").and_then(as_line);
    let limit = args.get("limit").and_then(as_line);
    if let Some(range) = args.get("view_range").and_then(Value::as_array) {
        let first = range.first().and_then(as_line);
        let last = range.get(1).and_then(|v| {
            if v.as_i64() == Some(-1) {
                Some(u64::MAX)
            } else {
                as_line(v)
            }
        });
        if let (Some(a), Some(b), 2) = (first, last, range.len()) {
            return Span::Lines(a.max(1), b);
        }
    } else if let (Some(a), Some(b)) = (
        args.get("start_line").and_then(as_line),
        args.get("end_line").and_then(as_line),
    ) {
        return Span::Lines(a.max(1), b);
    } else if offset.is_some() || limit.is_some() {
        let first = offset.unwrap_or(1).max(1);
        let last = limit.map_or(u64::MAX, |l| first.saturating_add(l.saturating_sub(1)));
        if args.get("lines").is_none() {
            return Span::Lines(first, last);
        }
    }
    let parts: Vec<String> = RANGE_KEYS
        .iter()
        .filter_map(|k| args.get(*k).map(|v| format!("{k}={v}")))
        .collect();
    Span::Opaque(parts.join(","))
}

/// The span a shell read shows: `cat f` / `nl f` whole (with any flags), `sed -n 'A,Bp' f`,
/// `head -n N f`; any other spelling only covers itself.
fn shell_span(command: &str) -> Span {
    let key = command_key(command);
    let words: Vec<&str> = key.split_whitespace().collect();
    match words.first().copied() {
        // Flags (`-n`, `-A`, `-ba`) and a stderr redirection change how the file is shown, not how much.
        Some("cat") | Some("nl")
            if words[1..]
                .iter()
                .filter(|w| !w.starts_with('-') && !w.starts_with("2>"))
                .count()
                == 1 =>
        {
            Span::Whole
        }
        Some("sed") if words.len() == 4 && words[1] == "-n" => {
            let range = words[2].trim_matches(|c| c == '\'' || c == '"');
            range
                .strip_suffix('p')
                .and_then(|r| r.split_once(','))
                .and_then(|(a, b)| Some(Span::Lines(a.parse().ok()?, b.parse().ok()?)))
                .filter(|s| matches!(s, Span::Lines(a, b) if a <= b))
                .unwrap_or(Span::Opaque(key.clone()))
        }
        Some("head") if words.len() == 4 && words[1] == "-n" => words[2]
            .parse::<u64>()
            .map_or(Span::Opaque(key.clone()), |n| Span::Lines(1, n.max(1))),
        _ => Span::Opaque(key.clone()),
    }
}

fn writes_whole(call: &ToolCall) -> bool {
    let args = call.arguments.to_value();
    let name = call.name.to_ascii_lowercase();
    (name == "write" || name == "write_file" || name == "create_file" || name == "create")
        && args
            .as_ref()
            .and_then(|a| a.get("content").or_else(|| a.get("file_text")))
            .is_some_and(Value::is_string)
}

/// What `call`'s result shows or does, when that is something the agent may see again.
fn views_of(call: &ToolCall) -> Vec<View> {
    let actions = classify(call);
    let modified: Vec<&String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Modify(p) => Some(p),
            _ => None,
        })
        .collect();
    if !modified.is_empty() {
        let whole = writes_whole(call);
        return modified
            .into_iter()
            .map(|p| {
                if whole {
                    View::Rewrite(p.clone())
                } else {
                    View::Modify(p.clone())
                }
            })
            .collect();
    }
    let reads: Vec<&String> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Read(p) => Some(p),
            _ => None,
        })
        .collect();
    let command = actions.iter().find_map(|a| match a {
        Action::Command(c) => Some(c),
        _ => None,
    });
    match (command, reads.as_slice()) {
        // A shell read of one file (`cat f`, `sed -n 1,80p f`).
        (Some(c), [path]) => vec![View::Read((*path).clone(), shell_span(c))],
        (Some(c), _) => vec![View::Command(command_key(c))],
        (None, [path]) => vec![View::Read((*path).clone(), span_of(call))],
        _ => Vec::new(),
    }
}

impl Staleness {
    /// Computes the staleness of every tool result of `conv`.
    pub fn of(conv: &Conversation) -> Staleness {
        let n = conv.items.len();
        let mut out = Staleness {
            superseded_by: vec![None; n],
            reasons: vec![None; n],
            latest_view: vec![false; n],
            lines: vec![None; n],
        };
        let pairing = conv.pairing();
        let mut views: Vec<(usize, View)> = pairing
            .pairs
            .iter()
            .filter(|&&(_, r)| {
                conv.items[r].meta.visibility.model
                    && matches!(conv.items[r].body(), ItemBody::ToolResult(_))
            })
            .filter_map(|&(c, r)| Some((r, views_of(conv.items[c].as_tool_call()?))))
            .flat_map(|(r, vs)| vs.into_iter().map(move |v| (r, v)))
            .collect();
        views.sort_by_key(|(r, _)| *r);
        // Newest first: per file, the later reads (newest first) and the earliest later change.
        let mut later_reads: HashMap<&str, Vec<(usize, &Span)>> = HashMap::new();
        let mut rewrite: HashMap<&str, usize> = HashMap::new();
        let mut change: HashMap<&str, usize> = HashMap::new();
        let mut commands: HashMap<&str, usize> = HashMap::new();
        for (r, view) in views.iter().rev() {
            let r = *r;
            match view {
                View::Read(path, span) => {
                    let path = path.as_str();
                    out.lines[r] = span.lines();
                    let reads = later_reads.entry(path).or_default();
                    let covering = reads
                        .iter()
                        .filter(|(_, s)| s.covers(span))
                        .map(|(i, _)| *i)
                        .max();
                    let verdict = match (covering, rewrite.get(path), change.get(path)) {
                        (Some(by), _, _) => Some((by, Reason::Reread)),
                        (None, Some(&w), _) => Some((w, Reason::Rewritten)),
                        (None, None, Some(&m)) => Some((m, Reason::Modified)),
                        _ => None,
                    };
                    if let Some((by, why)) = verdict {
                        out.superseded_by[r] = Some(by);
                        out.reasons[r] = Some(why);
                    }
                    if reads.is_empty() && !rewrite.contains_key(path) {
                        out.latest_view[r] = true;
                    }
                    reads.push((r, span));
                }
                View::Rewrite(path) => {
                    rewrite.insert(path.as_str(), r);
                    change.insert(path.as_str(), r);
                }
                View::Modify(path) => {
                    change.insert(path.as_str(), r);
                }
                View::Command(key) => {
                    match commands.get(key.as_str()) {
                        Some(&later) => {
                            out.superseded_by[r] = Some(later);
                            out.reasons[r] = Some(Reason::Rerun);
                        }
                        None => out.latest_view[r] = true,
                    }
                    commands.insert(key.as_str(), r);
                }
            }
        }
        out
    }

    /// The tool results among `candidates` (item indices, any order) in the order they should be
    /// referenced: superseded first, then the others, then the latest views (even edited since: the
    /// agent's working set), then those `in_focus` tells are in the agent's focus (outputs holding a
    /// name its newest calls and messages use; a superseded one still goes first); oldest first in
    /// each.
    pub fn reference_order(
        &self,
        candidates: impl IntoIterator<Item = usize>,
        in_focus: impl Fn(usize) -> bool,
    ) -> Vec<usize> {
        let mut out: Vec<usize> = candidates.into_iter().collect();
        out.sort_by_cached_key(|&i| {
            let latest = self.latest_view.get(i).copied().unwrap_or(false);
            let rank = if !latest && self.superseded_by.get(i).copied().flatten().is_some() {
                0
            } else if in_focus(i) {
                3
            } else if latest {
                2
            } else {
                1
            };
            (rank, i)
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Item, ToolResult};
    use serde_json::json;

    fn pair(conv: &mut Conversation, id: &str, name: &str, args: Value) {
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            id, name, args,
        ))));
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(id, "out"))));
    }

    #[test]
    fn rereads_reruns_and_rewrites_supersede() {
        let mut c = Conversation::default();
        pair(&mut c, "a", "Read", json!({"file_path": "src/a.rs"})); // 1
        pair(
            &mut c,
            "b",
            "Read",
            json!({"file_path": "src/b.rs", "offset": 10, "limit": 20}),
        ); // 3
        pair(
            &mut c,
            "c",
            "Bash",
            json!({"command": "cargo test -p core"}),
        ); // 5
        pair(&mut c, "d", "Read", json!({"file_path": "src/a.rs"})); // 7
        pair(
            &mut c,
            "e",
            "Read",
            json!({"file_path": "src/b.rs", "offset": 40, "limit": 20}),
        ); // 9
        pair(
            &mut c,
            "f",
            "Bash",
            json!({"command": "cargo test -p core"}),
        ); // 11
        pair(
            &mut c,
            "g",
            "Write",
            json!({"file_path": "src/c.rs", "content": "x"}),
        ); // 13
        pair(&mut c, "h", "Read", json!({"file_path": "src/c.rs"})); // 15
        pair(
            &mut c,
            "i",
            "Write",
            json!({"file_path": "src/c.rs", "content": "y"}),
        ); // 17
        pair(
            &mut c,
            "j",
            "Edit",
            json!({"file_path": "src/a.rs", "old_string": "a", "new_string": "b"}),
        ); // 19
        let s = Staleness::of(&c);
        assert_eq!(s.superseded_by[1], Some(7), "re-read of the whole file");
        assert_eq!(s.superseded_by[3], None, "another range does not supersede");
        assert_eq!(s.superseded_by[5], Some(11), "the same command run again");
        assert_eq!(s.superseded_by[15], Some(17), "the file rewritten whole");
        assert_eq!(
            (s.superseded_by[7], s.reasons[7]),
            (Some(19), Some(Reason::Modified)),
            "an edit makes the latest read out of date"
        );
        assert!(s.latest_view[7] && s.latest_view[9] && s.latest_view[11]);
        assert!(!s.latest_view[1] && !s.latest_view[3] && !s.latest_view[5]);
        assert_eq!(
            s.reference_order([15, 11, 9, 7, 5, 3, 1], |_| false),
            vec![1, 5, 15, 3, 7, 9, 11]
        );
    }

    #[test]
    fn shell_reads_count_as_reads() {
        let mut c = Conversation::default();
        pair(
            &mut c,
            "a",
            "shell",
            json!({"command": ["bash", "-lc", "cat src/lib.rs"]}),
        );
        pair(
            &mut c,
            "b",
            "shell",
            json!({"command": ["bash", "-lc", "sed -n 1,80p src/lib.rs"]}),
        );
        pair(
            &mut c,
            "c",
            "shell",
            json!({"command": ["bash", "-lc", "cat src/lib.rs"]}),
        );
        let s = Staleness::of(&c);
        assert_eq!(s.superseded_by[1], Some(5));
        assert_eq!(s.superseded_by[3], Some(5), "a whole read covers a range");
        assert!(s.latest_view[5]);
    }

    #[test]
    fn a_read_is_superseded_only_by_a_read_that_covers_it() {
        let mut c = Conversation::default();
        let read = |c: &mut Conversation, id: &str, args: Value| pair(c, id, "Read", args);
        read(
            &mut c,
            "a",
            json!({"file_path": "f.rs", "offset": 20, "limit": 30}),
        ); // 1: 20-49
        read(
            &mut c,
            "b",
            json!({"file_path": "f.rs", "offset": 1, "limit": 100}),
        ); // 3: 1-100
        read(
            &mut c,
            "c",
            json!({"file_path": "f.rs", "offset": 40, "limit": 100}),
        ); // 5: 40-139
        pair(
            &mut c,
            "d",
            "str_replace_editor",
            json!({"command": "view", "path": "g.py", "view_range": [10, 20]}),
        ); // 7
        pair(
            &mut c,
            "e",
            "str_replace_editor",
            json!({"command": "view", "path": "g.py", "view_range": [1, -1]}),
        ); // 9
        pair(
            &mut c,
            "f",
            "shell",
            json!({"command": ["bash", "-lc", "sed -n '10,20p' h.c"]}),
        ); // 11
        pair(
            &mut c,
            "g",
            "shell",
            json!({"command": ["bash", "-lc", "sed -n '5,30p' h.c"]}),
        ); // 13
        let s = Staleness::of(&c);
        assert_eq!(s.superseded_by[1], Some(3), "lines 1-100 cover 20-49");
        assert_eq!(s.reasons[1], Some(Reason::Reread));
        assert_eq!(s.superseded_by[3], None, "40-139 does not cover 1-100");
        assert!(s.latest_view[5] && !s.latest_view[3]);
        assert_eq!(s.lines[5], Some((40, 139)));
        assert_eq!(
            s.superseded_by[7],
            Some(9),
            "view_range [1, -1] is the whole file"
        );
        assert_eq!(s.superseded_by[11], Some(13), "sed 5,30 covers sed 10,20");
        assert_eq!(s.lines[11], Some((10, 20)));
    }

    #[test]
    fn shell_read_spellings_and_opaque_ranges() {
        let mut c = Conversation::default();
        let sh = |c: &mut Conversation, id: &str, cmd: &str| {
            pair(c, id, "shell", json!({"command": ["bash", "-lc", cmd]}));
        };
        sh(&mut c, "a", "sed -n '1,10p' a.c"); // 1
        sh(&mut c, "b", "head -n 20 a.c"); // 3
        sh(&mut c, "c", "sed -n '30,40p' b.c"); // 5
        sh(&mut c, "d", "cat -A b.c"); // 7
        sh(&mut c, "e", "sed -n '1,2p' d.c"); // 9
        sh(&mut c, "f", "cat d.c 2>/dev/null"); // 11
        sh(&mut c, "g", "tail -n 20 e.c"); // 13
        sh(&mut c, "h", "tail -n 50 e.c"); // 15
        sh(&mut c, "i", "tail -n 20 e.c"); // 17
        sh(&mut c, "j", "head -c 20 f.c"); // 19
        let s = Staleness::of(&c);
        assert_eq!(s.superseded_by[1], Some(3), "head -n 20 covers lines 1-10");
        assert_eq!(s.lines[3], Some((1, 20)));
        assert_eq!(s.superseded_by[5], Some(7), "cat with a flag shows it all");
        assert_eq!(s.superseded_by[9], Some(11), "so does cat with 2>/dev/null");
        assert_eq!(s.superseded_by[13], Some(17), "the same tail again");
        assert_eq!(s.reasons[13], Some(Reason::Reread));
        assert_eq!(s.superseded_by[15], None, "another tail covers only itself");
        assert_eq!(s.lines[19], None, "head -c counts bytes, not lines");
    }

    #[test]
    fn outputs_in_focus_are_referenced_last_but_superseded_ones_first() {
        let mut c = Conversation::default();
        pair(&mut c, "a", "Read", json!({"file_path": "a.rs"})); // 1: superseded by 7
        pair(&mut c, "b", "Bash", json!({"command": "cargo test"})); // 3
        pair(&mut c, "c", "Bash", json!({"command": "cargo build"})); // 5
        pair(&mut c, "d", "Read", json!({"file_path": "a.rs"})); // 7: latest view
        let s = Staleness::of(&c);
        assert_eq!(s.reference_order([7, 5, 3, 1], |_| false), vec![1, 3, 5, 7]);
        // 1 is superseded: first even in focus; 3 in focus goes after the latest view.
        let focus = |i: usize| i == 1 || i == 3;
        assert_eq!(s.reference_order([7, 5, 3, 1], focus), vec![1, 5, 7, 3]);
    }

    #[test]
    fn a_change_supersedes_every_earlier_read_of_the_file() {
        let mut c = Conversation::default();
        pair(&mut c, "a", "Read", json!({"file_path": "f.rs"})); // 1
        pair(
            &mut c,
            "b",
            "Edit",
            json!({"file_path": "f.rs", "old_string": "x", "new_string": "y"}),
        ); // 3
        pair(
            &mut c,
            "c",
            "Read",
            json!({"file_path": "f.rs", "offset": 50, "limit": 10}),
        ); // 5
        pair(&mut c, "d", "Read", json!({"file_path": "g.rs"})); // 7
        pair(
            &mut c,
            "e",
            "Edit",
            json!({"file_path": "g.rs", "old_string": "x", "new_string": "y"}),
        ); // 9
        pair(
            &mut c,
            "f",
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: h.rs\n@@\n-a\n+b\n*** End Patch"}),
        ); // 11
        let s = Staleness::of(&c);
        assert_eq!(s.superseded_by[1], Some(3), "out of date: changed since");
        assert_eq!(s.reasons[1], Some(Reason::Modified));
        assert_eq!(
            s.superseded_by[5], None,
            "the latest copy, read after the change, stays"
        );
        assert_eq!(s.superseded_by[7], Some(9), "edited after it was read");
        assert!(s.latest_view[7] && s.latest_view[5]);
    }
}
