//! The `segmented` strategy (AGIME legacy): keep a head (12% of the usable budget, at least 256 tokens
//! and 2 items) and a tail (30%, at least 768 tokens and 6 items) verbatim and summarise the middle;
//! when head and tail would meet, fall back to the first 3 and last 10 items.

use super::common::{builder, summarize_outside, truncate_tool_outputs};
use super::fit::{fit, Removal};
use super::{Request, StrategyError};
use crate::partition::Survey;
use crate::plan::{Placement, Plan};
use crate::policy::StrategyName;

/// Head share of the usable budget (AGIME: 12% of the window).
pub const HEAD_SHARE: f64 = 0.12;
/// Tail share of the usable budget (AGIME: 30% of the window).
pub const TAIL_SHARE: f64 = 0.30;
/// AGIME's minimum head size in tokens.
pub const HEAD_MIN_TOKENS: usize = 256;
/// AGIME's minimum tail size in tokens.
pub const TAIL_MIN_TOKENS: usize = 768;
/// AGIME's minimum head size in items.
pub const HEAD_MIN_ITEMS: usize = 2;
/// AGIME's minimum tail size in items.
pub const TAIL_MIN_ITEMS: usize = 6;
/// AGIME's fallback split: first 3 items.
pub const FALLBACK_HEAD_ITEMS: usize = 3;
/// AGIME's fallback split: last 10 items.
pub const FALLBACK_TAIL_ITEMS: usize = 10;

fn span(tokens: impl Iterator<Item = usize>, max_tokens: usize, min_items: usize) -> usize {
    let mut used = 0usize;
    let mut count = 0usize;
    for t in tokens {
        if count >= min_items && used + t > max_tokens {
            break;
        }
        used += t;
        count += 1;
    }
    count
}

/// Plans `request` by head / tail segmentation.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let survey = Survey::of(req.conversation, req.policy, req.counter);
    let n = survey.tokens.len();
    let usable = req.budget.usable as f64;
    let head_max = ((usable * HEAD_SHARE) as usize).max(HEAD_MIN_TOKENS);
    let tail_max = ((usable * TAIL_SHARE) as usize).max(TAIL_MIN_TOKENS);
    let mut head = span(survey.tokens.iter().copied(), head_max, HEAD_MIN_ITEMS);
    let mut tail = span(
        survey.tokens.iter().rev().copied(),
        tail_max,
        TAIL_MIN_ITEMS,
    );
    let mut b = builder(req, StrategyName::Segmented, &survey);
    if head + tail >= n {
        head = FALLBACK_HEAD_ITEMS;
        tail = FALLBACK_TAIL_ITEMS;
    }
    if head + tail >= n {
        b.note("too few items to segment: nothing summarised");
        truncate_tool_outputs(&mut b, req);
        fit(&mut b, req, Removal::Summarize(Placement::FirstCovered))?;
        return Ok(b.finish());
    }
    let keep: Vec<bool> = (0..n).map(|i| i < head || i >= n - tail).collect();
    summarize_outside(&mut b, req, &keep, || {
        format!("head {head} items, tail {tail} items kept; middle summarised")
    })?;
    Ok(b.finish())
}
