//! The status of each user request (done / in progress / open), inferred from what followed it.
//!
//! The rule, applied to each request and the span of items up to the next request (or the end):
//! 1. If the latest plan / todo list was written in that span and it has steps: *done* when every step
//!    is completed (or cancelled), otherwise *in progress*.
//! 2. Otherwise, *done* when the last assistant message of the span states completion ("all tests
//!    pass", "is fixed", "completed", "implemented", ...).
//! 3. Otherwise *in progress* when the assistant did anything in the span (a message or a tool call),
//!    and *open* when it did nothing.
//!
//!
//! A request the user stopped (a harness's interruption note in its span, see
//! [`crate::facts::Interruption`]) is *interrupted by the user*, unless work after the last note
//! finished it by rule 1 or 2. A note before the span's first request stops a request an earlier
//! record holds (see [`interrupted_earlier`]).
//!
//! The rule is deliberately conservative: a request is only *done* when the record says so.

use crate::facts::{Facts, StepStatus};
use std::collections::HashSet;
use std::fmt;

/// The status of a user request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestStatus {
    /// The record says it was finished.
    Done,
    /// Work started but was not confirmed finished.
    InProgress,
    /// Nothing was done about it yet.
    Open,
    /// The user stopped it before it was finished.
    Interrupted,
}

impl fmt::Display for RequestStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RequestStatus::Done => "done",
            RequestStatus::InProgress => "in progress",
            RequestStatus::Open => "open",
            RequestStatus::Interrupted => "interrupted by the user",
        })
    }
}

/// The status of each of `facts.user_requests`, in order (see the module documentation for the rule).
pub fn request_statuses(facts: &Facts) -> Vec<RequestStatus> {
    let reqs = &facts.user_requests;
    // Sorted positions and a set, so each request's span is looked up in logarithmic time (a
    // conversation of many small requests stays linear, not quadratic).
    let mut replies = facts.replies.clone();
    replies.sort_unstable();
    let mut activity = facts.activity.clone();
    activity.sort_unstable();
    let completions: HashSet<usize> = facts.completions.iter().map(|c| c.at).collect();
    reqs.iter()
        .enumerate()
        .map(|(k, req)| {
            let end = reqs.get(k + 1).map_or(usize::MAX, |next| next.at);
            // The last interruption in the request's span, if any: only what came after it can
            // finish the request.
            let stopped = facts
                .interruptions
                .iter()
                .rev()
                .map(|i| i.at)
                // A note in the same message as the next request (typed after it) stops this one.
                .find(|&at| at > req.at && at <= end);
            let start = stopped.unwrap_or(req.at);
            let inside = |at: usize| at > start && at < end;
            if let Some(plan) = facts
                .plan
                .as_ref()
                .filter(|p| inside(p.at) && !p.steps.is_empty())
            {
                let finished = plan
                    .steps
                    .iter()
                    .all(|s| matches!(s.status, StepStatus::Done | StepStatus::Cancelled));
                return if finished {
                    RequestStatus::Done
                } else {
                    RequestStatus::InProgress
                };
            }
            // The last reply before `end`, if it is after `start`.
            let last_reply = replies[..replies.partition_point(|&at| at < end)]
                .last()
                .copied()
                .filter(|&at| inside(at));
            if last_reply.is_some_and(|r| completions.contains(&r)) {
                return RequestStatus::Done;
            }
            if stopped.is_some() {
                return RequestStatus::Interrupted;
            }
            // The first activity after `start`, if it is before `end`.
            let first_activity = activity.get(activity.partition_point(|&at| at <= start));
            if first_activity.is_some_and(|&at| inside(at)) {
                RequestStatus::InProgress
            } else {
                RequestStatus::Open
            }
        })
        .collect()
}

/// True when the user stopped work before the first request of `facts` (or in a span with no
/// request): the request interrupted is the latest one an earlier record holds.
pub fn interrupted_earlier(facts: &Facts) -> bool {
    facts
        .interruptions
        .first()
        .is_some_and(|i| facts.user_requests.first().is_none_or(|r| i.at <= r.at))
}
