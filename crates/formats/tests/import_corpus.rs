//! Every real transcript in the shared corpus imports (strictly), is auto-detected, and its item,
//! tool-call, tool-result and error counts equal counts taken independently from the raw file (a
//! plain serde_json walk or line scan here, not the importer's code).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Format, ItemKind};
use compact_formats::import::{detect, import, ImportMode, ImportOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};

#[path = "../../core/tests/fixtures/corpus.rs"]
mod corpus;

/// Counts taken from a file.
#[derive(Debug, Default, PartialEq, Eq)]
struct Counts {
    items: usize,
    tool_calls: usize,
    tool_results: usize,
    errors: usize,
}

fn corpus_files(dir: &str) -> Option<Vec<PathBuf>> {
    let root = corpus::dir()?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no files in corpus/{dir}");
    Some(files)
}

/// The counts of an imported file.
fn counts_of(imp: &compact_formats::Imported) -> Counts {
    let items = &imp.conversation.items;
    let kind = |k: ItemKind| items.iter().filter(|i| i.kind() == k).count();
    Counts {
        items: items.len(),
        tool_calls: kind(ItemKind::ToolCall),
        tool_results: kind(ItemKind::ToolResult),
        errors: imp.stats.errors,
    }
}

fn imported_counts(path: &Path) -> (Counts, compact_formats::Imported) {
    let bytes = std::fs::read(path).unwrap();
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let imp = import(
        &bytes,
        &name,
        &ImportOptions {
            format: None,
            mode: ImportMode::Strict,
        },
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        imp.warnings.is_empty(),
        "{name}: unexpected warnings {:?}",
        imp.warnings
    );
    let items = &imp.conversation.items;
    // Ids are unique within a session, even where the source repeats a record (a resumed
    // transcript copies records, ids and all).
    let ids: std::collections::HashSet<&str> = items.iter().map(|i| i.meta.id.as_str()).collect();
    assert_eq!(ids.len(), items.len(), "{name}: duplicate item ids");
    let counts = counts_of(&imp);
    let flagged = items
        .iter()
        .filter_map(|i| i.as_tool_result())
        .filter(|r| r.is_error)
        .count();
    assert!(
        flagged <= imp.stats.errors,
        "{name}: more flagged results than counted errors"
    );
    (counts, imp)
}

fn check_dir(dir: &str, format: Format, expected: fn(&[u8]) -> Counts) {
    let Some(files) = corpus_files(dir) else {
        return;
    };
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(detect(&bytes, &name), Some(format), "{name}: detection");
        let (got, imp) = imported_counts(&path);
        assert_eq!(imp.format, format, "{name}");
        let want = expected(&bytes);
        assert!(want.items > 0, "{name}: expected counter found nothing");
        assert_eq!(got, want, "{name}: imported vs counted from the raw file");
        println!("{name}: {got:?}");
    }
}

fn s<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

// ---------------------------------------------------------------- Codex rollouts

/// A Codex tool output that reports failure, judged from the raw text.
fn codex_failed(output: &Value) -> bool {
    let Some(text) = output.as_str() else {
        return false;
    };
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        if let Some(code) = v.pointer("/metadata/exit_code").and_then(Value::as_i64) {
            return code != 0;
        }
    }
    if let Some(first) = text.lines().next() {
        if let Some(code) = first.strip_prefix("Exit code: ") {
            return code.trim() != "0";
        }
    }
    [
        "exec command rejected",
        "failed in sandbox",
        "apply_patch verification failed",
    ]
    .iter()
    .any(|p| text.starts_with(p))
}

fn codex_expected(bytes: &[u8]) -> Counts {
    let mut c = Counts::default();
    for line in std::str::from_utf8(bytes)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let r: Value = serde_json::from_str(line).unwrap();
        let p = &r["payload"];
        match (s(&r, "type"), s(p, "type")) {
            ("response_item", t) => {
                c.items += 1;
                if matches!(t, "function_call" | "custom_tool_call" | "local_shell_call") {
                    c.tool_calls += 1;
                }
                if t.ends_with("_call_output") {
                    c.tool_results += 1;
                    c.errors += usize::from(codex_failed(&p["output"]));
                }
            }
            ("event_msg", "turn_aborted") => c.items += 1,
            ("session_meta", _) if p.get("base_instructions").is_some() => c.items += 1,
            _ => {}
        }
    }
    c
}

