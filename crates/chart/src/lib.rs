//! Compact's charts, drawn in Rust as inline SVG: a line chart ([`LineChart`]: the token sawtooth
//! per call with the window and trigger as [`Rule`]s and compactions as [`Marker`]s, a share per
//! call, a replay's panels) and a horizontal bar chart ([`bars`]), with the text helpers they share
//! with the HTML pages around them ([`escape`], [`thousands`], [`percent`], [`preview`]).
//!
//! The web view's pages, the replay's HTML report and its `--plot` document all draw with these
//! two functions, so there is one SVG chart renderer in the workspace.
//!
//! Architecture invariants: **pure and std only**: no dependency, no I/O; the same input draws the
//! same bytes. **Labels are hostile text**: every name, title and label goes through [`escape`].
//! **No inline styles**: presentation attributes only, so a page's content security policy needs
//! no `style-src` exception for the charts. Drawing is linear in the number of points.
//!
//! ```
//! use compact_chart::{LineChart, Rule, Series};
//!
//! let svg = LineChart {
//!     class: "sawtooth",
//!     title: "tokens per call".to_owned(),
//!     height: 200.0,
//!     series: vec![Series {
//!         name: "<drop-oldest>".to_owned(),
//!         values: vec![Some(900.0), Some(1_800.0), Some(600.0)],
//!     }],
//!     rules: vec![Rule { label: "window".to_owned(), value: 2_000.0, color: "#c0392b" }],
//!     ..LineChart::default()
//! }
//! .render();
//! assert!(svg.starts_with(r#"<svg class="chart sawtooth""#));
//! assert!(svg.contains("&lt;drop-oldest&gt;"));
//! assert_eq!(svg.matches("<polyline").count(), 1);
//! ```

mod bars;
mod line;
mod text;

pub use bars::bars;
pub use line::{LineChart, Marker, Rule, Series};
pub use text::{escape, escape_into, percent, preview, thousands};

/// Width of every chart's view box; a page scales it to its container, and a document that places
/// charts with [`LineChart::render_at`] uses it as its own width.
pub const WIDTH: f64 = 960.0;
/// Room right of a plot for the rules' labels.
const RIGHT: f64 = 96.0;
/// Line and bar colours, in series order (a colour-blind safe set).
const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#8c564b", "#000000",
];
