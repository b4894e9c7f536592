//! Event exporters on a running manager: what reaches a JSONL file and a callback is what the log
//! holds, in seed 003's schema; a stuck exporter never holds up a call (its events are dropped and
//! counted); a failing one is counted and the others still get every event; the JSONL file rotates.

use crate::common::{self, manager_with, Agent};
use compact_core::model::Format;
use compact_session::record::Record;
use compact_session::{
    CallbackExporter, CompactManager, ExportQueue, Exporter, JsonlExporter, MemoryStore, Store,
};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("compact-exports-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn manager(store: Arc<dyn Store>, exports: Arc<ExportQueue>) -> CompactManager {
    manager_with(8_000, store).with_exports(exports)
}

fn drive(manager: &CompactManager, session: &str, steps: usize) -> usize {
    common::drive(manager, session, steps, 7)
}

fn logged_events(store: &dyn Store, session: &str) -> Vec<String> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) => Some(e.kind.as_str().to_owned()),
            _ => None,
        })
        .collect()
}

/// A callback exporter that keeps every event it gets, and what it kept.
fn collecting() -> (CallbackExporter, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let keep = Arc::clone(&seen);
    let callback = CallbackExporter::new("test", move |e| {
        keep.lock().unwrap().push(e.clone());
        Ok(())
    });
    (callback, seen)
}

