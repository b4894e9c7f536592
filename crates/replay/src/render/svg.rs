//! The sawtooth plot: request tokens per call for each strategy, with the window line, axes and legend,
//! as a self-contained SVG document.

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

/// Margins around the plot area (room for tick labels, titles and the legend).
const LEFT: f64 = 80.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 60.0;
/// The y axis shows up to this multiple of the window, so the window line sits well inside the plot
/// and the baseline's overflow is visible (and clipped) above it.
const HEADROOM: f64 = 1.25;
/// Aim for about this many ticks per axis.
const Y_TICKS: f64 = 6.0;
const X_TICKS: f64 = 10.0;
/// Series colours (colour-blind-friendly categorical palette); the baseline is grey, the window red.
const PALETTE: [&str; 8] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
];
const BASELINE_COLOUR: &str = "#9a9a9a";
const WINDOW_COLOUR: &str = "#d62728";

/// Renders the tokens sent at each call, sessions concatenated in input order (separated by faint
/// vertical lines), one line per strategy.
pub fn svg(report: &Report, options: PlotOptions) -> String {
    let strategies: Vec<&str> = report
        .aggregate
        .iter()
        .map(|t| t.strategy.as_str())
        .collect();
    let mut series: Vec<Vec<usize>> = vec![Vec::new(); strategies.len()];
    let mut boundaries = Vec::new();
    for session in &report.sessions {
        if !series[0].is_empty() {
            boundaries.push(series[0].len());
        }
        for (s, tokens) in session.tokens_per_call.iter().enumerate() {
            if let Some(out) = series.get_mut(s) {
                out.extend_from_slice(tokens);
            }
        }
    }
    let calls = series.iter().map(Vec::len).max().unwrap_or(0);
    let window = report.window as f64;
    let peak_real = strategies
        .iter()
        .zip(&series)
        .filter(|(name, _)| **name != NONE_STRATEGY)
        .flat_map(|(_, s)| s.iter().copied())
        .max()
        .unwrap_or(0) as f64;
    let y_top = (window * HEADROOM).max(peak_real * 1.05).max(1.0);

    let (w, h) = (f64::from(options.width), f64::from(options.height));
    let (plot_w, plot_h) = ((w - LEFT - RIGHT).max(1.0), (h - TOP - BOTTOM).max(1.0));
    let x_of = |i: usize| {
        LEFT + if calls > 1 {
            i as f64 / (calls - 1) as f64 * plot_w
        } else {
            plot_w / 2.0
        }
    };
    let y_of = |v: f64| TOP + plot_h - v.min(y_top) / y_top * plot_h;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="13">"#,
        options.width, options.height, options.width, options.height
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<defs><clipPath id="plot"><rect x="{LEFT}" y="{TOP}" width="{plot_w:.1}" height="{plot_h:.1}"/></clipPath></defs>"#
    );
    let title = format!(
        "Context tokens sent per model call — window {} tokens, {} ({} session{})",
        human_tokens(report.window as u64),
        report.model,
        report.sessions.len(),
        if report.sessions.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="28" font-size="16" font-weight="bold">{}</text>"#,
        escape(&title)
    );

    // Grid and y ticks.
    let y_step = nice_step(y_top / Y_TICKS);
    let mut v = 0.0;
    while v <= y_top + 1e-9 {
        let y = y_of(v);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e6e6e6"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            LEFT + plot_w,
            LEFT - 8.0,
            y + 4.0,
            human_tokens(v as u64)
        );
        v += y_step;
    }
    // X ticks.
    if calls > 0 {
        let x_step = nice_step(calls as f64 / X_TICKS).max(1.0) as usize;
        for i in (0..calls).step_by(x_step) {
            let x = x_of(i);
            let _ = writeln!(
                out,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#444"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                TOP + plot_h,
                TOP + plot_h + 5.0,
                TOP + plot_h + 20.0,
                i + 1
            );
        }
    }
    // Session separators.
    for &b in &boundaries {
        let x = (x_of(b - 1) + x_of(b)) / 2.0;
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{:.1}" stroke="#cccccc" stroke-dasharray="2,3"/>"##,
            TOP + plot_h
        );
    }
    // Axes.
    let _ = writeln!(
        out,
        r##"<path d="M{LEFT},{TOP} V{:.1} H{:.1}" fill="none" stroke="#444"/>"##,
        TOP + plot_h,
        LEFT + plot_w
    );
    let x_label = if report.sessions.len() > 1 {
        "model call (sessions concatenated; dotted lines separate them)"
    } else {
        "model call"
    };
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{x_label}</text>"#,
        LEFT + plot_w / 2.0,
        h - 15.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(20,{:.1}) rotate(-90)" text-anchor="middle">tokens sent</text>"#,
        TOP + plot_h / 2.0
    );

    // Series: baseline first so the strategies draw over it.
    let mut order: Vec<usize> = (0..strategies.len()).collect();
    order.sort_by_key(|&s| strategies[s] != NONE_STRATEGY);
    let colours = colours(&strategies);
    for &s in &order {
        if series[s].is_empty() {
            continue;
        }
        let mut points = String::with_capacity(series[s].len() * 14);
        for (i, &t) in series[s].iter().enumerate() {
            let _ = write!(points, "{:.1},{:.1} ", x_of(i), y_of(t as f64));
        }
        let _ = writeln!(
            out,
            r#"<polyline clip-path="url(#plot)" fill="none" stroke="{}" stroke-width="1.6" stroke-linejoin="round" points="{}"/>"#,
            colours[s],
            points.trim_end()
        );
    }
    // Window line, drawn last so it is never hidden.
    let wy = y_of(window);
    let _ = writeln!(
        out,
        r#"<line x1="{LEFT}" y1="{wy:.1}" x2="{:.1}" y2="{wy:.1}" stroke="{WINDOW_COLOUR}" stroke-width="2" stroke-dasharray="8,5"/>"#,
        LEFT + plot_w
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" fill="{WINDOW_COLOUR}" text-anchor="end" font-weight="bold">window {}</text>"#,
        LEFT + plot_w - 4.0,
        wy - 6.0,
        human_tokens(report.window as u64)
    );

    // Legend.
    let lx = LEFT + plot_w + 20.0;
    let _ = writeln!(
        out,
        r#"<text x="{lx:.1}" y="{:.1}" font-weight="bold">strategy (overflows)</text>"#,
        TOP + 10.0
    );
    for (row, (s, name)) in strategies.iter().enumerate().enumerate() {
        let y = TOP + 34.0 + row as f64 * 22.0;
        let overflows = report.aggregate[s].overflows;
        let clipped = series[s].iter().any(|&t| t as f64 > y_top);
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{} ({overflows}){}</text>"#,
            y - 4.0,
            lx + 26.0,
            y - 4.0,
            colours[s],
            lx + 34.0,
            y,
            escape(name),
            if clipped { " ↑clipped" } else { "" }
        );
    }
    let ly = TOP + 34.0 + strategies.len() as f64 * 22.0;
    let _ = writeln!(
        out,
        r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{WINDOW_COLOUR}" stroke-width="2" stroke-dasharray="8,5"/><text x="{:.1}" y="{:.1}">context window</text>"#,
        ly - 4.0,
        lx + 26.0,
        ly - 4.0,
        lx + 34.0,
        ly
    );
    out.push_str("</svg>\n");
    out
}

fn colours(strategies: &[&str]) -> Vec<&'static str> {
    let mut next = 0usize;
    strategies
        .iter()
        .map(|&name| {
            if name == NONE_STRATEGY {
                BASELINE_COLOUR
            } else {
                let c = PALETTE[next % PALETTE.len()];
                next += 1;
                c
            }
        })
        .collect()
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
