//! `compactctl hook`: what runs inside the agent's own compaction.
//!
//! - **`SessionStart` with `source: "compact"`** (Claude Code; Codex where its version sends it)
//!   runs right after the agent summarised. The transcript then ends with the compaction's boundary;
//!   the items that boundary hid are what the agent just dropped. The hook builds Compact's
//!   deterministic checkpoint of them (failed approaches with their error lines, files modified,
//!   decisions, constraints, the latest task list, each citing the record ids it came from) within
//!   the token budget and prints the documented output
//!   `{"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "..."}}`, which
//!   the agent adds to the model's context.
//! - **`PreCompact`** runs just before the agent summarises; its standard output never reaches the
//!   model. The hook builds the same checkpoint from what the model sees at that moment and saves it
//!   to `<state dir>/<session id>.json`. The `SessionStart` hook that follows emits it when the
//!   transcript shows no compaction to read (an agent that starts a new transcript file after
//!   compacting, or one not yet flushed), and removes it once used.
//! - **`PostCompact`** (Claude Code; input `compact_summary`) runs right after the agent summarised:
//!   the same checkpoint of what was dropped, less every entry the agent's summary already holds
//!   ([`crate::checkpoint::only_new`]), saved for the `SessionStart` hook that follows, which then
//!   adds only that (or nothing).
//! - **`PreToolUse`** on `Bash` (when turned on, [`HookOptions::run`]): the command wrapped in
//!   `compactctl run` through the documented `updatedInput` (module [`crate::pretool`]).
//! - Any other event or source: nothing.
//!
//! The hook never fails the agent: the caller prints nothing and exits 0 on any [`AgentsError`],
//! appending the reason to the log (module [`crate::log`]).

use crate::checkpoint::{hook_context, only_new, DEFAULT_HOOK_TOKENS};
use crate::error::AgentsError;
use crate::pretool::{self, Decision, RunHookOptions};
use crate::transcript::{self, Span};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::path::{Path, PathBuf};

/// Largest hook input read from standard input, in bytes (1 MiB): the documented inputs are a few
/// hundred bytes (`custom_instructions` being the longest field).
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// Longest session id accepted (it names the state file).
pub const MAX_SESSION_ID_CHARS: usize = 128;

/// The agent a hook runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Claude Code: settings.json hooks, session JSONL transcripts.
    ClaudeCode,
    /// Codex CLI: config.toml hooks, rollout JSONL transcripts.
    Codex,
}

impl Agent {
    /// The name used on the command line and in logs.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
        }
    }
}

/// The hook input both agents document (unknown fields are ignored).
#[derive(Debug, Clone, Deserialize)]
pub struct HookInput {
    /// The agent's session id.
    #[serde(default)]
    pub session_id: Option<String>,
    /// The session transcript (Claude Code JSONL, Codex rollout).
    #[serde(default)]
    pub transcript_path: Option<PathBuf>,
    /// The event: `SessionStart`, `PreCompact`, ...
    pub hook_event_name: String,
    /// `SessionStart`: `startup`, `resume`, `clear` or `compact`.
    #[serde(default)]
    pub source: Option<String>,
    /// `PreCompact` / `PostCompact`: `manual` or `auto`.
    #[serde(default)]
    pub trigger: Option<String>,
    /// `PostCompact`: the summary the agent just wrote.
    #[serde(default)]
    pub compact_summary: Option<String>,
}

impl HookInput {
    /// Parses the JSON an agent writes to the hook's standard input.
    pub fn parse(bytes: &[u8]) -> Result<HookInput, AgentsError> {
        if bytes.len() > MAX_INPUT_BYTES {
            return Err(AgentsError::HookInput(format!(
                "{} bytes, more than the {MAX_INPUT_BYTES} read",
                bytes.len()
            )));
        }
        serde_json::from_slice(bytes).map_err(|e| AgentsError::HookInput(e.to_string()))
    }

    fn transcript(&self) -> Result<&Path, AgentsError> {
        self.transcript_path
            .as_deref()
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| AgentsError::HookInput("no `transcript_path`".to_owned()))
    }
}

