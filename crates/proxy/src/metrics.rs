//! The proxy's counters and the Prometheus text exposition of them (`GET /metrics`, format 0.0.4,
//! written by hand: a few counters and one histogram do not need a metrics crate).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the added-latency histogram: from 100 us (pass-through) to 2.5 s (a
/// compaction of a large conversation).
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5,
];

/// Counters, safe to update from every connection.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, u16), u64>>,
    upstream_errors: Mutex<BTreeMap<&'static str, u64>>,
    compactions: AtomicU64,
    tokens_saved: AtomicU64,
    recoveries: AtomicU64,
    passthrough: Mutex<BTreeMap<&'static str, u64>>,
    recall_calls: Mutex<BTreeMap<&'static str, u64>>,
    recall_offered: AtomicU64,
    recall_detours: AtomicU64,
    recall_bound_reached: AtomicU64,
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
    shed: Mutex<BTreeMap<&'static str, u64>>,
    in_flight: AtomicI64,
    queued: AtomicI64,
}

/// Writes a counter with one label (`name{label="value"} n` per value) to `out`.
fn labelled(
    out: &mut String,
    (name, label): (&str, &str),
    help: &str,
    values: &Mutex<BTreeMap<&'static str, u64>>,
) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (value, n) in values
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        let _ = writeln!(out, "{name}{{{label}=\"{value}\"}} {n}");
    }
}

fn bump<K: Ord>(map: &Mutex<BTreeMap<K, u64>>, key: K) {
    *map.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(key)
        .or_insert(0) += 1;
}

impl Metrics {
    /// A request answered with `status` on `route`.
    pub fn request(&self, route: &'static str, status: u16) {
        bump(&self.requests, (route, status));
    }

    /// An upstream failure of `kind` (`connect`, `timeout`, `status_4xx`, `status_5xx`,
    /// `stream_broken`, `stream_idle`, `malformed_body`).
    pub fn upstream_error(&self, kind: &'static str) {
        bump(&self.upstream_errors, kind);
    }

    /// A compaction that shrank a request from `before` to `after` tokens.
    pub fn compaction(&self, before: usize, after: usize) {
        self.compactions.fetch_add(1, Ordering::Relaxed);
        self.tokens_saved
            .fetch_add(before.saturating_sub(after) as u64, Ordering::Relaxed);
    }

    /// A retry after an upstream overflow.
    pub fn recovery(&self) {
        self.recoveries.fetch_add(1, Ordering::Relaxed);
    }

    /// A compacting-route request sent on untouched, by reason (`provider_compaction`,
    /// `undecodable`, `preflight_failed`...).
    pub fn passthrough(&self, reason: &'static str) {
        bump(&self.passthrough, reason);
    }

    /// A request sent with the `compact_recall` tool added.
    pub fn recall_offered(&self) {
        self.recall_offered.fetch_add(1, Ordering::Relaxed);
    }

    /// A `compact_recall` call answered by the proxy, by outcome (`found`, `not_found`,
    /// `invalid`, `too_large`, `error`).
    pub fn recall_call(&self, outcome: crate::recall::Outcome) {
        bump(&self.recall_calls, outcome.label());
    }

    /// A detour: a recall-only reply answered and the request sent again.
    pub fn recall_detour(&self) {
        self.recall_detours.fetch_add(1, Ordering::Relaxed);
    }

    /// A client request that reached the detour bound (sent again without the tool).
    pub fn recall_bound_reached(&self) {
        self.recall_bound_reached.fetch_add(1, Ordering::Relaxed);
    }

    /// `compact_recall` calls answered so far with `outcome`.
    pub fn recall_calls(&self, outcome: crate::recall::Outcome) -> u64 {
        self.recall_calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(outcome.label())
            .copied()
            .unwrap_or(0)
    }

    /// A request shed by admission, by reason (`queue_full`, `queue_timeout`).
    pub fn shed(&self, reason: &'static str) {
        bump(&self.shed, reason);
    }

    /// Requests shed so far for `reason`.
    pub fn shed_of(&self, reason: &str) -> u64 {
        self.shed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(reason)
            .copied()
            .unwrap_or(0)
    }

    /// A request admitted (`1`) or finished (`-1`).
    pub fn in_flight_changed(&self, by: i64) {
        self.in_flight.fetch_add(by, Ordering::Relaxed);
    }

    /// A request joined (`1`) or left (`-1`) the queue for a slot.
    pub fn queued_changed(&self, by: i64) {
        self.queued.fetch_add(by, Ordering::Relaxed);
    }

    /// Requests admitted and not finished (their reply's body not yet sent).
    pub fn in_flight(&self) -> i64 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Requests waiting for a slot.
    pub fn queued(&self) -> i64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// Time the proxy spent on a request before sending it upstream.
    pub fn added_latency(&self, d: Duration) {
        let secs = d.as_secs_f64();
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_us
            .fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// Compactions so far.
    pub fn compactions(&self) -> u64 {
        self.compactions.load(Ordering::Relaxed)
    }

    /// Overflow recoveries so far.
    pub fn recoveries(&self) -> u64 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Requests sent upstream so far (first attempts).
    pub fn forwarded(&self) -> u64 {
        self.latency_count.load(Ordering::Relaxed)
    }

    /// Requests answered on `route` with `status` so far.
    pub fn requests_of(&self, route: &str, status: u16) -> u64 {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|((r, s), _)| *r == route && *s == status)
            .map(|(_, n)| n)
            .sum()
    }

