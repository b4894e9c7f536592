//! Integration tests of the deterministic checkpoint: a golden snapshot, budgets, folding a previous
//! checkpoint in, and determinism.
//!
//! Regenerate the golden file with `UPDATE_SNAPSHOTS=1 cargo test -p compact-core --test checkpoint`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/checkpoint/dsl.rs"]
mod dsl;

use compact_core::checkpoint::{build, parse, CheckpointOptions, SectionKind, TITLE};
use compact_core::model::{Checkpoint, Item, ItemBody, ItemId};
use compact_core::tokens::{Encoding, TokenCounter};

fn options(max_tokens: usize) -> CheckpointOptions {
    CheckpointOptions {
        max_tokens,
        counter: TokenCounter::new(Encoding::O200kBase),
    }
}

fn session() -> Vec<Item> {
    dsl::parse(include_str!("fixtures/checkpoint/session.txt")).items
}

/// Compares `actual` with the golden file, or rewrites it when `UPDATE_SNAPSHOTS` is set.
fn check_snapshot(name: &str, actual: &str) {
    let path = format!(
        "{}/tests/fixtures/checkpoint/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, format!("{actual}\n")).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {path}: run with UPDATE_SNAPSHOTS=1"));
    assert_eq!(
        actual,
        expected.trim_end_matches('\n'),
        "snapshot {name} differs (UPDATE_SNAPSHOTS=1 to accept)"
    );
}

#[test]
fn session_checkpoint_matches_snapshot() {
    let cp = build(&session(), None, &options(4_000));
    check_snapshot("session.expected.txt", &cp.text);
    assert_eq!(cp.generation, 1);
    assert_eq!(cp.covers.len(), 28);
    assert_eq!(cp.covers[0].as_str(), "i0");
}

#[test]
fn checkpoint_content_and_framing() {
    let cp = build(&session(), None, &options(4_000));
    let text = &cp.text;
    assert!(text.starts_with(TITLE));
    assert!(text.contains("not a new instruction"));
    assert!(text.contains("do not redo or re-run anything it lists as done"));
    // The first request is done (its plan was completed), the second is in progress (a call without result).
    assert!(
        text.contains("- [done] \"The /login endpoint returns 500"),
        "{text}"
    );
    assert!(
        text.contains("- [in progress] \"Thanks. Now add a regression test"),
        "{text}"
    );
    // Runs of the same command (filters and `2>&1` aside) are one entry with the last outcome.
    assert!(
        text.contains(
            "`cargo test -p auth 2>&1 | tail -5` (3 runs, last: exit 0) [i7, +4 more, i20]"
        ),
        "{text}"
    );
    // Failures keep their line, what the assistant did next, and that a later run passed.
    assert!(
        text.contains("(exit 101): error[E0004]: non-exhaustive patterns: `Err(SessionError::Malformed)` not covered — then: The match must also cover malformed tokens. — resolved by a later run [i12, i13, i20]"),
        "{text}"
    );
    // The artifact trail: what happened, the last change, the symbols.
    assert!(
        text.contains("- crates/auth/src/handlers/login.rs — modified ×2; last: + Err(SessionError::Malformed) => return Response::status(400),; symbols: SessionError, from_token, login() [i10, i17]"),
        "{text}"
    );
    assert!(
        text.contains("- crates/auth/tests/login_malformed.rs — created; last: wrote 2 lines; symbols: malformed_token_is_400() [i25]"),
        "{text}"
    );
    assert!(
        text.contains("- crates/auth/src/session.rs; symbols: SessionError [i15]"),
        "{text}"
    );
    // Every entry cites its sources.
    for line in text.lines().filter(|l| l.starts_with("- ")) {
        assert!(line.ends_with(']'), "entry without citation: {line}");
    }
    assert!(TokenCounter::new(Encoding::O200kBase).count_text(text) <= 4_000);
}

