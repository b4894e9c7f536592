//! Fact extraction: what a span of conversation established, read from structured tool-call fields
//! first (file paths, commands, todo lists) and from message text only for user requests, constraints
//! and decisions. Every fact carries the ids of the items it came from.
//!
//! Tool vocabularies understood: Claude Code (Read, Edit, Write, MultiEdit, NotebookEdit, Bash,
//! TodoWrite, TaskCreate / TaskUpdate), Codex (shell / exec_command / local_shell with `command` arrays
//! or strings, apply_patch, update_plan), SWE-agent (open, create, edit, str_replace_editor, bash),
//! OpenHands (str_replace_editor, execute_bash, read / write), VS Code (manage_todo_list); unknown tools
//! contribute nothing but their failures.
//!
//! Failures follow the `failure` module's rule (flagged, non-zero exit, interrupted, or output ending in an
//! error); identical ones are merged with a count, and a failure is marked resolved when a later run
//! of the same command (or a later change of the same file) succeeded.

mod failure;
mod files;
mod sentences;
mod shell;
pub mod symbols;
mod tasks;
mod tools;
mod user;

use crate::model::{Item, ItemBody, ItemId, Part, Role};
use crate::normalize::{SYNTHETIC_ID_PREFIX, SYNTHETIC_RESULT_TEXT};
use crate::truncate::exit_code;
pub use failure::command_key;
use failure::Noise;
pub(crate) use files::is_symbol;
use files::{Change, FileSet};
pub use files::{FileFact, FileOp, MAX_SYMBOLS};
use std::collections::HashMap;
pub use tools::{classify, Action};

/// At most this many constraints are read from one piece of injected context.
const INJECTED_CONSTRAINTS: usize = 3;
/// Longest line naming a piece of injected context, in characters.
const CONTEXT_NAME_CHARS: usize = 160;

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

/// The user stopped the request being worked on (a harness's note: Claude Code's `[Request
/// interrupted by user]`, Codex's aborted turn). Not a request: the status of the one before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interruption {
    /// Position of the note in the extracted slice.
    pub at: usize,
    /// The item that carries the note.
    pub sources: Vec<ItemId>,
}

/// Label of the opaque item a Codex rollout's `turn_aborted` event is imported as (the user stopped
/// the turn; `compact_formats::import::codex::TURN_ABORTED`).
pub const TURN_ABORTED_LABEL: &str = "turn_aborted";

/// A sentence worth keeping (a constraint, a decision, a completion statement).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    /// The sentence.
    pub text: String,
    /// True when it came from context a harness injected (a skill's text, AGENTS.md), not from
    /// something the user or the assistant wrote.
    pub injected: bool,
    /// Position of the item in the extracted slice.
    pub at: usize,
    /// The message it came from.
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
    /// Whether the run was a failure (see the `failure` module): a non-zero exit is not one for `grep`
    /// finding nothing, and output ending in an error is one even without a status.
    pub failed: bool,
    /// Position of its result (of the call when there is none) in the extracted slice.
    pub at: usize,
    /// The call and its result.
    pub sources: Vec<ItemId>,
}

/// A failure: what was attempted and the line that says why. Identical failures (same command or
/// tool target, same line) are one fact with a count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFact {
    /// What was attempted (the command, or the tool and its target).
    pub action: String,
    /// The line of the output that says why.
    pub line: String,
    /// How it ended (the last time).
    pub status: CommandStatus,
    /// How many times this same failure happened.
    pub count: usize,
    /// Position of its last occurrence in the extracted slice.
    pub at: usize,
    /// The file the failed call targeted, if any.
    pub path: Option<String>,
    /// The first sentence the assistant wrote after it (its diagnosis or next move), if any.
    pub followup: Option<String>,
    /// The later call that succeeded where this failed (same command, or a change of the same
    /// file), if any.
    pub resolved_by: Option<ItemId>,
    /// The calls and results, oldest first.
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
    /// Where the user stopped the request being worked on, in order.
    pub interruptions: Vec<Interruption>,
    /// Constraints and preferences stated by the user.
    pub constraints: Vec<Statement>,
    /// Context a harness injected (a skill's or a command's text, AGENTS.md), each by the line that
    /// names it (`Base directory for this skill: /path`): an agent resuming knows which instructions
    /// were in force and where to read them again.
    pub context: Vec<Statement>,
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

