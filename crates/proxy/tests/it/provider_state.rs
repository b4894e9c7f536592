//! What the provider holds, through the proxy: an Anthropic session in threshold mode runs until
//! the simulator compacts; the reply that carries the block and the request that sends it back
//! both update the session's state (`compact.provider_state`, shown by
//! `GET /admin/sessions/{id}`), and the proxy's count of the next requests is of what the provider
//! still reads.

use crate::support::{script_tool_call, tool_output, Harness, Options, Wire};
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::Store;
use serde_json::{json, Value};

/// The window of this session: large, so that the provider compacts before Compact would.
const WINDOW: usize = 200_000;
/// The provider's threshold (the API's minimum).
const THRESHOLD: u64 = 50_000;
const TOKEN: &str = "admin-token";

/// `kind` events of `session`, as JSON.
fn events(store: &dyn Store, session: &str, kind: EventKind) -> Vec<Value> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if e.kind == kind => Some(e.to_json()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_compaction_through_the_proxy_updates_what_the_session_holds() {
    let h = Harness::with(Options {
        window: WINDOW,
        sim_window: WINDOW as u64,
        admin_token: Some(TOKEN.into()),
        max_body_bytes: 32 * 1024 * 1024,
        ..Options::default()
    })
    .await;
    let wire = Wire::Anthropic;
    let headers = [
        ("x-compact-session", "held"),
        ("anthropic-beta", "compact-2026-01-12"),
    ];
    let mut request = wire.first_request("claude-sonnet-4-5", "Fix the tests in src/.", false);
    request["context_management"] = json!({"edits": [{"type": "compact_20260112",
        "trigger": {"type": "input_tokens", "value": THRESHOLD}}]});
    let auth = format!("Bearer {TOKEN}");
    let admin = [("authorization", auth.as_str())];
    let mut compacted_at = None;
    let mut step = 0;
    // Until the provider compacted, and two calls more.
    while compacted_at.is_none_or(|at| step < at + 3) {
        assert!(step < 60, "the provider never compacted");
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &headers, &request).await;
        assert_eq!(reply.status, 200, "step {step}: {}", reply.text());
        let body = reply.json();
        let turn = wire.read(false, &reply.body);
        if compacted_at.is_none() && body["content"][0]["type"] == "compaction" {
            compacted_at = Some(step);
            // The reply said so: the provider now stands for everything it was sent.
            let view = h.get("/admin/sessions/held", &admin).await.json();
            assert_eq!(view["provider"]["source"], "response", "{view}");
            assert!(view["provider"]["superseded_tokens"].as_u64().unwrap() >= THRESHOLD / 2);
        }
        let output = tool_output(&format!("src/file_{step}.rs"), step, 200);
        wire.extend(&mut request, &turn, &[output]);
        step += 1;
    }

    // The block came back: the session knows where it is and what it supersedes.
    let view = h.get("/admin/sessions/held", &admin).await.json();
    let held = &view["provider"];
    assert_eq!(held["source"], "request", "{view}");
    assert_eq!(held["wire"], "anthropic_block");
    assert!(held["item_id"].is_string());
    assert!(held["superseded_items"].as_u64().unwrap() > 0);
    assert!(held["superseded_tokens"].as_u64().unwrap() >= THRESHOLD / 2);
    let states = events(h.store.as_ref(), "held", EventKind::ProviderState);
    assert_eq!(
        states.len(),
        2,
        "one from the reply, one from the request: {states:?}"
    );

    // The proxy counts what the provider reads: the requests after the block are far below the
    // one that made the provider compact, and below its threshold.
    let sent: Vec<u64> = events(h.store.as_ref(), "held", EventKind::Sent)
        .iter()
        .map(|e| e["tokens"].as_u64().unwrap())
        .collect();
    let at = compacted_at.unwrap();
    assert!(sent[at] >= THRESHOLD, "{sent:?}");
    assert!(
        sent[at + 1..].iter().all(|&t| t < THRESHOLD / 2),
        "the count still includes what the block superseded: {sent:?}"
    );
    // Nothing was compacted by Compact, and nothing went over the window.
    assert_eq!(h.proxy.metrics().compactions(), 0);
    assert!(h
        .sim
        .requests()
        .iter()
        .all(|r| r.status == 200 && r.input_tokens.unwrap() <= THRESHOLD + 10_000));
    // An unknown session is a 404.
    let missing = h.get("/admin/sessions/nope", &admin).await;
    assert_eq!(missing.status, 404, "{}", missing.text());
    h.stop().await;
}
