//! Resolving a replay's settings once: the configuration file (if any), the environment and the
//! command line's window and model give the policy, the token counter and the prices.

use crate::pricing::Pricing;
use crate::session::ReplayOptions;
use crate::ReplayError;
use compact_config::{Config, Overrides, SummarizerSettings};
use compact_core::policy::Policy;
use compact_core::registry::ModelInfo;
use std::path::Path;

/// The model assumed when neither the command line nor the configuration names one.
pub const DEFAULT_MODEL: &str = "gpt-5";

/// Everything a replay needs besides the transcripts and the strategy names.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The compaction policy (its window is the replay's).
    pub policy: Policy,
    /// Window, counter and prices.
    pub options: ReplayOptions,
    /// The model's canonical name.
    pub model: String,
    /// Where the prices came from (`registry`, or `none` when the model has no API price).
    pub pricing_source: &'static str,
    /// The configuration's summariser (the caller builds it; the replay's own strategies use the
    /// deterministic checkpoint unless given another with [`crate::strategy_with`]).
    pub summarizer: SummarizerSettings,
}

/// Resolves the configuration (`config`, else `COMPACT_CONFIG`, else defaults), with the window and
/// model of the command line winning over it.
pub fn setup(
    config: Option<&Path>,
    window: usize,
    model: Option<&str>,
) -> Result<Setup, ReplayError> {
    setup_with(config, window, model, Overrides::default())
}

/// [`setup`] with more settings from the command line (`flags`; its window and model are the
/// arguments').
pub fn setup_with(
    config: Option<&Path>,
    window: usize,
    model: Option<&str>,
    flags: Overrides,
) -> Result<Setup, ReplayError> {
    if window == 0 {
        return Err(ReplayError::EmptyWindow);
    }
    let flags = Overrides {
        model: model.map(str::to_owned),
        max_context_tokens: Some(window),
        ..flags
    };
    let config = Config::load(config, &flags).map_err(|e| ReplayError::Config(e.to_string()))?;
    let info: ModelInfo = match config.model() {
        Some(info) => info.clone(),
        None => match config.policy().model.as_deref().or(model) {
            Some(name) => return Err(ReplayError::UnknownModel(name.to_owned())),
            None => config
                .registry()
                .lookup(DEFAULT_MODEL)
                .cloned()
                .ok_or_else(|| ReplayError::UnknownModel(DEFAULT_MODEL.to_owned()))?,
        },
    };
    let (pricing, pricing_source) = match info.pricing {
        Some(p) => {
            let pricing = Pricing::from(p);
            pricing.validate(&info.name)?;
            (pricing, "registry")
        }
        None => (Pricing::free(), "none"),
    };
    let mut policy = config.policy().clone();
    policy.max_context_tokens = window;
    Ok(Setup {
        options: ReplayOptions {
            window,
            usable: compact_core::budget::Budget::new(&policy).usable,
            counter: info.counter(),
            pricing,
        },
        policy,
        model: info.name.clone(),
        pricing_source,
        summarizer: config.summarizer().clone(),
    })
}
