//! `compactctl install codex` and `mcp --latest codex` in Codex's home (`CODEX_HOME`), and the
//! installed hooks inside the real Codex CLI (`COMPACT_CODEX_BIN`, the version `scripts/clients`
//! pins): `codex exec` against the provider simulator compacts on its own, runs the trusted hooks
//! with no bypass flag, and the next model request carries Compact's checkpoint.
//!
//! Without `COMPACT_CODEX_BIN` the Codex test says it skipped, unless `COMPACT_REQUIRE_CLIENTS` (or
//! `CI`) is set: then a missing CLI fails it.

use crate::support::{run_env, temp_dir};
use compact_sim::{Api, SimConfig, Simulator};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The start of every hook context (`compact_agents::checkpoint::PREFACE`).
const PREFACE: &str = "Compact: details the compaction summary may have left out";

/// Longest one `codex exec` may take.
const RUN_LIMIT: Duration = Duration::from_secs(180);

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The environment of a run with Codex's home elsewhere than `HOME/.codex`.
fn env<'a>(home: &'a Path, codex_home: &'a Path, state: &'a Path) -> [(&'a str, &'a str); 3] {
    [
        ("HOME", s(home)),
        ("CODEX_HOME", s(codex_home)),
        ("XDG_STATE_HOME", s(state)),
    ]
}

#[test]
fn install_and_mcp_use_codex_home() {
    let dir = temp_dir("codex_home");
    let (home, codex_home, state) = (dir.join("home"), dir.join("codex"), dir.join("state"));
    std::fs::create_dir_all(&home).unwrap();
    let env = env(&home, &codex_home, &state);
    let exe = "/opt/compact/bin/compactctl";
    let config = codex_home.join("config.toml");

    let dry = run_env(
        &["install", "codex", "--hooks", "--exe", exe, "--dry-run"],
        &env,
    )
    .ok();
    assert!(dry.stdout.contains(s(&config)), "{}", dry.stdout);
    assert!(
        dry.stdout.contains("+trusted_hash = \"sha256:"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stderr.contains("would be marked trusted"),
        "{}",
        dry.stderr
    );
    assert!(!config.exists() && !home.join(".codex").exists());

    run_env(&["install", "codex", "--hooks", "--exe", exe], &env).ok();
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!home.join(".codex").exists());
    // Codex starts its MCP servers without CODEX_HOME: the server is told.
    assert!(
        text.contains(&format!("env = {{ CODEX_HOME = \"{}\" }}", s(&codex_home))),
        "{text}"
    );
    let source = std::fs::canonicalize(&codex_home)
        .unwrap()
        .join("config.toml");
    for key in ["session_start:0:0", "pre_compact:0:0"] {
        let table = format!(
            "[hooks.state.\"{}:{key}\"]\ntrusted_hash = \"sha256:",
            source.display()
        );
        assert!(text.contains(&table), "no {table} in:\n{text}");
    }
    let again = run_env(&["install", "codex", "--hooks", "--exe", exe], &env).ok();
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);

    // `mcp --latest codex` reads the rollouts under CODEX_HOME/sessions.
    let day = codex_home.join("sessions/2025/11/04");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codex-rollout.jsonl"),
        day.join("rollout-2025-11-04T08-00-00-019a5c3d-2e3f-7a40-9b52-6c7d8e9fa012.jsonl"),
    )
    .unwrap();
    let status = mcp_context_status(&env, "/work/src/tally");
    assert!(
        status.contains(s(&day)),
        "the session read is not under CODEX_HOME: {status}"
    );

    run_env(&["uninstall", "codex", "--exe", exe], &env).ok();
    assert!(!config.exists());

    // Left untrusted: the note says what to run.
    let out = run_env(
        &["install", "codex", "--hooks", "--no-trust", "--exe", exe],
        &env,
    )
    .ok();
    assert!(
        out.stderr.contains("Trust all and continue"),
        "{}",
        out.stderr
    );
    assert!(!std::fs::read_to_string(&config)
        .unwrap()
        .contains("trusted_hash"));
    run_env(&["uninstall", "codex", "--exe", exe], &env).ok();
    assert!(!config.exists());
}

