//! Fact probes: short distinctive strings derived from the original transcript (files modified, failed
//! commands with their error line, user requests and constraints, the latest plan), independently of
//! any summariser. A probe is retained at a call when it is a substring of some item the model sees.

use aho_corasick::AhoCorasick;
use compact_core::facts::{classify, Action};
use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall};
use compact_core::truncate::{exit_code, is_error_line};
use serde_json::Value;

/// Longest probe, in bytes: long enough to be distinctive, short enough to be quoted whole even by a
/// checkpoint that shortens its entries.
pub const PROBE_MAX_BYTES: usize = 64;
/// Shortest text probe (error lines, requests, constraints, plan steps), in bytes: shorter strings are
/// not distinctive enough to prove anything by their presence.
pub const PROBE_MIN_BYTES: usize = 12;
/// Shortest path probe, in bytes (`a.py`).
const PATH_MIN_BYTES: usize = 4;
/// Longest plausible path, in bytes (longer strings are not paths).
const PATH_MAX_BYTES: usize = 240;
/// At most this many constraint probes per user message (long pasted prompts would otherwise flood the
/// set with their boilerplate).
const MAX_CONSTRAINTS_PER_MESSAGE: usize = 3;

/// What a probe stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    /// A file the agent modified (its path).
    FileModified,
    /// A command that failed (its error line): a failed approach.
    FailedCommand,
    /// What the user asked (first meaningful line of a user message).
    UserRequest,
    /// An explicit constraint stated by the user (a line with "must", "never", "do not", ...).
    Constraint,
    /// A step of the latest plan or todo list.
    PlanStep,
    /// A call that failed: its command (first line), or the file a failed edit or read named.
    FailedAction,
}

impl ProbeKind {
    /// How many kinds there are.
    pub const COUNT: usize = 6;

    /// Every kind, in report order.
    pub const ALL: [ProbeKind; ProbeKind::COUNT] = [
        ProbeKind::FileModified,
        ProbeKind::FailedCommand,
        ProbeKind::UserRequest,
        ProbeKind::Constraint,
        ProbeKind::PlanStep,
        ProbeKind::FailedAction,
    ];

    /// Name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ProbeKind::FileModified => "files",
            ProbeKind::FailedCommand => "failures",
            ProbeKind::UserRequest => "requests",
            ProbeKind::Constraint => "constraints",
            ProbeKind::PlanStep => "plan",
            ProbeKind::FailedAction => "failed_actions",
        }
    }

    /// Position in [`ProbeKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// One probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What it stands for.
    pub kind: ProbeKind,
    /// The string looked for in the visible context.
    pub text: String,
    /// Index of the original item it was derived from: it is expected from the next call on.
    pub origin: usize,
    /// Index of the item that made it obsolete (a newer plan), if any: not expected from there on.
    pub superseded_at: Option<usize>,
}

impl Probe {
    /// True when the model is expected to still know this fact at the call before item `at`.
    pub fn expected_at(&self, at: usize) -> bool {
        self.origin < at && self.superseded_at.is_none_or(|s| s >= at)
    }
}

/// The probes of one transcript, with a matcher that finds them all in one pass over a text.
#[derive(Debug, Clone)]
pub struct ProbeSet {
    probes: Vec<Probe>,
    matcher: Option<AhoCorasick>,
}

