//! Two managers sharing one store: the one whose append met a conflict reloads the log on its next
//! call and carries on, with nothing lost or duplicated.

use crate::common::{manager_with, Agent};
use compact_core::model::Format;
use compact_session::record::{ItemSource, Record};
use compact_session::{MemoryStore, SessionError, Store, StoreError};
use std::collections::HashSet;
use std::sync::Arc;

#[test]
fn a_manager_that_lost_a_race_reloads_and_continues() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let a = manager_with(16_000, Arc::clone(&store));
    let b = manager_with(16_000, Arc::clone(&store));
    let mut agent = Agent::new(9, Format::OpenAiChat);
    agent.step();
    a.preflight("s", &agent.history).unwrap();
    agent.step();
    b.preflight("s", &agent.history).unwrap();
    agent.step();
    // `a` still believes the log is where it left it.
    match a.preflight("s", &agent.history) {
        Err(SessionError::Store(StoreError::Conflict { .. })) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    let version = store.version("s").unwrap();
    // The retry reloads the log and extends what `b` sent.
    let retried = a.preflight("s", &agent.history).unwrap();
    assert!(!retried.report.branched);
    assert!(store.version("s").unwrap() > version);
    let mut links = HashSet::new();
    for r in store.read("s", 0).unwrap() {
        if let Record::Item(item) = r.record {
            if item.source == ItemSource::Received {
                assert!(links.insert(item.hash), "an item was logged twice");
            }
        }
    }
    assert_eq!(links.len(), agent.history.len());
}
