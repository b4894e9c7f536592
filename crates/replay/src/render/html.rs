//! A replay's report as one self-contained HTML file (`compactctl replay --html`): the per-strategy
//! table, cost and retention charts, the probes each strategy lost, and per session the sawtooth of
//! every strategy against the window and its retention per call. Inline CSS and SVG (drawn by
//! `compact-chart`, as the web view's are), no script, and a content security policy that allows
//! nothing from anywhere, so the file can be shared and opened offline; every name from a
//! transcript is escaped.

use crate::probes::ProbeKind;
use crate::report::{Report, StrategyTotals};
use compact_chart::{bars, escape, percent, preview, thousands, LineChart, Rule, Series};
use std::fmt::Write as _;

/// The file's policy: inline styles only; no script, no network, nothing else.
pub const REPORT_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:16px 24px;color:#222;max-width:1280px}\
table{border-collapse:collapse;margin:8px 0}th,td{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f0f0f0}svg.chart{width:100%;height:auto;border:1px solid #e4e4e4;margin:4px 0}\
h2{font-size:17px;margin-top:28px}h3{font-size:15px}.muted{color:#666}";

/// Height of a session's sawtooth plot.
const SAWTOOTH_HEIGHT: f64 = 220.0;
/// Height of a session's retention plot.
const RETENTION_HEIGHT: f64 = 90.0;

fn strategy_table(totals: &[StrategyTotals]) -> String {
    let mut out = String::from(
        "<table class=\"strategies\"><thead><tr><th>strategy</th><th>sessions</th><th>calls</th><th>overflows</th><th>compactions</th><th>refusals</th><th>peak tokens</th><th>input tokens</th><th>cache hits</th><th>cost (USD)</th><th>retention (end)</th><th>retention (per call)</th><th>preflight p50 µs</th></tr></thead><tbody>",
    );
    for t in totals {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.4}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&t.strategy),
            t.sessions,
            thousands(t.calls as u64),
            t.overflows,
            t.compactions,
            t.refusals,
            thousands(t.peak_tokens as u64),
            thousands(t.input_tokens),
            percent(Some(t.cache_hit_ratio())),
            t.cost,
            percent(t.final_retention.overall()),
            percent(t.call_retention.overall()),
            thousands(t.preflight_us_p50)
        );
    }
    out.push_str("</tbody></table>");
    out
}

fn probes_lost(totals: &[StrategyTotals]) -> String {
    let mut out = String::from("<table class=\"probes-lost\"><thead><tr><th>strategy</th>");
    for kind in ProbeKind::ALL {
        let _ = write!(out, "<th>{}</th>", escape(kind.as_str()));
    }
    out.push_str("<th>lost of expected</th></tr></thead><tbody>");
    for t in totals {
        let r = &t.final_retention;
        let _ = write!(out, "<tr><td>{}</td>", escape(&t.strategy));
        for kind in ProbeKind::ALL {
            let i = kind.index();
            let _ = write!(
                out,
                "<td>{} / {}</td>",
                r.expected[i].saturating_sub(r.present[i]),
                r.expected[i]
            );
        }
        let expected: u32 = r.expected.iter().sum();
        let present: u32 = r.present.iter().sum();
        let _ = write!(
            out,
            "<td>{} / {expected}</td></tr>",
            expected.saturating_sub(present)
        );
    }
    out.push_str("</tbody></table>");
    out
}

/// At most this many lost probes are listed per strategy and session (the counts are complete).
const MAX_LOST_LISTED: usize = 40;
/// Characters of a lost probe's text shown.
const LOST_TEXT_CHARS: usize = 160;

/// The probes each strategy lost by a session's last call, by kind and text.
fn lost_list(totals: &[StrategyTotals], lost: &[Vec<(ProbeKind, String)>]) -> String {
    let mut out = String::new();
    for (t, probes) in totals.iter().zip(lost) {
        if probes.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            "<details class=\"lost\"><summary>{}: {} probe(s) lost by the last call</summary><ul>",
            escape(&t.strategy),
            probes.len()
        );
        for (kind, text) in probes.iter().take(MAX_LOST_LISTED) {
            let _ = write!(
                out,
                "<li><b>{}</b> {}</li>",
                escape(kind.as_str()),
                escape(&preview(text, LOST_TEXT_CHARS))
            );
        }
        if probes.len() > MAX_LOST_LISTED {
            let _ = write!(out, "<li>… {} more</li>", probes.len() - MAX_LOST_LISTED);
        }
        out.push_str("</ul></details>");
    }
    out
}

