//! [`Calibration`]: per model, the ratio of the input tokens the provider reported to our own count
//! of the same request, smoothed and bounded. Decisions use `our count x ratio` (seed 003).
//!
//! The ratio corrects what a local count cannot know: a provider's private tokenizer or framing, a
//! system prompt the provider adds. It is bounded ([`MIN_RATIO`]..=[`MAX_RATIO`]) so one odd report
//! (a usage figure for another request, cached tokens counted twice) cannot make the manager compact
//! at a tenth of the window or let a request run to twice it, and smoothed (an exponentially
//! weighted mean, weight [`SMOOTHING`] for the newest sample) so it follows drift without jumping.
//!
//! A sample needs our exact count of the request. When the preflight sent a request whose count is
//! only an upper bound (the bound could not reach any threshold, so the exact count was not made
//! yet: see `crate::preflight`), a usage reported for it is held ([`Calibration::hold_against`])
//! and taken, in order, once the exact count is made ([`Calibration::settle`]): the ratios are then
//! those the samples would have given at once.

use std::collections::BTreeMap;

/// The smallest ratio used: the provider counts half of what we count.
pub const MIN_RATIO: f64 = 0.5;
/// The largest ratio used: the provider counts twice what we count.
pub const MAX_RATIO: f64 = 2.0;
/// Weight of the newest sample in the running mean: about the last five reports matter.
pub const SMOOTHING: f64 = 0.3;

/// Ratios per model for one session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Calibration {
    ratios: BTreeMap<String, f64>,
    /// Samples reported against a count that is only a bound, held until it is counted.
    held: Option<Held>,
}

/// Usage samples reported against an upper bound of the request's count.
#[derive(Debug, Clone, Default, PartialEq)]
struct Held {
    /// The bound the request was sent with (what a usage compares with).
    bound: usize,
    /// Each report's model and provider tokens, in order.
    samples: Vec<(String, u64)>,
}

/// What one recorded usage did to the calibration.
#[derive(Debug, Clone, PartialEq)]
pub struct CalibrationUpdate {
    /// The model.
    pub model: String,
    /// Provider-reported input tokens.
    pub provider_tokens: u64,
    /// Our count of the request.
    pub our_tokens: usize,
    /// `provider_tokens / our_tokens`, unbounded.
    pub sample: f64,
    /// The ratio now in force (smoothed, bounded).
    pub ratio: f64,
    /// True when the sample lay outside the bounds and was clamped.
    pub clamped: bool,
}

fn bound(r: f64) -> f64 {
    if r.is_finite() {
        r.clamp(MIN_RATIO, MAX_RATIO)
    } else {
        1.0
    }
}

impl Calibration {
    /// The ratio for `model` (1.0 until a usage was recorded).
    pub fn ratio(&self, model: &str) -> f64 {
        self.ratios.get(model).copied().unwrap_or(1.0)
    }

    /// Every model's ratio.
    pub fn ratios(&self) -> &BTreeMap<String, f64> {
        &self.ratios
    }

    /// Sets `model`'s ratio as stored (bounded), e.g. when reloading a session.
    pub fn set(&mut self, model: &str, ratio: f64) {
        self.ratios.insert(model.to_owned(), bound(ratio));
    }

    /// The request just sent was counted only as far as an upper bound, `bound`: a usage reported
    /// against it is held (the ratio stays as it is) until [`Calibration::settle`] gives the exact
    /// count.
    pub fn hold_against(&mut self, bound: usize) {
        self.held = Some(Held {
            bound,
            samples: Vec::new(),
        });
    }

    /// True while usage samples are held against a bound.
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// The exact count of the request that was sent with a bound: the samples held for it are
    /// taken now, in the order they were reported (the ratios become what they would have been).
    /// `None` drops them (the request can no longer be counted).
    pub fn settle(&mut self, exact: Option<usize>) -> Vec<CalibrationUpdate> {
        let Some(held) = self.held.take() else {
            return Vec::new();
        };
        let Some(exact) = exact else {
            return Vec::new();
        };
        held.samples
            .into_iter()
            .map(|(model, provider)| self.observe(&model, provider, exact))
            .collect()
    }