#[test]
fn codex_rollouts_match_raw_counts() {
    check_dir("codex-rollout", Format::CodexRollout, codex_expected);
}

#[test]
fn codex_model_view_excludes_snapshots_and_markers() {
    let Some(files) = corpus_files("codex-rollout") else {
        return;
    };
    for path in files {
        let (_, imp) = imported_counts(&path);
        let raw = std::fs::read_to_string(&path).unwrap();
        let hidden = raw
            .lines()
            .filter(|l| l.contains("\"ghost_snapshot\"") || l.contains("\"turn_aborted\""))
            .filter(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                matches!(s(&r["payload"], "type"), "ghost_snapshot" | "turn_aborted")
            })
            .count();
        let visible = imp
            .conversation
            .items
            .iter()
            .filter(|i| i.meta.visibility.model)
            .count();
        assert_eq!(
            visible + hidden,
            imp.conversation.items.len(),
            "{}",
            path.display()
        );
        assert_eq!(
            imp.conversation.pairing().orphan_results.len(),
            0,
            "{}",
            path.display()
        );
    }
}

// ---------------------------------------------------------------- SWE-agent

fn swe_expected(bytes: &[u8]) -> Counts {
    let doc: Value = serde_json::from_slice(bytes).unwrap();
    let mut c = Counts::default();
    let mut after_action = false;
    for h in doc["history"].as_array().unwrap() {
        let content = h["content"].as_str().unwrap_or("");
        match s(h, "role") {
            "system" => c.items += 1,
            "user" => {
                c.items += 1;
                if after_action && h.get("is_demo") != Some(&Value::Bool(true)) {
                    c.tool_results += 1;
                }
                after_action = false;
            }
            "tool" => {
                c.items += 1;
                c.tool_results += 1;
            }
            "assistant" => {
                let calls = h
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map_or(0, Vec::len);
                if calls > 0 {
                    c.tool_calls += calls;
                    c.items += calls + usize::from(!content.trim().is_empty());
                    after_action = false;
                } else if !s(h, "action").trim().is_empty() {
                    // The file's own `thought` is the text before the command block.
                    c.tool_calls += 1;
                    c.items += 1 + usize::from(!s(h, "thought").trim().is_empty());
                    after_action = true;
                } else {
                    c.items += 1;
                    after_action = false;
                }
            }
            other => panic!("unexpected role {other}"),
        }
    }
    c
}

#[test]
fn swe_agent_trajectories_match_raw_counts() {
    check_dir("swe-agent", Format::SweAgent, swe_expected);
}

#[test]
fn swe_agent_calls_pair_with_observations() {
    let Some(files) = corpus_files("swe-agent") else {
        return;
    };
    for path in files {
        let (_, imp) = imported_counts(&path);
        let pairing = imp.conversation.pairing();
        assert!(
            pairing.orphan_results.is_empty(),
            "{}: orphan results",
            path.display()
        );
        // At most the final `submit` goes unanswered.
        assert!(
            pairing.orphan_calls.len() <= 1,
            "{}: {:?}",
            path.display(),
            pairing.orphan_calls
        );
    }
}

// ---------------------------------------------------------------- OpenHands

fn openhands_events(bytes: &[u8]) -> Vec<Vec<Value>> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(events)) => vec![events],
        Ok(v) => vec![v["history"].as_array().unwrap().clone()],
        Err(_) => std::str::from_utf8(bytes)
            .unwrap()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["history"]
                    .as_array()
                    .unwrap()
                    .clone()
            })
            .collect(),
    }
}

