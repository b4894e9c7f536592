//! Strategies run through the session runtime ([`compact_session::CompactManager`]), as the proxy
//! and the Python binding run them: the host sends its whole history on every call and the runtime
//! keeps the view (incremental preflight, room left for the calls to come, the pinned opening
//! request). This is the replay's default, so that its figures are those of the code users run;
//! [`crate::strategy_with`] runs the engine's stateless preflight instead.

use crate::engine::parse_strategy;
use crate::preflighter::{
    Compaction, History, Outcome, Preflighter, Refusal, StrategyFactory, NONE_STRATEGY,
};
use crate::ReplayError;
use compact_core::model::{Conversation, Item};
use compact_core::policy::Policy;
use compact_core::tokens::TokenCounter;
use compact_engine::Summarizer;
use compact_session::{CompactManager, MemoryStore, SessionConfig};
use std::sync::Arc;

/// The strategy called `name` under `policy`, run through the session runtime with `summarizer`
/// writing its checkpoints (each replayed session gets a manager of its own over an in-memory log).
pub fn runtime_strategy_with(
    name: &str,
    policy: &Policy,
    counter: TokenCounter,
    summarizer: Arc<dyn Summarizer>,
) -> Result<StrategyFactory, ReplayError> {
    if name == NONE_STRATEGY {
        return Ok(StrategyFactory::none());
    }
    let mut policy = policy.clone();
    policy.strategy = parse_strategy(name)?;
    policy
        .validate()
        .map_err(|e| ReplayError::Policy(e.to_string()))?;
    let mut config = SessionConfig::new(policy, counter).with_summarizer(summarizer);
    // What is sent is never redacted; the log only the replay reads needs no redaction.
    config.redactor = None;
    Ok(StrategyFactory::new(name, move || {
        let manager = CompactManager::open(config.clone(), Arc::new(MemoryStore::new()))
            .unwrap_or_else(|e| unreachable!("an in-memory store opens: {e}"));
        Box::new(RuntimePreflight {
            manager,
            history: Conversation::default(),
            sent: 0,
        })
    }))
}

/// One replayed session in a session runtime of its own.
struct RuntimePreflight {
    manager: CompactManager,
    /// Everything the host sent so far (the runtime is sent the whole history, as by a proxy).
    history: Conversation,
    /// Items of the request returned last: what the replay holds beyond them is new.
    sent: usize,
}

/// The one session of a replay's manager.
const SESSION: &str = "replay";

impl Preflighter for RuntimePreflight {
    fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>> {
        let new: &[Item] = held.items.get(self.sent..).unwrap_or_default();
        self.history.items.extend_from_slice(new);
        self.history.tools.clone_from(&held.tools);
        self.history.format = held.format;
        self.history.extra.clone_from(&held.extra);
        match self.manager.preflight(SESSION, &self.history) {
            Ok(prepared) => {
                let compaction = prepared.report.compaction.as_ref().map(Compaction::of);
                let conversation = Conversation::clone(&prepared.conversation);
                drop(prepared);
                self.sent = conversation.items.len();
                let history = if compaction.is_none() && conversation.items == held.items {
                    History::AsHeld
                } else {
                    History::Repaired
                };
                // Held as the replay holds it: a history handed back as it was stays the
                // replay's own copy (its per-item data stays valid).
                let conversation = match history {
                    History::AsHeld => held,
                    History::Repaired => conversation,
                };
                Ok(Outcome {
                    conversation,
                    compaction,
                    history,
                })
            }
            Err(e) => {
                self.sent = held.items.len();
                Err(Box::new(Refusal {
                    conversation: held,
                    reason: e.to_string(),
                }))
            }
        }
    }
}
