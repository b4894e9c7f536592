//! `compactctl sessions list | show | recall | export | gc --store sqlite:PATH`, on a store written
//! by the session runtime itself.

use crate::support::{in_dir, read_json, run, run_env, temp_dir};
use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::validate::validate;
use compact_session::event::{Event, EventKind};
use compact_session::record::Record;
use compact_session::{CompactManager, SessionConfig, SqliteStore, Store};
use serde_json::json;
use std::sync::Arc;

/// Milliseconds in a day.
const DAY_MS: u64 = 86_400_000;

/// A store with two used sessions (`fresh`, a tool-using Anthropic session with a truncated output,
/// and `stale`, whose last event is 40 days old) and one created but never used (`empty`). Returns
/// the store's path and the reference of the truncated output's original.
fn store(test: &str) -> (String, String) {
    let dir = temp_dir(test);
    let path = in_dir(&dir, "sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(16_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store.clone()).unwrap();
    let mut conv = Conversation {
        format: Some(Format::Anthropic),
        ..Conversation::default()
    };
    conv.push(Item::text(Role::System, "You are a coding agent."));
    conv.push(Item::text(Role::User, "Run the tests."));
    manager.preflight("fresh", &conv).unwrap();
    conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
        "toolu_1",
        "bash",
        json!({"command": "cargo test"}),
    ))));
    let long: String = (0..4_000)
        .map(|i| format!("test case_{i} ... ok\n"))
        .collect();
    let output = manager
        .truncate_tool_output("fresh", "toolu_1", &long)
        .unwrap();
    assert!(output.len() < long.len(), "the output is truncated");
    // The marker names the original: `... full output: compactctl recall ID]`.
    let reference = output
        .split("compactctl recall ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .map(str::to_owned)
        .expect("the marker names a reference");
    conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
        "toolu_1", output,
    ))));
    conv.push(Item::text(Role::Assistant, "All tests pass."));
    manager.preflight("fresh", &conv).unwrap();

    let mut old = Conversation::default();
    old.push(Item::text(Role::User, "An old question."));
    manager.preflight("stale", &old).unwrap();
    let version = store.version("stale").unwrap();
    let mut event = Event::new(EventKind::Calibration, json!({"note": "old"}));
    event.at_ms -= 40 * DAY_MS;
    store
        .append("stale", version, vec![Record::Event(event)])
        .unwrap();
    store.create("empty").unwrap();
    (path, reference)
}

#[test]
fn sessions_list_and_show() {
    let (path, _) = store("sessions-list");
    let url = format!("sqlite:{path}");
    let list = run(&["sessions", "list", "--store", &url, "--json"])
        .ok()
        .json();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["empty", "fresh", "stale"]);
    assert_eq!(list[1]["items"], 5);
    let table = run(&["sessions", "list", "--store", &url]).ok().stdout;
    assert!(table.contains("fresh") && table.contains("ago"), "{table}");

    let show = run(&["sessions", "show", "fresh", "--store", &url, "--json"])
        .ok()
        .json();
    assert_eq!(show["items_received"], 5);
    assert_eq!(show["truncated_originals"], 1);
    assert_eq!(show["last_sent"]["items"], 5);
    assert_eq!(show["events"]["compact.sent"], 2);
    let text = run(&["sessions", "show", "fresh", "--store", &url])
        .ok()
        .stdout;
    assert!(text.contains("items received      5"), "{text}");
}

#[test]
fn sessions_recall_returns_the_original() {
    let (path, reference) = store("sessions-recall");
    let url = format!("sqlite:{path}");
    let out = run(&["sessions", "recall", "fresh", &reference, "--store", &url]).ok();
    assert!(out.stdout.contains("test case_0 ... ok"));
    assert!(out.stdout.contains("test case_3999 ... ok"));
    let missing = run(&[
        "sessions",
        "recall",
        "fresh",
        "i0000000000",
        "--store",
        &url,
    ])
    .expect_code(2);
    assert!(
        missing.stderr.contains("no item with id"),
        "{}",
        missing.stderr
    );
}

