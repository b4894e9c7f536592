//! [`Diagnostic`]: what normalisation found and repaired, one typed value per repair.

use crate::model::ItemId;
use std::fmt;

/// One repair made (or, from [`super::diagnose`], needed) to make a conversation valid for a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Diagnostic {
    /// A tool call had no result: a synthetic "interrupted, no output recorded" result was inserted.
    InsertedSyntheticResult {
        /// The call id that was unanswered.
        call_id: String,
        /// The tool call item.
        call_item: ItemId,
        /// Id of the inserted result item.
        result_item: ItemId,
    },
    /// A tool result answered no call in the conversation and was removed.
    RemovedOrphanResult {
        /// The call id it claimed to answer.
        call_id: String,
        /// The removed item.
        item: ItemId,
    },
    /// A second result for an already answered call was removed.
    RemovedDuplicateResult {
        /// The call id.
        call_id: String,
        /// The removed item.
        item: ItemId,
    },
    /// A result was moved to where the provider requires it (right after its call's assistant turn).
    MovedResult {
        /// The call id.
        call_id: String,
        /// The moved result item.
        item: ItemId,
        /// The item it now follows.
        after: ItemId,
    },
    /// A tool call reused the call id of an earlier call; it was given a fresh id.
    RenamedDuplicateCall {
        /// The call item.
        item: ItemId,
        /// Its id on the wire.
        old_call_id: String,
        /// Its new id.
        new_call_id: String,
    },
    /// A result that answered a renamed call was given the call's new id.
    RelinkedResult {
        /// The result item.
        item: ItemId,
        /// Its call id before.
        old_call_id: String,
        /// Its call id now.
        new_call_id: String,
    },
    /// Items before the last Anthropic `compaction` block were hidden from the model: the provider
    /// ignores them (threshold mode) or refuses the request while they are there (on-demand mode).
    HidSupersededByProviderCompaction {
        /// The compaction block item.
        compaction: ItemId,
        /// How many items were hidden.
        items: usize,
    },
}

impl Diagnostic {
    /// A short stable name for the kind of repair (for reports and counters).
    pub fn code(&self) -> &'static str {
        match self {
            Diagnostic::InsertedSyntheticResult { .. } => "inserted_synthetic_result",
            Diagnostic::RemovedOrphanResult { .. } => "removed_orphan_result",
            Diagnostic::RemovedDuplicateResult { .. } => "removed_duplicate_result",
            Diagnostic::MovedResult { .. } => "moved_result",
            Diagnostic::RenamedDuplicateCall { .. } => "renamed_duplicate_call",
            Diagnostic::RelinkedResult { .. } => "relinked_result",
            Diagnostic::HidSupersededByProviderCompaction { .. } => {
                "hid_superseded_by_provider_compaction"
            }
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Diagnostic::InsertedSyntheticResult { call_id, call_item, result_item } => write!(
                f,
                "tool call `{call_id}` ({call_item}) had no result: inserted synthetic result {result_item}"
            ),
            Diagnostic::RemovedOrphanResult { call_id, item } => {
                write!(f, "tool result {item} answers no call (`{call_id}`): removed")
            }
            Diagnostic::RemovedDuplicateResult { call_id, item } => {
                write!(f, "tool result {item} is a second answer to `{call_id}`: removed")
            }
            Diagnostic::MovedResult { call_id, item, after } => {
                write!(f, "tool result {item} for `{call_id}` moved to follow {after}")
            }
            Diagnostic::RenamedDuplicateCall { item, old_call_id, new_call_id } => {
                write!(f, "tool call {item} reused id `{old_call_id}`: renamed to `{new_call_id}`")
            }
            Diagnostic::RelinkedResult { item, old_call_id, new_call_id } => {
                write!(f, "tool result {item} relinked from `{old_call_id}` to renamed call `{new_call_id}`")
            }
            Diagnostic::HidSupersededByProviderCompaction { compaction, items } => {
                write!(f, "{items} item(s) before the provider's compaction block {compaction} hidden: the provider no longer reads them")
            }
        }
    }
}
