//! Compaction strategies: pure functions from a conversation, a budget, a policy and a counter to a
//! [`Plan`], selected by [`StrategyName`].
//!
//! | name | what it does |
//! |---|---|
//! | `tiered` | tier 0 truncate oversized tool outputs, tier 1 reference old outputs (only if it frees the minimum), tier 2 summarise the oldest eligible items into one checkpoint until the target is reached, tier 3 shrink recent turns then tool pairs to 1, tier 4 [`StrategyError::InsufficientBudget`] |
//! | `codex` | initial context + user messages within their budget + one summary last |
//! | `segmented` | keep a head (12% of the usable budget) and a tail (30%), summarise the middle |
//! | `observation-masking` | tool outputs older than the recent turns become reference placeholders; no summary |
//! | `sliding-window` | keep the newest items that fit beside the checkpoint, summarise the older ones |
//! | `deletion` | drop the oldest items (tool pairs whole) until under the target; no summary |
//! | `cfpm` | keep the first 2 and last 8 items, replace the middle with a deterministic memory block |
//!
//! Every strategy's plan then goes through the shared fit pass (`fit.rs`): when it is over the usable
//! budget, or changes nothing while above the target, the pass truncates, references, summarises or
//! drops (as the strategy would) and finally cuts the last items until the plan fits; a strategy fails
//! with [`StrategyError::InsufficientBudget`] only when the pinned items leave no room.

mod cfpm;
mod codex;
mod common;
mod deletion;
mod error;
mod fit;
mod focus;
mod masking;
mod replaced;
mod reversible;
mod segmented;
mod sliding;
mod stale;
mod tiered;

pub use cfpm::memory_block;
pub use error::{Breakdown, StrategyError};
pub use reversible::{StageCounts, MIN_BLOCK_CHARS};
pub use stale::{Reason, Staleness};

use crate::budget::Budget;
use crate::model::Conversation;
use crate::plan::Plan;
use crate::policy::{Policy, StrategyName};
use crate::tokens::TokenCounter;

/// Everything a strategy reads.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The conversation (normalised).
    pub conversation: &'a Conversation,
    /// The budget.
    pub budget: &'a Budget,
    /// The policy.
    pub policy: &'a Policy,
    /// The token counter.
    pub counter: &'a TokenCounter,
    /// Known size (tokens of text) of the summary, when re-planning after a summariser returned more
    /// than planned; `None` plans with the budgeted size.
    pub summary_tokens: Option<usize>,
}

impl<'a> Request<'a> {
    /// A request with the budgeted summary size.
    pub fn new(
        conversation: &'a Conversation,
        budget: &'a Budget,
        policy: &'a Policy,
        counter: &'a TokenCounter,
    ) -> Self {
        Request {
            conversation,
            budget,
            policy,
            counter,
            summary_tokens: None,
        }
    }
}

/// Runs the strategy `name`.
pub fn run(name: StrategyName, request: &Request<'_>) -> Result<Plan, StrategyError> {
    let plan = match name {
        StrategyName::Tiered => tiered::plan(request),
        StrategyName::Codex => codex::plan(request),
        StrategyName::Segmented => segmented::plan(request),
        StrategyName::ObservationMasking => masking::plan(request),
        StrategyName::SlidingWindow => sliding::plan(request),
        StrategyName::Deletion => deletion::plan(request),
        StrategyName::Cfpm => cfpm::plan(request),
    }?;
    // Whatever the strategy, a plan never grows the request: a checkpoint (or stubs) that would
    // cost more than the items it replaces leaves the request as it is.
    if !plan.is_noop() && plan.estimated_after() >= plan.tokens_before {
        let note = format!(
            "the plan would not shrink the request (~{} -> ~{} tokens): nothing changed",
            plan.tokens_before,
            plan.estimated_after()
        );
        return Ok(plan.into_noop(note));
    }
    Ok(plan)
}

/// Runs the strategy `name` with the budgeted summary size (shorthand for [`run`]).
pub fn plan(
    name: StrategyName,
    conversation: &Conversation,
    budget: &Budget,
    policy: &Policy,
    counter: &TokenCounter,
) -> Result<Plan, StrategyError> {
    run(name, &Request::new(conversation, budget, policy, counter))
}
