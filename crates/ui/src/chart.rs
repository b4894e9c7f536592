//! Inline SVG charts, drawn here in Rust: a line chart (the token sawtooth per call, with the window
//! and trigger as horizontal rules and compactions as markers; also the cache-hit share and the
//! retention per call) and a horizontal bar chart (cost, retention per strategy). Presentation
//! attributes only (no `style`), so the pages' content security policy needs no inline styles for
//! them. Every label goes through [`escape`]; drawing is linear in the number of points.

use crate::html::escape;
use std::fmt::Write as _;

/// Width of every chart's view box; the page scales it to its container.
const WIDTH: f64 = 960.0;
/// Room left of the plot for the y axis labels.
const LEFT: f64 = 64.0;
/// Room right of the plot for the rules' labels.
const RIGHT: f64 = 96.0;
/// Room above the plot for the legend.
const TOP: f64 = 24.0;
/// Room below the plot for the x axis labels.
const BOTTOM: f64 = 24.0;

/// The y axis of a count chart ends this much above its largest value.
const HEADROOM: f64 = 1.05;
/// Line colours, in series order (a colour-blind safe set).
const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c564b", "#000000",
];

/// One line: a value per call (`None` where it has none).
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Values, one per x position.
    pub values: Vec<Option<f64>>,
}

/// A horizontal rule across the plot (the window, the trigger).
#[derive(Debug, Clone)]
pub struct Rule {
    /// Label at its right end.
    pub label: String,
    /// Its y value.
    pub value: f64,
    /// Colour.
    pub color: &'static str,
}

/// A marker at one x position (a compaction), drawn from `from` down to `to`, linked when `href`
/// is given.
#[derive(Debug, Clone)]
pub struct Marker {
    /// The x position (call index).
    pub x: usize,
    /// Top of its bar (tokens before).
    pub from: f64,
    /// Bottom of its bar (tokens after).
    pub to: f64,
    /// Tooltip text.
    pub title: String,
    /// Where clicking it leads (an already-encoded URL built by the caller from fixed parts).
    pub href: Option<String>,
    /// Value of its `data-seq` attribute (what tests and scripts find it by).
    pub id: String,
}

/// A line chart.
#[derive(Debug, Clone, Default)]
pub struct LineChart {
    /// Value of the chart's `class` attribute beside `chart` (`sawtooth`, `cache`).
    pub class: &'static str,
    /// Accessible title.
    pub title: String,
    /// Plot height in view-box units.
    pub height: f64,
    /// The y axis top (at least every value, rule and marker).
    pub y_max: f64,
    /// The lines.
    pub series: Vec<Series>,
    /// The rules.
    pub rules: Vec<Rule>,
    /// The markers.
    pub markers: Vec<Marker>,
    /// Format of a y value (tokens, a share).
    pub percent: bool,
}

fn y_label(value: f64, percent: bool) -> String {
    if percent {
        format!("{:.0}%", value * 100.0)
    } else if value >= 1_000_000.0 {
        format!("{:.1}M", value / 1_000_000.0)
    } else if value >= 1_000.0 {
        format!("{:.0}k", value / 1_000.0)
    } else {
        format!("{value:.0}")
    }
}

impl LineChart {
    /// The chart as an `<svg>` element.
    pub fn render(&self) -> String {
        let points = self
            .series
            .iter()
            .map(|s| s.values.len())
            .max()
            .unwrap_or(0);
        let data_max = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied())
            .chain(self.rules.iter().map(|r| r.value))
            .chain(self.markers.iter().map(|m| m.from))
            .fold(self.y_max, f64::max);
        // Shares end at 100%; counts get a little headroom above their largest value.
        let y_max = if self.percent {
            data_max.max(1.0)
        } else if data_max > 0.0 {
            data_max * HEADROOM
        } else {
            1.0
        };
        let plot_w = WIDTH - LEFT - RIGHT;
        let height = TOP + self.height + BOTTOM;
        let x_of = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / points.max(1) as f64;
        let y_of = |v: f64| TOP + self.height * (1.0 - v / y_max);
        let mut out = String::with_capacity(256 + points * 16 * self.series.len().max(1));
        let _ = write!(
            out,
            r##"<svg class="chart {}" viewBox="0 0 {WIDTH} {height}" role="img" data-points="{points}" data-series="{}" xmlns="http://www.w3.org/2000/svg"><title>{}</title>"##,
            self.class,
            self.series.len(),
            escape(&self.title)
        );
        // Axes and y ticks.
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="#888"/><line x1="{LEFT}" y1="{}" x2="{}" y2="{}" stroke="#888"/>"##,
            TOP + self.height,
            TOP + self.height,
            WIDTH - RIGHT,
            TOP + self.height
        );
        for k in 0..=4 {
            let v = y_max * f64::from(k) / 4.0;
            let y = y_of(v);
            let _ = write!(
                out,
                r##"<text x="{}" y="{:.1}" font-size="11" text-anchor="end" fill="#555">{}</text><line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#eee"/>"##,
                LEFT - 4.0,
                y + 4.0,
                y_label(v, self.percent),
                WIDTH - RIGHT
            );
        }
        let _ = write!(
            out,
            r##"<text x="{LEFT}" y="{}" font-size="11" fill="#555">call 1</text><text x="{}" y="{}" font-size="11" text-anchor="end" fill="#555">call {points}</text>"##,
            height - 6.0,
            WIDTH - RIGHT,
            height - 6.0
        );
        for rule in &self.rules {
            let y = y_of(rule.value);
            let _ = write!(
                out,
                r##"<line class="rule" x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="{}" stroke-dasharray="6 4"/><text x="{}" y="{:.1}" font-size="11" fill="{}">{}</text>"##,
                WIDTH - RIGHT,
                rule.color,
                WIDTH - RIGHT + 4.0,
                y + 4.0,
                rule.color,
                escape(&rule.label)
            );
        }
        for (n, series) in self.series.iter().enumerate() {
            let color = PALETTE[n % PALETTE.len()];
            let _ = write!(
                out,
                r##"<polyline class="series" data-name="{}" fill="none" stroke="{color}" stroke-width="1.5" points=""##,
                escape(&series.name)
            );
            for (i, v) in series.values.iter().enumerate() {
                if let Some(v) = v {
                    let _ = write!(out, "{:.1},{:.1} ", x_of(i), y_of(*v));
                }
            }
            out.push_str(r#""/>"#);
            let _ = write!(
                out,
                r##"<rect x="{}" y="4" width="10" height="10" fill="{color}"/><text x="{}" y="13" font-size="11" fill="#333">{}</text>"##,
                LEFT + 8.0 + 150.0 * n as f64,
                LEFT + 22.0 + 150.0 * n as f64,
                escape(&series.name)
            );
        }
        for m in &self.markers {
            let x = x_of(m.x);
            let body = format!(
                r##"<g class="compaction" data-seq="{}"><title>{}</title><line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#d55e00" stroke-width="2"/><circle cx="{x:.1}" cy="{:.1}" r="5" fill="#d55e00"/></g>"##,
                escape(&m.id),
                escape(&m.title),
                y_of(m.from),
                y_of(m.to),
                y_of(m.from)
            );
            match &m.href {
                Some(href) => {
                    let _ = write!(out, r#"<a href="{}">{body}</a>"#, escape(href));
                }
                None => out.push_str(&body),
            }
        }
        out.push_str("</svg>");
        out
    }
}

