//! Concurrent calls on one session are serialised: nothing is lost or duplicated.

use crate::common::{manager, violations, Agent};
use compact_core::model::Format;
use compact_session::record::{ItemSource, Record};
use std::collections::HashSet;
use std::sync::Arc;
use std::thread;

#[test]
fn concurrent_preflights_on_one_session() {
    let manager = Arc::new(manager(16_000));
    let mut agent = Agent::new(40, Format::OpenAiChat);
    let mut histories = Vec::new();
    for _ in 0..40 {
        agent.step();
        histories.push(agent.history.clone());
    }
    let histories = Arc::new(histories);
    // Two threads send the same growing history, each call by both: every call succeeds, whatever
    // the interleaving, and every request is valid.
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let manager = Arc::clone(&manager);
            let histories = Arc::clone(&histories);
            thread::spawn(move || {
                for h in histories.iter() {
                    let prepared = manager.preflight("s", h).unwrap();
                    assert!(violations(&prepared.conversation).is_empty());
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // The log holds every item of the final history, each chain link once.
    let records = manager.store().read("s", 0).unwrap();
    let mut links = HashSet::new();
    for r in &records {
        if let Record::Item(item) = &r.record {
            if item.source == ItemSource::Received {
                assert!(links.insert(item.hash), "a received item was logged twice");
            }
        }
    }
    let final_history = histories.last().unwrap();
    assert!(links.len() >= final_history.len());
    for item in &final_history.items {
        assert!(!manager
            .store()
            .find_items("s", item.meta.id.as_str())
            .unwrap()
            .is_empty());
    }
}

#[test]
fn concurrent_branches_on_one_session_are_each_logged() {
    let manager = Arc::new(manager(16_000));
    let workers: Vec<_> = (0..2u64)
        .map(|t| {
            let manager = Arc::clone(&manager);
            thread::spawn(move || {
                let mut agent = Agent::new(50 + t, Format::OpenAiChat);
                for _ in 0..15 {
                    agent.step();
                    let prepared = manager.preflight("s", &agent.history).unwrap();
                    assert!(violations(&prepared.conversation).is_empty());
                }
                agent.history
            })
        })
        .collect();
    let histories: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for h in &histories {
        for item in &h.items {
            assert!(!manager
                .store()
                .find_items("s", item.meta.id.as_str())
                .unwrap()
                .is_empty());
        }
    }
}
