//! Partition of a conversation into pinned, recent, kept-user and eligible items.
//!
//! A [`Survey`] measures a conversation once (token count per item, turns, atomic units, what pins
//! each item); [`Partition::of`] then classifies the items for given recent-turn and tool-pair counts.
//! Tier 3 re-partitions with smaller counts without measuring again.
//!
//! Atomic units: a tool call and its result, the items of one wire message (same envelope), and a
//! reasoning item with the assistant item that follows it always share one fate: all present or all
//! absent. A unit is present when any member must be.

use crate::budget::Limits;
use crate::model::{Conversation, Item, ItemBody, PartKind, Role, CHECKPOINT_OPEN};
use crate::policy::Policy;
use crate::tokens::TokenCounter;
use std::sync::Arc;

/// Markers of an interrupted turn (Codex writes `<turn_aborted>`; seed 000 spells `<turn-aborted>`).
pub const TURN_ABORTED_MARKERS: [&str; 2] = ["<turn_aborted>", "<turn-aborted>"];
/// A boundary user message is kept (middle-truncated) only if at least this many tokens remain for it;
/// a shorter cut keeps too little to be useful.
pub const MIN_BOUNDARY_TOKENS: usize = 32;
/// Recent assistant messages kept per recent turn: agent loops post many short assistant messages in
/// one turn, so recency counts the last two per turn rather than the whole turn.
pub const ASSISTANT_MESSAGES_PER_RECENT_TURN: usize = 2;

/// The opening user message (with the items of its wire message) is pinned while it takes at most
/// this share of the window (`max_context_tokens / OPENING_PIN_SHARE`): agents put their own
/// instructions there (Claude Code's `<system-reminder>` blocks: agent types, deferred tools, skills,
/// memory files; the Codex CLI's environment context), and the task as first given is what every
/// later turn serves. A larger opening is treated as any user message.
pub const OPENING_PIN_SHARE: usize = 8;

/// Why an item is pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinReason {
    /// Its role is never pruned.
    Role(Role),
    /// Flagged protected.
    Protected,
    /// The latest call to, or result of, a protected tool.
    ProtectedTool(String),
    /// An interrupted-turn marker.
    TurnAborted,
    /// Not sent to the model (hidden items are never touched).
    Hidden,
    /// A provider's own compaction (or trigger): opaque, checked byte for byte by the provider.
    ProviderCompaction,
    /// The conversation's opening user message: what an agent puts first (its reminders, memory
    /// files, environment) and the task as first given ([`OPENING_PIN_SHARE`]).
    Opening,
}

/// The class of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Never pruned, truncated or summarised.
    Pinned(PinReason),
    /// A recent assistant message.
    Recent,
    /// One of the recent tool call/result pairs.
    RecentTool,
    /// A user message within the user-message budget; `Some(n)` when it is the boundary message,
    /// middle-truncated to `n` tokens.
    User(Option<usize>),
    /// A previous checkpoint (folded into the next one).
    Checkpoint,
    /// Eligible for references, summarisation or removal.
    Eligible,
}

impl Class {
    /// True when the class forces its unit to stay present.
    pub fn requires_presence(&self) -> bool {
        !matches!(self, Class::Eligible | Class::Checkpoint)
    }
}

/// Per-item measurements of a conversation, made once.
#[derive(Debug, Clone)]
pub struct Survey {
    /// Tokens of each item (0 for items hidden from the model).
    pub tokens: Vec<usize>,
    /// Turn of each item (a turn opens at each real user message).
    pub turns: Vec<u32>,
    /// Unit of each item (the index of the unit's first item).
    pub units: Vec<usize>,
    /// Pin reason of each item, if pinned.
    pub pins: Vec<Option<PinReason>>,
    /// Tool units (call+result, or a lone call or result) by first index, oldest first.
    pub tool_units: Vec<Vec<usize>>,
    /// Tokens of the request outside the items (tool declarations, request framing).
    pub overhead: usize,
}

/// True for a real user message (not a checkpoint, not tool output).
pub fn is_user_message(item: &Item) -> bool {
    matches!(item.body(), ItemBody::Message(m) if m.role == Role::User) && !is_checkpoint(item)
}

/// True for a checkpoint item, or a user message carrying the checkpoint marker.
pub fn is_checkpoint(item: &Item) -> bool {
    match item.body() {
        ItemBody::Checkpoint(_) => true,
        ItemBody::Message(m) if m.role == Role::User => m
            .parts
            .first()
            .and_then(|p| p.as_text())
            .is_some_and(|t| t.trim_start().starts_with(CHECKPOINT_OPEN)),
        _ => false,
    }
}

