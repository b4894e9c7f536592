//! [`CompactError`]: every way a compaction can fail, typed so callers can branch on it. A failed
//! compaction never changes the caller's conversation.

use crate::summarizer::SummarizeError;
use compact_core::plan::ApplyError;
use compact_core::policy::PolicyError;
use compact_core::provider::CompactionCall;
use compact_core::strategy::{Breakdown, StrategyError};

/// Why a compaction failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The policy is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Tier 4: even at its floor the conversation does not fit.
    #[error("insufficient budget: the irreducible floor is {floor} tokens but only {budget} are usable ({breakdown})")]
    InsufficientBudget {
        /// Smallest reachable request, in tokens.
        floor: usize,
        /// The usable budget.
        budget: usize,
        /// What the floor is made of.
        breakdown: Breakdown,
    },
    /// The attempt would not shrink the conversation, or (for a request that fits) would free less
    /// than the policy's minimum gain: the progress guarantee, no loops and no thrash.
    #[error("compaction made no progress: {before} tokens before, {after} after")]
    NoProgress {
        /// Tokens before.
        before: usize,
        /// Tokens the best plan reached.
        after: usize,
    },
    /// The result still exceeds the usable budget after re-planning with the real summary size.
    #[error("compacted conversation has {after} tokens, over the usable budget of {usable}")]
    StillOverBudget {
        /// Tokens after.
        after: usize,
        /// The usable budget.
        usable: usize,
    },
    /// The summariser failed and the policy says not to fall back.
    #[error("summariser failed: {0}")]
    Summarizer(#[from] SummarizeError),
    /// Another strategy failure.
    #[error(transparent)]
    Strategy(StrategyError),
    /// The plan could not be applied (a bug: plans are built for the conversation they apply to).
    #[error(transparent)]
    Apply(#[from] ApplyError),
    /// The request is the provider's own compaction call (a `compaction_trigger` item, a top-level
    /// Anthropic `compaction`): it must reach the provider as it is, so Compact never compacts it.
    #[error("the request is a provider compaction call (`{}`): it is sent as it is, never compacted", .0.as_str())]
    ProviderCompactionCall(CompactionCall),
}

impl From<StrategyError> for CompactError {
    fn from(e: StrategyError) -> Self {
        match e {
            StrategyError::InsufficientBudget {
                floor,
                budget,
                breakdown,
            } => CompactError::InsufficientBudget {
                floor,
                budget,
                breakdown,
            },
            other => CompactError::Strategy(other),
        }
    }
}