#[test]
fn tight_budgets_keep_every_section_and_the_errors() {
    let counter = TokenCounter::new(Encoding::O200kBase);
    let full = build(&session(), None, &options(100_000));
    let full_tokens = counter.count_text(&full.text);
    for max in [full_tokens - 1, full_tokens * 3 / 4, full_tokens / 2, 420] {
        let cp = build(&session(), None, &options(max));
        assert!(
            counter.count_text(&cp.text) <= max,
            "budget {max}:\n{}",
            cp.text
        );
        // Floors: every kind of fact that matters still has a line, none collapses to a placeholder.
        for heading in [
            "Goal and user requests",
            "## Files modified",
            "## Errors and failed approaches",
            "## Current state and next steps",
        ] {
            let body = section(&cp.text, heading.trim_start_matches("## "));
            assert!(
                body.contains("\n- "),
                "budget {max}: {heading}:\n{}",
                cp.text
            );
        }
        assert!(
            cp.text.contains("[done] \"The /login endpoint"),
            "budget {max}: goal kept"
        );
        assert!(
            cp.text
                .contains("Last action: `cargo test -p auth --test login_malformed`"),
            "budget {max}: where work stopped is kept:\n{}",
            cp.text
        );
    }
    let small = build(&session(), None, &options(420));
    assert!(small.text.contains("not shown"), "{}", small.text);
}

#[test]
fn recompaction_folds_the_previous_checkpoint_in() {
    let items = session();
    let (first, second) = items.split_at(24);
    let cp1 = build(first, None, &options(4_000));
    let cp2 = build(second, Some(&cp1), &options(4_000));
    assert_eq!(cp2.generation, 2);
    assert_eq!(cp2.covers.len(), items.len());
    // One record, not two stacked ones.
    assert_eq!(cp2.text.matches(TITLE).count(), 1);
    assert_eq!(cp2.text.matches("Goal and user requests").count(), 1);
    // Facts from both spans are there.
    assert!(cp2.text.contains("\"The /login endpoint returns 500"));
    assert!(cp2.text.contains("\"Thanks. Now add a regression test"));
    assert!(cp2.text.contains("error[E0004]"));
    assert!(cp2.text.contains("crates/auth/tests/login_malformed.rs"));
    // Folding a third time stays stable in shape.
    let cp3 = build(&[], Some(&cp2), &options(4_000));
    assert_eq!(cp3.generation, 3);
    let sections = parse(&cp3.text);
    assert_eq!(
        parse(&cp2.text).get(&SectionKind::Errors),
        sections.get(&SectionKind::Errors)
    );
}

#[test]
fn embedded_checkpoint_items_are_folded_and_foreign_summaries_kept() {
    let foreign = Checkpoint {
        text: "The user is migrating the billing service to Postgres.\nSchema done; data copy pending.".into(),
        generation: 1,
        covers: vec![ItemId::new("old1")],
        ..Checkpoint::default()
    };
    let mut items = vec![Item::new(ItemBody::Checkpoint(foreign)).with_id("cp")];
    items.extend(session());
    let cp = build(&items, None, &options(4_000));
    assert_eq!(cp.generation, 2);
    assert!(cp.text.contains("## Earlier record"));
    assert!(cp
        .text
        .contains("- The user is migrating the billing service to Postgres."));
    assert_eq!(cp.covers[0].as_str(), "old1");
}

#[test]
fn deterministic_and_empty() {
    let a = build(&session(), None, &options(4_000));
    let b = build(&session(), None, &options(4_000));
    assert_eq!(a, b);
    let empty = build(&[], None, &options(1_000));
    assert!(empty.text.starts_with(TITLE));
    assert_eq!(empty.generation, 1);
}

