//! Replays real agent transcripts through Compact's preflight, call by call, and measures what each
//! compaction strategy does to a session: calls over the window, compactions, tokens sent, cost with
//! prompt caching, retention of key facts, and preflight latency.
//!
//! A replay walks a transcript in order. Before each run of assistant-side items (the points where the
//! agent called the model) it hands the history *as a live session would hold it* to a
//! [`Preflighter`]: the previous compacted view with the agent's real new items appended. What the
//! preflighter returns is the request that call would send; it becomes the held history for the next
//! call. Nothing is recounted from scratch: items carry memoised token counts, and per-item fingerprints
//! and probe hits are computed once, when an item enters the held history.
//!
//! Pieces, in the order a replay uses them: [`setup`] resolves the configuration, model and prices;
//! [`load_job`] imports a transcript, undoes compactions recorded in it and derives its [`ProbeSet`];
//! [`strategy`] builds `none` or an engine strategy by name; [`run_matrix`] replays every (session,
//! strategy) pair on a few threads with [`replay_session`]; [`Report`] aggregates, and [`render`]
//! prints a table, Markdown or an SVG plot.
//!
//! Architecture invariants: a replay never fails halfway (a strategy's error is recorded on its call
//! and the held history is sent as is; a transcript that cannot be read is left out and named in
//! [`Report::skipped`]); probes are derived from the original transcript only, never
//! from a summariser's output; the replay's figures do not depend on the thread count.
//!
//! ```
//! use compact_core::model::{Conversation, Item, Role};
//! use compact_core::tokens::{Encoding, TokenCounter};
//! use compact_replay::{replay_session, NoCompaction, Pricing, ProbeSet, ReplayOptions};
//!
//! let mut conv = Conversation::default();
//! conv.push(Item::text(Role::User, "Fix the failing test in src/lib.rs"));
//! conv.push(Item::text(Role::Assistant, "Looking at it."));
//! let options = ReplayOptions {
//!     window: 32_000,
//!     usable: 24_000,
//!     counter: TokenCounter::new(Encoding::O200kBase),
//!     pricing: Pricing::default(),
//! };
//! let probes = ProbeSet::derive(&conv);
//! let run = replay_session(&conv, &probes, &mut NoCompaction, &options);
//! assert_eq!(run.calls.len(), 1);
//! assert_eq!(run.overflows(), 0);
//! ```

mod agent;
mod cache;
mod calls;
mod continuation;
mod engine;
mod error;
mod fingerprint;
mod load;
mod parallel;
mod preflighter;
mod pricing;
mod probes;
pub mod render;
mod report;
mod retention;
mod runtime;
mod session;
mod setup;
pub mod split;
mod stats;

pub use agent::AgentCalls;
pub use cache::{PrefixCache, RequestShape};
pub use calls::{call_points, is_assistant_side, run_end};
pub use continuation::{
    prune_generic, tail_within, Anchor, AnchorKind, BoundaryScore, ContinuationSet, Cut, CutScore,
    Held, SourceBoundary, CUT_SHARES, GENERIC_PROJECTS, NEXT_CALLS,
};
pub use engine::{strategy, strategy_names, strategy_with};
pub use error::ReplayError;
pub use fingerprint::fingerprint;
pub use load::{load_job, undo_source_compactions, LoadNotes};
pub use parallel::{
    checkpoint_of_size, prune_generic_jobs, run_matrix, score_boundaries, Job, ProgressSink,
};
pub use preflighter::{
    Compaction, History, NoCompaction, Outcome, Preflighter, Refusal, StrategyFactory,
    SummarizerCalls, NONE_STRATEGY,
};
pub use pricing::{Pricing, DEFAULT_MIN_CACHED_PREFIX};
pub use probes::{Probe, ProbeKind, ProbeSet};
pub use report::{Aggregate, Landings, Report, SessionReport, SkippedFile, StrategyTotals};
pub use retention::{Retention, RetentionTracker};
pub use runtime::runtime_strategy_with;
pub use session::{
    replay_session, replay_session_with_cuts, CallRecord, ReplayOptions, SessionRun,
};
pub use setup::{setup, setup_with, Setup, DEFAULT_MODEL};
pub use split::{family_of, project_of, split, Half, SplitEntry};
pub use stats::percentile;
