//! `compact_agents::hook`: SessionStart after a compaction adds back what it dropped; PreCompact
//! saves it; bad input is an error (which the CLI turns into silence and a log line).

use crate::support::{claude_input, fixture, scratch};
use compact_agents::checkpoint::counter;
use compact_agents::hook::{run, Agent, HookOptions, HookOutcome};
use compact_agents::AgentsError;
use serde_json::{json, Value};
use std::path::Path;

fn options(test: &str, agent: Agent) -> HookOptions {
    HookOptions::new(agent, scratch(test).join("state"))
}

fn context_of(outcome: HookOutcome) -> String {
    let HookOutcome::Emit(out) = outcome else {
        panic!("expected output, got {outcome:?}");
    };
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn session_start_after_compaction_adds_back_failures_files_decisions_and_tasks() {
    let transcript = fixture("claude-session.jsonl");
    let input = claude_input("SessionStart", &transcript, json!({"source": "compact"}));
    let opts = options("ss_compact", Agent::ClaudeCode);
    let context = context_of(run(&input, &opts).unwrap());
    for expected in [
        "mismatched types in sniff",
        "cargo test -p ledger",
        "/home/dev/ledger/src/import.rs",
        "Add a regression test for semicolon-separated exports",
        "Never change the public signature of ledger::import::parse_file",
        "return `u8` from sniff",
    ] {
        assert!(
            context.contains(expected),
            "missing {expected:?} in:\n{context}"
        );
    }
    // Only what the compaction dropped: nothing said after it, not the agent's own summary.
    assert!(!context.contains("Picking the semicolon work back up"));
    assert!(!context.contains("This session is being continued"));
    assert!(counter().count_text(&context) <= opts.max_tokens);
}

#[test]
fn the_budget_is_never_exceeded() {
    let transcript = fixture("claude-session.jsonl");
    let input = claude_input("SessionStart", &transcript, json!({"source": "compact"}));
    for max_tokens in [200, 350, 800] {
        let mut opts = options("budget", Agent::ClaudeCode);
        opts.max_tokens = max_tokens;
        let context = context_of(run(&input, &opts).unwrap());
        assert!(counter().count_text(&context) <= max_tokens, "{max_tokens}");
    }
}

#[test]
fn other_session_starts_add_nothing() {
    let transcript = fixture("claude-session.jsonl");
    for source in ["startup", "resume", "clear"] {
        let input = claude_input("SessionStart", &transcript, json!({"source": source}));
        let outcome = run(&input, &options("ss_other", Agent::ClaudeCode)).unwrap();
        assert!(
            matches!(outcome, HookOutcome::Nothing(_)),
            "{source}: {outcome:?}"
        );
    }
    let input = claude_input("Stop", &transcript, json!({}));
    assert!(matches!(
        run(&input, &options("ss_other", Agent::ClaudeCode)).unwrap(),
        HookOutcome::Nothing(_)
    ));
}

/// The transcript up to (not including) the compaction boundary: what PreCompact sees.
fn before_compaction(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(fixture("claude-session.jsonl")).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .take_while(|l| !l.contains("compact_boundary"))
        .collect();
    let path = dir.join("before.jsonl");
    std::fs::write(&path, kept.join("\n") + "\n").unwrap();
    path
}

#[test]
fn pre_compact_saves_what_session_start_then_emits_once() {
    let opts = options("pre_compact", Agent::ClaudeCode);
    let dir = opts.state_dir.parent().unwrap().to_path_buf();
    let transcript = before_compaction(&dir);
    let pre = claude_input(
        "PreCompact",
        &transcript,
        json!({"trigger": "auto", "custom_instructions": ""}),
    );
    let HookOutcome::Saved(path) = run(&pre, &opts).unwrap() else {
        panic!("PreCompact saved nothing");
    };
    assert!(path.starts_with(&opts.state_dir));
    // The transcript shows no compaction (an agent that starts a new file): the saved one is used.
    let start = claude_input("SessionStart", &transcript, json!({"source": "compact"}));
    let context = context_of(run(&start, &opts).unwrap());
    assert!(context.contains("mismatched types in sniff"));
    assert!(!path.exists(), "the saved checkpoint is used once");
    assert!(matches!(
        run(&start, &opts).unwrap(),
        HookOutcome::Nothing(_)
    ));
}

#[test]
fn codex_rollout_after_compaction_adds_back_the_failed_build() {
    let transcript = fixture("codex-rollout.jsonl");
    let input = serde_json::to_vec(&json!({
        "session_id": "019b0000-aaaa-7000-8000-000000000001",
        "transcript_path": transcript,
        "cwd": "/home/dev/orbit",
        "hook_event_name": "SessionStart",
        "model": "gpt-5.1-codex",
        "source": "compact",
    }))
    .unwrap();
    let context = context_of(run(&input, &options("codex", Agent::Codex)).unwrap());
    assert!(context.contains("linker `cc` not found"), "{context}");
    assert!(context.contains("src/integrator.rs"), "{context}");
    assert!(!context.contains("Keep going."));
}

#[test]
fn a_transcript_cut_mid_line_is_still_read() {
    let dir = scratch("cut");
    let text = std::fs::read_to_string(fixture("claude-session.jsonl")).unwrap();
    let path = dir.join("cut.jsonl");
    std::fs::write(&path, &text[..text.len() - 40]).unwrap();
    let input = claude_input("SessionStart", &path, json!({"source": "compact"}));
    let context = context_of(run(&input, &options("cut_state", Agent::ClaudeCode)).unwrap());
    assert!(context.contains("mismatched types in sniff"));
}

#[test]
fn bad_input_is_an_error_naming_what_is_wrong() {
    let opts = options("bad", Agent::ClaudeCode);
    let err = run(b"{not json", &opts).unwrap_err();
    assert!(matches!(err, AgentsError::HookInput(_)), "{err}");
    let err = run(br#"{"session_id": "x"}"#, &opts).unwrap_err();
    assert!(err.to_string().contains("hook_event_name"), "{err}");
    let err = run(&vec![b' '; 2 * 1024 * 1024], &opts).unwrap_err();
    assert!(err.to_string().contains("more than"), "{err}");
    let input = claude_input(
        "SessionStart",
        Path::new("/nonexistent/transcript.jsonl"),
        json!({"source": "compact"}),
    );
    let err = run(&input, &opts).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/transcript.jsonl"),
        "{err}"
    );
    for odd in ["/dev/zero", "/tmp", "/dev/null"] {
        let input = claude_input("SessionStart", Path::new(odd), json!({"source": "compact"}));
        let err = run(&input, &opts).unwrap_err();
        assert!(err.to_string().contains(odd), "{err}");
    }
    let no_path =
        br#"{"session_id": "abc", "hook_event_name": "SessionStart", "source": "compact"}"#;
    assert!(run(no_path, &opts)
        .unwrap_err()
        .to_string()
        .contains("transcript_path"));
}

#[test]
fn a_hostile_session_id_never_chooses_where_the_hook_writes() {
    let opts = options("hostile", Agent::ClaudeCode);
    let dir = opts.state_dir.parent().unwrap().to_path_buf();
    let transcript = before_compaction(&dir);
    for id in ["../escape", "/tmp/x", "a/b", "", "..", &"x".repeat(500)] {
        let input = serde_json::to_vec(&json!({
            "session_id": id,
            "transcript_path": transcript,
            "hook_event_name": "PreCompact",
            "trigger": "manual",
        }))
        .unwrap();
        let err = run(&input, &opts).unwrap_err();
        assert!(err.to_string().contains("session_id"), "{id}: {err}");
    }
    assert!(!dir.join("escape.json").exists());
    assert!(!opts.state_dir.exists(), "nothing written");
}

#[test]
fn a_boundary_without_its_summary_yet_never_repeats_the_previous_span() {
    let opts = options("half_written", Agent::ClaudeCode);
    let dir = opts.state_dir.parent().unwrap().to_path_buf();
    let text = std::fs::read_to_string(fixture("claude-session.jsonl")).unwrap();
    // The fixture's compaction, then more work and a second boundary whose summary is not written.
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let boundary = lines
        .iter()
        .find(|l| l.contains("compact_boundary"))
        .unwrap()
        .replace("5a1c000b-", "5a1c00ff-");
    lines.push(boundary);
    let path = dir.join("half.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let input = claude_input("SessionStart", &path, json!({"source": "compact"}));
    // Nothing to add (or an error, which the CLI logs): never the earlier compaction's span.
    let outcome = run(&input, &opts);
    assert!(!matches!(outcome, Ok(HookOutcome::Emit(_))), "{outcome:?}");
    // With what PreCompact saved, that is what comes back.
    let pre = claude_input(
        "PreCompact",
        &before_compaction(&dir),
        json!({"trigger": "auto"}),
    );
    assert!(matches!(run(&pre, &opts).unwrap(), HookOutcome::Saved(_)));
    let context = context_of(run(&input, &opts).unwrap());
    assert!(context.contains("mismatched types in sniff"));
}

#[test]
fn post_compact_keeps_for_session_start_only_what_the_summary_lacks() {
    let transcript = fixture("claude-session.jsonl");
    let start = claude_input("SessionStart", &transcript, json!({"source": "compact"}));
    let full = context_of(run(&start, &options("post_full", Agent::ClaudeCode)).unwrap());
    let post = |summary: &str, test: &str| {
        let opts = options(test, Agent::ClaudeCode);
        let input = claude_input(
            "PostCompact",
            &transcript,
            json!({"trigger": "auto", "compact_summary": summary}),
        );
        assert!(matches!(run(&input, &opts).unwrap(), HookOutcome::Saved(_)));
        run(&start, &opts).unwrap()
    };
    // A summary that says nothing: everything is new.
    assert_eq!(
        context_of(post("We worked on it.", "post_none")).trim_end(),
        full.trim_end()
    );
    // A summary holding every entry: nothing is added.
    assert!(matches!(post(&full, "post_all"), HookOutcome::Nothing(_)));
    // A summary holding the failure: the failure goes, the rest stays.
    let failure: String = full
        .lines()
        .filter(|l| l.contains("mismatched types in sniff"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!failure.is_empty(), "{full}");
    let partial = context_of(post(&failure, "post_some"));
    assert!(!partial.contains("mismatched types in sniff"), "{partial}");
    assert!(partial.contains("ledger::import::parse_file"), "{partial}");
    assert!(partial.len() < full.len());
    // No summary in the input: an error naming it.
    let bad = claude_input("PostCompact", &transcript, json!({"trigger": "auto"}));
    let err = run(&bad, &options("post_bad", Agent::ClaudeCode)).unwrap_err();
    assert!(err.to_string().contains("compact_summary"), "{err}");
}
