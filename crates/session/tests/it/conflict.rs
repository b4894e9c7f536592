//! Managers sharing one store (several proxies behind a load balancer on one PostgreSQL): a manager
//! whose cached session is behind the log catches up, reading only what the others appended, and
//! prepares the request as if it had served every turn; usage and untouched requests are recorded
//! once, whichever manager records them.

use crate::common::{counter, manager_with, violations, Agent, CountingStore};
use compact_core::model::Format;
use compact_session::record::{ItemSource, Record};
use compact_session::{EventKind, MemoryStore, Store, Usage};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};

/// The received items of `session`'s log: each logged once, and as many as `expected`.
fn assert_logged_once(store: &dyn Store, session: &str, expected: usize) {
    let mut links = HashSet::new();
    for r in store.read(session, 0).unwrap() {
        if let Record::Item(item) = r.record {
            if item.source == ItemSource::Received {
                assert!(links.insert(item.hash), "an item was logged twice");
            }
        }
    }
    assert_eq!(links.len(), expected);
}

fn events(store: &dyn Store, session: &str, kind: EventKind) -> Vec<serde_json::Value> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if e.kind == kind => Some(serde_json::Value::Object(e.data)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_manager_behind_the_log_catches_up_before_preparing() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = manager_with(16_000, Arc::clone(&store));
    let b = manager_with(16_000, Arc::clone(&store));
    let mut agent = Agent::new(9, Format::OpenAiChat);
    agent.step();
    a.preflight("s", &agent.history).unwrap();
    agent.step();
    b.preflight("s", &agent.history).unwrap();
    agent.step();
    // `a` is behind: it finds out before preparing, and extends what `b` sent.
    let version = store.version("s").unwrap();
    let prepared = a.preflight("s", &agent.history).unwrap();
    assert!(!prepared.report.branched);
    assert!(store.version("s").unwrap() > version);
    assert_logged_once(store.as_ref(), "s", agent.history.len());
}

/// Turns alternating between two managers, each followed by its usage recorded by the manager that
/// served it, as two proxies behind a round-robin balancer do: every turn is prepared (none fails
/// and none goes out over the window), compaction happens when due, every item is logged once,
/// every usage once, and no manager reads the whole log again after its first call.
#[test]
fn alternating_managers_prepare_every_turn_within_the_window() {
    let counting = Arc::new(CountingStore::new());
    let store: Arc<dyn Store> = Arc::clone(&counting) as Arc<dyn Store>;
    let window = 6_000;
    let managers = [
        manager_with(window, Arc::clone(&store)),
        manager_with(window, Arc::clone(&store)),
    ];
    let counter = counter();
    let mut agent = Agent::new(41, Format::OpenAiChat);
    let mut compactions = 0;
    let turns = 40;
    for turn in 0..turns {
        agent.step();
        let m = &managers[turn % 2];
        let prepared = m.preflight("s", &agent.history).unwrap();
        compactions += usize::from(prepared.report.compaction.is_some());
        let tokens = counter.total(&prepared.conversation);
        assert!(tokens <= window, "turn {turn}: {tokens} tokens sent");
        assert!(violations(&prepared.conversation).is_empty());
        let usage = Usage {
            input_tokens: tokens as u64,
            ..Usage::default()
        };
        m.record_usage("s", &usage).unwrap();
    }
    // Each manager holds its last usage until its next append, a flush or its drop.
    for m in &managers {
        m.flush().unwrap();
    }
    assert!(compactions >= 3, "{compactions} compactions");
    assert_logged_once(store.as_ref(), "s", agent.history.len());
    assert_eq!(
        events(store.as_ref(), "s", EventKind::Calibration).len(),
        turns
    );
    assert_eq!(events(store.as_ref(), "s", EventKind::Sent).len(), turns);
    // One whole-log read by the manager that did not create the session (its first call; the
    // one that created it knew the log empty), and the three above made by this test.
    assert_eq!(counting.whole_reads.load(Ordering::Relaxed), 1 + 3);
}

