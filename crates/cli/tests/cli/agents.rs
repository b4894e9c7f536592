//! `compactctl hook`, `install` / `uninstall` and `mcp` as the agents run them.

use crate::support::{root, run, run_env, run_stdin, temp_dir};
use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_session::{CompactManager, SessionConfig, SqliteStore};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A transcript fixture of the agents crate.
fn agents_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../agents/tests/fixtures")
        .join(name)
}

fn hook_input(event: &str, source: &str, transcript: &Path) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "session_id": "5e1d0c7a-2b44-4c1e-9a1f-7d3e2c9b8a10",
        "transcript_path": transcript,
        "cwd": "/home/dev/ledger",
        "hook_event_name": event,
        "source": source,
    }))
    .unwrap()
}

#[test]
fn hook_prints_the_documented_session_start_output() {
    let dir = temp_dir("hook_out");
    let state = dir.join("state");
    let log = dir.join("hook.log");
    let input = hook_input(
        "SessionStart",
        "compact",
        &agents_fixture("claude-session.jsonl"),
    );
    let out = run_stdin(
        &[
            "hook",
            "claude-code",
            "--max-tokens",
            "1200",
            "--state-dir",
            state.to_str().unwrap(),
            "--log",
            log.to_str().unwrap(),
        ],
        &input,
    )
    .ok();
    let v = out.json();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("mismatched types in sniff"), "{context}");
    assert!(!log.exists(), "no failure, no log line");
}

#[test]
fn hook_never_fails_the_agent_and_logs_why_without_secrets() {
    let dir = temp_dir("hook_fail");
    let log = dir.join("logs/hook.log");
    let state = dir.join("state").to_string_lossy().into_owned();
    let log_s = log.to_string_lossy().into_owned();
    let args = vec![
        "hook",
        "claude-code",
        "--state-dir",
        &state,
        "--log",
        &log_s,
    ];
    let secret = "sk-ant-api03-SECRETSECRETSECRET";
    let bad_inputs: Vec<Vec<u8>> = vec![
        format!("{{\"hook_event_name\": \"SessionStart\", \"api_key\": \"{secret}\", ")
            .into_bytes(),
        hook_input("SessionStart", "compact", Path::new("/nonexistent/t.jsonl")),
        b"\xff\xfe not utf-8".to_vec(),
        Vec::new(),
    ];
    for input in &bad_inputs {
        let out = run_stdin(&args, input).ok();
        assert_eq!(out.stdout, "", "nothing reaches the agent");
    }
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(logged.lines().count(), bad_inputs.len(), "{logged}");
    assert!(logged.contains("/nonexistent/t.jsonl"), "{logged}");
    assert!(!logged.contains(secret), "{logged}");
    // A budget out of range is also silent, and logged.
    let mut with_budget = args.clone();
    with_budget.extend(["--max-tokens", "5"]);
    let input = hook_input(
        "SessionStart",
        "compact",
        &agents_fixture("claude-session.jsonl"),
    );
    assert_eq!(run_stdin(&with_budget, &input).ok().stdout, "");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("--max-tokens 5"));
}

#[test]
fn install_dry_run_install_and_uninstall_through_the_command_line() {
    let home = temp_dir("install_cli");
    let home_s = home.to_str().unwrap();
    let project = home.join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let p = project.to_str().unwrap();
    let exe = "/opt/compact/bin/compactctl";
    // No `compactctl` on PATH. CODEX_HOME empty: Codex's default home under HOME, whatever the
    // caller's environment says.
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let env = [
        ("HOME", home_s),
        ("CODEX_HOME", ""),
        ("PATH", bin.to_str().unwrap()),
    ];
    let dry = run_env(
        &[
            "install",
            "claude-code",
            "--project",
            p,
            "--exe",
            exe,
            "--dry-run",
        ],
        &env,
    )
    .ok();
    assert!(dry.stdout.contains("hook claude-code"), "{}", dry.stdout);
    assert!(dry.stderr.contains("would be written"), "{}", dry.stderr);
    assert!(!project.join(".claude").exists());
    // Not on PATH: this machine's path, in the project's local settings only.
    let installed = run_env(
        &["install", "claude-code", "--project", p, "--exe", exe],
        &env,
    )
    .ok();
    assert!(
        installed.stderr.contains("`compactctl` is not on PATH")
            && installed.stderr.contains("settings.local.json")
            && installed.stderr.contains(".claude.json"),
        "{}",
        installed.stderr
    );
    let again = run_env(
        &["install", "claude-code", "--project", p, "--exe", exe],
        &env,
    )
    .ok();
    assert_eq!(
        again.stdout.matches("unchanged").count(),
        2,
        "{}",
        again.stdout
    );
    assert!(!project.join(".mcp.json").exists());
    assert!(!project.join(".claude/settings.json").exists());
    let local = std::fs::read_to_string(project.join(".claude/settings.local.json")).unwrap();
    assert!(
        local.contains(&format!("\"{exe} hook claude-code\"")),
        "{local}"
    );
    let user: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude.json")).unwrap()).unwrap();
    let key = std::fs::canonicalize(&project).unwrap();
    assert_eq!(
        user["projects"][key.to_str().unwrap()]["mcpServers"]["compact"]["command"],
        exe
    );
    run_env(
        &["uninstall", "claude-code", "--project", p, "--exe", exe],
        &env,
    )
    .ok();
    assert!(!project.join(".claude/settings.local.json").exists());
    assert!(!home.join(".claude.json").exists());

    run_env(&["install", "codex", "--hooks", "--exe", exe], &env).ok();
    let config = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(config.contains("[mcp_servers.compact]"), "{config}");
    assert!(config.contains("hook codex"), "{config}");
    run_env(&["uninstall", "codex", "--exe", exe], &env).ok();
    assert!(!home.join(".codex/config.toml").exists());

    let bad = run_env(
        &["install", "claude-code", "--project", "/nonexistent/dir"],
        &env,
    );
    bad.expect_code(2);
}

