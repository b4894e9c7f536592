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
    assert!(
        text.contains(
            "`cargo test -p auth 2>&1 | tail -5` (2 runs, last: exit 0) [i12, i13, i19, i20]"
        ),
        "{text}"
    );
    assert!(text.contains("error[E0004]"), "{text}");
    assert!(
        text.contains("- crates/auth/tests/login_malformed.rs [i25]"),
        "{text}"
    );
    // Every entry cites its sources.
    for line in text.lines().filter(|l| l.starts_with("- ")) {
        assert!(line.ends_with(']'), "entry without citation: {line}");
    }
    assert!(TokenCounter::new(Encoding::O200kBase).count_text(text) <= 4_000);
}

#[test]
fn tight_budgets_drop_low_priority_sections_but_never_errors() {
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
        assert!(cp.text.contains("## Errors and failed approaches"));
        assert!(
            cp.text.contains("error[E0004]"),
            "budget {max}: errors kept:\n{}",
            cp.text
        );
        assert!(
            cp.text.contains("[done] \"The /login endpoint"),
            "budget {max}: goal kept"
        );
    }
    let small = build(&session(), None, &options(420));
    assert!(small.text.contains("omitted)"), "{}", small.text);
    assert!(
        !small.text.contains("- crates/auth/src/session.rs"),
        "files read go first:\n{}",
        small.text
    );
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
    assert_eq!(cp2.text.matches("## Goal and user requests").count(), 1);
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

        /// Any budget that can hold the header, the errors and the latest request is respected, and
        /// the errors survive.
        #[test]
        fn respects_any_reasonable_budget(max in 330usize..1_500, split in 1usize..28) {
            let items = session();
            let counter = TokenCounter::new(Encoding::O200kBase);
            let cp = build(&items, None, &options(max));
            prop_assert!(counter.count_text(&cp.text) <= max, "{}", cp.text);
            prop_assert!(cp.text.contains("error[E0004]"));
            // Folding in a previous checkpoint gives a record within budget too.
            let first = build(&items[..split], None, &options(max));
            let second = build(&items[split..], Some(&first), &options(max));
            prop_assert!(counter.count_text(&second.text) <= max);
            prop_assert_eq!(second.generation, 2);
        }
    }
}
