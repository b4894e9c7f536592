//! [`PlanBuilder`]: the mutable helper strategies use to assign actions, keep running estimates and
//! place the checkpoint, before freezing everything into a [`Plan`].

use super::reference::{is_reference, reference_stub, superseded_stub, with_stub, Supersession};
use super::{
    Action, CheckpointSlot, ItemPlan, Placement, Plan, Tier, TierEstimate, CHECKPOINT_MARKER_TOKENS,
};
use crate::budget::Budget;
use crate::model::{Conversation, ItemBody};
use crate::partition::{is_checkpoint, Survey};
use crate::policy::StrategyName;
use crate::tokens::TokenCounter;

/// Builds a [`Plan`] item by item. Every item starts as [`Action::Keep`].
#[derive(Debug, Clone)]
pub struct PlanBuilder<'a> {
    conv: &'a Conversation,
    survey: &'a Survey,
    counter: &'a TokenCounter,
    head_fraction: f64,
    plan: Plan,
    /// Positions of each tool call id, ascending; built on the first reference (so a turn of N
    /// parallel calls costs N lookups, not N backward scans).
    calls: Option<std::collections::HashMap<&'a str, Vec<usize>>>,
}

impl<'a> PlanBuilder<'a> {
    /// A plan keeping every item of `conv`.
    pub fn new(
        strategy: StrategyName,
        conv: &'a Conversation,
        survey: &'a Survey,
        budget: &Budget,
        counter: &'a TokenCounter,
        head_fraction: f64,
    ) -> Self {
        let items = conv
            .items
            .iter()
            .enumerate()
            .map(|(index, item)| ItemPlan {
                index,
                id: item.meta.id.clone(),
                kind: item.kind(),
                tool: match item.body() {
                    ItemBody::ToolCall(c) => Some(c.name.clone()),
                    ItemBody::ToolResult(r) => r.tool_name.clone(),
                    _ => None,
                },
                action: Action::Keep,
                tier: None,
                tokens_before: survey.tokens[index],
                tokens_after: survey.tokens[index],
                replacement: None,
            })
            .collect();
        PlanBuilder {
            conv,
            survey,
            counter,
            head_fraction,
            calls: None,
            plan: Plan {
                strategy,
                items,
                checkpoint: None,
                tiers: Vec::new(),
                tokens_before: survey.total(),
                overhead: survey.overhead,
                target: budget.target,
                usable: budget.usable,
                notes: Vec::new(),
            },
        }
    }