mod budget_property {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Any budget is respected; from a few hundred tokens on the failures keep their floor.
        #[test]
        fn respects_any_reasonable_budget(max in 0usize..1_500, split in 1usize..28) {
            let items = session();
            let counter = TokenCounter::new(Encoding::O200kBase);
            let cp = build(&items, None, &options(max));
            prop_assert!(counter.count_text(&cp.text) <= max, "{}", cp.text);
            if max >= 450 {
                prop_assert!(
                    section(&cp.text, "Errors and failed approaches").contains("\n- `cargo test"),
                    "{}",
                    cp.text
                );
            }
            // Folding in a previous checkpoint gives a record within budget too.
            let first = build(&items[..split], None, &options(max));
            let second = build(&items[split..], Some(&first), &options(max));
            prop_assert!(counter.count_text(&second.text) <= max);
            prop_assert_eq!(second.generation, 2);
        }

        /// Any previous text, however it is shaped (headings, fences, bullets, stray markup), folds
        /// in without a panic and within the budget.
        #[test]
        fn any_previous_text_folds_within_budget(
            previous in "[#*`~ a-zA-Z0-9:.()/\\[\\]\n-]{0,600}",
            max in 0usize..800,
        ) {
            let counter = TokenCounter::new(Encoding::O200kBase);
            let prev = Checkpoint { text: previous, generation: 1, ..Checkpoint::default() };
            let cp = build(&session()[..6], Some(&prev), &options(max));
            prop_assert!(counter.count_text(&cp.text) <= max, "{}", cp.text);
            let again = build(&[], Some(&cp), &options(max));
            prop_assert!(counter.count_text(&again.text) <= max, "{}", again.text);
        }
    }
}

fn fixture(name: &str) -> Vec<Item> {
    let path = format!(
        "{}/tests/fixtures/checkpoint/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    dsl::parse(&std::fs::read_to_string(path).unwrap()).items
}

/// The body of a section as written (empty when the section is absent).
fn section<'a>(text: &'a str, title: &str) -> &'a str {
    let Some(start) = text.find(&format!("## {title}\n")) else {
        return "";
    };
    let body = &text[start..];
    let end = body[3..].find("\n## ").map_or(body.len(), |e| e + 3);
    &body[..end]
}

#[test]
fn warnings_on_success_and_start_up_noise_are_not_failures() {
    let cp = build(&fixture("noisy.txt"), None, &options(4_000));
    let errors = section(&cp.text, "Errors and failed approaches");
    // One real failure, three runs merged, resolved by the fourth run.
    assert_eq!(errors.matches("\n- ").count(), 1, "{}", cp.text);
    assert!(
        errors.contains(
            "- `bash scripts/test_deploy.sh` (exit 1 ×3): FAIL: dry run still uploads (expected 0 uploads, got 1) — then: The upload runs before the flag is read; I'll move the check to the top of upload(). — resolved by a later run"
        ),
        "{errors}"
    );
    // Not failures: the shell's start-up complaint, the hook's deprecation warning on a commit that
    // succeeded, an error line in a polled log.
    assert!(!cp.text.contains("parse error near"), "{}", cp.text);
    assert!(!errors.contains("git commit"), "{errors}");
    assert!(!errors.contains("deploy.log"), "{errors}");
    assert!(
        cp.text
            .contains("- scripts/deploy.sh — modified; last: + [ \"$DRY_RUN\" = 1 ] && return 0"),
        "{}",
        cp.text
    );
}

