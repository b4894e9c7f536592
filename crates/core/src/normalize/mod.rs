//! Normalisation: repairs a conversation so a provider accepts it, before anything is emitted.
//!
//! Architecture invariant: normalisation never fails. It returns the repaired conversation and one
//! typed [`Diagnostic`] per repair. After [`normalize`]:
//!
//! - every tool call has exactly one result (a synthetic "interrupted, no output recorded" result is
//!   inserted, with the deterministic id `synthetic-<call_id>`, when none was recorded);
//! - every result answers a call that precedes it (results without a call, and second results for an
//!   answered call, are removed);
//! - call ids are unique (a reused id gets a fresh `<id>-<n>` suffix, and the results that answer it follow);
//! - results sit where the provider wants them ([`ProviderRules`]);
//! - reasoning / thinking items are never modified or reordered, and assistant items keep their order;
//! - server tool pairs ([`crate::model::ToolCallKind::Server`]) stay together: the result right after its call;
//! - under Anthropic rules, what comes before the last provider `compaction` block is hidden from
//!   the model (the provider ignores it or refuses it, see [`crate::provider`]); provider
//!   compactions themselves are never moved or changed.
//!
//! Normalising a normalised conversation yields zero diagnostics (idempotence), and
//! [`diagnose`] reports exactly the diagnostics [`normalize`] would return.
//!
//! Only model-visible items take part: items hidden from the model (recorded history behind a
//! compaction, abandoned branches) are neither repaired nor answered, and stay where they were,
//! before the visible item that followed them. A call hidden from the model is not in the request,
//! so it gets no synthetic result, and a visible result of a hidden call is an orphan.

mod diagnostic;
mod repair;

pub use diagnostic::Diagnostic;

use crate::model::{Conversation, Format, Item, ItemId};
use std::collections::{HashMap, HashSet};

/// Where a provider requires tool results to be placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderRules {
    /// Anthropic Messages: the results answering an assistant message's `tool_use` blocks come in the
    /// next user message, before any other user content. Consecutive assistant items form one turn
    /// (the API merges consecutive same-role messages).
    Anthropic,
    /// OpenAI Chat Completions: the `tool` messages follow the assistant message holding the
    /// `tool_calls`, before any other message. Items from different wire messages (by envelope) are
    /// different assistant messages.
    OpenAiChat,
    /// OpenAI Responses: a `function_call_output` comes after its `function_call`; results already
    /// after their call are left where they are.
    OpenAiResponses,
}

impl ProviderRules {
    /// The rules of the wire format a conversation in `format` is sent in (transcripts map to their
    /// provider's format, see [`Format::wire_target`]).
    pub fn for_format(format: Format) -> ProviderRules {
        match format.wire_target() {
            Format::Anthropic => ProviderRules::Anthropic,
            Format::OpenAiResponses => ProviderRules::OpenAiResponses,
            _ => ProviderRules::OpenAiChat,
        }
    }

    /// True when results must come right after their call's assistant turn (not merely after the call).
    pub(crate) fn results_follow_turn(self) -> bool {
        matches!(self, ProviderRules::Anthropic | ProviderRules::OpenAiChat)
    }

    /// True when assistant items from different wire messages are separate turns.
    pub(crate) fn split_turns_by_envelope(self) -> bool {
        matches!(self, ProviderRules::OpenAiChat)
    }
}

/// A normalised conversation and the repairs that produced it.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The repaired conversation (tools, format and extra fields unchanged).
    pub conversation: Conversation,
    /// One entry per repair, in a deterministic order (renames, removals, then placements and
    /// insertions in output order). Empty when the input was already valid.
    pub diagnostics: Vec<Diagnostic>,
}

/// Text of a synthetic result inserted for a call whose output was never recorded.
pub const SYNTHETIC_RESULT_TEXT: &str =
    "Tool call interrupted: no output was recorded for this call. It may not have run or may not have completed.";

/// Prefix of synthetic result ids (`synthetic-<call_id>`).
pub const SYNTHETIC_ID_PREFIX: &str = "synthetic-";

/// Repairs `conv` for `rules`. Never fails; see the module documentation for the guarantees.
pub fn normalize(conv: &Conversation, rules: &ProviderRules) -> Normalized {
    let (hidden, mut diagnostics) = hide_superseded(conv, *rules);
    let items = hidden.as_ref().map_or(&conv.items, |c| &c.items);
    let (items, repairs) = repair_visible(items, *rules);
    diagnostics.extend(repairs);
    let conversation = Conversation {
        items,
        tools: conv.tools.clone(),
        format: conv.format,
        extra: conv.extra.clone(),
    };
    Normalized {
        conversation,
        diagnostics,
    }
}

/// The repairs [`normalize`] would make, without keeping the repaired conversation. Empty means valid.
pub fn diagnose(conv: &Conversation, rules: &ProviderRules) -> Vec<Diagnostic> {
    let (hidden, mut diagnostics) = hide_superseded(conv, *rules);
    let items = hidden.as_ref().map_or(&conv.items, |c| &c.items);
    diagnostics.extend(repair_visible(items, *rules).1);
    diagnostics
}

/// Under Anthropic rules, the items before the last Anthropic `compaction` block hidden from the
/// model (see [`crate::provider::superseded`]): the conversation with them hidden when there were
/// any, and the diagnostic saying so.
fn hide_superseded(
    conv: &Conversation,
    rules: ProviderRules,
) -> (Option<Conversation>, Vec<Diagnostic>) {
    if rules != ProviderRules::Anthropic {
        return (None, Vec::new());
    }
    let superseded =
        crate::provider::superseded(conv, Some(crate::model::CompactionWire::AnthropicBlock));
    let Some(last) = crate::provider::last_compaction(conv).filter(|_| !superseded.is_empty())
    else {
        return (None, Vec::new());
    };
    let diagnostic = Diagnostic::HidSupersededByProviderCompaction {
        compaction: conv.items[last].meta.id.clone(),
        items: superseded.len(),
    };
    (
        Some(crate::provider::hide(conv.clone(), &superseded)),
        vec![diagnostic],
    )
}

/// Repairs the model-visible items of `items` and puts the hidden ones back: each run of hidden
/// items goes before the visible item that followed it in the input (or the next one that survived
/// the repair), a trailing run at the end.
fn repair_visible(items: &[Item], rules: ProviderRules) -> (Vec<Item>, Vec<Diagnostic>) {
    if items.iter().all(|i| i.meta.visibility.model) {
        return repair::repair(items.to_vec(), rules);
    }
    let visible: Vec<Item> = items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .cloned()
        .collect();
    let (repaired, diagnostics) = repair::repair(visible, rules);
    let survivors: HashSet<&ItemId> = repaired.iter().map(|i| &i.meta.id).collect();
    let mut runs: HashMap<ItemId, Vec<Item>> = HashMap::new();
    let mut pending: Vec<Item> = Vec::new();
    for item in items {
        if !item.meta.visibility.model {
            pending.push(item.clone());
        } else if !pending.is_empty() && survivors.contains(&item.meta.id) {
            runs.entry(item.meta.id.clone())
                .or_default()
                .append(&mut pending);
        }
    }
    let mut out = Vec::with_capacity(repaired.len() + items.len());
    for item in repaired {
        if let Some(run) = runs.remove(&item.meta.id) {
            out.extend(run);
        }
        out.push(item);
    }
    out.extend(pending);
    (out, diagnostics)
}
