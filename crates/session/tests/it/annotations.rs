//! Per-call annotations: a client that moves its `cache_control` marker to the newest message on
//! every call (Claude Code does) extends its history; it does not branch it. Between compactions
//! the upstream sees the previous request again (markers aside), and every request carries the
//! client's current markers, never an old one.

use crate::common::{counter, manager_with};
use compact_core::budget::Budget;
use compact_core::model::Format;
use compact_core::policy::Policy;
use compact_formats::wire::{decode, encode};
use compact_session::{EventKind, MemoryStore, SqliteStore, Store};
use serde_json::{json, Value};
use std::sync::Arc;

/// Anthropic's limit on `cache_control` markers per request.
const MAX_MARKERS: usize = 4;

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

/// The request of call `n` (1-based) of a Claude Code-like session: its system prompt and last
/// tool marked, the task, then `n - 1` tool calls with their results; the marker on the last
/// block of the newest message only.
pub fn claude_code_request(n: usize) -> Value {
    shaped_request(n, false)
}

/// [`claude_code_request`]; with `string_task`, the task is a string, sent as a marked text block
/// while it is the newest message (what Claude Code does with a user message whose content is a
/// string).
pub fn shaped_request(n: usize, string_task: bool) -> Value {
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
        "model": "claude-sonnet-4-5", "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are a coding agent. Be brief.", "cache_control": marker()}],
        "tools": [
            {"name": "Read", "description": "Read a file", "input_schema": {"type": "object"}},
            {"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"},
             "cache_control": marker()}],
        "messages": messages,
    })
}

