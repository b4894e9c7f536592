//! The shared final "fit" pass every strategy's plan goes through: when the strategy's own plan is
//! above the target (the hysteresis point that leaves room for the next stretch of work, see
//! [`crate::budget::Budget::target`]), the pass tightens it step by step, re-estimating after each,
//! until it reaches the target, or at least the usable budget:
//!
//! 1. tier 0 again: the largest tool outputs and tool-call arguments truncated at progressively
//!    smaller caps;
//! 2. tier 1: older tool outputs replaced by reference stubs, oldest first;
//! 3. the oldest removable units summarised into the checkpoint or dropped (as the strategy does),
//!    tool pairs and wire messages whole, down to the floor (the last user message, the last tool
//!    pair, the last item);
//! 4. the floor itself: standalone reasoning items (uncuttable encrypted content) dropped, its items
//!    middle-truncated, then the checkpoint budget shrunk and the items cut further.
//!
//! Only then is the plan allowed to fail with [`StrategyError::InsufficientBudget`], whose floor is
//! what truly cannot shrink. Pinned items are never touched.

use super::common::{summary_budget, MIN_SUMMARY_TOKENS};
use super::{Breakdown, Request, Staleness, StrategyError};
use crate::budget::TOOL_OUTPUT_SHARE;
use crate::model::ItemBody;
use crate::partition::is_user_message;
use crate::plan::{is_reference, Placement, PlanBuilder, Tier, CHECKPOINT_MARKER_TOKENS};

/// How the fit pass removes whole units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Summarised into the checkpoint, placed as given.
    Summarize(Placement),
    /// Dropped without a summary.
    Drop,
}

/// Step 1 tries the tool-output cap, then halves it this many times.
const TRUNCATION_HALVINGS: u32 = 2;
/// Step 1 never cuts a tool output below this: smaller cuts are the floor step's business.
const MIN_TOOL_CAP: usize = 256;
/// Outputs at or below this size are not worth a reference stub (the stub itself costs ~100).
const STUB_WORTH_TOKENS: usize = 256;
/// The floor step first cuts the last items to this size before touching the checkpoint.
const FLOOR_SOFT_TOKENS: usize = 512;
/// The smallest size the floor step cuts an item to: enough for head, marker and tail.
const FLOOR_ITEM_TOKENS: usize = 64;

/// Tightens `b` until it reaches the target, or at least the usable budget; errors with the honest
/// floor when even that is impossible. Does nothing when the plan is already at or below the target.
pub fn fit(
    b: &mut PlanBuilder<'_>,
    req: &Request<'_>,
    removal: Removal,
) -> Result<(), StrategyError> {
    let usable = req.budget.usable;
    let target = req.budget.target.min(usable);
    let start = b.estimate();
    if start <= target {
        return Ok(());
    }
    let floor = floor_units(b);
    if truncate_tools(b, req, target) || reference_tools(b, target, &floor) {
        return Ok(());
    }
    remove_units(b, req, target, &floor, removal);
    if b.estimate() <= usable {
        return Ok(());
    }
    shrink_floor(b, req, usable, removal);
    let est = b.estimate();
    if est <= usable {
        return Ok(());
    }
    Err(StrategyError::InsufficientBudget {
        floor: est,
        budget: usable,
        breakdown: breakdown(b),
    })
}

/// Units the fit pass never removes: the last real user message's, the last tool pair's and the last
/// item's. Indexed by unit root.
fn floor_units(b: &PlanBuilder<'_>) -> Vec<bool> {
    let survey = b.survey();
    let conv = b.conversation();
    let n = survey.tokens.len();
    let mut floor = vec![false; n];
    if let Some(last) = n.checked_sub(1) {
        floor[survey.units[last]] = true;
    }
    if let Some(i) = conv.items.iter().rposition(is_user_message) {
        floor[survey.units[i]] = true;
    }
    if let Some(unit) = survey.tool_units.last() {
        for &i in unit {
            floor[survey.units[i]] = true;
        }
    }
    floor
}

/// True when item `i` may be changed (present and not pinned).
fn changeable(b: &PlanBuilder<'_>, i: usize) -> bool {
    b.survey().pins[i].is_none() && b.action(i).is_present()
}

/// Present, changeable items satisfying `select`, largest first (ties: oldest first).
fn largest_first(b: &PlanBuilder<'_>, select: impl Fn(usize) -> bool) -> Vec<usize> {
    let mut out: Vec<usize> = (0..b.survey().tokens.len())
        .filter(|&i| changeable(b, i) && select(i))
        .collect();
    out.sort_by_key(|&i| (std::cmp::Reverse(b.tokens_after(i)), i));
    out
}

