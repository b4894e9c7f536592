//! Resolving `--model` / `--encoding` flags into a token counter and a context window.

use crate::exit::BadInput;
use clap::Args;
use compact_core::tokens::{Encoding, TokenCounter};

/// The `--encoding` / `--model` pair shared by several commands.
#[derive(Debug, Args, Clone, Default)]
pub struct ModelChoice {
    /// Tokenizer: o200k_base, cl100k_base or estimate.
    #[arg(long, conflicts_with = "model")]
    pub encoding: Option<String>,
    /// Model name (looked up in the model registry for its tokenizer and window).
    #[arg(long)]
    pub model: Option<String>,
}

/// The counter the flags select (default `o200k_base`).
pub fn counter(choice: &ModelChoice) -> anyhow::Result<TokenCounter> {
    if let Some(name) = &choice.encoding {
        let enc: Encoding = name
            .parse()
            .map_err(|e| BadInput(format!("--encoding: {e}")))?;
        return Ok(TokenCounter::new(enc));
    }
    if let Some(model) = &choice.model {
        let registry = compact_core::registry::ModelRegistry::builtin();
        let info = registry.lookup(model).ok_or_else(|| {
            BadInput(format!(
                "--model: unknown model `{model}` (add it under `models:` in the config)"
            ))
        })?;
        return Ok(info.counter());
    }
    Ok(TokenCounter::new(Encoding::O200kBase))
}
