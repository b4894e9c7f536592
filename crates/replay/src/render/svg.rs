//! The sawtooth plot (`compactctl replay --plot`): request tokens per call, one panel per strategy
//! over the no-compaction baseline, with the window line, axes and labels, as a self-contained SVG
//! document. Each panel is a `compact_chart::LineChart` (the chart the web view and the HTML report
//! draw); this file only lays the panels out and labels them.

use super::{human_tokens, percent};
use crate::preflighter::NONE_STRATEGY;
use crate::report::Report;
use compact_chart::{escape, LineChart, Rule, Series, WIDTH};
use std::fmt::Write as _;

/// Size of the plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlotOptions {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Default for PlotOptions {
    fn default() -> Self {
        PlotOptions {
            width: 1100,
            height: 560,
        }
    }
}

/// Room above the panels for the document's title.
const TITLE_BAND: f64 = 36.0;
/// Room above each panel for its heading (the strategy and its figures).
const HEADING_BAND: f64 = 22.0;
/// Room below the panels for the x axis label.
const FOOTER_BAND: f64 = 28.0;
/// Left edge of the title and the headings (right of the y axis label).
const TEXT_LEFT: f64 = 24.0;
/// Height of one strategy's plot.
const PANEL_HEIGHT: f64 = 120.0;
/// Each panel's y axis shows up to this multiple of the window, so the window line sits well inside
/// it and an overflow is visible (and cut at the top) above it.
const HEADROOM: f64 = 1.5;
/// The window line's colour.
const WINDOW_COLOUR: &str = "#d62728";
/// The baseline's name in each panel's legend.
const BASELINE_NAME: &str = "none (no compaction)";

