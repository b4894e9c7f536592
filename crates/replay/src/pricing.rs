//! The cost model of a replay: a model's prices with prompt caching (the registry's
//! [`compact_core::registry::Pricing`]: input, cached input / cache read, cache write, output) and the
//! shortest prefix its provider caches. Prices come from the model registry, which the configuration
//! file can override per model.

use crate::ReplayError;
use compact_core::registry;

/// Providers only cache prompts of at least this many tokens (OpenAI and Anthropic's larger models
/// both document 1,024).
pub const DEFAULT_MIN_CACHED_PREFIX: usize = 1_024;

/// GPT-5's list price in USD per million tokens (the replay's default model); OpenAI charges no
/// cache-write premium, so writing costs the input price.
const GPT5_PRICES: registry::Pricing = registry::Pricing {
    input: 1.25,
    cached_input: 0.125,
    cache_write: 1.25,
    output: 10.0,
};

/// No price at all: what a model without a first-party API price costs.
const NO_PRICES: registry::Pricing = registry::Pricing {
    input: 0.0,
    cached_input: 0.0,
    cache_write: 0.0,
    output: 0.0,
};

/// Prices of one model and the caching threshold of its provider.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// The model's prices, in USD per million tokens.
    pub prices: registry::Pricing,
    /// Shortest prefix the provider caches, in tokens.
    pub min_cached_prefix: usize,
}

impl Default for Pricing {
    /// GPT-5's list price (the replay's default model).
    fn default() -> Self {
        Pricing::from(GPT5_PRICES)
    }
}

impl Pricing {
    /// All prices zero (for a model without a first-party API price), with the default minimum
    /// cacheable prefix.
    pub fn free() -> Self {
        Pricing::from(NO_PRICES)
    }

    /// Cost in USD of one call: `cached` of the `input` tokens read from the cache, the rest written
    /// to it, and `output` tokens generated.
    pub fn cost(&self, input: usize, cached: usize, output: usize) -> f64 {
        let uncached = input.saturating_sub(cached);
        // Every input token is either read from the cache or written to it: none is billed as plain
        // uncached input.
        self.prices
            .cost(0, cached as u64, uncached as u64, output as u64)
    }

    /// Cost in USD of a summariser's calls: `cached` of the `input` tokens read from the cache, the
    /// rest billed as plain input (a summariser's request is not kept for later calls to read), and
    /// `output` tokens generated.
    pub fn summarizer_cost(&self, input: u64, cached: u64, output: u64) -> f64 {
        self.prices
            .cost(input.saturating_sub(cached), cached, 0, output)
    }

    /// Checks that every price is a finite non-negative number.
    pub fn validate(&self, model: &str) -> Result<(), ReplayError> {
        match self.prices.first_invalid() {
            Some((name, value)) => Err(ReplayError::Pricing {
                model: model.to_owned(),
                reason: format!("{name} price {value} is not a non-negative number"),
            }),
            None => Ok(()),
        }
    }
}

impl From<registry::Pricing> for Pricing {
    /// The registry's prices (built in or overridden under `models:` in the configuration), with the
    /// default minimum cacheable prefix.
    fn from(prices: registry::Pricing) -> Self {
        Pricing {
            prices,
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
            prices: registry::Pricing {
                input: 3.0,
                cached_input: 0.3,
                cache_write: 3.75,
                output: 15.0,
            },
            min_cached_prefix: 0,
        };
        let cost = p.cost(1_000_000, 400_000, 10_000);
        assert!((cost - (0.4 * 0.3 + 0.6 * 3.75 + 0.01 * 15.0)).abs() < 1e-9);
    }
}
