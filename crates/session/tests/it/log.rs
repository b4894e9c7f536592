//! The session log: nothing received is ever missing, every request sent is valid, and recall
//! returns originals for truncation markers and compaction references.

use crate::common::{counter, manager, output, violations, Agent, Rng};
use compact_core::budget::Budget;
use compact_core::model::{Format, ItemBody};
use compact_core::plan::REFERENCE_PREFIX;
use compact_core::policy::Policy;
use compact_session::record::{ItemSource, Record};
use compact_session::{EventKind, SessionError, Store};
use std::collections::HashMap;
use std::sync::Arc;

#[test]
fn nothing_is_missing_from_the_log_after_many_compactions() {
    const WINDOW: usize = 16_000;
    let manager = manager(WINDOW);
    let usable = Budget::new(&Policy::for_window(WINDOW)).usable;
    for (seed, format) in [
        (21, Format::OpenAiChat),
        (22, Format::Anthropic),
        (23, Format::OpenAiResponses),
    ] {
        let session = format!("soak-{}", format.name());
        let mut agent = Agent::new(seed, format);
        let mut compactions = 0;
        let mut calls = 0;
        while counter().total(&agent.history) < 3 * WINDOW {
            agent.step();
            let prepared = manager.preflight(&session, &agent.history).unwrap();
            calls += 1;
            compactions += usize::from(prepared.report.compaction.is_some());
            assert!(
                prepared.report.tokens <= usable,
                "call {calls}: {} > {usable}",
                prepared.report.tokens
            );
            assert_eq!(
                violations(&prepared.conversation),
                Vec::<String>::new(),
                "call {calls}"
            );
        }
        assert!(
            compactions >= 2,
            "{session}: {compactions} compactions in {calls} calls"
        );

        // Every item ever sent is in the log exactly once, unchanged, in order.
        let records = manager.store().read(&session, 0).unwrap();
        let received: Vec<_> = records
            .iter()
            .filter_map(|s| match &s.record {
                Record::Item(r) if r.source == ItemSource::Received => Some(&r.item),
                _ => None,
            })
            .collect();
        assert_eq!(received.len(), agent.history.len());
        for (logged, sent) in received.iter().zip(&agent.history.items) {
            assert_eq!(logged.meta.id, sent.meta.id);
            assert_eq!(logged.body(), sent.body());
        }
        let views = records
            .iter()
            .filter(|s| matches!(s.record, Record::View(_)))
            .count();
        assert_eq!(views, compactions, "one view per compaction");
        let seqs: Vec<u64> = records.iter().map(|s| s.seq).collect();
        assert_eq!(
            seqs,
            (1..=records.len() as u64).collect::<Vec<_>>(),
            "no gaps"
        );
    }
}

#[test]
fn recall_returns_the_original_of_a_truncation_marker() {
    let manager = manager(64_000);
    let mut agent = Agent::new(9, Format::OpenAiChat);
    agent.step();
    manager.preflight("s", &agent.history).unwrap();
    let mut rng = Rng::new(4);
    let big = output(&mut rng, "huge.log", 3_000);
    let cut = manager.truncate_tool_output("s", "call_x", &big).unwrap();
    assert!(counter().count_text(&cut) < counter().count_text(&big) / 2);
    let events = manager.store().read("s", 0).unwrap();
    let reference = events
        .iter()
        .find_map(|s| match &s.record {
            Record::Event(e) if e.kind == EventKind::Truncated => e
                .get("reference")
                .and_then(|r| r.as_str())
                .map(str::to_owned),
            _ => None,
        })
        .unwrap();
    assert!(cut.contains(&reference), "the marker names the reference");
    let original = manager.recall("s", &reference).unwrap();
    let result = original.as_tool_result().unwrap();
    assert_eq!(result.parts[0].as_text(), Some(big.as_str()));
    assert_eq!(result.call_id, "call_x");
    assert!(!original.meta.visibility.model && original.meta.visibility.user);
    // A small output is left alone and nothing is logged for it.
    let version = manager.store().version("s").unwrap();
    assert_eq!(
        manager.truncate_tool_output("s", "call_y", "ok").unwrap(),
        "ok"
    );
    assert_eq!(manager.store().version("s").unwrap(), version);
}

