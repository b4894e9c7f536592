//! Compaction orchestration around the pure core: the async [`Summarizer`] boundary (the only async
//! part of compaction), the [`Compactor`] that runs a strategy's plan, asks a summariser for the
//! checkpoint text, applies the plan and verifies the result, and [`Compactor::preflight`] that
//! decides before each model call. The decision and the compaction it asks for are one step
//! ([`decide`], [`Compactor::compact_due`]) that the session runtime wraps as well.
//!
//! Architecture invariants: every compaction attempt shrinks the conversation or returns a typed
//! error (never a loop); a failed summariser never changes the history; the output normalises with
//! zero diagnostics. No async runtime is required: [`block_on`] drives the futures with std only.
//!
//! ```
//! use compact_core::model::{Conversation, Item, Role};
//! use compact_core::policy::Policy;
//! use compact_core::tokens::{Encoding, TokenCounter};
//! use compact_engine::{block_on, Compactor, DeterministicSummarizer};
//! use std::sync::Arc;
//!
//! let mut conv = Conversation::default();
//! conv.push(Item::text(Role::System, "You are a coding agent."));
//! for i in 0..40 {
//!     conv.push(Item::text(Role::User, format!("step {i}: please look at module {i} ").repeat(20)));
//!     conv.push(Item::text(Role::Assistant, format!("module {i} looks fine ").repeat(30)));
//! }
//! let compactor = Compactor::new(
//!     Policy::for_window(8_000),
//!     Arc::new(DeterministicSummarizer::default()),
//!     TokenCounter::new(Encoding::O200kBase),
//! )
//! .unwrap();
//! let done = block_on(compactor.compact(&conv)).unwrap();
//! assert!(done.report.tokens_after < done.report.tokens_before);
//! ```

mod block_on;
mod compactor;
mod deterministic;
mod error;
mod preflight;
mod report;
mod step;
mod summarizer;

pub use block_on::block_on;
pub use compactor::{Compaction, Compactor, DryRun, MAX_PLANS};
pub use deterministic::DeterministicSummarizer;
pub use error::CompactError;
pub use preflight::Preflight;
pub use report::Report;
pub use step::{decide, Due, Settled};
pub use summarizer::{
    BoxFuture, SummarizeError, Summarizer, Summary, SummaryRequest, SummaryUsage,
};
