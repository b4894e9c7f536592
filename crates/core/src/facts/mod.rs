//! Fact extraction: what a span of conversation established, read from structured tool-call fields
//! first (file paths, commands, todo lists) and from message text only for user requests, constraints
//! and decisions. Every fact carries the ids of the items it came from.
//!
//! Tool vocabularies understood: Claude Code (Read, Edit, Write, MultiEdit, NotebookEdit, Bash,
//! TodoWrite), Codex (shell / exec_command / local_shell with `command` arrays or strings, apply_patch,
//! update_plan), SWE-agent (open, create, edit, str_replace_editor, bash), OpenHands (str_replace_editor,
//! execute_bash, read / write), VS Code (manage_todo_list); unknown tools contribute nothing but their
//! errors.

mod sentences;
mod shell;
mod tools;

use crate::model::{Item, ItemBody, ItemId, Part, Role, CHECKPOINT_OPEN};
use crate::normalize::{SYNTHETIC_ID_PREFIX, SYNTHETIC_RESULT_TEXT};
use crate::truncate::{exit_code, is_error_line};
use std::collections::HashMap;
pub use tools::{classify, Action};

/// Longest kept error line, in characters (one message, not a stack dump).
const MAX_ERROR_LINE_CHARS: usize = 240;

/// A user request, verbatim (trimmed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRequest {
    /// The text the user wrote.
    pub text: String,
    /// Position of the item in the extracted slice.
    pub at: usize,
    /// The user message item.
    pub sources: Vec<ItemId>,
}

/// A sentence worth keeping (a constraint, a decision, a completion statement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The sentence.
    pub text: String,
    /// Position of the item in the extracted slice.
    pub at: usize,
    /// The message it came from.
    pub sources: Vec<ItemId>,
}

/// A file read or modified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFact {
    /// The path as the tool call named it.
    pub path: String,
    /// The calls that touched it, oldest first.
    pub sources: Vec<ItemId>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandStatus {
    /// The output reported this exit code.
    Exit(i32),
    /// The tool reported failure without an exit code.
    Failed,
    /// The call was interrupted: no output was recorded.
    Interrupted,
    /// A result exists but reports no status.
    Unknown,
    /// No result in the extracted items.
    NoResult,
}

impl CommandStatus {
    /// True for a non-zero exit, a failure or an interruption.
    pub fn is_failure(self) -> bool {
        matches!(self, CommandStatus::Exit(c) if c != 0)
            || matches!(self, CommandStatus::Failed | CommandStatus::Interrupted)
    }
}

/// A command run through a shell tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFact {
    /// The command line.
    pub command: String,
    /// How it ended.
    pub status: CommandStatus,
    /// The call and its result.
    pub sources: Vec<ItemId>,
}

/// A failed tool call: what was attempted and the key error line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFact {
    /// What was attempted (the command, or the tool and its target).
    pub action: String,
    /// The key error line of the output.
    pub line: String,
    /// How it ended.
    pub status: CommandStatus,
    /// The call and its result.
    pub sources: Vec<ItemId>,
}

/// Status of a plan / todo step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished.
    Done,
    /// Dropped.
    Cancelled,
}

/// One step of a plan / todo list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanStep {
    /// The step's text.
    pub text: String,
    /// Its status.
    pub status: StepStatus,
}

/// The latest plan / todo list written through a todo tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Steps in order.
    pub steps: Vec<PlanStep>,
    /// An explanation given with the plan, if any.
    pub explanation: Option<String>,
    /// Position of the call in the extracted slice.
    pub at: usize,
    /// The call that wrote it.
    pub sources: Vec<ItemId>,
}

/// Everything extracted from a span of items.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// User requests, in order.
    pub user_requests: Vec<UserRequest>,
    /// Constraints and preferences stated by the user.
    pub constraints: Vec<Statement>,
    /// Decisions stated by the assistant.
    pub decisions: Vec<Statement>,
    /// Assistant statements that something is done (used to infer request status).
    pub completions: Vec<Statement>,
    /// Files read, in order of first mention.
    pub files_read: Vec<FileFact>,
    /// Files modified, in order of first mention.
    pub files_modified: Vec<FileFact>,
    /// Commands run, in order.
    pub commands: Vec<CommandFact>,
    /// Failed calls, in order.
    pub errors: Vec<ErrorFact>,
    /// The latest plan / todo list.
    pub plan: Option<Plan>,
    /// Positions of assistant activity (assistant messages and tool calls).
    pub activity: Vec<usize>,
    /// Positions of assistant text messages.
    pub replies: Vec<usize>,
}