#[test]
fn sessions_export_writes_valid_wire_requests() {
    let (path, _) = store("sessions-export");
    let url = format!("sqlite:{path}");
    for format in ["openai-chat", "openai-responses", "anthropic"] {
        for view in [false, true] {
            let out = in_dir(
                &temp_dir("sessions-export-out"),
                &format!("{format}-{view}.json"),
            );
            let mut args = vec![
                "sessions", "export", "fresh", "--store", &url, "--format", format, "-o", &out,
            ];
            if view {
                args.push("--view");
            }
            run(&args).ok();
            let request = read_json(&out);
            let f: Format = format.parse().unwrap();
            let violations = validate(&request, f);
            assert!(
                violations.is_empty(),
                "{format} view={view}: {violations:?}"
            );
            assert!(request.to_string().contains("All tests pass."));
        }
    }
    // Default: the format the items were decoded from; these were built in memory, so Chat.
    let doc = run(&["sessions", "export", "fresh", "--store", &url])
        .ok()
        .json();
    assert!(doc["messages"].is_array() && doc.get("system").is_none());
    let bad = run(&[
        "sessions",
        "export",
        "fresh",
        "--store",
        &url,
        "--format",
        "claude-code",
    ])
    .expect_code(2);
    assert!(bad.stderr.contains("--format"), "{}", bad.stderr);
}

#[test]
fn sessions_gc_removes_only_old_sessions() {
    let (path, _) = store("sessions-gc");
    let url = format!("sqlite:{path}");
    let dry = run(&[
        "sessions",
        "gc",
        "--older-than",
        "30d",
        "--dry-run",
        "--store",
        &url,
    ])
    .ok();
    assert!(dry.stdout.contains("would remove stale"), "{}", dry.stdout);
    let ids = |url: &str| -> Vec<String> {
        run(&["sessions", "list", "--store", url, "--json"])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&url), ["empty", "fresh", "stale"]);
    let out = run(&["sessions", "gc", "--older-than", "30d", "--store", &url]).ok();
    assert!(out.stdout.contains("removed stale"), "{}", out.stdout);
    assert_eq!(ids(&url), ["empty", "fresh"]);
    // Nothing is younger than zero seconds but the sessions without events stay.
    run(&["sessions", "gc", "--older-than", "0s", "--store", &url]).ok();
    assert_eq!(ids(&url), ["empty"]);
    for bad in ["30", "d", "30w", "-1d", "99999999999999999d"] {
        let out = run(&["sessions", "gc", "--older-than", bad, "--store", &url]).expect_code(2);
        assert!(out.stderr.contains("--older-than"), "{bad}: {}", out.stderr);
    }
}

#[test]
fn sessions_bad_input_exits_2() {
    let (path, _) = store("sessions-bad");
    let url = format!("sqlite:{path}");
    for (args, says) in [
        (
            vec!["sessions", "show", "nope", "--store", &url],
            "unknown session `nope`",
        ),
        (
            vec!["sessions", "export", "nope", "--store", &url],
            "unknown session `nope`",
        ),
        (
            vec!["sessions", "recall", "nope", "x", "--store", &url],
            "unknown session `nope`",
        ),
        (
            vec![
                "sessions",
                "show",
                "s1",
                "--store",
                "sqlite:/no/such/file.db",
            ],
            "no such file",
        ),
        (
            vec!["sessions", "list", "--store", "memory:"],
            "in-memory store holds nothing",
        ),
        (
            vec![
                "sessions",
                "list",
                "--store",
                "postgres://compact:secret@127.0.0.1:1/x?connect_timeout=2",
            ],
            "cannot open the store",
        ),
        (
            vec!["sessions", "list", "--store", "mysql://x"],
            "expected sqlite:PATH",
        ),
        (vec!["sessions", "list", "--store", "sqlite:"], "no file"),
        (vec!["sessions", "list"], "--store is required"),
    ] {
        let out = run(&args).expect_code(2);
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
        // A store URL's password never reaches the output.
        assert!(!out.stderr.contains("secret"), "{}", out.stderr);
    }
    // A file that is not a database.
    let dir = temp_dir("sessions-bad-file");
    let junk = in_dir(&dir, "junk.db");
    std::fs::write(&junk, "not a database at all, just text").unwrap();
    let out = run(&["sessions", "list", "--store", &format!("sqlite:{junk}")]).expect_code(2);
    assert!(out.stderr.contains("cannot open"), "{}", out.stderr);
}

