//! Upstream faults through the proxy: the client gets the upstream's error unchanged (500, 429
//! with its `Retry-After`), a clean JSON error (timeout, reset before an answer, a 200 whose
//! body is not JSON), or a stream that ends cleanly with an error event (reset or silence
//! mid-stream); garbage SSE is forwarded as it came; a client that goes away mid-stream is
//! noticed. After each, the next request through the proxy works.

use crate::support::{Harness, Options, Wire, WIRES};
use bytes::Bytes;
use http_body_util::BodyExt;
use std::time::Duration;

const FAULT: &str = "x-sim-fault";

/// A fresh small request in `wire` (its own session).
fn request(wire: Wire, stream: bool, tag: &str) -> serde_json::Value {
    wire.first_request("sim-model", &format!("Say hello ({tag})."), stream)
}

/// The proxy still serves: a plain request succeeds.
async fn still_serves(h: &Harness, wire: Wire) {
    let reply = h
        .post(wire.path(), &[], &request(wire, false, "after"))
        .await;
    assert_eq!(reply.status, 200, "{wire:?}: {}", reply.text());
    let turn = wire.read(false, &reply.body);
    assert!(turn.text.starts_with("Simulated reply"), "{}", turn.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_error_passes_through_unchanged() {
    let h = Harness::start().await;
    for wire in WIRES {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "server-error")],
                &request(wire, false, "500"),
            )
            .await;
        assert_eq!(reply.status, 500);
        let body = reply.json();
        let kind = &body["error"]["type"];
        assert!(kind.is_string(), "{body}");
        assert!(
            reply.headers.get("x-compact-proxy-error").is_none(),
            "the upstream's own error"
        );
        still_serves(&h, wire).await;
    }
    let text = h.proxy.metrics().render();
    assert!(
        text.contains("compact_proxy_upstream_errors_total{kind=\"status_5xx\"} 3"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_keeps_its_retry_after() {
    let h = Harness::start().await;
    for wire in WIRES {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "rate-limit;retry-after=2")],
                &request(wire, false, "429"),
            )
            .await;
        assert_eq!(reply.status, 429);
        assert_eq!(reply.headers.get("retry-after").unwrap(), "2");
        assert!(reply.json().get("error").is_some());
        still_serves(&h, wire).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_timeout_is_a_504() {
    let h = Harness::with(Options {
        upstream_timeout: Duration::from_millis(200),
        ..Options::default()
    })
    .await;
    for wire in [Wire::Chat, Wire::Anthropic] {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "slow;ms=3000")],
                &request(wire, false, "slow"),
            )
            .await;
        assert_eq!(reply.status, 504, "{}", reply.text());
        assert_eq!(reply.headers.get("x-compact-proxy-error").unwrap(), "1");
        let body = reply.json();
        if wire == Wire::Anthropic {
            assert_eq!(body["type"], "error");
            assert_eq!(body["error"]["type"], "timeout_error");
        } else {
            assert_eq!(body["error"]["code"], "upstream_timeout");
        }
        still_serves(&h, wire).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_before_an_answer_is_a_502() {
    let h = Harness::start().await;
    for wire in WIRES {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "reset")],
                &request(wire, true, "reset"),
            )
            .await;
        assert_eq!(reply.status, 502, "{}", reply.text());
        assert!(reply.json().get("error").is_some());
        still_serves(&h, wire).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_reply_is_a_clean_502() {
    let h = Harness::start().await;
    let reply = h
        .post(
            Wire::Chat.path(),
            &[(FAULT, "malformed-json")],
            &request(Wire::Chat, false, "bad"),
        )
        .await;
    assert_eq!(reply.status, 502);
    assert!(reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not valid JSON"));
    still_serves(&h, Wire::Chat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_cut_mid_way_ends_with_an_error_event() {
    let h = Harness::start().await;
    for wire in WIRES {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "stream-cut;after=3")],
                &request(wire, true, "cut"),
            )
            .await;
        assert_eq!(reply.status, 200);
        let turn = wire.read(true, &reply.body);
        assert!(!turn.complete, "{wire:?}: a cut stream cannot be complete");
        assert_eq!(turn.errors.len(), 1, "{wire:?}: {}", reply.text());
        assert!(turn.errors[0].contains("interrupted"), "{}", turn.errors[0]);
        still_serves(&h, wire).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_stream_ends_after_the_idle_timeout() {
    let h = Harness::with(Options {
        stream_idle_timeout: Duration::from_millis(300),
        ..Options::default()
    })
    .await;
    for wire in [Wire::Chat, Wire::Anthropic] {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "stream-stall;after=2")],
                &request(wire, true, "stall"),
            )
            .await;
        assert_eq!(reply.status, 200);
        let turn = wire.read(true, &reply.body);
        assert!(!turn.complete);
        assert_eq!(turn.errors.len(), 1, "{wire:?}: {}", reply.text());
        still_serves(&h, wire).await;
    }
    assert!(h
        .proxy
        .metrics()
        .render()
        .contains("kind=\"stream_idle\"} 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_sse_is_forwarded_and_the_proxy_goes_on() {
    let h = Harness::start().await;
    for wire in WIRES {
        let reply = h
            .post(
                wire.path(),
                &[(FAULT, "malformed-sse")],
                &request(wire, true, "garbage"),
            )
            .await;
        assert_eq!(reply.status, 200);
        let text = reply.text();
        assert!(text.contains("}}} not json"), "{wire:?}: {text}");
        let turn = wire.read(true, &reply.body);
        assert!(!turn.complete);
        still_serves(&h, wire).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_disconnect_mid_stream_is_noticed() {
    let h = Harness::start().await;
    let body = Bytes::from(request(Wire::Anthropic, true, "gone").to_string());
    let response = h
        .open(
            "POST",
            "/v1/messages",
            &[(FAULT, "stream-stall;after=2")],
            body,
        )
        .await;
    assert_eq!(response.status(), 200);
    let mut incoming = response.into_body();
    let first = incoming.frame().await.unwrap().unwrap();
    assert!(first.is_data());
    drop(incoming);
    // Wait (bounded) for the proxy to see the client go.
    let mut noticed = false;
    for _ in 0..100 {
        if h.log
            .lines()
            .iter()
            .any(|l| l.contains("\"end\":\"client_gone\""))
        {
            noticed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(noticed, "{:#?}", h.log.lines());
    still_serves(&h, Wire::Anthropic).await;
}
