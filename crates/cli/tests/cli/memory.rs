//! `compactctl memory list | show | forget | gate` on a store the session runtime wrote with memory
//! on: facts listed, one shown with its decisions, forgetting logged and persisted, the gate
//! rewriting a probe (and logging it) but never a destructive command; errors and exit codes as
//! `compactctl sessions` has them.

use crate::support::{in_dir, run, temp_dir};
use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::{CompactManager, MemoryConfig, SessionConfig, SqliteStore, Store};
use serde_json::json;
use std::sync::Arc;

/// A store with session `s` (memory on, project `proj`): a constraint, a directory entered and a
/// file edited. Returns the store's URL.
fn store(test: &str) -> String {
    let dir = temp_dir(test);
    let path = in_dir(&dir, "sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let memory = MemoryConfig {
        project: Some("proj".to_owned()),
        ..MemoryConfig::default()
    };
    let config = SessionConfig::new(
        Policy::for_window(32_000),
        TokenCounter::new(Encoding::O200kBase),
    )
    .with_memory(Some(memory));
    let manager = CompactManager::open(config, store).unwrap();
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a coding agent."));
    conv.push(Item::text(
        Role::User,
        "Ship the release. Never push to main without review.",
    ));
    conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
        "c1",
        "Bash",
        json!({"command": "cd /srv/shop/release && make"}),
    ))));
    conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
        "c1",
        "built\nexit code: 0",
    ))));
    manager.preflight("s", &conv).unwrap();
    format!("sqlite:{path}")
}

