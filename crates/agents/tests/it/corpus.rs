//! The hooks on the shared corpus of real transcripts (when present; required under CI): every
//! Claude Code session and Codex rollout with a compaction gets added context within the budget,
//! holding at least one of the dropped span's failure lines when it had failures.

use crate::corpus_dir;
use compact_agents::checkpoint::{counter, hook_context, DEFAULT_HOOK_TOKENS};
use compact_agents::hook::{run, Agent, HookOptions, HookOutcome};
use compact_agents::transcript::{load, span, Span};
use compact_core::facts::failure_of;
use serde_json::{json, Value};
use std::path::PathBuf;

fn files(dir: &str) -> Vec<PathBuf> {
    let Some(root) = corpus_dir::dir() else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_compacted_corpus_session_gets_its_dropped_failures_back() {
    let mut compacted = 0;
    for (agent, dir) in [
        (Agent::ClaudeCode, "claude-code"),
        (Agent::Codex, "codex-rollout"),
    ] {
        for path in files(dir) {
            let imported = load(&path).unwrap();
            let dropped = span(&imported.conversation, Span::LastCompacted);
            if dropped.is_empty() {
                continue;
            }
            compacted += 1;
            let state = crate::support::scratch("corpus").join("state");
            let input = serde_json::to_vec(&json!({
                "session_id": "corpus",
                "transcript_path": path,
                "hook_event_name": "SessionStart",
                "source": "compact",
            }))
            .unwrap();
            let outcome = run(&input, &HookOptions::new(agent, state)).unwrap();
            let HookOutcome::Emit(out) = outcome else {
                panic!("{}: {outcome:?}", path.display());
            };
            let v: Value = serde_json::from_str(&out).unwrap();
            let context = v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .unwrap();
            assert!(
                counter().count_text(context) <= DEFAULT_HOOK_TOKENS,
                "{}",
                path.display()
            );
            // The same text the library builds from the dropped span.
            assert_eq!(
                Some(context),
                hook_context(&dropped, DEFAULT_HOOK_TOKENS).as_deref()
            );
            let failures: Vec<String> = dropped
                .iter()
                .filter_map(failure_of)
                .map(|(_, line)| line)
                .filter(|l| l.len() >= 12)
                .collect();
            if !failures.is_empty() {
                let found = failures
                    .iter()
                    .any(|l| context.contains(l.chars().take(40).collect::<String>().as_str()));
                assert!(found, "{}: none of {failures:?}", path.display());
            }
        }
    }
    if corpus_dir::dir().is_some() {
        assert!(compacted >= 10, "only {compacted} compacted sessions found");
    }
}

#[test]
fn pre_compact_on_every_codex_rollout_saves_a_bounded_checkpoint() {
    for path in files("codex-rollout") {
        let dir = crate::support::scratch("corpus_pre");
        let opts = HookOptions::new(Agent::Codex, dir.join("state"));
        let input = serde_json::to_vec(&json!({
            "session_id": "rollout",
            "transcript_path": path,
            "cwd": "/work",
            "hook_event_name": "PreCompact",
            "trigger": "auto",
        }))
        .unwrap();
        let HookOutcome::Saved(saved) = run(&input, &opts).unwrap() else {
            panic!("{}: nothing saved", path.display());
        };
        let v: Value = serde_json::from_slice(&std::fs::read(&saved).unwrap()).unwrap();
        let context = v["context"].as_str().unwrap();
        assert!(
            counter().count_text(context) <= DEFAULT_HOOK_TOKENS,
            "{}",
            path.display()
        );
        let visible = span(&load(&path).unwrap().conversation, Span::Visible);
        let failures: Vec<String> = visible
            .iter()
            .filter_map(failure_of)
            .map(|(_, line)| line)
            .filter(|l| l.len() >= 12)
            .collect();
        if !failures.is_empty() {
            let found = failures
                .iter()
                .any(|l| context.contains(l.chars().take(40).collect::<String>().as_str()));
            assert!(found, "{}: none of {failures:?}", path.display());
        }
    }
}
