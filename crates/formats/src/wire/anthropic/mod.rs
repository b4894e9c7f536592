//! Anthropic Messages requests: `{model, system, messages[], tools[], max_tokens, ...}`.
//!
//! One wire message becomes one item per run of its content: consecutive text / image / document
//! blocks form a [`Message`](compact_core::model::Message) item; each `tool_use`, `tool_result`,
//! `thinking`, server tool block and checkpoint text becomes its own item; all share the message's
//! envelope. `system` becomes a system item whose envelope slot is `"system"`; a message with role
//! `system` (Claude Code sends one after the first user message) becomes a system item at its place.

mod blocks;
mod decode;
mod encode;
mod parts;

pub use decode::decode_message;
pub(crate) use decode::decode_request;
pub(crate) use encode::encode_request;
pub use encode::LEADING_USER_TEXT;
