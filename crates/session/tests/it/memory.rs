//! Structured fact memory in the runtime: the block after the system prompt, byte-identical while
//! the facts are, kept through compactions, forgetting (logged, persisted, never injected again),
//! the project's memory loaded into new sessions, every candidate decided with a reason.

use crate::common::{counter, Agent};
use compact_core::memory::{render, Lifecycle, Origin};
use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_session::event::EventKind;
use compact_session::memory::{project_session, read_changes, read_memory};
use compact_session::record::Record;
use compact_session::{CompactManager, MemoryConfig, MemoryStore, SessionConfig, Store};
use serde_json::json;
use std::sync::Arc;

fn manager(window: usize, store: &Arc<MemoryStore>, project: Option<&str>) -> CompactManager {
    let memory = MemoryConfig {
        project: project.map(str::to_owned),
        ..MemoryConfig::default()
    };
    let config =
        SessionConfig::new(Policy::for_window(window), counter()).with_memory(Some(memory));
    CompactManager::open(config, Arc::clone(store) as Arc<dyn Store>).unwrap()
}

/// An agent whose first request states a constraint and edits a file by absolute path.
fn agent() -> Agent {
    let mut a = Agent::new(7, Format::OpenAiChat);
    a.user("Refactor the parser. Never push to main without review.");
    a.history
        .push(Item::new(ItemBody::ToolCall(ToolCall::function(
            "edit_1",
            "Edit",
            json!({"file_path": "/work/app/src/parser.rs", "old_string": "a", "new_string": "b"}),
        ))));
    a.history
        .push(Item::new(ItemBody::ToolResult(ToolResult::text(
            "edit_1", "ok",
        ))));
    a
}

fn block(conv: &Conversation) -> Option<(usize, String)> {
    conv.items.iter().enumerate().find_map(|(i, item)| {
        (item.role() == Role::System && render::is_block(&item.plain_text()))
            .then(|| (i, item.plain_text()))
    })
}

