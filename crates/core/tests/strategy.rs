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

/// A tool-using session in which every call comes after a block of the model's reasoning.
fn reasoning_session(runs: usize, responses_ids: bool) -> Conversation {
    use compact_core::model::{Format, Item, ItemBody, Reasoning, Role};
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a coding agent."));
    conv.push(Item::text(Role::User, "Find why the parser drops rows."));
    for k in 0..runs {
        conv.push(Item::new(ItemBody::Reasoning(Reasoning {
            text: Some(format!("Thinking about step {k}: ") + &"weigh the options ".repeat(60)),
            summary: Vec::new(),
            signature: Some(format!("sig{k}")),
            encrypted: None,
            redacted: false,
            extra: Default::default(),
        })));
        let mut call = fixture::call(&format!("c{k}"), "bash", r#"{"command": "cargo test"}"#);
        if responses_ids {
            call.meta.origin = Some(Format::OpenAiResponses);
            if let ItemBody::ToolCall(c) = call.body_mut() {
                c.extra.insert("id".into(), format!("fc_{k}").into());
            }
        }
        conv.push(call);
        conv.push(fixture::result(
            &format!("c{k}"),
            "bash",
            &"test output line\n".repeat(40),
            false,
        ));
    }
    conv
}

/// Tiered's plan of a 12-run reasoning session at 90% of its size, with the reversible stage as
/// given, and the reasoning items' plans (the last run's last).
fn reasoning_plan(
    reversible: compact_core::policy::ReversibleMode,
) -> (Plan, Vec<compact_core::plan::ItemPlan>) {
    use compact_core::model::ItemKind;
    let conv = reasoning_session(12, false);
    let c = counter();
    let mut policy = Policy::for_window(c.total(&conv) * 9 / 10);
    policy.reversible = reversible;
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    let reasoning = p
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Reasoning)
        .cloned()
        .collect();
    (p, reasoning)
}

#[test]
fn tiered_drops_the_reasoning_of_finished_runs_and_keeps_the_last() {
    use compact_core::model::ItemKind;
    use compact_core::plan::{Action, Tier};
    use compact_core::policy::ReversibleMode;
    let (p, reasoning) = reasoning_plan(ReversibleMode::On);
    let (last, earlier) = reasoning.split_last().unwrap();
    assert_eq!(last.action, Action::Keep, "{p}");
    // The reversible stage drops them first (both providers discard them themselves).
    assert!(
        earlier
            .iter()
            .all(|i| i.action == Action::Drop && i.tier == Some(Tier::Reversible)),
        "{p}"
    );
    // The stage's record counts them.
    let record = p
        .tiers
        .iter()
        .find(|t| t.note.contains("reasoning of finished assistant runs"))
        .expect("the drop is recorded");
    assert_eq!(record.items, earlier.len(), "{p}");
    // Only reasoning is dropped this way: every call and result is still there or referenced.
    assert!(
        p.items
            .iter()
            .filter(|i| i.kind != ItemKind::Reasoning)
            .all(|i| i.action != Action::Drop),
        "{p}"
    );
}

#[test]
fn with_the_reversible_stage_off_tier_0_drops_the_reasoning_of_finished_runs() {
    use compact_core::plan::{Action, Tier};
    use compact_core::policy::ReversibleMode;
    let (p, reasoning) = reasoning_plan(ReversibleMode::Off);
    let (last, earlier) = reasoning.split_last().unwrap();
    assert_eq!(last.action, Action::Keep, "{p}");
    assert!(
        earlier
            .iter()
            .all(|i| i.action == Action::Drop && i.tier == Some(Tier::Truncate)),
        "{p}"
    );
    assert_eq!(p.reversible_saved(), 0, "{p}");
}

#[test]
fn a_responses_run_naming_wire_ids_keeps_its_reasoning() {
    use compact_core::plan::{Action, Tier};
    // Responses rejects an item whose reasoning item is missing: with ids, no reasoning is dropped
    // on its own (a run summarised whole takes its call along).
    let conv = reasoning_session(12, true);
    let c = counter();
    let policy = Policy::for_window(c.total(&conv) * 9 / 10);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    // Neither by the reversible stage (on by default) nor by tier 0.
    assert!(
        !p.items.iter().any(|i| i.action == Action::Drop
            && matches!(i.tier, Some(Tier::Reversible | Tier::Truncate))),
        "{p}"
    );
    assert!(
        !p.tiers
            .iter()
            .any(|t| t.note.contains("reasoning of finished assistant runs")),
        "{p}"
    );
}

