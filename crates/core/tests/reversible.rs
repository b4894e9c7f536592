//! The reversible stage of `tiered`: superseded outputs, repeated blocks and densifiers, each checked
//! on the compacted conversation (what the model would see) and against what the session log gives
//! back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::budget::Budget;
use compact_core::model::{Conversation, Item, ItemBody, Role};
use compact_core::plan::{Action, Plan, Tier};
use compact_core::policy::{Policy, ReversibleMode, StrategyName};
use compact_core::reversible::{expand_repeats, pad_gutter, ungroup};
use compact_core::strategy::plan;
use compact_core::tokens::{Encoding, TokenCounter};

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn only(conv: &Conversation) -> Plan {
    let policy = Policy {
        reversible: ReversibleMode::Only,
        ..Policy::for_window(1_000_000)
    };
    plan(
        StrategyName::Tiered,
        conv,
        &Budget::new(&policy),
        &policy,
        &counter(),
    )
    .unwrap()
}

/// A Claude Code style read of `lines` numbered lines starting at `first`, with the reminder it appends.
fn read_output(first: usize, lines: &[&str]) -> String {
    let body: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(k, l)| format!("{:>6}→{l}", first + k))
        .collect();
    format!("{}\n\n{REMINDER}", body.join("\n"))
}

const REMINDER: &str = "<system-reminder>\nWhenever you read a file, consider whether it is part of the task at hand. You may analyse any code, but keep every change within the scope the user asked for, and say so when something falls outside it. This reminder repeats after every read.\n</system-reminder>";

fn pair(conv: &mut Conversation, id: &str, name: &str, args: &str, output: &str) {
    conv.push(fixture::call(id, name, args));
    conv.push(fixture::result(id, name, output, false));
}

fn code(n: usize) -> Vec<String> {
    (0..n)
        .map(|k| format!("    let value_{k} = compute_{k}(input, {k});"))
        .collect()
}

fn text_of(item: &Item) -> String {
    item.plain_text()
}

fn session() -> Conversation {
    let mut c = Conversation::default();
    c.push(Item::text(Role::System, "You are a coding agent."));
    c.push(Item::text(Role::User, "Fix the parser."));
    let lines = code(60);
    let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    // 2/3: the whole file; 4/5: a range of another; 6/7: an edit; 8/9: part of the file again.
    pair(
        &mut c,
        "r1",
        "Read",
        r#"{"file_path": "src/parse.rs"}"#,
        &read_output(1, &refs),
    );
    pair(
        &mut c,
        "r2",
        "Read",
        r#"{"file_path": "src/lex.rs", "offset": 10, "limit": 40}"#,
        &read_output(10, &refs[..40]),
    );
    pair(
        &mut c,
        "e1",
        "Edit",
        r#"{"file_path": "src/parse.rs", "old_string": "compute_3", "new_string": "compute_three"}"#,
        "The file src/parse.rs has been updated.",
    );
    pair(
        &mut c,
        "r3",
        "Read",
        r#"{"file_path": "src/parse.rs", "offset": 1, "limit": 30}"#,
        &read_output(1, &refs[..30]),
    );
    // 10/11: a search; 12/13: a failing test run; 14/15: the same run, passing.
    let grep: Vec<String> = (0..12)
        .map(|k| {
            format!(
                "src/parse.rs:{}:    let value_{k} = compute_{k}(input, {k});",
                k + 1
            )
        })
        .collect();
    pair(
        &mut c,
        "g1",
        "Grep",
        r#"{"pattern": "compute_", "output_mode": "content"}"#,
        &grep.join("\n"),
    );
    pair(
        &mut c,
        "b1",
        "Bash",
        r#"{"command": "cargo test -p parser"}"#,
        &format!(
            "running 40 tests\n{}error[E0425]: cannot find function `compute_three` in this scope\nExit code: 101",
            "test parse::case ... ok\n".repeat(30)
        ),
    );
    pair(
        &mut c,
        "b2",
        "Bash",
        r#"{"command": "cargo test -p parser"}"#,
        &format!(
            "running 40 tests\n{}test result: ok. 40 passed",
            "test parse::case ... ok\n".repeat(40)
        ),
    );
    c.push(Item::text(Role::Assistant, "Fixed."));
    c
}

