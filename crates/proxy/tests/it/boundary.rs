//! Compaction at natural boundaries through the proxy: with `boundary_trigger_pct` set, a session
//! whose history passes the floor in the middle of a tool chain is not compacted there; it is
//! compacted when the user's next message opens a turn (before the hard trigger), and the trigger
//! event names the boundary. Without the floor the same session only compacts at the trigger.

use crate::support::{
    script_tool_call, session_config, tool_output, Harness, Options, Wire, WINDOW,
};
use compact_core::budget::Budget;
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::{MemoryStore, Store};
use compact_sim::ScriptedReply;
use serde_json::{json, Value};
use std::sync::Arc;

/// Steps between two user messages: each a `read_file` call and its output of [`LINES`] lines. A
/// turn grows the history by about 0.6k tokens, half the band between the floor and the trigger
/// (1.2k at this window), so no turn can jump over the band: whatever the counts' calibration
/// (the proxy records each reply's usage in the background, so on a loaded machine a call may be
/// counted before the previous reply calibrates it), every cycle meets a turn's end inside it.
const CHAIN: usize = 2;
const LINES: usize = 8;
const TURNS: usize = 40;

/// The compacting trigger decisions of every session: (reason, boundary, tokens counted).
fn compactions(store: &MemoryStore) -> Vec<(String, Option<String>, u64)> {
    let mut out = Vec::new();
    for id in store.sessions().unwrap() {
        for s in store.read(&id, 0).unwrap() {
            if let Record::Event(e) = &s.record {
                if e.kind == EventKind::TriggerDecision
                    && e.get("decision").and_then(Value::as_str) == Some("compact")
                {
                    out.push((
                        e.get("reason")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                        e.get("boundary").and_then(Value::as_str).map(str::to_owned),
                        e.get("effective").and_then(Value::as_u64).unwrap_or(0),
                    ));
                }
            }
        }
    }
    out
}

/// The boundary floor of the harness's policy: halfway between its target and its trigger.
fn floor_pct() -> f64 {
    let b = Budget::new(&session_config(WINDOW).policy);
    ((b.target + b.trigger) / 2) as f64 / b.usable as f64
}

/// Runs the session with the boundary floor `floor_pct` (none: off); returns the compacting trigger
/// decisions and the budget the proxy used.
async fn run(floor_pct: Option<f64>) -> (Vec<(String, Option<String>, u64)>, Budget) {
    let mut policy = session_config(WINDOW).policy;
    policy.boundary_trigger_pct = floor_pct;
    let budget = Budget::new(&policy);
    let h = Harness::with(Options {
        adjust: Some(Arc::new(move |c: &mut compact_proxy::ProxyConfig| {
            c.session.policy.boundary_trigger_pct = floor_pct;
        })),
        ..Options::default()
    })
    .await;
    let wire = Wire::Chat;
    let mut request = wire.first_request("sim-model", "Fix the failing tests in src/.", false);
    let mut step = 0;
    for turn in 0..TURNS {
        for _ in 0..CHAIN {
            script_tool_call(&h.sim, step);
            let reply = h.post(wire.path(), &[], &request).await;
            assert_eq!(reply.status, 200, "step {step}: {}", reply.text());
            let t = wire.read(false, &reply.body);
            let output = tool_output(&format!("src/file_{step}.rs"), step, LINES);
            wire.extend(&mut request, &t, &[output]);
            step += 1;
        }
        // The assistant ends its turn with an answer; the user opens the next one.
        h.sim.push_reply(ScriptedReply::text(format!(
            "Turn {turn} done: files read."
        )));
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "turn {turn}: {}", reply.text());
        let t = wire.read(false, &reply.body);
        wire.extend(&mut request, &t, &[]);
        request["messages"]
            .as_array_mut()
            .unwrap()
            .push(json!({"role": "user", "content": format!("Now turn {}.", turn + 1)}));
    }
    script_tool_call(&h.sim, step);
    let reply = h.post(wire.path(), &[], &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let store = h.store.clone();
    h.stop().await;
    (compactions(&store), budget)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_waits_for_the_next_turn_once_past_the_floor() {
    let (with_floor, budget) = run(Some(floor_pct())).await;
    let floor = budget.boundary.expect("the floor lies above the target");
    assert!(
        !with_floor.is_empty(),
        "the session is several windows long"
    );
    let at_boundary: Vec<_> = with_floor
        .iter()
        .filter(|(_, b, _)| b.as_deref() == Some("turn_end"))
        .collect();
    assert!(
        !at_boundary.is_empty(),
        "no compaction at a turn's end: {with_floor:?}"
    );
    for (reason, boundary, tokens) in &with_floor {
        if reason.contains("natural boundary") {
            // Fired by the floor, at a user message, before the hard trigger.
            assert_eq!(boundary.as_deref(), Some("turn_end"), "{reason}");
            assert!(
                *tokens >= floor as u64 && *tokens < budget.trigger as u64,
                "{reason}"
            );
        } else {
            // Anything else is the hard trigger, in the middle of a chain.
            assert!(*tokens >= budget.trigger as u64, "{reason}");
        }
    }
    // Without the floor, the same session compacts at the hard trigger only.
    let (without, _) = run(None).await;
    assert!(!without.is_empty());
    assert!(
        without
            .iter()
            .all(|(r, _, _)| !r.contains("natural boundary")),
        "{without:?}"
    );
}
