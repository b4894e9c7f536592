//! Compaction plans: for each item an [`Action`] (keep, truncate, reference, summarise into the
//! checkpoint, drop), a checkpoint slot when a summary is needed, and per-tier estimates.
//!
//! A plan is data: strategies build it (pure), `compactctl plan` / `diff` print it, and
//! [`Plan::apply`] turns it into the compacted conversation given the checkpoint text. Building,
//! summarising and applying are separate steps so the only async part (the summariser) sits between
//! two pure ones.

mod apply;
mod build;
mod display;
mod reference;
mod shrink;

pub use apply::ApplyError;
pub use build::PlanBuilder;
pub use reference::{
    is_reference, reference_stub, superseded_stub, Supersession, REFERENCE_PREFIX,
};

use crate::model::{Checkpoint, Conversation, Item, ItemBody, ItemId, ItemKind};
use crate::policy::StrategyName;

/// Tokens the checkpoint marker lines add around the checkpoint text (`<compact-checkpoint ...>` and
/// its closing line), so estimates do not undercount.
pub const CHECKPOINT_MARKER_TOKENS: usize = 16;

/// The tiers of the `tiered` strategy (other strategies report the closest tier).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Tier {
    /// The reversible stage (before tier 0): superseded outputs replaced by reference stubs naming
    /// what supersedes them, repeated blocks marked, outputs densified without loss.
    Reversible,
    /// Tier 0: oversized tool outputs truncated (head + tail with a marker).
    Truncate,
    /// Tier 1: old tool outputs replaced by restorable reference stubs.
    Reference,
    /// Tier 2: the remainder summarised into one checkpoint.
    Summarize,
    /// Tier 3: recent turns and tool pairs shrunk towards their floor.
    ShrinkRecent,
    /// Items removed without a summary (deletion, sliding window).
    Drop,
}

impl Tier {
    /// The tier number (drop is reported as 2: it replaces summarisation).
    pub fn number(self) -> u8 {
        match self {
            Tier::Reversible | Tier::Truncate => 0,
            Tier::Reference => 1,
            Tier::Summarize | Tier::Drop => 2,
            Tier::ShrinkRecent => 3,
        }
    }

    /// Short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Reversible => "reversible",
            Tier::Truncate => "truncate",
            Tier::Reference => "reference",
            Tier::Summarize => "summarize",
            Tier::ShrinkRecent => "shrink-recent",
            Tier::Drop => "drop",
        }
    }
}

/// What happens to one item.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Sent unchanged.
    Keep,
    /// Middle-truncated to about `to_tokens` tokens (the replacement is in [`ItemPlan::replacement`]).
    Truncate {
        /// Target size.
        to_tokens: usize,
    },
    /// A tool output rewritten without loss (or with a marker naming what it moved out and where it
    /// is restored from); the replacement is in [`ItemPlan::replacement`].
    Densify {
        /// The densifiers that changed it (`blocks`, `gutter`, `grep`, `columns`, `repeats`, `blob`).
        how: String,
    },
    /// A tool output replaced by a restorable reference stub.
    Reference {
        /// The stub text the model sees.
        stub: String,
    },
    /// Covered by the checkpoint.
    SummarizeInto,
    /// Removed without a summary.
    Drop,
}

impl Action {
    /// Short name for reports (`keep`, `truncate`, `reference`, `summarize`, `drop`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Keep => "keep",
            Action::Truncate { .. } => "truncate",
            Action::Densify { .. } => "densify",
            Action::Reference { .. } => "reference",
            Action::SummarizeInto => "summarize",
            Action::Drop => "drop",
        }
    }

    /// True when the item is still sent (kept, truncated or referenced).
    pub fn is_present(&self) -> bool {
        matches!(
            self,
            Action::Keep
                | Action::Truncate { .. }
                | Action::Densify { .. }
                | Action::Reference { .. }
        )
    }
}

/// The plan for one item.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemPlan {
    /// Index in the input conversation.
    pub index: usize,
    /// Item id.
    pub id: ItemId,
    /// Item kind.
    pub kind: ItemKind,
    /// Tool name for tool calls and results.
    pub tool: Option<String>,
    /// What happens.
    pub action: Action,
    /// The tier that decided a non-keep action.
    pub tier: Option<Tier>,
    /// Tokens before.
    pub tokens_before: usize,
    /// Tokens after (0 when summarised or dropped).
    pub tokens_after: usize,
    /// The replacement item for truncate and reference actions.
    pub replacement: Option<Item>,
}

/// Where the checkpoint goes and what it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointSlot {
    /// Index in the input conversation before which the checkpoint is inserted.
    pub position: usize,
    /// Token budget given to the summariser.
    pub max_tokens: usize,
    /// Tokens the checkpoint is expected to cost (text + marker + framing).
    pub estimated_tokens: usize,
    /// Index of the previous checkpoint being folded in, if any.
    pub previous: Option<usize>,
    /// Generation of the new checkpoint (previous generation + 1).
    pub generation: u32,
    /// Ids of the items it covers (including a folded previous checkpoint).
    pub covers: Vec<ItemId>,
    /// Checkpoint text computed by the strategy itself (deterministic strategies such as `cfpm`); when
    /// present no summariser is called.
    pub fixed_text: Option<String>,
}

