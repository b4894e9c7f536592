//! The token [`Budget`] of a request: window minus reserved output minus buffer, the trigger and
//! target thresholds derived from a [`Policy`], and the absolute [`Limits`] scaled to the window.

use crate::policy::Policy;

/// At most this share of the window is reserved for the reply, so small windows keep room for input.
pub const MAX_RESERVED_SHARE: f64 = 0.25;
/// At most this share of the window is kept as the hard-cap buffer.
pub const MAX_BUFFER_SHARE: f64 = 0.05;
/// Kept user messages take at most this share of the usable budget (the 20k default binds above ~80k).
pub const USER_MESSAGES_SHARE: f64 = 0.25;
/// A single tool output takes at most this share of the usable budget after tier-0 truncation.
pub const TOOL_OUTPUT_SHARE: f64 = 0.10;
/// The checkpoint takes at most this share of the usable budget. A quarter: the corpus replay at 16k
/// kept 0.82 of the probed facts with 0.15 and 0.90 with 0.25, for less cost.
pub const SUMMARY_SHARE: f64 = 0.25;
/// Tier 1 must free at least this share of the usable budget when that is less than the absolute
/// minimum (the absolute minimum would otherwise disable tier 1 on small windows).
pub const TIER1_MIN_SAVINGS_SHARE: f64 = 0.05;
/// Floor of every scaled limit: below this nothing useful fits.
pub const MIN_SCALED_LIMIT: usize = 32;
/// The target never falls below this share of the usable budget, whatever the gain asks for.
pub const MIN_TARGET_SHARE: f64 = 0.2;

/// Absolute limits of the policy, scaled down for small windows so that the irreducible floor fits
/// whenever it can.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Tokens of user messages kept verbatim.
    pub user_messages: usize,
    /// Tokens per tool output after tier-0 truncation (`None`: truncation off).
    pub tool_output: Option<usize>,
    /// Tokens of the checkpoint.
    pub summary: usize,
    /// Minimum tokens tier 1 must free.
    pub tier1_min_savings: usize,
}

/// The budget of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Context window.
    pub window: usize,
    /// Tokens reserved for the reply (after scaling).
    pub reserved_output: usize,
    /// Tokens reserved for the next step (after scaling).
    pub buffer: usize,
    /// What the input may use: `window - reserved_output - buffer`. Never exceeded by a compaction.
    pub usable: usize,
    /// Compaction trigger (`trigger_pct x usable`).
    pub trigger: usize,
    /// Soft threshold for reminders, if configured.
    pub soft: Option<usize>,
    /// Floor from which a request at a natural boundary is compacted (`boundary_trigger_pct x
    /// usable`), if configured and above the target (below it a compaction would free nothing).
    pub boundary: Option<usize>,
    /// Absolute trigger: compact when `usable - count` is at most this.
    pub min_tokens_left: Option<usize>,
    /// What compaction aims below: `target_pct x usable`, lowered where needed so that it lies at
    /// least [`Budget::min_gain`] below the trigger (but never below a fifth of the usable budget).
    /// A compaction that reaches it leaves room for that many new tokens before the next one.
    pub target: usize,
    /// Least tokens a compaction of a request that fits must free (`min_gain_pct x window`).
    pub min_gain: usize,
    /// Scaled absolute limits.
    pub limits: Limits,
}

fn share(total: usize, fraction: f64) -> usize {
    (total as f64 * fraction).floor() as usize
}

impl Budget {
    /// The budget of `policy` for its `max_context_tokens`.
    pub fn new(policy: &Policy) -> Budget {
        Budget::for_window(policy.max_context_tokens, policy)
    }

