//! The OpenTelemetry exporter against a real OTLP/HTTP receiver (`scripts/otlp_receiver.py`,
//! started by `scripts/services`, which decodes every request with the official protobuf classes
//! and appends it to a JSON lines file): a compacting session's preflights arrive as spans whose
//! events are the logged events with their attributes, and the counters as metrics. A receiver
//! that is down or stuck never fails or holds up a preflight: its failures and the queue's drops
//! are counted.

use crate::common::{self, manager_with};
use crate::services;
use compact_config::{Config, ExporterSettings, OtlpSettings, Overrides};
use compact_session::record::Record;
use compact_session::{CompactManager, ExportQueue, Exporter, MemoryStore, OtlpExporter, Store};
use serde_json::Value;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

/// The receiver's base URL and the file it writes.
fn receiver() -> Option<(String, String)> {
    let url = services::address("COMPACT_TEST_OTLP_URL", "an OTLP/HTTP receiver")?;
    let log = services::address("COMPACT_TEST_OTLP_LOG", "the OTLP receiver's request log")?;
    Some((url, log))
}

/// The OTLP settings of a `telemetry:` section, read through the configuration like a user's file.
fn settings(telemetry: &str) -> OtlpSettings {
    let file = format!("max_context_tokens: 8000\ntelemetry:\n{telemetry}");
    let config = Config::from_sources(
        Some(("compact.yaml", &file)),
        &Overrides::default(),
        &Overrides::default(),
    )
    .unwrap();
    match config.session().telemetry.clone().map(|t| t.exporter) {
        Some(ExporterSettings::Otlp(s)) => s,
        other => panic!("not an OTLP exporter: {other:?}"),
    }
}

fn manager(store: Arc<dyn Store>, exports: Arc<ExportQueue>) -> CompactManager {
    manager_with(8_000, store).with_exports(exports)
}

fn drive(manager: &CompactManager, session: &str, steps: usize) -> usize {
    common::drive(manager, session, steps, 11)
}

fn logged_events(store: &dyn Store, session: &str) -> u64 {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter(|s| matches!(s.record, Record::Event(_)))
        .count() as u64
}

/// An OTLP attribute list (`[{key, value: {string_value | int_value | ...}}]`) as a JSON object.
fn attributes(list: &Value) -> serde_json::Map<String, Value> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|kv| {
            let key = kv["key"].as_str()?.to_owned();
            let v = &kv["value"];
            let value = if let Some(s) = v.get("string_value") {
                s.clone()
            } else if let Some(i) = v.get("int_value") {
                // protobuf's JSON mapping writes 64-bit integers as strings
                Value::from(i.as_str()?.parse::<i64>().ok()?)
            } else if let Some(d) = v.get("double_value") {
                d.clone()
            } else if let Some(b) = v.get("bool_value") {
                b.clone()
            } else {
                v.clone()
            };
            Some((key, value))
        })
        .collect()
}

/// The receiver's requests of `signal` that came over `transport` (`http`, `grpc`), with the
/// resources whose `service.name` is `service`.
fn requests(log: &str, transport: &str, signal: &str, service: &str) -> Vec<Value> {
    let resources = if signal == "traces" {
        "resource_spans"
    } else {
        "resource_metrics"
    };
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("the receiver writes JSON lines"))
        .filter(|r| r["signal"] == signal && r["transport"] == transport)
        .flat_map(|r| {
            assert!(
                r.get("error").is_none(),
                "the receiver could not decode: {r}"
            );
            r["request"][resources]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|rs| {
            attributes(&rs["resource"]["attributes"]).get("service.name")
                == Some(&Value::from(service))
        })
        .collect()
}

#[test]
fn preflights_reach_a_real_otlp_receiver_as_spans_with_the_trigger_decision() {
    let Some((url, log)) = receiver() else { return };
    preflights_arrive(&url, &log, "http");
}

#[cfg(feature = "otlp-grpc")]
#[test]
fn preflights_reach_a_real_otlp_receiver_over_grpc() {
    let Some((_, log)) = receiver() else { return };
    let Some(url) = services::address("COMPACT_TEST_OTLP_GRPC_URL", "an OTLP/gRPC receiver") else {
        return;
    };
    preflights_arrive(&url, &log, "grpc");
}

