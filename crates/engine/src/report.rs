//! [`Report`]: what a compaction did, in numbers (printed by the CLI, written as `--report-json`).

use crate::summarizer::SummaryUsage;
use compact_core::policy::StrategyName;
use serde_json::{json, Value};

/// What one compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Request tokens before.
    pub tokens_before: usize,
    /// Request tokens after.
    pub tokens_after: usize,
    /// Items before.
    pub items_before: usize,
    /// Items after.
    pub items_after: usize,
    /// The strategy used.
    pub strategy: StrategyName,
    /// Tier numbers whose actions appear in the applied plan (0 truncate, 1 reference, 2 summarise or
    /// drop, 3 shrink recent).
    pub tiers_applied: Vec<u8>,
    /// Name of the summariser that produced the checkpoint (after any fallback), if one was needed.
    pub summarizer: Option<String>,
    /// Usage of the summariser's model calls.
    pub summary_usage: SummaryUsage,
    /// Tokens of the checkpoint text, if any.
    pub summary_tokens: Option<usize>,
    /// The usable budget.
    pub usable: usize,
    /// The target aimed at.
    pub target: usize,
    /// Plans made (more than 1 when the real summary was larger than planned).
    pub plans: u32,
    /// Normalisation repairs made to the input before planning.
    pub input_repairs: usize,
    /// Non-fatal problems (summariser fallbacks, target not reached).
    pub warnings: Vec<String>,
    /// Tokens the reversible stage removed on its own (estimated by the plan), before any lossy tier.
    pub reversible_saved: usize,
}

impl Report {
    /// Tokens saved.
    pub fn saved(&self) -> usize {
        self.tokens_before.saturating_sub(self.tokens_after)
    }

    /// The report as JSON (the `--report-json` document).
    pub fn to_json(&self) -> Value {
        json!({
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "items_before": self.items_before,
            "items_after": self.items_after,
            "strategy": self.strategy.as_str(),
            "tiers_applied": self.tiers_applied,
            "summarizer": self.summarizer,
            "summary_usage": {
                "calls": self.summary_usage.calls,
                "input_tokens": self.summary_usage.input_tokens,
                "output_tokens": self.summary_usage.output_tokens,
                "cached_input_tokens": self.summary_usage.cached_input_tokens,
            },
            "summary_tokens": self.summary_tokens,
            "usable": self.usable,
            "target": self.target,
            "plans": self.plans,
            "input_repairs": self.input_repairs,
            "warnings": self.warnings,
            "reversible_saved": self.reversible_saved,
        })
    }
}