fn openhands_expected(bytes: &[u8]) -> Counts {
    let mut c = Counts::default();
    for events in openhands_events(bytes) {
        for e in &events {
            let legacy = e.get("source").is_none() && e.get("id").is_none();
            let has_tcm = e.get("tool_call_metadata").is_some_and(Value::is_object);
            let args = e.get("args").unwrap_or(e);
            let thought = usize::from(!s(args, "thought").trim().is_empty());
            if let Some(action) = e.get("action").and_then(Value::as_str) {
                match action {
                    _ if has_tcm => {
                        c.tool_calls += 1;
                        c.items += 1 + thought;
                    }
                    "message" | "system" => c.items += 1,
                    "finish" => {
                        c.items += usize::from(thought == 1 || !s(e, "message").trim().is_empty())
                    }
                    _ if legacy => {
                        c.tool_calls += 1;
                        c.items += 1 + thought;
                    }
                    _ => {}
                }
            } else if let Some(obs) = e.get("observation").and_then(Value::as_str) {
                let code = e
                    .pointer("/extras/metadata/exit_code")
                    .or_else(|| e.get("exit_code"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let failed = obs == "error" || code != 0;
                if has_tcm || legacy {
                    c.items += 1;
                    c.tool_results += 1;
                    c.errors += usize::from(failed);
                } else if obs == "error" {
                    c.items += 1;
                    c.errors += 1;
                } else if obs == "recall" {
                    c.items += 1;
                }
            }
        }
    }
    c
}

#[test]
fn openhands_files_match_raw_counts() {
    check_dir("openhands", Format::OpenHands, openhands_expected);
}

// ---------------------------------------------------------------- aider

/// (user messages, assistant messages, console output blocks) by a plain line scan.
fn aider_blocks(text: &str) -> (usize, usize, usize) {
    let (mut user, mut assistant, mut output) = (0, 0, 0);
    // 'u' user, 'o' output, 'a' assistant text, 'h' header; a block is a run of one kind.
    let mut run: Option<char> = None;
    let mut run_has_text = false;
    let mut close = |kind: Option<char>, has_text: bool| match kind {
        Some('u') if has_text => user += 1,
        Some('a') if has_text => assistant += 1,
        Some('o') if has_text => output += 1,
        _ => {}
    };
    for line in text.lines() {
        let (kind, rest) = if line.starts_with("# aider chat started at") {
            ('h', "")
        } else if let Some(r) = line.strip_prefix("#### ") {
            ('u', r)
        } else if line.trim_end() == "####" {
            ('u', "")
        } else if let Some(r) = line.strip_prefix("> ") {
            ('o', r)
        } else if line.trim_end() == ">" {
            ('o', "")
        } else {
            ('a', line)
        };
        if run != Some(kind) || kind == 'h' {
            close(run, run_has_text);
            run = Some(kind);
            run_has_text = false;
        }
        run_has_text |= !rest.trim().is_empty();
    }
    close(run, run_has_text);
    (user, assistant, output)
}

fn aider_expected(bytes: &[u8]) -> Counts {
    let text = std::str::from_utf8(bytes).unwrap();
    let (user, assistant, output) = aider_blocks(text);
    // Failed model calls as aider prints them: `> litellm.<Name>Error: ...`.
    let errors = text
        .lines()
        .filter_map(|l| l.strip_prefix("> litellm."))
        .filter(|rest| {
            let name = rest.split(':').next().unwrap();
            name.ends_with("Error") && !name.contains(' ')
        })
        .count();
    Counts {
        items: user + assistant + output,
        errors,
        ..Counts::default()
    }
}

#[test]
fn aider_histories_match_raw_counts() {
    check_dir("aider", Format::Aider, aider_expected);
    let Some(files) = corpus_files("aider") else {
        return;
    };
    for path in files {
        let (_, imp) = imported_counts(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        let (user, assistant, _) = aider_blocks(&text);
        let kinds = |k: ItemKind| {
            imp.conversation
                .items
                .iter()
                .filter(|i| i.kind() == k)
                .count()
        };
        assert_eq!(kinds(ItemKind::User), user, "{}", path.display());
        assert_eq!(kinds(ItemKind::Assistant), assistant, "{}", path.display());
        let sessions = text
            .lines()
            .filter(|l| l.starts_with("# aider chat started at"))
            .count();
        assert_eq!(imp.stats.sessions, sessions, "{}", path.display());
    }
}

// ---------------------------------------------------------------- Claude Code sessions

/// The records of a Claude Code file that parse as JSON objects, and the numbers of the lines that
/// do not (comment lines, lines broken by the owners' redaction).
fn claude_records(bytes: &[u8]) -> (Vec<Value>, Vec<usize>) {
    let text = String::from_utf8_lossy(bytes);
    let mut records = Vec::new();
    let mut broken = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() && v.get("type").is_some() => records.push(v),
            _ => broken.push(n + 1),
        }
    }
    (records, broken)
}

/// Whether every message record of the file is a sidechain (a subagent's own transcript).
fn claude_subagent(records: &[Value]) -> bool {
    let messages: Vec<&Value> = records
        .iter()
        .filter(|r| matches!(s(r, "type"), "user" | "assistant"))
        .collect();
    !messages.is_empty()
        && messages
            .iter()
            .all(|r| r["isSidechain"] == Value::Bool(true))
}

fn claude_expected(bytes: &[u8]) -> Counts {
    let (records, _) = claude_records(bytes);
    let subagent = claude_subagent(&records);
    let mut c = Counts::default();
    for r in &records {
        if !matches!(s(r, "type"), "user" | "assistant")
            || (!subagent && r["isSidechain"] == Value::Bool(true))
        {
            continue;
        }
        c.errors += usize::from(r["isApiErrorMessage"] == Value::Bool(true));
        match &r["message"]["content"] {
            Value::String(text) => c.items += usize::from(!text.is_empty()),
            Value::Array(blocks) => {
                if r["isCompactSummary"] == Value::Bool(true) {
                    c.items += 1;
                    continue;
                }
                // Consecutive content parts (text, images, documents) are one message item.
                let mut in_run = false;
                for b in blocks {
                    // Whitespace-only text blocks carry nothing and are not imported.
                    if s(b, "type") == "text" && s(b, "text").trim().is_empty() {
                        continue;
                    }
                    let part = matches!(s(b, "type"), "text" | "image" | "document");
                    c.items += usize::from(!(part && in_run));
                    in_run = part;
                    match s(b, "type") {
                        "tool_use" => c.tool_calls += 1,
                        "tool_result" => {
                            c.tool_results += 1;
                            c.errors += usize::from(b["is_error"] == Value::Bool(true));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    c
}

/// Every Claude Code session: strict import fails exactly when the file has a broken line, naming
/// the first one; lenient import reads the rest with one warning per broken line, and its counts match
/// counts taken from the raw records. Subagent files import as their own conversation.
#[test]
fn claude_code_sessions_match_raw_counts() {
    let Some(files) = corpus_files("claude-code") else {
        return;
    };
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            detect(&bytes, &name),
            Some(Format::ClaudeCode),
            "{name}: detection"
        );
        let (records, broken) = claude_records(&bytes);
        let strict = import(&bytes, &name, &ImportOptions::default());
        match (broken.first(), &strict) {
            (None, Ok(imp)) => assert!(imp.warnings.is_empty(), "{name}: {:?}", imp.warnings),
            (Some(&line), Err(e)) => {
                let text = e.to_string();
                assert!(
                    text.contains(&format!("{name}:{line}:")),
                    "{name}: strict error should name line {line}: {text}"
                );
            }
            (None, Err(e)) => panic!("{name}: strict import failed: {e}"),
            (Some(line), Ok(_)) => panic!("{name}: line {line} is broken but strict import passed"),
        }
        let imp = import(
            &bytes,
            &name,
            &ImportOptions {
                format: None,
                mode: ImportMode::Lenient,
            },
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            imp.warnings.len(),
            broken.len(),
            "{name}: one warning per broken line"
        );
        let items = &imp.conversation.items;
        let got = counts_of(&imp);
        assert_eq!(
            got,
            claude_expected(&bytes),
            "{name}: imported vs counted from the raw file"
        );
        assert_eq!(
            imp.stats.subagent,
            claude_subagent(&records),
            "{name}: subagent flag"
        );
        let visible = items.iter().filter(|i| i.meta.visibility.model).count();
        assert!(visible > 0, "{name}: nothing visible");
        println!("{name}: {got:?}, {visible} visible");
    }
}

/// The model-visible part of every Claude Code session answers every call it holds: the results of
/// parallel calls, logged as sibling records, are on the branch (only calls whose record or result
/// was lost to a broken line, or the very last call of a session cut off mid-call, may be left).
#[test]
fn claude_code_parallel_results_are_on_the_branch() {
    let Some(files) = corpus_files("claude-code") else {
        return;
    };
    for path in files {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (_, broken) = claude_records(&bytes);
        let imp = import(
            &bytes,
            &name,
            &ImportOptions {
                format: None,
                mode: ImportMode::Lenient,
            },
        )
        .unwrap();
        let mut view = imp.conversation.clone();
        view.items.retain(|i| i.meta.visibility.model);
        let pairing = view.pairing();
        let unanswered = pairing.orphan_calls.len();
        let orphans = pairing.orphan_results.len();
        if broken.is_empty() {
            assert_eq!(orphans, 0, "{name}: results without their call");
            assert!(
                unanswered <= 1,
                "{name}: {unanswered} calls without results"
            );
        }
        println!("{name}: {unanswered} unanswered, {orphans} orphan results");
    }
}