/// A directory holding `compactctl`, linked to the binary under test.
#[cfg(unix)]
fn path_with_compactctl(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_compactctl"), bin.join("compactctl")).unwrap();
    bin
}

#[cfg(unix)]
#[test]
fn install_names_compactctl_bare_in_the_project_when_path_finds_it() {
    let home = temp_dir("install_on_path");
    let project = home.join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let bin = path_with_compactctl(&home);
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("PATH", bin.to_str().unwrap()),
    ];
    let p = project.to_str().unwrap();
    // The default `--exe` (this executable) is the one PATH finds.
    let out = run_env(&["install", "claude-code", "--project", p], &env).ok();
    assert!(
        out.stderr.contains("`compactctl` (found on PATH)"),
        "{}",
        out.stderr
    );
    let settings = std::fs::read_to_string(project.join(".claude/settings.json")).unwrap();
    assert!(
        settings.contains("\"compactctl hook claude-code\""),
        "{settings}"
    );
    assert!(
        !settings.contains(env!("CARGO_BIN_EXE_compactctl")),
        "{settings}"
    );
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join(".mcp.json")).unwrap()).unwrap();
    assert_eq!(mcp["mcpServers"]["compact"]["command"], "compactctl");
    assert!(!project.join(".claude/settings.local.json").exists());
    assert!(!home.join(".claude.json").exists());

    // Another compactctl than the one PATH finds: not named bare.
    let other = run_env(
        &[
            "install",
            "claude-code",
            "--project",
            p,
            "--exe",
            "/opt/x/compactctl",
            "--dry-run",
        ],
        &env,
    )
    .ok();
    assert!(
        other.stderr.contains("is not this executable"),
        "{}",
        other.stderr
    );

    run_env(&["uninstall", "claude-code", "--project", p], &env).ok();
    assert!(!project.join(".mcp.json").exists());
    assert!(!project.join(".claude/settings.json").exists());
}

