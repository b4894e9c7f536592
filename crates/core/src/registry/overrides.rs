//! User overrides of the model registry: plain data (as a config file would hold it) applied on top of
//! the built-in table, patching known models and adding new ones.

use super::{lookup, ModelInfo, ModelRegistry, Pricing, Provider};
use crate::tokens::{Encoding, Framing};

/// One model entry from user configuration. Every field but `name` is optional: for a known model
/// (matched by canonical name or alias, exactly) the given fields replace the built-in ones; an
/// unknown name adds a model, which then needs at least `context_window`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ModelOverride {
    /// Model name as the user will ask for it.
    pub name: String,
    /// Extra aliases (added to the model's existing ones).
    pub aliases: Vec<String>,
    /// Provider (decides the framing when `framing` is not given). Default for new models: `Other`.
    pub provider: Option<Provider>,
    /// Context window in tokens.
    pub context_window: Option<u32>,
    /// Output cap in tokens. Default for new models: the context window.
    pub max_output_tokens: Option<u32>,
    /// Tokenizer. Default for new models: the calibrated estimate.
    pub encoding: Option<Encoding>,
    /// Framing. Default: the provider's.
    pub framing: Option<Framing>,
    /// Prices per million tokens.
    pub pricing: Option<Pricing>,
}

/// Why an override was rejected. Each variant names the model entry at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RegistryError {
    /// The entry has an empty name.
    #[error("model override #{index} has an empty name")]
    EmptyName {
        /// Position of the entry in the override list.
        index: usize,
    },
    /// A new model without a context window.
    #[error("model `{name}` is not built in: its override must set context_window")]
    MissingContextWindow {
        /// The model name.
        name: String,
    },
    /// A zero context window or output cap.
    #[error("model `{name}`: {field} must be greater than zero")]
    Zero {
        /// The model name.
        name: String,
        /// The offending field.
        field: &'static str,
    },
    /// A price that is negative or not a finite number.
    #[error("model `{name}`: price `{field}` must be a finite, non-negative number (got {value})")]
    BadPrice {
        /// The model name.
        name: String,
        /// The offending field.
        field: &'static str,
        /// The value given.
        value: f64,
    },
}

fn check_pricing(name: &str, p: &Pricing) -> Result<(), RegistryError> {
    let fields = [
        ("input", p.input),
        ("cached_input", p.cached_input),
        ("cache_write", p.cache_write),
        ("output", p.output),
    ];
    for (field, value) in fields {
        if !value.is_finite() || value < 0.0 {
            return Err(RegistryError::BadPrice {
                name: name.to_owned(),
                field,
                value,
            });
        }
    }
    Ok(())
}

fn check_nonzero(name: &str, field: &'static str, v: Option<u32>) -> Result<(), RegistryError> {
    if v == Some(0) {
        return Err(RegistryError::Zero {
            name: name.to_owned(),
            field,
        });
    }
    Ok(())
}

impl ModelRegistry {
    /// Applies user overrides in order (a later entry wins). Stops at the first invalid entry and
    /// names it; the registry is returned only when every entry is valid.
    pub fn with_overrides(
        mut self,
        overrides: impl IntoIterator<Item = ModelOverride>,
    ) -> Result<Self, RegistryError> {
        for (index, o) in overrides.into_iter().enumerate() {
            self.apply(index, o)?;
        }
        Ok(self)
    }

    fn apply(&mut self, index: usize, o: ModelOverride) -> Result<(), RegistryError> {
        let name = o.name.trim().to_owned();
        if name.is_empty() {
            return Err(RegistryError::EmptyName { index });
        }
        check_nonzero(&name, "context_window", o.context_window)?;
        check_nonzero(&name, "max_output_tokens", o.max_output_tokens)?;
        if let Some(p) = &o.pricing {
            check_pricing(&name, p)?;
        }
        let key = lookup::normalize(&name);
        let existing = self.models.iter_mut().find(|m| {
            lookup::normalize(&m.name) == key
                || m.aliases.iter().any(|a| lookup::normalize(a) == key)
        });
        match existing {
            Some(m) => {
                if let Some(p) = o.provider {
                    m.provider = p;
                    m.framing = p.framing();
                }
                if let Some(v) = o.context_window {
                    m.context_window = v;
                }
                if let Some(v) = o.max_output_tokens {
                    m.max_output_tokens = v;
                }
                if let Some(v) = o.encoding {
                    m.encoding = v;
                }
                if let Some(v) = o.framing {
                    m.framing = v;
                }
                if o.pricing.is_some() {
                    m.pricing = o.pricing;
                }
                m.aliases.extend(o.aliases);
            }
            None => {
                let context_window = o
                    .context_window
                    .ok_or(RegistryError::MissingContextWindow { name: name.clone() })?;
                let provider = o.provider.unwrap_or(Provider::Other);
                self.models.push(ModelInfo {
                    name,
                    aliases: o.aliases,
                    provider,
                    context_window,
                    max_output_tokens: o.max_output_tokens.unwrap_or(context_window),
                    encoding: o.encoding.unwrap_or(Encoding::Estimate),
                    framing: o.framing.unwrap_or(provider.framing()),
                    pricing: o.pricing,
                });
            }
        }
        Ok(())
    }
}