fn is_turn_aborted(item: &Item) -> bool {
    let ItemBody::Message(m) = item.body() else {
        return false;
    };
    m.parts.iter().any(|p| match &p.kind {
        PartKind::Text(t) => TURN_ABORTED_MARKERS.iter().any(|mk| t.contains(mk)),
        _ => false,
    })
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
        parent[hi] = lo;
    }
}

impl Survey {
    /// Measures `conv` under `policy`.
    pub fn of(conv: &Conversation, policy: &Policy, counter: &TokenCounter) -> Survey {
        let items = &conv.items;
        let n = items.len();
        let tokens: Vec<usize> = items
            .iter()
            .map(|i| {
                if i.meta.visibility.model {
                    counter.count_item(i)
                } else {
                    0
                }
            })
            .collect();
        let mut turns = Vec::with_capacity(n);
        let mut turn = 0u32;
        for (idx, item) in items.iter().enumerate() {
            if idx > 0 && is_user_message(item) {
                turn += 1;
            }
            turns.push(turn);
        }
        let pairing = conv.pairing();
        let mut parent: Vec<usize> = (0..n).collect();
        for &(c, r) in &pairing.pairs {
            union(&mut parent, c, r);
        }
        for idx in 1..n {
            let same_envelope = match (&items[idx - 1].meta.envelope, &items[idx].meta.envelope) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                _ => false,
            };
            let reasoning_leads = matches!(items[idx - 1].body(), ItemBody::Reasoning(_))
                && matches!(
                    items[idx].body(),
                    ItemBody::ToolCall(_) | ItemBody::Reasoning(_)
                )
                || matches!(items[idx - 1].body(), ItemBody::Reasoning(_))
                    && matches!(items[idx].body(), ItemBody::Message(m) if m.role == Role::Assistant);
            if same_envelope || reasoning_leads {
                union(&mut parent, idx - 1, idx);
            }
        }
        let units: Vec<usize> = (0..n).map(|i| find(&mut parent, i)).collect();

        let mut pins: Vec<Option<PinReason>> = items
            .iter()
            .map(|item| {
                if !item.meta.visibility.model {
                    Some(PinReason::Hidden)
                } else if matches!(item.body(), ItemBody::ProviderCompaction(_)) {
                    Some(PinReason::ProviderCompaction)
                } else if item.is_protected(&policy.protected_flag) {
                    Some(PinReason::Protected)
                } else if matches!(item.body(), ItemBody::Message(_))
                    && policy.is_role_pinned(item.role())
                {
                    Some(PinReason::Role(item.role()))
                } else if is_turn_aborted(item) {
                    Some(PinReason::TurnAborted)
                } else {
                    None
                }
            })
            .collect();
        pin_opening(items, &units, &tokens, policy, &mut pins);
        let mut tool_units: Vec<Vec<usize>> = Vec::new();
        // Only the latest call of each protected tool is pinned: a newer todo list supersedes the older
        // ones, which would otherwise accumulate without bound.
        let mut latest: std::collections::HashMap<&str, (usize, usize)> =
            std::collections::HashMap::new();
        for &(c, r) in &pairing.pairs {
            tool_units.push(vec![c, r]);
            if let Some(call) = items[c].as_tool_call() {
                if policy.is_tool_protected(&call.name) {
                    latest.insert(call.name.as_str(), (c, r));
                }
            }
        }
        // A flagged call or result pins its partner: a pair is kept or removed whole.
        for &(c, r) in &pairing.pairs {
            if pins[c] == Some(PinReason::Protected) || pins[r] == Some(PinReason::Protected) {
                for i in [c, r] {
                    if pins[i].is_none() {
                        pins[i] = Some(PinReason::Protected);
                    }
                }
            }
        }
        for (name, (c, r)) in latest {
            pins[c] = Some(PinReason::ProtectedTool(name.to_owned()));
            pins[r] = Some(PinReason::ProtectedTool(name.to_owned()));
        }
        for &i in pairing.orphan_calls.iter().chain(&pairing.orphan_results) {
            tool_units.push(vec![i]);
            let name = match items[i].body() {
                ItemBody::ToolCall(c) => Some(c.name.as_str()),
                ItemBody::ToolResult(r) => r.tool_name.as_deref(),
                _ => None,
            };
            if let Some(name) = name.filter(|n| policy.is_tool_protected(n)) {
                pins[i] = Some(PinReason::ProtectedTool(name.to_owned()));
            }
        }
        tool_units.sort_unstable_by_key(|u| u[0]);
        let item_tokens: usize = tokens.iter().sum();
        let overhead = counter.total(conv).saturating_sub(item_tokens);
        Survey {
            tokens,
            turns,
            units,
            pins,
            tool_units,
            overhead,
        }
    }

    /// Total tokens of the request.
    pub fn total(&self) -> usize {
        self.overhead + self.tokens.iter().sum::<usize>()
    }
}

