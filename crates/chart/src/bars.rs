//! The horizontal bar chart: one bar per label (cost, retention per strategy).

use crate::text::escape;
use crate::{PALETTE, RIGHT, WIDTH};
use std::fmt::Write as _;

/// Height of one bar's row.
const ROW: f64 = 22.0;
/// Room left of the bars for their labels.
const LABEL: f64 = 180.0;

/// A horizontal bar chart: one bar per `(label, value, value as shown)`, scaled to the largest.
pub fn bars(class: &str, title: &str, rows: &[(String, f64, String)]) -> String {
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
mod tests {
    use super::*;

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