/// `cache_control` members anywhere in `v`.
pub fn markers(v: &Value) -> usize {
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
pub fn unmarked(v: &Value) -> Value {
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

/// True when `previous` (markers removed) is `current` (markers removed) up to `previous`'s last
/// message: the same request fields, tools and system prompt, and its messages a prefix.
pub fn extends(previous: &Value, current: &Value) -> bool {
    let (p, c) = (unmarked(previous), unmarked(current));
    let (pm, cm) = (
        p["messages"].as_array().unwrap(),
        c["messages"].as_array().unwrap(),
    );
    let rest = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().unwrap().remove("messages");
        v
    };
    rest(&p) == rest(&c) && cm.len() >= pm.len() && cm[..pm.len()] == pm[..]
}

/// The window of the test: its trigger falls between the 9th and the 10th call.
fn window() -> usize {
    let request = |n| decode(Format::Anthropic, &claude_code_request(n)).unwrap();
    let (at9, at10) = (counter().total(&request(9)), counter().total(&request(10)));
    let trigger = |w| Budget::new(&Policy::for_window(w)).trigger;
    let mut window = 8_000;
    while trigger(window + 100) <= at10 {
        window += 100;
    }
    assert!(trigger(window) > at9 && trigger(window) <= at10);
    window
}

fn moving_marker_extends_the_history(store: Arc<dyn Store>, string_task: bool) {
    let window = window();
    let trigger = Budget::new(&Policy::for_window(window)).trigger;
    let manager = manager_with(window, store);
    let mut previous: Option<Value> = None;
    let mut compacted_at = Vec::new();
    for n in 1..=12 {
        let client = shaped_request(n, string_task);
        assert!(markers(&client) <= MAX_MARKERS);
        let prepared = manager
            .preflight("cc", &decode(Format::Anthropic, &client).unwrap())
            .unwrap();
        let report = &prepared.report;
        assert!(!report.branched, "call {n}: a moved marker is not a branch");
        assert!(
            !prepared.events.iter().any(|e| e.kind == EventKind::Branch),
            "call {n}"
        );
        let sent = encode(&prepared.conversation, Format::Anthropic)
            .unwrap()
            .value;
        assert!(
            markers(&sent) <= MAX_MARKERS,
            "call {n}: {} markers sent",
            markers(&sent)
        );
        // The client's newest marker is where the client put it.
        let last = sent["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(
            last["content"].as_array().unwrap().last().unwrap()["cache_control"],
            marker(),
            "call {n}"
        );
        if report.compaction.is_some() {
            compacted_at.push(n);
        } else {
            assert!(
                report.effective_tokens < trigger,
                "call {n}: no compaction at or above the trigger"
            );
            if compacted_at.is_empty() {
                // Nothing compacted yet: the client's request goes out as it came.
                assert_eq!(sent, client, "call {n}");
                assert!(prepared.sends_request_as_is(&decode(Format::Anthropic, &client).unwrap()));
            }
            if let Some(previous) = &previous {
                assert!(
                    extends(previous, &sent),
                    "call {n}: the previous request is a prefix of this one"
                );
                assert!(!report.counted_whole, "call {n}: counted incrementally");
            }
        }
        previous = Some(sent);
    }
    assert_eq!(
        compacted_at.len(),
        1,
        "compactions at calls {compacted_at:?}"
    );
    assert_eq!(compacted_at, [10]);
}

#[test]
fn a_moved_cache_control_marker_is_not_a_branch_and_never_piles_up() {
    moving_marker_extends_the_history(Arc::new(MemoryStore::new()), false);
}

#[test]
fn a_string_sent_as_a_marked_block_while_newest_is_not_a_branch() {
    moving_marker_extends_the_history(Arc::new(MemoryStore::new()), true);
}

#[test]
fn a_moved_marker_is_not_a_branch_after_a_reload_either() {
    // The same session, its state dropped after every call: each call rebuilds it from the
    // SQLite log, whose items hold the markers they were first received with.
    let dir = std::env::temp_dir().join(format!("compact-session-{}-markers", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(dir.join("sessions.db")).unwrap());
    let window = window();
    let mut previous: Option<Value> = None;
    let mut compactions = 0;
    for n in 1..=12 {
        let manager = manager_with(window, Arc::clone(&store));
        let client = claude_code_request(n);
        let prepared = manager
            .preflight("cc", &decode(Format::Anthropic, &client).unwrap())
            .unwrap();
        assert!(!prepared.report.branched, "call {n}");
        let sent = encode(&prepared.conversation, Format::Anthropic)
            .unwrap()
            .value;
        assert!(markers(&sent) <= MAX_MARKERS, "call {n}");
        if prepared.report.compaction.is_some() {
            compactions += 1;
        } else if let Some(previous) = &previous {
            assert!(extends(previous, &sent), "call {n}");
        }
        previous = Some(sent);
    }
    assert_eq!(compactions, 1);
}

#[test]
fn markers_moved_among_the_tools_and_the_system_blocks_are_not_a_change_either() {
    let manager = manager_with(1_000_000, Arc::new(MemoryStore::new()));
    let mut client = claude_code_request(3);
    manager
        .preflight("t", &decode(Format::Anthropic, &client).unwrap())
        .unwrap();
    // The next call moves the tools' marker to the first tool.
    let mut next = claude_code_request(4);
    next["tools"][1]
        .as_object_mut()
        .unwrap()
        .remove("cache_control");
    next["tools"][0]["cache_control"] = marker();
    client = next;
    let prepared = manager
        .preflight("t", &decode(Format::Anthropic, &client).unwrap())
        .unwrap();
    assert!(!prepared.report.branched);
    assert!(!prepared.report.counted_whole, "counted incrementally");
    let sent = encode(&prepared.conversation, Format::Anthropic)
        .unwrap()
        .value;
    assert_eq!(sent, client, "the client's markers, as it placed them");
    // The call after drops the system block's marker (and puts the tools' back on the last).
    let mut third = claude_code_request(5);
    third["system"][0]
        .as_object_mut()
        .unwrap()
        .remove("cache_control");
    let prepared = manager
        .preflight("t", &decode(Format::Anthropic, &third).unwrap())
        .unwrap();
    assert!(!prepared.report.branched);
    let sent = encode(&prepared.conversation, Format::Anthropic)
        .unwrap()
        .value;
    assert_eq!(sent["system"][0].get("cache_control"), None);
    assert_eq!(sent["tools"][1]["cache_control"], marker());
    assert_eq!(sent, third);
}
