//! The `tiered` strategy (default): the reversible stage (`reversible.rs`: superseded outputs, repeated
//! blocks, densifiers; nothing the session log cannot give back) runs first, then tier 0 truncates oversized tool outputs, tier 1 replaces old tool
//! outputs by reference stubs (only when that frees the configured minimum, so a prompt-cache
//! invalidation is worth it), tier 2 summarises the oldest eligible items into one checkpoint until the
//! target is reached, tier 3 shrinks the
//! recent turns and then the recent tool pairs down to one each; past that the shared fit pass
//! (`fit.rs`) lets the user-message budget and the last items themselves shrink, and only then is
//! tier 4 the typed [`StrategyError::InsufficientBudget`], whose floor is what truly cannot shrink. The estimate is recomputed after each tier and planning stops
//! at the first tier that reaches the target.

use super::common::{
    builder, cover_tokens, covered_tokens, drop_past_reasoning, summary_budget,
    truncate_tool_outputs,
};
use super::fit::{fit, Removal};
use super::{Request, Staleness, StrategyError};
use crate::model::ItemBody;
use crate::partition::{is_checkpoint, Class, Partition, Recency, Survey};
use crate::plan::{
    is_reference, Action, Placement, Plan, PlanBuilder, Tier, CHECKPOINT_MARKER_TOKENS,
};
use crate::policy::{ReversibleMode, StrategyName};

/// Runs the reversible stage and records what it did: first the reasoning of finished assistant
/// runs, which both providers discard themselves (the log keeps it), then [`super::reversible::run`].
fn reversible_stage(b: &mut PlanBuilder<'_>, req: &Request<'_>, staleness: &Staleness) {
    let dropped = drop_past_reasoning(b, Tier::Reversible);
    if dropped > 0 {
        b.record(
            Tier::Reversible,
            dropped,
            "reversible: reasoning of finished assistant runs dropped (providers discard it)",
        );
    }
    let counts = super::reversible::run(b, req, staleness);
    if counts.superseded + counts.rewritten > 0 {
        b.record(
            Tier::Reversible,
            counts.superseded + counts.rewritten,
            format!(
                "reversible: {} superseded outputs referenced, {} items densified or cut",
                counts.superseded, counts.rewritten
            ),
        );
    }
}

/// Plans `request` with the tiered pipeline.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let survey = Survey::of(req.conversation, req.policy, req.counter);
    let target = req.budget.target;
    if req.policy.reversible == ReversibleMode::Only {
        let mut b = builder(req, StrategyName::Tiered, &survey);
        reversible_stage(&mut b, req, &Staleness::of(req.conversation));
        return Ok(b.finish());
    }
    if survey.total() <= target {
        let mut b = builder(req, StrategyName::Tiered, &survey);
        b.note("already below the target: nothing to do");
        return Ok(b.finish());
    }
    let start = Recency::of(req.policy);
    // Read once: it depends on the conversation alone, not on the recency tier 3 tries.
    let staleness = Staleness::of(req.conversation);
    let mut best: Option<PlanBuilder<'_>> = None;
    for recency in tier3_steps(start) {
        let b = attempt(req, &survey, &staleness, start, recency);
        let est = b.estimate();
        if est <= target {
            return Ok(b.finish());
        }
        if best.as_ref().is_none_or(|p| est < p.estimate()) {
            best = Some(b);
        }
    }
    let Some(mut b) = best else {
        return Ok(builder(req, StrategyName::Tiered, &survey).finish());
    };
    let floor = b.estimate();
    if floor <= req.budget.usable && !b.is_noop() {
        b.note(format!(
            "target {target} not reached; {floor} tokens fit the usable budget of {}",
            req.budget.usable
        ));
        return Ok(b.finish());
    }
    // Past tier 3 at its policy floor: the shared fit pass shrinks the user-message budget, the last
    // items and the checkpoint before tier 4 reports what truly cannot shrink.
    fit(&mut b, req, Removal::Summarize(Placement::FirstCovered))?;
    Ok(b.finish())
}

/// The recency settings tier 3 tries, in order: the policy's, then fewer recent turns down to 1, then
/// fewer tool pairs down to 1.
fn tier3_steps(start: Recency) -> Vec<Recency> {
    let mut steps = vec![start];
    let mut r = start;
    while r.turns > 1 {
        r.turns -= 1;
        steps.push(r);
    }
    while r.tool_pairs > 1 {
        r.tool_pairs -= 1;
        steps.push(r);
    }
    steps
}