/// Extracts [`Facts`] from `items` (any span; calls whose results are outside it have
/// [`CommandStatus::NoResult`]). Deterministic.
pub fn extract(items: &[Item]) -> Facts {
    let mut facts = Facts::default();
    let mut calls: HashMap<&str, (usize, Vec<Action>)> = HashMap::new();
    let mut files_read = FileSet::default();
    let mut files_modified = FileSet::default();
    let mut command_of_call: HashMap<&str, usize> = HashMap::new();
    for (at, item) in items.iter().enumerate() {
        let id = item.meta.id.clone();
        match item.body() {
            ItemBody::Message(m) if m.role == Role::User => {
                let text = clean_user_text(&parts_text(&m.parts));
                if text.is_empty()
                    || text.starts_with(CHECKPOINT_OPEN)
                    || is_injected(&text)
                    || is_slash_command(&text)
                {
                    continue;
                }
                for s in sentences::constraints(&text) {
                    push_statement(&mut facts.constraints, s, at, &id);
                }
                facts.user_requests.push(UserRequest {
                    text,
                    at,
                    sources: vec![id],
                });
            }
            ItemBody::Message(m) if m.role == Role::Assistant => {
                facts.activity.push(at);
                facts.replies.push(at);
                let text = parts_text(&m.parts);
                for s in sentences::decisions(&text) {
                    push_statement(&mut facts.decisions, s, at, &id);
                }
                for s in sentences::completions(&text) {
                    push_statement(&mut facts.completions, s, at, &id);
                }
            }
            ItemBody::ToolCall(call) => {
                facts.activity.push(at);
                let actions = classify(call);
                for action in &actions {
                    match action {
                        Action::Read(p) => files_read.add(p, &id),
                        Action::Modify(p) => files_modified.add(p, &id),
                        Action::Command(c) => {
                            command_of_call.insert(call.call_id.as_str(), facts.commands.len());
                            facts.commands.push(CommandFact {
                                command: c.clone(),
                                status: CommandStatus::NoResult,
                                sources: vec![id.clone()],
                            });
                        }
                        Action::Plan(steps, explanation) => {
                            facts.plan = Some(Plan {
                                steps: steps.clone(),
                                explanation: explanation.clone(),
                                at,
                                sources: vec![id.clone()],
                            });
                        }
                    }
                }
                calls.insert(call.call_id.as_str(), (at, actions));
            }
            ItemBody::ToolResult(result) => {
                let text = unwrap_output(parts_text(&result.parts));
                let interrupted = item.meta.id.as_str().starts_with(SYNTHETIC_ID_PREFIX)
                    || text == SYNTHETIC_RESULT_TEXT;
                let code = exit_code(&text);
                let status = match (interrupted, code) {
                    (true, _) => CommandStatus::Interrupted,
                    (false, Some(c)) => CommandStatus::Exit(c),
                    (false, None) if result.is_error => CommandStatus::Failed,
                    (false, None) => CommandStatus::Unknown,
                };
                let call = calls.get(result.call_id.as_str());
                let mut sources = Vec::new();
                if let Some((call_at, _)) = call {
                    sources.push(items[*call_at].meta.id.clone());
                }
                sources.push(id.clone());
                let command = command_of_call.get(result.call_id.as_str()).copied();
                if let Some(ci) = command {
                    let cmd = &mut facts.commands[ci];
                    cmd.status = status;
                    cmd.sources = sources.clone();
                }
                let signalled = command.is_some()
                    && status == CommandStatus::Unknown
                    && text.lines().any(is_error_line);
                let benign = command
                    .is_some_and(|ci| benign_exit(&facts.commands[ci].command, status, &text));
                if (status.is_failure() && !benign) || signalled {
                    let action = match (command, call) {
                        (Some(ci), _) => facts.commands[ci].command.clone(),
                        (None, Some((call_at, actions))) => {
                            describe_call(&items[*call_at], actions)
                        }
                        (None, None) => result
                            .tool_name
                            .clone()
                            .unwrap_or_else(|| "tool".to_owned()),
                    };
                    facts.errors.push(ErrorFact {
                        action,
                        line: key_error_line(&text),
                        status,
                        sources,
                    });
                }
            }
            _ => {}
        }
    }
    facts.files_read = files_read.0;
    facts.files_modified = files_modified.0;
    facts
}

#[derive(Default)]
struct FileSet(Vec<FileFact>);