/// A tool call waiting for its result.
struct Pending<'a> {
    at: usize,
    item: &'a Item,
    actions: Vec<Action>,
    command: Option<usize>,
    changes: Vec<Change>,
    task: Option<tasks::TaskEvent>,
}

/// A tool result's text (Codex's JSON envelope unwrapped) and status.
struct Output {
    text: String,
    status: CommandStatus,
    flagged: bool,
    /// The exit code came from the harness's metadata, not from the text.
    structured: bool,
}

fn output_of(item: &Item) -> Option<Output> {
    let ItemBody::ToolResult(result) = item.body() else {
        return None;
    };
    let (text, structured) = unwrap_output(parts_text(&result.parts));
    let interrupted =
        item.meta.id.as_str().starts_with(SYNTHETIC_ID_PREFIX) || text == SYNTHETIC_RESULT_TEXT;
    let status = match (interrupted, exit_code(&text)) {
        (true, _) => CommandStatus::Interrupted,
        (false, Some(c)) => CommandStatus::Exit(c),
        (false, None) if result.is_error => CommandStatus::Failed,
        (false, None) => CommandStatus::Unknown,
    };
    Some(Output {
        text,
        status,
        flagged: result.is_error,
        structured,
    })
}

/// How a tool result failed, read from the result alone (no command, no noise learnt): the exit code
/// it reports, if any, and the line that says why. `None` when it did not fail (not flagged, exit 0
/// or no status) or is not a tool result.
pub fn failure_of(item: &Item) -> Option<(Option<i32>, String)> {
    let out = output_of(item)?;
    let failed = match out.status {
        CommandStatus::Exit(c) => c != 0,
        CommandStatus::Failed | CommandStatus::Interrupted => true,
        CommandStatus::Unknown | CommandStatus::NoResult => false,
    };
    let code = match out.status {
        CommandStatus::Exit(c) => Some(c),
        _ => None,
    };
    failed.then(|| (code, failure::error_line(&out.text, &Noise::default())))
}

/// Extracts [`Facts`] from `items` (any span; calls whose results are outside it have
/// [`CommandStatus::NoResult`]). Deterministic.
pub fn extract(items: &[Item]) -> Facts {
    let outputs: Vec<Option<Output>> = items.iter().map(output_of).collect();
    let noise = Noise::learn(
        outputs
            .iter()
            .flatten()
            .map(|o| (o.status, o.flagged, o.text.as_str())),
    );
    let mut x = Extractor {
        noise,
        facts: Facts::default(),
        calls: HashMap::new(),
        order: Vec::new(),
        read: FileSet::default(),
        modified: FileSet::default(),
        tasks: tasks::TaskList::default(),
        last_task: None,
        awaiting_followup: Vec::new(),
    };
    for (at, item) in items.iter().enumerate() {
        match item.body() {
            ItemBody::Message(m) if m.role == Role::User => x.user(at, item, &m.parts),
            ItemBody::Message(m) if m.role == Role::Assistant => x.assistant(at, item, &m.parts),
            ItemBody::ToolCall(call) => x.call(at, item, call),
            ItemBody::ToolResult(result) => {
                if let Some(out) = &outputs[at] {
                    x.result(at, item, &result.call_id, out);
                    if user::result_ends_in_interruption(&out.text) {
                        x.interruption(at, item);
                    }
                }
            }
            ItemBody::Opaque(o) if o.label == TURN_ABORTED_LABEL => x.interruption(at, item),
            _ => {}
        }
    }
    x.finish()
}

