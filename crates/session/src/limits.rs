//! The session runtime's own limits and the adjustments it makes to a policy: the two-strike
//! breaker, conflict retries, room left for the calls to come, a manual compaction's target, the
//! window searched for a usable budget; and what a session id and a request must be.

use crate::error::SessionError;
use compact_core::budget::Budget;
use compact_core::model::Conversation;
use compact_core::policy::Policy;

/// Longest session id accepted.
pub const MAX_SESSION_ID_LEN: usize = 256;

/// How many times a call whose append found the log moved on catches up and tries again before
/// the conflict is its error.
pub const CONFLICT_RETRIES: u32 = 3;

/// Automatic compactions in a row that may leave the request above the trigger before automatic
/// compaction stops for the session's current user turn (the two-strike breaker): a third would
/// spend another summary and another prompt-cache rewrite on what evidently cannot shrink below the
/// trigger. A new user message resets the count (the last turn, often the irreducible part, can
/// then be compacted).
pub const MAX_STRIKES: u32 = 2;

/// Below this share of the current count a manual compaction aims (seed 003's acceptance: a manual
/// compaction reduces the estimate by at least 40%).
pub(crate) const MANUAL_TARGET_PCT: f64 = 0.5;

/// Each step of the window search shrinks the window by this factor.
pub(crate) const WINDOW_STEP: f64 = 0.95;

/// Smallest window the searches go down to (a request that does not fit this is hopeless anyway).
pub(crate) const MIN_WINDOW: usize = 1_024;

/// The largest window, from `policy`'s down in [`WINDOW_STEP`]s, whose usable budget is at most
/// `usable_max`.
pub(crate) fn window_for_usable(policy: &Policy, usable_max: usize) -> usize {
    let mut window = policy.max_context_tokens;
    while window > MIN_WINDOW && Budget::for_window(window, policy).usable > usable_max {
        window = ((window as f64) * WINDOW_STEP) as usize;
    }
    window.max(MIN_WINDOW)
}

/// Calls of room a compaction leaves below the trigger at the session's recent growth
/// ([`crate::state::Growth`]): each compaction rewrites the prompt the provider caches, so
/// compactions a handful of calls apart cost more in cache writes than the tokens they save. An
/// agent that adds 3,000 tokens a call to a 36k window gets a compaction every fourth call
/// instead of every second.
pub const ROOM_CALLS: usize = 4;

/// The lowest share of the usable budget [`room_for_growth`] lowers the target to: in a window
/// small beside what each call adds, compactions come often whatever the target, and keeping half
/// the context is worth more than the cache writes a deeper one would save.
pub const ROOM_TARGET_FLOOR_SHARE: f64 = 0.5;

/// `policy` with its target lowered, when needed, to leave [`ROOM_CALLS`] calls of `growth`
/// below the trigger, never below [`ROOM_TARGET_FLOOR_SHARE`] of the usable budget (the least gain
/// a compaction must make is unchanged, so a compaction that cannot reach the lower target still
/// counts when it frees that much).
pub(crate) fn room_for_growth(mut policy: Policy, growth: Option<usize>) -> Policy {
    let Some(growth) = growth.filter(|g| *g > 0) else {
        return policy;
    };
    let budget = Budget::new(&policy);
    let wanted = budget
        .trigger
        .saturating_sub(ROOM_CALLS.saturating_mul(growth));
    if wanted < budget.target && budget.usable > 0 {
        policy.target_pct = (wanted as f64 / budget.usable as f64).max(ROOM_TARGET_FLOOR_SHARE);
    }
    policy
}

/// The policy of a manual compaction of a request of `count` tokens: a window whose usable budget
/// is the request, a target of half of it and no minimum gain, so the user's request is honoured
/// even when the request is far from the trigger.
pub(crate) fn manual_policy(base: &Policy, count: usize) -> Policy {
    let mut policy = base.clone();
    policy.max_context_tokens = window_for_usable(base, count);
    policy.target_pct = MANUAL_TARGET_PCT;
    policy.min_gain_pct = 0.0;
    policy
}

/// Rejects empty, overlong and control-character ids.
pub(crate) fn check_session_id(session: &str) -> Result<(), SessionError> {
    if session.is_empty()
        || session.len() > MAX_SESSION_ID_LEN
        || session.chars().any(char::is_control)
    {
        return Err(SessionError::InvalidSessionId(session.to_owned()));
    }
    Ok(())
}

/// Rejects requests without items, and items without an id (recall names items by id).
pub(crate) fn check_request(request: &Conversation) -> Result<(), SessionError> {
    if request.items.is_empty() {
        return Err(SessionError::EmptyRequest);
    }
    if let Some(i) = request
        .items
        .iter()
        .position(|i| i.meta.id.as_str().is_empty())
    {
        return Err(SessionError::MalformedRequest(format!(
            "item {i} has no id (decode requests with compact_formats::wire::decode, or build them with Conversation::push)"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compaction_leaves_room_for_the_calls_to_come() {
        let policy = Policy::for_window(36_000);
        let before = Budget::new(&policy);
        // An agent adding 2,500 tokens a call: the target moves down to leave four calls of room.
        let lowered = Budget::new(&room_for_growth(policy.clone(), Some(2_500)));
        assert!(lowered.target < before.target, "{lowered:?}");
        assert!(
            lowered.trigger - lowered.target >= ROOM_CALLS * 2_500,
            "{lowered:?}"
        );
        assert_eq!(
            lowered.min_gain, before.min_gain,
            "the least gain is unchanged"
        );
        // Slow growth, or none known: the policy's own target.
        for growth in [None, Some(0), Some(100)] {
            let same = Budget::new(&room_for_growth(policy.clone(), growth));
            assert_eq!(same.target, before.target, "{growth:?}");
        }
        // Growth too large to leave that room: the target stops at half the usable budget.
        let floor = room_for_growth(policy.clone(), Some(30_000));
        assert!(floor.validate().is_ok());
        assert_eq!(
            Budget::new(&floor).target,
            (Budget::new(&floor).usable as f64 * ROOM_TARGET_FLOOR_SHARE) as usize
        );
    }
}