#[test]
fn a_claude_code_summary_is_parsed_into_sections_and_merged() {
    let summary = Checkpoint {
        text: include_str!("fixtures/checkpoint/claude_summary.md").to_owned(),
        generation: 1,
        covers: vec![ItemId::new("old1"), ItemId::new("old2")],
        ..Checkpoint::default()
    };
    let mut items = vec![Item::new(ItemBody::Checkpoint(summary)).with_id("cc")];
    items.extend(fixture("after_summary.txt"));
    let cp = build(&items, None, &options(4_000));
    let text = &cp.text;
    assert_eq!(cp.generation, 2);
    assert_eq!(text.matches(TITLE).count(), 1);
    // The original task (the summary's primary request) comes first, then the new request.
    let goal = section(text, "Goal and user requests");
    let original = goal
        .find("The user asked for a CSV export of the invoices table")
        .unwrap_or_else(|| panic!("{text}"));
    let new = goal
        .find("Now add the empty-table test")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(original < new, "{goal}");
    assert!(
        goal.contains("\"Also handle commas inside fields\""),
        "{goal}"
    );
    // Files merged by path: one entry for export.py, the new state first, the summary's note after;
    // its code block intact, never bulleted.
    let files = section(text, "Files modified");
    assert_eq!(files.matches("- report/export.py").count(), 1, "{files}");
    assert!(
        files.contains("- report/export.py — modified; last: + count = 0; earlier: New module holding the streaming CSV writer [i3]"),
        "{files}"
    );
    assert!(
        files.contains("```python\ndef write_rows(cursor, out):\n    - this line starts with a dash inside code\n    for row in cursor:\n        out.write(row)\n```"),
        "{files}"
    );
    assert!(!text.contains("- ```"), "{text}");
    assert!(
        files.contains("- tests/test_export.py — created"),
        "{files}"
    );
    assert!(
        section(text, "Files read").contains("- report/db.py — `open_cursor()` yields rows lazily"),
        "{text}"
    );
    assert!(
        section(text, "Errors and failed approaches")
            .contains("Quoting bug: fields holding commas"),
        "{text}"
    );
    // Where work stopped is the new one; the summary's "current work" and "next step" are gone, its
    // open task kept apart as possibly done.
    let state = section(text, "Current state and next steps");
    assert!(
        state.contains("[ ] Document --format csv in the README"),
        "{state}"
    );
    assert!(!text.contains("Writing the quoting helper"), "{text}");
    assert!(
        !text.contains("Run the test suite after the quoting fix"),
        "{text}"
    );
    assert!(
        text.contains("### Open items of an earlier summary (check whether still open)\n- Add a test for an empty table"),
        "{text}"
    );
    assert!(
        text.contains("### Key Technical Concepts\n- Streaming writer over a database cursor"),
        "{text}"
    );
    // The summary's scratch analysis and the harness's framing are not carried.
    assert!(!text.contains("Going through the conversation"), "{text}");
    assert!(!text.contains("Please continue the conversation"), "{text}");
    assert!(!text.contains("This session is being continued"), "{text}");
    // Folding again keeps the code block intact and the record single.
    let again = build(&[], Some(&cp), &options(4_000));
    assert!(
        again
            .text
            .contains("```python\ndef write_rows(cursor, out):\n    - this line starts"),
        "{}",
        again.text
    );
    assert_eq!(again.text.matches("## Files modified").count(), 1);
}

/// A long session: 30 distinct failures, 12 files, 6 requests, a plan.
fn busy_session() -> Vec<Item> {
    use std::fmt::Write as _;
    let mut s = String::new();
    for r in 0..6 {
        let _ = writeln!(s, "@user\nRequest number {r}: change module {r} so that it handles the new config key and keep the old behaviour behind a flag.");
        for k in 0..5 {
            let n = r * 5 + k;
            let _ = writeln!(s, "@call b{n} Bash\n{{\"command\": \"./check.sh --case {n}\"}}\n@result b{n} error\nExit code 2\nerror: case {n} failed: expected value {n} but the parser returned nothing at all");
        }
        for f in 0..2 {
            let n = r * 2 + f;
            let _ = writeln!(s, "@call e{n} Edit\n{{\"file_path\": \"src/module_{n}.rs\", \"old_string\": \"old\", \"new_string\": \"pub fn handler_{n}() {{}}\"}}\n@result e{n}\nThe file src/module_{n}.rs has been updated.");
        }
    }
    s.push_str("@call t1 TodoWrite\n{\"todos\": [{\"content\": \"Fix the parser for empty values\", \"status\": \"in_progress\"}, {\"content\": \"Re-run ./check.sh for every case\", \"status\": \"pending\"}]}\n@result t1\nok\n@assistant\nThe parser drops empty values; fixing that next.\n");
    dsl::parse(&s).items
}