/// The real Claude Code (`COMPACT_CLAUDE_BIN`) finds the server where each placement puts it: the
/// local scope of the project in `~/.claude.json`, or the project's `.mcp.json`.
#[cfg(unix)]
#[test]
fn claude_code_reads_the_server_from_either_placement() {
    let Some(claude) = crate::clients::client_bin("COMPACT_CLAUDE_BIN") else {
        return;
    };
    let home = temp_dir("install_claude_reads");
    let project = home.join("proj");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let bin = path_with_compactctl(&home);
    let empty = home.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let p = project.to_str().unwrap();
    let exe = env!("CARGO_BIN_EXE_compactctl");
    let get = || {
        let out = std::process::Command::new(&claude)
            .args(["mcp", "get", "compact"])
            .current_dir(&project)
            .env("HOME", &home)
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("DISABLE_TELEMETRY", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let off_path = [
        ("HOME", home.to_str().unwrap()),
        ("PATH", empty.to_str().unwrap()),
    ];
    run_env(
        &["install", "claude-code", "--project", p, "--exe", exe],
        &off_path,
    )
    .ok();
    let local = get();
    assert!(
        local.contains("Local config") && local.contains(&format!("Command: {exe}")),
        "{local}"
    );
    assert!(local.contains("Connected"), "{local}");
    let on_path = [
        ("HOME", home.to_str().unwrap()),
        ("PATH", bin.to_str().unwrap()),
    ];
    run_env(&["install", "claude-code", "--project", p], &on_path).ok();
    let shared = get();
    assert!(
        shared.contains("Project config") && shared.contains("Command: compactctl"),
        "{shared}"
    );
    run_env(&["uninstall", "claude-code", "--project", p], &on_path).ok();
    assert!(!project.join(".mcp.json").exists());
    assert!(!home.join(".claude.json").exists() || !get().contains("compact:"));
}

#[test]
fn mcp_needs_a_session_source() {
    let out = run(&["mcp"]).expect_code(2);
    assert!(out.stderr.contains("--transcript"), "{}", out.stderr);
    run(&["mcp", "--transcript", "/nonexistent.jsonl"]).expect_code(2);
    let out = run(&["mcp", "--store", "sqlite:/nonexistent.db", "--session", "s"]).expect_code(2);
    assert!(out.stderr.contains("/nonexistent.db"), "{}", out.stderr);
    run(&["mcp", "--store", "sqlite:/nonexistent.db"]).expect_code(2);
    run(&["mcp", "--transcript", "a.jsonl", "--latest", "codex"]).expect_code(2);
}

/// The Python with the official MCP SDK (`scripts/services start` exports it). Missing: the test
/// skips, saying so, unless `COMPACT_REQUIRE_SERVICES` (or `CI`) is set.
fn python() -> Option<String> {
    if let Some(p) = std::env::var("COMPACT_TEST_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
    {
        return Some(p);
    }
    let required = std::env::var_os("COMPACT_REQUIRE_SERVICES").is_some_and(|v| v != "0")
        || std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(
        !required,
        "a Python with the `mcp` SDK is required (COMPACT_REQUIRE_SERVICES or CI is set) but \
         COMPACT_TEST_PYTHON is not set: run `eval \"$(scripts/services start)\"` first"
    );
    println!(
        "COMPACT_TEST_PYTHON not set: skipping (`eval \"$(scripts/services start)\"` sets it)"
    );
    None
}

/// Runs the Python MCP client script with `args` after the binary's path; it must print `ok`.
fn python_client(python: &str, args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli/mcp_client.py");
    let output = std::process::Command::new(python)
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_compactctl"))
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.trim_end().ends_with("ok"),
        "the MCP client failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
}

#[test]
fn mcp_server_answers_the_official_python_client() {
    let Some(python) = python() else {
        return;
    };
    let transcript = agents_fixture("claude-session.jsonl");
    python_client(&python, &[transcript.to_str().unwrap()]);
}

#[test]
fn mcp_server_answers_the_official_python_client_over_streamable_http() {
    let Some(python) = python() else {
        return;
    };
    let transcript = agents_fixture("claude-session.jsonl");
    python_client(&python, &["--http", transcript.to_str().unwrap()]);
}

#[test]
fn mcp_over_http_refuses_a_non_loopback_address_unless_allowed() {
    let transcript = agents_fixture("claude-session.jsonl");
    let transcript = transcript.to_str().unwrap();
    let out = run(&["mcp", "--transcript", transcript, "--http", "0.0.0.0:0"]).expect_code(2);
    assert!(
        out.stderr.contains("not a loopback address"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--allow-remote"), "{}", out.stderr);
    // The flags of the HTTP server need --http.
    run(&["mcp", "--transcript", transcript, "--allow-remote"]).expect_code(2);
    run(&["mcp", "--transcript", transcript, "--http", "localhost"]).expect_code(2);
}

#[test]
fn mcp_server_on_a_store_session_pages_a_truncated_original_back_whole() {
    let Some(python) = python() else {
        return;
    };
    let dir = temp_dir("mcp_store");
    let path = dir.join("sessions.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let config = SessionConfig::new(
        Policy::for_window(16_000),
        TokenCounter::new(Encoding::O200kBase),
    );
    let manager = CompactManager::open(config, store).unwrap();
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::User, "Run the orbit tests."));
    manager.preflight("orbit", &conv).unwrap();
    conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
        "toolu_1",
        "bash",
        json!({"command": "cargo test -p orbit"}),
    ))));
    // Long enough to take several pages, with characters JSON escapes.
    let mut long: String = (0..3_000)
        .map(|i| format!("test \"step_{i}\"\t... ok\n"))
        .collect();
    long.push_str("test perihelion_drift ... FAILED\n");
    let output = manager
        .truncate_tool_output("orbit", "toolu_1", &long)
        .unwrap();
    let reference = output
        .split("compactctl recall ")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap()
        .to_owned();
    conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
        "toolu_1", output,
    ))));
    conv.push(Item::text(Role::Assistant, "perihelion drift fails"));
    manager.preflight("orbit", &conv).unwrap();
    let original = dir.join("original.txt");
    std::fs::write(&original, &long).unwrap();
    let url = format!("sqlite:{}", path.display());
    python_client(
        &python,
        &[
            "--store",
            &url,
            "orbit",
            &reference,
            original.to_str().unwrap(),
        ],
    );
}