/// Renders the tokens sent at each call as small multiples: one panel per strategy, each drawn over
/// the `none` baseline with the window line, sessions concatenated in input order and separated by
/// faint dotted lines. The height grows with the number of strategies; `options.width` sets the
/// document's width in pixels (its view box is the charts' width, scaled).
pub fn svg(report: &Report, options: PlotOptions) -> String {
    let strategies: Vec<&str> = report
        .aggregate
        .iter()
        .map(|t| t.strategy.as_str())
        .collect();
    let mut series: Vec<Vec<Option<f64>>> = vec![Vec::new(); strategies.len()];
    let mut breaks = Vec::new();
    for session in &report.sessions {
        if series.first().is_some_and(|s| !s.is_empty()) {
            breaks.push(series[0].len());
        }
        for (s, tokens) in session.tokens_per_call.iter().enumerate() {
            if let Some(out) = series.get_mut(s) {
                out.extend(tokens.iter().map(|&t| Some(t as f64)));
            }
        }
    }
    let baseline = strategies.iter().position(|n| *n == NONE_STRATEGY);
    let mut panels: Vec<usize> = (0..strategies.len())
        .filter(|&s| Some(s) != baseline)
        .collect();
    if panels.is_empty() {
        panels.extend(baseline);
    }
    let window = report.window as f64;
    let charts: Vec<LineChart> = panels
        .iter()
        .map(|&s| {
            let mut lines = Vec::with_capacity(2);
            if let Some(b) = baseline.filter(|&b| b != s) {
                lines.push(Series {
                    name: BASELINE_NAME.to_owned(),
                    values: series[b].clone(),
                });
            }
            lines.push(Series {
                name: strategies[s].to_owned(),
                values: series[s].clone(),
            });
            LineChart {
                class: "panel",
                title: format!("tokens sent per call under {}", strategies[s]),
                height: PANEL_HEIGHT,
                y_top: Some((window * HEADROOM).max(1.0)),
                series: lines,
                rules: vec![Rule {
                    label: format!("window {}", human_tokens(report.window as u64)),
                    value: window,
                    color: WINDOW_COLOUR,
                }],
                breaks: breaks.clone(),
                ..LineChart::default()
            }
        })
        .collect();

    let panels_height: f64 = charts.iter().map(|c| HEADING_BAND + c.view_height()).sum();
    let h = TITLE_BAND + panels_height + FOOTER_BAND;
    let pixel_height = (h * f64::from(options.width) / WIDTH).round();
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{pixel_height}" viewBox="0 0 {WIDTH} {h}" font-family="sans-serif" font-size="13">"#,
        options.width
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let title = format!(
        "Context tokens sent per model call — window {} tokens, {} ({} session{})",
        human_tokens(report.window as u64),
        report.model,
        report.sessions.len(),
        if report.sessions.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        r#"<text x="{TEXT_LEFT}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        escape(&title)
    );

    let mut top = TITLE_BAND;
    for (&s, chart) in panels.iter().zip(&charts) {
        let totals = &report.aggregate[s];
        let _ = writeln!(
            out,
            r#"<text x="{TEXT_LEFT}" y="{:.1}"><tspan font-weight="bold">{}</tspan> — {} overflow{}, {} compaction{}, peak {}, cache hit {}, retained {}</text>"#,
            top + HEADING_BAND - 6.0,
            escape(strategies[s]),
            totals.overflows,
            if totals.overflows == 1 { "" } else { "s" },
            totals.compactions,
            if totals.compactions == 1 { "" } else { "s" },
            human_tokens(totals.peak_tokens as u64),
            percent(Some(totals.cache_hit_ratio())),
            percent(totals.final_retention.overall())
        );
        top += HEADING_BAND;
        out.push_str(&chart.render_at(0.0, top));
        out.push('\n');
        top += chart.view_height();
    }

    let x_label = if report.sessions.len() > 1 {
        "model call (sessions concatenated; dotted lines separate them)"
    } else {
        "model call"
    };
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_label}</text>"#,
        WIDTH / 2.0,
        h - 10.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">tokens sent</text>"#,
        TITLE_BAND + panels_height / 2.0
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::report::{SessionReport, StrategyTotals};

    fn report(strategies: &[&str], sessions: &[&[usize]]) -> Report {
        let totals = |name: &str| StrategyTotals {
            strategy: name.to_owned(),
            overflows: 1,
            ..StrategyTotals::default()
        };
        Report {
            window: 1_000,
            model: "m<&>".to_owned(),
            encoding: "o200k_base".to_owned(),
            sessions: sessions
                .iter()
                .map(|calls| SessionReport {
                    name: "s".to_owned(),
                    format: "f".to_owned(),
                    items: 0,
                    probes: [0; crate::ProbeKind::COUNT],
                    strategies: strategies.iter().map(|n| totals(n)).collect(),
                    tokens_per_call: strategies.iter().map(|_| calls.to_vec()).collect(),
                    retention_per_call: Vec::new(),
                    lost_probes: Vec::new(),
                })
                .collect(),
            aggregate: strategies.iter().map(|n| totals(n)).collect(),
            by_format: Vec::new(),
            skipped: Vec::new(),
            boundaries: Vec::new(),
        }
    }

    /// Every number of every coordinate or size attribute in `doc`.
    fn numbers(doc: &str) -> Vec<f64> {
        let mut found = Vec::new();
        for attr in [
            " x=\"",
            " y=\"",
            " x1=\"",
            " y1=\"",
            " x2=\"",
            " y2=\"",
            " width=\"",
            " height=\"",
            " points=\"",
            " viewBox=\"",
        ] {
            for value in doc.split(attr).skip(1) {
                let value = value.split('"').next().unwrap();
                if value.ends_with('%') {
                    continue;
                }
                for n in value.split([' ', ',']).filter(|n| !n.is_empty()) {
                    found.push(n.parse::<f64>().unwrap());
                }
            }
        }
        found
    }

    #[test]
    fn one_panel_per_strategy_over_the_baseline_with_the_window_and_finite_coordinates() {
        let doc = svg(
            &report(
                &["none", "drop-oldest", "<b>tiered</b>"],
                &[&[100, 900, 1_600], &[5_000, 200]],
            ),
            PlotOptions::default(),
        );
        assert!(doc.starts_with(r#"<svg xmlns="http://www.w3.org/2000/svg" width="1100""#));
        assert!(doc.trim_end().ends_with("</svg>"));
        assert_eq!(doc.matches(r#"<svg class="chart panel""#).count(), 2);
        assert_eq!(
            doc.matches("<polyline").count(),
            4,
            "baseline + strategy, twice"
        );
        assert_eq!(
            doc.matches(BASELINE_NAME).count(),
            4,
            "line and legend, twice"
        );
        assert_eq!(doc.matches(r#"class="rule""#).count(), 2);
        assert_eq!(doc.matches("window 1.0k").count(), 3, "title and two rules");
        assert_eq!(doc.matches(r#"class="break""#).count(), 2);
        assert!(doc.contains("&lt;b&gt;tiered&lt;/b&gt;</tspan> — 1 overflow,"));
        assert!(doc.contains("m&lt;&amp;&gt;"));
        assert!(!doc.contains("<b>") && !doc.contains("m<&>"));
        assert!(doc.contains("sessions concatenated"));
        let numbers = numbers(&doc);
        assert!(numbers.len() > 50);
        assert!(numbers.iter().all(|n| n.is_finite()));
        // Calls over 1.5 times the window are cut at the panel's top, not off the chart.
        assert!(numbers.iter().all(|n| *n >= 0.0));
    }

    #[test]
    fn only_the_baseline_and_nothing_at_all_still_draw_a_document() {
        let doc = svg(&report(&["none"], &[&[10, 20]]), PlotOptions::default());
        assert_eq!(doc.matches(r#"<svg class="chart panel""#).count(), 1);
        assert_eq!(doc.matches("<polyline").count(), 1);
        assert!(!doc.contains("sessions concatenated"));
        let empty = svg(&report(&[], &[]), PlotOptions::default());
        assert!(empty.starts_with("<svg xmlns="));
        assert!(numbers(&empty).iter().all(|n| n.is_finite()));
    }
}