#[test]
fn recall_returns_the_originals_behind_compaction_references() {
    let manager = manager(16_000);
    let mut agent = Agent::new(12, Format::OpenAiChat);
    let mut checked_refs = 0;
    let mut checked_covers = 0;
    for _ in 0..40 {
        agent.step();
        let prepared = manager.preflight("s", &agent.history).unwrap();
        if prepared.report.compaction.is_none() {
            continue;
        }
        let originals: HashMap<&str, _> = agent
            .history
            .items
            .iter()
            .map(|i| (i.meta.id.as_str(), i))
            .collect();
        for item in &prepared.conversation.items {
            match item.body() {
                ItemBody::ToolResult(r) => {
                    let text = r.parts.first().and_then(|p| p.as_text()).unwrap_or("");
                    let original = originals[item.meta.id.as_str()];
                    if text.starts_with(REFERENCE_PREFIX) || original.body() != item.body() {
                        let back = manager.recall("s", item.meta.id.as_str()).unwrap();
                        assert_eq!(back.body(), original.body());
                        checked_refs += 1;
                    }
                }
                ItemBody::Checkpoint(c) => {
                    for id in &c.covers {
                        if let Some(original) = originals.get(id.as_str()) {
                            assert_eq!(
                                manager.recall("s", id.as_str()).unwrap().body(),
                                original.body()
                            );
                            checked_covers += 1;
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert!(
        checked_refs + checked_covers > 10,
        "{checked_refs} references, {checked_covers} covered items"
    );
    assert!(matches!(
        manager.recall("s", "no-such-item"),
        Err(SessionError::UnknownReference { .. })
    ));
}

#[test]
fn a_recall_for_the_model_is_answered_and_counted_in_the_log() {
    let manager = manager(64_000);
    let mut agent = Agent::new(5, Format::OpenAiChat);
    agent.step();
    agent.step();
    manager.preflight("s", &agent.history).unwrap();
    let result = agent
        .history
        .items
        .iter()
        .find(|i| i.as_tool_result().is_some())
        .unwrap();
    let found = manager
        .recall_for_model("s", result.meta.id.as_str())
        .unwrap();
    assert_eq!(found.item.as_ref().map(|i| i.body()), Some(result.body()));
    assert_eq!(found.tokens, counter().count_text(&result.plain_text()));
    assert!(found.tokens > 0);
    let missing = manager.recall_for_model("s", "no-such-item").unwrap();
    assert_eq!((missing.item, missing.tokens), (None, 0));
    let recalls: Vec<serde_json::Value> = manager
        .store()
        .read("s", 0)
        .unwrap()
        .iter()
        .filter_map(|s| match &s.record {
            Record::Event(e) if e.kind == EventKind::Recall => Some(e.to_json()),
            _ => None,
        })
        .collect();
    assert_eq!(recalls.len(), 2);
    assert_eq!(recalls[0]["event"], "compact.recall");
    assert_eq!(recalls[0]["reference"], result.meta.id.as_str());
    assert_eq!(recalls[0]["found"], true);
    assert_eq!(recalls[0]["tokens"], found.tokens);
    assert_eq!(recalls[1]["found"], false);
    assert_eq!(recalls[1]["tokens"], 0);
    // A session that does not exist is an error, and nothing is logged for it.
    assert!(matches!(
        manager.recall_for_model("nobody", "x"),
        Err(SessionError::UnknownSession(_))
    ));
}

#[test]
fn keeping_an_output_never_reads_the_log_back() {
    use compact_core::model::{content_id, Item, ToolResult};
    let store = Arc::new(crate::common::CountingStore::new());
    let mut ids = Vec::new();
    // One manager per output, as `compactctl run` opens one per command.
    for i in 0..50 {
        let manager = crate::common::manager_with(16_000, store.clone());
        let mut item = Item::new(ItemBody::ToolResult(ToolResult::text(
            "compactctl-run:stdout",
            format!("output {i}\n{}", "a line of output\n".repeat(200)),
        )));
        item.meta.id = content_id(&item);
        ids.push(item.meta.id.clone());
        manager
            .keep_original("run", item, serde_json::json!({"exit_code": 0}))
            .unwrap();
    }
    assert_eq!(
        store.records_read.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "work per kept output does not grow with the log"
    );
    assert_eq!(store.version("run").unwrap(), 100);
    // Every one of them is recalled by its id.
    let manager = crate::common::manager_with(16_000, store.clone());
    for (i, id) in ids.iter().enumerate() {
        let item = manager.recall("run", id.as_str()).unwrap();
        let text = item.as_tool_result().unwrap().parts[0].as_text().unwrap();
        assert!(text.starts_with(&format!("output {i}\n")));
    }
}
