//! Load shedding (issue 41): past the bound on requests in flight and waiting, a request is
//! answered 503 with `Retry-After` at once, in its provider's error shape, while the slow upstream
//! still holds the admitted ones; the admitted ones all succeed, the proxy admits again once the
//! burst is over, and health, readiness, metrics and the admin API answer throughout.
//!
//! "At once" is shown by order, not by a clock: every shed reply arrives while the requests the
//! proxy admitted are still held by the simulator's delay, so none of them waited for a slot.

use crate::support::{Harness, Options, Reply, Wire};
use bytes::Bytes;
use compact_proxy::{AdmissionConfig, Metrics, ProxyConfig};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How long the simulator holds each admitted request: long against sending a burst of requests
/// through loopback, even on a loaded machine.
const UPSTREAM_DELAY: &str = "slow;ms=3000";

fn bounded(max_in_flight: usize, max_queue: usize, queue_timeout: Duration) -> Options {
    Options {
        admin_token: Some("tok".to_owned()),
        adjust: Some(Arc::new(move |config: &mut ProxyConfig| {
            config.admission = AdmissionConfig {
                max_in_flight: Some(max_in_flight),
                max_queue,
                queue_timeout,
            };
        })),
        ..Options::default()
    }
}

/// Sends a request the simulator holds for [`UPSTREAM_DELAY`] (or not at all when `fault` is
/// `None`), in its own session.
fn spawn(h: &Harness, wire: Wire, session: &str, fault: Option<&str>) -> JoinHandle<Reply> {
    let body = Bytes::from(
        wire.first_request("sim-model", "Hold on.", false)
            .to_string(),
    );
    let mut headers = vec![("x-compact-session", session)];
    if let Some(fault) = fault {
        headers.push(("x-sim-fault", fault));
    }
    tokio::spawn(h.detached(wire.path(), &headers, body))
}

/// Waits (bounded: 30 s) until the proxy has `in_flight` requests in flight and `queued` waiting,
/// `forwarded` of them sent upstream when given.
async fn settle(metrics: &Metrics, in_flight: i64, queued: i64, forwarded: Option<u64>) {
    for _ in 0..3_000 {
        if (metrics.in_flight(), metrics.queued()) == (in_flight, queued)
            && forwarded.is_none_or(|n| metrics.forwarded() == n)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "expected {in_flight} in flight, {queued} queued and {forwarded:?} forwarded, found {}, {} and {}",
        metrics.in_flight(),
        metrics.queued(),
        metrics.forwarded()
    );
}