/// Pins the opening user message's unit ([`PinReason::Opening`]) when it is small enough.
fn pin_opening(
    items: &[Item],
    units: &[usize],
    tokens: &[usize],
    policy: &Policy,
    pins: &mut [Option<PinReason>],
) {
    let Some(first) = items
        .iter()
        .position(|it| it.meta.visibility.model && is_user_message(it))
    else {
        return;
    };
    let unit = units[first];
    let members = || (0..items.len()).filter(move |&i| units[i] == unit);
    let size: usize = members().map(|i| tokens[i]).sum();
    if size > policy.max_context_tokens / OPENING_PIN_SHARE {
        return;
    }
    for i in members() {
        if pins[i].is_none() {
            pins[i] = Some(PinReason::Opening);
        }
    }
}

/// How many recent turns and tool pairs a partition keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recency {
    /// Recent turns.
    pub turns: usize,
    /// Recent tool call/result pairs.
    pub tool_pairs: usize,
}

impl Recency {
    /// The policy's counts.
    pub fn of(policy: &Policy) -> Recency {
        Recency {
            turns: policy.keep_recent_turns,
            tool_pairs: policy.keep_tool_io_pairs,
        }
    }
}

/// The classification of every item of a conversation.
#[derive(Debug, Clone)]
pub struct Partition {
    /// Class of each item.
    pub classes: Vec<Class>,
    /// Whether each item must stay present (its unit holds a non-eligible item).
    pub present: Vec<bool>,
    /// The recency used.
    pub recency: Recency,
}

impl Partition {
    /// Classifies the items of `conv` (measured by `survey`).
    pub fn of(
        conv: &Conversation,
        survey: &Survey,
        limits: &Limits,
        recency: Recency,
    ) -> Partition {
        let items = &conv.items;
        let n = items.len();
        let mut classes: Vec<Class> = (0..n)
            .map(|i| match &survey.pins[i] {
                Some(p) => Class::Pinned(p.clone()),
                None if is_checkpoint(&items[i]) => Class::Checkpoint,
                None => Class::Eligible,
            })
            .collect();

        // Recent tool pairs: the last K tool units.
        for unit in survey.tool_units.iter().rev().take(recency.tool_pairs) {
            for &i in unit {
                if classes[i] == Class::Eligible {
                    classes[i] = Class::RecentTool;
                }
            }
        }

        // Recent assistant messages within the last N turns.
        let last_turn = survey.turns.last().copied().unwrap_or(0);
        let first_recent = last_turn
            .saturating_sub(u32::try_from(recency.turns.saturating_sub(1)).unwrap_or(u32::MAX));
        let mut left = recency.turns * ASSISTANT_MESSAGES_PER_RECENT_TURN;
        for i in (0..n).rev() {
            if left == 0 || survey.turns[i] < first_recent {
                break;
            }
            let assistant_msg =
                matches!(items[i].body(), ItemBody::Message(m) if m.role == Role::Assistant);
            if assistant_msg && classes[i] == Class::Eligible {
                classes[i] = Class::Recent;
                left -= 1;
            }
        }

        // User messages within their budget, newest first; the boundary one is middle-truncated.
        let mut remaining = limits.user_messages;
        for i in (0..n).rev() {
            if classes[i] != Class::Eligible || !is_user_message(&items[i]) {
                continue;
            }
            let t = survey.tokens[i];
            if t <= remaining {
                classes[i] = Class::User(None);
                remaining -= t;
            } else if remaining >= MIN_BOUNDARY_TOKENS {
                classes[i] = Class::User(Some(remaining));
                remaining = 0;
            } else {
                remaining = 0;
            }
        }

        let mut unit_present = vec![false; n];
        for i in 0..n {
            if classes[i].requires_presence() {
                unit_present[survey.units[i]] = true;
            }
        }
        let present = (0..n).map(|i| unit_present[survey.units[i]]).collect();
        Partition {
            classes,
            present,
            recency,
        }
    }
}
