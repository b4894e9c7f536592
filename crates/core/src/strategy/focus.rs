//! The agent's current focus: the code names and file names its newest calls and messages use. A
//! tool output that holds one of them is part of what the agent is working on now, whatever its age,
//! so tier 1 and the fit pass reference it after the other outputs that are not superseded.
//!
//! Measured on the corpus with the continuation probes (BENCHMARKS.md, "Continuation"): the newest
//! 30 items and one shared name gave the best margin over the same-size tail; 15, 60 or 100 items
//! did a little worse, and requiring two to four shared names did no better than no focus at all.

use crate::facts::symbols::{code_names, mentioned_paths};
use crate::model::{Conversation, Item, ItemBody};
use serde_json::Value;
use std::collections::HashSet;

/// How many of the newest items make up the focus.
pub const FOCUS_ITEMS: usize = 30;
/// Code names taken from one output when matching it against the focus (most used first).
const NAMES_PER_OUTPUT: usize = 64;
/// File names taken from one text (a call's arguments, a message, an output).
const PATHS_PER_TEXT: usize = 64;

/// The names the newest items' calls and messages use.
#[derive(Debug, Default)]
pub struct Focus {
    names: HashSet<String>,
}

/// The file name of `path` (what an agent writes when it names the file in prose).
fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

impl Focus {
    /// The focus of `conv`: the code names (`snake_case`, `camelCase`, ...) and file names in the
    /// string arguments of its last [`FOCUS_ITEMS`] items' tool calls and in their messages. Tool
    /// outputs are left out: the focus is what the agent says and does, not what it was shown.
    pub fn of(conv: &Conversation) -> Focus {
        let mut names = HashSet::new();
        let start = conv.items.len().saturating_sub(FOCUS_ITEMS);
        let mut text = String::new();
        for item in &conv.items[start..] {
            text.clear();
            match item.body() {
                ItemBody::ToolCall(c) => match c.arguments.to_value() {
                    Some(v) => strings(&v, &mut text),
                    None => text.push_str(&c.arguments.to_text()),
                },
                ItemBody::Message(_) => text.push_str(&item.plain_text()),
                _ => continue,
            }
            names.extend(code_names(&text, usize::MAX));
            for path in mentioned_paths(&text, PATHS_PER_TEXT) {
                names.insert(file_name(&path).to_owned());
            }
        }
        Focus { names }
    }

    /// True when `item` (a tool output) holds a focus name (see [`Focus::holds`]).
    pub fn holds_item(&self, item: &Item) -> bool {
        !self.names.is_empty() && self.holds(&item.plain_text())
    }

    /// True when `text` (a tool output) holds a focus name: one of its most used code names, or a
    /// file it mentions.
    pub fn holds(&self, text: &str) -> bool {
        if self.names.is_empty() {
            return false;
        }
        code_names(text, NAMES_PER_OUTPUT)
            .iter()
            .any(|n| self.names.contains(n))
            || mentioned_paths(text, PATHS_PER_TEXT)
                .iter()
                .any(|p| self.names.contains(file_name(p)))
    }
}

/// The string values of `v` (nested), one per line: a call's arguments as the agent wrote them,
/// without JSON escapes gluing `\n` to the next word.
fn strings(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(m) => m.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, ToolCall, ToolResult};
    use serde_json::json;

    fn conv_with(calls: &[(&str, Value)], output: &str) -> Conversation {
        let mut c = Conversation::default();
        c.push(Item::text(Role::User, "Fix the ledger drift."));
        for (id, args) in calls {
            c.push(Item::new(ItemBody::ToolCall(ToolCall::function(
                *id,
                "Edit",
                args.clone(),
            ))));
            c.push(Item::new(ItemBody::ToolResult(ToolResult::text(
                *id, output,
            ))));
        }
        c
    }

    #[test]
    fn the_focus_is_what_the_newest_calls_and_messages_name() {
        let mut c = conv_with(
            &[(
                "a",
                json!({"file_path": "src/ledger/post.rs", "old_string": "let total_sum = 0;\nposting_count"}),
            )],
            "the file mentions unrelated_output_name",
        );
        c.push(Item::text(
            Role::Assistant,
            "Now `reconcileRows` needs the same fix.",
        ));
        let f = Focus::of(&c);
        // Names from the arguments' strings (no `\n` glued on) and from the message.
        assert!(f.holds("fn total_sum() {}"));
        assert!(f.holds("error at posting_count"));
        assert!(f.holds("function reconcileRows(rows) {}"));
        assert!(f.holds("see post.rs:12"), "a file name the agent used");
        assert!(
            !f.holds("see src/other/unrelated.rs:3"),
            "a file it did not"
        );
        // Not from what the agent was shown, and not plain words.
        assert!(!f.holds("unrelated_output_name"));
        assert!(!f.holds("the ledger drift is fixed"));
    }

    #[test]
    fn strings_in_arrays_count_too() {
        // Codex's argv commands, MultiEdit's list of edits.
        let c = conv_with(
            &[
                ("a", json!({"command": ["bash", "-lc", "rg parse_ledger"]})),
                ("b", json!({"edits": [{"old_string": "apply_fee(x)"}]})),
            ],
            "ok",
        );
        let f = Focus::of(&c);
        assert!(f.holds("fn parse_ledger() {}"));
        assert!(f.holds("fn apply_fee() {}"));
    }

    #[test]
    fn only_the_newest_items_count() {
        let mut calls: Vec<(String, Value)> =
            vec![("old".into(), json!({"old_string": "stale_helper()"}))];
        for k in 0..FOCUS_ITEMS {
            calls.push((format!("c{k}"), json!({"command": "cargo test"})));
        }
        let refs: Vec<(&str, Value)> = calls.iter().map(|(i, v)| (i.as_str(), v.clone())).collect();
        let c = conv_with(&refs, "ok");
        assert!(!Focus::of(&c).holds("fn stale_helper() {}"));
        assert!(!Focus::of(&Conversation::default()).holds("fn stale_helper() {}"));
    }
}