impl FileSet {
    fn add(&mut self, path: &str, id: &ItemId) {
        match self.0.iter_mut().find(|f| f.path == path) {
            Some(f) => {
                if !f.sources.contains(id) {
                    f.sources.push(id.clone());
                }
            }
            None => self.0.push(FileFact {
                path: path.to_owned(),
                sources: vec![id.clone()],
            }),
        }
    }
}

fn push_statement(list: &mut Vec<Statement>, text: String, at: usize, id: &ItemId) {
    match list.iter_mut().find(|s| s.text == text) {
        Some(s) => {
            if !s.sources.contains(id) {
                s.sources.push(id.clone());
            }
        }
        None => list.push(Statement {
            text,
            at,
            sources: vec![id.clone()],
        }),
    }
}

fn parts_text(parts: &[Part]) -> String {
    let texts: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
    texts.join("\n")
}

/// Codex wraps shell output as `{"output": "...", "metadata": {"exit_code": N}}`: the output text
/// followed by the status line, so lines and exit codes read as for plain output.
fn unwrap_output(text: String) -> String {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return text;
    }
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(trimmed)
    else {
        return text;
    };
    let Some(serde_json::Value::String(output)) = map.get("output") else {
        return text;
    };
    let code = map
        .get("metadata")
        .and_then(|m| m.get("exit_code"))
        .and_then(serde_json::Value::as_i64);
    match code {
        Some(c) => format!("{output}\nexit code: {c}"),
        None => output.clone(),
    }
}

/// Removes harness-injected `<system-reminder>` blocks and trims.
fn clean_user_text(text: &str) -> String {
    const OPEN: &str = "<system-reminder>";
    const CLOSE: &str = "</system-reminder>";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(OPEN) {
        out.push_str(&rest[..start]);
        match rest[start..].find(CLOSE) {
            Some(end) => rest = &rest[start + end + CLOSE.len()..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim().to_owned()
}

/// The first line with an error signal, else the first non-empty line that is not a status line;
/// shortened.
fn key_error_line(text: &str) -> String {
    let lines = || {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && exit_code(l).is_none())
    };
    let line = lines()
        .find(|l| is_error_line(l))
        .or_else(|| lines().next())
        .unwrap_or("(no error output)");
    shorten(line, MAX_ERROR_LINE_CHARS)
}

/// Commands whose exit status 1 means "no match" or "differences found", not failure.
const EXIT_ONE_MEANS_NO: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "diff", "cmp", "test", "[",
];

/// True when a non-zero exit is the normal answer of a query command (`rg` finding nothing) and the
/// output shows no error.
fn benign_exit(command: &str, status: CommandStatus, output: &str) -> bool {
    if status != CommandStatus::Exit(1)
        || output
            .lines()
            .any(|l| is_error_line(l) && exit_code(l).is_none())
    {
        return false;
    }
    let last = command.rsplit(['|', ';', '&']).next().unwrap_or(command);
    let word = last.split_whitespace().next().unwrap_or("");
    EXIT_ONE_MEANS_NO.contains(&word.rsplit('/').next().unwrap_or(word))
}

/// Harness-injected context sent as a user message: the whole text is one `<tag>...</tag>` block
/// (`<environment_context>`, `<user_instructions>`, `<command-name>`, ...).
fn is_injected(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('<') else {
        return false;
    };
    let Some(end) = rest.find('>') else {
        return false;
    };
    let tag = &rest[..end];
    let valid = !tag.is_empty()
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    valid && text.trim_end().ends_with(&format!("</{tag}>"))
}

/// Longest text treated as a harness slash command (`/add src/x.ts`, `/exit`).
const MAX_SLASH_COMMAND_CHARS: usize = 200;

/// A one-line harness command (`/ls`, `/add file`), not a request.
fn is_slash_command(text: &str) -> bool {
    let Some(rest) = text.strip_prefix('/') else {
        return false;
    };
    let word = rest.split(' ').next().unwrap_or("");
    !text.contains('\n')
        && text.len() <= MAX_SLASH_COMMAND_CHARS
        && !word.is_empty()
        && word.chars().all(|c| c.is_ascii_lowercase() || c == '-')
}

/// `text` cut to `max` characters with an ellipsis.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

/// A short description of a non-command call: the tool and the file it targeted.
fn describe_call(item: &Item, actions: &[Action]) -> String {
    let name = item.as_tool_call().map_or("tool", |c| c.name.as_str());
    let target = actions.iter().find_map(|a| match a {
        Action::Read(p) | Action::Modify(p) => Some(p.as_str()),
        _ => None,
    });
    match target {
        Some(t) => format!("{name} {t}"),
        None => name.to_owned(),
    }
}
