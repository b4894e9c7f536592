//! The `codex` strategy: the initial context (pinned items), the user messages within their budget
//! (newest first, the boundary one middle-truncated) and one summary of everything else, placed last.

use super::common::{builder, covered_tokens, remove_units, summary_budget, truncate_tool_outputs};
use super::fit::{fit, Removal};
use super::{Request, StrategyError};
use crate::partition::{Class, Partition, Recency, Survey};
use crate::plan::{Action, Placement, Plan, Tier};
use crate::policy::StrategyName;

/// Plans `request` the Codex way.
pub fn plan(req: &Request<'_>) -> Result<Plan, StrategyError> {
    let survey = Survey::of(req.conversation, req.policy, req.counter);
    let partition = Partition::of(
        req.conversation,
        &survey,
        &req.budget.limits,
        Recency {
            turns: 0,
            tool_pairs: 0,
        },
    );
    let mut b = builder(req, StrategyName::Codex, &survey);
    let keep: Vec<bool> = partition
        .classes
        .iter()
        .map(|c| matches!(c, Class::Pinned(_) | Class::User(_)))
        .collect();
    let count = remove_units(&mut b, &keep, &Action::SummarizeInto, Tier::Summarize);
    for (i, class) in partition.classes.iter().enumerate() {
        if let Class::User(Some(n)) = class {
            if b.action(i).is_present() {
                b.truncate(i, *n, Tier::Summarize);
            }
        }
    }
    truncate_tool_outputs(&mut b, req);
    if count > 0 {
        b.fold_checkpoints(Tier::Summarize);
        let max_tokens = summary_budget(req, covered_tokens(&b));
        b.place_checkpoint(max_tokens, Tier::Summarize, Placement::End);
        b.record(
            Tier::Summarize,
            count,
            "everything but the initial context and user messages summarised",
        );
    }
    fit(&mut b, req, Removal::Summarize(Placement::End))?;
    Ok(b.finish())
}
