//! What each turn holds that must survive whatever the model says (failed approaches, file paths,
//! URLs, commands), computed from the items' structured fields, and the enforcement of the
//! never-drop rules on a parsed plan.

use super::{AgentPlan, TurnStrategy};
use crate::input::truncate_middle;
use compact_core::model::{Item, ItemBody};
use serde_json::Value;
use std::fmt;

/// What a turn holds that must survive (computed from the items, not from the model).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnFacts {
    /// Turn id.
    pub id: String,
    /// Failed approaches: error tool results and failure lines, excerpted.
    pub failures: Vec<String>,
    /// File paths and URLs mentioned (tool arguments and text), deduplicated, in order.
    pub paths: Vec<String>,
    /// Commands run.
    pub commands: Vec<String>,
}

/// Longest excerpt of a failure kept in the record.
pub const FAILURE_EXCERPT_CHARS: usize = 300;
/// Argument keys whose string values are paths or URLs.
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "url",
    "uri",
    "cwd",
    "directory",
    "dir",
    "notebook_path",
];
/// Argument keys whose string values are shell commands.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script"];

fn looks_like_path(tok: &str) -> bool {
    if tok.starts_with("http://") || tok.starts_with("https://") {
        return tok.len() > "https://".len();
    }
    if !tok.contains('/') || tok.len() < 3 || tok.contains("//") {
        return false;
    }
    let abs = tok.starts_with('/')
        || tok.starts_with("./")
        || tok.starts_with("../")
        || tok.starts_with("~/");
    let last = tok.rsplit('/').next().unwrap_or("");
    let has_ext = last.split_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    (abs && tok.chars().filter(|c| *c == '/').count() >= 1
        && tok.chars().any(|c| c.is_ascii_alphabetic()))
        || has_ext
}

fn scan_paths(text: &str, out: &mut Vec<String>) {
    for raw in text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\'' | '`' | '(' | ')' | '[' | ']' | '<' | '>' | ',' | ';' | '{' | '}'
            )
    }) {
        let tok = raw.trim_end_matches(['.', ':', '!', '?']);
        if looks_like_path(tok) && !out.iter().any(|p| p == tok) {
            out.push(tok.to_owned());
        }
    }
}

fn walk_args(v: &Value, facts: &mut TurnFacts) {
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                match val {
                    Value::String(s) if PATH_KEYS.contains(&k.as_str()) => {
                        if !facts.paths.contains(s) {
                            facts.paths.push(s.clone());
                        }
                    }
                    Value::String(s) if COMMAND_KEYS.contains(&k.as_str()) => {
                        facts.commands.push(s.clone())
                    }
                    _ => walk_args(val, facts),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| walk_args(x, facts)),
        Value::String(s) => scan_paths(s, &mut facts.paths),
        _ => {}
    }
}

/// Lines that mark a failure in ordinary text.
const FAILURE_MARKERS: &[&str] = &[
    "error:",
    "error[",
    "failed",
    "traceback",
    "panicked",
    "exception",
    "command not found",
    "no such file",
];

/// Computes the facts that must survive for each turn.
pub fn turn_facts(items: &[Item]) -> Vec<TurnFacts> {
    let mut out: Vec<TurnFacts> = Vec::new();
    for item in items.iter().filter(|i| i.meta.visibility.model) {
        let id = format!("t{}", item.meta.turn);
        if out.last().is_none_or(|t| t.id != id) {
            out.push(TurnFacts {
                id,
                ..TurnFacts::default()
            });
        }
        let Some(facts) = out.last_mut() else {
            continue;
        };
        match item.body() {
            ItemBody::ToolCall(c) => match c.arguments.to_value() {
                Some(v) => walk_args(&v, facts),
                None => scan_paths(&c.arguments.to_text(), &mut facts.paths),
            },
            ItemBody::ToolResult(r) => {
                let text = item.plain_text();
                scan_paths(&text, &mut facts.paths);
                let lower = text.to_lowercase();
                if r.is_error || FAILURE_MARKERS.iter().any(|m| lower.contains(m)) {
                    let name = r.tool_name.as_deref().unwrap_or("tool");
                    facts.failures.push(format!(
                        "{name}: {}",
                        truncate_middle(text.trim(), FAILURE_EXCERPT_CHARS)
                    ));
                }
            }
            ItemBody::Message(m) => {
                let text = item.plain_text();
                scan_paths(&text, &mut facts.paths);
                let lower = text.to_lowercase();
                if FAILURE_MARKERS.iter().any(|x| lower.contains(x)) {
                    facts.failures.push(format!(
                        "{}: {}",
                        m.role,
                        truncate_middle(text.trim(), FAILURE_EXCERPT_CHARS)
                    ));
                }
            }
            _ => scan_paths(&item.plain_text(), &mut facts.paths),
        }
    }
    out
}

/// A change enforcement made to the model's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// Turn id.
    pub turn_id: String,
    /// The model's strategy.
    pub from: TurnStrategy,
    /// The enforced strategy.
    pub to: TurnStrategy,
    /// Why.
    pub reason: &'static str,
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "turn {} marked {:?} but {}; kept as {:?}",
            self.turn_id, self.from, self.reason, self.to
        )
    }
}

/// Enforces the never-drop rules: a dropped turn with a failed approach becomes `Summarize`, one with
/// paths or URLs becomes `Reference`.
pub fn enforce(plan: &mut AgentPlan, facts: &[TurnFacts]) -> Vec<Override> {
    let mut out = Vec::new();
    for t in plan
        .turns
        .iter_mut()
        .filter(|t| t.strategy == TurnStrategy::Drop)
    {
        let Some(f) = facts.iter().find(|f| f.id == t.turn_id) else {
            continue;
        };
        let (to, reason) = if !f.failures.is_empty() {
            (TurnStrategy::Summarize, "it holds a failed approach")
        } else if !f.paths.is_empty() {
            (TurnStrategy::Reference, "it names file paths or URLs")
        } else {
            continue;
        };
        out.push(Override {
            turn_id: t.turn_id.clone(),
            from: t.strategy,
            to,
            reason,
        });
        t.strategy = to;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls_are_recognised() {
        let mut v = Vec::new();
        scan_paths(
            "edited src/lib.rs and /etc/hosts, see https://example.com/x. not a/b or 1/2",
            &mut v,
        );
        assert_eq!(v, vec!["src/lib.rs", "/etc/hosts", "https://example.com/x"]);
    }
}
