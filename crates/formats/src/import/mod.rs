//! Transcript import (read-only): agent session files and plain wire-format JSON/JSONL files become a
//! [`Conversation`].
//!
//! [`import`] reads one file, detecting its format ([`detect`]) unless [`ImportOptions::format`] names
//! it. A truncated or malformed line or record is an [`ImportError`] naming file, line, column and byte
//! offset; in [`ImportMode::Lenient`] it becomes an [`ImportWarning`] with the same location and the
//! record is skipped. No input makes an importer panic.
//!
//! Decisions per format (what the model saw is the conversation; everything else is counted in
//! [`ImportStats`] or kept as items the model does not see):
//!
//! - **Claude Code** ([`claude_code`]): `user`/`assistant` records decode as Anthropic messages; the
//!   records of one API response (same `message.id`) share one envelope and are kept together even when
//!   tool results were logged between them. Item ids are record `uuid`s (`uuid.k` when a record yields
//!   several items). `isMeta` records are model-visible but hidden from the user. `isSidechain` records
//!   (a subagent's own context window) are left out and counted as skipped `sidechain` records, except
//!   in a subagent's own file (every message record a sidechain), which imports whole and sets
//!   [`ImportStats::subagent`]. A `compact_boundary` system record hides every earlier item from the
//!   model (they stay in the log) and the following `isCompactSummary` record becomes a
//!   [`Checkpoint`](compact_core::model::Checkpoint) covering them. `summary` titles, progress records
//!   and other `system` notices are skipped (counted). Records form a tree by `parentUuid`: the model
//!   saw the active branch to the latest message plus the sibling records of parallel tool calls;
//!   other records stay in the log, hidden from the model.
//! - **Codex rollout** ([`codex`]): the `response_item` payloads, decoded as Responses items, are the
//!   conversation (ids `L<line>`). `session_meta.base_instructions` becomes the system item (the
//!   `instructions` field the CLI sends); `session_meta.instructions` is not added because the rollout
//!   also records it as a user message. `ghost_snapshot` items are kept opaque and hidden from the model.
//!   `event_msg` `turn_aborted` becomes an opaque item labelled `turn_aborted`, hidden from the model,
//!   that the engine can pin (the model never saw the abort in these files). `compacted` with a
//!   `replacement_history` hides every earlier item and adds the replacement items, its summary message
//!   as a checkpoint; without one (older CLIs, which rebuilt the history from the user messages and the
//!   summary) earlier user messages stay visible and the rest is hidden. A tool output is an error when its exit code is non-zero
//!   (`Exit code: N`, `metadata.exit_code`, `Process exited with code N`) or it reports a rejected,
//!   sandbox-failed or unverifiable command.
//! - **SWE-agent** ([`swe_agent`]): `history[]` is the conversation. Function-calling runs give real tool
//!   calls and results. Older runs put the command in a fenced block of the assistant text and the
//!   observation in the next user message: the importer synthesises a custom tool call (id
//!   `swe-h<index>`, arguments = the `action`) and turns the observation into its result, and removes
//!   the command block from the assistant text, so pairing works and nothing is counted twice. The file
//!   reports no errors of its own (observations carry no status), so SWE-agent imports count none.
//! - **OpenHands** ([`openhands`]): actions with `tool_call_metadata` are tool calls (their `thought` an
//!   assistant message before them), observations with it are results (`error` observations and non-zero
//!   exit codes set `is_error`). An `error` observation without a call is a user message (that is how the
//!   agent shows it to the model) and counts as an error. Legacy events without ids pair each action
//!   with the next observation (ids `oh-<index>`). Bookkeeping events (agent state, `null`
//!   observations, recall requests) are skipped; recall observations are kept opaque. An evaluation
//!   JSONL with several instances becomes one conversation, ids prefixed `r<k>.`.
//! - **aider** ([`aider`]): `#### ` lines are user messages, other text is the assistant, `> ` lines are
//!   aider's console output: kept as opaque `aider_output` items hidden from the model (aider never sends
//!   them). `# aider chat started at` lines open sessions (counted, no item). Failed model calls
//!   (`> litellm.<Name>Error: ...`) count as errors.
//! - **ATIF** ([`atif`], Harbor / Terminal-Bench `trajectory.json`): each step is a system, user or
//!   assistant message by `source` (string or, since v1.6, text/image parts); an agent step's
//!   `reasoning_content` becomes a reasoning item and its `tool_calls` function calls, all sharing
//!   one envelope. Its `observation.results` answer its calls by `source_call_id`, else in order;
//!   when a step has fewer unlabelled results than open calls (Terminus-2 records one terminal screen
//!   per batch of keystrokes) the results answer the last calls and the earlier ones get an empty
//!   result. A result with no call (feedback on a step without calls, system-step observations) is a
//!   user message. A result is an error only when it says so (`is_error`, a non-zero `exit_code` /
//!   `returncode`, mini-swe-agent's `<returncode>N</returncode>`): ATIF has no status of its own.
//!   Ids are `s<step_id>`; `agent.model_name` and `agent.tool_definitions` become the request's
//!   `model` and tools; unknown fields of calls, results and parts are kept in their `extra`, per-step
//!   metrics and run metadata are not carried.
//! - **Wire files** ([`wire_file`]): a request object, a JSON array of messages/items, one message or
//!   item, or JSONL with one message/item per line, decoded by [`crate::wire`].

