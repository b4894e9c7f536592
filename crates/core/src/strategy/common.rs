//! Helpers shared by the strategies: measuring, tier-0 truncation, unit-preserving removal and the
//! checkpoint budget.

use super::Request;
use crate::model::{Format, Item, ItemBody, Role};
use crate::partition::Survey;
use crate::plan::{Action, PlanBuilder, Tier};
use crate::policy::StrategyName;

/// A summary smaller than this cannot carry the checkpoint's section headers.
pub const MIN_SUMMARY_TOKENS: usize = 64;
/// The checkpoint budget is at most this share of what it covers: a summary is worth making only if
/// it is clearly smaller than the items it replaces.
pub const SUMMARY_COVER_RATIO: f64 = 0.5;

/// A builder keeping every item.
pub fn builder<'a>(req: &Request<'a>, name: StrategyName, survey: &'a Survey) -> PlanBuilder<'a> {
    PlanBuilder::new(
        name,
        req.conversation,
        survey,
        req.budget,
        req.counter,
        req.policy.tool_output.head_fraction,
    )
}

/// Tier 0: truncates every non-pinned tool result over the scaled tool-output limit. Returns the
/// number of items truncated.
pub fn truncate_tool_outputs(b: &mut PlanBuilder<'_>, req: &Request<'_>) -> usize {
    let Some(limit) = req.budget.limits.tool_output else {
        return 0;
    };
    let survey = b.survey();
    let conv = b.conversation();
    let mut n = 0;
    for (i, item) in conv.items.iter().enumerate() {
        if survey.pins[i].is_none()
            && item.as_tool_result().is_some()
            && survey.tokens[i] > limit
            && b.action(i).is_present()
            && b.truncate(i, limit, Tier::Truncate) > 0
        {
            n += 1;
        }
    }
    n
}

/// Drops the reasoning of every assistant run but the last (the reversible stage, else tier 0), the model's scratch work on steps
/// already finished. Both providers treat it so: Anthropic's context editing clears thinking of all
/// but the latest turns and requires it only for the last assistant message of a tool loop; OpenAI
/// discards reasoning from earlier turns. The last run (the assistant items the trailing results
/// answer, or the final assistant message) keeps its reasoning, pinned items keep theirs, and so does
/// a Responses run whose other items name a wire `id` (the API rejects an item whose reasoning item
/// is missing). The log keeps what is dropped (recall by id). Returns the number of items dropped.
pub fn drop_past_reasoning(b: &mut PlanBuilder<'_>, tier: Tier) -> usize {
    let conv = b.conversation();
    let survey = b.survey();
    let items = &conv.items;
    let Some(last) = items.iter().rposition(is_assistant_side) else {
        return 0;
    };
    let mut last_run = last;
    while last_run > 0 && is_assistant_side(&items[last_run - 1]) {
        last_run -= 1;
    }
    let mut count = 0;
    let mut i = 0;
    while i < last_run {
        if !is_assistant_side(&items[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < last_run && is_assistant_side(&items[i]) {
            i += 1;
        }
        let run = start..i;
        if run.clone().any(|j| names_responses_id(&items[j])) {
            continue;
        }
        for j in run {
            if matches!(items[j].body(), ItemBody::Reasoning(_))
                && survey.pins[j].is_none()
                && b.action(j).is_present()
            {
                b.drop_item(j, tier);
                count += 1;
            }
        }
    }
    count
}

/// An item the assistant produced: a message, a tool call, reasoning (or an opaque assistant item).
fn is_assistant_side(item: &Item) -> bool {
    item.role() == Role::Assistant
}

/// True for a Responses item that names its wire `id` (which may refer to a reasoning item).
fn names_responses_id(item: &Item) -> bool {
    let responses = |f: Option<Format>| f == Some(Format::OpenAiResponses);
    let in_envelope = item
        .meta
        .envelope
        .as_ref()
        .is_some_and(|e| responses(e.format) && e.extra.contains_key("id"));
    let in_call = responses(item.meta.origin)
        && item
            .as_tool_call()
            .is_some_and(|c| c.extra.contains_key("id"));
    in_envelope || in_call
}

/// Marks as `action` (summarise or drop) every non-pinned item whose unit has no member in `keep`.
/// Returns the number of items marked.
pub fn remove_units(b: &mut PlanBuilder<'_>, keep: &[bool], action: &Action, tier: Tier) -> usize {
    let survey = b.survey();
    let n = keep.len();
    let mut unit_kept = vec![false; n];
    for i in 0..n {
        if keep[i] || survey.pins[i].is_some() {
            unit_kept[survey.units[i]] = true;
        }
    }
    let mut count = 0;
    for i in 0..n {
        if !unit_kept[survey.units[i]] {
            match action {
                Action::Drop => b.drop_item(i, tier),
                _ => b.summarize(i, tier),
            }
            count += 1;
        }
    }
    count
}

/// The checkpoint budget for covering `covered_tokens` tokens: the scaled summary limit, at most half of
/// what it covers, at least [`MIN_SUMMARY_TOKENS`] where that is not more than half; or the known
/// summary size when re-planning.
pub fn summary_budget(req: &Request<'_>, covered_tokens: usize) -> usize {
    if let Some(known) = req.summary_tokens {
        return known;
    }
    let half = (covered_tokens as f64 * SUMMARY_COVER_RATIO) as usize;
    // The floor never lets a summary of a small span cost more than half of it: a checkpoint must
    // save tokens even when the summariser fills its whole budget.
    req.budget
        .limits
        .summary
        .min(half)
        .max(MIN_SUMMARY_TOKENS.min(half))
}

/// Tokens of items currently marked summarised, each as [`cover_tokens`] counts it.
pub fn covered_tokens(b: &PlanBuilder<'_>) -> usize {
    (0..b.survey().tokens.len())
        .filter(|&i| *b.action(i) == Action::SummarizeInto)
        .map(|i| cover_tokens(b, i))
        .sum()
}

/// What item `i` counts for in the checkpoint budget: its tokens, or for a previous checkpoint
/// `1 / SUMMARY_COVER_RATIO` of them. A checkpoint is already a summary, and folding it in needs room
/// for all of it; otherwise every re-compaction of a few new items would squeeze the record by half.
pub fn cover_tokens(b: &PlanBuilder<'_>, i: usize) -> usize {
    let tokens = b.survey().tokens[i];
    let folded = b
        .conversation()
        .items
        .get(i)
        .is_some_and(crate::partition::is_checkpoint);
    if folded {
        (tokens as f64 / SUMMARY_COVER_RATIO) as usize
    } else {
        tokens
    }
}

/// The shared ending of the keep-mask strategies (`segmented`, `sliding-window`): summarise every unit
/// `keep` leaves out, truncate oversized tool outputs, place the checkpoint at the first covered item
/// and record the tier with `note`, then run the final fit pass.
pub fn summarize_outside(
    b: &mut PlanBuilder<'_>,
    req: &Request<'_>,
    keep: &[bool],
    note: impl FnOnce() -> String,
) -> Result<(), super::StrategyError> {
    let count = remove_units(b, keep, &Action::SummarizeInto, Tier::Summarize);
    truncate_tool_outputs(b, req);
    if count > 0 {
        b.fold_checkpoints(Tier::Summarize);
        let max_tokens = summary_budget(req, covered_tokens(b));
        b.place_checkpoint(
            max_tokens,
            Tier::Summarize,
            crate::plan::Placement::FirstCovered,
        );
        b.record(Tier::Summarize, count, note());
    }
    super::fit::fit(
        b,
        req,
        super::fit::Removal::Summarize(crate::plan::Placement::FirstCovered),
    )
}
