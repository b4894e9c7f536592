//! Which tool outputs the agent no longer needs to see whole, read from the conversation alone.
//!
//! An output is **superseded** when a later call shows the same thing again: the same file read again
//! (the whole file, or the same range), the file rewritten whole (`Write`), or the same command run
//! again. Replacing a superseded output by a reference stub loses nothing the context does not hold
//! in a newer copy. An output is the **latest view** when it is the newest read of its file or the
//! newest run of its command: the agent's working set, given up last.
//!
//! Tier 1 and the fit pass reference outputs in [`Staleness::reference_order`]: superseded outputs
//! first, then the others oldest first, the latest views last.

use crate::facts::{classify, command_key, Action};
use crate::model::{Conversation, ItemBody, ToolCall};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// Argument keys that narrow a read to part of a file.
const RANGE_KEYS: &[&str] = &[
    "offset",
    "limit",
    "view_range",
    "start_line",
    "end_line",
    "lines",
];

/// How each tool result of a conversation stands against the later ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Staleness {
    /// For each item: the index of the later result that supersedes it (tool results only).
    pub superseded_by: Vec<Option<usize>>,
    /// For each item: true for the newest read of a file or the newest run of a command.
    pub latest_view: Vec<bool>,
}

/// What one result shows.
#[derive(Debug, Clone, PartialEq, Eq)]
enum View {
    /// A file, whole (`None`) or a range named by its arguments.
    Read(String, Option<String>),
    /// A file rewritten whole.
    Rewrite(String),
    /// A command's output.
    Command(String),
}

fn range_of(call: &ToolCall) -> Option<String> {
    let args = call.arguments.to_value()?;
    let parts: Vec<String> = RANGE_KEYS
        .iter()
        .filter_map(|k| args.get(*k).map(|v| format!("{k}={v}")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
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

/// What `call`'s result shows, when it is one thing the agent may see again.
fn view_of(call: &ToolCall) -> Option<View> {
    let actions = classify(call);
    let modifies = actions.iter().any(|a| matches!(a, Action::Modify(_)));
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
    if modifies {
        if writes_whole(call) {
            return actions.iter().find_map(|a| match a {
                Action::Modify(p) => Some(View::Rewrite(p.clone())),
                _ => None,
            });
        }
        return None;
    }
    match (command, reads.as_slice()) {
        // A shell read of one file (`cat f`, `sed -n 1,80p f`): the command itself is its range.
        (Some(c), [path]) => Some(View::Read(
            (*path).clone(),
            (!c.trim_start().starts_with("cat ")).then(|| command_key(c)),
        )),
        (Some(c), _) => Some(View::Command(command_key(c))),
        (None, [path]) => Some(View::Read((*path).clone(), range_of(call))),
        _ => None,
    }
}

impl Staleness {
    /// Computes the staleness of every tool result of `conv`.
    pub fn of(conv: &Conversation) -> Staleness {
        let n = conv.items.len();
        let mut out = Staleness {
            superseded_by: vec![None; n],
            latest_view: vec![false; n],
        };
        let pairing = conv.pairing();
        let mut views: Vec<(usize, View)> = pairing
            .pairs
            .iter()
            .filter(|&&(_, r)| {
                conv.items[r].meta.visibility.model
                    && matches!(conv.items[r].body(), ItemBody::ToolResult(_))
            })
            .filter_map(|&(c, r)| Some((r, view_of(conv.items[c].as_tool_call()?)?)))
            .collect();
        views.sort_by_key(|(r, _)| *r);
        // Newest first: remember the newest whole read / rewrite / same range / run of each key.
        let mut whole: HashMap<&str, usize> = HashMap::new();
        let mut ranged: HashMap<(&str, &str), usize> = HashMap::new();
        let mut commands: HashMap<&str, usize> = HashMap::new();
        let mut seen_file: HashSet<&str> = HashSet::new();
        for (r, view) in views.iter().rev() {
            match view {
                View::Read(path, range) => {
                    let by_whole = whole.get(path.as_str()).copied();
                    let by_range = range
                        .as_deref()
                        .and_then(|g| ranged.get(&(path.as_str(), g)).copied());
                    out.superseded_by[*r] = by_whole.or(by_range);
                    if seen_file.insert(path.as_str()) {
                        out.latest_view[*r] = true;
                    }
                    match range {
                        None => {
                            whole.insert(path.as_str(), *r);
                        }
                        Some(g) => {
                            ranged.insert((path.as_str(), g.as_str()), *r);
                        }
                    }
                }
                View::Rewrite(path) => {
                    whole.insert(path.as_str(), *r);
                    seen_file.insert(path.as_str());
                }
                View::Command(key) => {
                    match commands.get(key.as_str()) {
                        Some(&later) => out.superseded_by[*r] = Some(later),
                        None => out.latest_view[*r] = true,
                    }
                    commands.insert(key.as_str(), *r);
                }
            }
        }
        out
    }

    /// The tool results among `candidates` (item indices, any order) in the order they should be
    /// referenced: superseded first, then the others, then the latest views; oldest first in each.
    pub fn reference_order(&self, candidates: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut out: Vec<usize> = candidates.into_iter().collect();
        out.sort_by_key(|&i| {
            let rank = if self.superseded_by.get(i).copied().flatten().is_some() {
                0
            } else if self.latest_view.get(i).copied().unwrap_or(false) {
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
            s.superseded_by[7], None,
            "an edit does not supersede the latest read"
        );
        assert!(s.latest_view[7] && s.latest_view[9] && s.latest_view[11]);
        assert!(!s.latest_view[1] && !s.latest_view[3] && !s.latest_view[5]);
        assert_eq!(
            s.reference_order([15, 11, 9, 7, 5, 3, 1]),
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
}
