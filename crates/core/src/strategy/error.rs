//! Strategy errors: the typed `InsufficientBudget` (tier 4) with what the irreducible floor is made of.

use std::fmt;

/// What the smallest reachable request is made of, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Pinned items (system, developer, protected, protected tools, turn-aborted markers).
    pub pinned: usize,
    /// Recent turns and tool pairs at their floor (1 each), with the items bound to them.
    pub recent: usize,
    /// User messages kept within their budget.
    pub user_messages: usize,
    /// Other items that could not be removed.
    pub other: usize,
    /// The checkpoint.
    pub checkpoint: usize,
    /// Tool declarations and request framing.
    pub overhead: usize,
}

impl fmt::Display for Breakdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pinned {}, recent {}, user messages {}, other {}, checkpoint {}, tools and framing {}",
            self.pinned,
            self.recent,
            self.user_messages,
            self.other,
            self.checkpoint,
            self.overhead
        )
    }
}

/// Why a strategy could not produce a plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategyError {
    /// Tier 4: even at its floor the conversation does not fit the usable budget.
    #[error("insufficient budget: the irreducible floor is {floor} tokens but only {budget} are usable ({breakdown})")]
    InsufficientBudget {
        /// Smallest reachable request, in tokens.
        floor: usize,
        /// The usable budget.
        budget: usize,
        /// What the floor is made of.
        breakdown: Breakdown,
    },
}