struct Extractor<'a> {
    noise: Noise,
    facts: Facts,
    calls: HashMap<&'a str, Pending<'a>>,
    /// Call ids in call order (to settle calls without results deterministically).
    order: Vec<&'a str>,
    read: FileSet,
    modified: FileSet,
    tasks: tasks::TaskList,
    /// Position and id of the latest task-list call.
    last_task: Option<(usize, ItemId)>,
    /// Failures waiting for the assistant's next words.
    awaiting_followup: Vec<usize>,
}

impl<'a> Extractor<'a> {
    fn user(&mut self, at: usize, item: &Item, parts: &[Part]) {
        let id = &item.meta.id;
        let text = match user::classify_user_text(&parts_text(parts), item.meta.visibility.user) {
            user::UserText::Request(t) => t,
            user::UserText::Context(t) => {
                if let Some(name) = context_name(&t) {
                    push_statement(&mut self.facts.context, name, at, id);
                    for c in self.facts.context.iter_mut().filter(|c| c.at == at) {
                        c.injected = true;
                    }
                }
                // Injected text (a skill, AGENTS.md) can hold dozens of rules: its first few stand
                // for it.
                for s in sentences::constraints(&t)
                    .into_iter()
                    .take(INJECTED_CONSTRAINTS)
                {
                    push_statement(&mut self.facts.constraints, s, at, id);
                }
                // The statements this message introduced.
                for c in self.facts.constraints.iter_mut().filter(|c| c.at == at) {
                    c.injected = true;
                }
                return;
            }
            user::UserText::Interruption { then } => {
                self.interruption(at, item);
                // What the user typed after the note, in the same message, is the next request.
                match then {
                    Some(t) => t,
                    None => return,
                }
            }
            user::UserText::Noise => return,
        };
        for s in sentences::constraints(&text) {
            push_statement(&mut self.facts.constraints, s, at, id);
        }
        self.awaiting_followup.clear();
        self.facts.user_requests.push(UserRequest {
            text,
            at,
            sources: vec![id.clone()],
        });
    }

    fn interruption(&mut self, at: usize, item: &Item) {
        // One stop, however many notes the harness wrote for it (a stopped call's result and the
        // note after it): notes with no activity and no request between them are one.
        let last_activity = self.facts.activity.last().copied();
        let last_request = self.facts.user_requests.last().map(|r| r.at);
        if let Some(last) = self.facts.interruptions.last_mut() {
            // A request at the note's own place was typed after it, in the same message.
            let acted = last_activity.is_some_and(|p| p > last.at);
            let asked = last_request.is_some_and(|p| p >= last.at);
            if !acted && !asked {
                last.sources.push(item.meta.id.clone());
                return;
            }
        }
        self.facts.interruptions.push(Interruption {
            at,
            sources: vec![item.meta.id.clone()],
        });
    }

    fn assistant(&mut self, at: usize, item: &Item, parts: &[Part]) {
        let id = &item.meta.id;
        self.facts.activity.push(at);
        self.facts.replies.push(at);
        let text = parts_text(parts);
        for s in sentences::decisions(&text) {
            push_statement(&mut self.facts.decisions, s, at, id);
        }
        for s in sentences::completions(&text) {
            push_statement(&mut self.facts.completions, s, at, id);
        }
        if let Some(first) = sentences::first(&text) {
            for e in self.awaiting_followup.drain(..) {
                self.facts.errors[e]
                    .followup
                    .get_or_insert_with(|| first.clone());
            }
        }
    }

    fn call(&mut self, at: usize, item: &'a Item, call: &'a crate::model::ToolCall) {
        self.facts.activity.push(at);
        // A failure's follow-up is what the assistant says before it acts again.
        self.awaiting_followup.clear();
        let actions = classify(call);
        let mut command = None;
        for action in &actions {
            match action {
                Action::Command(c) => {
                    command = Some(self.facts.commands.len());
                    self.facts.commands.push(CommandFact {
                        command: c.clone(),
                        status: CommandStatus::NoResult,
                        failed: false,
                        at,
                        sources: vec![item.meta.id.clone()],
                    });
                }
                Action::Plan(steps, explanation) => {
                    self.facts.plan = Some(Plan {
                        steps: steps.clone(),
                        explanation: explanation.clone(),
                        at,
                        sources: vec![item.meta.id.clone()],
                    });
                }
                Action::Read(_) | Action::Modify(_) => {}
            }
        }
        let command_text = command.map(|c| self.facts.commands[c].command.as_str());
        let changes = files::changes_of(call, &actions, command_text);
        let pending = Pending {
            at,
            item,
            actions,
            command,
            changes,
            task: tasks::event(call),
        };
        if self.calls.insert(call.call_id.as_str(), pending).is_none() {
            self.order.push(call.call_id.as_str());
        }
    }