#[test]
fn a_responses_message_without_a_wire_id_does_not_keep_its_run_s_reasoning() {
    use compact_core::model::{Format, ItemKind};
    use compact_core::plan::Action;
    // Responses items without an `id`: nothing refers to the reasoning, so it goes as in Chat.
    let mut conv = reasoning_session(12, false);
    for item in &mut conv.items {
        if item.role() == compact_core::model::Role::Assistant {
            item.meta.origin = Some(Format::OpenAiResponses);
        }
    }
    let c = counter();
    let policy = Policy::for_window(c.total(&conv) * 9 / 10);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    let reasoning: Vec<_> = p
        .items
        .iter()
        .filter(|i| i.kind == ItemKind::Reasoning)
        .collect();
    assert!(
        reasoning[..reasoning.len() - 1]
            .iter()
            .all(|i| i.action == Action::Drop),
        "{p}"
    );
}

#[test]
fn the_floor_s_breakdown_names_each_part() {
    let b = compact_core::strategy::Breakdown {
        pinned: 1,
        recent: 2,
        user_messages: 3,
        other: 4,
        checkpoint: 5,
        overhead: 6,
    };
    assert_eq!(
        b.to_string(),
        "pinned 1, recent 2, user messages 3, other 4, checkpoint 5, tools and framing 6"
    );
}

#[test]
fn a_folded_checkpoint_counts_in_the_new_checkpoint_budget() {
    use compact_core::model::{Checkpoint, Item, ItemBody, Role};
    // The record of many earlier items sits after a few small messages; the new compaction covers
    // those and folds the record in. The budget must make room for the record, not only for the few
    // new items (it once got half of their size and squeezed the record to a tenth).
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a coding agent."));
    conv.push(Item::text(
        Role::User,
        "Port the CSV reader to the new API.",
    ));
    conv.push(Item::text(
        Role::Assistant,
        "Starting with the reader module. ".repeat(100),
    ));
    let record = (0..20)
        .map(|i| format!("- step {i}: changed src/reader_{i}.rs and ran the tests, all green"))
        .collect::<Vec<_>>()
        .join("\n");
    conv.push(Item::new(ItemBody::Checkpoint(Checkpoint {
        text: format!("# Record of earlier work\n{record}"),
        generation: 3,
        covers: Vec::new(),
        extra: Default::default(),
    })));
    for k in 0..8 {
        conv.push(Item::text(Role::User, format!("Next: file {k}.")));
        conv.push(fixture::call(
            &format!("c{k}"),
            "bash",
            r#"{"command": "cargo test"}"#,
        ));
        conv.push(fixture::result(
            &format!("c{k}"),
            "bash",
            &"ok line\n".repeat(60),
            false,
        ));
        conv.push(Item::text(Role::Assistant, format!("File {k} done.")));
    }
    let c = counter();
    let record_tokens = c.count_item(&conv.items[3]);
    // A window whose target lies some 700 tokens below the request (the target is about 0.515 of
    // the window): covering the long old message reaches it, the record comes along by folding.
    // The reversible stage alone would reach it (the runs repeat one command): this test is about tier 2.
    let policy = Policy {
        reversible: compact_core::policy::ReversibleMode::Off,
        ..Policy::for_window((c.total(&conv) - 700) * 1000 / 515)
    };
    let budget = Budget::new(&policy);
    assert!(budget.limits.summary > record_tokens, "{budget:?}");
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    let slot = p.checkpoint.as_ref().expect("tier 2 ran");
    assert_eq!(slot.previous, Some(3), "{p}");
    assert!(
        slot.max_tokens >= record_tokens.min(budget.limits.summary),
        "record of {record_tokens} tokens folded into a checkpoint of <= {} tokens\n{p}",
        slot.max_tokens
    );
}

#[test]
fn cfpm_with_nothing_it_may_replace_places_no_checkpoint() {
    use compact_core::plan::Tier;
    // Every item pinned by its owner: the middle cannot be replaced, so there is nothing to
    // summarise and no checkpoint to place (an empty one would only cost tokens).
    let mut conv = fixture::session(3, 4, 4);
    for item in &mut conv.items {
        item.meta.protected = true;
    }
    let c = counter();
    let policy = Policy::for_window(c.total(&conv) * 4);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Cfpm, &conv, &budget, &policy, &c).unwrap();
    assert!(p.checkpoint.is_none(), "{p}");
    assert!(p.tiers.iter().all(|t| t.tier != Tier::Summarize), "{p}");
}