pub mod aider;
pub mod atif;
pub mod claude_code;
pub mod codex;
mod detect;
mod error;
pub mod openhands;
mod source;
pub mod swe_agent;
pub mod wire_file;

pub use detect::{detect, detect_messages};
pub use error::{ImportError, ImportWarning, Location};

use compact_core::model::{Conversation, Format, Item};
use source::Ctx;
use std::collections::BTreeMap;

/// What to do with a malformed record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImportMode {
    /// Fail with an [`ImportError`] naming the place.
    #[default]
    Strict,
    /// Skip the record and record an [`ImportWarning`].
    Lenient,
}

/// Options of [`import`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ImportOptions {
    /// The format, or `None` to detect it.
    pub format: Option<Format>,
    /// Strict or lenient.
    pub mode: ImportMode,
}

/// What the source file said, besides the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImportStats {
    /// Records read: non-blank JSONL lines, events or history entries of a JSON file, text blocks of
    /// an aider history.
    pub records_read: usize,
    /// Well-formed records that produced no item (kinds the model never sees), see `skipped_kinds`.
    pub records_skipped: usize,
    /// Malformed records skipped in lenient mode (each has a warning).
    pub records_malformed: usize,
    /// Skipped records by kind (`event_msg:token_count`, `sidechain`, `summary`, ...).
    pub skipped_kinds: BTreeMap<String, usize>,
    /// Errors the source reports: failed tool calls (for plain wire files: results flagged as
    /// errors), error observations, API error messages.
    pub errors: usize,
    /// Sessions in the file (aider histories and OpenHands evaluation files hold several; others 1).
    pub sessions: usize,
    /// Compactions recorded in the source.
    pub compactions: usize,
    /// Items hidden from the model because their record is not on the conversation's active branch
    /// (Claude Code: abandoned after the user rewound and edited an earlier message).
    pub off_branch_items: usize,
    /// The file is a subagent's own transcript (Claude Code: every message record is a sidechain,
    /// as in `<session>/subagents/agent-*.jsonl`).
    pub subagent: bool,
}

/// The result of an import.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The conversation (items hidden from the model stay in it with `visibility.model == false`).
    pub conversation: Conversation,
    /// The format read.
    pub format: Format,
    /// Problems stepped over and remarks.
    pub warnings: Vec<ImportWarning>,
    /// What the source said.
    pub stats: ImportStats,
}

/// Imports one file. `file_name` is used in messages and as a detection hint (its extension).
pub fn import(
    bytes: &[u8],
    file_name: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    if source::strip_bom(bytes).iter().all(u8::is_ascii_whitespace) {
        return Err(ImportError::Empty {
            file: file_name.to_owned(),
        });
    }
    if let Some(e) = not_text(bytes, file_name) {
        return Err(e);
    }
    let format = match options.format {
        Some(f) => f,
        None => match detect(bytes, file_name) {
            Some(f) => f,
            None => return Err(undetected(bytes, file_name)),
        },
    };
    let mut ctx = Ctx::new(file_name, options.mode);
    let mut conversation = match format {
        Format::ClaudeCode => claude_code::import(bytes, &mut ctx)?,
        Format::CodexRollout => codex::import(bytes, &mut ctx)?,
        Format::SweAgent => swe_agent::import(bytes, &mut ctx)?,
        Format::OpenHands => openhands::import(bytes, &mut ctx)?,
        Format::Aider => aider::import(bytes, &mut ctx)?,
        Format::Atif => atif::import(bytes, &mut ctx)?,
        Format::OpenAiChat | Format::OpenAiResponses | Format::Anthropic => {
            wire_file::import(bytes, format, &mut ctx)?
        }
        Format::Native => {
            return Err(ImportError::Unsupported {
                file: file_name.to_owned(),
                format,
            })
        }
    };
    conversation.format = Some(format);
    if !conversation.items.iter().any(|i| i.meta.visibility.model) {
        return Err(ImportError::NothingVisible {
            file: file_name.to_owned(),
            format,
            reason: nothing_visible_reason(&ctx.stats, conversation.items.len()),
        });
    }
    crate::wire::resolve_tool_names(&mut conversation);
    conversation.make_ids_unique();
    conversation.renumber_turns();
    if ctx.stats.sessions == 0 {
        ctx.stats.sessions = 1;
    }
    Ok(Imported {
        conversation,
        format,
        warnings: ctx.warnings,
        stats: ctx.stats,
    })
}

