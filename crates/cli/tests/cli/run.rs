//! `compactctl run` and the Claude Code `PreToolUse` hook that wraps `Bash` commands in it: the
//! documented hook input for real commands, the rewritten command run in a shell beside the original.

use crate::support::{oracle, run_env, run_stdin, temp_dir};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// A script printing a long log with error lines in the middle of standard output, a short standard
/// error, and exiting with 4.
const GEN: &str = r#"i=1
while [ $i -le 3000 ]; do
  echo "   Compiling crate-$i v0.$i.0 (/work/project/crates/c$i)"
  if [ $i = 1234 ]; then echo "error[E0425]: cannot find value x_$i in this scope"; fi
  if [ $i = 2345 ]; then echo "warning: unused import; error: aborting due to previous error"; fi
  i=$((i+1))
done
echo "warning: build failed, waiting for other jobs" >&2
echo "error: could not compile project (lib) due to 2 previous errors" >&2
exit 4
"#;

struct Shell {
    code: i32,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn bash(command: &str, cwd: &Path, env: &[(&str, String)]) -> Shell {
    let out = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("COMPACT_RUN_SESSION")
        .output()
        .unwrap();
    Shell {
        code: out.status.code().unwrap_or(-1),
        stdout: out.stdout,
        stderr: out.stderr,
    }
}

fn pre_tool_use(command: &str, cwd: &Path, mode: &str) -> Vec<u8> {
    json!({
        "session_id": "5b1e7c2a-run-e2e",
        "transcript_path": cwd.join("t.jsonl"),
        "cwd": cwd,
        "permission_mode": mode,
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "a command", "timeout": 120000},
        "tool_use_id": "toolu_01run",
    })
    .to_string()
    .into_bytes()
}

/// The ids the markers of `text` name.
fn marker_ids(text: &str) -> Vec<String> {
    text.split("compactctl recall ")
        .skip(1)
        .filter_map(|rest| rest.split(']').next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_hook_wraps_real_commands_that_then_behave_like_the_originals() {
    let dir = temp_dir("run_e2e");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(dir.join("gen.sh"), GEN).unwrap();
    // A directory nothing else writes to, so that its listing is the same in both runs.
    let listing = dir.join("listing");
    std::fs::create_dir_all(&listing).unwrap();
    for i in 0..8 {
        std::fs::write(listing.join(format!("file_{i:02}.txt")), "x".repeat(i)).unwrap();
    }
    let state = dir.join("state");
    let env = [
        ("HOME", home.to_string_lossy().into_owned()),
        ("XDG_STATE_HOME", state.to_string_lossy().into_owned()),
    ];
    let env_ref: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let commands = [
        "seq 1 20000",
        "bash gen.sh",
        "ls -la listing",
        "cat missing-file-for-the-test",
        "grep -n e gen.sh",
    ];
    let mut cut = 0;
    for command in commands {
        let hook = run_stdin(
            &["hook", "claude-code"],
            &pre_tool_use(command, &dir, "bypassPermissions"),
        )
        .ok();
        let output: Value = serde_json::from_str(&hook.stdout).unwrap_or_else(|e| {
            panic!("{command}: hook output is not JSON ({e}): {}", hook.stdout)
        });
        let specific = &output["hookSpecificOutput"];
        assert_eq!(specific["hookEventName"], "PreToolUse");
        assert_eq!(specific["permissionDecision"], "allow");
        assert_eq!(specific["updatedInput"]["description"], "a command");
        assert_eq!(specific["updatedInput"]["timeout"], 120000);
        let wrapped = specific["updatedInput"]["command"].as_str().unwrap();
        assert!(wrapped.contains(" run --budget "), "{wrapped}");

        let original = bash(command, &dir, &env);
        let filtered = bash(wrapped, &dir, &env);
        assert_eq!(filtered.code, original.code, "{command}: exit code");
        assert_eq!(filtered.stderr, original.stderr, "{command}: stderr");
        let text = String::from_utf8(filtered.stdout.clone()).unwrap();
        let original_text = String::from_utf8(original.stdout.clone()).unwrap();
        let budget: usize = wrapped
            .split(" --budget ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        if oracle("o200k_base", &original_text) <= budget {
            assert_eq!(
                filtered.stdout, original.stdout,
                "{command}: fits, unchanged"
            );
            continue;
        }
        cut += 1;
        assert!(
            oracle("o200k_base", &text) <= budget,
            "{command}: over budget"
        );
        for line in original_text.lines().filter(|l| l.contains("error")) {
            assert!(text.contains(line), "{command}: lost `{line}`");
        }
        let last = original_text.trim_end().lines().last().unwrap();
        assert!(text.trim_end().ends_with(last), "{command}: last line lost");
        let ids = marker_ids(&text);
        assert!(!ids.is_empty(), "{command}: no marker in\n{text}");
        for id in ids {
            let recalled = run_env(&["recall", &id], &env_ref).ok();
            assert_eq!(recalled.stdout, original_text, "{command}: recall {id}");
        }
    }
    assert_eq!(cut, 2, "seq and gen.sh are over the budget");
}

#[test]
fn the_hook_leaves_commands_alone_unless_they_would_run_without_asking() {
    let dir = temp_dir("run_hook_rules");
    let home = dir.join("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(
        home.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(seq:*)", "Bash(git log:*)"], "deny": ["Bash(git log -p:*)"]}}"#,
    )
    .unwrap();
    let log = dir.join("hook.log");
    let log_s = log.to_string_lossy().into_owned();
    let home_s = home.to_string_lossy().into_owned();
    let hook = |command: &str, mode: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_compactctl"));
        cmd.args(["hook", "claude-code", "--log", &log_s])
            .env("HOME", &home_s)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&pre_tool_use(command, &dir, mode))
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(hook("seq 1 100", "default").contains("updatedInput"));
    assert!(hook("git log --oneline", "default").contains("updatedInput"));
    for (command, mode) in [
        ("git log -p", "default"),
        ("seq 1 100; rm -rf x", "default"),
        ("make all", "default"),
        ("make all", "acceptEdits"),
        ("cd src && make", "bypassPermissions"),
        ("vim notes.txt", "bypassPermissions"),
        ("compactctl run -- make", "bypassPermissions"),
        ("cargo test 2>&1 | tail -5", "bypassPermissions"),
    ] {
        assert_eq!(hook(command, mode), "", "{command} ({mode}) passes through");
    }
    // Bad input: nothing printed, exit 0, the reason logged.
    let bad =
        json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": 3}});
    let out = run_stdin(
        &["hook", "claude-code", "--log", &log_s],
        bad.to_string().as_bytes(),
    )
    .ok();
    assert_eq!(out.stdout, "");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("tool_input.command"), "{logged}");
}

#[test]
fn run_passes_stdin_exit_codes_and_refuses_absurd_budgets() {
    let dir = temp_dir("run_basics");
    let state = dir.to_string_lossy().into_owned();
    let out = run_stdin(&["run", "--", "cat"], b"hello\nworld\n").ok();
    assert_eq!(out.stdout, "hello\nworld\n");
    let out = run_env(
        &["run", "--", "sh", "-c", "echo out; echo err >&2; exit 7"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (7, "out\n", "err\n")
    );
    let out = run_env(
        &["run", "--budget", "5", "--", "true"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--budget 5"), "{}", out.stderr);
    let out = run_env(
        &["run", "--", "/nonexistent/program"],
        &[("XDG_STATE_HOME", &state)],
    );
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("/nonexistent/program"),
        "{}",
        out.stderr
    );
}