fn assert_shed(reply: &Reply, wire: Wire, retry_after: &str) {
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert_eq!(reply.headers["retry-after"], retry_after);
    assert_eq!(reply.headers["x-compact-proxy-error"], "1");
    let body = reply.json();
    match wire {
        Wire::Anthropic => {
            assert_eq!(body["type"], "error", "{body}");
            assert_eq!(body["error"]["type"], "overloaded_error", "{body}");
        }
        Wire::Chat | Wire::Responses => {
            assert_eq!(body["error"]["type"], "server_error", "{body}");
            assert_eq!(body["error"]["code"], "proxy_overloaded", "{body}");
            assert!(body["error"]["param"].is_null(), "{body}");
        }
    }
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("overloaded"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_requests_are_shed_at_once_and_the_admitted_all_succeed() {
    let h = Harness::with(bounded(2, 2, Duration::from_secs(20))).await;
    let metrics = h.proxy.metrics();
    let wires = [
        Wire::Anthropic,
        Wire::Chat,
        Wire::Responses,
        Wire::Anthropic,
    ];
    // Two in flight (held upstream), then two waiting for their slots.
    let mut held = Vec::new();
    for (i, wire) in wires.iter().enumerate() {
        held.push((
            *wire,
            spawn(&h, *wire, &format!("held-{i}"), Some(UPSTREAM_DELAY)),
        ));
        settle(&metrics, (i as i64 + 1).min(2), (i as i64 - 1).max(0), None).await;
    }
    // Only the admitted requests reach the upstream.
    settle(&metrics, 2, 2, Some(2)).await;

    // The burst: requests the upstream would answer at once, were they admitted.
    let burst: Vec<_> = (0..12)
        .map(|i| {
            let wire = [Wire::Anthropic, Wire::Chat, Wire::Responses][i % 3];
            (wire, spawn(&h, wire, &format!("burst-{i}"), None))
        })
        .collect();
    for (wire, reply) in burst {
        assert_shed(&reply.await.unwrap(), wire, "20");
    }
    // Health, readiness, metrics and the admin API answer during the overload.
    assert_eq!(h.get("/healthz", &[]).await.status, 200);
    assert_eq!(h.get("/readyz", &[]).await.status, 200);
    let admin = h
        .get("/admin/sessions", &[("authorization", "Bearer tok")])
        .await;
    assert_eq!(admin.status, 200, "{}", admin.text());
    let text = h.get("/metrics", &[]).await.text();
    for line in [
        "compact_proxy_shed_total{reason=\"queue_full\"} 12\n",
        "compact_proxy_in_flight_requests 2\n",
        "compact_proxy_queued_requests 2\n",
        "compact_proxy_requests_total{route=\"messages\",status=\"503\"} 4\n",
    ] {
        assert!(text.contains(line), "{line} not in {text}");
    }
    // All of that while the upstream still held the admitted requests: no shed reply waited.
    assert!(
        held.iter().all(|(_, task)| !task.is_finished()),
        "an admitted request finished before the last shed reply"
    );
    assert_eq!(metrics.forwarded(), 2, "a shed request went upstream");
    assert_eq!((metrics.in_flight(), metrics.queued()), (2, 2));

    for (wire, task) in held {
        let reply = task.await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(!wire.read(false, &reply.body).text.is_empty());
    }
    // After the burst the proxy admits again.
    settle(&metrics, 0, 0, None).await;
    for (i, wire) in [Wire::Chat, Wire::Anthropic, Wire::Responses]
        .into_iter()
        .enumerate()
    {
        let reply = spawn(&h, wire, &format!("after-{i}"), None).await.unwrap();
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    assert_eq!(metrics.shed_of("queue_full"), 12);
    assert_eq!(metrics.shed_of("queue_timeout"), 0);
    // One aggregated warning per interval, not a line per shed request; together they count
    // every shed request once the proxy admits again.
    let lines = h.log.lines();
    let logged: u64 = lines
        .iter()
        .filter(|l| l.contains("\"event\":\"shed\""))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["shed"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(logged, 12, "{lines:?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("\"event\":\"request\"") && l.contains("\"status\":503")),
        "a request line per shed request: {lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"event\":\"request\"") && l.contains("\"queued_ms\"")),
        "the queued requests' lines say how long they waited"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_waits_past_the_queue_timeout_is_shed() {
    let h = Harness::with(bounded(1, 4, Duration::from_millis(200))).await;
    let metrics = h.proxy.metrics();
    let held = spawn(&h, Wire::Chat, "held", Some(UPSTREAM_DELAY));
    settle(&metrics, 1, 0, Some(1)).await;
    let reply = spawn(&h, Wire::Anthropic, "late", None).await.unwrap();
    assert_shed(&reply, Wire::Anthropic, "1");
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("within 200 ms")),
        "{}",
        reply.text()
    );
    assert!(!held.is_finished(), "the slot freed before the timeout");
    assert_eq!((metrics.shed_of("queue_timeout"), metrics.queued()), (1, 0));
    assert_eq!(held.await.unwrap().status, 200);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_reply_holds_its_slot_until_its_last_event() {
    let mut options = bounded(1, 0, Duration::from_millis(1));
    options.stream_idle_timeout = Duration::from_millis(500);
    let h = Harness::with(options).await;
    let metrics = h.proxy.metrics();
    let wire = Wire::Anthropic;
    let body = Bytes::from(wire.first_request("sim-model", "Stream.", true).to_string());
    // Two events, then the upstream goes silent; the proxy ends the stream after its idle timeout.
    let stream = h
        .open(
            "POST",
            wire.path(),
            &[("x-sim-fault", "stream-stall;after=2")],
            body,
        )
        .await;
    assert_eq!(stream.status(), 200);
    let shed = spawn(&h, Wire::Chat, "meanwhile", None).await.unwrap();
    assert_shed(&shed, Wire::Chat, "1");
    let events = http_body_util::BodyExt::collect(stream.into_body())
        .await
        .unwrap()
        .to_bytes();
    assert!(
        String::from_utf8_lossy(&events).contains("event: error"),
        "the stream ends with the proxy's error event"
    );
    settle(&metrics, 0, 0, None).await;
    let after = spawn(&h, Wire::Chat, "after", None).await.unwrap();
    assert_eq!(after.status, 200, "{}", after.text());
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_bound_nothing_is_shed() {
    let h = Harness::with(Options {
        adjust: Some(Arc::new(|config: &mut ProxyConfig| {
            config.admission = AdmissionConfig::unbounded();
        })),
        ..Options::default()
    })
    .await;
    let metrics = h.proxy.metrics();
    let held: Vec<_> = (0..8)
        .map(|i| spawn(&h, Wire::Chat, &format!("open-{i}"), Some(UPSTREAM_DELAY)))
        .collect();
    settle(&metrics, 8, 0, None).await;
    for task in held {
        assert_eq!(task.await.unwrap().status, 200);
    }
    assert_eq!(metrics.shed_of("queue_full"), 0);
    h.stop().await;
}
