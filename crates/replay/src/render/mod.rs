//! Output of a replay: a terminal table, Markdown, an SVG plot of tokens per call, a self-contained
//! HTML report, and a progress bar. The plot and the report draw their charts with `compact-chart`.

mod format;
mod html;
mod markdown;
mod progress;
mod svg;
mod table;

pub use format::{human_tokens, percent};
pub use html::{html, REPORT_POLICY};
pub use markdown::markdown;
pub use progress::ProgressBar;
pub use svg::{svg, PlotOptions};
pub use table::table;

use crate::report::StrategyTotals;

/// Column headers shared by the table and Markdown renderings.
pub(crate) const HEADERS: [&str; 16] = [
    "strategy",
    "calls",
    "overflows",
    "compactions",
    "refused",
    "peak",
    "input",
    "cache hit",
    "cost $",
    "retained",
    "failures kept",
    "continued",
    "tail",
    "window",
    "p50 µs",
    "p99 µs",
];

/// One row of the comparison, as text cells in [`HEADERS`] order.
pub(crate) fn row(t: &StrategyTotals) -> Vec<String> {
    vec![
        t.strategy.clone(),
        t.calls.to_string(),
        t.overflows.to_string(),
        t.compactions.to_string(),
        t.refusals.to_string(),
        human_tokens(t.peak_tokens as u64),
        human_tokens(t.input_tokens),
        percent(Some(t.cache_hit_ratio())),
        format!("{:.2}", t.cost),
        percent(t.final_retention.overall()),
        percent(t.final_retention.of(crate::ProbeKind::FailedCommand)),
        percent(t.continuation.strategy()),
        percent(t.continuation.tail()),
        percent(t.continuation.window()),
        t.preflight_us_p50.to_string(),
        t.preflight_us_p99.to_string(),
    ]
}

/// One line per strategy whose compactions called a summariser: calls, tokens and their share of
/// the cost (empty with the deterministic checkpoint, which calls nothing).
pub(crate) fn summarizer_lines(report: &crate::report::Report) -> Vec<String> {
    report
        .aggregate
        .iter()
        .filter(|t| t.summarizer_calls > 0)
        .map(|t| {
            format!(
                "{}: {} call(s), {} input and {} output tokens, ${:.2} of the ${:.2}",
                t.strategy,
                t.summarizer_calls,
                human_tokens(t.summarizer_input_tokens),
                human_tokens(t.summarizer_output_tokens),
                t.summarizer_cost,
                t.cost,
            )
        })
        .collect()
}

/// Lines describing the transcripts' own compactions against a checkpoint and a tail of the same size
/// (empty when there were none).
pub(crate) fn boundary_lines(report: &crate::report::Report) -> Vec<String> {
    report
        .boundaries
        .iter()
        .map(|(format, b)| {
            format!(
                "{format}: {} compaction(s); the agent's summary ({} tokens) holds {}, a checkpoint of its size ({} tokens) {}, a tail of its size {}",
                b.count,
                b.mean(b.summary_tokens as f64).map_or(0, |t| t.round() as u64),
                percent(b.mean(b.summary_sum)),
                b.mean(b.checkpoint_tokens as f64).map_or(0, |t| t.round() as u64),
                percent(b.mean(b.checkpoint_sum)),
                percent(b.mean(b.tail_sum)),
            )
        })
        .collect()
}
