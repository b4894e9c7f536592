//! The `sliding-window` strategy: keep the newest items that fit the target beside the pinned items and
//! the checkpoint, and summarise everything older into the checkpoint.

use super::common::{builder, summarize_outside, summary_budget};
use super::{Request, StrategyError};
use crate::partition::Survey;
use crate::plan::Plan;
use crate::policy::StrategyName;

/// Plans `request` with a sliding window.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let survey = Survey::of(req.conversation, req.policy, req.counter);
    let n = survey.tokens.len();
    let pinned: usize = (0..n)
        .filter(|&i| survey.pins[i].is_some())
        .map(|i| survey.tokens[i])
        .sum();
    let reserve = survey.overhead + pinned + summary_budget(req, req.budget.limits.summary * 2);
    let available = req.budget.target.saturating_sub(reserve);
    let mut unit_tokens = vec![0usize; n];
    for i in 0..n {
        if survey.pins[i].is_none() {
            unit_tokens[survey.units[i]] += survey.tokens[i];
        }
    }
    let mut keep = vec![false; n];
    let mut unit_kept = vec![false; n];
    let mut used = 0usize;
    for i in (0..n).rev() {
        let u = survey.units[i];
        if !unit_kept[u] {
            if used + unit_tokens[u] > available && used > 0 {
                break;
            }
            used += unit_tokens[u];
            unit_kept[u] = true;
        }
        keep[i] = true;
    }
    let mut b = builder(req, StrategyName::SlidingWindow, &survey);
    summarize_outside(&mut b, req, &keep, || {
        format!("window of {used} tokens kept; older items summarised")
    })?;
    Ok(b.finish())
}
