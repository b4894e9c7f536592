//! Integration tests of fact extraction over readable fixtures and several tool vocabularies.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/checkpoint/dsl.rs"]
mod dsl;

use compact_core::facts::{extract, CommandStatus, FileOp, StepStatus};
use compact_core::model::ItemId;

fn ids(v: &[ItemId]) -> Vec<&str> {
    v.iter().map(ItemId::as_str).collect()
}

fn session() -> compact_core::model::Conversation {
    dsl::parse(include_str!("fixtures/checkpoint/session.txt"))
}

#[test]
fn claude_code_session_facts() {
    let conv = session();
    let f = extract(&conv.items);

    assert_eq!(f.user_requests.len(), 2);
    assert!(f.user_requests[0]
        .text
        .starts_with("The /login endpoint returns 500"));
    assert_eq!(ids(&f.user_requests[1].sources), ["i24"]);

    let constraints: Vec<&str> = f.constraints.iter().map(|c| c.text.as_str()).collect();
    assert!(
        constraints.contains(&"Don't change the public API of the auth crate."),
        "{constraints:?}"
    );
    assert!(
        constraints
            .iter()
            .any(|c| c.contains("only touch files under crates/auth/tests")),
        "{constraints:?}"
    );

    let read: Vec<&str> = f.files_read.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(
        read,
        [
            "crates/auth/src/handlers/login.rs",
            "crates/auth/src/session.rs"
        ]
    );
    let modified: Vec<&str> = f.files_modified.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(
        modified,
        [
            "crates/auth/src/handlers/login.rs",
            "crates/auth/tests/login_malformed.rs"
        ]
    );
    assert_eq!(ids(&f.files_modified[0].sources), ["i10", "i17"]);

    let statuses: Vec<CommandStatus> = f.commands.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            CommandStatus::Exit(101),
            CommandStatus::Exit(101),
            CommandStatus::Exit(0),
            CommandStatus::NoResult
        ]
    );
    assert_eq!(ids(&f.commands[0].sources), ["i7", "i8"]);

    assert_eq!(f.errors.len(), 2);
    assert!(
        f.errors[0].line.contains("FAILED") || f.errors[0].line.contains("panicked"),
        "{:?}",
        f.errors[0]
    );
    assert!(
        f.errors[1].line.starts_with("error[E0004]"),
        "{:?}",
        f.errors[1]
    );
    assert_eq!(f.errors[1].action, "cargo test -p auth 2>&1 | tail -5");

    let decisions: Vec<&str> = f.decisions.iter().map(|d| d.text.as_str()).collect();
    assert!(
        decisions
            .iter()
            .any(|d| d.contains("instead of unwrapping")),
        "{decisions:?}"
    );
    assert!(
        decisions.iter().any(|d| d.starts_with("Going with a 400")),
        "{decisions:?}"
    );

    let plan = f.plan.as_ref().unwrap();
    assert_eq!(ids(&plan.sources), ["i21"]);
    assert!(plan.steps.iter().all(|s| s.status == StepStatus::Done));
    assert!(!f.completions.is_empty());
}

#[test]
fn codex_vocabulary() {
    let conv = dsl::parse(
        r##"
@user
Update the README and bump the version.
@call a1 shell
{"command": ["bash", "-lc", "cat README.md && sed -n '1,20p' Cargo.toml"], "workdir": "/repo"}
@result a1
{"output": "# demo\n[package]\nversion = \"0.1.0\"\n", "metadata": {"exit_code": 0, "duration_seconds": 0.1}}
@call a2 apply_patch
*** Begin Patch
*** Update File: README.md
@@
-# demo
+# demo 0.2
*** Add File: CHANGELOG.md
+## 0.2.0
*** End Patch
@result a2
Success. Updated the following files:
M README.md
A CHANGELOG.md
@call a3 exec_command
{"cmd": "cargo build --locked"}
@result a3
Exit code: 1
Wall time: 3.2 seconds
Output:
error: the lock file needs to be updated but --locked was passed to prevent this
@call a4 update_plan
{"explanation": "Docs first, then release.", "plan": [{"step": "Update README", "status": "completed"}, {"step": "Bump version", "status": "in_progress"}]}
@result a4
Plan updated
"##,
    );
    let f = extract(&conv.items);
    let read: Vec<&str> = f.files_read.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(read, ["README.md", "Cargo.toml"]);
    let modified: Vec<&str> = f.files_modified.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(modified, ["README.md", "CHANGELOG.md"]);
    assert_eq!(
        f.commands[0].command,
        "cat README.md && sed -n '1,20p' Cargo.toml"
    );
    assert_eq!(f.commands[0].status, CommandStatus::Exit(0));
    assert_eq!(f.commands[1].status, CommandStatus::Exit(1));
    assert_eq!(f.errors.len(), 1);
    assert!(
        f.errors[0].line.starts_with("error: the lock file"),
        "{:?}",
        f.errors[0]
    );
    let plan = f.plan.unwrap();
    assert_eq!(
        plan.explanation.as_deref(),
        Some("Docs first, then release.")
    );
    assert_eq!(plan.steps[1].status, StepStatus::InProgress);
}

