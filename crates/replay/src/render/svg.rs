//! The sawtooth plot: request tokens per call, one panel per strategy over the no-compaction baseline,
//! with the window line, axes and labels, as a self-contained SVG document.

use super::human_tokens;
use crate::preflighter::NONE_STRATEGY;
use crate::report::Report;
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

/// Margins around the panels (room for tick labels, titles and the axis label).
const LEFT: f64 = 80.0;
const RIGHT: f64 = 30.0;
const TOP: f64 = 62.0;
const BOTTOM: f64 = 52.0;
/// Height of one strategy's panel, and the space above it for its title.
const PANEL_HEIGHT: f64 = 120.0;
const PANEL_TITLE: f64 = 26.0;
/// Each panel's y axis shows up to this multiple of the window, so the window line sits well inside
/// it and an overflow is visible (and clipped) above it.
const HEADROOM: f64 = 1.5;
/// Aim for about this many ticks on the x axis.
const X_TICKS: f64 = 10.0;
/// Series colours (colour-blind-friendly categorical palette); the baseline is grey, the window red.
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];
const BASELINE_COLOUR: &str = "#b5b5b5";
const WINDOW_COLOUR: &str = "#d62728";

/// Renders the tokens sent at each call as small multiples: one panel per strategy, each drawn over
/// the `none` baseline (grey) with the window line (red), sessions concatenated in input order and
/// separated by faint vertical lines. The height grows with the number of strategies.
pub fn svg(report: &Report, options: PlotOptions) -> String {
    let strategies: Vec<&str> = report
        .aggregate
        .iter()
        .map(|t| t.strategy.as_str())
        .collect();
    let mut series: Vec<Vec<usize>> = vec![Vec::new(); strategies.len()];
    let mut boundaries = Vec::new();
    for session in &report.sessions {
        if series.first().is_some_and(|s| !s.is_empty()) {
            boundaries.push(series[0].len());
        }
        for (s, tokens) in session.tokens_per_call.iter().enumerate() {
            if let Some(out) = series.get_mut(s) {
                out.extend_from_slice(tokens);
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
    let calls = series.iter().map(Vec::len).max().unwrap_or(0);
    let window = report.window as f64;
    let y_top = (window * HEADROOM).max(1.0);

    let w = f64::from(options.width);
    let plot_w = (w - LEFT - RIGHT).max(1.0);
    let h = TOP + panels.len() as f64 * (PANEL_TITLE + PANEL_HEIGHT) + BOTTOM;
    let x_of = |i: usize| {
        LEFT + if calls > 1 {
            i as f64 / (calls - 1) as f64 * plot_w
        } else {
            plot_w / 2.0
        }
    };

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{h:.0}" viewBox="0 0 {} {h:.0}" font-family="sans-serif" font-size="13">"#,
        options.width, options.width
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
        r#"<text x="{LEFT}" y="24" font-size="16" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    let _ = writeln!(
        out,
        r#"<line x1="{LEFT}" y1="41" x2="{:.0}" y2="41" stroke="{BASELINE_COLOUR}" stroke-width="3"/><text x="{:.0}" y="45">none (no compaction)</text><line x1="{:.0}" y1="41" x2="{:.0}" y2="41" stroke="{WINDOW_COLOUR}" stroke-width="2" stroke-dasharray="8,5"/><text x="{:.0}" y="45">context window</text>"#,
        LEFT + 26.0,
        LEFT + 32.0,
        LEFT + 200.0,
        LEFT + 226.0,
        LEFT + 232.0
    );

    for (k, &s) in panels.iter().enumerate() {
        let top = TOP + k as f64 * (PANEL_TITLE + PANEL_HEIGHT) + PANEL_TITLE;
        let bottom = top + PANEL_HEIGHT;
        let y_of = |v: f64| bottom - v.min(y_top) / y_top * PANEL_HEIGHT;
        let totals = &report.aggregate[s];
        let colour = if Some(s) == baseline {
            BASELINE_COLOUR
        } else {
            PALETTE[k % PALETTE.len()]
        };
        let _ = writeln!(
            out,
            r#"<text x="{LEFT}" y="{:.1}"><tspan font-weight="bold" fill="{colour}">{}</tspan> — {} overflow{}, {} compaction{}, peak {}, cache hit {}, retained {}</text>"#,
            top - 8.0,
            escape(strategies[s]),
            totals.overflows,
            if totals.overflows == 1 { "" } else { "s" },
            totals.compactions,
            if totals.compactions == 1 { "" } else { "s" },
            human_tokens(totals.peak_tokens as u64),
            super::percent(Some(totals.cache_hit_ratio())),
            super::percent(totals.final_retention.overall())
        );
        let _ = writeln!(
            out,
            r#"<defs><clipPath id="panel{k}"><rect x="{LEFT}" y="{top:.1}" width="{plot_w:.1}" height="{PANEL_HEIGHT}"/></clipPath></defs>"#
        );
        // Grid: zero, half the window, the window's top of scale.
        for v in [0.0, window / 2.0, y_top] {
            let y = y_of(v);
            let _ = writeln!(
                out,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ececec"/><text x="{:.1}" y="{:.1}" text-anchor="end" font-size="11">{}</text>"##,
                LEFT + plot_w,
                LEFT - 6.0,
                y + 4.0,
                human_tokens(v as u64)
            );
        }
        for &b in &boundaries {
            let x = (x_of(b - 1) + x_of(b)) / 2.0;
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#dddddd" stroke-dasharray="2,3"/>"##
            );
        }
        let mut lines = Vec::new();
        if let Some(b) = baseline.filter(|&b| b != s) {
            lines.push((b, BASELINE_COLOUR, 1.2));
        }
        lines.push((s, colour, 1.6));
        for (series_idx, stroke, width) in lines {
            let mut points = String::with_capacity(series[series_idx].len() * 14);
            for (i, &t) in series[series_idx].iter().enumerate() {
                let _ = write!(points, "{:.1},{:.1} ", x_of(i), y_of(t as f64));
            }
            let _ = writeln!(
                out,
                r#"<polyline clip-path="url(#panel{k})" fill="none" stroke="{stroke}" stroke-width="{width}" stroke-linejoin="round" points="{}"/>"#,
                points.trim_end()
            );
        }
        let wy = y_of(window);
        let _ = writeln!(
            out,
            r#"<line x1="{LEFT}" y1="{wy:.1}" x2="{:.1}" y2="{wy:.1}" stroke="{WINDOW_COLOUR}" stroke-width="1.5" stroke-dasharray="8,5"/><text x="{:.1}" y="{:.1}" fill="{WINDOW_COLOUR}" text-anchor="end" font-size="11">window {}</text>"#,
            LEFT + plot_w,
            LEFT + plot_w - 4.0,
            wy - 4.0,
            human_tokens(report.window as u64)
        );
        let _ = writeln!(
            out,
            r##"<path d="M{LEFT},{top:.1} V{bottom:.1} H{:.1}" fill="none" stroke="#444"/>"##,
            LEFT + plot_w
        );
    }

    // X ticks under the last panel.
    let axis = TOP + panels.len() as f64 * (PANEL_TITLE + PANEL_HEIGHT);
    if calls > 0 {
        let x_step = nice_step(calls as f64 / X_TICKS).max(1.0) as usize;
        for i in (0..calls).step_by(x_step) {
            let x = x_of(i);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{axis:.1}" x2="{x:.1}" y2="{:.1}" stroke="#444"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" font-size="11">{}</text>"##,
                axis + 5.0,
                axis + 18.0,
                i + 1
            );
        }
    }
    let x_label = if report.sessions.len() > 1 {
        "model call (sessions concatenated; dotted lines separate them)"
    } else {
        "model call"
    };
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_label}</text>"#,
        LEFT + plot_w / 2.0,
        h - 12.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">tokens sent</text>"#,
        (TOP + axis) / 2.0
    );
    out.push_str("</svg>\n");
    out
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * magnitude
}

/// Escapes text for XML content and attributes.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(1_300.0), 2_000.0);
        assert_eq!(nice_step(4_100.0), 5_000.0);
        assert_eq!(nice_step(7_000.0), 10_000.0);
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
    }
}