fn events(store: &MemoryStore, session: &str, kind: EventKind) -> Vec<serde_json::Value> {
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

#[test]
fn the_block_follows_the_system_prompt_and_stays_byte_identical_while_the_facts_do() {
    let store = Arc::new(MemoryStore::new());
    let m = manager(200_000, &store, None);
    let mut a = agent();
    let first = m.preflight("s", &a.history).unwrap();
    let (at, text) = block(&first.conversation).expect("a block");
    assert_eq!(at, 1, "right after the system prompt");
    assert!(text.contains("Never push to main without review"), "{text}");
    assert!(
        text.contains("/work/app/src/parser.rs (modified)"),
        "{text}"
    );
    assert!(counter().count_text(&text) <= compact_session::DEFAULT_MEMORY_BUDGET);
    let mut previous = first.conversation.clone();
    for _ in 0..4 {
        a.step();
        let next = m.preflight("s", &a.history).unwrap();
        assert_eq!(block(&next.conversation).unwrap().1, text);
        assert_eq!(
            next.conversation.items[..previous.items.len()],
            previous.items[..],
            "the prefix sent before is sent again unchanged"
        );
        assert_eq!(next.report.reused_items, previous.items.len());
        previous = next.conversation.clone();
    }
    // A reload renders the block again from the log: it takes in the facts learnt since...
    let restarted = manager(200_000, &store, None);
    a.step();
    let next = restarted.preflight("s", &a.history).unwrap();
    let memory = restarted.memory("s").unwrap();
    assert_eq!(
        memory,
        read_memory(store.as_ref(), "s").unwrap(),
        "rebuilt from the log"
    );
    let reloaded = block(&next.conversation).unwrap().1;
    assert_eq!(
        Some(reloaded.clone()),
        render::render(&memory, compact_session::DEFAULT_MEMORY_BUDGET, &counter())
    );
    // ...and with the same facts, another reload gives the same bytes.
    let again = manager(200_000, &store, None);
    let next = again.preflight("s", &a.history).unwrap();
    assert_eq!(block(&next.conversation).unwrap().1, reloaded);
    // Every candidate has a decision and a reason code.
    let decided = events(&store, "s", EventKind::MemoryCandidate);
    assert!(!decided.is_empty());
    for e in decided {
        assert!(
            ["accepted", "merged", "rejected"].contains(&e["outcome"].as_str().unwrap()),
            "{e}"
        );
        assert!(e["reason"].as_str().is_some_and(|r| !r.is_empty()), "{e}");
    }
}

#[test]
fn the_block_survives_every_compaction() {
    let store = Arc::new(MemoryStore::new());
    let m = manager(12_000, &store, None);
    let mut a = agent();
    let mut compactions = 0;
    for _ in 0..80 {
        let prepared = m.preflight("s", &a.history).unwrap();
        let (at, text) = block(&prepared.conversation).expect("the block is always there");
        assert_eq!(at, 1);
        assert!(text.contains("Never push to main without review"));
        if prepared.report.compaction.is_some() {
            compactions += 1;
            assert!(prepared.events.iter().all(|e| e.kind != EventKind::Failed));
        }
        if compactions >= 2 {
            break;
        }
        a.step();
    }
    assert!(compactions >= 2, "the session compacted twice");
    // The block's facts are the memory's: a later compaction took in what was learnt since.
    let injected = events(&store, "s", EventKind::MemoryInjected);
    assert!(
        injected.iter().any(|e| e["reason"] == "compaction"),
        "{injected:?}"
    );
    assert!(injected
        .iter()
        .all(|e| e["tokens"].as_u64().unwrap() <= compact_session::DEFAULT_MEMORY_BUDGET as u64));
}

#[test]
fn a_forgotten_fact_is_logged_and_never_injected_again() {
    let store = Arc::new(MemoryStore::new());
    let m = manager(200_000, &store, None);
    let mut a = agent();
    m.preflight("s", &a.history).unwrap();
    let memory = m.memory("s").unwrap();
    let fact = memory
        .facts()
        .iter()
        .find(|f| f.text.contains("Never push"))
        .unwrap()
        .clone();
    assert!(m.forget("s", &fact.id).unwrap().is_some());
    assert!(m.forget("s", &fact.id).unwrap().is_none(), "once is enough");
    assert!(m.forget("s", "f0000000000").is_err());
    a.step();
    let next = m.preflight("s", &a.history).unwrap();
    let (_, text) = block(&next.conversation).unwrap();
    assert!(!text.contains("Never push"), "{text}");
    // Persisted: a new manager on the store sees it forgotten, and so does the log.
    let restarted = manager(200_000, &store, None);
    let held = restarted.memory("s").unwrap();
    assert_eq!(held.get(&fact.id).unwrap().lifecycle, Lifecycle::Forgotten);
    assert_eq!(read_memory(store.as_ref(), "s").unwrap(), held);
    // Said again, it is rejected, not revived.
    a.user("Never push to main without review.");
    let again = restarted.preflight("s", &a.history).unwrap();
    assert!(!block(&again.conversation).unwrap().1.contains("Never push"));
    let rejected = events(&store, "s", EventKind::MemoryCandidate);
    assert!(rejected
        .iter()
        .any(|e| e["reason"] == "forgotten" && e["outcome"] == "rejected"));
}

#[test]
fn durable_facts_are_promoted_to_the_project_and_loaded_into_its_new_sessions() {
    let store = Arc::new(MemoryStore::new());
    let m = manager(200_000, &store, Some("/work/app"));
    m.preflight("first", &agent().history).unwrap();
    let project = read_memory(store.as_ref(), &project_session("/work/app")).unwrap();
    let texts: Vec<&str> = project.facts().iter().map(|f| f.text.as_str()).collect();
    assert!(
        texts.iter().any(|t| t.contains("Never push to main")),
        "{texts:?}"
    );
    assert!(
        !texts.iter().any(|t| t.contains("parser.rs")),
        "a file's state is not durable: {texts:?}"
    );
    // A new session of the project starts with it.
    let mut other = Agent::new(3, Format::OpenAiChat);
    other.user("Add a changelog entry.");
    let prepared = m.preflight("second", &other.history).unwrap();
    let (_, text) = block(&prepared.conversation).expect("the project's facts");
    assert!(text.contains("Never push to main"), "{text}");
    let memory = m.memory("second").unwrap();
    assert!(memory
        .facts()
        .iter()
        .any(|f| f.origin == Origin::Project && f.text.contains("Never push")));
    // Loading is no evidence: the project's fact was seen once.
    let project = read_memory(store.as_ref(), &project_session("/work/app")).unwrap();
    let held = project
        .facts()
        .iter()
        .find(|f| f.text.contains("Never push"))
        .unwrap();
    assert_eq!(held.evidence, 1, "{held:?}");
    // Another project does not.
    let elsewhere = manager(200_000, &store, Some("/work/other"));
    let prepared = elsewhere.preflight("third", &other.history).unwrap();
    assert!(block(&prepared.conversation).is_none_or(|(_, t)| !t.contains("Never push")));
    // Promotion is logged once per fact and session: a second sighting adds nothing.
    let before = read_changes(store.as_ref(), &project_session("/work/app"))
        .unwrap()
        .len();
    let mut again = agent();
    again.step();
    m.preflight("first", &again.history).unwrap();
    let after = read_changes(store.as_ref(), &project_session("/work/app"))
        .unwrap()
        .len();
    assert_eq!(before, after);
}

#[test]
fn secrets_in_facts_are_redacted_before_they_are_stored_or_injected() {
    let store = Arc::new(MemoryStore::new());
    let m = manager(200_000, &store, None);
    let mut a = Agent::new(1, Format::OpenAiChat);
    let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd";
    a.user(&format!(
        "Fix the client. Never log the key {key} anywhere."
    ));
    let prepared = m.preflight("s", &a.history).unwrap();
    let (_, text) = block(&prepared.conversation).unwrap();
    assert!(
        text.contains("Never log the key") && !text.contains(key),
        "{text}"
    );
    for f in m.memory("s").unwrap().facts() {
        assert!(!f.text.contains(key) && !f.subject.contains(key));
    }
    for s in store.read("s", 0).unwrap() {
        if let Record::Event(e) = &s.record {
            assert!(!e.to_json().to_string().contains(key));
        }
    }
}

#[test]
fn manual_reviewed_and_recovery_compactions_render_the_block_with_the_facts_learnt_since() {
    let store = Arc::new(MemoryStore::new());
    let m = manager(200_000, &store, None);
    let mut a = agent();
    let first = m.preflight("s", &a.history).unwrap();
    let before = block(&first.conversation).unwrap().1;
    let work = |a: &mut crate::common::Agent| {
        for _ in 0..10 {
            a.step();
            m.preflight("s", &a.history).unwrap();
        }
    };
    work(&mut a);
    // A new rule arrives: the block is not rendered again until the prompt changes anyway.
    a.user("Never delete the migrations folder.");
    let next = m.preflight("s", &a.history).unwrap();
    assert_eq!(block(&next.conversation).unwrap().1, before);
    assert!(m
        .memory("s")
        .unwrap()
        .facts()
        .iter()
        .any(|f| f.text.contains("Never delete the migrations folder")));
    // A manual compaction rewrites the prompt: the block takes the rule in, and the next call
    // keeps that block.
    let done = m.manual_compact("s", "by hand").unwrap();
    let fresh = block(&done.conversation).unwrap().1;
    assert!(
        fresh.contains("Never delete the migrations folder"),
        "{fresh}"
    );
    assert!(
        fresh.contains("Never push to main without review"),
        "{fresh}"
    );
    a.step();
    let after = m.preflight("s", &a.history).unwrap();
    assert_eq!(block(&after.conversation).unwrap().1, fresh);

    // A reviewed compaction and an overflow recovery do the same.
    work(&mut a);
    a.user("Never edit the generated files in src/gen.");
    m.preflight("s", &a.history).unwrap();
    let proposal = m.propose("s").unwrap();
    assert!(block(&proposal.conversation)
        .unwrap()
        .1
        .contains("Never edit the generated files"));
    let applied = m.apply(&proposal, None).unwrap();
    assert!(block(&applied.conversation)
        .unwrap()
        .1
        .contains("Never edit the generated files"));
    work(&mut a);
    a.user("Never commit the .env file.");
    let sent = m.preflight("s", &a.history).unwrap();
    let body = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "prompt is too long: 250000 tokens > 200000 maximum"}})
    .to_string();
    match m.recover("s", &sent.conversation, 400, &body).unwrap() {
        compact_session::Recovery::Retry(retry) => {
            assert!(block(&retry)
                .unwrap()
                .1
                .contains("Never commit the .env file"));
        }
        other => panic!("{other:?}"),
    }
}