/// How the hook runs.
#[derive(Debug, Clone)]
pub struct HookOptions {
    /// The agent.
    pub agent: Agent,
    /// Budget of the added context, in tokens (`o200k_base`).
    pub max_tokens: usize,
    /// Where `PreCompact` saves its checkpoint for the `SessionStart` hook.
    pub state_dir: PathBuf,
    /// `PreToolUse`: how `Bash` commands are wrapped in `compactctl run` (`None`: never).
    pub run: Option<RunHookOptions>,
}

impl HookOptions {
    /// Options with the default budget.
    pub fn new(agent: Agent, state_dir: PathBuf) -> HookOptions {
        HookOptions {
            agent,
            max_tokens: DEFAULT_HOOK_TOKENS,
            state_dir,
            run: None,
        }
    }
}

/// What a hook run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Print this JSON on standard output.
    Emit(String),
    /// Print this JSON on standard output: the memory gate rewrote the command (log the rewrite).
    Gated(String, compact_core::memory::Rewrite),
    /// `PreCompact`: the checkpoint was saved here.
    Saved(PathBuf),
    /// Nothing to do, and why.
    Nothing(&'static str),
}

/// What `PreCompact` leaves for `SessionStart`.
#[derive(Debug, Serialize, Deserialize)]
struct Saved {
    version: u32,
    session_id: String,
    trigger: Option<String>,
    context: String,
    /// Saved by `PostCompact` (only what the agent's summary lacks): preferred over the transcript.
    #[serde(default)]
    after_summary: bool,
}

const STATE_VERSION: u32 = 1;

/// Runs a hook on the input an agent wrote to standard input.
pub fn run(input: &[u8], options: &HookOptions) -> Result<HookOutcome, AgentsError> {
    let input_bytes = input;
    let input = HookInput::parse(input)?;
    match input.hook_event_name.as_str() {
        "SessionStart" if input.source.as_deref() == Some("compact") => {
            session_start(&input, options)
        }
        "SessionStart" => Ok(HookOutcome::Nothing("SessionStart not after a compaction")),
        "PreCompact" => pre_compact(&input, options),
        "PostCompact" => post_compact(&input, options),
        "PreToolUse" => match &options.run {
            Some(run) => {
                let value: serde_json::Value = serde_json::from_slice(input_bytes)
                    .map_err(|e| AgentsError::HookInput(e.to_string()))?;
                Ok(match pretool::pre_tool_use_gated(&value, run)? {
                    (Decision::Rewrite(json), Some(rewrite)) => HookOutcome::Gated(json, rewrite),
                    (Decision::Rewrite(json), None) => HookOutcome::Emit(json),
                    (Decision::Keep(why), _) => HookOutcome::Nothing(why),
                })
            }
            None => Ok(HookOutcome::Nothing("PreToolUse: command rewriting is off")),
        },
        _ => Ok(HookOutcome::Nothing("an event this hook does not act on")),
    }
}

fn session_start(input: &HookInput, options: &HookOptions) -> Result<HookOutcome, AgentsError> {
    let state = state_file(input, options).ok();
    let saved = match &state {
        Some(path) => read_saved(path)?,
        None => None,
    };
    if let Some((context, true)) = &saved {
        // PostCompact already compared the checkpoint with the agent's summary: only what it lacks.
        if let Some(path) = &state {
            remove_saved(path)?;
        }
        return Ok(if context.is_empty() {
            HookOutcome::Nothing("the agent's summary holds everything the checkpoint would add")
        } else {
            HookOutcome::Emit(session_start_output(context))
        });
    }
    let saved = saved.map(|(context, _)| context).filter(|c| !c.is_empty());
    let from_transcript = input
        .transcript()
        .and_then(transcript::load)
        .map(|imported| {
            if !transcript::last_compaction_complete(&imported) {
                return None;
            }
            let dropped = transcript::span(&imported.conversation, Span::LastCompacted);
            hook_context(&dropped, options.max_tokens)
        });
    let context = match (from_transcript, saved) {
        (Ok(Some(context)), _) => Some(context),
        (Ok(None), saved) => saved,
        (Err(_), Some(saved)) => Some(saved),
        (Err(e), None) => return Err(e),
    };
    if let Some(path) = &state {
        remove_saved(path)?;
    }
    Ok(match context {
        Some(context) => HookOutcome::Emit(session_start_output(&context)),
        None => HookOutcome::Nothing("the transcript shows nothing dropped"),
    })
}

