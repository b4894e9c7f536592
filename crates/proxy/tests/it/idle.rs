//! Idle-time compaction through the proxy: with `policy.idle_delay_ms` set, a session left quiet
//! when its next call would compact is compacted by the proxy's idle compactor, and that next call
//! goes out as the compacted view plus what is new, with no compaction of its own.

use crate::support::{script_tool_call, tokens_of, tool_output, Harness, Options, Wire};
use compact_session::IdleSettings;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The value of the counter `name` in the proxy's metrics.
async fn counter(h: &Harness, name: &str) -> u64 {
    let metrics = h.get("/metrics", &[]).await.text();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from\n{metrics}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_session_is_compacted_before_its_next_call() {
    let h = Harness::with(Options {
        adjust: Some(Arc::new(|c: &mut compact_proxy::ProxyConfig| {
            c.session.idle = Some(IdleSettings {
                after: Duration::from_millis(1),
            });
        })),
        ..Options::default()
    })
    .await;
    let wire = Wire::Chat;
    let mut request = wire.first_request("sim-model", "Fix the failing tests in src/.", false);
    // Waits for progress, never for a time: each reply starts a quiet spell the compactor looks
    // at once (the deadline only keeps a broken build from hanging).
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut step = 0;
    loop {
        assert!(step < 300, "no idle compaction in 300 steps");
        let checks = counter(&h, "compact_proxy_idle_checks_total").await;
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "step {step}: {}", reply.text());
        let t = wire.read(false, &reply.body);
        wire.extend(
            &mut request,
            &t,
            &[tool_output(&format!("src/f{step}.rs"), step, 30)],
        );
        step += 1;
        while counter(&h, "compact_proxy_idle_checks_total").await == checks {
            assert!(
                Instant::now() < deadline,
                "the quiet session was never looked at"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if counter(&h, "compact_proxy_idle_compactions_total").await > 0 {
            break;
        }
    }
    // The next call finds the work done: no compaction in it, and what goes upstream is the
    // compacted view plus the new items, smaller than the client's history.
    let compactions = counter(&h, "compact_proxy_compactions_total").await;
    script_tool_call(&h.sim, step);
    let reply = h.post(wire.path(), &[], &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        counter(&h, "compact_proxy_compactions_total").await,
        compactions
    );
    let sent = h.sim.requests().last().unwrap().body.clone();
    assert!(
        tokens_of(&sent) < tokens_of(&request),
        "the upstream request is the compacted view"
    );
    let text = sent.to_string();
    // Old outputs went to references (tier 1) in the idle compaction.
    assert!(
        text.contains("compact:ref"),
        "{}",
        &text[..text.len().min(4000)]
    );
    h.stop().await;
}