    /// The budget of `policy` for another window (e.g. a model chosen per request).
    pub fn for_window(window: usize, policy: &Policy) -> Budget {
        let reserved_output = policy
            .reserved_output_tokens
            .min(share(window, MAX_RESERVED_SHARE));
        let buffer = policy.hard_cap_buffer.min(share(window, MAX_BUFFER_SHARE));
        let usable = window.saturating_sub(reserved_output + buffer);
        let min_gain = share(window, policy.min_gain_pct);
        let scaled =
            |limit: usize, fraction: f64| limit.min(share(usable, fraction).max(MIN_SCALED_LIMIT));
        let limits = Limits {
            user_messages: scaled(policy.user_message_max_tokens, USER_MESSAGES_SHARE),
            tool_output: policy
                .tool_output
                .effective_max_tokens()
                .map(|m| scaled(m, TOOL_OUTPUT_SHARE)),
            summary: scaled(policy.summary_max_tokens, SUMMARY_SHARE),
            tier1_min_savings: scaled(policy.tier1_min_savings_tokens, TIER1_MIN_SAVINGS_SHARE),
        };
        let target = share(usable, policy.target_pct)
            .min(share(usable, policy.trigger_pct).saturating_sub(min_gain))
            .max(share(usable, MIN_TARGET_SHARE));
        Budget {
            window,
            reserved_output,
            buffer,
            usable,
            trigger: share(usable, policy.trigger_pct),
            soft: policy.soft_trigger_pct.map(|p| share(usable, p)),
            boundary: policy
                .boundary_trigger_pct
                .map(|p| share(usable, p))
                .filter(|&floor| floor > target),
            min_tokens_left: policy.min_tokens_left,
            target,
            min_gain,
            limits,
        }
    }

    /// True when `count` fits the usable budget.
    pub fn fits(&self, count: usize) -> bool {
        count <= self.usable
    }

    /// Least tokens a compaction that fired at a natural boundary must free: what lies between the
    /// boundary floor and the target (a compaction reaching the target frees that much). The full
    /// [`Budget::min_gain`] when no boundary floor is set.
    pub fn boundary_gain(&self) -> usize {
        self.boundary.map_or(self.min_gain, |floor| {
            floor.saturating_sub(self.target).max(1)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_lies_at_least_the_minimum_gain_below_the_trigger() {
        for window in [8_000, 16_000, 32_000, 128_000, 200_000, 1_000_000] {
            let b = Budget::new(&Policy::for_window(window));
            assert!(b.trigger - b.target >= b.min_gain, "{window}: {b:?}");
            assert!(b.target <= share(b.usable, crate::policy::DEFAULT_TARGET_PCT));
            assert!(b.target >= share(b.usable, MIN_TARGET_SHARE));
        }
        // A gain the window cannot give stops at the floor share instead of at zero.
        let greedy = Policy {
            min_gain_pct: 0.9,
            ..Policy::for_window(32_000)
        };
        let b = Budget::new(&greedy);
        assert_eq!(b.target, share(b.usable, MIN_TARGET_SHARE));
    }

    #[test]
    fn default_budget() {
        let b = Budget::new(&Policy::default());
        assert_eq!(b.usable, 128_000 - 20_000 - 1_024);
        assert_eq!(
            b.trigger,
            (b.usable as f64 * crate::policy::DEFAULT_TRIGGER_PCT) as usize
        );
        assert!(b.target < b.trigger);
        assert_eq!(b.min_gain, 19_200);
        assert_eq!(
            b.target,
            b.trigger - b.min_gain,
            "the gain decides the target"
        );
        assert_eq!(b.limits.user_messages, 20_000);
        assert_eq!(b.limits.tool_output, Some(6_000));
    }

    #[test]
    fn small_windows_scale_down() {
        let b = Budget::new(&Policy::for_window(8_000));
        assert_eq!(b.reserved_output, 2_000);
        assert_eq!(b.buffer, 400);
        assert_eq!(b.usable, 5_600);
        assert_eq!(b.limits.user_messages, 1_400);
        assert_eq!(b.limits.tool_output, Some(560));
        assert_eq!(b.limits.summary, 1_400, "a quarter of the usable budget");
    }
}
