//! Strategies by name: `none` (the baseline) and every engine strategy, run through the engine's
//! preflight with the deterministic checkpoint, exactly as a live session would call it.

use crate::preflighter::{
    Compaction, History, Outcome, Preflighter, Refusal, StrategyFactory, NONE_STRATEGY,
};
use crate::ReplayError;
use compact_core::model::Conversation;
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::TokenCounter;
use compact_engine::{block_on, Compactor, DeterministicSummarizer};
use std::sync::Arc;

/// Every strategy name a replay accepts, baseline first.
pub fn strategy_names() -> Vec<&'static str> {
    std::iter::once(NONE_STRATEGY)
        .chain(StrategyName::ALL.iter().map(|s| s.as_str()))
        .collect()
}

/// The strategy called `name` under `policy` (whose window is the replay's), counting with `counter`.
pub fn strategy(
    name: &str,
    policy: &Policy,
    counter: TokenCounter,
) -> Result<StrategyFactory, ReplayError> {
    if name == NONE_STRATEGY {
        return Ok(StrategyFactory::none());
    }
    let unknown = || ReplayError::UnknownStrategy {
        name: name.to_owned(),
        known: strategy_names().join(", "),
    };
    let parsed: StrategyName = name.parse().map_err(|_| unknown())?;
    let compactor = Compactor::new(policy.clone(), Arc::new(DeterministicSummarizer), counter)
        .map_err(|e| ReplayError::Policy(e.to_string()))?
        .with_strategy(parsed);
    let compactor = Arc::new(compactor);
    Ok(StrategyFactory::new(name, move || {
        Box::new(EnginePreflight {
            compactor: Arc::clone(&compactor),
        })
    }))
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
                    compaction: Some(Compaction {
                        tiers: report
                            .tiers_applied
                            .iter()
                            .map(|t| format!("tier{t}"))
                            .collect(),
                        tokens_before: report.tokens_before,
                        tokens_after: report.tokens_after,
                        reversible_saved: report.reversible_saved.min(report.saved()),
                    }),
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
