//! The trigger decision: given a token count, a [`Budget`] and a [`Policy`], do nothing, remind, or
//! compact (and why).

use super::{Mode, Policy, ReversibleMode};
use crate::boundary::Boundary;
use crate::budget::Budget;
use std::fmt;

/// Why compaction is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TriggerReason {
    /// The count reached the fractional trigger.
    Threshold {
        /// Tokens counted.
        count: usize,
        /// The trigger.
        trigger: usize,
    },
    /// Fewer than the configured tokens are left.
    TokensLeft {
        /// Usable tokens left.
        left: usize,
        /// The configured minimum.
        min: usize,
    },
    /// The count already exceeds the usable budget.
    OverBudget {
        /// Tokens counted.
        count: usize,
        /// The usable budget.
        usable: usize,
    },
    /// The count passed the boundary floor and the request is at a natural boundary.
    Boundary {
        /// Tokens counted.
        count: usize,
        /// The boundary floor.
        floor: usize,
        /// Which boundary.
        at: Boundary,
    },
    /// Asked for explicitly (`/compact`, `compactctl compact`).
    Manual,
    /// `reversible: only`: the reversible stage runs before every call, whatever the window.
    ReversibleOnly,
}

impl fmt::Display for TriggerReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TriggerReason::Threshold { count, trigger } => {
                write!(f, "{count} tokens reached the trigger of {trigger}")
            }
            TriggerReason::TokensLeft { left, min } => {
                write!(f, "only {left} tokens left (minimum {min})")
            }
            TriggerReason::OverBudget { count, usable } => {
                write!(f, "{count} tokens exceed the usable budget of {usable}")
            }
            TriggerReason::Boundary { count, floor, at } => {
                write!(f, "{count} tokens passed the boundary floor of {floor} at a natural boundary ({at})")
            }
            TriggerReason::Manual => f.write_str("manual compaction"),
            TriggerReason::ReversibleOnly => f.write_str("reversible stage before every call"),
        }
    }
}

/// Why a reminder is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemindReason {
    /// `remind` mode: compaction would have been triggered.
    WouldCompact(TriggerReason),
    /// `auto` mode: the count passed the soft threshold.
    SoftThreshold {
        /// Tokens counted.
        count: usize,
        /// The soft threshold.
        soft: usize,
    },
}

/// What to do before a model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing.
    None,
    /// Tell the user compaction is (nearly) due.
    Remind(RemindReason),
    /// Compact now.
    Compact(TriggerReason),
}

fn trigger(count: usize, budget: &Budget) -> Option<TriggerReason> {
    if count > budget.usable {
        return Some(TriggerReason::OverBudget {
            count,
            usable: budget.usable,
        });
    }
    if count >= budget.trigger {
        return Some(TriggerReason::Threshold {
            count,
            trigger: budget.trigger,
        });
    }
    let left = budget.usable - count;
    match budget.min_tokens_left {
        Some(min) if left <= min => Some(TriggerReason::TokensLeft { left, min }),
        _ => None,
    }
}

/// Decides what to do for a request of `count` tokens, whatever point of the work it is at.
pub fn decide(count: usize, budget: &Budget, policy: &Policy) -> Decision {
    decide_at(count, budget, policy, None)
}

