//! Provider-side compaction, as the rest of the core sees it: whether a conversation is the
//! provider's own compaction call (which Compact never compacts), where the last provider compaction
//! is, and what before it the provider already ignores (the cheapest thing to drop, at no loss).
//!
//! The rules (see `docs/design/provider-compaction.md`):
//! - a conversation whose last model-visible item is a Responses `compaction_trigger`, or whose
//!   request carries a top-level Anthropic `compaction` field, is a compaction call: it goes to the
//!   provider as it is;
//! - an Anthropic server ignores every block before the last `compaction` block (threshold mode) or
//!   refuses any (on-demand mode): everything before it is superseded;
//! - an OpenAI client may drop the items before the latest `compaction` item, except what the
//!   compact endpoint returns beside it: the run of user messages right before it is kept;
//! - system and developer messages are never superseded (they are the request's instructions).

use crate::model::{CompactionWire, Conversation, Item, ItemBody, Role};

/// Top-level request field of an Anthropic on-demand compaction call (`compaction: {type:
/// "summarize"}`).
pub const ANTHROPIC_COMPACTION_FIELD: &str = "compaction";

/// Why a conversation is the provider's own compaction call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactionCall {
    /// The last input item is a Responses `compaction_trigger` (the in-band trigger).
    InBandTrigger,
    /// The request carries a top-level Anthropic `compaction` field (on-demand mode).
    Summarize,
}

impl CompactionCall {
    /// Short name for reports and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            CompactionCall::InBandTrigger => "compaction_trigger",
            CompactionCall::Summarize => "compaction",
        }
    }
}

/// The provider compaction of an item, if it is one.
fn compaction_of(item: &Item) -> Option<CompactionWire> {
    match item.body() {
        ItemBody::ProviderCompaction(p) => Some(p.wire()),
        _ => None,
    }
}

/// Whether `conv` is a provider compaction call, and which.
pub fn compaction_call(conv: &Conversation) -> Option<CompactionCall> {
    let last_visible = conv.items.iter().rev().find(|i| i.meta.visibility.model);
    if last_visible.and_then(compaction_of) == Some(CompactionWire::OpenAiTrigger) {
        return Some(CompactionCall::InBandTrigger);
    }
    conv.extra
        .get(ANTHROPIC_COMPACTION_FIELD)
        .is_some_and(|v| !v.is_null())
        .then_some(CompactionCall::Summarize)
}

/// Index of the last model-visible provider compaction (a block or an item, never a trigger).
pub fn last_compaction(conv: &Conversation) -> Option<usize> {
    conv.items.iter().rposition(|i| {
        i.meta.visibility.model
            && matches!(
                compaction_of(i),
                Some(CompactionWire::AnthropicBlock | CompactionWire::OpenAiItem)
            )
    })
}

/// True for an item that is never superseded: a system or developer message.
fn is_instruction(item: &Item) -> bool {
    matches!(item.body(), ItemBody::Message(m) if matches!(m.role, Role::System | Role::Developer))
}

/// True for a real user message (what the compact endpoint returns beside its compaction item).
fn is_user_message(item: &Item) -> bool {
    matches!(item.body(), ItemBody::Message(m) if m.role == Role::User)
}

/// Indices of the model-visible items before the last provider compaction that the provider no
/// longer needs (see the module documentation), ascending. `only` restricts the answer to one wire
/// shape of the last compaction (`None`: either).
pub fn superseded(conv: &Conversation, only: Option<CompactionWire>) -> Vec<usize> {
    let Some(last) = last_compaction(conv) else {
        return Vec::new();
    };
    let Some(wire) = compaction_of(&conv.items[last]) else {
        return Vec::new();
    };
    if only.is_some_and(|o| o != wire) {
        return Vec::new();
    }
    let mut end = last;
    if wire == CompactionWire::OpenAiItem {
        // The compact endpoint's output is `[user messages..., compaction]`, used as it is.
        while end > 0 {
            let prev = &conv.items[end - 1];
            if !prev.meta.visibility.model || is_user_message(prev) {
                end -= 1;
            } else {
                break;
            }
        }
    }
    (0..end)
        .filter(|&i| {
            let item = &conv.items[i];
            item.meta.visibility.model && !is_instruction(item)
        })
        .collect()
}

/// `conv` with the items at `indices` hidden from the model (kept in place, as history behind a
/// compaction is).
pub fn hide(mut conv: Conversation, indices: &[usize]) -> Conversation {
    for &i in indices {
        if let Some(item) = conv.items.get_mut(i) {
            item.meta.visibility.model = false;
        }
    }
    conv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ProviderCompaction;
    use serde_json::json;

    fn block(content: &str) -> Item {
        Item::new(ItemBody::ProviderCompaction(ProviderCompaction::new(
            CompactionWire::AnthropicBlock,
            json!({"type": "compaction", "content": content}),
        )))
    }

    fn item(wire: CompactionWire) -> Item {
        Item::new(ItemBody::ProviderCompaction(ProviderCompaction::new(
            wire,
            json!({"type": wire.type_tag(), "encrypted_content": "e"}),
        )))
    }

    fn conv(items: Vec<Item>) -> Conversation {
        let mut c = Conversation::default();
        c.extend_unique(items);
        c
    }

    #[test]
    fn anthropic_blocks_supersede_everything_before_the_last_but_instructions() {
        let c = conv(vec![
            Item::text(Role::System, "sys"),
            Item::text(Role::User, "u1"),
            block("first"),
            Item::text(Role::User, "u2"),
            block("second"),
            Item::text(Role::User, "u3"),
        ]);
        assert_eq!(last_compaction(&c), Some(4));
        assert_eq!(superseded(&c, None), vec![1, 2, 3]);
        assert_eq!(
            superseded(&c, Some(CompactionWire::OpenAiItem)),
            Vec::<usize>::new()
        );
        let hidden = hide(c, &[1, 2, 3]);
        assert_eq!(superseded(&hidden, None), Vec::<usize>::new());
    }

    #[test]
    fn openai_items_keep_the_user_messages_the_compact_endpoint_returns() {
        let c = conv(vec![
            Item::text(Role::Developer, "dev"),
            Item::text(Role::User, "u1"),
            Item::text(Role::Assistant, "a1"),
            Item::text(Role::User, "u2"),
            Item::text(Role::User, "u3"),
            item(CompactionWire::OpenAiItem),
            Item::text(Role::User, "u4"),
        ]);
        assert_eq!(superseded(&c, None), vec![1, 2]);
    }

    #[test]
    fn a_trigger_is_a_call_and_a_historical_compaction_is_not() {
        let mut c = conv(vec![
            Item::text(Role::User, "u1"),
            item(CompactionWire::OpenAiItem),
            Item::text(Role::User, "u2"),
        ]);
        assert_eq!(compaction_call(&c), None);
        assert_eq!(last_compaction(&c), Some(1));
        c.push(item(CompactionWire::OpenAiTrigger));
        assert_eq!(compaction_call(&c), Some(CompactionCall::InBandTrigger));
        let mut a = conv(vec![Item::text(Role::User, "u1")]);
        a.extra
            .insert("compaction".into(), json!({"type": "summarize"}));
        assert_eq!(compaction_call(&a), Some(CompactionCall::Summarize));
    }
}