/// Why an import produced nothing the model would see, from what was read.
fn nothing_visible_reason(stats: &ImportStats, items: usize) -> String {
    let mut reason = format!("{} records read", stats.records_read);
    if stats.records_malformed > 0 {
        reason.push_str(&format!(", {} malformed", stats.records_malformed));
    }
    if stats.records_skipped > 0 {
        let kinds: Vec<String> = stats
            .skipped_kinds
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        reason.push_str(&format!(
            ", {} skipped ({})",
            stats.records_skipped,
            kinds.join(", ")
        ));
    }
    if items > 0 {
        reason.push_str(&format!(
            ", {items} items hidden from the model (before a compaction or off the active branch)"
        ));
    }
    reason
}

/// Why `bytes` cannot be a file of any import format, whatever the format named: UTF-16 text (a byte
/// order mark) or binary data (a NUL byte, which no JSON or text transcript holds raw), with the place.
fn not_text(bytes: &[u8], file_name: &str) -> Option<ImportError> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Some(ImportError::Malformed {
            at: Location::at_offset(file_name, bytes, 0),
            what: format!(
                "UTF-16 text (byte order mark {:02X} {:02X}): every input format is UTF-8; convert the file",
                bytes[0], bytes[1]
            ),
        });
    }
    let nul = bytes.iter().position(|&b| b == 0)?;
    Some(ImportError::Malformed {
        at: Location::at_offset(file_name, bytes, nul),
        what: "binary data (a NUL byte): every input format is UTF-8 text".to_owned(),
    })
}

/// The error for a file whose format was not recognised: invalid UTF-8 at its place, the JSON syntax
/// error when it looks like broken JSON (so a truncated file says where it breaks), else
/// [`ImportError::UnknownFormat`].
fn undetected(bytes: &[u8], file_name: &str) -> ImportError {
    if let Err(e) = std::str::from_utf8(bytes) {
        let at = e.valid_up_to();
        return ImportError::Malformed {
            at: Location::at_offset(file_name, bytes, at),
            what: format!(
                "invalid UTF-8 (byte 0x{:02X}): every input format is UTF-8 text",
                bytes[at]
            ),
        };
    }
    let body = source::strip_bom(bytes);
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | b'[')) {
        let mut ctx = Ctx::new(file_name, ImportMode::Strict);
        // A document that parses is valid JSON of an unknown shape. Otherwise: when the first line is
        // a JSON value of its own the file is JSONL, so report its first broken line; else report the
        // document's syntax error.
        if let Err(doc_err) = ctx.parse_document(bytes) {
            let jsonl = source::lines(bytes)
                .find(|l| !l.is_blank())
                .is_some_and(|l| serde_json::from_slice::<serde_json::Value>(l.bytes).is_ok());
            if !jsonl {
                return doc_err;
            }
            for line in source::lines(bytes) {
                if let Err(e) = ctx.parse_line(&line) {
                    return e;
                }
            }
        }
    }
    ImportError::UnknownFormat {
        file: file_name.to_owned(),
    }
}

/// Sets the metadata every importer sets on an item it produced.
pub(crate) fn stamp(item: &mut Item, id: String, timestamp: Option<&str>, origin: Format) {
    item.meta.id = compact_core::model::ItemId::new(id);
    item.meta.timestamp = timestamp.map(str::to_owned);
    item.meta.origin = Some(origin);
}

/// The ids of a record's items: `base` when it yields one item, `base.k` when it yields several.
pub(crate) fn item_ids(base: &str, count: usize) -> Vec<String> {
    if count == 1 {
        vec![base.to_owned()]
    } else {
        (0..count).map(|k| format!("{base}.{k}")).collect()
    }
}