/// Step 1: the largest tool outputs and tool-call arguments truncated at the tool-output cap, then at
/// half and a quarter of it. Returns true once the estimate reaches `goal`.
fn truncate_tools(b: &mut PlanBuilder<'_>, req: &Request<'_>, goal: usize) -> bool {
    let conv = b.conversation();
    let base = req.budget.limits.tool_output.unwrap_or_else(|| {
        ((req.budget.usable as f64 * TOOL_OUTPUT_SHARE) as usize).max(MIN_TOOL_CAP)
    });
    let mut count = 0usize;
    let mut reached = b.estimate() <= goal;
    for halving in 0..=TRUNCATION_HALVINGS {
        if reached {
            break;
        }
        let cap = (base >> halving).max(MIN_TOOL_CAP);
        let candidates = largest_first(b, |i| {
            b.tokens_after(i) > cap
                && match conv.items[i].body() {
                    ItemBody::ToolResult(_) => !is_reference(&conv.items[i]),
                    ItemBody::ToolCall(_) => true,
                    _ => false,
                }
        });
        for i in candidates {
            if b.truncate(i, cap, Tier::Truncate) > 0 {
                count += 1;
                if b.estimate() <= goal {
                    reached = true;
                    break;
                }
            }
        }
    }
    if count > 0 {
        b.record(
            Tier::Truncate,
            count,
            "fit: largest tool outputs and arguments truncated",
        );
    }
    reached
}

/// Step 2: older tool outputs (outside the floor) replaced by reference stubs in
/// [`Staleness::reference_order`] (superseded first, latest views and the agent's focus last, oldest
/// first within). Returns
/// true once the estimate reaches `goal`.
fn reference_tools(b: &mut PlanBuilder<'_>, goal: usize, floor: &[bool]) -> bool {
    let conv = b.conversation();
    let units = &b.survey().units;
    let mut count = 0usize;
    let mut est = b.estimate();
    let candidates = (0..conv.items.len()).filter(|&i| {
        changeable(b, i)
            && !floor[units[i]]
            && matches!(conv.items[i].body(), ItemBody::ToolResult(_))
            && !is_reference(&conv.items[i])
            && b.tokens_after(i) > STUB_WORTH_TOKENS
    });
    let focus = super::focus::Focus::of(conv);
    let order =
        Staleness::of(conv).reference_order(candidates, |i| focus.holds_item(&conv.items[i]));
    for i in order {
        if est <= goal {
            break;
        }
        let before = b.tokens_after(i);
        if b.reference(i, Tier::Reference) > 0 {
            est = est.saturating_sub(before - b.tokens_after(i));
            count += 1;
        }
    }
    if count > 0 {
        b.record(Tier::Reference, count, "fit: older tool outputs referenced");
    }
    est <= goal
}

/// Tokens a checkpoint slot adds beyond its text.
fn slot_overhead(req: &Request<'_>) -> usize {
    CHECKPOINT_MARKER_TOKENS + req.counter.framing().per_message as usize
}

/// Tokens of the original items currently summarised.
fn covered(b: &PlanBuilder<'_>) -> usize {
    super::common::covered_tokens(b)
}

/// Step 3: the oldest removable units (no pinned member, outside the floor) summarised or dropped,
/// whole, until the estimate with the checkpoint reaches `goal`; the checkpoint is then (re)placed.
fn remove_units(
    b: &mut PlanBuilder<'_>,
    req: &Request<'_>,
    goal: usize,
    floor: &[bool],
    removal: Removal,
) {
    let survey = b.survey();
    let n = survey.tokens.len();
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut blocked = floor.to_vec();
    for i in 0..n {
        members[survey.units[i]].push(i);
        blocked[survey.units[i]] |= survey.pins[i].is_some();
    }
    let mut items = b.estimate() - b.checkpoint_tokens();
    let mut cover = covered(b);
    let slot = |cover: usize| match removal {
        Removal::Summarize(_) if cover > 0 => summary_budget(req, cover) + slot_overhead(req),
        _ => 0,
    };
    let mut count = 0usize;
    for u in 0..n {
        if items + slot(cover) <= goal {
            break;
        }
        if blocked[u] || !members[u].iter().any(|&i| b.action(i).is_present()) {
            continue;
        }
        for &i in &members[u] {
            if !b.action(i).is_present() {
                continue;
            }
            items -= b.tokens_after(i);
            match removal {
                Removal::Summarize(_) => {
                    cover += super::common::cover_tokens(b, i);
                    b.summarize(i, Tier::Summarize);
                }
                Removal::Drop => b.drop_item(i, Tier::Drop),
            }
            count += 1;
        }
    }
    if count == 0 {
        return;
    }
    match removal {
        Removal::Summarize(placement) => {
            b.fold_checkpoints(Tier::Summarize);
            b.place_checkpoint(summary_budget(req, covered(b)), Tier::Summarize, placement);
            b.record(
                Tier::Summarize,
                count,
                "fit: oldest units summarised into the checkpoint",
            );
        }
        Removal::Drop => b.record(Tier::Drop, count, "fit: oldest units dropped"),
    }
}

