//! Inline SVG charts: the line chart (the token sawtooth per call, with the window and trigger as
//! horizontal rules and compactions as markers; also the cache-hit share per call) and the bar
//! chart, drawn by `compact-chart` (shared with the replay's report and plot) and re-exported here.

pub use compact_chart::{bars, LineChart, Marker, Rule, Series};