#[test]
fn floors_hold_under_a_tight_budget() {
    let items = busy_session();
    let counter = TokenCounter::new(Encoding::O200kBase);
    for max in [900, 1_200, 1_700] {
        let cp = build(&items, None, &options(max));
        let text = &cp.text;
        assert!(counter.count_text(text) <= max, "{max}");
        // Every section with facts shows some of them; none is only a placeholder.
        for title in [
            "Goal and user requests",
            "Files modified",
            "Errors and failed approaches",
            "Current state and next steps",
        ] {
            let body = section(text, title);
            assert!(body.contains("\n- "), "{title} at {max}:\n{text}");
        }
        // Failures do not crowd out the rest: they take at most half of the text unless everything
        // else is shown whole.
        let errors = section(text, "Errors and failed approaches");
        let others_whole = text.replace(errors, "").matches("not shown").count() == 0;
        assert!(
            counter.count_text(errors) * 2 <= max || others_whole,
            "{max}: errors take {} tokens:\n{text}",
            counter.count_text(errors)
        );
        // The original task, the latest request, the open steps and where work stopped are kept.
        assert!(text.contains("Request number 0"), "{text}");
        assert!(text.contains("Request number 5"), "{text}");
        assert!(
            text.contains("[>] Fix the parser for empty values"),
            "{text}"
        );
        assert!(
            text.contains("Last assistant message: The parser drops empty values"),
            "{text}"
        );
        // The newest failure is there.
        assert!(text.contains("case 29 failed"), "{max}:\n{text}");
    }
}

#[test]
fn max_tokens_is_never_exceeded() {
    let counter = TokenCounter::new(Encoding::O200kBase);
    let summary = Checkpoint {
        text: include_str!("fixtures/checkpoint/claude_summary.md").to_owned(),
        generation: 1,
        ..Checkpoint::default()
    };
    let busy = busy_session();
    let after = fixture("after_summary.txt");
    for max in [
        0, 1, 10, 50, 80, 120, 200, 333, 500, 777, 1_000, 2_500, 6_000,
    ] {
        for (items, previous) in [
            (&busy[..], None),
            (&after[..], Some(&summary)),
            (&session()[..], None),
        ] {
            let cp = build(items, previous, &options(max));
            assert!(
                counter.count_text(&cp.text) <= max,
                "{max}: {} tokens\n{}",
                counter.count_text(&cp.text),
                cp.text
            );
        }
    }
}

#[test]
fn cited_ids_are_short_and_found_again() {
    use compact_core::model::{Conversation, Role};
    let mut conv = Conversation::default();
    for id in [
        "e2855f62-6fbf-4652-bbea-b905050f3fa1",
        "e2855f62-6fbf-4652-bbea-b905050f3fa1.1",
        "0badc0de-0000-4000-8000-000000000001",
        "0badc0de-0000-4000-8000-000000000002",
    ] {
        conv.push(Item::text(Role::User, "x").with_id(id));
    }
    let first = &conv.items[0].meta.id;
    assert_eq!(first.cited(), "e2855f62");
    assert_eq!(conv.items[1].meta.id.cited(), "e2855f62.1");
    assert_eq!(conv.find_cited("e2855f62").map(|i| &i.meta.id), Some(first));
    assert_eq!(
        conv.find_cited("e2855f62.1").map(|i| i.meta.id.as_str()),
        Some("e2855f62-6fbf-4652-bbea-b905050f3fa1.1")
    );
    // Two records share the short form: ambiguous, not guessed.
    assert!(conv.find_cited("0badc0de").is_none());
    assert!(conv
        .find_cited("0badc0de-0000-4000-8000-000000000002")
        .is_some());
}