    /// The conversation being planned.
    pub fn conversation(&self) -> &'a Conversation {
        self.conv
    }

    /// The survey of the conversation.
    pub fn survey(&self) -> &'a Survey {
        self.survey
    }

    /// The current action of item `idx`.
    pub fn action(&self, idx: usize) -> &Action {
        &self.plan.items[idx].action
    }

    /// Tokens item `idx` costs with its current action.
    pub fn tokens_after(&self, idx: usize) -> usize {
        self.plan.items[idx].tokens_after
    }

    /// Estimated request tokens with the actions assigned so far.
    pub fn estimate(&self) -> usize {
        self.plan.estimated_after()
    }

    /// True when the plan so far changes nothing.
    pub fn is_noop(&self) -> bool {
        self.plan.is_noop()
    }

    /// True when the plan has a checkpoint slot.
    pub fn has_checkpoint(&self) -> bool {
        self.plan.checkpoint.is_some()
    }

    /// Tokens the checkpoint slot is estimated to cost (0 without one).
    pub fn checkpoint_tokens(&self) -> usize {
        self.plan
            .checkpoint
            .as_ref()
            .map_or(0, |c| c.estimated_tokens)
    }

    /// Resets item `idx` to keep.
    pub fn keep(&mut self, idx: usize) {
        let p = &mut self.plan.items[idx];
        p.action = Action::Keep;
        p.tier = None;
        p.tokens_after = p.tokens_before;
        p.replacement = None;
    }

    /// Marks item `idx` as covered by the checkpoint.
    pub fn summarize(&mut self, idx: usize, tier: Tier) {
        self.set_absent(idx, Action::SummarizeInto, tier);
    }

    /// Marks item `idx` as dropped.
    pub fn drop_item(&mut self, idx: usize, tier: Tier) {
        self.set_absent(idx, Action::Drop, tier);
    }

    fn set_absent(&mut self, idx: usize, action: Action, tier: Tier) {
        let p = &mut self.plan.items[idx];
        p.action = action;
        p.tier = Some(tier);
        p.tokens_after = 0;
        p.replacement = None;
    }

    /// Middle-truncates item `idx` to about `to_tokens`; returns the tokens saved (0 when the item is
    /// not text or already fits, in which case it is left unchanged).
    pub fn truncate(&mut self, idx: usize, to_tokens: usize, tier: Tier) -> usize {
        // A densified output is cut from its dense form.
        let item = match (
            &self.plan.items[idx].action,
            &self.plan.items[idx].replacement,
        ) {
            (Action::Densify { .. }, Some(dense)) => dense,
            _ => &self.conv.items[idx],
        };
        let before = self.plan.items[idx].tokens_after;
        let Some(replacement) =
            super::shrink::shrink_item(item, to_tokens, self.head_fraction, self.counter)
        else {
            return 0;
        };
        let after = self.counter.count_item(&replacement);
        if after >= before {
            return 0;
        }
        self.assign(
            idx,
            Action::Truncate { to_tokens },
            tier,
            replacement,
            after,
        );
        before - after
    }

    /// Replaces the tool result `idx` by a reference stub; returns the tokens saved (0 and unchanged
    /// when it is not a tool result, is already a stub, or the stub would not be smaller).
    pub fn reference(&mut self, idx: usize, tier: Tier) -> usize {
        self.reference_as(idx, tier, None)
    }

    /// Replaces the tool result `idx`, which `superseded` says a newer item supersedes, by a stub
    /// naming that item; returns the tokens saved (see [`PlanBuilder::reference`]).
    pub fn reference_superseded(
        &mut self,
        idx: usize,
        tier: Tier,
        superseded: Supersession<'_>,
    ) -> usize {
        self.reference_as(idx, tier, Some(superseded))
    }

    /// Replaces item `idx` (still sent as it is) by `replacement` with `action`, when that is
    /// smaller; returns the tokens saved.
    pub fn rewrite(
        &mut self,
        idx: usize,
        replacement: crate::model::Item,
        action: Action,
        tier: Tier,
    ) -> usize {
        let before = self.plan.items[idx].tokens_after;
        if self.plan.items[idx].action != Action::Keep {
            return 0;
        }
        let after = self.counter.count_item(&replacement);
        if after >= before {
            return 0;
        }
        self.assign(idx, action, tier, replacement, after);
        before - after
    }

    /// Sets item `idx` to be sent as `replacement` (`after` tokens) by `action` of `tier`.
    fn assign(
        &mut self,
        idx: usize,
        action: Action,
        tier: Tier,
        replacement: crate::model::Item,
        after: usize,
    ) {
        let p = &mut self.plan.items[idx];
        p.action = action;
        p.tier = Some(tier);
        p.tokens_after = after;
        p.replacement = Some(replacement);
    }

    fn reference_as(
        &mut self,
        idx: usize,
        tier: Tier,
        superseded: Option<Supersession<'_>>,
    ) -> usize {
        let item = &self.conv.items[idx];
        if item.as_tool_result().is_none() || is_reference(item) {
            return 0;
        }
        let call_id = item
            .as_tool_result()
            .map(|r| r.call_id.as_str())
            .unwrap_or_default();
        let conv = self.conv;
        let calls = self.calls.get_or_insert_with(|| {
            let mut map: std::collections::HashMap<&'a str, Vec<usize>> =
                std::collections::HashMap::new();
            for (i, item) in conv.items.iter().enumerate() {
                if let Some(c) = item.as_tool_call() {
                    map.entry(c.call_id.as_str()).or_default().push(i);
                }
            }
            map
        });
        // The latest call with this id before the result.
        let call = calls
            .get(call_id)
            .and_then(|at| at[..at.partition_point(|&i| i < idx)].last())
            .and_then(|&i| conv.items[i].as_tool_call());
        let before = self.plan.items[idx].tokens_before;
        let stub = match superseded {
            Some(s) => superseded_stub(call, item, before, s),
            None => reference_stub(call, item, before),
        };
        let replacement = with_stub(item, &stub);
        let after = self.counter.count_item(&replacement);
        if after >= before {
            return 0;
        }
        let saved = self.plan.items[idx].tokens_after.saturating_sub(after);
        self.assign(idx, Action::Reference { stub }, tier, replacement, after);
        saved
    }

    /// Records the estimate after a tier.
    pub fn record(&mut self, tier: Tier, items: usize, note: impl Into<String>) {
        let tokens_after = self.estimate();
        self.plan.tiers.push(TierEstimate {
            tier,
            tokens_after,
            items,
            note: note.into(),
        });
    }

    /// Adds a remark to the plan.
    pub fn note(&mut self, note: impl Into<String>) {
        self.plan.notes.push(note.into());
    }

    /// Removes the checkpoint slot (the summarised items stay marked).
    pub fn clear_checkpoint(&mut self) {
        self.plan.checkpoint = None;
    }

    /// When some item is to be summarised, marks every earlier checkpoint still present (and not
    /// pinned) summarised too, so the new checkpoint folds it in. Call it before sizing the new
    /// checkpoint: what it folds counts in the budget (else a record of many items is squeezed into
    /// the budget of the few new ones). [`PlanBuilder::place_checkpoint`] calls it as well.
    pub fn fold_checkpoints(&mut self, tier: Tier) {
        if !self
            .plan
            .items
            .iter()
            .any(|p| p.action == Action::SummarizeInto)
        {
            return;
        }
        for idx in 0..self.plan.items.len() {
            if self.is_foldable(idx) {
                self.summarize(idx, tier);
            }
        }
    }

    /// True for an earlier checkpoint, present and not pinned, that a new checkpoint would fold in.
    pub fn is_foldable(&self, idx: usize) -> bool {
        is_checkpoint(&self.conv.items[idx])
            && self.survey.pins[idx].is_none()
            && self.plan.items[idx].action.is_present()
    }

    /// Places the checkpoint for every item marked [`Action::SummarizeInto`], folding in every previous
    /// checkpoint (checkpoints are never stacked). `max_tokens` is the summariser's budget. Does
    /// nothing when no item is summarised.
    pub fn place_checkpoint(&mut self, max_tokens: usize, tier: Tier, placement: Placement) {
        let n = self.plan.items.len();
        if !self
            .plan
            .items
            .iter()
            .any(|p| p.action == Action::SummarizeInto)
        {
            self.plan.checkpoint = None;
            return;
        }
        self.fold_checkpoints(tier);
        let covered: Vec<usize> = (0..n)
            .filter(|&i| self.plan.items[i].action == Action::SummarizeInto)
            .collect();
        let previous = covered
            .iter()
            .rev()
            .copied()
            .find(|&i| is_checkpoint(&self.conv.items[i]));
        let generation = previous
            .and_then(|i| match self.conv.items[i].body() {
                ItemBody::Checkpoint(c) => Some(c.generation),
                ItemBody::Message(m) => m
                    .parts
                    .first()
                    .and_then(|p| p.as_text())
                    .and_then(|t| crate::model::Checkpoint::from_wire_text(t.trim_start()))
                    .map(|c| c.generation),
                _ => None,
            })
            .map_or(1, |g| g.saturating_add(1));
        let position = match placement {
            Placement::FirstCovered => self.safe_position(covered.first().copied().unwrap_or(0)),
            Placement::End => n,
        };
        let estimated_tokens =
            max_tokens + CHECKPOINT_MARKER_TOKENS + self.counter.framing().per_message as usize;
        self.plan.checkpoint = Some(CheckpointSlot {
            position,
            max_tokens,
            estimated_tokens,
            previous,
            generation,
            covers: covered
                .iter()
                .map(|&i| self.conv.items[i].meta.id.clone())
                .collect(),
            fixed_text: None,
        });
    }

    /// Moves `pos` forward until no present unit spans across it (a call and its result, or the items
    /// of one wire message, are never separated by the checkpoint).
    fn safe_position(&self, mut pos: usize) -> usize {
        let units = &self.survey.units;
        loop {
            let spanning = (pos..units.len())
                .filter(|&j| units[j] < pos && self.plan.items[j].action.is_present())
                .max();
            match spanning {
                Some(j) => pos = j + 1,
                None => return pos,
            }
        }
    }

    /// Sets the checkpoint's estimate to `tokens` of text (used when the real summary size is known).
    pub fn set_checkpoint_tokens(&mut self, tokens: usize) {
        let extra = CHECKPOINT_MARKER_TOKENS + self.counter.framing().per_message as usize;
        if let Some(c) = self.plan.checkpoint.as_mut() {
            c.estimated_tokens = tokens + extra;
        }
    }

    /// Gives the checkpoint a text computed by the strategy (no summariser call); its estimate becomes
    /// the text's exact size.
    pub fn set_checkpoint_text(&mut self, text: String) {
        let tokens = self.counter.count_text(&text);
        if let Some(c) = self.plan.checkpoint.as_mut() {
            c.fixed_text = Some(text);
            c.max_tokens = tokens;
        }
        self.set_checkpoint_tokens(tokens);
    }

    /// Freezes the plan.
    pub fn finish(self) -> Plan {
        self.plan
    }
}
