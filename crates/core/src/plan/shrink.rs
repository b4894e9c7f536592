//! Middle-truncation of one item for a plan: the adapter between plans and [`crate::truncate`] (tool
//! outputs through `truncate_item`; user and assistant messages through `truncate_output` on their
//! joined text, media parts kept).

use crate::model::{Item, ItemBody, Part, PartKind};
use crate::tokens::TokenCounter;
use crate::truncate::{truncate_item, truncate_output, TruncationMode, TruncationPolicy};

/// `item` middle-truncated to at most `to_tokens` tokens of text, or `None` when it has no text to cut
/// or already fits. The limit is exact (no serialisation buffer: callers pass scaled limits).
pub(super) fn shrink_item(
    item: &Item,
    to_tokens: usize,
    head_fraction: f64,
    counter: &TokenCounter,
) -> Option<Item> {
    let policy = TruncationPolicy {
        mode: TruncationMode::Tokens(to_tokens),
        serialization_buffer: 1.0,
        head_fraction,
        keep_error_lines: true,
    };
    match item.body() {
        ItemBody::ToolResult(_) => truncate_item(item, &policy, counter),
        ItemBody::Message(m) => {
            let texts: Vec<&str> = m.parts.iter().filter_map(Part::as_text).collect();
            if texts.is_empty() {
                return None;
            }
            let outcome = truncate_output(&texts.join("\n"), &policy, counter, &item.meta.id);
            if !outcome.changed {
                return None;
            }
            let mut msg = m.clone();
            let mut placed = false;
            let mut parts = Vec::with_capacity(msg.parts.len());
            for part in msg.parts.drain(..) {
                if let PartKind::Text(_) = part.kind {
                    if !placed {
                        placed = true;
                        parts.push(Part {
                            kind: PartKind::Text(outcome.text.clone()),
                            extra: part.extra,
                        });
                    }
                } else {
                    parts.push(part);
                }
            }
            msg.parts = parts;
            let mut copy = item.clone();
            copy.set_body(ItemBody::Message(msg));
            Some(copy)
        }
        _ => None,
    }
}