#[test]
fn superseded_outputs_become_stubs_naming_what_supersedes_them() {
    let conv = session();
    let p = only(&conv);
    // The first read of src/parse.rs: the file was edited and read again (in part).
    let first = &p.items[3];
    let Action::Reference { stub } = &first.action else {
        panic!("{p}")
    };
    assert_eq!(first.tier, Some(Tier::Reversible));
    assert!(stub.starts_with("[compact:ref "), "{stub}");
    assert!(stub.contains("superseded: file changed later"), "{stub}");
    assert!(stub.contains(conv.items[7].meta.id.as_str()), "{stub}");
    // The failing run stays whole although the same command ran again: what failed must stay known.
    assert!(
        matches!(p.items[13].action, Action::Keep | Action::Densify { .. }),
        "{p}"
    );
    let text = p.apply(&conv, None).unwrap().items[13].plain_text();
    assert!(
        text.contains("error[E0425]: cannot find function"),
        "{text}"
    );
    // The latest copies stay (densified at most).
    for i in [5, 9, 15] {
        assert!(
            matches!(p.items[i].action, Action::Keep | Action::Densify { .. }),
            "item {i}: {p}"
        );
    }
}

#[test]
fn densified_outputs_come_back_exactly() {
    let conv = session();
    let p = only(&conv);
    let out = p.apply(&conv, None).unwrap();
    let by_id = |id: &str| {
        out.items
            .iter()
            .find(|i| i.meta.id.as_str() == id)
            .map(text_of)
            .unwrap()
    };
    // The latest read: gutter padding dropped, every line number and line kept.
    let read = &conv.items[9];
    let dense = by_id(read.meta.id.as_str());
    assert!(dense.starts_with("1→    let value_0"), "{dense}");
    assert_eq!(pad_gutter(&dense), text_of(read));
    // The search: one header for the file, and back exactly.
    let grep = &conv.items[11];
    let grouped = by_id(grep.meta.id.as_str());
    assert!(grouped.starts_with("src/parse.rs:\n\t:1:"), "{grouped}");
    assert_eq!(ungroup(&grouped), text_of(grep));
    // The passing run: its identical lines counted, every other line kept in order.
    let run = &conv.items[15];
    let collapsed = by_id(run.meta.id.as_str());
    assert!(
        collapsed.contains("[compact: the line above repeats 39 more times]"),
        "{collapsed}"
    );
    assert_eq!(expand_repeats(&collapsed), text_of(run));
    assert!(matches!(
        &p.items[15].action,
        Action::Densify { how } if how == "repeats"
    ));
}

#[test]
fn a_repeated_block_is_kept_once_in_its_latest_copy() {
    let conv = session();
    let p = only(&conv);
    let out = p.apply(&conv, None).unwrap();
    let with_reminder: Vec<&Item> = out
        .items
        .iter()
        .filter(|i| matches!(i.body(), ItemBody::ToolResult(_)) && text_of(i).contains(REMINDER))
        .collect();
    assert_eq!(with_reminder.len(), 1, "{p}");
    assert_eq!(with_reminder[0].meta.id, conv.items[9].meta.id);
    // The range read of src/lex.rs names where the block is.
    let lex = out
        .items
        .iter()
        .find(|i| i.meta.id == conv.items[5].meta.id)
        .map(text_of)
        .unwrap();
    assert!(
        lex.contains(&format!(
            "[compact: a {}-character block repeated word for word in `{}`]",
            REMINDER.len(),
            conv.items[9].meta.id
        )),
        "{lex}"
    );
    assert!(
        matches!(&p.items[5].action, Action::Densify { how } if how == "blocks,gutter"),
        "{p}"
    );
}

#[test]
fn the_mode_decides_whether_the_stage_runs() {
    let conv = session();
    let c = counter();
    let total = c.total(&conv);
    // `only`: whatever the window, the stage alone, never a lossy tier.
    let p = only(&conv);
    assert!(p.estimated_after() < total * 3 / 4, "{p}");
    assert!(p.checkpoint.is_none());
    assert!(p
        .items
        .iter()
        .all(|i| i.tier.is_none() || i.tier == Some(Tier::Reversible)));
    assert_eq!(p.reversible_saved(), total - p.estimated_after());
    // `off`: a window the stage alone would satisfy is reached by the lossy tiers instead.
    let window = |mode| Policy {
        reversible: mode,
        ..Policy::for_window(total * 100 / 85 * 100 / 95 - total / 10)
    };
    for (mode, stage) in [(ReversibleMode::On, true), (ReversibleMode::Off, false)] {
        let policy = window(mode);
        let p = plan(
            StrategyName::Tiered,
            &conv,
            &Budget::new(&policy),
            &policy,
            &c,
        )
        .unwrap();
        assert_eq!(
            p.items.iter().any(|i| i.tier == Some(Tier::Reversible)),
            stage,
            "{mode:?}: {p}"
        );
        assert_eq!(p.reversible_saved() > 0, stage);
    }
}

