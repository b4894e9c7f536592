//! OpenAI Responses requests: `{model, instructions, input: string | item[], tools[], ...}`.
//!
//! Every input item becomes exactly one item: messages (long form `{type: "message", ...}` or short
//! form `{role, content}`), function / custom / local shell calls and their outputs, reasoning. Any
//! other item type (`compaction`, `item_reference`, `web_search_call`, ...) is carried untouched as
//! an opaque item. `instructions` becomes a system item whose envelope slot is `"instructions"`; a
//! plain-string `input` a user item whose slot is `"input"`.

mod decode;
mod encode;
mod parts;

pub use decode::decode_item;
pub(crate) use decode::decode_request;
pub(crate) use encode::encode_request;
