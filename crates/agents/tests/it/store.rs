//! The MCP tools on a session of Compact's own store: the truncated original behind a marker is
//! recalled whole, search reaches it, the status counts the session's view.

use crate::support::scratch;
use compact_agents::mcp::search::search;
use compact_agents::mcp::server::status;
use compact_agents::mcp::source::Source;
use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::{CompactManager, SessionConfig, SqliteStore, Store};
use serde_json::json;
use std::sync::Arc;

/// A store with one tool-using session whose long output was truncated at write time; returns the
/// store and the reference the truncation marker names.
fn session(test: &str) -> (Arc<dyn Store>, String, String) {
    let path = scratch(test).join("sessions.db");
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(16_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, Arc::clone(&store)).unwrap();
    let mut conv = Conversation {
        format: Some(Format::Anthropic),
        ..Conversation::default()
    };
    conv.push(Item::text(Role::User, "Run the orbit tests."));
    manager.preflight("orbit", &conv).unwrap();
    conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
        "toolu_1",
        "bash",
        json!({"command": "cargo test -p orbit"}),
    ))));
    let mut long: String = (0..3_000)
        .map(|i| format!("test step_{i} ... ok\n"))
        .collect();
    long.push_str(
        "test perihelion_drift ... FAILED\nthread panicked at 'drift exceeds tolerance'\n",
    );
    let output = manager
        .truncate_tool_output("orbit", "toolu_1", &long)
        .unwrap();
    assert!(output.len() < long.len());
    let reference = output
        .split("compactctl recall ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap()
        .to_owned();
    conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
        "toolu_1", output,
    ))));
    conv.push(Item::text(
        Role::Assistant,
        "One test fails: perihelion drift.",
    ));
    manager.preflight("orbit", &conv).unwrap();
    (store, reference, long)
}

#[test]
fn a_store_session_serves_recall_search_and_status() {
    let (store, reference, long) = session("store_tools");
    let source = Source::Store {
        store,
        session: "orbit".to_owned(),
    };
    let history = source.load().unwrap();
    let original = history.recall(&reference).unwrap().unwrap();
    assert_eq!(
        original.plain_text(),
        long,
        "the original behind the marker, whole"
    );
    let hits = search(&history.conversation.items, "perihelion drift");
    assert!(!hits.is_empty());
    let s = status(&history);
    assert_eq!(s["items_in_log"], 4);
    assert!(s["tokens_in_context"].as_u64().unwrap() > 0, "{s}");
    assert!(history.recall("no-such-reference").unwrap().is_none());

    let missing = Source::Store {
        store: source_store(&source),
        session: "nobody".to_owned(),
    };
    let err = missing.load().err().unwrap();
    assert!(err.to_string().contains("nobody"), "{err}");
}

fn source_store(source: &Source) -> Arc<dyn Store> {
    match source {
        Source::Store { store, .. } => Arc::clone(store),
        _ => unreachable!(),
    }
}
