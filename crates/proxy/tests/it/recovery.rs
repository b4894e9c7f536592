//! Overflow recovery through the proxy: an upstream whose real window is smaller than the proxy
//! believes answers with its provider's overflow error (a Responses stream reports it after HTTP
//! 200); the proxy compacts harder and resends, so the client never sees it. A request that
//! cannot be made to fit gets the upstream's error unchanged after at most three retries.

use crate::support::{script_tool_call, tool_output, Harness, Options, Wire, WIRES};

async fn smaller_real_window(wire: Wire, stream: bool) {
    // The proxy compacts for 16k; the provider holds 11k.
    let h = Harness::with(Options {
        sim_window: 11_000,
        ..Options::default()
    })
    .await;
    let mut request = wire.first_request("sim-model", "Fix the failing tests in src/.", stream);
    for step in 0..24 {
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "{wire:?} step {step}: {}", reply.text());
        let turn = wire.read(stream, &reply.body);
        assert!(
            turn.errors.is_empty(),
            "{wire:?} step {step}: {:?}",
            turn.errors
        );
        assert!(
            turn.complete && turn.calls.len() == 1,
            "{wire:?} step {step}"
        );
        let output = tool_output(&format!("src/file_{step}.rs"), step, 40);
        wire.extend(&mut request, &turn, &[output]);
    }
    let upstream = h.sim.requests();
    // A Responses stream reports its overflow after HTTP 200.
    let too_long = |r: &compact_sim::RecordedRequest| {
        r.input_tokens.unwrap_or(0) + r.max_output.unwrap_or(0) > 11_000
    };
    let overflows = upstream
        .iter()
        .filter(|r| r.status == 400 || too_long(r))
        .count();
    assert!(
        overflows >= 1,
        "{wire:?}: the provider never overflowed; the test proves nothing"
    );
    assert_eq!(
        h.proxy.metrics().recoveries(),
        overflows as u64,
        "{wire:?}: one retry per overflow"
    );
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_overflow_is_recovered() {
    smaller_real_window(Wire::Chat, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_overflow_is_recovered() {
    smaller_real_window(Wire::Anthropic, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_overflow_is_recovered() {
    smaller_real_window(Wire::Responses, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_stream_overflow_after_200_is_recovered() {
    smaller_real_window(Wire::Responses, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hopeless_request_gets_the_upstream_error_unchanged() {
    let h = Harness::start().await;
    for wire in WIRES {
        h.sim.clear();
        // Build some history first, so that recovery has something to compact.
        let mut request = wire.first_request("sim-model", &format!("Hopeless {wire:?}."), false);
        for step in 0..4 {
            script_tool_call(&h.sim, step);
            let reply = h.post(wire.path(), &[], &request).await;
            assert_eq!(reply.status, 200);
            let turn = wire.read(false, &reply.body);
            wire.extend(&mut request, &turn, &[tool_output("src/a.rs", step, 30)]);
        }
        h.sim.clear();
        // Every attempt of this turn is refused as too long, whatever its size.
        let reply = h
            .post(wire.path(), &[("x-sim-fault", "overflow")], &request)
            .await;
        assert_eq!(reply.status, 400, "{wire:?}: {}", reply.text());
        assert!(reply.headers.get("x-compact-proxy-error").is_none());
        let body = reply.json();
        let overflow = compact_formats::overflow::classify(400, &reply.text());
        assert!(
            overflow.is_some(),
            "{wire:?}: not the provider's overflow body: {body}"
        );
        let attempts = h.sim.requests();
        assert!(
            (2..=4).contains(&attempts.len()),
            "{wire:?}: {} upstream attempts for one turn",
            attempts.len()
        );
        for pair in attempts.windows(2) {
            assert!(
                pair[1].input_tokens < pair[0].input_tokens,
                "{wire:?}: a retry must be smaller than the attempt before it"
            );
        }
        // The session goes on afterwards (a new turn has its own attempts).
        script_tool_call(&h.sim, 99);
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "{wire:?}: {}", reply.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hopeless_responses_stream_gets_the_failed_stream() {
    let h = Harness::start().await;
    let wire = Wire::Responses;
    let request = wire.first_request("sim-model", "Hopeless stream.", true);
    let reply = h
        .post(wire.path(), &[("x-sim-fault", "overflow")], &request)
        .await;
    assert_eq!(reply.status, 200);
    let turn = wire.read(true, &reply.body);
    assert!(!turn.complete);
    assert!(
        turn.errors
            .iter()
            .any(|e| e.contains("context_length_exceeded")),
        "{}",
        reply.text()
    );
    assert!(h.sim.requests().len() <= 4);
}