#[test]
fn swe_agent_and_openhands_vocabulary() {
    let conv = dsl::parse(
        r#"
@user
Fix the off-by-one in utils.py
@call s1 open
{"path": "src/utils.py"}
@result s1
[File: src/utils.py (40 lines total)]
@call s2 str_replace_editor
{"command": "view", "path": "/workspace/tests/test_utils.py"}
@result s2
Here's the result of running `cat -n` on /workspace/tests/test_utils.py
@call s3 str_replace_editor
{"command": "str_replace", "path": "/workspace/src/utils.py", "old_str": "i + 1", "new_str": "i"}
@result s3
The file /workspace/src/utils.py has been edited.
@call s4 execute_bash
{"command": "python -m pytest tests -q"}
@result s4
E   AssertionError: assert 3 == 4
FAILED tests/test_utils.py::test_range - AssertionError
[Command finished with exit code 1]
@call s5 create
{"filename": "reproduce.py"}
@result s5
[File: reproduce.py (1 lines total)]
@call s6 bash
{"command": "python reproduce.py"}
@result s6 error
Traceback (most recent call last):
  File "reproduce.py", line 1, in <module>
NameError: name 'rng' is not defined
"#,
    );
    let f = extract(&conv.items);
    let read: Vec<&str> = f.files_read.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(read, ["src/utils.py", "/workspace/tests/test_utils.py"]);
    let modified: Vec<&str> = f.files_modified.iter().map(|x| x.path.as_str()).collect();
    assert_eq!(modified, ["/workspace/src/utils.py", "reproduce.py"]);
    assert_eq!(f.commands[0].status, CommandStatus::Exit(1));
    assert_eq!(f.commands[1].status, CommandStatus::Failed);
    assert_eq!(f.errors.len(), 2);
    // The line that says why is the last error line, not the traceback header.
    assert_eq!(
        f.errors[0].line,
        "FAILED tests/test_utils.py::test_range - AssertionError"
    );
    assert_eq!(f.errors[1].line, "NameError: name 'rng' is not defined");
}

#[test]
fn extraction_is_deterministic_and_handles_empty_input() {
    let conv = session();
    assert_eq!(extract(&conv.items), extract(&conv.items));
    let empty = extract(&[]);
    assert!(empty.user_requests.is_empty() && empty.plan.is_none());
}

#[test]
fn harness_noise_is_not_a_request_or_an_error() {
    let conv = dsl::parse(
        r#"
@user
<environment_context>
  <cwd>/repo</cwd>
</environment_context>
@user
/add src/app.ts
@user
Find where the retry limit is set. Prefer the config file over code.
@call g1 shell
{"command": ["bash", "-lc", "rg -n RETRY_LIMIT src"]}
@result g1
{"output": "", "metadata": {"exit_code": 1, "duration_seconds": 0.0}}
@call g2 shell
{"command": "rg -n retry_limit config"}
@result g2
Exit code: 1
Output:
rg: config: No such file or directory (os error 2)
"#,
    );
    let f = extract(&conv.items);
    assert_eq!(f.user_requests.len(), 1, "{:?}", f.user_requests);
    assert_eq!(f.constraints[0].text, "Prefer the config file over code.");
    assert_eq!(f.commands[0].status, CommandStatus::Exit(1));
    // rg finding nothing is an answer, not a failure; rg failing to open a path is.
    assert_eq!(f.errors.len(), 1, "{:?}", f.errors);
    assert!(
        f.errors[0].line.starts_with("rg: config: No such file"),
        "{:?}",
        f.errors[0]
    );
}

