//! Tool-call arguments the context no longer needs whole, for the reversible stage: text the agent
//! passed to a tool that the file no longer holds, or that a later item shows again.
//!
//! - **Replaced text of a successful edit**: an edit call carries the text it replaced (`old_string` of
//!   Claude Code's `Edit` and `MultiEdit`, `old_str` of the text-editor tools of Anthropic and
//!   OpenHands, `oldText` of the MCP filesystem server's `edit_file`) beside the text it wrote. Once
//!   the edit succeeded the replaced text is in no file: the agent needs where it edited and what it
//!   wrote, both kept. A failed edit keeps everything (what failed stays word for word).
//! - **Written text shown again**: what a successful edit wrote, once a later whole read or whole
//!   write of the file shows the file again.
//! - **Content of a superseded write**: a file written whole (`Write`, `create`) that a later write, a
//!   later whole read or a later edit supersedes (as a read is superseded, `stale.rs`).
//!
//! Either is cut to its first line and a marker naming the call's id, which `compactctl recall`, the
//! MCP `recall` tool and the proxy's `compact_recall` restore whole; the arguments stay a JSON object
//! with every key. Text under [`MIN_CUT_CHARS`] is left (the marker would save little).

use crate::facts::{classify, Action as FactAction};
use crate::model::{Arguments, Conversation, Item, ItemBody, ToolCall};
use serde_json::Value;
use std::collections::HashSet;

/// Argument keys that hold the text an edit replaced.
pub const REPLACED_KEYS: &[&str] = &["old_string", "old_str", "oldText", "old_text"];

/// Argument keys that hold a whole file's new content.
pub const CONTENT_KEYS: &[&str] = &["content", "file_text", "contents"];

/// Text shorter than this (characters) is kept whole.
pub const MIN_CUT_CHARS: usize = 200;

/// Characters of the cut text's first line kept before the marker.
const FIRST_LINE_CHARS: usize = 120;

/// Argument keys that hold the text an edit wrote.
pub const WRITTEN_KEYS: &[&str] = &["new_string", "new_str", "newText", "new_text"];

/// What [`cut_arguments`] may cut in each call of a conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallCuts {
    /// Per item: the argument keys whose long values can go (empty for most items).
    pub keys: Vec<Vec<&'static str>>,
}

impl CallCuts {
    /// Reads `conv` (`failed`: per item, a failed tool result). A successful edit may lose its
    /// replaced text, and also its written text once a later whole read or whole write of the file
    /// shows it again; a whole-file write may lose its content once the file is read whole, written
    /// or edited later (as a read is superseded, `stale.rs`).
    pub fn of(conv: &Conversation, failed: &[bool]) -> CallCuts {
        let n = conv.items.len();
        let mut keys: Vec<Vec<&'static str>> = vec![Vec::new(); n];
        let pairing = conv.pairing();
        // Paths a later whole read or whole write shows, and paths changed later in any way.
        let mut shown_later: HashSet<String> = HashSet::new();
        let mut changed_later: HashSet<String> = HashSet::new();
        for &(c, r) in pairing.pairs.iter().rev() {
            let Some(call) = conv.items[c].as_tool_call() else {
                continue;
            };
            // Classified and parsed once: text arguments are JSON to parse, and a write's may be large.
            let touch = Touch::of(call);
            if !failed[r] && conv.items[r].meta.visibility.model && !touch.modified.is_empty() {
                let shown = touch.modified.iter().any(|p| shown_later.contains(p));
                if touch.whole_write {
                    if shown || touch.modified.iter().any(|p| changed_later.contains(p)) {
                        keys[c].extend_from_slice(CONTENT_KEYS);
                    }
                } else {
                    keys[c].extend_from_slice(REPLACED_KEYS);
                    if shown {
                        keys[c].extend_from_slice(WRITTEN_KEYS);
                    }
                }
            }
            if failed[r] {
                continue;
            }
            changed_later.extend(touch.modified.iter().cloned());
            if touch.whole_write {
                shown_later.extend(touch.modified);
            } else if touch.whole_read {
                shown_later.extend(touch.read);
            }
        }
        CallCuts { keys }
    }
}

/// What one call does to files.
struct Touch {
    /// Files it creates, edits or deletes.
    modified: Vec<String>,
    /// Files it reads.
    read: Vec<String>,
    /// It writes a whole file: one of [`CONTENT_KEYS`] holds a string.
    whole_write: bool,
    /// It only reads, one or more files whole (no range argument).
    whole_read: bool,
}

