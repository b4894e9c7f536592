//! `compactctl plan` and `compactctl diff` on the bundled example.

use crate::support::{inspect, run};

const EXAMPLE: &str = "examples/session.json";
const ESC: char = '\x1b';

/// Item ids of the example, in order, as the library assigns them (content ids: the example's
/// messages carry no ids of their own).
fn example_ids() -> Vec<String> {
    let bytes = std::fs::read(crate::support::root().join(EXAMPLE)).unwrap();
    let imported = compact_formats::import::import(
        &bytes,
        EXAMPLE,
        &compact_formats::ImportOptions::default(),
    )
    .unwrap();
    let ids: Vec<String> = imported
        .conversation
        .items
        .iter()
        .map(|i| i.meta.id.as_str().to_owned())
        .collect();
    assert_eq!(
        ids.len() as u64,
        inspect(EXAMPLE, &[])["items"].as_u64().unwrap()
    );
    ids
}

#[test]
fn plan_shows_tokens_before_after_and_tiers() {
    let before = inspect(EXAMPLE, &[])["tokens"]["total"].as_u64().unwrap();
    let out = run(&["plan", EXAMPLE, "--window", "6000"]).ok();
    assert!(
        out.stdout.contains(&format!("{before} -> ")),
        "{}",
        out.stdout
    );
    for tier in ["tier 0", "tier 1", "tier 2"] {
        assert!(out.stdout.contains(tier), "no {tier}:\n{}", out.stdout);
    }
    // Every item has its row, by index and id.
    for (i, id) in example_ids().iter().enumerate() {
        let row = out.stdout.lines().any(|l| {
            let mut f = l.split_whitespace();
            f.next() == Some(&i.to_string()) && f.next() == Some(id.as_str())
        });
        assert!(row, "no row for item {i} ({id})");
    }
}

#[test]
fn diff_lists_every_item_and_colours_on_request() {
    let plain = run(&["diff", EXAMPLE, "--window", "6000", "--color", "never"]).ok();
    assert!(!plain.stdout.contains(ESC), "ANSI codes with --color never");
    for id in example_ids() {
        let rows = plain
            .stdout
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(id.as_str()))
            .count();
        assert_eq!(rows, 1, "item {id} appears {rows} times");
    }
    for action in ["keep", "summarize"] {
        assert!(
            plain.stdout.contains(action),
            "no {action} in:\n{}",
            plain.stdout
        );
    }
    assert!(
        plain.stdout.contains("checkpoint generation 1"),
        "{}",
        plain.stdout
    );
    let coloured = run(&["diff", EXAMPLE, "--window", "6000", "--color", "always"]).ok();
    assert!(
        coloured.stdout.contains("\x1b["),
        "no ANSI codes with --color always"
    );
    // Piped output with the default `auto` stays plain.
    let auto = run(&["diff", EXAMPLE, "--window", "6000"]).ok();
    assert!(!auto.stdout.contains(ESC));
}

#[test]
fn diff_with_nothing_to_do_says_so_like_plan() {
    // The example fits a large window: the plan changes nothing.
    let plan = run(&["plan", EXAMPLE, "--window", "200000"]).ok();
    assert!(plan.stdout.contains("nothing to do"), "{}", plan.stdout);
    let out = run(&["diff", EXAMPLE, "--window", "200000", "--color", "never"]).ok();
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let last = out.stdout.lines().last().unwrap_or_default();
    assert!(last.starts_with("nothing to do: "), "{}", out.stdout);
    assert!(last.contains("tiered"), "{last}");
    // Every item is listed, kept.
    let ids = example_ids();
    let rows: Vec<&str> = out.stdout.lines().filter(|l| l.starts_with("= ")).collect();
    assert_eq!(rows.len(), ids.len(), "{}", out.stdout);
    assert!(rows.iter().all(|r| r.contains(" keep ")), "{}", out.stdout);
    assert!(
        !out.stdout.contains("checkpoint generation"),
        "{}",
        out.stdout
    );
}
