//! Recall in band: a compacted request holds reference stubs, the proxy offers `compact_recall`,
//! the scripted model calls it, and the proxy answers from the session log and goes on upstream;
//! the client sees one ordinary reply.

use crate::support::*;
use compact_proxy::recall::Outcome;
use compact_session::record::Record;
use compact_session::{EventKind, Store};
use compact_sim::{RecordedRequest, ScriptedReply, RECALL_TOOL};
use serde_json::{json, Value};
use std::sync::Arc;

const SESSION: &str = "recall-session";
const HEADERS: [(&str, &str); 1] = [("x-compact-session", SESSION)];
/// Steps a session may take before the proxy's requests hold a stub (it takes about 20 at the
/// test window).
const MAX_STEPS: usize = 60;

/// The names of the tools a request declares, in its own shape.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| {
            t.get("name")
                .or_else(|| t["function"].get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect()
}

fn has_stub(r: &RecordedRequest) -> bool {
    String::from_utf8_lossy(&r.raw).contains("[compact:ref ")
}

/// Drives a tool-using session until the request the proxy sends upstream holds a reference
/// stub; returns the client's request for the next turn (its history extended).
async fn drive_to_stub(h: &Harness, wire: Wire, stream: bool, first: Value) -> Value {
    let mut request = first;
    for step in 0..MAX_STEPS {
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &HEADERS, &request).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let turn = wire.read(stream, &reply.body);
        assert_eq!(turn.calls.len(), 1, "step {step}: {}", reply.text());
        wire.extend(
            &mut request,
            &turn,
            &[tool_output(&format!("src/file_{step}.rs"), step, 40)],
        );
        if h.sim.requests().last().is_some_and(has_stub) {
            return request;
        }
    }
    panic!("no stub after {MAX_STEPS} steps");
}

