//! Strategies by name: `none` (the baseline) and every engine strategy, run through the engine's
//! preflight exactly as a live session would call it, with the deterministic checkpoint
//! ([`strategy`]) or another summariser ([`strategy_with`]: an LLM or a provider's own compaction,
//! whose calls the replay prices).

use crate::preflighter::{
    Compaction, History, Outcome, Preflighter, Refusal, StrategyFactory, NONE_STRATEGY,
};
use crate::ReplayError;
use compact_core::model::Conversation;
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::TokenCounter;
use compact_engine::{block_on, Compactor, DeterministicSummarizer, Summarizer};
use std::sync::Arc;

/// Every strategy name a replay accepts, baseline first.
pub fn strategy_names() -> Vec<&'static str> {
    std::iter::once(NONE_STRATEGY)
        .chain(StrategyName::ALL.iter().map(|s| s.as_str()))
        .collect()
}

/// The strategy called `name` under `policy` (whose window is the replay's), counting with
/// `counter`, its checkpoints written by the deterministic summariser.
pub fn strategy(
    name: &str,
    policy: &Policy,
    counter: TokenCounter,
) -> Result<StrategyFactory, ReplayError> {
    strategy_with(name, policy, counter, Arc::new(DeterministicSummarizer))
}

/// [`strategy`], its checkpoints written by `summarizer` (shared by every session; its calls are
/// made from the replay's worker threads, and their usage is priced with each compaction).
pub fn strategy_with(
    name: &str,
    policy: &Policy,
    counter: TokenCounter,
    summarizer: Arc<dyn Summarizer>,
) -> Result<StrategyFactory, ReplayError> {
    if name == NONE_STRATEGY {
        return Ok(StrategyFactory::none());
    }
    let parsed = parse_strategy(name)?;
    let compactor = Compactor::new(policy.clone(), summarizer, counter)
        .map_err(|e| ReplayError::Policy(e.to_string()))?
        .with_strategy(parsed);
    let compactor = Arc::new(compactor);
    Ok(StrategyFactory::new(name, move || {
        Box::new(EnginePreflight {
            compactor: Arc::clone(&compactor),
        })
    }))
}

/// The engine strategy called `name`.
pub(crate) fn parse_strategy(name: &str) -> Result<StrategyName, ReplayError> {
    name.parse().map_err(|_| ReplayError::UnknownStrategy {
        name: name.to_owned(),
        known: strategy_names().join(", "),
    })
}

/// A session driven by the engine's [`Compactor::preflight`].
struct EnginePreflight {
    compactor: Arc<Compactor>,
}

impl Preflighter for EnginePreflight {
    fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>> {
        match block_on(self.compactor.preflight(&held)) {
            Ok(done) => match done.report {
                Some(report) => Ok(Outcome {
                    conversation: done.conversation,
                    compaction: Some(Compaction::of(&report)),
                    history: History::AsHeld,
                }),
                // Without a compaction the engine sends the normalised history: usually equal to the
                // held one (kept, so its per-item data stays valid), else repaired.
                None if done.conversation == held => Ok(Outcome {
                    conversation: held,
                    compaction: None,
                    history: History::AsHeld,
                }),
                None => Ok(Outcome {
                    conversation: done.conversation,
                    compaction: None,
                    history: History::Repaired,
                }),
            },
            Err(e) => Err(Box::new(Refusal {
                conversation: held,
                reason: e.to_string(),
            })),
        }
    }
}