/// Many reads of files whose content uses names beyond what they define, then many failures.
fn reads_session(files: usize) -> Vec<Item> {
    dsl::parse(&reads_text(files)).items
}

fn reads_text(files: usize) -> String {
    use std::fmt::Write as _;
    let mut s = String::from("@user\nFind why the ledger totals drift and fix it.\n");
    for n in 0..files {
        let _ = writeln!(
            s,
            "@call r{n} Read\n{{\"file_path\": \"src/ledger_{n}.rs\"}}\n@result r{n}\n     1\tpub fn total_{n}(rows: &[Row]) -> i64 {{\n     2\t    let posting_sum_{n} = rows.iter().map(|r| r.amount_cents).sum();\n     3\t    apply_fee_{n}(posting_sum_{n})\n     4\t}}"
        );
    }
    for n in 0..8 {
        let _ = writeln!(s, "@call b{n} Bash\n{{\"command\": \"cargo test ledger_{n}\"}}\n@result b{n} error\nExit code 101\nerror: totals drift by {n} cents in ledger_{n}");
    }
    s
}

#[test]
fn the_names_a_read_file_used_take_only_the_room_left() {
    let items = reads_session(3);
    // Room to spare: each file read also lists the names its content used beyond its definitions.
    let roomy = build(&items, None, &options(4_000)).text;
    let read = section(&roomy, "Files read");
    assert!(
        read.contains("src/ledger_1.rs; symbols: total_1()"),
        "{read}"
    );
    assert!(
        read.contains("Names used in src/ledger_1.rs: posting_sum_1, amount_cents, apply_fee_1"),
        "{read}"
    );
    // A tight budget: those details are the first to go; the files, the request and the failures stay.
    let tight_budget = build(&items, None, &options(340));
    let tight = &tight_budget.text;
    assert!(!tight.contains("Names used in"), "{tight}");
    for n in 0..3 {
        assert!(tight.contains(&format!("src/ledger_{n}.rs")), "{tight}");
    }
    assert!(
        tight.contains("Find why the ledger totals drift"),
        "{tight}"
    );
    assert!(tight.contains("totals drift by 7 cents"), "{tight}");
    // Folded into the next record, a detail stays a detail: it goes before the facts again.
    let mut later = items.clone();
    later.push(Item::new(ItemBody::Checkpoint(build(
        &items,
        None,
        &options(4_000),
    ))));
    later.extend(reads_session(0).into_iter().skip(1));
    let folded = build(&later[items.len()..], None, &options(340)).text;
    assert!(!folded.contains("Names used in"), "{folded}");
    assert!(folded.contains("src/ledger_2.rs"), "{folded}");
}

#[test]
fn a_detail_never_takes_the_place_of_a_file_or_a_failure() {
    // Whatever the budget: when any "names used" detail is in, every file and every failure is.
    let items = reads_session(6);
    let mut seen_details = false;
    for budget in (200..1400).step_by(20) {
        let t = build(&items, None, &options(budget)).text;
        if !t.contains("Names used in") {
            continue;
        }
        seen_details = true;
        for n in 0..6 {
            assert!(t.contains(&format!("- src/ledger_{n}.rs")), "{budget}: {t}");
        }
        for n in 0..8 {
            assert!(t.contains(&format!("drift by {n} cents")), "{budget}: {t}");
        }
    }
    assert!(seen_details);
}

#[test]
fn a_modified_file_keeps_the_names_its_read_showed() {
    let text = reads_text(1)
        + "@call e1 Edit\n{\"file_path\": \"src/ledger_0.rs\", \"old_string\": \"x\", \"new_string\": \"y\"}\n@result e1\nThe file src/ledger_0.rs has been updated.\n";
    let items = dsl::parse(&text).items;
    let text = build(&items, None, &options(4_000)).text;
    let modified = section(&text, "Files modified");
    assert!(
        modified
            .contains("Names used in src/ledger_0.rs: posting_sum_0, amount_cents, apply_fee_0"),
        "{modified}"
    );
}

