//! The `observation-masking` strategy: tool outputs older than the recent turns become reference
//! placeholders; nothing is summarised. When masking alone cannot reach the budget (or has nothing
//! left to mask), the shared fit pass continues with truncation, more placeholders and, last, dropping
//! the oldest units, so the strategy never stalls on "no progress".

use super::common::builder;
use super::fit::{fit, Removal};
use super::{Request, StrategyError};
use crate::partition::Survey;
use crate::plan::{Plan, Tier};
use crate::policy::StrategyName;

/// Plans `request` by masking old observations.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let survey = Survey::of(req.conversation, req.policy, req.counter);
    let last_turn = survey.turns.last().copied().unwrap_or(0) as usize;
    let first_recent = (last_turn + 1).saturating_sub(req.policy.keep_recent_turns);
    let mut b = builder(req, StrategyName::ObservationMasking, &survey);
    let mut count = 0;
    for (i, item) in req.conversation.items.iter().enumerate() {
        if survey.pins[i].is_none()
            && item.as_tool_result().is_some()
            && (survey.turns[i] as usize) < first_recent
            && b.reference(i, Tier::Reference) > 0
        {
            count += 1;
        }
    }
    b.record(
        Tier::Reference,
        count,
        format!(
            "tool outputs older than {} turns masked",
            req.policy.keep_recent_turns
        ),
    );
    fit(&mut b, req, Removal::Drop)?;
    Ok(b.finish())
}
