//! What the MCP tools compute, on the fixture transcripts: recall by id, BM25 search over the
//! whole log (what compaction hid included), the context figures.

use crate::support::fixture;
use compact_agents::hook::Agent;
use compact_agents::mcp::search::search;
use compact_agents::mcp::server::status;
use compact_agents::mcp::source::{claude_project_dir, latest, Source};
use std::path::Path;

/// The failed `cargo test` result of the fixture (its seventh record).
const FAILED_TEST: &str = "5a1c0007-1111-4222-8333-000000000007";

#[test]
fn recall_returns_a_compacted_item_whole() {
    let history = Source::Transcript(fixture("claude-session.jsonl"))
        .load()
        .unwrap();
    let item = history.recall(FAILED_TEST).unwrap().unwrap();
    let text = item.plain_text();
    assert!(text.contains("error[E0308]: mismatched types in sniff"));
    assert!(text.contains("could not compile `ledger`"));
    assert!(!item.meta.visibility.model, "compaction hid it");
    assert!(history.recall("no-such-id").unwrap().is_none());
}

#[test]
fn search_finds_what_compaction_removed_first() {
    let history = Source::Transcript(fixture("claude-session.jsonl"))
        .load()
        .unwrap();
    let items = &history.conversation.items;
    let hits = search(items, "mismatched sniff");
    assert_eq!(items[hits[0].index].meta.id.as_str(), FAILED_TEST);
    assert!(hits[0].snippet.contains("mismatched types"));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert!(search(items, "zeppelin").is_empty());
}

#[test]
fn status_counts_the_view_and_the_compaction() {
    let history = Source::Transcript(fixture("claude-session.jsonl"))
        .load()
        .unwrap();
    let s = status(&history);
    assert_eq!(s["compactions"], 1);
    // The fixture's last assistant record reports 10 input tokens (and no cache use).
    assert_eq!(s["agent_reported"]["input_tokens_at_last_call"], 10);
    assert_eq!(s["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(s["window"], 200_000);
    let used = s["tokens_in_context"].as_u64().unwrap();
    assert!(used > 0 && used < 1_000, "{s}");
    assert!(s["next_compaction_at"].as_u64().unwrap() < 200_000);
    assert!(
        s["items_removed_by_compaction"].as_u64().unwrap() >= 10,
        "{s}"
    );
    assert_eq!(
        s["items_in_log"].as_u64().unwrap(),
        history.conversation.items.len() as u64
    );
}

#[test]
fn the_latest_session_is_found_per_agent_and_directory() {
    let home = crate::support::scratch("latest");
    let cwd = Path::new("/home/dev/ledger");
    let project = home.join(".claude/projects").join(claude_project_dir(cwd));
    assert_eq!(claude_project_dir(cwd), "-home-dev-ledger");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(fixture("claude-session.jsonl"), project.join("s1.jsonl")).unwrap();
    assert_eq!(
        latest(Agent::ClaudeCode, &home, cwd).unwrap(),
        project.join("s1.jsonl")
    );
    let day = home.join(".codex/sessions/2026/03/05");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(fixture("codex-rollout.jsonl"), day.join("rollout-a.jsonl")).unwrap();
    assert_eq!(
        latest(Agent::Codex, &home, Path::new("/home/dev/orbit")).unwrap(),
        day.join("rollout-a.jsonl")
    );
    assert!(latest(Agent::Codex, &home, Path::new("/elsewhere")).is_err());
    assert!(latest(Agent::ClaudeCode, &home, Path::new("/elsewhere")).is_err());
}