fn pre_compact(input: &HookInput, options: &HookOptions) -> Result<HookOutcome, AgentsError> {
    let path = state_file(input, options)?;
    let imported = transcript::load(input.transcript()?)?;
    let visible = transcript::span(&imported.conversation, Span::Visible);
    let Some(context) = hook_context(&visible, options.max_tokens) else {
        return Ok(HookOutcome::Nothing("nothing to summarise"));
    };
    let saved = Saved {
        version: STATE_VERSION,
        session_id: input.session_id.clone().unwrap_or_default(),
        trigger: input.trigger.clone(),
        context,
        after_summary: false,
    };
    write_saved(&path, &saved, options)
}

/// `PostCompact`: the checkpoint of what the compaction dropped, less what the agent's summary
/// (`compact_summary`) already says, saved for the `SessionStart` hook that follows.
fn post_compact(input: &HookInput, options: &HookOptions) -> Result<HookOutcome, AgentsError> {
    let path = state_file(input, options)?;
    let summary = input
        .compact_summary
        .as_deref()
        .ok_or_else(|| AgentsError::HookInput("PostCompact: no `compact_summary`".to_owned()))?;
    let imported = transcript::load(input.transcript()?)?;
    let span = if transcript::last_compaction_complete(&imported) {
        Span::LastCompacted
    } else {
        Span::Visible
    };
    let dropped = transcript::span(&imported.conversation, span);
    let Some(context) = hook_context(&dropped, options.max_tokens) else {
        return Ok(HookOutcome::Nothing("nothing to summarise"));
    };
    // Nothing new: an empty context still replaces what SessionStart would otherwise rebuild.
    let saved = Saved {
        version: STATE_VERSION,
        session_id: input.session_id.clone().unwrap_or_default(),
        trigger: input.trigger.clone(),
        context: only_new(&context, summary).unwrap_or_default(),
        after_summary: true,
    };
    write_saved(&path, &saved, options)
}

fn write_saved(
    path: &Path,
    saved: &Saved,
    options: &HookOptions,
) -> Result<HookOutcome, AgentsError> {
    let text = serde_json::to_string(saved)
        .map_err(|e| AgentsError::HookInput(format!("cannot encode the state: {e}")))?;
    std::fs::create_dir_all(&options.state_dir)
        .map_err(|e| AgentsError::io(&options.state_dir, e))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(|e| AgentsError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| AgentsError::io(path, e))?;
    Ok(HookOutcome::Saved(path.to_path_buf()))
}

/// The documented `SessionStart` output adding `context` to the model's context.
pub fn session_start_output(context: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    })
    .to_string()
}

/// `<state dir>/<session id>.json`; the id must be a plain name (it comes from the agent, but a
/// path separator or `..` in it must never choose where the hook writes).
fn state_file(input: &HookInput, options: &HookOptions) -> Result<PathBuf, AgentsError> {
    let id = input
        .session_id
        .as_deref()
        .ok_or_else(|| AgentsError::HookInput("no `session_id`".to_owned()))?;
    let plain = !id.is_empty()
        && id.chars().count() <= MAX_SESSION_ID_CHARS
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !plain {
        return Err(AgentsError::HookInput(format!(
            "`session_id` is not a plain id (letters, digits, `-`, `_`, at most \
             {MAX_SESSION_ID_CHARS}): {} characters",
            id.chars().count()
        )));
    }
    Ok(options.state_dir.join(format!("{id}.json")))
}

/// The saved context and whether `PostCompact` saved it.
fn read_saved(path: &Path) -> Result<Option<(String, bool)>, AgentsError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(AgentsError::io(path, e)),
    };
    let saved: Saved = serde_json::from_slice(&bytes).map_err(|e| AgentsError::Settings {
        path: path.to_path_buf(),
        reason: format!("not a saved checkpoint: {e}"),
    })?;
    Ok(Some((saved.context, saved.after_summary)))
}

fn remove_saved(path: &Path) -> Result<(), AgentsError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AgentsError::io(path, e)),
    }
}
