//! [`DeterministicSummarizer`]: the embedded default summariser (no model): the deterministic
//! checkpoint of [`compact_core::checkpoint::build`], within the requested token budget.

use crate::summarizer::{BoxFuture, SummarizeError, Summarizer, Summary, SummaryRequest};
use compact_core::checkpoint::{build, CheckpointOptions};

/// The deterministic checkpoint as a [`Summarizer`]. Never fails, never calls a model.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeterministicSummarizer;

/// Name reported for checkpoints it produces.
pub const NAME: &str = "deterministic";

impl Summarizer for DeterministicSummarizer {
    fn costs_a_call(&self) -> bool {
        false
    }
    fn name(&self) -> &str {
        NAME
    }

    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(async move {
            let options = CheckpointOptions {
                max_tokens: request.max_tokens,
                counter: request.counter,
            };
            let checkpoint = build(request.items, request.previous, &options);
            Ok(Summary {
                text: checkpoint.text,
                produced_by: NAME.to_owned(),
                ..Summary::default()
            })
        })
    }
}
