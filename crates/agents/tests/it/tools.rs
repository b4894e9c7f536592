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
        latest(
            Agent::Codex,
            &home.join(".codex"),
            Path::new("/home/dev/orbit")
        )
        .unwrap(),
        day.join("rollout-a.jsonl")
    );
    assert!(latest(Agent::Codex, &home.join(".codex"), Path::new("/elsewhere")).is_err());
    assert!(latest(Agent::ClaudeCode, &home, Path::new("/elsewhere")).is_err());
}

/// Copies fixture `name` to `to`, its recorded directory replaced by `cwd`, written at `time`.
fn transcript_at(name: &str, to: &Path, cwd: &str, time: std::time::SystemTime) {
    let text = std::fs::read_to_string(fixture(name))
        .unwrap()
        .replace("/home/dev/a-b", cwd);
    std::fs::write(to, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(to)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

#[test]
fn latest_prefers_the_transcript_of_this_directory_and_refuses_to_guess_between_two() {
    use compact_agents::mcp::source::{find_session, SAME_TIME};
    use compact_agents::AgentsError;
    use std::time::{Duration, SystemTime};
    let home = crate::support::scratch("latest_concurrent");
    let cwd = Path::new("/home/dev/a-b");
    // `/home/dev/a-b` and `/home/dev/a/b` share Claude Code's project directory.
    assert_eq!(
        claude_project_dir(cwd),
        claude_project_dir(Path::new("/home/dev/a/b"))
    );
    let project = home.join(".claude/projects").join(claude_project_dir(cwd));
    std::fs::create_dir_all(&project).unwrap();
    let now = SystemTime::now();
    let a = project.join("aaaa1111-2222-4333-8444-555566667777.jsonl");
    let b = project.join("bbbb1111-2222-4333-8444-555566667777.jsonl");

    // The newer transcript is another directory's: this directory's older one is the answer.
    transcript_at(
        "claude-concurrent-a.jsonl",
        &a,
        "/home/dev/a-b",
        now - Duration::from_secs(600),
    );
    transcript_at("claude-concurrent-b.jsonl", &b, "/home/dev/a/b", now);
    assert_eq!(latest(Agent::ClaudeCode, &home, cwd).unwrap(), a);
    assert_eq!(
        latest(Agent::ClaudeCode, &home, Path::new("/home/dev/a/b")).unwrap(),
        b
    );

    // Two sessions in this directory, one clearly newer: the newer.
    transcript_at("claude-concurrent-b.jsonl", &b, "/home/dev/a-b", now);
    assert_eq!(latest(Agent::ClaudeCode, &home, cwd).unwrap(), b);

    // Written within SAME_TIME of each other: an error naming both and what to pass instead.
    let close = now - SAME_TIME / 2;
    transcript_at("claude-concurrent-a.jsonl", &a, "/home/dev/a-b", close);
    let err = latest(Agent::ClaudeCode, &home, cwd).unwrap_err();
    match &err {
        AgentsError::AmbiguousLatest { candidates, .. } => {
            assert_eq!(candidates, &vec![b.clone(), a.clone()]);
        }
        other => panic!("not ambiguous: {other}"),
    }
    let message = err.to_string();
    assert!(message.contains(&*a.to_string_lossy()), "{message}");
    assert!(message.contains(&*b.to_string_lossy()), "{message}");
    assert!(
        message.contains("--transcript") && message.contains("--session"),
        "{message}"
    );

    // The session id picks one of them.
    let id = "aaaa1111-2222-4333-8444-555566667777";
    assert_eq!(find_session(Agent::ClaudeCode, &home, cwd, id).unwrap(), a);
    assert!(find_session(Agent::ClaudeCode, &home, cwd, "cccc").is_err());
    assert!(find_session(Agent::ClaudeCode, &home, cwd, "../x").is_err());
    let loaded = Source::Transcript(find_session(Agent::ClaudeCode, &home, cwd, id).unwrap())
        .load()
        .unwrap();
    assert!(loaded
        .conversation
        .items
        .iter()
        .any(|i| i.plain_text().contains("parser module to lexer")));
}

#[test]
fn latest_codex_rollouts_of_one_directory_written_together_are_ambiguous() {
    use compact_agents::mcp::source::find_session;
    use compact_agents::AgentsError;
    use std::time::{Duration, SystemTime};
    let home = crate::support::scratch("latest_codex_concurrent");
    let day = home.join(".codex/sessions/2026/03/05");
    std::fs::create_dir_all(&day).unwrap();
    let first = day.join("rollout-2026-03-05T08-00-00-019b0000-aaaa-7000-8000-000000000001.jsonl");
    let second = day.join("rollout-2026-03-05T08-00-03-019b0000-bbbb-7000-8000-000000000002.jsonl");
    let rollout = std::fs::read_to_string(fixture("codex-rollout.jsonl")).unwrap();
    std::fs::write(&first, &rollout).unwrap();
    std::fs::write(
        &second,
        rollout.replace(
            "019b0000-aaaa-7000-8000-000000000001",
            "019b0000-bbbb-7000-8000-000000000002",
        ),
    )
    .unwrap();
    let now = SystemTime::now();
    for (path, time) in [(&first, now - Duration::from_secs(1)), (&second, now)] {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }
    let cwd = Path::new("/home/dev/orbit");
    assert!(matches!(
        latest(Agent::Codex, &home.join(".codex"), cwd),
        Err(AgentsError::AmbiguousLatest { ref candidates, .. }) if candidates.len() == 2
    ));
    assert_eq!(
        find_session(
            Agent::Codex,
            &home.join(".codex"),
            cwd,
            "019b0000-aaaa-7000-8000-000000000001"
        )
        .unwrap(),
        first
    );
    std::fs::File::options()
        .write(true)
        .open(&first)
        .unwrap()
        .set_modified(now - Duration::from_secs(3600))
        .unwrap();
    assert_eq!(
        latest(Agent::Codex, &home.join(".codex"), cwd).unwrap(),
        second
    );
}

#[test]
fn memory_reads_the_facts_of_the_whole_log_with_their_sources() {
    let history = Source::Transcript(fixture("claude-session.jsonl"))
        .load()
        .unwrap();
    let memory = history.memory().unwrap();
    let facts = memory.facts();
    assert!(
        !facts.is_empty(),
        "the fixture edits files and fails a test"
    );
    for f in facts {
        assert!(!f.sources.is_empty(), "{f:?}");
        // Every source is an item of the log, which recall can open.
        for s in &f.sources {
            assert!(history.recall(s).unwrap().is_some(), "{s}");
        }
    }
    let has = |kind: &str, words: &str| {
        facts
            .iter()
            .any(|f| f.kind.as_str() == kind && f.text.contains(words))
    };
    assert!(has("constraint", "Never change the public signature"));
    assert!(has("file_state", "src/import.rs (modified)"));
    assert!(has("error", "error[E0308]: mismatched types in sniff"));
}
