//! The terminal table: one row per strategy, columns aligned.

use super::{boundary_lines, row, summarizer_lines, HEADERS};
use crate::report::Report;

/// The aggregate comparison as an aligned text table, preceded by a one-line summary and followed
/// by the files that were skipped, if any.
pub fn table(report: &Report) -> String {
    let mut rows: Vec<Vec<String>> = vec![HEADERS.iter().map(|h| (*h).to_owned()).collect()];
    rows.extend(report.aggregate.iter().map(row));
    let widths: Vec<usize> = (0..HEADERS.len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!(
        "{} session(s), window {} tokens, model {} ({})\n",
        report.sessions.len(),
        report.window,
        report.model,
        report.encoding
    );
    for (i, r) in rows.iter().enumerate() {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &w))| {
                let pad = w - cell.chars().count();
                if c == 0 {
                    format!("{cell}{}", " ".repeat(pad))
                } else {
                    format!("{}{cell}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
            out.push_str(&"-".repeat(total));
            out.push('\n');
        }
    }
    let summarizers = summarizer_lines(report);
    if !summarizers.is_empty() {
        out.push_str("Summariser calls of the compactions (in the cost):\n");
        for line in summarizers {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let boundaries = boundary_lines(report);
    if !boundaries.is_empty() {
        out.push_str("Compactions recorded in the transcripts (continuation anchors held):\n");
        for line in boundaries {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if !report.skipped.is_empty() {
        out.push_str(&format!(
            "{} file(s) skipped (could not be read):\n",
            report.skipped.len()
        ));
        for k in &report.skipped {
            out.push_str(&format!("  {}: {}\n", k.file, k.reason));
        }
    }
    out
}