impl ProbeSet {
    /// Derives the probes of `conv` (the original transcript).
    pub fn derive(conv: &Conversation) -> ProbeSet {
        let mut builder = Builder::default();
        let mut open_file: Option<String> = None;
        let mut calls: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (idx, item) in conv.items.iter().enumerate() {
            match item.body() {
                ItemBody::ToolCall(call) => {
                    calls.insert(call.call_id.as_str(), idx);
                    let actions = classify(call);
                    for path in modified_paths(call, &actions, &mut open_file) {
                        builder.add(ProbeKind::FileModified, path, idx, item);
                    }
                    if let Some(Action::Plan(steps, _)) =
                        actions.iter().find(|a| matches!(a, Action::Plan(..)))
                    {
                        builder.supersede_plan(idx);
                        for step in steps {
                            builder.add(ProbeKind::PlanStep, json_clip(&step.text), idx, item);
                        }
                    }
                }
                ItemBody::ToolResult(result) => {
                    let raw = item.plain_text();
                    let (output, wrapped) = unwrap_output(&raw);
                    let failed = result.is_error || exit_code(&output).is_some_and(|c| c != 0);
                    if let Some(line) = error_line(&output).filter(|_| failed) {
                        let probe = if wrapped { json_clip(line) } else { clip(line) };
                        builder.add(ProbeKind::FailedCommand, probe, idx, item);
                    }
                    let call = calls
                        .get(result.call_id.as_str())
                        .and_then(|&c| conv.items.get(c));
                    if let Some((call_item, call)) = call
                        .and_then(|i| i.as_tool_call().map(|c| (i, c)))
                        .filter(|_| failed)
                    {
                        if let Some(action) = failed_action(call) {
                            // Found verbatim in the call; expected from the failed result on.
                            builder.add(ProbeKind::FailedAction, action, idx, call_item);
                        }
                    }
                }
                ItemBody::Message(m) if m.role == Role::User => {
                    let text = item.plain_text();
                    if let Some(line) = request_line(&text).filter(|_| !is_injected(&text)) {
                        builder.add(ProbeKind::UserRequest, clip(line), idx, item);
                    }
                    for line in constraint_lines(&text).take(MAX_CONSTRAINTS_PER_MESSAGE) {
                        builder.add(ProbeKind::Constraint, clip(line), idx, item);
                    }
                }
                ItemBody::Message(m) if m.role == Role::Assistant => {
                    for path in aider_edit_paths(&item.plain_text()) {
                        builder.add(ProbeKind::FileModified, path, idx, item);
                    }
                }
                _ => {}
            }
        }
        ProbeSet::from_probes(builder.probes)
    }

    /// A set made of given probes (for tests and custom probe files).
    pub fn from_probes(probes: Vec<Probe>) -> ProbeSet {
        let matcher = if probes.is_empty() {
            None
        } else {
            AhoCorasick::new(probes.iter().map(|p| p.text.as_str())).ok()
        };
        ProbeSet { probes, matcher }
    }

    /// The probes.
    pub fn probes(&self) -> &[Probe] {
        &self.probes
    }

    /// Number of probes.
    pub fn len(&self) -> usize {
        self.probes.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.probes.is_empty()
    }

    /// Indices of the probes present in `text`, ascending, without duplicates.
    pub fn find_in(&self, text: &str) -> Vec<u32> {
        let Some(matcher) = &self.matcher else {
            return Vec::new();
        };
        let mut hits: Vec<u32> = matcher
            .find_overlapping_iter(text)
            .map(|m| m.pattern().as_u32())
            .collect();
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    /// Indices of the probes present in what the model sees of `item` (nothing when it is hidden).
    pub fn find_in_item(&self, item: &Item) -> Vec<u32> {
        if !item.meta.visibility.model || self.matcher.is_none() {
            return Vec::new();
        }
        self.find_in(&item.plain_text())
    }
}

#[derive(Default)]
struct Builder {
    probes: Vec<Probe>,
}

impl Builder {
    /// Adds a probe unless it is empty, a duplicate, or not found verbatim in its own item (a probe
    /// the unmodified history would not contain could never be retained).
    fn add(&mut self, kind: ProbeKind, text: String, origin: usize, item: &Item) {
        let min = if kind == ProbeKind::FileModified {
            PATH_MIN_BYTES
        } else {
            PROBE_MIN_BYTES
        };
        if text.len() < min
            || self
                .probes
                .iter()
                .any(|p| p.kind == kind && p.text == text && p.superseded_at.is_none())
        {
            return;
        }
        if !item.plain_text().contains(&text) {
            return;
        }
        self.probes.push(Probe {
            kind,
            text,
            origin,
            superseded_at: None,
        });
    }