/// The original of item `id`, as the session log holds it.
fn original(h: &Harness, id: &str) -> String {
    let stored = h.store.find_items(SESSION, id).unwrap();
    let item = stored
        .iter()
        .find_map(|s| match &s.record {
            Record::Item(r) => Some(r.item.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no item {id} in the log"));
    item.plain_text()
}

/// The tool results at the end of a detour request: (call id, text, is_error).
fn results(wire: Wire, body: &Value) -> Vec<(String, String, bool)> {
    let list = body[wire.list_key()].as_array().unwrap();
    match wire {
        Wire::Chat => list
            .iter()
            .rev()
            .take_while(|m| m["role"] == "tool")
            .map(|m| {
                let text = m["content"].as_str().unwrap().to_owned();
                (m["tool_call_id"].as_str().unwrap().to_owned(), text, false)
            })
            .collect(),
        Wire::Responses => list
            .iter()
            .rev()
            .take_while(|i| i["type"] == "function_call_output")
            .map(|i| {
                let text = i["output"].as_str().unwrap().to_owned();
                (i["call_id"].as_str().unwrap().to_owned(), text, false)
            })
            .collect(),
        Wire::Anthropic => list.last().unwrap()["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| {
                (
                    b["tool_use_id"].as_str().unwrap().to_owned(),
                    b["content"].as_str().unwrap().to_owned(),
                    b["is_error"] == true,
                )
            })
            .collect(),
    }
}

fn recall_events(h: &Harness) -> Vec<Value> {
    h.store
        .read(SESSION, 0)
        .unwrap()
        .iter()
        .filter_map(|s| match &s.record {
            Record::Event(e) if e.kind == EventKind::Recall => Some(e.to_json()),
            _ => None,
        })
        .collect()
}

async fn recall_detour(wire: Wire, stream: bool) {
    let h = Harness::start().await;
    let first = wire.first_request("sim-model", "Fix the handlers.", stream);
    let request = drive_to_stub(&h, wire, stream, first).await;
    let before = h.sim.requests().len();
    h.sim.push_reply(ScriptedReply::recall_stub());
    h.sim
        .push_reply(ScriptedReply::text("Found it: the handler needs a fix."));
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());

    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 2, "one detour");
    let (asked, detour) = (&upstream[0], &upstream[1]);
    assert!(has_stub(asked));
    let names = tool_names(&asked.body);
    assert_eq!(names.iter().filter(|n| *n == RECALL_TOOL).count(), 1);
    assert!(names.contains(&"read_file".to_owned()), "{names:?}");
    let id = compact_sim::script::first_stub_id(&String::from_utf8_lossy(&asked.raw))
        .unwrap()
        .to_owned();
    // The detour carries the model's call and, as its result, the original output unchanged.
    let expected = original(&h, &id);
    assert!(expected.starts_with("src/file_") && expected.lines().count() == 40);
    let answers = results(wire, &detour.body);
    assert_eq!(answers.len(), 1, "{}", detour.body);
    assert_eq!(answers[0].1, expected);
    assert!(!answers[0].2);
    let sent = asked.body[wire.list_key()].as_array().unwrap().len();
    let grown = detour.body[wire.list_key()].as_array().unwrap().len();
    assert_eq!(grown, sent + 2, "the assistant turn and the result");
    assert_eq!(detour.stream, stream);
    // The client gets one ordinary reply: the model's answer after the detour.
    let turn = wire.read(stream, &reply.body);
    assert!(turn.complete && turn.errors.is_empty(), "{}", reply.text());
    assert_eq!(turn.text, "Found it: the handler needs a fix.");
    assert!(turn.calls.is_empty());
    assert!(!reply.text().contains(RECALL_TOOL), "{}", reply.text());
    // Counted: an event in the session log and the metric.
    let events = recall_events(&h);
    assert_eq!(events.len(), 1);
    assert_eq!(
        (
            events[0]["reference"].as_str(),
            events[0]["found"].as_bool()
        ),
        (Some(id.as_str()), Some(true))
    );
    assert!(events[0]["tokens"].as_u64().unwrap() > 100);
    assert_eq!(h.proxy.metrics().recall_calls(Outcome::Found), 1);
    let metrics = h.get("/metrics", &[]).await.text();
    assert!(
        metrics.contains("compact_recall_calls_total{outcome=\"found\"} 1"),
        "{metrics}"
    );
    assert!(metrics.contains("compact_recall_detours_total 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_recall_detour() {
    recall_detour(Wire::Chat, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_recall_detour_streaming() {
    recall_detour(Wire::Chat, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_recall_detour() {
    recall_detour(Wire::Responses, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_recall_detour_streaming() {
    recall_detour(Wire::Responses, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_recall_detour() {
    recall_detour(Wire::Anthropic, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_recall_detour_streaming() {
    recall_detour(Wire::Anthropic, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tool_without_a_stub_or_when_recall_is_off() {
    let h = Harness::start().await;
    for wire in WIRES {
        let reply = h
            .post(
                wire.path(),
                &HEADERS,
                &wire.first_request("m", "Hi.", false),
            )
            .await;
        assert_eq!(reply.status, 200);
        let sent = h.sim.requests().last().unwrap().clone();
        assert_eq!(tool_names(&sent.body), ["read_file"], "{wire:?}");
    }
    let off = Harness::with(Options {
        adjust: Some(Arc::new(|c| c.recall.enabled = false)),
        ..Options::default()
    })
    .await;
    let wire = Wire::Anthropic;
    let request = drive_to_stub(&off, wire, false, wire.first_request("m", "Go.", false)).await;
    off.post(wire.path(), &HEADERS, &request).await;
    let sent = off.sim.requests().last().unwrap().clone();
    assert!(has_stub(&sent));
    assert_eq!(tool_names(&sent.body), ["read_file"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_tool_named_compact_recall_is_the_clients() {
    let h = Harness::start().await;
    let wire = Wire::Chat;
    let mut first = wire.first_request("m", "Use your own recall.", false);
    let own = json!({"type": "function", "function": {"name": RECALL_TOOL,
        "description": "The client's own tool", "parameters": {"type": "object"}}});
    first["tools"].as_array_mut().unwrap().push(own);
    let request = drive_to_stub(&h, wire, false, first).await;
    h.sim.push_reply(ScriptedReply::recall_stub());
    let before = h.sim.requests().len();
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 1, "no detour for the client's own tool");
    assert_eq!(tool_names(&upstream[0].body), ["read_file", RECALL_TOOL]);
    assert_eq!(
        upstream[0].body["tools"][1]["function"]["description"],
        "The client's own tool"
    );
    let turn = wire.read(false, &reply.body);
    assert_eq!(turn.calls.len(), 1);
    assert_eq!(turn.calls[0].1, RECALL_TOOL);
    assert!(h
        .log
        .lines()
        .iter()
        .any(|l| l.contains("recall_not_offered")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_id_gets_an_error_result_and_the_next_reply_reaches_the_client() {
    let h = Harness::start().await;
    let wire = Wire::Anthropic;
    let request = drive_to_stub(&h, wire, true, wire.first_request("m", "Go.", true)).await;
    h.sim.push_reply(
        ScriptedReply::text("").with_tool_call(RECALL_TOOL, json!({"id": "i_no_such_id"})),
    );
    h.sim
        .push_reply(ScriptedReply::text("Then I will read it again."));
    let before = h.sim.requests().len();
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 2);
    let answers = results(wire, &upstream[1].body);
    assert_eq!(answers.len(), 1);
    assert!(answers[0].2, "is_error is set");
    assert!(answers[0].1.contains("i_no_such_id"), "{}", answers[0].1);
    let turn = wire.read(true, &reply.body);
    assert!(turn.complete);
    assert_eq!(turn.text, "Then I will read it again.");
    assert_eq!(h.proxy.metrics().recall_calls(Outcome::NotFound), 1);
    let events = recall_events(&h);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["found"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_detour_bound_is_kept() {
    let h = Harness::with(Options {
        adjust: Some(Arc::new(|c| c.recall.max_detours = 2)),
        ..Options::default()
    })
    .await;
    let wire = Wire::Chat;
    let request = drive_to_stub(&h, wire, true, wire.first_request("m", "Go.", true)).await;
    for _ in 0..3 {
        h.sim.push_reply(ScriptedReply::recall_stub());
    }
    h.sim
        .push_reply(ScriptedReply::text("Answer without more recalls."));
    let before = h.sim.requests().len();
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    let upstream = h.sim.requests()[before..].to_vec();
    // The request, two detours, then the request as prepared without the tool.
    assert_eq!(upstream.len(), 4);
    let len = |r: &RecordedRequest| r.body["messages"].as_array().unwrap().len();
    assert_eq!(len(&upstream[1]), len(&upstream[0]) + 2);
    assert_eq!(len(&upstream[2]), len(&upstream[0]) + 4);
    for r in &upstream[..3] {
        assert!(tool_names(&r.body).contains(&RECALL_TOOL.to_owned()));
    }
    assert_eq!(len(&upstream[3]), len(&upstream[0]));
    assert_eq!(tool_names(&upstream[3].body), ["read_file"]);
    let turn = wire.read(true, &reply.body);
    assert!(turn.complete);
    assert_eq!(turn.text, "Answer without more recalls.");
    assert!(!reply.text().contains(RECALL_TOOL));
    let metrics = h.get("/metrics", &[]).await.text();
    assert!(metrics.contains("compact_recall_bound_reached_total 1"));
    assert!(metrics.contains("compact_recall_detours_total 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_mixing_recall_and_a_client_tool_is_forwarded_untouched() {
    for (wire, stream) in [
        (Wire::Anthropic, true),
        (Wire::Chat, false),
        (Wire::Responses, true),
    ] {
        let h = Harness::start().await;
        let first = wire.first_request("m", "Mixed.", stream);
        let request = drive_to_stub(&h, wire, stream, first).await;
        h.sim.push_reply(
            ScriptedReply::recall_stub().with_tool_call("read_file", json!({"path": "src/x.rs"})),
        );
        let before = h.sim.requests().len();
        let reply = h.post(wire.path(), &HEADERS, &request).await;
        assert_eq!(h.sim.requests().len(), before + 1, "{wire:?}: no detour");
        let turn = wire.read(stream, &reply.body);
        let names: Vec<&str> = turn.calls.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(names, [RECALL_TOOL, "read_file"], "{wire:?}");
        assert!(recall_events(&h).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detour_that_overflows_goes_out_again_as_prepared_without_the_tool() {
    let h = Harness::start().await;
    let wire = Wire::Responses;
    let request = drive_to_stub(&h, wire, false, wire.first_request("m", "Go.", false)).await;
    h.sim.push_reply(ScriptedReply::recall_stub());
    h.sim
        .push_reply(ScriptedReply::text("Going on without the original."));
    // The first request goes through (a slow fault of no delay); the detour overflows.
    h.sim.push_fault(compact_sim::Fault::Slow {
        delay: std::time::Duration::ZERO,
    });
    h.sim.push_fault(compact_sim::Fault::Overflow);
    let before = h.sim.requests().len();
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 3);
    assert_eq!(upstream[1].status, 400, "the detour overflowed");
    let len = |r: &RecordedRequest| r.body["input"].as_array().unwrap().len();
    assert_eq!(len(&upstream[2]), len(&upstream[0]));
    assert_eq!(tool_names(&upstream[2].body), ["read_file"]);
    let turn = wire.read(false, &reply.body);
    assert_eq!(turn.text, "Going on without the original.");
    assert!(h
        .log
        .lines()
        .iter()
        .any(|l| l.contains("recall_detour_overflowed")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_calls_in_one_turn_are_answered_in_order() {
    let h = Harness::start().await;
    let wire = Wire::Responses;
    let request = drive_to_stub(&h, wire, true, wire.first_request("m", "Go.", true)).await;
    h.sim.push_reply(
        ScriptedReply::recall_stub().with_tool_call(RECALL_TOOL, json!({"id": "i_missing"})),
    );
    h.sim.push_reply(ScriptedReply::text("Both read."));
    let before = h.sim.requests().len();
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 2);
    let id = compact_sim::script::first_stub_id(&String::from_utf8_lossy(&upstream[0].raw))
        .unwrap()
        .to_owned();
    // `results` reads from the end: the last answer first.
    let answers = results(wire, &upstream[1].body);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1].1, original(&h, &id));
    assert!(answers[0].1.contains("i_missing"), "{}", answers[0].1);
    let calls: Vec<&Value> = upstream[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call" && i["name"] == RECALL_TOOL)
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["call_id"].as_str(), Some(answers[1].0.as_str()));
    assert_eq!(calls[1]["call_id"].as_str(), Some(answers[0].0.as_str()));
    let turn = wire.read(true, &reply.body);
    assert!(turn.complete);
    assert_eq!(turn.text, "Both read.");
    assert_eq!(recall_events(&h).len(), 2);
}

/// An id a `compactctl run` marker names lives in the store `run` keeps outputs in, not in the
/// conversation's log: `compact_recall` answers it from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_compactctl_run_kept_is_recalled_too() {
    use compact_core::model::{Item, ItemBody, ToolResult};
    use compact_session::{CompactManager, MemoryStore};
    let kept_store = Arc::new(MemoryStore::new());
    let kept = Arc::new(
        CompactManager::open(session_config(WINDOW), kept_store.clone() as Arc<dyn Store>).unwrap(),
    );
    let mut original = Item::new(ItemBody::ToolResult(ToolResult::text(
        "run",
        "the whole output of a command: line one\nline two\nerror: the line that mattered",
    )));
    original.meta.id = compact_core::model::ItemId::new("r0a1b2c3d4e");
    kept.keep_original("run", original, json!({"source": "compactctl run"}))
        .unwrap();
    // An output larger than the whole window: recalling it would send a request the model cannot
    // read.
    let lines: Vec<String> = (0..4_000)
        .map(|n| format!("row {n}: value {}", n * 7))
        .collect();
    let mut huge = Item::new(ItemBody::ToolResult(ToolResult::text(
        "run2",
        lines.join("\n"),
    )));
    huge.meta.id = compact_core::model::ItemId::new("r9huge00000");
    kept.keep_original("run", huge, json!({"source": "compactctl run"}))
        .unwrap();
    let adjust: Adjust = {
        let kept = kept.clone();
        Arc::new(move |config: &mut compact_proxy::ProxyConfig| {
            config.kept_outputs = Some(compact_proxy::KeptOutputs {
                manager: kept.clone(),
                sessions: vec!["run".to_owned()],
            });
        })
    };
    let h = Harness::with(Options {
        adjust: Some(adjust),
        ..Options::default()
    })
    .await;
    let wire = Wire::Anthropic;
    let first = wire.first_request("sim-model", "Fix the handlers.", false);
    let request = drive_to_stub(&h, wire, false, first).await;
    let before = h.sim.requests().len();
    h.sim.push_reply(
        ScriptedReply::text("").with_tool_call(RECALL_TOOL, json!({"id": "r0a1b2c3d4e"})),
    );
    h.sim
        .push_reply(ScriptedReply::text("Now I see the error line."));
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 2, "one detour");
    let answers = results(wire, &upstream[1].body);
    assert_eq!(answers.len(), 1);
    assert!(
        answers[0].1.ends_with("error: the line that mattered"),
        "{answers:?}"
    );
    assert!(!answers[0].2, "not an error result");
    assert_eq!(h.proxy.metrics().recall_calls(Outcome::Found), 1);

    // The huge one is refused with a reason, and the request stays within the window.
    let before = h.sim.requests().len();
    h.sim.push_reply(
        ScriptedReply::text("").with_tool_call(RECALL_TOOL, json!({"id": "r9huge00000"})),
    );
    h.sim
        .push_reply(ScriptedReply::text("Too large; I will look at less."));
    let reply = h.post(wire.path(), &HEADERS, &request).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let upstream = h.sim.requests()[before..].to_vec();
    assert_eq!(upstream.len(), 2, "one detour");
    let answers = results(wire, &upstream[1].body);
    assert!(answers[0].2, "an error result: {answers:?}");
    assert!(answers[0].1.contains("context window"), "{answers:?}");
    assert!(upstream[1].input_tokens.unwrap() <= WINDOW as u64);
    assert_eq!(h.proxy.metrics().recall_calls(Outcome::TooLarge), 1);
}