/// Twenty failures of long commands with long error lines: more than a tight budget holds whole.
fn long_failures_session() -> Vec<Item> {
    use std::fmt::Write as _;
    let mut s =
        String::from("@user\nRun the nightly integration shards and report which ones fail.\n");
    for n in 0..20 {
        let _ = writeln!(
            s,
            "@call f{n} Bash\n{{\"command\": \"{}\"}}\n@result f{n} error\nExit code 1\n{}",
            long_command(n),
            long_error(n)
        );
    }
    s.push_str(
        "@assistant\nEvery shard fails on the database connection; checking the pool next.\n",
    );
    dsl::parse(&s).items
}

fn long_command(n: usize) -> String {
    format!(
        "./tools/run-integration-suite.sh --profile nightly --shard {n:02} --retries 3 --verbose"
    )
}

fn long_error(n: usize) -> String {
    format!("error: shard {n:02} failed because the integration database refused the connection after three retries (host db-{n:02}.internal, port 5432, pool exhausted)")
}

/// The first `n` characters of `s`, without trailing spaces (a cut drops them).
fn start(s: &str, n: usize) -> String {
    s.chars().take(n).collect::<String>().trim_end().to_owned()
}

#[test]
fn shortened_failures_keep_the_start_of_their_command_and_error_line() {
    let items = long_failures_session();
    let counter = TokenCounter::new(Encoding::O200kBase);
    let full = build(&items, None, &options(100_000)).text;
    // With room, every failure is whole.
    for n in 0..20 {
        assert!(full.contains(&long_command(n)), "{n}:\n{full}");
        assert!(full.contains(&long_error(n)), "{n}:\n{full}");
    }
    let mut shortened = 0;
    for max in [600, 900, 1_300] {
        let text = build(&items, None, &options(max)).text;
        assert!(counter.count_text(&text) <= max, "{max}");
        let errors = section(&text, "Errors and failed approaches");
        let shown: Vec<&str> = errors.lines().filter(|l| l.starts_with("- `")).collect();
        assert!(!shown.is_empty(), "{max}:\n{text}");
        for line in shown {
            // Whatever was cut, the entry still says which command failed and why: the start of
            // both is there whole.
            let n = (0..20)
                .find(|&n| line.contains(&start(&long_command(n), 72)))
                .unwrap_or_else(|| panic!("{max}: no command start in {line}"));
            assert!(
                line.contains(&start(&long_error(n), 72)),
                "{max}: error line cut short in {line}"
            );
            if !line.contains(&long_error(n)) {
                shortened += 1;
                // A shortened entry spends its room on the text: it cites its latest item only.
                let cites = &line[line.rfind(" [").unwrap()..];
                assert!(!cites.contains(','), "{max}: {line}");
            }
        }
    }
    assert!(shortened > 0, "some budget shortens an entry");
}

/// `leaves_out` tells a record that had more to say than its budget (an omission note, or the line
/// naming sections left out entirely) from one that holds everything its sections had.
#[test]
fn a_record_says_whether_it_left_entries_out() {
    use compact_core::checkpoint::leaves_out;
    let items = busy_session();
    let tight = build(&items, None, &options(900)).text;
    assert!(leaves_out(&tight), "{tight}");
    let whole = build(&items, None, &options(100_000)).text;
    assert!(!leaves_out(&whole), "{whole}");
    assert!(leaves_out(
        "# Record\n\n(Not shown for space: commands run (3).)"
    ));
    assert!(!leaves_out(
        "# Record\n## Errors and failed approaches\n- `x` (exit 1): not shown"
    ));
}