/// Step 4: the remaining changeable items (the floor) cut largest first to [`FLOOR_SOFT_TOKENS`], then
/// the checkpoint budget shrunk (down to [`MIN_SUMMARY_TOKENS`]), then the items cut to
/// [`FLOOR_ITEM_TOKENS`], until the estimate reaches `goal`.
fn shrink_floor(b: &mut PlanBuilder<'_>, req: &Request<'_>, goal: usize, removal: Removal) {
    let mut count = drop_reasoning(b, goal);
    count += cut_items(b, goal, FLOOR_SOFT_TOKENS);
    if b.estimate() > goal && req.summary_tokens.is_none() {
        if let Removal::Summarize(placement) = removal {
            let cover = covered(b);
            if cover > 0 {
                let current = summary_budget(req, cover);
                let over = b.estimate() - goal;
                let smaller = current.saturating_sub(over).max(MIN_SUMMARY_TOKENS);
                if smaller < current {
                    b.place_checkpoint(smaller, Tier::ShrinkRecent, placement);
                    count += 1;
                }
            }
        }
    }
    count += cut_items(b, goal, FLOOR_ITEM_TOKENS);
    if count > 0 {
        b.record(
            Tier::ShrinkRecent,
            count,
            "fit: last items middle-truncated to the floor",
        );
    }
}

/// True when item `i` shares its wire message with a neighbour (e.g. Anthropic thinking blocks, which
/// must go back unmodified with their turn).
fn shares_envelope(b: &PlanBuilder<'_>, i: usize) -> bool {
    let items = &b.conversation().items;
    let Some(env) = &items[i].meta.envelope else {
        return false;
    };
    [i.checked_sub(1), Some(i + 1)]
        .into_iter()
        .flatten()
        .filter_map(|j| items.get(j))
        .any(|other| {
            other
                .meta
                .envelope
                .as_ref()
                .is_some_and(|e| std::sync::Arc::ptr_eq(e, env))
        })
}

/// Drops standalone reasoning items left in the floor (e.g. Responses `reasoning` items with large
/// encrypted content, which cannot be cut), largest first, until the estimate reaches `goal`. They are
/// the model's own scratch work: the provider accepts a turn without them. Returns the number dropped.
fn drop_reasoning(b: &mut PlanBuilder<'_>, goal: usize) -> usize {
    let conv = b.conversation();
    let mut count = 0usize;
    let candidates = largest_first(b, |i| {
        matches!(conv.items[i].body(), ItemBody::Reasoning(_))
            && b.tokens_after(i) > FLOOR_ITEM_TOKENS
            && !shares_envelope(b, i)
    });
    for i in candidates {
        if b.estimate() <= goal {
            break;
        }
        b.drop_item(i, Tier::ShrinkRecent);
        count += 1;
    }
    count
}

/// Cuts changeable text items larger than `min_cap`, largest first, at halving caps down to `min_cap`,
/// until the estimate reaches `goal`. Returns the number of cuts.
fn cut_items(b: &mut PlanBuilder<'_>, goal: usize, min_cap: usize) -> usize {
    let conv = b.conversation();
    let mut count = 0usize;
    let text_like = |i: usize| {
        matches!(
            conv.items[i].body(),
            ItemBody::Message(_) | ItemBody::ToolResult(_) | ItemBody::ToolCall(_)
        )
    };
    let Some(largest) = largest_first(b, |i| text_like(i) && b.tokens_after(i) > min_cap)
        .first()
        .map(|&i| b.tokens_after(i))
    else {
        return 0;
    };
    let mut cap = largest;
    while b.estimate() > goal {
        cap = (cap / 2).max(min_cap);
        for i in largest_first(b, |i| text_like(i) && b.tokens_after(i) > cap) {
            if b.truncate(i, cap, Tier::ShrinkRecent) > 0 {
                count += 1;
                if b.estimate() <= goal {
                    return count;
                }
            }
        }
        if cap == min_cap {
            break;
        }
    }
    count
}

/// What the plan's floor is made of.
fn breakdown(b: &PlanBuilder<'_>) -> Breakdown {
    let survey = b.survey();
    let mut out = Breakdown {
        checkpoint: b.checkpoint_tokens(),
        ..Breakdown::default()
    };
    let items: usize = (0..survey.tokens.len()).map(|i| b.tokens_after(i)).sum();
    out.overhead = b.estimate() - items - out.checkpoint;
    let conv = b.conversation();
    for i in 0..survey.tokens.len() {
        let t = b.tokens_after(i);
        if survey.pins[i].is_some() {
            out.pinned += t;
        } else if is_user_message(&conv.items[i]) {
            out.user_messages += t;
        } else if b.action(i).is_present() {
            out.recent += t;
        }
    }
    out
}