/// The report as one HTML document.
pub fn html(report: &Report) -> String {
    let names: Vec<&str> = report
        .aggregate
        .iter()
        .map(|t| t.strategy.as_str())
        .collect();
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="{REPORT_POLICY}"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>compact replay: {} at {} tokens</title><style>{STYLE}</style></head><body>
<h1>Replay: {} sessions, {} at a {} token window</h1>
<p class="muted">tokenizer {} · strategies {}</p>
<h2>Per strategy</h2>
"#,
        escape(&report.model),
        thousands(report.window as u64),
        report.sessions.len(),
        escape(&report.model),
        thousands(report.window as u64),
        escape(&report.encoding),
        escape(&names.join(", "))
    );
    out.push_str(&strategy_table(&report.aggregate));
    out.push_str("\n<h2>Cost</h2>\n");
    out.push_str(&bars(
        "cost",
        "cost per strategy (USD)",
        &report
            .aggregate
            .iter()
            .map(|t| (t.strategy.clone(), t.cost, format!("${:.4}", t.cost)))
            .collect::<Vec<_>>(),
    ));
    out.push_str("\n<h2>Retention</h2>\n<p class=\"muted\">Share of the probes (facts the transcript established) the model can still see at each session's last call.</p>\n");
    out.push_str(&bars(
        "retention",
        "retention at the last call per strategy",
        &report
            .aggregate
            .iter()
            .map(|t| {
                let r = t.final_retention.overall();
                (t.strategy.clone(), r.unwrap_or(0.0), percent(r))
            })
            .collect::<Vec<_>>(),
    ));
    out.push_str("\n<h2>Probes lost</h2>\n<p class=\"muted\">Per kind, the probes expected at each session's last call that its request no longer holds (each session lists them below its table).</p>\n");
    out.push_str(&probes_lost(&report.aggregate));
    out.push_str("\n<h2>Sessions</h2>\n");
    for s in &report.sessions {
        let _ = write!(
            out,
            "<section class=\"session\"><h3>{}</h3><p class=\"muted\">{} · {} items</p>",
            escape(&s.name),
            escape(&s.format),
            thousands(s.items as u64)
        );
        out.push_str(
            &LineChart {
                class: "sawtooth",
                title: format!("tokens per call of {}", s.name),
                height: SAWTOOTH_HEIGHT,
                y_max: 0.0,
                series: s
                    .strategies
                    .iter()
                    .zip(&s.tokens_per_call)
                    .map(|(t, calls)| Series {
                        name: t.strategy.clone(),
                        values: calls.iter().map(|&n| Some(n as f64)).collect(),
                    })
                    .collect(),
                rules: vec![Rule {
                    label: format!("window {}", thousands(report.window as u64)),
                    value: report.window as f64,
                    color: "#c0392b",
                }],
                markers: Vec::new(),
                percent: false,
                ..LineChart::default()
            }
            .render(),
        );
        out.push_str(
            &LineChart {
                class: "retention",
                title: format!("retention per call of {}", s.name),
                height: RETENTION_HEIGHT,
                y_max: 1.0,
                series: s
                    .strategies
                    .iter()
                    .zip(&s.retention_per_call)
                    .map(|(t, calls)| Series {
                        name: t.strategy.clone(),
                        values: calls.clone(),
                    })
                    .collect(),
                rules: Vec::new(),
                markers: Vec::new(),
                percent: true,
                ..LineChart::default()
            }
            .render(),
        );
        out.push_str(&strategy_table(&s.strategies));
        out.push_str(&lost_list(&s.strategies, &s.lost_probes));
        out.push_str("</section>\n");
    }
    if !report.skipped.is_empty() {
        out.push_str("<h2>Skipped</h2><ul>");
        for k in &report.skipped {
            let _ = write!(out, "<li>{}: {}</li>", escape(&k.file), escape(&k.reason));
        }
        out.push_str("</ul>");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lost_probes_are_listed_escaped_and_bounded() {
        let totals = [
            StrategyTotals {
                strategy: "none".to_owned(),
                ..StrategyTotals::default()
            },
            StrategyTotals {
                strategy: "<b>drop</b>".to_owned(),
                ..StrategyTotals::default()
            },
        ];
        let many: Vec<(ProbeKind, String)> = (0..MAX_LOST_LISTED + 3)
            .map(|i| (ProbeKind::FailedCommand, format!("<script>x{i}</script>")))
            .collect();
        let html = lost_list(&totals, &[Vec::new(), many]);
        assert_eq!(html.matches("<details").count(), 1, "none lost nothing");
        assert!(html.contains("&lt;b&gt;drop&lt;/b&gt;: 43 probe(s) lost"));
        assert!(!html.contains("<script>"));
        assert_eq!(html.matches("<li><b>").count(), MAX_LOST_LISTED);
        assert!(html.contains("… 3 more"));
    }
}
