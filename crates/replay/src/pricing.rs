//! The cost model of a replay: a model's prices with prompt caching (input, cached input / cache read,
//! cache write, output) and the shortest prefix its provider caches. Prices come from the model
//! registry (`compact_core::registry`), which the configuration file can override per model.

use crate::ReplayError;

/// Providers only cache prompts of at least this many tokens (OpenAI and Anthropic's larger models
/// both document 1,024).
pub const DEFAULT_MIN_CACHED_PREFIX: usize = 1_024;

/// Prices are quoted per million tokens.
const TOKENS_PER_PRICE_UNIT: f64 = 1_000_000.0;

/// Prices of one model, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// Uncached input.
    pub input: f64,
    /// Input served from the prompt cache (cache read).
    pub cached_input: f64,
    /// Input written to the cache (Anthropic charges a premium; OpenAI charges the input price).
    pub cache_write: f64,
    /// Output.
    pub output: f64,
    /// Shortest prefix the provider caches, in tokens.
    pub min_cached_prefix: usize,
}

impl Default for Pricing {
    /// GPT-5's list price (the replay's default model).
    fn default() -> Self {
        openai(1.25, 0.125, 10.0)
    }
}

impl Pricing {
    /// Cost in USD of one call: `cached` of the `input` tokens read from the cache, the rest written
    /// to it, and `output` tokens generated.
    pub fn cost(&self, input: usize, cached: usize, output: usize) -> f64 {
        let uncached = input.saturating_sub(cached);
        (cached as f64 * self.cached_input
            + uncached as f64 * self.cache_write
            + output as f64 * self.output)
            / TOKENS_PER_PRICE_UNIT
    }

    /// Checks that every price is a finite non-negative number.
    pub fn validate(&self, model: &str) -> Result<(), ReplayError> {
        for (name, value) in [
            ("input", self.input),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
            ("output", self.output),
        ] {
            if !value.is_finite() || value < 0.0 {
                return Err(ReplayError::Pricing {
                    model: model.to_owned(),
                    reason: format!("{name} price {value} is not a non-negative number"),
                });
            }
        }
        Ok(())
    }
}

/// OpenAI-style pricing: no cache-write premium.
const fn openai(input: f64, cached_input: f64, output: f64) -> Pricing {
    Pricing {
        input,
        cached_input,
        cache_write: input,
        output,
        min_cached_prefix: DEFAULT_MIN_CACHED_PREFIX,
    }
}

impl From<compact_core::registry::Pricing> for Pricing {
    /// The registry's prices (built in or overridden under `models:` in the configuration), with the
    /// default minimum cacheable prefix.
    fn from(p: compact_core::registry::Pricing) -> Self {
        Pricing {
            input: p.input,
            cached_input: p.cached_input,
            cache_write: p.cache_write,
            output: p.output,
            min_cached_prefix: DEFAULT_MIN_CACHED_PREFIX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_splits_cached_and_written_input() {
        let p = Pricing {
            input: 3.0,
            cached_input: 0.3,
            cache_write: 3.75,
            output: 15.0,
            min_cached_prefix: 0,
        };
        let cost = p.cost(1_000_000, 400_000, 10_000);
        assert!((cost - (0.4 * 0.3 + 0.6 * 3.75 + 0.01 * 15.0)).abs() < 1e-9);
    }
}