/// A skill loaded during the span is named in the record (one short entry), so an agent resuming
/// knows it was in force and where to read it again.
#[test]
fn a_loaded_skill_is_named_in_the_record() {
    let mut items = dsl::parse(
        "@user\nDesign the export command.\n@user\nBase directory for this skill: /home/u/.claude/skills/brainstorming\n\n# Brainstorming\nAlways ask one question at a time.\n@assistant\nI'll start with the data model.\n",
    )
    .items;
    items[1].meta.visibility.user = false;
    let cp = build(&items, None, &options(4_000));
    assert!(
        cp.text.contains(
            "- Loaded: Base directory for this skill: /home/u/.claude/skills/brainstorming ["
        ),
        "{}",
        cp.text
    );
}

/// A request the user stopped says so, in the record that holds the stop and in the fold after a
/// record that held the request still in progress; the note itself is no request.
#[test]
fn a_request_the_user_stopped_says_so() {
    let items = dsl::parse(
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
@call c2 Bash
{"command": "cargo test -p parser"}
@result c2
test result: ok. 12 passed
@assistant
All 12 parser tests pass.
"#,
    )
    .items;
    let cp = build(&items, None, &options(4_000));
    let goal = section(&cp.text, "Goal and user requests");
    assert!(
        goal.contains("[interrupted by the user] \"Run the whole test suite.\""),
        "{goal}"
    );
    assert!(
        goal.contains("[done] \"Only the parser's tests, please.\""),
        "{goal}"
    );
    assert!(!goal.contains("[Request interrupted"), "{goal}");

    // The stop falls in the next span: the earlier record's request, in progress, is the one stopped.
    let (first, second) = items.split_at(2);
    let cp1 = build(first, None, &options(4_000));
    assert!(
        section(&cp1.text, "Goal and user requests")
            .contains("[in progress] \"Run the whole test suite.\""),
        "{}",
        cp1.text
    );
    let cp2 = build(second, Some(&cp1), &options(4_000));
    let goal = section(&cp2.text, "Goal and user requests");
    assert!(
        goal.contains("[interrupted by the user] \"Run the whole test suite.\""),
        "{goal}"
    );
    assert!(
        goal.contains("[done] \"Only the parser's tests, please.\""),
        "{goal}"
    );
    // A finished request is not rewritten by a later stop.
    let done = build(&items, None, &options(4_000));
    let tail = dsl::parse("@user\n[Request interrupted by user]\n").items;
    let after = build(&tail, Some(&done), &options(4_000));
    assert!(
        section(&after.text, "Goal and user requests")
            .contains("[done] \"Only the parser's tests, please.\""),
        "{}",
        after.text
    );
}

#[test]
fn a_request_typed_after_the_note_in_the_same_message_is_kept() {
    let items = dsl::parse(
        r#"
@user
Run the whole test suite.
@call c1 Bash
{"command": "cargo test --workspace"}
@result c1 error
Exit code 137
[Request interrupted by user for tool use]
@user
[Request interrupted by user]

Only the parser's tests, please.
@call c2 Bash
{"command": "cargo test -p parser"}
"#,
    )
    .items;
    let cp = build(&items, None, &options(4_000));
    let goal = section(&cp.text, "Goal and user requests");
    assert!(
        goal.contains("[interrupted by the user] \"Run the whole test suite.\""),
        "{goal}"
    );
    assert!(
        goal.contains("[in progress] \"Only the parser's tests, please.\""),
        "{goal}"
    );

    // In the next span, the stop marks the earlier record's request and the new one is kept.
    let (first, second) = items.split_at(3);
    let cp1 = build(first, None, &options(4_000));
    let cp2 = build(second, Some(&cp1), &options(4_000));
    let goal = section(&cp2.text, "Goal and user requests");
    assert!(
        goal.contains("[interrupted by the user] \"Run the whole test suite.\""),
        "{goal}"
    );
    assert!(goal.contains("Only the parser's tests, please."), "{goal}");
}
