//! Compaction orchestration around the pure core: the async [`Summarizer`] boundary (the only async
//! part of compaction), and the compactor that runs a strategy's plan, asks a summariser for the
//! checkpoint text, applies the plan and verifies the result fits.

mod summarizer;

pub use summarizer::{BoxFuture, Summarizer, SummarizeError, SummaryRequest, Summary, SummaryUsage};