/// Decides what to do for a request of `count` tokens that ends at the natural boundary `at`
/// ([`crate::boundary::natural_boundary`]): as [`decide`], and in `auto` mode also compacts from the
/// boundary floor ([`Budget::boundary`]) when the request is at a boundary.
pub fn decide_at(count: usize, budget: &Budget, policy: &Policy, at: Option<Boundary>) -> Decision {
    let hard = trigger(count, budget);
    let boundary = match (hard, budget.boundary, at) {
        (None, Some(floor), Some(at)) if count >= floor => {
            Some(TriggerReason::Boundary { count, floor, at })
        }
        _ => None,
    };
    match (policy.mode, hard.or(boundary)) {
        (Mode::Off, _) => Decision::None,
        (Mode::Remind, Some(reason)) => Decision::Remind(RemindReason::WouldCompact(reason)),
        (Mode::Auto, Some(reason)) => Decision::Compact(reason),
        (Mode::Auto, None) if policy.reversible == ReversibleMode::Only => {
            Decision::Compact(TriggerReason::ReversibleOnly)
        }
        (_, None) => match budget.soft {
            Some(soft) if count >= soft => {
                Decision::Remind(RemindReason::SoftThreshold { count, soft })
            }
            _ => Decision::None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds() {
        let policy = Policy {
            soft_trigger_pct: Some(0.7),
            min_tokens_left: Some(100),
            ..Policy::for_window(10_000)
        };
        let b = Budget::new(&policy);
        assert_eq!(decide(10, &b, &policy), Decision::None);
        assert!(matches!(
            decide(b.soft.unwrap_or(0), &b, &policy),
            Decision::Remind(RemindReason::SoftThreshold { .. })
        ));
        assert!(matches!(
            decide(b.trigger, &b, &policy),
            Decision::Compact(TriggerReason::Threshold { .. })
        ));
        assert!(matches!(
            decide(b.usable + 1, &b, &policy),
            Decision::Compact(TriggerReason::OverBudget { .. })
        ));
        let off = Policy {
            mode: Mode::Off,
            ..policy.clone()
        };
        assert_eq!(decide(b.usable * 2, &b, &off), Decision::None);
        let remind = Policy {
            mode: Mode::Remind,
            ..policy.clone()
        };
        assert!(matches!(
            decide(b.trigger, &b, &remind),
            Decision::Remind(RemindReason::WouldCompact(_))
        ));
        let tight = Policy {
            min_tokens_left: Some(b.usable - 10),
            ..policy
        };
        let tight_budget = Budget::new(&tight);
        assert!(matches!(
            decide(20, &tight_budget, &tight),
            Decision::Compact(TriggerReason::TokensLeft { .. })
        ));
    }

    #[test]
    fn a_natural_boundary_compacts_from_the_floor() {
        let policy = Policy {
            boundary_trigger_pct: Some(0.85),
            ..Policy::for_window(32_000)
        };
        let b = Budget::new(&policy);
        let floor = b.boundary.unwrap_or(usize::MAX);
        assert!(b.target < floor && floor < b.trigger);
        assert_eq!(b.boundary_gain(), floor - b.target);
        let at = Some(Boundary::TurnEnd);
        // Below the floor: nothing, boundary or not.
        assert_eq!(decide_at(floor - 1, &b, &policy, at), Decision::None);
        // Above it: compact at a boundary, wait in the middle of a chain.
        assert_eq!(
            decide_at(floor, &b, &policy, at),
            Decision::Compact(TriggerReason::Boundary {
                count: floor,
                floor,
                at: Boundary::TurnEnd
            })
        );
        assert_eq!(decide_at(floor, &b, &policy, None), Decision::None);
        // The hard trigger still fires anywhere, and names itself.
        assert!(matches!(
            decide_at(b.trigger, &b, &policy, at),
            Decision::Compact(TriggerReason::Threshold { .. })
        ));
        // Without a floor, a boundary changes nothing.
        let plain = Policy::for_window(32_000);
        let pb = Budget::new(&plain);
        assert_eq!(pb.boundary, None);
        assert_eq!(decide_at(floor, &pb, &plain, at), Decision::None);
        // A floor at or below the target is off: a compaction there would free nothing.
        let low = Policy {
            boundary_trigger_pct: Some(0.3),
            ..Policy::for_window(32_000)
        };
        assert_eq!(Budget::new(&low).boundary, None);
        // Off and remind modes never compact.
        let remind = Policy {
            mode: Mode::Remind,
            ..policy.clone()
        };
        assert!(matches!(
            decide_at(floor, &b, &remind, at),
            Decision::Remind(RemindReason::WouldCompact(TriggerReason::Boundary { .. }))
        ));
    }
}