/// `--config` with `storage.archive`: `recall` finds an item the store no longer holds in the
/// archive, and `gc` applies the archive's retention.
#[test]
fn sessions_use_the_configured_archive_for_recall_and_gc() {
    use compact_session::FsArchive;
    let dir = temp_dir("sessions-archive");
    let db = in_dir(&dir, "sessions.db");
    let archive_dir = in_dir(&dir, "archive");
    let store = Arc::new(SqliteStore::open(&db).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(4_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store.clone())
        .unwrap()
        .with_archive(Arc::new(FsArchive::open(&archive_dir).unwrap()));
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a coding agent."));
    let mut compacted = false;
    for i in 0..40 {
        conv.push(Item::text(
            Role::User,
            format!("Step {i}: describe module {i} in detail."),
        ));
        let text: String = (0..30)
            .map(|l| format!("module {i} line {l}: fine\n"))
            .collect();
        conv.push(Item::text(Role::Assistant, text));
        compacted |= manager
            .preflight("s", &conv)
            .unwrap()
            .report
            .compaction
            .is_some();
    }
    assert!(compacted);
    let first = conv.items[1].meta.id.to_string();
    // The store forgets the session; the archive still has its transcripts.
    assert!(store.delete_session("s").unwrap());
    drop(manager);
    let yaml = in_dir(&dir, "compact.yaml");
    std::fs::write(
        &yaml,
        format!("storage:\n  path: {db}\n  archive: {{ kind: fs, path: \"{archive_dir}\", max_bytes: 1 }}\n"),
    )
    .unwrap();
    let store_arg = format!("sqlite:{db}");
    let without = run(&["sessions", "--store", &store_arg, "recall", "s", &first]);
    assert_ne!(without.code, 0, "{}", without.stdout);
    let with = run(&[
        "sessions", "--store", &store_arg, "--config", &yaml, "recall", "s", &first,
    ]);
    assert_eq!(with.code, 0, "{}", with.stderr);
    assert!(
        with.stdout.contains("Step 0: describe module 0"),
        "{}",
        with.stdout
    );

    let dry = run(&[
        "sessions",
        "--store",
        &store_arg,
        "--config",
        &yaml,
        "gc",
        "--older-than",
        "1d",
        "--dry-run",
    ]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.contains("archived object(s)") && dry.stdout.contains("would be deleted"),
        "{}",
        dry.stdout
    );
    let archived = std::fs::read_dir(&archive_dir).unwrap().count();
    assert!(archived > 0);
    let gc = run(&[
        "sessions",
        "--store",
        &store_arg,
        "--config",
        &yaml,
        "gc",
        "--older-than",
        "1d",
    ]);
    assert_eq!(gc.code, 0, "{}", gc.stderr);
    assert!(
        gc.stdout.contains("archived object(s) deleted"),
        "{}",
        gc.stdout
    );
    // max_bytes: 1 leaves nothing archived.
    let left = run(&[
        "sessions", "--store", &store_arg, "--config", &yaml, "recall", "s", &first,
    ]);
    assert_ne!(left.code, 0);
}

/// A store with one long tool-using session `work` (OpenAI Chat), last prepared at a 16k window.
fn long_session(test: &str) -> String {
    let dir = temp_dir(test);
    let path = in_dir(&dir, "sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(16_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store).unwrap();
    let mut conv = Conversation {
        format: Some(Format::OpenAiChat),
        ..Conversation::default()
    };
    conv.push(Item::text(Role::System, "You are a coding agent."));
    for step in 0..14 {
        conv.push(Item::text(
            Role::User,
            format!("Step {step}: fix module_{step} and run its tests."),
        ));
        let id = format!("call_{step}");
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            &id,
            "bash",
            json!({"command": format!("cargo test -p module_{step}")}),
        ))));
        let out: String = (0..60)
            .map(|i| format!("test module_{step}::case_{i} ... ok\n"))
            .collect();
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(&id, out))));
        // Long explanations: halving the view needs a summary, not only references.
        conv.push(Item::text(
            Role::Assistant,
            format!("module_{step} passes its tests. ").repeat(60),
        ));
        manager.preflight("work", &conv).unwrap();
    }
    path
}