/// A session's first call creates its log and so knows it empty: nothing is read back. A manager
/// that finds the log already there (another process, or after a restart) reads it whole once,
/// and prepares the next turn as the first manager would.
#[test]
fn a_new_session_is_not_read_back_and_an_existing_one_is() {
    let counting = Arc::new(CountingStore::new());
    let store: Arc<dyn Store> = Arc::clone(&counting) as Arc<dyn Store>;
    let first = manager_with(64_000, Arc::clone(&store));
    let mut agent = Agent::new(7, Format::OpenAiChat);
    for _ in 0..2 {
        agent.step();
        first.preflight("n", &agent.history).unwrap();
    }
    assert_eq!(counting.whole_reads.load(Ordering::Relaxed), 0);
    let second = manager_with(64_000, Arc::clone(&store));
    agent.step();
    let prepared = second.preflight("n", &agent.history).unwrap();
    assert_eq!(counting.whole_reads.load(Ordering::Relaxed), 1);
    assert!(!prepared.report.branched);
    assert_logged_once(store.as_ref(), "n", agent.history.len());
}

/// The usage of a turn is recorded by the manager that served it after the next turn was
/// prepared elsewhere: it is not lost, and it measures the turn it belongs to.
#[test]
fn a_usage_recorded_after_the_next_turn_measures_its_own_call() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = manager_with(16_000, Arc::clone(&store));
    let b = manager_with(16_000, Arc::clone(&store));
    let mut agent = Agent::new(5, Format::OpenAiChat);
    agent.step();
    let first = a.preflight("s", &agent.history).unwrap();
    agent.step();
    let second = b.preflight("s", &agent.history).unwrap();
    assert_ne!(first.report.tokens, second.report.tokens);
    let usage = Usage {
        input_tokens: first.report.tokens as u64 + 10,
        ..Usage::default()
    };
    a.record_usage("s", &usage).unwrap();
    // Held until `a`'s next append, a flush or its drop: written after `b`'s turn.
    a.flush().unwrap();
    let calibrations = events(store.as_ref(), "s", EventKind::Calibration);
    assert_eq!(calibrations.len(), 1);
    assert_eq!(calibrations[0]["our_tokens"], first.report.tokens);
    // And `b`, behind by that record, carries on from it without a branch.
    agent.step();
    let third = b.preflight("s", &agent.history).unwrap();
    assert!(!third.report.branched);
    assert_logged_once(store.as_ref(), "s", agent.history.len());
}

/// Two managers preparing turns of one session at the same moment (a client retrying through
/// another replica): both succeed, the loser of the race catching up and trying again.
#[test]
fn concurrent_preflights_on_two_managers_both_succeed() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = Arc::new(manager_with(16_000, Arc::clone(&store)));
    let b = Arc::new(manager_with(16_000, Arc::clone(&store)));
    let mut agent = Agent::new(77, Format::OpenAiChat);
    for _ in 0..25 {
        agent.step();
        let barrier = Arc::new(Barrier::new(2));
        let threads: Vec<_> = [Arc::clone(&a), Arc::clone(&b)]
            .into_iter()
            .map(|m| {
                let history = agent.history.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait();
                    m.preflight("s", &history).map(|_| ())
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap().unwrap();
        }
    }
    assert_logged_once(store.as_ref(), "s", agent.history.len());
}

/// A request sent on untouched is still a call of the session: its items are logged and the next
/// call, on any manager, builds on them.
#[test]
fn a_passthrough_is_recorded_and_the_next_call_builds_on_it() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = manager_with(16_000, Arc::clone(&store));
    let b = manager_with(16_000, Arc::clone(&store));
    let mut agent = Agent::new(3, Format::OpenAiChat);
    agent.step();
    a.preflight("s", &agent.history).unwrap();
    agent.step();
    a.record_passthrough("s", &agent.history, "preflight_failed")
        .unwrap();
    assert_logged_once(store.as_ref(), "s", agent.history.len());
    let sent = events(store.as_ref(), "s", EventKind::Sent);
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["passthrough"], "preflight_failed");
    assert_eq!(sent[1]["received"], agent.history.len());
    agent.step();
    for m in [&a, &b] {
        let prepared = m.preflight("s", &agent.history).unwrap();
        assert!(!prepared.report.branched);
        assert_eq!(prepared.conversation.items.len(), agent.history.len());
    }
    assert_logged_once(store.as_ref(), "s", agent.history.len());
}
