//! The one "decide and compact" step every preflight runs: the engine's stateless
//! [`Compactor::preflight`](crate::Compactor::preflight), and the session runtime, which wraps it with
//! incremental counting, memory, a two-strike breaker and the log.
//!
//! Two halves, because a host may act between them (the runtime's breaker holds back a compaction
//! that cannot get under the trigger, and it compacts with a policy calibrated after the decision):
//! [`decide`] turns a count into a [`Decision`]; [`Compactor::compact_due`] runs the compaction the
//! decision asked for and says what came of it as a [`Settled`], so that "a compaction that could not
//! make progress while the request still fits is skipped, not an error" is written once.

use crate::compactor::{Compaction, Compactor};
use crate::error::CompactError;
use compact_core::boundary::Boundary;
use compact_core::budget::Budget;
use compact_core::model::Conversation;
use compact_core::policy::{decide_at, Decision, Policy, TriggerReason};

/// What a preflight knows about the request when it decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// The request's token count (calibrated, when the host calibrates).
    pub count: usize,
    /// The natural boundary the request is at, when the policy sets a boundary floor (without one
    /// it cannot change the decision, so hosts need not look for it).
    pub at: Option<Boundary>,
    /// The user asked for a compaction (`/compact` or a trigger phrase): compact whatever the count.
    pub manual: bool,
}

/// The trigger decision for a request: a manual request compacts, anything else is
/// [`decide_at`] on the count, the budget and the policy.
pub fn decide(due: Due, budget: &Budget, policy: &Policy) -> Decision {
    if due.manual {
        Decision::Compact(TriggerReason::Manual)
    } else {
        decide_at(due.count, budget, policy, due.at)
    }
}

/// What a due compaction came to.
#[derive(Debug)]
pub enum Settled {
    /// The conversation was compacted.
    Compacted(Box<Compaction>),
    /// The compaction could not make progress (nothing left to free, a budget too small for the
    /// pinned items, or still over the budget), but the request fits: it goes out unchanged.
    Skipped(CompactError),
    /// The request cannot be sent as it is, or the summariser failed under a `fail` policy.
    Failed(CompactError),
}

impl Settled {
    /// Sorts a compaction's result: the three "could not make progress" errors of a request that
    /// `fits` the usable budget are [`Settled::Skipped`]; any other error is [`Settled::Failed`].
    pub fn of(result: Result<Compaction, CompactError>, fits: bool) -> Settled {
        match result {
            Ok(done) => Settled::Compacted(Box::new(done)),
            Err(
                e @ (CompactError::NoProgress { .. }
                | CompactError::InsufficientBudget { .. }
                | CompactError::StillOverBudget { .. }),
            ) if fits => Settled::Skipped(e),
            Err(e) => Settled::Failed(e),
        }
    }

    /// The warning a host gives for a [`Settled::Skipped`] compaction.
    pub fn skipped_warning(e: &CompactError) -> String {
        format!("compaction skipped: {e}; the request fits and is sent unchanged")
    }
}

impl Compactor {
    /// Runs the compaction a [`Decision::Compact`] asked for, on `conv`, for `reason`
    /// ([`Compactor::compact_for`]); `fits` says whether the request as it is fits the usable
    /// budget (a compaction that cannot progress then leaves it unchanged).
    pub async fn compact_due(
        &self,
        conv: &Conversation,
        reason: &TriggerReason,
        fits: bool,
    ) -> Settled {
        Settled::of(self.compact_for(conv, reason).await, fits)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::{block_on, DeterministicSummarizer};
    use compact_core::model::{Item, Role};
    use compact_core::tokens::{Encoding, TokenCounter};
    use std::sync::Arc;

    fn compactor(window: usize) -> Compactor {
        Compactor::new(
            Policy::for_window(window),
            Arc::new(DeterministicSummarizer),
            TokenCounter::new(Encoding::O200kBase),
        )
        .unwrap()
    }

    #[test]
    fn a_manual_request_compacts_whatever_the_count() {
        let policy = Policy::for_window(10_000);
        let budget = Budget::new(&policy);
        let due = Due {
            count: 10,
            at: None,
            manual: false,
        };
        assert_eq!(decide(due, &budget, &policy), Decision::None);
        assert_eq!(
            decide(
                Due {
                    manual: true,
                    ..due
                },
                &budget,
                &policy
            ),
            Decision::Compact(TriggerReason::Manual)
        );
        let over = Due {
            count: budget.usable + 1,
            ..due
        };
        assert_eq!(
            decide(over, &budget, &policy),
            decide_at(over.count, &budget, &policy, None)
        );
    }

    #[test]
    fn no_progress_is_skipped_only_while_the_request_fits() {
        let c = compactor(8_000);
        let mut conv = Conversation::default();
        conv.push(Item::text(Role::System, "You are a coding agent."));
        conv.push(Item::text(Role::User, "hello"));
        // Nothing to free: the engine says so with a typed error.
        let settled = block_on(c.compact_due(&conv, &TriggerReason::Manual, true));
        let Settled::Skipped(e) = settled else {
            panic!("expected a skip, got {settled:?}");
        };
        assert!(Settled::skipped_warning(&e).starts_with("compaction skipped: "));
        let settled = block_on(c.compact_due(&conv, &TriggerReason::Manual, false));
        assert!(matches!(settled, Settled::Failed(_)), "{settled:?}");
    }

    #[test]
    fn a_compaction_that_frees_tokens_is_compacted() {
        let c = compactor(8_000);
        let mut conv = Conversation::default();
        conv.push(Item::text(Role::System, "You are a coding agent."));
        for i in 0..40 {
            conv.push(Item::text(
                Role::User,
                format!("step {i}: look at module {i} ").repeat(20),
            ));
            conv.push(Item::text(
                Role::Assistant,
                format!("module {i} is fine ").repeat(30),
            ));
        }
        let count = c.counter().total(&conv);
        let reason = TriggerReason::OverBudget {
            count,
            usable: c.budget().usable,
        };
        match block_on(c.compact_due(&conv, &reason, false)) {
            Settled::Compacted(done) => assert!(done.report.tokens_after < count),
            other => panic!("expected a compaction, got {other:?}"),
        }
    }
}