#[test]
fn artifact_trail_and_task_lists() {
    let conv = dsl::parse(
        r#"
@user
Split the config loader and track the work as tasks.
@call t1 TaskCreate
{"subject": "Move parsing into config/parse.rs", "description": "..."}
@result t1
Task #1 created successfully: Move parsing into config/parse.rs
@call t2 TaskCreate
{"subject": "Delete the old loader", "description": "..."}
@result t2
Task #2 created successfully: Delete the old loader
@call r1 Read
{"file_path": "src/config.rs"}
@result r1
     1→pub struct Config { pub retries: u32 }
     2→pub fn load(path: &str) -> Config {
@call w1 Write
{"file_path": "src/config/parse.rs", "content": "pub fn parse(text: &str) -> Config {\n    todo!()\n}\n"}
@result w1
File created successfully at: src/config/parse.rs
@call m1 MultiEdit
{"file_path": "src/config.rs", "edits": [{"old_string": "pub fn load", "new_string": "pub fn load_file"}, {"old_string": "}", "new_string": "    parse::parse(&text)\n}"}]}
@result m1
Applied 2 edits to src/config.rs
@call e1 Edit
{"file_path": "src/old_loader.rs", "old_string": "x", "new_string": "y"}
@result e1 error
<tool_use_error>String to replace not found in file.</tool_use_error>
@call b1 Bash
{"command": "rm src/old_loader.rs && cargo build"}
@result b1
   Compiling demo v0.1.0
@call u1 TaskUpdate
{"taskId": "1", "status": "completed"}
@result u1
Updated task #1 status
"#,
    );
    let f = extract(&conv.items);
    let modified: Vec<(&str, FileOp, usize)> = f
        .files_modified
        .iter()
        .map(|m| (m.path.as_str(), m.op, m.changes))
        .collect();
    // The failed Edit changed nothing; `rm` deleted the file afterwards.
    assert_eq!(
        modified,
        [
            ("src/config/parse.rs", FileOp::Created, 1),
            ("src/config.rs", FileOp::Modified, 1),
            ("src/old_loader.rs", FileOp::Deleted, 1),
        ]
    );
    let config = &f.files_modified[1];
    assert_eq!(
        config.last_change.as_deref(),
        Some("+ parse::parse(&text) (2 edits)")
    );
    // Symbols of what was written first, then of what was read.
    assert_eq!(config.symbols, ["load_file()", "Config", "load()"]);
    assert_eq!(f.files_modified[0].symbols, ["parse()"]);
    // The failed edit is a failure, resolved by the later change of the same file.
    assert_eq!(f.errors.len(), 1, "{:?}", f.errors);
    assert_eq!(f.errors[0].action, "Edit src/old_loader.rs");
    assert_eq!(
        f.errors[0].resolved_by.as_ref().map(ItemId::as_str),
        Some("i13")
    );
    // The task list is the plan.
    let plan = f.plan.unwrap();
    let steps: Vec<(&str, StepStatus)> = plan
        .steps
        .iter()
        .map(|s| (s.text.as_str(), s.status))
        .collect();
    assert_eq!(
        steps,
        [
            ("Move parsing into config/parse.rs", StepStatus::Done),
            ("Delete the old loader", StepStatus::Pending)
        ]
    );
}

#[test]
fn identical_failures_are_merged_and_warnings_are_not_failures() {
    let conv = dsl::parse(
        r#"
@user
Make the integration tests pass.
@call b1 Bash
{"command": "npm test 2>&1 | tail -5"}
@result b1 error
Exit code 1
Error: connect ECONNREFUSED 127.0.0.1:5432
@call b2 Bash
{"command": "cd /app && npm test"}
@result b2 error
Exit code 1
Error: connect ECONNREFUSED 127.0.0.1:5432
@assistant
The database is not running; starting it.
@call b3 Bash
{"command": "docker compose up -d db"}
@result b3
WARN[0000] the attribute `version` is obsolete, it will be ignored
Container db Started
@call b4 Bash
{"command": "npm test"}
@result b4
npm warn deprecated inflight@1.0.6: This module is not supported
Tests: 12 passed, 12 total
"#,
    );
    let f = extract(&conv.items);
    assert_eq!(f.errors.len(), 1, "{:?}", f.errors);
    let e = &f.errors[0];
    assert_eq!(e.count, 2);
    assert_eq!(e.line, "Error: connect ECONNREFUSED 127.0.0.1:5432");
    assert_eq!(
        e.followup.as_deref(),
        Some("The database is not running; starting it.")
    );
    assert_eq!(e.resolved_by.as_ref().map(ItemId::as_str), Some("i9"));
    assert!(f.commands.iter().filter(|c| c.failed).count() == 2);
}

/// Context a harness injected (a skill's text) is not a request; it is named by its first line, once
/// per distinct piece, so that an agent resuming knows which instructions were in force.
#[test]
fn injected_context_is_named_by_its_first_line() {
    let skill = "Base directory for this skill: /home/u/.claude/skills/brainstorming\n\n# Brainstorming\nYou MUST present a design before writing code.";
    let mut conv = dsl::parse(&format!(
        "@user\nDesign the export command.\n@user\n{skill}\n@user\n<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>\n@user\n{skill}\n"
    ));
    for k in [1, 3] {
        conv.items[k].meta.visibility.user = false;
    }
    let f = extract(&conv.items);
    assert_eq!(f.user_requests.len(), 1, "{:?}", f.user_requests);
    assert_eq!(f.context.len(), 1, "{:?}", f.context);
    assert_eq!(
        f.context[0].text,
        "Base directory for this skill: /home/u/.claude/skills/brainstorming"
    );
    assert!(f.context[0].injected);
    assert_eq!(f.context[0].sources.len(), 2);
    // Its rules are still read, as injected constraints.
    assert!(f
        .constraints
        .iter()
        .any(|c| c.injected && c.text.starts_with("You MUST present a design")));
}

/// Of a failure's error lines, the one that reports an exit code restates that something failed;
/// the error line without one says why.
#[test]
fn the_reason_of_a_failure_is_not_a_line_reporting_an_exit_code() {
    let conv = dsl::parse(
        r#"
@user
Check the types.
@call c1 Bash
{"command": "npx tsc --noEmit"}
@result c1 error
src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.
Error: Command failed with exit code 2: tsc --noEmit
"#,
    );
    let f = extract(&conv.items);
    assert_eq!(f.errors.len(), 1, "{:?}", f.errors);
    assert_eq!(
        f.errors[0].line,
        "src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'."
    );
}

/// The harness's note that the user stopped the work is no request: it is where the request before
/// it was interrupted (Claude Code's notes, a stopped call's result, Codex's aborted turn).
#[test]
fn an_interruption_is_recorded_where_the_user_stopped() {
    use compact_core::facts::TURN_ABORTED_LABEL;
    use compact_core::model::{Item, ItemBody, Opaque, Role};
    let mut conv = dsl::parse(
        r#"
@user
Run the whole test suite.
@call c1 Bash
{"command": "cargo test --workspace"}
@result c1 error
Exit code 137
[Request interrupted by user for tool use]
@user
[Request interrupted by user for tool use]
@user
Only the parser's tests, please.
@assistant
Running them.
@user
[Request interrupted by user]
"#,
    );
    conv.push(
        Item::new(ItemBody::Opaque(Opaque {
            label: TURN_ABORTED_LABEL.to_owned(),
            role: Some(Role::User),
            value: serde_json::json!({"type": "turn_aborted", "reason": "interrupted"}),
        }))
        .with_id("i7"),
    );
    let f = extract(&conv.items);
    let requests: Vec<&str> = f.user_requests.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(
        requests,
        [
            "Run the whole test suite.",
            "Only the parser's tests, please."
        ]
    );
    // The stopped call's result and the note after it are one stop; the last two notes, with no
    // activity between them, another.
    assert_eq!(f.interruptions.len(), 2, "{:?}", f.interruptions);
    assert_eq!(ids(&f.interruptions[0].sources), ["i2", "i3"]);
    assert_eq!(f.interruptions[0].at, 2);
    assert_eq!(ids(&f.interruptions[1].sources), ["i6", "i7"]);
    // The stopped call is still a failure of its own.
    assert_eq!(f.errors.len(), 1, "{:?}", f.errors);
}
