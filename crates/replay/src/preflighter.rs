//! The [`Preflighter`] boundary: what a replay asks of a strategy at each model call, and the `none`
//! baseline that never compacts.

use compact_core::model::Conversation;

/// A compaction that ran during a preflight.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compaction {
    /// The tiers (or steps) the strategy applied, in order, e.g. `["tier1", "tier2"]`.
    pub tiers: Vec<String>,
    /// Request tokens before the compaction.
    pub tokens_before: usize,
    /// Request tokens after it.
    pub tokens_after: usize,
    /// Of the tokens removed, those the reversible stage removed on its own.
    pub reversible_saved: usize,
    /// The summariser calls the compaction made (none with the deterministic checkpoint).
    pub summarizer: SummarizerCalls,
}

impl Compaction {
    /// What the engine's report of a compaction says, as the replay records it.
    pub fn of(report: &compact_engine::Report) -> Self {
        Compaction {
            tiers: report
                .tiers_applied
                .iter()
                .map(|t| format!("tier{t}"))
                .collect(),
            tokens_before: report.tokens_before,
            tokens_after: report.tokens_after,
            reversible_saved: report.reversible_saved.min(report.saved()),
            summarizer: SummarizerCalls {
                calls: report.summary_usage.calls,
                input_tokens: report.summary_usage.input_tokens,
                cached_input_tokens: report.summary_usage.cached_input_tokens,
                output_tokens: report.summary_usage.output_tokens,
            },
        }
    }
}

/// What a compaction's summariser calls used, as the provider reported it: priced by the replay
/// on top of the call the compaction preceded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SummarizerCalls {
    /// Calls made (failed ones included).
    pub calls: u32,
    /// Input tokens billed.
    pub input_tokens: u64,
    /// Of those, tokens read from the provider's cache.
    pub cached_input_tokens: u64,
    /// Output tokens billed.
    pub output_tokens: u64,
}

/// What a preflight did to the history when it did not compact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum History {
    /// Handed back exactly as held.
    #[default]
    AsHeld,
    /// Repaired in place (e.g. normalised: a synthetic result for an interrupted call), so per-item
    /// data must be recomputed although no compaction ran.
    Repaired,
}

/// What a preflight produced: the request to send, which is also the history held for the next call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// The conversation the call sends.
    pub conversation: Conversation,
    /// `Some` when the preflight compacted the history.
    pub compaction: Option<Compaction>,
    /// Without a compaction: whether the history came back exactly as held (the replay then keeps its
    /// per-item data instead of recomputing it) or repaired.
    pub history: History,
}

/// A preflight that could not bring the history within budget. The live session would still have sent
/// the history it held, so the replay sends `conversation` and counts the failure.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Refusal {
    /// The history, handed back unchanged.
    pub conversation: Conversation,
    /// Why (e.g. the engine's `InsufficientBudget` message).
    pub reason: String,
}

/// One strategy as a live session would run it: called before every model call with the history it
/// holds. Implementations may keep state between calls (one instance serves one session).
pub trait Preflighter: Send {
    /// Runs the preflight on `held`, taking it by value so that no call has to clone the history.
    fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>>;
}

/// The baseline: never compacts, so its overflows are the honest count of calls over the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoCompaction;

impl Preflighter for NoCompaction {
    fn preflight(&mut self, held: Conversation) -> Result<Outcome, Box<Refusal>> {
        Ok(Outcome {
            conversation: held,
            compaction: None,
            history: History::AsHeld,
        })
    }
}

/// A named strategy that starts a fresh [`Preflighter`] for each session.
pub struct StrategyFactory {
    name: String,
    start: Box<dyn Fn() -> Box<dyn Preflighter> + Send + Sync>,
}

impl StrategyFactory {
    /// A strategy called `name` whose sessions start with `start()`.
    pub fn new(
        name: impl Into<String>,
        start: impl Fn() -> Box<dyn Preflighter> + Send + Sync + 'static,
    ) -> Self {
        StrategyFactory {
            name: name.into(),
            start: Box::new(start),
        }
    }

    /// The `none` baseline.
    pub fn none() -> Self {
        StrategyFactory::new(NONE_STRATEGY, || Box::new(NoCompaction))
    }

    /// The strategy's name as reported.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A preflighter for a new session.
    pub fn start(&self) -> Box<dyn Preflighter> {
        (self.start)()
    }
}

impl std::fmt::Debug for StrategyFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StrategyFactory")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Name of the no-compaction baseline.
pub const NONE_STRATEGY: &str = "none";
