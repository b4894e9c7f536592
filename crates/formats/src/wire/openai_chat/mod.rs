//! OpenAI Chat Completions requests: `{model, messages[], tools[], ...}`.
//!
//! A message becomes one item, except an assistant message, which becomes a message item for its
//! `content` (when present) plus one tool call item per `tool_calls` entry (and one for a legacy
//! `function_call`), all sharing the message's envelope. `tool` and legacy `function` messages become
//! tool results; a legacy call and its `function` result have the empty call id.

mod decode;
mod encode;
pub(crate) mod parts;

pub use decode::decode_message;
pub(crate) use decode::decode_request;
pub(crate) use encode::encode_request;
