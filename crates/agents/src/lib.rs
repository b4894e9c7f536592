//! Agent integrations of Compact.
//!
//! Claude Code and Codex summarise their own conversations when the window fills. Their summaries
//! keep the files and the requests but lose the failed approaches and their error lines, so agents
//! try again what already failed. This crate adds exactly that back, and gives the agent a way to
//! look at everything its compaction removed:
//!
//! - [`hook`]: `compactctl hook claude-code|codex`, run by the agent's `SessionStart` (source
//!   `compact`) and `PreCompact` hooks: Compact's deterministic checkpoint of what the compaction
//!   dropped, within a token budget, as the hook output the agent documents.
//! - [`install`]: `compactctl install` / `uninstall`: the hook and the MCP server merged into the
//!   agent's settings (never overwriting, idempotent, a diff for `--dry-run`, removed exactly).
//! - [`run`] and [`pretool`]: `compactctl run`, a command's output cut to a token budget for the
//!   agent with the full output kept for recall, and the Claude Code `PreToolUse` hook that wraps
//!   `Bash` commands in it.
//! - [`mcp`]: `compactctl mcp`, an MCP server over stdio or streamable HTTP (the official `rmcp`
//!   SDK) with `recall`, `search_history`, `context_status` and `checkpoint` over a session's full
//!   history, read from a transcript or from Compact's session store.
//!
//! Nothing here compacts: the checkpoint is `compact_core::checkpoint`, transcripts are read by
//! `compact_formats::import`, sessions by `compact_session`.

pub mod checkpoint;
pub mod error;
pub mod hook;
pub mod install;
pub mod log;
pub mod mcp;
pub mod pretool;
pub mod run;
pub mod transcript;

pub use error::AgentsError;
