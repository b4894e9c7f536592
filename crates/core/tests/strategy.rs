//! Strategy tests: golden snapshots of every strategy on readable fixtures (regenerate with
//! `UPDATE_SNAPSHOTS=1`), and the invariants every plan must keep.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::budget::Budget;
use compact_core::model::Conversation;
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::plan::Plan;
use compact_core::policy::{Policy, StrategyName};
use compact_core::strategy::{plan, StrategyError};
use compact_core::tokens::{Encoding, TokenCounter};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/strategy"
    ))
}

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

/// Renders a compacted conversation one item per line (text clipped) for snapshots.
fn render(conv: &Conversation) -> String {
    let mut out = String::new();
    for item in &conv.items {
        let text = item.plain_text().replace('\n', " ⏎ ");
        let clipped: String = text.chars().take(100).collect();
        out.push_str(&format!(
            "{:<12} {:<12} {}\n",
            item.meta.id.as_str(),
            item.kind().as_str(),
            clipped
        ));
    }
    out
}

fn snapshot(name: &str, actual: &str) {
    let path = dir().join(format!("{name}.snap"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let Ok(expected) = std::fs::read_to_string(&path) else {
        panic!(
            "snapshot {} is missing (UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        );
    };
    assert_eq!(
        expected,
        actual,
        "snapshot {} differs (UPDATE_SNAPSHOTS=1 to regenerate)",
        path.display()
    );
}

fn apply(plan: &Plan, conv: &Conversation) -> Conversation {
    let text = plan.checkpoint.as_ref().map(|c| {
        c.fixed_text
            .clone()
            .unwrap_or_else(|| "<summary>".to_owned())
    });
    plan.apply(conv, text.as_deref()).unwrap()
}

#[test]
fn snapshots_per_strategy() {
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "conv"))
        .collect();
    fixtures.sort();
    assert!(!fixtures.is_empty());
    for path in fixtures {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let src = std::fs::read_to_string(&path).unwrap();
        let (window, body) = src.split_once('\n').unwrap();
        let window: usize = window
            .trim_start_matches("# window ")
            .trim()
            .parse()
            .expect("first line: # window N");
        let conv = fixture::parse(body);
        let policy = Policy {
            keep_recent_turns: 2,
            keep_tool_io_pairs: 2,
            ..Policy::for_window(window)
        };
        let budget = Budget::new(&policy);
        for &name in StrategyName::ALL {
            let out = match plan(name, &conv, &budget, &policy, &counter()) {
                Ok(p) => {
                    let applied = apply(&p, &conv);
                    assert!(
                        normalize(&applied, &ProviderRules::OpenAiChat)
                            .diagnostics
                            .is_empty(),
                        "{stem}/{name}"
                    );
                    format!(
                        "{p}\n--- after ({} tokens)\n{}",
                        counter().total(&applied),
                        render(&applied)
                    )
                }
                Err(e) => format!("error: {e}\n"),
            };
            snapshot(&format!("{stem}.{name}"), &out);
        }
    }
}

#[test]
fn tiered_reaches_target_and_keeps_pairs() {
    let conv = fixture::session(7, 60, 40);
    let c = counter();
    let before = c.total(&conv);
    // A third of its size: references alone cannot reach the target, so tier 2 must summarise.
    let policy = Policy::for_window(before / 3);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    let applied = apply(&p, &conv);
    let after = c.total(&applied);
    assert!(after <= budget.target + 64, "{after} > {}", budget.target);
    assert_eq!(applied.pairing().orphan_count(), 0);
    assert!(p.tiers_applied().contains(&2));
}

#[test]
fn insufficient_budget_is_typed() {
    let mut conv = fixture::session(3, 4, 4);
    let huge = "system rule ".repeat(3_000);
    conv.items[0] = compact_core::model::Item::text(compact_core::model::Role::System, huge);
    let policy = Policy::for_window(2_048);
    let budget = Budget::new(&policy);
    match plan(StrategyName::Tiered, &conv, &budget, &policy, &counter()) {
        Err(StrategyError::InsufficientBudget {
            floor,
            budget: b,
            breakdown,
        }) => {
            assert!(floor > b);
            assert!(breakdown.pinned > b, "{breakdown}");
        }
        other => panic!("expected InsufficientBudget, got {other:?}"),
    }
}

#[test]
fn a_plan_never_grows_the_request() {
    // Found by the property test: on a tiny history, cfpm's memory block cost more than the four
    // items it replaced. The strategy runner keeps the request unchanged instead.
    let conv = normalize(&fixture::session(2380, 2, 1), &ProviderRules::OpenAiChat).conversation;
    let c = counter();
    let before = c.total(&conv);
    let policy = Policy::for_window(2_048);
    let budget = Budget::new(&policy);
    for &name in StrategyName::ALL {
        let p = plan(name, &conv, &budget, &policy, &c).unwrap();
        let after = c.total(&apply(&p, &conv));
        assert!(after <= before, "{name}: {before} -> {after}");
    }
    let p = plan(StrategyName::Cfpm, &conv, &budget, &policy, &c).unwrap();
    assert!(p.is_noop(), "{p}");
    assert!(
        p.notes.iter().any(|n| n.contains("would not shrink")),
        "{p}"
    );
}