    fn supersede_plan(&mut self, at: usize) {
        for p in &mut self.probes {
            if p.kind == ProbeKind::PlanStep && p.superseded_at.is_none() {
                p.superseded_at = Some(at);
            }
        }
    }
}

/// What a failed call attempted, as a probe: the first line of its command (a shell call), else
/// the file it edited or read; `None` for calls that name neither.
fn failed_action(call: &ToolCall) -> Option<String> {
    let actions = classify(call);
    let command = actions.iter().find_map(|a| match a {
        Action::Command(c) => Some(c.as_str()),
        _ => None,
    });
    if let Some(c) = command {
        let line = c.lines().map(str::trim).find(|l| !l.is_empty())?;
        return Some(json_clip(line));
    }
    actions.iter().find_map(|a| match a {
        Action::Modify(p) | Action::Read(p) => Some(json_clip(p)),
        _ => None,
    })
}

/// The longest prefix of `s` of at most [`PROBE_MAX_BYTES`] bytes ending on a char boundary, trimmed.
fn clip(s: &str) -> String {
    let s = s.trim();
    let mut end = s.len().min(PROBE_MAX_BYTES);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].trim_end().to_owned()
}

/// Like [`clip`], but also stops before the first character JSON would escape, so the probe is found
/// in the verbatim (JSON-encoded) arguments of the call it came from.
fn json_clip(s: &str) -> String {
    let end = s
        .find(|c: char| c == '"' || c == '\\' || c.is_control())
        .unwrap_or(s.len());
    clip(&s[..end])
}

/// Paths a tool call modifies: what [`classify`] reads from the tool vocabularies of Claude Code,
/// Codex, SWE-agent and OpenHands, plus SWE-agent's bare `edit N:M`, which edits the file last opened
/// (tracked in `open_file`).
fn modified_paths(
    call: &ToolCall,
    actions: &[Action],
    open_file: &mut Option<String>,
) -> Vec<String> {
    let mut out = Vec::new();
    for action in actions {
        match action {
            Action::Modify(p) => {
                push_path(&mut out, p);
                *open_file = Some(p.clone());
            }
            Action::Read(p) => *open_file = Some(p.clone()),
            Action::Command(_) | Action::Plan(..) => {}
        }
    }
    let value = call.arguments.to_value();
    if out.is_empty() {
        // Patches inside JSON-encoded arguments (`{"input": "*** Begin Patch ..."}`).
        let mut strings = Vec::new();
        if let Some(v) = &value {
            collect_strings(v, &mut strings);
        }
        for line in strings.iter().flat_map(|s| s.lines()) {
            if let Some(path) = PATCH_MARKERS.iter().find_map(|m| line.strip_prefix(m)) {
                push_path(&mut out, path);
            }
        }
    }
    let command = value
        .as_ref()
        .and_then(|v| v.get("command").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| call.arguments.to_text());
    let first = command.split_whitespace().next();
    if out.is_empty() && first == Some("edit") {
        if let Some(path) = open_file.as_deref() {
            push_path(&mut out, path);
        }
    }
    out
}

/// aider's SEARCH/REPLACE blocks name the file on the line before the opening fence; its log also
/// says `Applied edit to PATH`.
fn aider_edit_paths(text: &str) -> Vec<String> {
    const SEARCH_MARKER: &str = "<<<<<<< SEARCH";
    const APPLIED: &str = "Applied edit to ";
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (idx, line) in lines.iter().enumerate() {
        if line.trim() == SEARCH_MARKER
            && idx >= 2
            && lines[idx - 1].trim_start().starts_with("```")
        {
            push_path(&mut out, lines[idx - 2]);
        }
        if let Some(path) = line.trim_start_matches(['>', ' ']).strip_prefix(APPLIED) {
            push_path(&mut out, path);
        }
    }
    out
}

fn unquote(s: &str) -> &str {
    s.trim().trim_matches(|c| c == '"' || c == '\'' || c == '`')
}

fn push_path(out: &mut Vec<String>, raw: &str) {
    let path = unquote(raw);
    let plausible = (PATH_MIN_BYTES..=PATH_MAX_BYTES).contains(&path.len())
        && !path.contains(char::is_whitespace)
        && !path.contains(['"', '\\', '<', '>', '|', '*'])
        && (path.contains('/') || path.contains('.'));
    if plausible && !out.iter().any(|p| p == path) {
        out.push(path.to_owned());
    }
}