    /// Records that the provider counted `provider_tokens` for a request we counted `our_tokens`.
    /// While the last request's count is held as a bound ([`Calibration::hold_against`]), a report
    /// against that bound is held: the update returned then leaves the ratio as it is.
    pub fn observe(
        &mut self,
        model: &str,
        provider_tokens: u64,
        our_tokens: usize,
    ) -> CalibrationUpdate {
        if let Some(held) = self.held.as_mut().filter(|h| h.bound == our_tokens) {
            held.samples.push((model.to_owned(), provider_tokens));
            let sample = provider_tokens as f64 / our_tokens.max(1) as f64;
            return CalibrationUpdate {
                model: model.to_owned(),
                provider_tokens,
                our_tokens,
                sample,
                ratio: self.ratio(model),
                clamped: !(MIN_RATIO..=MAX_RATIO).contains(&sample),
            };
        }
        let sample = provider_tokens as f64 / our_tokens.max(1) as f64;
        let clamped = !(MIN_RATIO..=MAX_RATIO).contains(&sample);
        let ratio = match self.ratios.get(model) {
            None => bound(sample),
            Some(old) => bound(old + SMOOTHING * (bound(sample) - old)),
        };
        self.ratios.insert(model.to_owned(), ratio);
        CalibrationUpdate {
            model: model.to_owned(),
            provider_tokens,
            our_tokens,
            sample,
            ratio,
            clamped,
        }
    }

    /// `count x ratio`, rounded up.
    pub fn effective(&self, model: &str, count: usize) -> usize {
        (count as f64 * self.ratio(model)).ceil() as usize
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ratios_are_smoothed_and_bounded() {
        let mut c = Calibration::default();
        assert_eq!(c.ratio("m"), 1.0);
        let first = c.observe("m", 1_100, 1_000);
        assert!((first.ratio - 1.1).abs() < 1e-9);
        let wild = c.observe("m", 100_000, 1_000);
        assert!(wild.clamped);
        assert!(wild.ratio <= MAX_RATIO && wild.ratio > 1.1);
        for _ in 0..100 {
            c.observe("m", 1, 1_000);
        }
        assert!((c.ratio("m") - MIN_RATIO).abs() < 1e-9);
        c.set("m", MIN_RATIO);
        assert_eq!(c.effective("m", 1_000), 500);
        c.set("m", 9.0);
        assert_eq!(c.ratio("m"), MAX_RATIO, "a stored ratio is bounded too");
        assert_eq!(c.ratio("other"), 1.0);
    }

    #[test]
    fn samples_held_against_a_bound_are_taken_in_order_once_counted() {
        let mut eager = Calibration::default();
        let mut held = Calibration::default();
        eager.observe("m", 1_000, 900);
        held.observe("m", 1_000, 900);
        // The next request's exact count is 1,200; it was sent with a bound of 5,000.
        held.hold_against(5_000);
        assert!(held.holds());
        let pending = held.observe("m", 1_500, 5_000);
        assert_eq!(
            pending.ratio,
            held.ratio("m"),
            "a held sample moves nothing yet"
        );
        held.observe("m", 1_400, 5_000);
        eager.observe("m", 1_500, 1_200);
        eager.observe("m", 1_400, 1_200);
        assert_ne!(held, eager);
        let taken = held.settle(Some(1_200));
        assert_eq!(taken.len(), 2);
        assert_eq!(taken[1].our_tokens, 1_200);
        assert_eq!(held, eager, "the same ratios, bit for bit");
        assert!(!held.holds());
        // A report against another count is taken at once, and a dropped hold takes nothing.
        held.hold_against(7);
        let now = held.observe("m", 100, 90);
        assert_ne!(now.ratio, eager.ratio("m"));
        assert!(held.settle(None).is_empty());
        assert!(!held.holds());
    }
}