/// Where the checkpoint is inserted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// At the first summarised item (keeps the longest unchanged prefix for prompt caches).
    FirstCovered,
    /// After every kept item (Codex: initial context, user messages, then the summary).
    End,
}

/// The estimate after one tier (or step) of a strategy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierEstimate {
    /// The tier.
    pub tier: Tier,
    /// Estimated request tokens after it.
    pub tokens_after: usize,
    /// Items it changed.
    pub items: usize,
    /// A short note (e.g. `recent turns 6 -> 3`).
    pub note: String,
}

/// A compaction plan for one conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The strategy that built it.
    pub strategy: StrategyName,
    /// One entry per input item, in order.
    pub items: Vec<ItemPlan>,
    /// The checkpoint slot, when the plan summarises.
    pub checkpoint: Option<CheckpointSlot>,
    /// Estimates after each tier that ran, in order.
    pub tiers: Vec<TierEstimate>,
    /// Tokens of the input request.
    pub tokens_before: usize,
    /// Tokens of the request outside the items (tools, framing).
    pub overhead: usize,
    /// The target the strategy aimed at.
    pub target: usize,
    /// The usable budget.
    pub usable: usize,
    /// Remarks (e.g. target not reached but within budget).
    pub notes: Vec<String>,
}

impl Plan {
    /// Estimated tokens of the compacted request.
    pub fn estimated_after(&self) -> usize {
        self.overhead
            + self.items.iter().map(|i| i.tokens_after).sum::<usize>()
            + self.checkpoint.as_ref().map_or(0, |c| c.estimated_tokens)
    }

    /// Tokens the reversible stage removed on its own (its estimate against the input; 0 when it did
    /// not run or changed nothing).
    pub fn reversible_saved(&self) -> usize {
        self.tiers
            .iter()
            .rfind(|t| t.tier == Tier::Reversible)
            .map_or(0, |t| self.tokens_before.saturating_sub(t.tokens_after))
    }

    /// True when applying the plan needs checkpoint text.
    pub fn needs_summary(&self) -> bool {
        self.checkpoint.is_some()
    }

    /// The same plan changing nothing (every item kept, no checkpoint), with `note` saying why.
    #[must_use]
    pub fn into_noop(mut self, note: impl Into<String>) -> Plan {
        for item in &mut self.items {
            item.action = Action::Keep;
            item.tier = None;
            item.tokens_after = item.tokens_before;
            item.replacement = None;
        }
        self.checkpoint = None;
        self.tiers.clear();
        self.notes.push(note.into());
        self
    }

    /// True when the plan changes nothing.
    pub fn is_noop(&self) -> bool {
        self.checkpoint.is_none() && self.items.iter().all(|i| i.action == Action::Keep)
    }

    /// The tier numbers whose actions appear in the plan, ascending and unique.
    pub fn tiers_applied(&self) -> Vec<u8> {
        let mut t: Vec<u8> = self
            .items
            .iter()
            .filter_map(|i| i.tier.map(Tier::number))
            .collect();
        if self.tiers.iter().any(|e| e.tier == Tier::ShrinkRecent) {
            t.push(Tier::ShrinkRecent.number());
        }
        t.sort_unstable();
        t.dedup();
        t
    }

    /// The items the summariser must summarise (covered items, without the folded previous checkpoint).
    pub fn summary_items(&self, conv: &Conversation) -> Vec<Item> {
        let previous = self.checkpoint.as_ref().and_then(|c| c.previous);
        self.items
            .iter()
            .filter(|p| p.action == Action::SummarizeInto && Some(p.index) != previous)
            .filter_map(|p| conv.items.get(p.index).cloned())
            .collect()
    }

    /// The previous checkpoint folded in, if any.
    pub fn previous_checkpoint(&self, conv: &Conversation) -> Option<Checkpoint> {
        let idx = self.checkpoint.as_ref()?.previous?;
        let item = conv.items.get(idx)?;
        match item.body() {
            ItemBody::Checkpoint(c) => Some(c.clone()),
            other => {
                let text = match other {
                    ItemBody::Message(m) => m
                        .parts
                        .iter()
                        .filter_map(|p| p.as_text())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                Checkpoint::from_wire_text(text.trim_start())
            }
        }
    }

    /// Counts of actions: (keep, truncate, reference, summarize, drop, densify).
    pub fn action_counts(&self) -> [usize; 6] {
        let mut c = [0usize; 6];
        for i in &self.items {
            let k = match i.action {
                Action::Keep => 0,
                Action::Truncate { .. } => 1,
                Action::Densify { .. } => 5,
                Action::Reference { .. } => 2,
                Action::SummarizeInto => 3,
                Action::Drop => 4,
            };
            c[k] += 1;
        }
        c
    }
}
