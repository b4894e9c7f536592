//! Retry policy: exponential backoff with jitter, honouring (and capping) `Retry-After`.

use std::time::Duration;

/// How failed calls are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub base_delay: Duration,
    /// Largest backoff delay.
    pub max_delay: Duration,
    /// Largest `Retry-After` honoured (a server asking for more gets this much, then another try).
    pub retry_after_cap: Duration,
}

/// Default retries: four, as most SDKs do (OpenAI's and Anthropic's use two to five).
pub const DEFAULT_MAX_RETRIES: u32 = 4;
/// Default first backoff: half a second.
pub const DEFAULT_BASE_DELAY: Duration = Duration::from_millis(500);
/// Default backoff ceiling.
pub const DEFAULT_MAX_DELAY: Duration = Duration::from_secs(20);
/// Default cap on `Retry-After`: a compaction waiting minutes is worse than a fallback.
pub const DEFAULT_RETRY_AFTER_CAP: Duration = Duration::from_secs(60);

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: DEFAULT_MAX_RETRIES,
            base_delay: DEFAULT_BASE_DELAY,
            max_delay: DEFAULT_MAX_DELAY,
            retry_after_cap: DEFAULT_RETRY_AFTER_CAP,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `attempt` (0-based): `base * 2^attempt` capped at `max_delay`,
    /// with "equal jitter" (a random point in the upper half), and never less than the server's
    /// `Retry-After` (itself capped at `retry_after_cap`).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.min(16)))
            .min(self.max_delay);
        let half = exp / 2;
        let jitter = half.mul_f64(fastrand::f64());
        let backoff = half + jitter;
        match retry_after {
            Some(ra) => backoff.max(ra.min(self.retry_after_cap)),
            None => backoff,
        }
    }
}

/// Parses `Retry-After` (delay-seconds, possibly fractional) or OpenAI's `retry-after-ms`.
/// HTTP-date values are not honoured (backoff applies).
pub fn parse_retry_after(
    retry_after: Option<&str>,
    retry_after_ms: Option<&str>,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let secs = retry_after?.trim().parse::<f64>().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(u32::MAX as f64)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_grows_and_is_capped() {
        let p = RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(400),
            retry_after_cap: Duration::from_secs(2),
        };
        for attempt in 0..6 {
            let d = p.delay(attempt, None);
            let exp =
                Duration::from_millis(100 * 2u64.pow(attempt)).min(Duration::from_millis(400));
            assert!(d >= exp / 2 && d <= exp, "attempt {attempt}: {d:?}");
        }
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(1))),
            Duration::from_secs(1)
        );
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(600))),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            parse_retry_after(Some("2"), None),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some("1.5"), None),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(Some("2"), Some("250")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), None),
            None
        );
        assert_eq!(parse_retry_after(Some("-1"), None), None);
    }
}
