//! `compactctl mcp`: an MCP server over stdio or streamable HTTP ([`http`]) that lets the agent look at everything its own
//! compaction removed.
//!
//! Tools (module [`server`]):
//! - `recall(reference, cursor?)`: the original content of one item, by the id a checkpoint, a
//!   truncation marker or a reference stub names (or a `search_history` result gives);
//! - `search_history(query, limit?, cursor?)`: BM25-ranked search over the whole session log, the
//!   items compaction hid included ([`search`]), with snippets and item ids;
//! - `context_status()`: tokens the model sees now, the window, the next compaction threshold;
//! - `checkpoint(max_tokens?)`: Compact's deterministic checkpoint of the whole log (what
//!   compaction hid included, the agent's own summaries left out);
//! - `memory(all?, cursor?)`: the facts remembered for the session (constraints, decisions, file
//!   states, dependencies, errors) with the item ids they came from: the runtime's memory of a
//!   store session that keeps one, else the facts read from the whole log.
//!
//! Every result is at most [`MAX_RESULT_CHARS`] characters; a longer one ends with a `next_cursor`
//! to pass back. A malformed call (a missing or mistyped argument, an unknown tool, a bad cursor)
//! is an MCP error; an unknown reference is a tool error the model can read; nothing panics.
//!
//! Where the session comes from ([`source::Source`]): a transcript file, the agent's latest session
//! for a directory (resolved again on every call, so the server follows the session it serves), or
//! a session in Compact's store.

pub mod http;
pub mod page;
pub mod search;
pub mod server;
pub mod source;
pub mod usage;

/// Longest tool result, in characters (about 3k tokens): a model reads it whole without crowding
/// its window; more comes with a cursor.
pub const MAX_RESULT_CHARS: usize = 12_000;

/// Default and largest `limit` of `search_history`.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
/// Largest `limit` of `search_history`.
pub const MAX_SEARCH_LIMIT: usize = 50;

/// Default and largest budget of the `checkpoint` tool, in tokens.
pub const DEFAULT_CHECKPOINT_TOKENS: usize = 3_000;
/// Largest budget of the `checkpoint` tool, in tokens.
pub const MAX_CHECKPOINT_TOKENS: usize = 20_000;
