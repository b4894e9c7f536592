//! The line chart: values per x position (a call) as lines, with horizontal rules (the window, the
//! trigger), markers (compactions) and breaks (where one concatenated run ends and the next begins).

use crate::text::escape;
use crate::{PALETTE, RIGHT, WIDTH};
use std::fmt::Write as _;

/// Room left of the plot for the y axis labels.
const LEFT: f64 = 64.0;
/// Room above the plot for the legend.
const TOP: f64 = 24.0;
/// Room below the plot for the x axis labels.
const BOTTOM: f64 = 24.0;
/// The y axis of a count chart fit to its data ends this much above its largest value.
const HEADROOM: f64 = 1.05;

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
    /// The y axis top when it is fit to the data (at least every value, rule and marker).
    pub y_max: f64,
    /// A fixed top of the y axis instead (`y_max` and the data then play no part): values, rules
    /// and markers above it are drawn at the plot's top edge. For charts that must share a scale
    /// or keep one value in view whatever the data does (the replay's panels: 1.5 times the window,
    /// so one overflow does not flatten the rest). Ignored unless positive and finite.
    pub y_top: Option<f64>,
    /// The lines.
    pub series: Vec<Series>,
    /// The rules.
    pub rules: Vec<Rule>,
    /// The markers.
    pub markers: Vec<Marker>,
    /// Breaks: x positions where a new run starts (sessions drawn one after the other), each
    /// drawn as a faint dotted line between it and the position before.
    pub breaks: Vec<usize>,
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
    /// The height of the chart's view box: the plot and the room around it for the legend and
    /// the axis labels. Its width is [`WIDTH`].
    pub fn view_height(&self) -> f64 {
        TOP + self.height + BOTTOM
    }

    /// The chart as an `<svg>` element, scaled by the page to its container.
    pub fn render(&self) -> String {
        self.draw(None)
    }

    /// The chart as an `<svg>` element placed at (`x`, `y`) inside a larger SVG document whose
    /// view box is [`WIDTH`] wide, at its own size (`WIDTH` by [`LineChart::view_height`]).
    pub fn render_at(&self, x: f64, y: f64) -> String {
        self.draw(Some((x, y)))
    }

    /// The top of the y axis: fixed, or fit to the data.
    fn axis_top(&self) -> f64 {
        if let Some(top) = self.y_top.filter(|t| *t > 0.0 && t.is_finite()) {
            return top;
        }
        let data_max = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied())
            .chain(self.rules.iter().map(|r| r.value))
            .chain(self.markers.iter().map(|m| m.from))
            .fold(self.y_max, f64::max);
        // Shares end at 100%; counts get a little headroom above their largest value.
        if self.percent {
            data_max.max(1.0)
        } else if data_max > 0.0 {
            data_max * HEADROOM
        } else {
            1.0
        }
    }

    fn draw(&self, at: Option<(f64, f64)>) -> String {
        let points = self
            .series
            .iter()
            .map(|s| s.values.len())
            .max()
            .unwrap_or(0);
        let y_max = self.axis_top();
        let plot_w = WIDTH - LEFT - RIGHT;
        let height = self.view_height();
        let x_of = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / points.max(1) as f64;
        let y_of = |v: f64| TOP + self.height * (1.0 - v.min(y_max) / y_max);
        let mut out = String::with_capacity(256 + points * 16 * self.series.len().max(1));
        let place = at.map_or_else(String::new, |(x, y)| {
            format!(r#" x="{x}" y="{y}" width="{WIDTH}" height="{height}""#)
        });
        let _ = write!(
            out,
            r##"<svg class="chart {}"{place} viewBox="0 0 {WIDTH} {height}" role="img" data-points="{points}" data-series="{}" xmlns="http://www.w3.org/2000/svg"><title>{}</title>"##,
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
        for &b in self.breaks.iter().filter(|&&b| b > 0 && b < points) {
            let x = (x_of(b - 1) + x_of(b)) / 2.0;
            let _ = write!(
                out,
                r##"<line class="break" x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ccc" stroke-dasharray="2 3"/>"##,
                TOP + self.height
            );
        }
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The coordinates of the `n`th polyline of `svg` (from 0).
    fn points(svg: &str, n: usize) -> Vec<(f64, f64)> {
        let attr = svg.split(" points=\"").nth(n + 1).unwrap();
        attr.split('"')
            .next()
            .unwrap()
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (x.parse().unwrap(), y.parse().unwrap())
            })
            .collect()
    }

    #[test]
    fn a_line_chart_draws_every_point_rule_and_marker_with_escaped_labels() {
        let chart = LineChart {
            class: "sawtooth",
            title: "<b>tokens</b>".to_owned(),
            height: 200.0,
            y_max: 0.0,
            y_top: None,
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
            breaks: Vec::new(),
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
        assert_eq!(points(&chart, 0).len(), 2);
        assert!(!chart.contains(r#"class="break""#));
    }

    #[test]
    fn a_fixed_top_clamps_what_is_above_it_and_breaks_fall_between_positions() {
        let chart = LineChart {
            class: "panel",
            height: 100.0,
            y_top: Some(50.0),
            series: vec![Series {
                name: "a".to_owned(),
                values: vec![Some(0.0), Some(25.0), Some(500.0), Some(50.0)],
            }],
            rules: vec![Rule {
                label: "window".to_owned(),
                value: 40.0,
                color: "#c00",
            }],
            breaks: vec![0, 2, 9],
            ..LineChart::default()
        };
        let svg = chart.render_at(0.0, 30.0);
        assert!(svg.starts_with(&format!(
            r#"<svg class="chart panel" x="0" y="30" width="{WIDTH}" height="{}""#,
            chart.view_height()
        )));
        let ys: Vec<f64> = points(&svg, 0).iter().map(|p| p.1).collect();
        // The plot runs from TOP (the fixed top) to TOP + 100 (zero).
        assert_eq!(ys, vec![124.0, 74.0, 24.0, 24.0]);
        // Only the break at 2 is inside the four positions.
        assert_eq!(svg.matches(r#"class="break""#).count(), 1);
        assert!(svg.contains(r#"<line class="rule" x1="64" y1="44.0""#));
        // Nothing else changes the scale: the y ticks end at the fixed top.
        assert!(svg.contains(">50</text>"));
        assert!(!chart.render().contains(" x=\"0\""));
    }
}
