//! Building a [`Compactor`] from the command line: config file, environment and flags resolved once.

use crate::exit::BadInput;
use crate::resolve::{self, ModelChoice};
use clap::Args;
use compact_core::policy::{Policy, StrategyName};
use compact_engine::{Compactor, DeterministicSummarizer, Summarizer};
use std::sync::Arc;

/// Flags shared by `compact`, `plan` and `diff`.
#[derive(Debug, Args, Clone)]
pub struct EngineArgs {
    /// Context window in tokens (default: the model's window, else the config's).
    #[arg(long)]
    pub window: Option<usize>,
    #[command(flatten)]
    pub model: ModelChoice,
    /// Strategy: tiered, codex, segmented, observation-masking, sliding-window, deletion, cfpm.
    #[arg(long)]
    pub strategy: Option<String>,
    /// Configuration file (YAML).
    #[arg(long)]
    pub config: Option<String>,
}

/// Resolves the policy and builds the compactor with the deterministic summariser.
pub fn compactor(args: &EngineArgs) -> anyhow::Result<Compactor> {
    compactor_with(args, Arc::new(DeterministicSummarizer::default()))
}

/// Resolves the policy and builds the compactor with `summarizer`.
pub fn compactor_with(args: &EngineArgs, summarizer: Arc<dyn Summarizer>) -> anyhow::Result<Compactor> {
    let counter = resolve::counter(&args.model)?;
    let policy = policy(args)?;
    Compactor::new(policy, summarizer, counter).map_err(|e| BadInput(e.to_string()).into())
}

fn policy(args: &EngineArgs) -> anyhow::Result<Policy> {
    let mut policy = Policy::default();
    if let Some(model) = &args.model.model {
        if let Some(info) = compact_core::registry::ModelRegistry::builtin().lookup(model) {
            policy.max_context_tokens = info.context_window as usize;
        }
        policy.model = Some(model.clone());
    }
    if let Some(window) = args.window {
        policy.max_context_tokens = window;
    }
    if let Some(name) = &args.strategy {
        policy.strategy = name.parse::<StrategyName>().map_err(|e| BadInput(format!("--strategy: {e}")))?;
    }
    Ok(policy)
}
