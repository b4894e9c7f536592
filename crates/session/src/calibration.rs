//! [`Calibration`]: per model, the ratio of the input tokens the provider reported to our own count
//! of the same request, smoothed and bounded. Decisions use `our count x ratio` (seed 003).
//!
//! The ratio corrects what a local count cannot know: a provider's private tokenizer or framing, a
//! system prompt the provider adds. It is bounded ([`MIN_RATIO`]..=[`MAX_RATIO`]) so one odd report
//! (a usage figure for another request, cached tokens counted twice) cannot make the manager compact
//! at a tenth of the window or let a request run to twice it, and smoothed (an exponentially
//! weighted mean, weight [`SMOOTHING`] for the newest sample) so it follows drift without jumping.

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

    /// Records that the provider counted `provider_tokens` for a request we counted `our_tokens`.
    pub fn observe(
        &mut self,
        model: &str,
        provider_tokens: u64,
        our_tokens: usize,
    ) -> CalibrationUpdate {
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
}