impl Touch {
    fn of(call: &ToolCall) -> Touch {
        let actions = classify(call);
        let args = call.arguments.to_value();
        let (mut modified, mut read) = (Vec::new(), Vec::new());
        for action in &actions {
            match action {
                FactAction::Modify(p) => modified.push(p.clone()),
                FactAction::Read(p) => read.push(p.clone()),
                _ => {}
            }
        }
        let has = |keys: &[&str], test: fn(&Value) -> bool| {
            args.as_ref()
                .is_some_and(|v| keys.iter().any(|k| v.get(*k).is_some_and(test)))
        };
        let whole_write = has(CONTENT_KEYS, Value::is_string);
        let ranged = has(super::stale::RANGE_KEYS, |x| !x.is_null());
        let whole_read = !ranged && !read.is_empty() && actions.len() == read.len();
        Touch {
            modified,
            read,
            whole_write,
            whole_read,
        }
    }
}

/// `item` (a tool call) with every long value under one of `keys` cut to its first line and a
/// marker naming the item's id, or `None` when nothing is long enough.
pub fn cut_arguments(item: &Item, keys: &[&str]) -> Option<Item> {
    if keys.is_empty() {
        return None;
    }
    let ItemBody::ToolCall(call) = item.body() else {
        return None;
    };
    let id = item.meta.id.as_str();
    let arguments = match &call.arguments {
        Arguments::Json(v) => {
            let mut v = v.clone();
            cut_in(&mut v, keys, id).then_some(Arguments::Json(v))?
        }
        Arguments::Text(t) => match serde_json::from_str::<Value>(t) {
            Ok(mut v) if v.is_object() => {
                cut_in(&mut v, keys, id).then(|| Arguments::Text(v.to_string()))?
            }
            _ => return None,
        },
    };
    let mut cut = call.clone();
    cut.arguments = arguments;
    let mut replacement = item.clone();
    replacement.set_body(ItemBody::ToolCall(cut));
    Some(replacement)
}

/// Replaces every long string under one of `keys` in `v` (at any depth: `MultiEdit` lists its
/// edits); returns whether anything changed.
fn cut_in(v: &mut Value, keys: &[&str], id: &str) -> bool {
    match v {
        Value::Object(map) => {
            let mut changed = false;
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(s) if keys.contains(&key.as_str()) => {
                        if let Some(short) = shorten(s, id) {
                            *s = short;
                            changed = true;
                        }
                    }
                    other => changed |= cut_in(other, keys, id),
                }
            }
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, x| cut_in(x, keys, id) | acc),
        _ => false,
    }
}