fn fact_id(url: &str, scope: &[&str], needle: &str) -> String {
    let mut args = vec!["memory", "list", "--json", "--store", url];
    args.extend_from_slice(scope);
    let list = run(&args).ok().json();
    list.as_array()
        .unwrap()
        .iter()
        .find(|f| f["text"].as_str().unwrap().contains(needle))
        .unwrap_or_else(|| panic!("no fact with {needle}: {list}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn memory_list_show_and_forget() {
    let url = store("memory-list");
    let table = run(&["memory", "list", "--store", &url, "--session", "s"]).ok();
    assert!(
        table.stdout.contains("Never push to main"),
        "{}",
        table.stdout
    );
    assert!(table.stdout.contains("constraint"));
    let id = fact_id(&url, &["--session", "s"], "Never push");
    let shown = run(&[
        "memory",
        "show",
        &id,
        "--json",
        "--store",
        &url,
        "--session",
        "s",
    ])
    .ok()
    .json();
    assert_eq!(shown["kind"], "constraint");
    assert_eq!(shown["lifecycle"], "active");
    assert_eq!(shown["history"][0]["decision"], "accepted");
    assert_eq!(shown["history"][0]["reason"], "new");
    assert!(
        !shown["sources"].as_array().unwrap().is_empty(),
        "provenance"
    );
    // The project holds it too (promoted), under its own id space.
    let in_project = fact_id(&url, &["--project", "proj"], "Never push");
    assert_eq!(
        in_project, id,
        "ids are stable across sessions and projects"
    );

    // Pinned, then unpinned: each a logged decision.
    let pinned = run(&["memory", "pin", &id, "--store", &url, "--session", "s"]).ok();
    assert_eq!(pinned.stdout.trim(), format!("pinned: {id}"));
    let again = run(&["memory", "pin", &id, "--store", &url, "--session", "s"]).ok();
    assert_eq!(again.stdout.trim(), format!("already pinned: {id}"));
    let shown = run(&[
        "memory",
        "show",
        &id,
        "--json",
        "--store",
        &url,
        "--session",
        "s",
    ])
    .ok()
    .json();
    assert_eq!(shown["lifecycle"], "pinned");
    let unpinned = run(&["memory", "unpin", &id, "--store", &url, "--session", "s"]).ok();
    assert_eq!(unpinned.stdout.trim(), format!("active: {id}"));
    let shown = run(&[
        "memory",
        "show",
        &id,
        "--json",
        "--store",
        &url,
        "--session",
        "s",
    ])
    .ok()
    .json();
    assert_eq!(shown["lifecycle"], "active");
    let bad = run(&[
        "memory",
        "pin",
        "f0000000000",
        "--store",
        &url,
        "--session",
        "s",
    ]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);

    let out = run(&["memory", "forget", &id, "--store", &url, "--session", "s"]).ok();
    assert!(out.stdout.contains("forgotten"));
    let again = run(&["memory", "forget", &id, "--store", &url, "--session", "s"]).ok();
    assert!(again.stdout.contains("already forgotten"));
    // Persisted and append-only: gone from the trusted list, there with --all, its history grew.
    let list = run(&["memory", "list", "--store", &url, "--session", "s"]).ok();
    assert!(!list.stdout.contains("Never push"));
    let all = run(&["memory", "list", "--all", "--store", &url, "--session", "s"]).ok();
    assert!(all.stdout.contains("forgotten"));
    let shown = run(&[
        "memory",
        "show",
        &id,
        "--json",
        "--store",
        &url,
        "--session",
        "s",
    ])
    .ok()
    .json();
    assert_eq!(shown["lifecycle"], "forgotten");
    let history = shown["history"].as_array().unwrap();
    assert_eq!(history.last().unwrap()["moved_to"], "forgotten");
    assert_eq!(history[1]["moved_to"], "pinned");
    assert_eq!(history[2]["moved_to"], "active");
    assert_eq!(history.last().unwrap()["reason"], "user");
    // The project's copy is forgotten separately.
    run(&[
        "memory",
        "forget",
        &id,
        "--store",
        &url,
        "--project",
        "proj",
    ])
    .ok();
    let list = run(&["memory", "list", "--store", &url, "--project", "proj"]).ok();
    assert!(!list.stdout.contains("Never push"));
}

#[test]
fn memory_errors_are_bad_input() {
    let url = store("memory-errors");
    for (args, why) in [
        (
            vec!["memory", "list", "--store", &url],
            "--session ID or --project",
        ),
        (
            vec!["memory", "list", "--store", &url, "--session", "nope"],
            "no memory for `nope`",
        ),
        (
            vec![
                "memory",
                "show",
                "f0000000000",
                "--store",
                &url,
                "--session",
                "s",
            ],
            "no fact `f0000000000`",
        ),
        (
            vec![
                "memory",
                "forget",
                "f0000000000",
                "--store",
                &url,
                "--session",
                "s",
            ],
            "no fact `f0000000000`",
        ),
        (
            vec![
                "memory",
                "forget",
                "f0000000000",
                "--store",
                &url,
                "--session",
                "nope",
            ],
            "no memory for `nope`",
        ),
        (
            vec!["memory", "list", "--session", "s"],
            "--store is required",
        ),
    ] {
        let out = run(&args).expect_code(2);
        assert!(out.stderr.contains(why), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn memory_gate_rewrites_probes_to_remembered_paths_and_logs_them() {
    let url = store("memory-gate");
    let out = run(&[
        "memory",
        "gate",
        "cd release && make test",
        "--store",
        &url,
        "--session",
        "s",
    ])
    .ok();
    assert_eq!(out.stdout.trim(), "cd /srv/shop/release && make test");
    let json = run(&[
        "memory",
        "gate",
        "ls release",
        "--json",
        "--store",
        &url,
        "--session",
        "s",
    ])
    .ok()
    .json();
    assert_eq!(json["decision"], "rewrite");
    assert_eq!(json["path"], "/srv/shop/release");
    for (cmd, reason) in [
        ("cd release && rm -rf build", "destructive"),
        ("ls releases", "unknown_name"),
        ("ls /srv/shop/release", "already_absolute"),
    ] {
        let json = run(&[
            "memory",
            "gate",
            cmd,
            "--json",
            "--store",
            &url,
            "--session",
            "s",
        ])
        .ok()
        .json();
        assert_eq!(json["decision"], "unchanged", "{cmd}");
        assert_eq!(json["reason"], reason, "{cmd}");
        assert_eq!(json["command"], cmd);
    }
    // One event per rewrite, in the session's log.
    let path = url.strip_prefix("sqlite:").unwrap();
    let store = SqliteStore::open(path).unwrap();
    let gates: Vec<_> = store
        .read("s", 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if e.kind == EventKind::MemoryGate => Some(e),
            _ => None,
        })
        .collect();
    assert_eq!(gates.len(), 2);
    assert_eq!(
        gates[0].get("rewritten_command").unwrap(),
        "cd /srv/shop/release && make test"
    );
}

#[test]
fn the_pre_tool_use_hook_rewrites_a_probe_through_the_memory_gate() {
    let url = store("memory-hook");
    let dir = temp_dir("memory-hook-state");
    let log = in_dir(&dir, "hook.log");
    let input = json!({"hook_event_name": "PreToolUse", "session_id": "cc-1",
                       "permission_mode": "bypassPermissions", "tool_name": "Bash",
                       "tool_input": {"command": "cd release && make test"}})
    .to_string();
    let out = crate::support::run_stdin(
        &[
            "hook",
            "claude-code",
            "--log",
            &log,
            "--memory-store",
            &url,
            "--memory-session",
            "s",
        ],
        input.as_bytes(),
    )
    .ok();
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        json["hookSpecificOutput"]["updatedInput"]["command"],
        "cd /srv/shop/release && make test"
    );
    assert_eq!(json["hookSpecificOutput"]["permissionDecision"], "allow");
    let path = url.strip_prefix("sqlite:").unwrap();
    let store = SqliteStore::open(path).unwrap();
    let gated = store
        .read("s", 0)
        .unwrap()
        .into_iter()
        .filter(|s| matches!(&s.record, Record::Event(e) if e.kind == EventKind::MemoryGate))
        .count();
    assert_eq!(gated, 1, "the rewrite is logged");
    // A destructive command goes through untouched (the hook prints nothing).
    let input = json!({"hook_event_name": "PreToolUse", "session_id": "cc-1",
                       "permission_mode": "bypassPermissions", "tool_name": "Bash",
                       "tool_input": {"command": "cd release && rm -rf build"}})
    .to_string();
    let out = crate::support::run_stdin(
        &[
            "hook",
            "claude-code",
            "--log",
            &log,
            "--memory-store",
            &url,
            "--memory-session",
            "s",
        ],
        input.as_bytes(),
    )
    .ok();
    assert_eq!(out.stdout, "");
}

#[test]
fn the_hook_s_gate_follows_the_configuration_and_the_agent_s_directory() {
    let url = store("memory-hook-config");
    let path = url.strip_prefix("sqlite:").unwrap().to_owned();
    let dir = temp_dir("memory-hook-config-files");
    let log = in_dir(&dir, "hook.log");
    let input = |command: &str| {
        json!({"hook_event_name": "PreToolUse", "session_id": "cc-1", "cwd": "/",
               "permission_mode": "bypassPermissions", "tool_name": "Bash",
               "tool_input": {"command": command}})
        .to_string()
    };
    let hook = |config: &str, command: &str| {
        let file = in_dir(&dir, "compact.yaml");
        std::fs::write(&file, config).unwrap();
        crate::support::run_stdin(
            &["hook", "claude-code", "--log", &log, "--config", &file],
            input(command).as_bytes(),
        )
        .ok()
        .stdout
    };
    // The project named in the file: session `s` promoted the directory it entered to `proj`.
    let storage = format!("storage: {{kind: sqlite, path: {path}}}\n");
    // With the gate off, the hook does not look.
    let off = format!("{storage}memory: {{project: proj, gate: false}}\n");
    assert_eq!(hook(&off, "cd release && make"), "");
    // Another project knows nothing of it.
    let other = format!("{storage}memory: {{project: elsewhere, gate: true}}\n");
    assert_eq!(hook(&other, "cd release && make"), "");
    let with = format!("{storage}memory: {{project: proj, gate: true}}\n");
    let out = hook(&with, "cd release && make");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        json["hookSpecificOutput"]["updatedInput"]["command"],
        "cd /srv/shop/release && make"
    );
}
