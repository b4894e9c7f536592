//! A client that moves its `cache_control` marker to the newest message on every call (Claude
//! Code does): through the proxy the session extends instead of branching, it is compacted once,
//! every upstream request carries the client's current markers (never more than Anthropic's 4),
//! between compactions each upstream request extends the previous one (markers aside), and the
//! provider's cache reads grow.

use crate::support::{session_config, Harness, Options};
use compact_core::budget::Budget;
use compact_core::model::Format;
use compact_formats::wire::decode;
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::{MemoryStore, Store};
use serde_json::{json, Value};
use std::sync::Arc;

/// Anthropic's limit on `cache_control` markers per request.
const MAX_MARKERS: usize = 4;
const CALLS: usize = 12;

fn marker() -> Value {
    json!({"type": "ephemeral"})
}

/// The output of the `n`-th tool call: about 1,500 tokens of distinct lines.
fn output(n: usize) -> String {
    (0..120)
        .map(|l| {
            format!("src/mod_{n}/file_{l}.rs:{l}: warning: unused value `v{n}_{l}` in fn f{l}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Call `n` (1-based) as Claude Code sends it: the system prompt and the last tool marked, the
/// task, `n - 1` tool calls with their results, and the marker on the last block of the newest
/// message only. With `string_task` the task is a string, sent as a marked text block while it is
/// the newest message.
fn request(n: usize, string_task: bool) -> Value {
    let task = "Fix every warning in the workspace, one module at a time.";
    let mut messages = vec![if string_task && n > 1 {
        json!({"role": "user", "content": task})
    } else {
        json!({"role": "user", "content": [{"type": "text", "text": task}]})
    }];
    for k in 1..n {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Checking module {k}.")},
            {"type": "tool_use", "id": format!("toolu_{k:02}"), "name": "Bash",
             "input": {"command": format!("cargo check -p mod_{k}")}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{k:02}"), "content": output(k)}]}));
    }
    let last = messages.last_mut().unwrap()["content"]
        .as_array_mut()
        .unwrap()
        .last_mut()
        .unwrap();
    last["cache_control"] = marker();
    json!({
        "model": "sim-model", "max_tokens": 512,
        "system": [{"type": "text", "text": system(), "cache_control": marker()}],
        "tools": [
            {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}},
            {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"},
             "cache_control": marker()}],
        "messages": messages,
    })
}

/// A system prompt of about a thousand tokens: large enough that the provider's count and the
/// proxy's differ by well under 5% from the first call on (the calibration the replies feed).
fn system() -> String {
    (0..60)
        .map(|i| format!("Rule {i}: keep the change minimal and run the tests of crate {i}."))
        .collect::<Vec<_>>()
        .join("\n")
}

fn markers(v: &Value) -> usize {
    match v {
        Value::Object(m) => {
            usize::from(m.contains_key("cache_control")) + m.values().map(markers).sum::<usize>()
        }
        Value::Array(a) => a.iter().map(markers).sum(),
        _ => 0,
    }
}

/// `v` without its `cache_control` members, a message's string content written as the one text
/// block it stands for.
fn unmarked(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "cache_control")
                .map(|(k, v)| match v {
                    Value::String(text) if k == "content" && m.contains_key("role") => {
                        (k.clone(), json!([{"type": "text", "text": text}]))
                    }
                    _ => (k.clone(), unmarked(v)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// `previous` (markers removed) is `current` (markers removed) up to its last message.
fn extends(previous: &Value, current: &Value) -> bool {
    let (mut p, mut c) = (unmarked(previous), unmarked(current));
    let pm = p.as_object_mut().unwrap().remove("messages").unwrap();
    let cm = c.as_object_mut().unwrap().remove("messages").unwrap();
    let (pm, cm) = (pm.as_array().unwrap(), cm.as_array().unwrap());
    p == c && cm.len() >= pm.len() && cm[..pm.len()] == pm[..]
}

/// A window whose trigger falls between the 9th and the 10th call, a quarter of a call below the
/// 10th: calibration (the provider's count over the proxy's, within a few percent here, fed by
/// replies as they come) moves neither.
fn window() -> usize {
    let tokens = |n| {
        session_config(1)
            .counter
            .total(&decode(Format::Anthropic, &request(n, false)).unwrap())
    };
    let (at9, at10) = (tokens(9), tokens(10));
    let top = at10 - (at10 - at9) / 4;
    let trigger = |w| Budget::new(&session_config(w).policy).trigger;
    let mut window = 8_000;
    while trigger(window + 100) <= top {
        window += 100;
    }
    assert!(trigger(window) > at9 + (at10 - at9) / 2 && trigger(window) <= top);
    window
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_cache_control_marker_keeps_the_upstream_prefix_and_its_cache() {
    moving_marker(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_string_task_marked_as_a_block_while_newest_keeps_the_prefix_too() {
    moving_marker(true).await;
}

async fn moving_marker(string_task: bool) {
    let window = window();
    // Compaction aims at half the usable budget, so the two calls after it stay well below the
    // trigger whatever the calibration.
    let h = Harness::with(Options {
        window,
        sim_window: window as u64,
        adjust: Some(Arc::new(|c: &mut compact_proxy::ProxyConfig| {
            c.session.policy.target_pct = 0.5;
        })),
        ..Options::default()
    })
    .await;
    let mut compacted = Vec::new();
    for n in 1..=CALLS {
        let before = h.proxy.metrics().compactions();
        let reply = h.post("/v1/messages", &[], &request(n, string_task)).await;
        assert_eq!(reply.status, 200, "call {n}: {}", reply.text());
        compacted.push(h.proxy.metrics().compactions() > before);
        // The reply's usage calibrates the session after the reply is sent: the next call waits
        // for it, as a client reading the reply would in practice (a usage recorded after the
        // next preflight would be compared with the next request's count).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while events(&h.store, EventKind::Calibration) < n {
            assert!(
                std::time::Instant::now() < deadline,
                "call {n}: no usage recorded"
            );
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }
    assert_eq!(
        compacted.iter().filter(|c| **c).count(),
        1,
        "compactions at {compacted:?}"
    );
    assert!(compacted[9], "the 10th call compacts: {compacted:?}");

    let upstream = h.sim.requests();
    assert_eq!(upstream.len(), CALLS);
    for (i, r) in upstream.iter().enumerate() {
        assert_eq!(r.status, 200, "call {}", i + 1);
        assert!(
            markers(&r.body) <= MAX_MARKERS,
            "call {}: {} markers",
            i + 1,
            markers(&r.body)
        );
        // The client's markers, where the client put them.
        let last = r.body["messages"].as_array().unwrap().last().unwrap();
        let block = last["content"].as_array().unwrap().last().unwrap();
        assert_eq!(block["cache_control"], marker(), "call {}", i + 1);
        assert_eq!(
            r.body["system"][0]["cache_control"],
            marker(),
            "call {}",
            i + 1
        );
        if !compacted[i] {
            // Nothing compacted since the last call: it goes out extended, markers aside.
            if i > 0 {
                assert!(
                    extends(&upstream[i - 1].body, &r.body),
                    "call {}: the previous request is not a prefix of this one",
                    i + 1
                );
            }
            if compacted.iter().take(i).all(|c| !c) {
                assert_eq!(
                    r.body,
                    request(i + 1, string_task),
                    "call {}: sent as it came",
                    i + 1
                );
            }
        }
    }
    // The provider reads from its cache everything the previous request held, call after call
    // (the compaction's own call rewrites it once).
    let cached: Vec<u64> = upstream
        .iter()
        .map(|r| r.usage.map_or(0, |u| u.cached))
        .collect();
    for i in 2..CALLS {
        if compacted[i] {
            continue;
        }
        assert!(
            cached[i] > cached[i - 1] || compacted[i - 1],
            "call {}: cache reads {cached:?}",
            i + 1
        );
        let previous = upstream[i - 1].input_tokens.unwrap();
        assert!(
            cached[i] * 10 >= previous * 9,
            "call {}: {} of the previous request's {previous} tokens read from the cache ({cached:?})",
            i + 1,
            cached[i]
        );
    }

    // One session, never branched.
    assert_eq!(h.store.sessions().unwrap().len(), 1);
    assert_eq!(events(&h.store, EventKind::Branch), 0);
    h.stop().await;
}

/// Events of `kind` in every session of `store`.
fn events(store: &MemoryStore, kind: EventKind) -> usize {
    store
        .sessions()
        .unwrap()
        .iter()
        .flat_map(|id| store.read(id, 0).unwrap())
        .filter(|s| matches!(&s.record, Record::Event(e) if e.kind == kind))
        .count()
}