/// `text`'s first line (at most [`FIRST_LINE_CHARS`] characters) and a marker, or `None` when the
/// text is short.
fn shorten(text: &str, id: &str) -> Option<String> {
    let chars = text.chars().count();
    if chars < MIN_CUT_CHARS {
        return None;
    }
    let first: String = text
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(FIRST_LINE_CHARS)
        .collect();
    let lines = text.lines().count();
    Some(format!(
        "{first}\n…[compact: {lines} lines ({chars} characters) cut; compactctl recall {id}]"
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::ToolResult;
    use serde_json::json;

    fn call(id: &str, name: &str, args: Value) -> Item {
        let mut item = Item::new(ItemBody::ToolCall(ToolCall::function(id, name, args)));
        item.meta.id = crate::model::ItemId::new(format!("item-{id}"));
        item
    }

    fn result(id: &str, text: &str, error: bool) -> Item {
        let mut r = ToolResult::text(id, text);
        r.is_error = error;
        Item::new(ItemBody::ToolResult(r))
    }

    /// Pushes a call and its result.
    fn pair(conv: &mut Conversation, id: &str, name: &str, args: Value, output: &str, error: bool) {
        conv.push(call(id, name, args));
        conv.push(result(id, output, error));
    }

    fn write(conv: &mut Conversation, id: &str, path: &str) {
        let content = "line\n".repeat(100);
        let args = json!({"file_path": path, "content": content});
        pair(conv, id, "Write", args, "File created", false);
    }

    fn cuts(conv: &Conversation) -> CallCuts {
        let failed: Vec<bool> = conv
            .items
            .iter()
            .map(|i| i.as_tool_result().is_some_and(|r| r.is_error))
            .collect();
        CallCuts::of(conv, &failed)
    }

    #[test]
    fn long_replaced_text_keeps_its_first_line_and_names_the_call() {
        let old = format!("fn keep_me() {{\n{}", "    body();\n".repeat(40));
        let item = call(
            "c1",
            "Edit",
            json!({"file_path": "src/a.rs", "old_string": old, "new_string": "fn new() {}"}),
        );
        let cut = cut_arguments(&item, REPLACED_KEYS).unwrap();
        let v = cut.as_tool_call().unwrap().arguments.to_value().unwrap();
        let text = v["old_string"].as_str().unwrap();
        assert!(
            text.starts_with("fn keep_me() {\n…[compact: 41 lines"),
            "{text}"
        );
        assert!(text.ends_with("compactctl recall item-c1]"), "{text}");
        assert_eq!(v["new_string"], "fn new() {}");
        assert_eq!(v["file_path"], "src/a.rs");
    }

    #[test]
    fn every_edit_of_a_multi_edit_is_cut_and_short_text_is_kept() {
        let long = "x".repeat(MIN_CUT_CHARS);
        let short = "y".repeat(MIN_CUT_CHARS - 1);
        let item = call(
            "c1",
            "MultiEdit",
            json!({"file_path": "a", "edits": [
                {"old_string": long, "new_string": "a"},
                {"old_string": short.clone(), "new_string": "b"},
                {"oldText": long, "newText": "c"}
            ]}),
        );
        let v = cut_arguments(&item, REPLACED_KEYS)
            .unwrap()
            .as_tool_call()
            .unwrap()
            .arguments
            .to_value()
            .unwrap();
        assert!(v["edits"][0]["old_string"]
            .as_str()
            .unwrap()
            .contains("recall item-c1"));
        assert_eq!(v["edits"][1]["old_string"], short.as_str());
        assert!(v["edits"][2]["oldText"]
            .as_str()
            .unwrap()
            .contains("recall item-c1"));
        let other = call("c2", "Bash", json!({"command": "x".repeat(500)}));
        assert_eq!(cut_arguments(&other, REPLACED_KEYS), None);
    }

    #[test]
    fn successful_edits_and_superseded_writes_may_be_cut_failed_and_latest_ones_not() {
        let long = "line\n".repeat(100);
        let edit = |new: &str| json!({"file_path": "a.rs", "old_string": long, "new_string": new});
        let mut conv = Conversation::default();
        write(&mut conv, "w1", "a.rs");
        pair(
            &mut conv,
            "e1",
            "Edit",
            edit("x"),
            "The file a.rs has been updated.",
            false,
        );
        pair(
            &mut conv,
            "e2",
            "Edit",
            edit("y"),
            "String to replace not found",
            true,
        );
        pair(
            &mut conv,
            "r1",
            "Read",
            json!({"file_path": "a.rs"}),
            "x",
            false,
        );
        write(&mut conv, "w2", "b.rs");
        let c = cuts(&conv);
        // The write of a.rs is shown again by the later whole read; the one of b.rs is the latest.
        assert_eq!(c.keys[0], CONTENT_KEYS);
        // The edit's written text is shown again by the later whole read.
        assert_eq!(c.keys[2], [REPLACED_KEYS, WRITTEN_KEYS].concat());
        assert!(c.keys[4].is_empty(), "a failed edit stays whole");
        assert!(c.keys[8].is_empty(), "the latest write stays whole");
        assert!(c.keys[6].is_empty());
    }

    #[test]
    fn a_ranged_read_does_not_supersede_a_write() {
        let mut conv = Conversation::default();
        write(&mut conv, "w1", "a.rs");
        let ranged = json!({"file_path": "a.rs", "offset": 10, "limit": 5});
        pair(&mut conv, "r1", "Read", ranged, "x", false);
        assert!(cuts(&conv).keys[0].is_empty());
    }

    #[test]
    fn an_edit_after_a_write_supersedes_its_content_but_not_its_own_written_text() {
        let long = "line\n".repeat(100);
        let mut conv = Conversation::default();
        write(&mut conv, "w1", "a.rs");
        let edit = json!({"file_path": "a.rs", "old_string": long, "new_string": long});
        pair(&mut conv, "e1", "Edit", edit, "updated", false);
        let c = cuts(&conv);
        assert_eq!(c.keys[0], CONTENT_KEYS);
        assert_eq!(c.keys[2], REPLACED_KEYS);
    }
}