    fn result(&mut self, at: usize, item: &Item, call_id: &str, out: &Output) {
        let pending = self.calls.remove(call_id);
        let mut sources = Vec::new();
        if let Some(p) = &pending {
            sources.push(p.item.meta.id.clone());
        }
        sources.push(item.meta.id.clone());
        let command = pending.as_ref().and_then(|p| p.command);
        let command_text = command.map(|c| self.facts.commands[c].command.clone());
        // Only a command's output reports an exit code; "exit code 1" in a file read is content.
        let status = match out.status {
            CommandStatus::Exit(_) if pending.is_some() && command.is_none() && !out.structured => {
                if out.flagged {
                    CommandStatus::Failed
                } else {
                    CommandStatus::Unknown
                }
            }
            s => s,
        };
        let failed = failure::is_failure(command_text.as_deref(), status, &out.text, &self.noise);
        if let Some(c) = command {
            let cmd = &mut self.facts.commands[c];
            cmd.status = status;
            cmd.failed = failed;
            cmd.at = at;
            cmd.sources.clone_from(&sources);
        }
        if failed {
            let (action, key, path) = match (&command_text, &pending) {
                (Some(c), _) => (c.clone(), failure::command_key(c), None),
                (None, Some(p)) => {
                    let d = describe_call(p.item, &p.actions);
                    (d.clone(), d, target(&p.actions))
                }
                (None, None) => {
                    let name = match item.body() {
                        ItemBody::ToolResult(r) => r.tool_name.clone(),
                        _ => None,
                    };
                    let name = name.unwrap_or_else(|| "tool".to_owned());
                    (name.clone(), name, None)
                }
            };
            let line = failure::error_line(&out.text, &self.noise);
            self.push_error(key, action, line, status, at, path, sources);
            return;
        }
        if let Some(p) = pending {
            let created =
                out.text.contains("created successfully") || out.text.starts_with("File created");
            self.settle(p, Some(&out.text), created);
        }
    }

