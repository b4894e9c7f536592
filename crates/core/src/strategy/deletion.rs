//! The `deletion` strategy: drop the oldest items until under the target, tool call/result pairs (and
//! the items of one wire message) whole, pinned items never; no summary.

use super::common::{builder, truncate_tool_outputs};
use super::fit::{fit, Removal};
use super::{Request, StrategyError};
use crate::partition::Survey;
use crate::plan::{Plan, Tier};
use crate::policy::StrategyName;

/// Plans `request` by deleting the oldest items.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let survey = Survey::of(req.conversation, req.policy, req.counter);
    let n = survey.tokens.len();
    let mut b = builder(req, StrategyName::Deletion, &survey);
    truncate_tool_outputs(&mut b, req);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut unit_pinned = vec![false; n];
    for i in 0..n {
        members[survey.units[i]].push(i);
        unit_pinned[survey.units[i]] |= survey.pins[i].is_some();
    }
    let last_unit = survey.units.last().copied();
    let mut est = b.estimate();
    let mut count = 0;
    for u in 0..n {
        if est <= req.budget.target {
            break;
        }
        if members[u].is_empty() || unit_pinned[u] || Some(u) == last_unit {
            continue;
        }
        for &i in &members[u] {
            est = est.saturating_sub(b.tokens_after(i));
            b.drop_item(i, Tier::Drop);
            count += 1;
        }
    }
    b.record(Tier::Drop, count, "oldest items dropped");
    fit(&mut b, req, Removal::Drop)?;
    Ok(b.finish())
}
