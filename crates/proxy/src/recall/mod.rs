//! Recall in band: when a request the proxy sends upstream holds a reference (a compaction's
//! `[compact:ref <id>]` stub, a truncation or densifier marker naming `recall <id>`), the proxy
//! offers the model a `compact_recall` tool ([`tool`]), and when the model's reply is nothing but
//! calls of it ([`reply`] for a whole reply, [`sniff`] for a stream), the proxy answers them from
//! the session log, appends the model's turn and the answers to the request and sends it again:
//! a detour the client never sees.
//!
//! Invariants:
//! - the tool is added only to a request that Compact changed (compacted, or cut at write time)
//!   and that holds a reference, at most once, never when the client has a tool of the same name,
//!   and the client's own tools and `tool_choice` are left as they are (a request sent as the
//!   client made it goes out byte for byte, whatever markers its tool outputs hold);
//! - it answers the ids of the session's log and of the outputs `compactctl run` kept
//!   ([`crate::KeptOutputs`]: the client's own session id, then the configured sessions);
//! - a reply with text or any other tool call is the client's: it is forwarded as it came, even
//!   when it also calls `compact_recall`;
//! - detours are bounded ([`crate::RecallConfig::max_detours`]); past the bound the request goes
//!   out as it was prepared, without the tool, and its reply goes to the client whatever it is;
//! - a detour request is never larger than the proxy's own request limit: an original that would
//!   take it past is answered with an error result saying so.

pub mod detour;
pub mod reply;
pub mod sniff;
pub mod tool;

use compact_core::model::{Arguments, Conversation, ItemBody, Part};
use compact_core::plan::REFERENCE_PREFIX;
use serde_json::Value;

pub use reply::{RecallCall, RecallTurn};

/// The tool's name.
pub const TOOL_NAME: &str = "compact_recall";

/// Texts that show an item names a reference: a compaction's stub, a truncation marker
/// (`compactctl recall <id>`) and the ``recall `<id>` `` a stub or a densifier's marker ends with.
pub const REFERENCE_MARKERS: [&str; 3] = [REFERENCE_PREFIX, "compactctl recall ", "recall `"];

/// Whether some item of `conversation` names a reference the model could recall.
pub fn holds_reference(conversation: &Conversation) -> bool {
    conversation.items.iter().any(|item| {
        let parts: &[Part] = match item.body() {
            ItemBody::ToolResult(r) => &r.parts,
            ItemBody::Message(m) => &m.parts,
            ItemBody::Checkpoint(c) => return names_reference(&c.text),
            // An edit whose replaced text the reversible stage cut names the call's id.
            ItemBody::ToolCall(c) => return arguments_name_reference(&c.arguments),
            _ => return false,
        };
        parts.iter().filter_map(Part::as_text).any(names_reference)
    })
}

/// Whether a string of `arguments` names a reference: read in place, since every call of every
/// request is looked at and serialising large arguments (a written file) would cost more.
fn arguments_name_reference(arguments: &Arguments) -> bool {
    fn any_string(v: &Value) -> bool {
        match v {
            Value::String(s) => names_reference(s),
            Value::Array(items) => items.iter().any(any_string),
            Value::Object(map) => map.values().any(any_string),
            _ => false,
        }
    }
    match arguments {
        Arguments::Text(t) => names_reference(t),
        Arguments::Json(v) => any_string(v),
    }
}

/// Whether `text` holds one of the [`REFERENCE_MARKERS`].
pub fn names_reference(text: &str) -> bool {
    REFERENCE_MARKERS.iter().any(|m| text.contains(m))
}

/// How one `compact_recall` call was answered (the metrics' `outcome` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The original was returned.
    Found,
    /// The session knows no item by that id.
    NotFound,
    /// The call had no usable `id` argument.
    Invalid,
    /// The original would take the request past the proxy's limit.
    TooLarge,
    /// The session log could not be read.
    Error,
}

impl Outcome {
    /// The label value.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Found => "found",
            Outcome::NotFound => "not_found",
            Outcome::Invalid => "invalid",
            Outcome::TooLarge => "too_large",
            Outcome::Error => "error",
        }
    }
}

/// The answer to one call: the tool result's text, and whether it reports an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The call it answers.
    pub call_id: String,
    /// The original output, or what went wrong.
    pub text: String,
    /// Set for every outcome but [`Outcome::Found`].
    pub is_error: bool,
}

impl Answer {
    /// The original output of `id`, unchanged.
    pub fn found(call_id: &str, text: String) -> Answer {
        Answer {
            call_id: call_id.to_owned(),
            text,
            is_error: false,
        }
    }

    /// An error result for `outcome` (anything but found).
    pub fn failed(call_id: &str, id: Option<&str>, outcome: Outcome, detail: &str) -> Answer {
        let id = id.unwrap_or("");
        let text = match outcome {
            Outcome::Invalid => format!(
                "compact_recall needs an `id` argument: the id a `[compact:ref <id>]` stub or a \
                 `recall <id>` marker shows. {detail}"
            ),
            Outcome::NotFound => format!(
                "No output with id `{id}` is kept for this conversation. Use the id exactly as a \
                 `[compact:ref <id>]` stub or a `recall <id>` marker shows it."
            ),
            Outcome::TooLarge => format!(
                "The original output `{id}` is too large to return here ({detail}). Re-run the \
                 tool with a narrower scope if you need part of it."
            ),
            Outcome::Error | Outcome::Found => {
                format!("The original output `{id}` could not be read right now. {detail}")
            }
        };
        Answer {
            call_id: call_id.to_owned(),
            text,
            is_error: true,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_core::model::{Item, ToolResult};

    #[test]
    fn a_reference_is_found_in_stubs_and_markers_only() {
        let mut conversation = Conversation::default();
        let plain = Item::new(ItemBody::ToolResult(ToolResult::text("c1", "all fine")));
        conversation.items.push(plain);
        assert!(!holds_reference(&conversation));
        let stub = "[compact:ref i0123456789] Output of `read` moved out; recall `i0123456789`.";
        conversation
            .items
            .push(Item::new(ItemBody::ToolResult(ToolResult::text(
                "c2", stub,
            ))));
        assert!(holds_reference(&conversation));
        assert!(names_reference(
            "[… 40 lines truncated; full output: compactctl recall i1]"
        ));
        assert!(!names_reference("nothing to see"));
    }

    #[test]
    fn a_tool_call_whose_text_was_cut_names_a_reference() {
        use compact_core::model::ToolCall;
        let call = |old: &str| {
            let args =
                serde_json::json!({"file_path": "a.rs", "old_string": old, "new_string": "x"});
            let mut conversation = Conversation::default();
            conversation
                .items
                .push(Item::new(ItemBody::ToolCall(ToolCall::function(
                    "c1", "Edit", args,
                ))));
            conversation
        };
        assert!(!holds_reference(&call("fn a() {}")));
        let cut = "fn a() {\n…[compact: 40 lines (900 characters) cut; compactctl recall i1]";
        assert!(holds_reference(&call(cut)));
    }
}