/// A horizontal bar chart: one bar per label.
pub fn bars(class: &str, title: &str, rows: &[(String, f64, String)]) -> String {
    const ROW: f64 = 22.0;
    const LABEL: f64 = 180.0;
    let max = rows.iter().map(|r| r.1).fold(0.0, f64::max);
    let height = ROW * rows.len() as f64 + 8.0;
    let plot_w = WIDTH - LABEL - RIGHT;
    let mut out = format!(
        r##"<svg class="chart bars {}" viewBox="0 0 {WIDTH} {height}" role="img" data-points="{}" xmlns="http://www.w3.org/2000/svg"><title>{}</title>"##,
        escape(class),
        rows.len(),
        escape(title)
    );
    for (i, (label, value, shown)) in rows.iter().enumerate() {
        let y = 4.0 + ROW * i as f64;
        let w = if max > 0.0 {
            (plot_w * value / max).max(1.0)
        } else {
            1.0
        };
        let _ = write!(
            out,
            r##"<text x="{}" y="{:.1}" font-size="12" text-anchor="end" fill="#333">{}</text><rect class="bar" x="{LABEL}" y="{y:.1}" width="{w:.1}" height="{}" fill="{}"/><text x="{:.1}" y="{:.1}" font-size="12" fill="#333">{}</text>"##,
            LABEL - 6.0,
            y + 14.0,
            escape(label),
            ROW - 6.0,
            PALETTE[i % PALETTE.len()],
            LABEL + w + 4.0,
            y + 14.0,
            escape(shown)
        );
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_line_chart_draws_every_point_rule_and_marker_with_escaped_labels() {
        let chart = LineChart {
            class: "sawtooth",
            title: "<b>tokens</b>".to_owned(),
            height: 200.0,
            y_max: 0.0,
            series: vec![Series {
                name: "s<1>".to_owned(),
                values: vec![Some(10.0), None, Some(30.0)],
            }],
            rules: vec![Rule {
                label: "window".to_owned(),
                value: 40.0,
                color: "#c00",
            }],
            markers: vec![Marker {
                x: 2,
                from: 30.0,
                to: 5.0,
                title: "tier \"1\"".to_owned(),
                href: Some("/s/a/compaction/3".to_owned()),
                id: "3".to_owned(),
            }],
            percent: false,
        }
        .render();
        assert!(chart.contains(r#"data-points="3""#));
        assert!(chart.contains("&lt;b&gt;tokens&lt;/b&gt;"));
        assert!(chart.contains("s&lt;1&gt;"));
        assert!(!chart.contains("<b>"));
        assert_eq!(chart.matches(r#"class="compaction""#).count(), 1);
        assert!(chart.contains(r#"<a href="/s/a/compaction/3">"#));
        assert!(chart.contains("tier &quot;1&quot;"));
        let points = chart.split("points=\"").nth(2).unwrap();
        assert_eq!(
            points.split('"').next().unwrap().split_whitespace().count(),
            2
        );
    }

    #[test]
    fn bars_scale_to_the_largest_value() {
        let svg = bars(
            "cost",
            "cost",
            &[
                ("a".to_owned(), 2.0, "$2".to_owned()),
                ("<b>".to_owned(), 0.0, "$0".to_owned()),
            ],
        );
        assert_eq!(svg.matches(r#"class="bar""#).count(), 2);
        assert!(svg.contains("&lt;b&gt;"));
    }
}