    /// The Prometheus text exposition, with the count of idle-time compactions (done by the
    /// session runtime's idle compactors, outside any request).
    /// `idle` is (quiet sessions looked at, sessions compacted).
    pub fn render_with_idle(&self, idle: (u64, u64)) -> String {
        let mut out = self.render();
        for (name, help, value) in [
            (
                "compact_proxy_idle_checks_total",
                "Quiet sessions the idle-time compactor looked at.",
                idle.0,
            ),
            (
                "compact_proxy_idle_compactions_total",
                "Sessions compacted while quiet, ahead of their next call.",
                idle.1,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        out
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        out.push_str(
            "# HELP compact_proxy_requests_total Requests answered, by route and status.\n",
        );
        out.push_str("# TYPE compact_proxy_requests_total counter\n");
        for ((route, status), n) in self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            let _ = writeln!(
                out,
                "compact_proxy_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        labelled(
            &mut out,
            ("compact_proxy_upstream_errors_total", "kind"),
            "Upstream failures, by kind.",
            &self.upstream_errors,
        );
        labelled(
            &mut out,
            ("compact_recall_calls_total", "outcome"),
            "compact_recall calls the proxy answered, by outcome.",
            &self.recall_calls,
        );
        labelled(
            &mut out,
            ("compact_passthrough_total", "reason"),
            "Requests on compacting routes forwarded untouched, by reason.",
            &self.passthrough,
        );
        labelled(
            &mut out,
            ("compact_proxy_shed_total", "reason"),
            "Requests answered 503 at once because the proxy was at capacity, by reason.",
            &self.shed,
        );
        for (name, help, value) in [
            (
                "compact_proxy_in_flight_requests",
                "Proxied requests being worked on (until their reply's body is sent).",
                self.in_flight.load(Ordering::Relaxed),
            ),
            (
                "compact_proxy_queued_requests",
                "Proxied requests waiting for a slot.",
                self.queued.load(Ordering::Relaxed),
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let counters = [
            (
                "compact_proxy_compactions_total",
                "Compactions performed.",
                load(&self.compactions),
            ),
            (
                "compact_proxy_tokens_saved_total",
                "Tokens removed from requests by compaction.",
                load(&self.tokens_saved),
            ),
            (
                "compact_proxy_overflow_recoveries_total",
                "Requests retried after an upstream context overflow.",
                load(&self.recoveries),
            ),
            (
                "compact_recall_offered_total",
                "Requests sent upstream with the compact_recall tool added.",
                load(&self.recall_offered),
            ),
            (
                "compact_recall_detours_total",
                "Recall-only replies answered by the proxy and sent upstream again.",
                load(&self.recall_detours),
            ),
            (
                "compact_recall_bound_reached_total",
                "Client requests that reached the detour bound and went out without the tool.",
                load(&self.recall_bound_reached),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        let name = "compact_proxy_added_latency_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time spent in the proxy before a request goes upstream.\n# TYPE {name} histogram"
        );
        for (bound, bucket) in LATENCY_BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {}", load(bucket));
        }
        let count = load(&self.latency_count);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum {}",
            load(&self.latency_sum_us) as f64 / 1_000_000.0
        );
        let _ = writeln!(out, "{name}_count {count}");
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_a_cumulative_histogram() {
        let m = Metrics::default();
        m.request("messages", 200);
        m.request("messages", 200);
        m.upstream_error("timeout");
        m.compaction(1000, 400);
        m.recall_call(crate::recall::Outcome::Found);
        m.recall_call(crate::recall::Outcome::NotFound);
        m.recall_call(crate::recall::Outcome::Found);
        m.passthrough("undecodable");
        m.passthrough("provider_compaction");
        m.passthrough("undecodable");
        m.shed("queue_full");
        m.in_flight_changed(3);
        m.in_flight_changed(-1);
        m.added_latency(Duration::from_micros(300));
        m.added_latency(Duration::from_secs(10));
        let text = m.render();
        assert!(text.contains("compact_proxy_requests_total{route=\"messages\",status=\"200\"} 2"));
        assert!(text.contains("compact_proxy_upstream_errors_total{kind=\"timeout\"} 1"));
        assert!(text.contains("compact_proxy_tokens_saved_total 600"));
        assert!(text.contains("compact_recall_calls_total{outcome=\"found\"} 2"));
        assert!(text.contains("compact_passthrough_total{reason=\"undecodable\"} 2"));
        assert!(text.contains("compact_passthrough_total{reason=\"provider_compaction\"} 1"));
        assert!(text.contains("compact_recall_calls_total{outcome=\"not_found\"} 1"));
        assert!(text.contains("compact_proxy_shed_total{reason=\"queue_full\"} 1"));
        assert!(text.contains(
            "# TYPE compact_proxy_in_flight_requests gauge\ncompact_proxy_in_flight_requests 2\n"
        ));
        assert!(text.contains("compact_proxy_queued_requests 0\n"));
        assert_eq!(m.recall_calls(crate::recall::Outcome::Found), 2);
        assert!(text.contains("compact_proxy_added_latency_seconds_bucket{le=\"0.00025\"} 0"));
        assert!(text.contains("compact_proxy_added_latency_seconds_bucket{le=\"0.0005\"} 1"));
        assert!(text.contains("compact_proxy_added_latency_seconds_bucket{le=\"2.5\"} 1"));
        assert!(text.contains("compact_proxy_added_latency_seconds_bucket{le=\"+Inf\"} 2"));
        assert!(text.contains("compact_proxy_added_latency_seconds_count 2"));
    }
}