#[test]
fn sessions_compact_applies_the_reviewed_checkpoint() {
    let path = long_session("sessions-compact-review");
    let url = format!("sqlite:{path}");
    let dir = temp_dir("sessions-compact-editor");
    let editor = in_dir(&dir, "editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf '\\n- Reviewed: leave the parser module untouched.\\n' >> \"$1\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // Without an editor, --review is refused and nothing changes.
    let refused = run_env(
        &["sessions", "compact", "work", "--review", "--store", &url],
        &[("EDITOR", ""), ("VISUAL", "")],
    )
    .expect_code(2);
    assert!(
        refused.stderr.contains("needs $VISUAL or $EDITOR"),
        "{}",
        refused.stderr
    );
    let before = run(&["sessions", "export", "work", "--view", "--store", &url])
        .ok()
        .stdout;
    assert!(!before.contains("Reviewed:"));
    let compactions = |url: &str| {
        run(&["sessions", "show", "work", "--store", url, "--json"])
            .ok()
            .json()["events"]["compact.compacted"]
            .as_u64()
            .unwrap_or(0)
    };
    let automatic = compactions(&url);

    let out = run_env(
        &["sessions", "compact", "work", "--review", "--store", &url],
        &[("EDITOR", editor.as_str()), ("VISUAL", "")],
    )
    .ok();
    assert!(
        out.stdout.contains("session `work` compacted"),
        "{}",
        out.stdout
    );
    let view = run(&["sessions", "export", "work", "--view", "--store", &url])
        .ok()
        .stdout;
    assert!(
        view.contains("compact-checkpoint"),
        "the view holds the checkpoint"
    );
    assert!(
        view.contains("Reviewed: leave the parser module untouched."),
        "the edit is what the model will see"
    );
    assert!(view.len() < before.len());
    assert_eq!(
        compactions(&url),
        automatic + 1,
        "one reviewed compaction logged"
    );

    let missing = run(&["sessions", "compact", "nope", "--store", &url]).expect_code(2);
    assert!(
        missing.stderr.contains("unknown session"),
        "{}",
        missing.stderr
    );
}

/// Subagent sessions are listed below their parent (indented), and `--json` names each parent.
#[test]
fn sessions_list_shows_subagents_below_their_parent() {
    let dir = temp_dir("subagents");
    let path = in_dir(&dir, "sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(32_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store).unwrap();
    for id in ["zz-main", "aa-task", "mm-other"] {
        let mut conv = Conversation::default();
        conv.push(Item::text(Role::User, format!("work of {id}")));
        manager.preflight(id, &conv).unwrap();
    }
    assert!(manager.link_parent("aa-task", "zz-main").unwrap());
    drop(manager);
    let url = format!("sqlite:{path}");
    let listed = run(&["sessions", "list", "--store", &url, "--json"])
        .ok()
        .json();
    let parent = |id: &str| {
        listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["parent"].clone())
            .unwrap()
    };
    assert_eq!(parent("aa-task"), json!("zz-main"));
    assert_eq!(parent("zz-main"), json!(null));
    let table = run(&["sessions", "list", "--store", &url]).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix)).unwrap();
    // The subagent comes right after its parent, indented, whatever the list order.
    assert_eq!(at("  aa-task"), at("zz-main") + 1, "{table}");
    assert!(at("mm-other") > 0, "{table}");
}

#[test]
fn sessions_show_names_what_the_provider_holds() {
    let dir = temp_dir("sessions-provider");
    let path = in_dir(&dir, "sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(200_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store).unwrap();
    let mut messages = vec![];
    for t in 0..6 {
        messages.push(json!({"role": "user", "content": format!("Step {t}: read src/m{t}.rs")}));
        messages.push(json!({"role": "assistant", "content": format!("m{t} parses input")}));
    }
    messages.push(json!({"role": "assistant", "content": [
        {"type": "compaction", "content": "Steps 0-5: the modules parse input."},
        {"type": "text", "text": "Continuing."}]}));
    messages.push(json!({"role": "user", "content": "Now fix m3."}));
    let request = json!({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": messages});
    let conv = compact_formats::wire::decode(Format::Anthropic, &request).unwrap();
    manager.preflight("held", &conv).unwrap();
    drop(manager);

    let url = format!("sqlite:{path}");
    let show = run(&["sessions", "show", "held", "--store", &url, "--json"])
        .ok()
        .json();
    let held = &show["provider"];
    assert_eq!(held["source"], "request", "{show}");
    assert_eq!(held["wire"], "anthropic_block");
    assert_eq!(held["index"], 12);
    assert_eq!(held["superseded_items"], 12);
    assert_eq!(show["events"]["compact.provider_state"], 1);
    let text = run(&["sessions", "show", "held", "--store", &url])
        .ok()
        .stdout;
    assert!(
        text.contains(
            "provider holds      a compaction (anthropic_block at item 12) superseding 12 items"
        ),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn listing_a_store_no_session_created_yet_is_an_empty_list() {
    let dir = crate::support::temp_dir("sessions-none-yet");
    let url = format!("sqlite:{}", dir.join("sessions.db").display());
    let listed = run(&["sessions", "list", "--store", &url, "--json"]).ok();
    assert_eq!(listed.json(), serde_json::json!([]));
    assert!(
        listed.stderr.contains("no sessions yet"),
        "{}",
        listed.stderr
    );
    let table = run(&["sessions", "list", "--store", &url]).ok();
    assert!(table.stdout.starts_with("session"), "{}", table.stdout);
    assert!(!dir.join("sessions.db").exists(), "listing creates nothing");
}
