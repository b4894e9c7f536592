//! Markdown rendering: the aggregate comparison, the same per transcript format, then one line per
//! session.

use super::{boundary_lines, human_tokens, percent, row, summarizer_lines, HEADERS};
use crate::report::Report;

/// The comparison as a Markdown table, followed by a per-session table of overflows and retention
/// and the list of files that were skipped, if any.
pub fn markdown(report: &Report) -> String {
    let mut out = format!(
        "Window {} tokens, model `{}` (`{}`), {} session(s).\n\n",
        report.window,
        report.model,
        report.encoding,
        report.sessions.len()
    );
    out.push_str(&format!("| {} |\n", HEADERS.join(" | ")));
    out.push_str(&format!("|{}\n", "---|".repeat(HEADERS.len())));
    for t in &report.aggregate {
        out.push_str(&format!("| {} |\n", row(t).join(" | ")));
    }
    if report.by_format.len() > 1 {
        for (format, totals) in &report.by_format {
            let sessions = totals.first().map_or(0, |t| t.sessions);
            out.push_str(&format!("\n`{format}` ({sessions} session(s)):\n\n"));
            out.push_str(&format!("| {} |\n", HEADERS.join(" | ")));
            out.push_str(&format!("|{}\n", "---|".repeat(HEADERS.len())));
            for t in totals {
                out.push_str(&format!("| {} |\n", row(t).join(" | ")));
            }
        }
    }
    let summarizers = summarizer_lines(report);
    if !summarizers.is_empty() {
        out.push_str("\nSummariser calls of the compactions (in the cost):\n\n");
        for line in summarizers {
            out.push_str(&format!("- {line}\n"));
        }
    }
    let boundaries = boundary_lines(report);
    if !boundaries.is_empty() {
        out.push_str("\nCompactions recorded in the transcripts (continuation anchors held):\n\n");
        for line in boundaries {
            out.push_str(&format!("- {line}\n"));
        }
    }
    if report.sessions.len() > 1 {
        let names: Vec<&str> = report
            .aggregate
            .iter()
            .map(|t| t.strategy.as_str())
            .collect();
        out.push_str("\nPer session (peak tokens / overflows / retained at the last call):\n\n");
        out.push_str(&format!("| session | calls | {} |\n", names.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(names.len() + 2)));
        for s in &report.sessions {
            let calls = s.strategies.first().map_or(0, |t| t.calls);
            let cells: Vec<String> = s
                .strategies
                .iter()
                .map(|t| {
                    format!(
                        "{} / {} / {}",
                        human_tokens(t.peak_tokens as u64),
                        t.overflows,
                        percent(t.final_retention.overall())
                    )
                })
                .collect();
            out.push_str(&format!(
                "| {} | {} | {} |\n",
                short_name(&s.name).replace('|', "\\|"),
                calls,
                cells.join(" | ")
            ));
        }
    }
    if !report.skipped.is_empty() {
        out.push_str(&format!(
            "\n{} file(s) skipped (could not be read):\n\n",
            report.skipped.len()
        ));
        for k in &report.skipped {
            out.push_str(&format!("- `{}`: {}\n", k.file.replace('`', "'"), k.reason));
        }
    }
    out
}

/// Session names longer than this are shortened in tables (corpus file names run to 200 characters).
const MAX_NAME_CHARS: usize = 56;
/// Characters kept from the end of a shortened name (the distinctive suffix: ids, extensions).
const NAME_TAIL_CHARS: usize = 16;

/// `name`, or its head and tail around an ellipsis when longer than [`MAX_NAME_CHARS`].
fn short_name(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= MAX_NAME_CHARS {
        return name.to_owned();
    }
    let head: String = chars[..MAX_NAME_CHARS - NAME_TAIL_CHARS - 1]
        .iter()
        .collect();
    let tail: String = chars[chars.len() - NAME_TAIL_CHARS..].iter().collect();
    format!("{head}…{tail}")
}