#[test]
fn pinned_items_are_never_touched() {
    let mut conv = session();
    // Flag the first read (superseded) and the passing run (densifiable) as protected.
    for i in [3, 15] {
        conv.items[i].meta.protected = true;
    }
    let p = only(&conv);
    assert_eq!(p.items[3].action, Action::Keep, "{p}");
    assert_eq!(p.items[15].action, Action::Keep, "{p}");
}

/// A unified diff of `hunks`, each a list of (kind, count) runs: ' ' context, '+' added, '-' removed.
fn unified_diff(hunks: &[Vec<(char, usize)>]) -> String {
    let mut d = String::from("diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n");
    for (h, runs) in hunks.iter().enumerate() {
        d.push_str(&format!("@@ -{h}0,9 +{h}0,9 @@ def f{h}():\n"));
        for (r, (kind, n)) in runs.iter().enumerate() {
            for k in 0..*n {
                d.push_str(&format!("{kind}    value_{h}_{r}_{k} = compute({k})\n"));
            }
        }
    }
    d
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    /// Whatever the diff, every header and changed line stays, in order, with at least three
    /// context lines on each side of a change; what goes is named by a marker with the id.
    #[test]
    fn a_trimmed_diff_keeps_every_change(
        hunks in proptest::collection::vec(
            proptest::collection::vec(
                (proptest::sample::select(vec![' ', '+', '-']), 1usize..25),
                1..6,
            ),
            1..4,
        )
    ) {
        let id = compact_core::model::ItemId::new("i00ff00ff00");
        let text = unified_diff(&hunks);
        let Some(out) = compact_core::reversible::trim_diff_context(&text, &id) else {
            return Ok(());
        };
        proptest::prop_assert!(out.len() < text.len());
        let changes = |t: &str| -> Vec<String> {
            t.lines().filter(|l| !l.starts_with(' ') && !l.starts_with("[…")).map(str::to_owned).collect()
        };
        proptest::prop_assert_eq!(changes(&text), changes(&out));
        for marker in out.lines().filter(|l| l.starts_with("[…")) {
            proptest::prop_assert!(marker.contains("i00ff00ff00"));
        }
        // Around each change, the three context lines its hunk had are still there.
        for hunk in text.split("\n@@ ").skip(1) {
            let lines: Vec<&str> = hunk.lines().skip(1).collect();
            for (i, l) in lines.iter().enumerate() {
                if !l.starts_with(' ') {
                    for near in &lines[i.saturating_sub(3)..(i + 4).min(lines.len())] {
                        if near.starts_with(' ') {
                            proptest::prop_assert!(out.contains(&format!("{near}\n")), "lost {}", near);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn edit_arguments_the_files_no_longer_hold_are_cut_to_a_recall_marker() {
    use serde_json::json;
    let old_body = code(30).join("\n");
    let new_body = code(31).join("\n");
    let mut c = Conversation::default();
    c.push(Item::text(Role::System, "You are a coding agent."));
    c.push(Item::text(Role::User, "Rewrite the parser."));
    let write = json!({"file_path": "src/parse.rs", "content": old_body}).to_string();
    pair(&mut c, "w1", "Write", &write, "File created successfully");
    let edit = json!({"file_path": "src/parse.rs", "old_string": old_body, "new_string": new_body})
        .to_string();
    pair(
        &mut c,
        "e1",
        "Edit",
        &edit,
        "The file src/parse.rs has been updated.",
    );
    let failed =
        json!({"file_path": "src/parse.rs", "old_string": old_body, "new_string": "x"}).to_string();
    c.push(fixture::call("e2", "Edit", &failed));
    c.push(fixture::result(
        "e2",
        "Edit",
        "String to replace not found in file.",
        true,
    ));
    let p = only(&c);
    let sent = p.apply(&c, None).unwrap();
    // The arguments item `i` is sent with, after checking the stage cut it as `how` says.
    let cut = |i: usize, how: &str| {
        assert!(
            matches!(&p.items[i].action, Action::Densify { how: h } if h == how),
            "{p}"
        );
        sent.items[i]
            .as_tool_call()
            .unwrap()
            .arguments
            .to_value()
            .unwrap()
    };
    // The write is superseded by the later edit of its file: its content goes, its path stays.
    let args = cut(2, "superseded-write");
    assert_eq!(args["file_path"], "src/parse.rs");
    let content = args["content"].as_str().unwrap();
    assert!(content.starts_with("    let value_0 = compute_0(input, 0);\n…[compact: 30 lines"));
    assert!(content.ends_with(&format!("compactctl recall {}]", c.items[2].meta.id)));
    // The successful edit loses the text it replaced and keeps what it wrote.
    let args = cut(4, "edit-text");
    assert_eq!(args["new_string"], new_body.as_str());
    assert!(args["old_string"]
        .as_str()
        .unwrap()
        .contains(&format!("recall {}]", c.items[4].meta.id)));
    // The failed edit stays word for word, and the log still has every original.
    assert_eq!(p.items[6].action, Action::Keep, "{p}");
    assert_eq!(sent.items[6], c.items[6]);
    assert_eq!(
        c.items[4]
            .as_tool_call()
            .unwrap()
            .arguments
            .to_value()
            .unwrap()["old_string"],
        old_body.as_str()
    );
}

#[test]
fn a_failure_only_its_structured_status_reports_stays_whole() {
    // Codex's shell output: the exit code is in the JSON metadata, not in the text, and the result is
    // not flagged as an error. The failing run stays byte for byte although the command ran again.
    let mut c = Conversation::default();
    c.push(Item::text(Role::System, "You are a coding agent."));
    c.push(Item::text(Role::User, "Make the build pass."));
    let failing = serde_json::json!({
        "output": format!("{}error: linking with `cc` failed\n", "   Compiling dep v0.1.0\n".repeat(30)),
        "metadata": {"exit_code": 1, "duration_seconds": 4.2}
    })
    .to_string();
    let passing = serde_json::json!({
        "output": format!("{}    Finished `dev` profile\n", "   Compiling dep v0.1.0\n".repeat(30)),
        "metadata": {"exit_code": 0, "duration_seconds": 3.9}
    })
    .to_string();
    let args = r#"{"command": ["bash", "-lc", "cargo build"]}"#;
    pair(&mut c, "s1", "shell", args, &failing);
    pair(&mut c, "s2", "shell", args, &passing);
    c.push(Item::text(Role::Assistant, "Built."));
    let p = only(&c);
    assert_eq!(p.items[3].action, Action::Keep, "{p}");
    assert_eq!(text_of(&p.apply(&c, None).unwrap().items[3]), failing);
}

#[test]
fn the_stage_record_counts_what_it_changed() {
    let mut conv = session();
    // A superseded output too short for a stub to save anything: left as it is and not counted.
    pair(
        &mut conv,
        "l1",
        "Bash",
        r#"{"command": "ls src"}"#,
        "parse.rs",
    );
    pair(
        &mut conv,
        "l2",
        "Bash",
        r#"{"command": "ls src"}"#,
        "lex.rs\nparse.rs",
    );
    // A file written whole twice: the first write's content is cut (the file no longer holds it).
    let body = code(40).join("\n");
    let write = serde_json::json!({"file_path": "src/gen.rs", "content": body}).to_string();
    pair(&mut conv, "w1", "Write", &write, "File created.");
    let write =
        serde_json::json!({"file_path": "src/gen.rs", "content": body.replace("input", "src")});
    pair(
        &mut conv,
        "w2",
        "Write",
        &write.to_string(),
        "File written.",
    );
    let p = only(&conv);
    let last = conv.items.len();
    assert_eq!(p.items[last - 7].action, Action::Keep, "{p}");
    assert!(
        matches!(&p.items[last - 4].action, Action::Densify { how } if how == "superseded-write"),
        "{p}"
    );
    let (mut referenced, mut rewritten) = (0, 0);
    for item in &p.items {
        match item.action {
            Action::Reference { .. } => referenced += 1,
            Action::Densify { .. } => rewritten += 1,
            _ => {}
        }
    }
    assert!(referenced > 0 && rewritten > 0, "{p}");
    let expected = format!(
        "reversible: {referenced} superseded outputs referenced, {rewritten} items densified or cut"
    );
    let record = p
        .tiers
        .iter()
        .find(|t| t.note.starts_with("reversible: ") && t.note.contains("superseded"))
        .unwrap_or_else(|| panic!("{p}"));
    assert_eq!(record.note, expected);
    assert_eq!(record.items, referenced + rewritten);
}