    /// Applies a call that did not fail: its reads, changes and task-list event.
    fn settle(&mut self, p: Pending<'_>, output: Option<&str>, created: bool) {
        let id = &p.item.meta.id;
        let reads: Vec<&str> = p
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::Read(path) => Some(path.as_str()),
                _ => None,
            })
            .collect();
        // The output is the file's content only when one file was read by a non-shell tool or a
        // shell command that reads nothing else.
        let content = output.filter(|_| reads.len() == 1);
        for path in reads {
            self.read.read(path, id, p.at, content);
        }
        for mut change in p.changes {
            if created && change.op == FileOp::Modified {
                change.op = FileOp::Created;
            }
            self.modified.change(&change, id, p.at);
        }
        if let Some(event) = &p.task {
            self.tasks.apply(event, output);
            self.last_task = Some((p.at, id.clone()));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn push_error(
        &mut self,
        key: String,
        action: String,
        line: String,
        status: CommandStatus,
        at: usize,
        path: Option<String>,
        sources: Vec<ItemId>,
    ) {
        let errors = &mut self.facts.errors;
        let same = errors.iter().position(|e| {
            e.line == line && (e.action == action || failure::command_key(&e.action) == key)
        });
        let idx = match same {
            Some(i) => {
                let e = &mut errors[i];
                e.count += 1;
                e.at = at;
                e.status = status;
                for s in sources {
                    if !e.sources.contains(&s) {
                        e.sources.push(s);
                    }
                }
                i
            }
            None => {
                errors.push(ErrorFact {
                    action,
                    line,
                    status,
                    count: 1,
                    at,
                    path,
                    followup: None,
                    resolved_by: None,
                    sources,
                });
                errors.len() - 1
            }
        };
        if !self.awaiting_followup.contains(&idx) {
            self.awaiting_followup.push(idx);
        }
    }

    fn finish(mut self) -> Facts {
        // Calls without a result in the span: what they did is assumed to have happened.
        for call_id in std::mem::take(&mut self.order) {
            if let Some(p) = self.calls.remove(call_id) {
                self.settle(p, None, false);
            }
        }
        if let Some((at, id)) = self.last_task.take() {
            if self.facts.plan.as_ref().is_none_or(|p| p.at < at) {
                self.facts.plan = Some(Plan {
                    steps: self.tasks.steps(),
                    explanation: None,
                    at,
                    sources: vec![id],
                });
            }
        }
        let mut modified = self.modified.0;
        for f in &mut modified {
            if let Some(r) = self.read.0.iter().find(|r| r.path == f.path) {
                let extra: Vec<String> = r
                    .symbols
                    .iter()
                    .filter(|s| !f.symbols.contains(s))
                    .cloned()
                    .collect();
                f.symbols.extend(extra);
                f.symbols.truncate(MAX_SYMBOLS);
                if f.names.is_empty() {
                    f.names.clone_from(&r.names);
                }
            }
        }
        resolve(&mut self.facts, &modified);
        self.facts.files_read = self.read.0;
        self.facts.files_modified = modified;
        self.facts
    }
}

/// Marks each failure resolved when a later run of the same command, or a later change of the same
/// file, succeeded.
fn resolve(facts: &mut Facts, modified: &[FileFact]) {
    for e in &mut facts.errors {
        let key = failure::command_key(&e.action);
        let by_command = facts
            .commands
            .iter()
            .filter(|c| c.at > e.at && !c.failed && c.status != CommandStatus::NoResult)
            .find(|c| failure::command_key(&c.command) == key)
            .and_then(|c| c.sources.last().cloned());
        let by_file = e.path.as_ref().and_then(|p| {
            modified
                .iter()
                .find(|f| &f.path == p && f.last_at > e.at)
                .and_then(|f| f.sources.last().cloned())
        });
        e.resolved_by = by_command.or(by_file);
    }
}

/// The line that names a piece of injected context: its first line, unless that line is a tag
/// (`<environment_context>`, `<user_instructions>`: a block that names nothing).
fn context_name(text: &str) -> Option<String> {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let first = first.trim_start_matches(['#', ' ']);
    let names =
        first.chars().filter(|c| c.is_alphanumeric()).count() >= 3 && !first.starts_with('<');
    names.then(|| shorten(first, CONTEXT_NAME_CHARS))
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
            injected: false,
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
/// followed by the status line, so lines and exit codes read as for plain output. The flag says
/// whether an exit code came from the metadata.
fn unwrap_output(text: String) -> (String, bool) {
    match crate::truncate::codex_wrapped(&text) {
        Some(w) => match w.exit_code {
            Some(c) => (format!("{}\nexit code: {c}", w.output), true),
            None => (w.output, false),
        },
        None => (text, false),
    }
}

/// `text` cut to `max` characters with an ellipsis.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", text[..at].trim_end()),
        None => text.to_owned(),
    }
}

/// The file a call targets (read or modified), if any.
fn target(actions: &[Action]) -> Option<String> {
    actions.iter().find_map(|a| match a {
        Action::Read(p) | Action::Modify(p) => Some(p.clone()),
        _ => None,
    })
}

/// A short description of a non-command call: the tool and the file it targeted.
fn describe_call(item: &Item, actions: &[Action]) -> String {
    let name = item.as_tool_call().map_or("tool", |c| c.name.as_str());
    match target(actions) {
        Some(t) => format!("{name} {t}"),
        None => name.to_owned(),
    }
}