fn attempt<'a>(
    req: &Request<'a>,
    survey: &'a Survey,
    staleness: &Staleness,
    start: Recency,
    recency: Recency,
) -> PlanBuilder<'a> {
    let conv = req.conversation;
    let target = req.budget.target;
    let partition = Partition::of(conv, survey, &req.budget.limits, recency);
    let mut b = builder(req, StrategyName::Tiered, survey);
    if recency != start {
        b.record(
            Tier::ShrinkRecent,
            0,
            format!(
                "recent turns {} -> {}, tool pairs {} -> {}",
                start.turns, recency.turns, start.tool_pairs, recency.tool_pairs
            ),
        );
    }

    // The reversible stage.
    if req.policy.reversible == ReversibleMode::On {
        reversible_stage(&mut b, req, staleness);
        if b.estimate() <= target {
            return b;
        }
    }

    // Tier 0.
    let dropped = drop_past_reasoning(&mut b, Tier::Truncate);
    if dropped > 0 {
        b.record(
            Tier::Truncate,
            dropped,
            "reasoning of finished assistant runs dropped",
        );
    }
    let truncated = truncate_tool_outputs(&mut b, req);
    if truncated > 0 {
        b.record(
            Tier::Truncate,
            truncated,
            "oversized tool outputs truncated (head + tail)",
        );
    }
    if b.estimate() <= target {
        return b;
    }

    // Tier 1.
    tier1(&mut b, req, &partition, staleness);
    if b.estimate() <= target {
        return b;
    }

    // Tier 2.
    tier2(&mut b, req, &partition);
    b
}

fn tier1(b: &mut PlanBuilder<'_>, req: &Request<'_>, partition: &Partition, staleness: &Staleness) {
    let conv = req.conversation;
    let target = req.budget.target;
    let min = req.budget.limits.tier1_min_savings;
    let mut trial = b.clone();
    let mut saved = 0usize;
    let mut count = 0usize;
    // Superseded outputs first, the agent's working set (latest read of each file, latest run of
    // each command) last.
    let candidates = conv.items.iter().enumerate().filter(|(i, item)| {
        partition.classes[*i] == Class::Eligible
            && matches!(item.body(), ItemBody::ToolResult(_))
            && !is_reference(item)
    });
    let focus = super::focus::Focus::of(conv);
    let order = staleness.reference_order(candidates.map(|(i, _)| i), |i| {
        focus.holds_item(&conv.items[i])
    });
    for i in order {
        let s = trial.reference(i, Tier::Reference);
        if s > 0 {
            saved += s;
            count += 1;
            if saved >= min && trial.estimate() <= target {
                break;
            }
        }
    }
    if saved >= min && count > 0 {
        *b = trial;
        b.record(
            Tier::Reference,
            count,
            format!("old tool outputs referenced, {saved} tokens freed"),
        );
    } else if count > 0 {
        b.note(format!(
            "tier 1 skipped: references would free {saved} tokens, below the minimum of {min}"
        ));
    }
}

/// Tier 2: summarises eligible units oldest first until the estimate (with the checkpoint) reaches the
/// target, so no more context is given up than needed; the boundary user message is truncated only if
/// summarising everything eligible is not enough.
fn tier2(b: &mut PlanBuilder<'_>, req: &Request<'_>, partition: &Partition) {
    let conv = req.conversation;
    let survey = b.survey();
    let n = partition.classes.len();
    let target = req.budget.target;
    let mut unit_kept = vec![false; n];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    for i in 0..n {
        members[survey.units[i]].push(i);
        if partition.classes[i].requires_presence() {
            unit_kept[survey.units[i]] = true;
        }
    }
    let slot_overhead = CHECKPOINT_MARKER_TOKENS + req.counter.framing().per_message as usize;
    let mut est = b.estimate();
    let mut covered = 0usize;
    // A checkpoint still present is folded into the new one: it counts from the start.
    let folded: Vec<bool> = (0..n).map(|i| b.is_foldable(i)).collect();
    for i in (0..n).filter(|&i| folded[i]) {
        est = est.saturating_sub(b.tokens_after(i));
        covered += cover_tokens(b, i);
    }
    let mut count = 0usize;
    let mut new_content = false;
    for root in 0..n {
        if unit_kept[root] || members[root].is_empty() {
            continue;
        }
        for &i in &members[root] {
            if !folded[i] {
                est = est.saturating_sub(b.tokens_after(i));
                covered += cover_tokens(b, i);
            }
            new_content |= !is_checkpoint(&conv.items[i]);
            b.summarize(i, Tier::Summarize);
            count += 1;
        }
        if new_content && est + summary_budget(req, covered) + slot_overhead <= target {
            break;
        }
    }
    if !new_content {
        // Only previous checkpoints would be covered: re-summarising them alone gains nothing.
        for i in 0..n {
            if *b.action(i) == Action::SummarizeInto {
                b.keep(i);
            }
        }
        return;
    }
    let mut truncated = 0;
    if est + summary_budget(req, covered) + slot_overhead > target {
        for (i, class) in partition.classes.iter().enumerate() {
            if let Class::User(Some(limit)) = class {
                if b.action(i).is_present() && b.truncate(i, *limit, Tier::Summarize) > 0 {
                    truncated += 1;
                }
            }
        }
    }
    b.fold_checkpoints(Tier::Summarize);
    let max_tokens = summary_budget(req, covered_tokens(b));
    b.place_checkpoint(max_tokens, Tier::Summarize, Placement::FirstCovered);
    let note = if truncated > 0 {
        format!("oldest items summarised into one checkpoint; boundary user message truncated; summary <= {max_tokens} tokens")
    } else {
        format!("oldest items summarised into one checkpoint; summary <= {max_tokens} tokens")
    };
    b.record(Tier::Summarize, count, note);
}