/// The `context_status` answer of `compactctl mcp --latest codex --cwd CWD` over stdio.
fn mcp_context_status(env: &[(&str, &str)], cwd: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["mcp", "--latest", "codex", "--cwd", cwd])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"context_status","arguments":{}}}"#,
    ];
    let mut stdin = child.stdin.take().unwrap();
    for line in requests {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == 2)
        .map(|v| v["result"].to_string())
        .unwrap_or_else(|| {
            panic!(
                "no answer to context_status\nstdout:\n{stdout}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// Runs `codex exec ARGS` headless in `work`; its exit code and output.
fn codex_exec(codex: &Path, work: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let mut child = Command::new(codex)
        .current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .env("COMPACT_TEST_KEY", "sk-test-codex-hooks")
        .args(["exec", "--skip-git-repo-check"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// The text of every message of `role` in a Responses request's `input`.
fn messages(body: &Value, role: &str) -> Vec<String> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "message" && i["role"] == role)
        .flat_map(|i| i["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["text"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn codex_runs_the_installed_hooks_around_its_own_compaction() {
    let Some(codex) = crate::clients::client_bin("COMPACT_CODEX_BIN") else {
        return;
    };
    let dir = temp_dir("codex_hooks_live");
    let (home, codex_home, state, work) = (
        dir.join("home"),
        dir.join("codex"),
        dir.join("state"),
        dir.join("work"),
    );
    for d in [&home, &codex_home, &work] {
        std::fs::create_dir_all(d).unwrap();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = runtime
        .block_on(Simulator::spawn(SimConfig::default()))
        .unwrap();
    // Codex compacts on its own (locally, with its summary prompt) once a turn starts past
    // `model_auto_compact_token_limit`: its first request alone is several thousand tokens.
    std::fs::write(
        codex_home.join("config.toml"),
        format!(
            "model = \"gpt-5.5\"\nmodel_provider = \"sim\"\nmodel_auto_compact_token_limit = 2000\n\n\
             [model_providers.sim]\nname = \"sim\"\nbase_url = \"{}\"\n\
             env_key = \"COMPACT_TEST_KEY\"\nwire_api = \"responses\"\n",
            sim.openai_base_url()
        ),
    )
    .unwrap();
    let env = env(&home, &codex_home, &state);
    // The hooks run this test's compactctl (the default `--exe`), trusted by the install.
    run_env(&["install", "codex", "--hooks"], &env).ok();

    let first =
        "Keep the parser in src/lexer.rs; never touch the vendored copy under third_party/.";
    let (code, out) = codex_exec(&codex, &work, &env, &[first]);
    assert_eq!(code, 0, "first codex exec:\n{out}");
    let (code, out) = codex_exec(
        &codex,
        &work,
        &env,
        &["resume", "--last", "Now add the tests."],
    );
    assert_eq!(code, 0, "codex exec resume:\n{out}");
    for line in ["hook: PreCompact Completed", "hook: SessionStart Completed"] {
        assert!(out.contains(line), "no `{line}` in:\n{out}");
    }

    let requests: Vec<Value> = sim
        .requests()
        .into_iter()
        .filter(|r| r.api == Api::Responses)
        .map(|r| r.body)
        .collect();
    // Codex's local compaction: a request without tools ending in its summary prompt.
    let compaction = requests
        .iter()
        .position(|b| b["tools"].as_array().is_none_or(Vec::is_empty))
        .unwrap_or_else(|| panic!("Codex never compacted ({} requests)", requests.len()));
    let next = requests
        .get(compaction + 1)
        .unwrap_or_else(|| panic!("no request after the compaction"));
    let added: Vec<String> = messages(next, "developer")
        .into_iter()
        .filter(|t| t.starts_with(PREFACE))
        .collect();
    assert_eq!(
        added.len(),
        1,
        "the SessionStart hook's checkpoint is not in the next request:\n{:#}",
        next["input"]
    );
    assert!(added[0].contains("src/lexer.rs"), "{}", added[0]);
    // Nothing failed inside the hook, and SessionStart used up what PreCompact saved.
    let log = state.join("compact/hook.log");
    assert!(
        !log.exists(),
        "{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    let saved: Vec<_> = std::fs::read_dir(state.join("compact/hooks"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(saved.is_empty(), "{saved:?}");

    run_env(&["uninstall", "codex"], &env).ok();
    let text = std::fs::read_to_string(codex_home.join("config.toml")).unwrap();
    assert!(!text.contains("compactctl"), "{text}");
    assert!(!text.contains("[hooks"), "{text}");
}