/// Lines of an `apply_patch` envelope that name a file it writes.
const PATCH_MARKERS: [&str; 4] = [
    "*** Update File: ",
    "*** Add File: ",
    "*** Delete File: ",
    "*** Move to: ",
];

fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

/// Codex wraps shell output as `{"output": "...", "metadata": {...}}`: returns the output text and
/// whether it was wrapped (then probes must avoid characters JSON escapes).
fn unwrap_output(text: &str) -> (String, bool) {
    match compact_core::truncate::codex_wrapped(text) {
        Some(w) => {
            let status = w
                .exit_code
                .map(|c| format!("\nexit code: {c}"))
                .unwrap_or_default();
            (format!("{}{status}", w.output), true)
        }
        None => (text.to_owned(), false),
    }
}

/// Harness-injected user messages (Codex's AGENTS.md and environment context): not requests, though
/// their constraints count.
const INJECTED_PREFIXES: [&str; 4] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<system-reminder>",
];

fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    INJECTED_PREFIXES.iter().any(|p| t.starts_with(p))
}

/// Lines that are generic in every failure and so prove nothing.
const GENERIC_ERROR_LINES: [&str; 2] = ["Traceback (most recent call last):", "Process exited"];

/// The error line of a failed command's output: the last line carrying an error signal (the actual
/// exception after a traceback, the compiler's summary), else the last non-empty line.
fn error_line(text: &str) -> Option<&str> {
    let meaningful = |l: &&str| {
        let t = l.trim();
        t.len() >= PROBE_MIN_BYTES
            && !GENERIC_ERROR_LINES.iter().any(|g| t.starts_with(g))
            && exit_code(t).is_none()
    };
    text.lines()
        .rfind(|l| meaningful(l) && is_error_line(l))
        .or_else(|| text.lines().rfind(meaningful))
        .map(str::trim)
}

/// The first line of a user message that says something (not a bare XML-ish wrapper tag).
fn request_line(text: &str) -> Option<&str> {
    text.lines()
        .map(str::trim)
        .find(|l| l.len() >= PROBE_MIN_BYTES && !(l.starts_with('<') && l.ends_with('>')))
}

/// Words that make a user line an explicit constraint.
const CONSTRAINT_MARKERS: [&str; 10] = [
    "must",
    "do not",
    "don't",
    "never",
    "always",
    "make sure",
    "avoid",
    "should not",
    "shouldn't",
    "only use",
];

/// Lines of a user message that state a constraint.
fn constraint_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| {
        if l.len() < PROBE_MIN_BYTES {
            return false;
        }
        let lower = l.to_ascii_lowercase();
        CONSTRAINT_MARKERS.iter().any(|m| {
            lower.match_indices(m).any(|(at, _)| {
                let before = lower[..at].chars().next_back();
                let after = lower[at + m.len()..].chars().next();
                !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codex_outputs_are_unwrapped() {
        let (text, wrapped) = unwrap_output(
            "{\"output\":\"boom: bad thing happened\\n\",\"metadata\":{\"exit_code\":2}}",
        );
        assert!(wrapped);
        assert_eq!(text, "boom: bad thing happened\n\nexit code: 2");
        assert_eq!(unwrap_output("plain"), ("plain".to_owned(), false));
    }

    #[test]
    fn error_line_prefers_last_signal_line() {
        let out = "Traceback (most recent call last):\n  File \"x.py\", line 3\nValueError: bad frobnication";
        assert_eq!(error_line(out), Some("ValueError: bad frobnication"));
    }

    #[test]
    fn constraints_need_word_boundaries() {
        let text = "Please refactor the parser module.\nYou must keep the public API stable.\nmustard is fine";
        let lines: Vec<&str> = constraint_lines(text).collect();
        assert_eq!(lines, vec!["You must keep the public API stable."]);
    }

    #[test]
    fn aider_blocks_name_their_file() {
        let text = "Here is the change:\n\nsrc/app.py\n```python\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n```";
        assert_eq!(aider_edit_paths(text), vec!["src/app.py".to_owned()]);
    }
}