#[test]
fn exported_events_are_the_logged_ones_in_the_seed_schema() {
    let dir = temp_dir("schema");
    let path = dir.join("events.jsonl");
    let (callback, seen) = collecting();
    let exporters: Vec<Arc<dyn Exporter>> = vec![
        Arc::new(JsonlExporter::open(&path, 1 << 30, 1).unwrap()),
        Arc::new(callback),
    ];
    let exports = Arc::new(ExportQueue::start(exporters, 1_024).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    let compactions = drive(&m, "abc", 30);
    assert!(compactions > 0, "the session must compact");
    assert!(exports.flush(Duration::from_secs(30)));

    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let names: Vec<String> = lines
        .iter()
        .map(|v| v["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        names,
        logged_events(store.as_ref(), "abc"),
        "what is logged is exported, in order"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        lines,
        "every exporter gets every event"
    );
    let stats = exports.stats();
    assert_eq!((stats.dropped, stats.failed), (0, 0));
    assert_eq!(stats.exported, lines.len() as u64);

    for v in &lines {
        assert_eq!(v["session_id"], "abc");
        let ts = v["ts"].as_str().unwrap();
        assert!(
            ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
            "{ts}"
        );
    }
    let first = |name: &str| {
        lines
            .iter()
            .find(|v| v["event"] == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let decision = first("compact.trigger_decision");
    assert!(decision["decision"].is_string() && decision["effective"].is_u64());
    let policy = first("compact.policy_applied");
    assert_eq!(policy["max"], 8_000);
    assert!(policy["t_est"].as_u64().unwrap() > 0);
    assert_eq!(policy["policy"]["strategy"], "tiered");
    assert!(policy["kept"]["pinned"].is_u64() && policy["kept"]["recent_turns"].is_u64());
    let pruned = first("compact.pruned_messages");
    assert!(pruned["pruned_count"].as_u64().unwrap() > 0);
    assert!(pruned["tokens_after"].as_u64().unwrap() < pruned["tokens_before"].as_u64().unwrap());
    assert_eq!(
        names
            .iter()
            .filter(|n| *n == "compact.policy_applied")
            .count(),
        compactions,
        "one policy_applied per compaction"
    );
    if let Some(summary) = lines
        .iter()
        .find(|v| v["event"] == "compact.summary_created")
    {
        assert!(summary["summary_tokens"].as_u64().unwrap() > 0);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_stuck_exporter_never_holds_up_a_call_and_its_drops_are_counted() {
    // The exporter blocks until the test releases it: if a preflight waited for it, this test would
    // never finish.
    let (release, gate) = mpsc::channel::<()>();
    let gate = Mutex::new(gate);
    let stuck = CallbackExporter::new("stuck", move |_| {
        let _ = gate.lock().unwrap().recv();
        Ok(())
    });
    let exports = Arc::new(ExportQueue::start(vec![Arc::new(stuck)], 4).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    drive(&m, "s", 12);
    let logged = logged_events(store.as_ref(), "s").len() as u64;
    let stats = exports.stats();
    assert!(stats.dropped > 0, "a full queue drops: {stats:?}");
    assert!(stats.dropped < logged);
    drop(release); // every blocked and later call now returns at once
    assert!(exports.flush(Duration::from_secs(30)));
    let stats = exports.stats();
    assert_eq!(stats.exported + stats.dropped, logged, "{stats:?}");
}

#[test]
fn a_failing_exporter_is_counted_and_the_others_still_export() {
    let seen = Arc::new(Mutex::new(0usize));
    let counting = {
        let seen = Arc::clone(&seen);
        CallbackExporter::new("counting", move |_| {
            *seen.lock().unwrap() += 1;
            Ok(())
        })
    };
    let failing = CallbackExporter::new("down", |_| Err("collector unreachable".to_owned()));
    let exports =
        Arc::new(ExportQueue::start(vec![Arc::new(failing), Arc::new(counting)], 1_024).unwrap());
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let m = manager(Arc::clone(&store), Arc::clone(&exports));
    drive(&m, "s", 5);
    assert!(exports.flush(Duration::from_secs(30)));
    let logged = logged_events(store.as_ref(), "s").len();
    assert_eq!(*seen.lock().unwrap(), logged);
    assert_eq!(exports.stats().failed, logged as u64);
    assert_eq!(
        exports.last_error().as_deref(),
        Some("down: collector unreachable")
    );
}

#[test]
fn the_jsonl_file_rotates_and_keeps_the_newest_files() {
    let dir = temp_dir("rotate");
    let path = dir.join("events.jsonl");
    let exporter = JsonlExporter::open(&path, 2_000, 2).unwrap();
    for i in 0..100 {
        let event = serde_json::json!({"event": "compact.test", "n": i, "pad": "x".repeat(100)});
        exporter.export(&event).unwrap();
    }
    let read = |p: &PathBuf| -> Vec<u64> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["n"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    let current = read(&path);
    let one = read(&dir.join("events.jsonl.1"));
    let two = read(&dir.join("events.jsonl.2"));
    assert!(
        !dir.join("events.jsonl.3").exists(),
        "only `keep` rotated files"
    );
    for f in [
        &path,
        &dir.join("events.jsonl.1"),
        &dir.join("events.jsonl.2"),
    ] {
        assert!(std::fs::metadata(f).unwrap().len() <= 2_000);
    }
    assert_eq!(
        current.last(),
        Some(&99),
        "the newest event is in the current file"
    );
    // The three files hold consecutive events, oldest in `.2`.
    let all: Vec<u64> = two.iter().chain(&one).chain(&current).copied().collect();
    assert!(all.windows(2).all(|w| w[1] == w[0] + 1), "{all:?}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn secrets_never_reach_an_exporter() {
    let secret = "sk-ant-api03-Zq8vN2kLx7RtY4mWc9HbJ6pSd3FgA1eUo5iK0nVbXcQwEr";
    let (callback, seen) = collecting();
    let exports = Arc::new(ExportQueue::start(vec![Arc::new(callback)], 1_024).unwrap());
    let m = manager(Arc::new(MemoryStore::new()), Arc::clone(&exports));
    let mut agent = Agent::new(3, Format::OpenAiChat);
    for _ in 0..6 {
        agent.step();
        m.preflight("s", &agent.history).unwrap();
    }
    // A manual compaction whose note (logged in its event) holds the secret.
    agent.user(&format!("/compact keep the key {secret} in mind"));
    let prepared = m.preflight("s", &agent.history).unwrap();
    assert!(prepared.report.manual);
    assert!(exports.flush(Duration::from_secs(30)));
    let seen = seen.lock().unwrap();
    assert!(seen.iter().any(|e| e["event"] == "compact.compacted"));
    let text = serde_json::to_string(&*seen).unwrap();
    assert!(!text.contains(secret), "a secret reached an exporter");
    assert!(
        text.contains("[REDACTED:"),
        "the note is exported, redacted"
    );
}