/// Drives a compacting session through an exporter of `protocol` to the receiver at `url`, and
/// checks what the receiver decoded into `log`.
fn preflights_arrive(url: &str, log: &str, protocol: &str) {
    let service = format!("compact-it-{protocol}-{}", std::process::id());
    let session = format!("otlp-{protocol}-{}", std::process::id());
    let settings = settings(&format!(
        "  exporter: otlp\n  endpoint: {url}\n  protocol: {protocol}\n  service_name: {service}\n  headers:\n    x-compact-test: token-{session}\n"
    ));
    let exporter: Arc<dyn Exporter> = Arc::new(OtlpExporter::open(&settings).unwrap());
    let exports = Arc::new(ExportQueue::start(vec![exporter], 4_096).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    let steps = 30;
    let compactions = drive(&m, &session, steps);
    assert!(compactions > 0, "the session must compact");
    assert!(exports.flush(Duration::from_secs(60)));
    let stats = exports.stats();
    assert_eq!(
        (stats.dropped, stats.failed),
        (0, 0),
        "{stats:?} {:?}",
        exports.last_error()
    );
    assert_eq!(stats.exported, logged_events(store.as_ref(), &session));

    // The header went out with every request (its value is a secret of the user's: sent, not logged).
    let raw = std::fs::read_to_string(log).unwrap();
    assert!(
        raw.contains(&format!("token-{session}")),
        "the header was not sent"
    );

    let spans: Vec<Value> = requests(log, protocol, "traces", &service)
        .iter()
        .flat_map(|rs| rs["scope_spans"].as_array().cloned().unwrap_or_default())
        .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
        .collect();
    let preflights: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "compact.preflight")
        .collect();
    assert_eq!(preflights.len(), steps, "one span per preflight");
    for span in &preflights {
        let attrs = attributes(&span["attributes"]);
        assert_eq!(attrs["session_id"], session.as_str(), "{span}");
        assert_eq!(attrs["max"], 8_000, "{span}");
        assert!(attrs["t_est"].as_i64().unwrap() > 0, "{span}");
        assert!(attrs["decision"].is_string(), "{span}");
        assert_eq!(
            span["trace_id"].as_str().map(str::len),
            Some(24),
            "16 bytes, base64"
        );
        let events = span["events"].as_array().expect("span events");
        let decision = events
            .iter()
            .find(|e| e["name"] == "compact.trigger_decision")
            .unwrap_or_else(|| panic!("no compact.trigger_decision in {span}"));
        let e = attributes(&decision["attributes"]);
        assert_eq!(e["session_id"], session.as_str());
        assert_eq!(e["event"], "compact.trigger_decision");
        assert_eq!(e["max"], 8_000);
        assert_eq!(e["t_est"], attrs["t_est"]);
        assert!(e["model"].is_string(), "{e:?}");
        assert_eq!(e["decision"], attrs["decision"]);
        if e["decision"] == "compact" {
            assert!(e["reason"].is_string(), "{e:?}");
        }
        assert!(
            decision["time_unix_nano"]
                .as_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
                > 0
        );
    }

    // The compacting preflights carry the compaction, and the seed's events with their fields.
    let compacting: Vec<&&Value> = preflights
        .iter()
        .filter(|s| attributes(&s["attributes"]).contains_key("compaction.tokens_saved"))
        .collect();
    assert_eq!(compacting.len(), compactions);
    for span in compacting {
        let saved = attributes(&span["attributes"])["compaction.tokens_saved"]
            .as_i64()
            .unwrap();
        assert!(saved > 0, "{span}");
        let events = span["events"].as_array().unwrap();
        let event = |name: &str| {
            attributes(
                &events
                    .iter()
                    .find(|e| e["name"] == name)
                    .unwrap_or_else(|| panic!("no {name} in {span}"))["attributes"],
            )
        };
        let policy = event("compact.policy_applied");
        assert_eq!(policy["max"], 8_000);
        assert_eq!(policy["policy.strategy"], "tiered");
        assert!(policy["policy.trigger_pct"].is_f64(), "{policy:?}");
        assert!(policy["kept.pinned"].is_i64(), "{policy:?}");
        assert!(
            event("compact.pruned_messages")["pruned_count"]
                .as_i64()
                .unwrap()
                > 0
        );
    }

    // The counters arrived as metrics (cumulative sums; the last point is the total).
    let metrics: Vec<Value> = requests(log, protocol, "metrics", &service)
        .iter()
        .flat_map(|rm| rm["scope_metrics"].as_array().cloned().unwrap_or_default())
        .flat_map(|sm| sm["metrics"].as_array().cloned().unwrap_or_default())
        .collect();
    let total = |name: &str| -> i64 {
        metrics
            .iter()
            .filter(|m| m["name"] == name)
            .filter_map(|m| {
                m["sum"]["data_points"].as_array().map(|points| {
                    points
                        .iter()
                        .filter_map(|p| p["as_int"].as_str()?.parse::<i64>().ok())
                        .sum::<i64>()
                })
            })
            .max()
            .unwrap_or_else(|| panic!("no metric {name}"))
    };
    assert_eq!(total("compact.compactions"), compactions as i64);
    assert!(total("compact.tokens_saved") > 0);
    assert_eq!(total("compact.events"), stats.exported as i64);
    assert_eq!(total("compact.export.dropped"), 0);
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn a_receiver_that_is_down_never_fails_a_preflight_and_its_failures_are_counted() {
    let port = closed_port();
    let settings = settings(&format!(
        "  exporter: otlp\n  endpoint: http://127.0.0.1:{port}\n  timeout_ms: 2000\n  headers:\n    authorization: Bearer do-not-log-me\n"
    ));
    let exporter: Arc<dyn Exporter> = Arc::new(OtlpExporter::open(&settings).unwrap());
    let exports = Arc::new(ExportQueue::start(vec![exporter], 4_096).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    drive(&m, "down", 3);
    assert!(exports.flush(Duration::from_secs(120)));
    let stats = exports.stats();
    assert_eq!(stats.dropped, 0);
    assert_eq!(stats.exported, logged_events(store.as_ref(), "down"));
    assert!(stats.failed >= 3, "each preflight's span failed: {stats:?}");
    let error = exports.last_error().expect("the failure is surfaced");
    assert!(
        error.contains(&format!("otlp:http://127.0.0.1:{port}")),
        "{error}"
    );
    assert!(!error.contains("do-not-log-me"), "{error}");
}

#[test]
fn a_stuck_receiver_never_holds_up_a_preflight_and_the_drops_are_counted() {
    // A receiver that takes connections into its backlog and never answers: the exporter waits on
    // it (up to its long timeout) on the queue's worker. If a preflight waited for the export, this
    // test would take minutes; instead the queue fills and drops.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let settings = settings(&format!(
        "  exporter: otlp\n  endpoint: http://127.0.0.1:{port}\n  timeout_ms: 600000\n"
    ));
    let exporter: Arc<dyn Exporter> = Arc::new(OtlpExporter::open(&settings).unwrap());
    let exports = Arc::new(ExportQueue::start(vec![exporter], 4).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    drive(&m, "stuck", 12);
    let logged = logged_events(store.as_ref(), "stuck");
    let stats = exports.stats();
    assert!(stats.dropped > 0, "a full queue drops: {stats:?}");
    assert!(stats.dropped < logged);
    // Closing the listener resets what waits in its backlog: the export fails and the queue drains.
    drop(listener);
    assert!(exports.flush(Duration::from_secs(300)));
    let stats = exports.stats();
    assert_eq!(stats.exported + stats.dropped, logged, "{stats:?}");
    assert!(stats.failed > 0, "{stats:?}");
}

/// OTLP/HTTP through the outbound client: the exports go to the configured HTTP proxy (absolute
/// form) and on to the receiver, which decodes them.
#[test]
fn otlp_http_goes_through_the_configured_proxy() {
    let Some((url, log)) = receiver() else { return };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime
        .block_on(compact_net_test::TestProxy::start(None))
        .unwrap();
    let client = compact_net::Client::new(
        &compact_net::NetSettings {
            proxy: Some(proxy.url()),
            ..compact_net::NetSettings::default()
        },
        &compact_net::ProxyEnv::default(),
    )
    .unwrap();
    let service = format!("compact-it-proxied-{}", std::process::id());
    let session = format!("otlp-proxied-{}", std::process::id());
    let settings = settings(&format!(
        "  exporter: otlp\n  endpoint: {url}\n  service_name: {service}\n"
    ));
    let exporter: Arc<dyn Exporter> =
        Arc::new(OtlpExporter::open_with(&settings, Some(client)).unwrap());
    let exports = Arc::new(ExportQueue::start(vec![exporter], 4_096).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    assert!(drive(&m, &session, 30) > 0, "the session must compact");
    assert!(exports.flush(Duration::from_secs(60)));
    let stats = exports.stats();
    assert_eq!(
        (stats.dropped, stats.failed),
        (0, 0),
        "{:?}",
        exports.last_error()
    );
    assert!(!requests(&log, "http", "traces", &service).is_empty());
    let receiver = url.trim_start_matches("http://").trim_end_matches('/');
    assert!(proxy.forwards() >= 1);
    assert!(
        proxy.targets().iter().all(|t| t == receiver),
        "{:?}",
        proxy.targets()
    );
}
