//! Plan tests: applying is pure and checked, stubs are restorable references, printing shows every item.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::budget::Budget;
use compact_core::model::{Conversation, ItemBody};
use compact_core::plan::{Action, ApplyError, REFERENCE_PREFIX};
use compact_core::policy::{Policy, StrategyName};
use compact_core::strategy::plan;
use compact_core::tokens::{Encoding, TokenCounter};

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

#[test]
fn apply_checks_its_inputs_and_never_mutates() {
    let conv = fixture::session(21, 20, 15);
    let policy = Policy::for_window(counter().total(&conv) / 2);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &counter()).unwrap();
    assert!(p.needs_summary());
    assert!(matches!(
        p.apply(&conv, None),
        Err(ApplyError::MissingSummary { .. })
    ));
    assert!(matches!(
        p.apply(&Conversation::default(), Some("x")),
        Err(ApplyError::Mismatch { .. })
    ));
    let copy = conv.clone();
    let out = p.apply(&conv, Some("earlier work")).unwrap();
    assert_eq!(conv, copy);
    let checkpoints: Vec<_> = out
        .items
        .iter()
        .filter(|i| matches!(i.body(), ItemBody::Checkpoint(_)))
        .collect();
    assert_eq!(checkpoints.len(), 1);
    assert_eq!(checkpoints[0].plain_text(), "earlier work");
    let [_, _, _, summarized, _, _] = p.action_counts();
    assert_eq!(out.items.len(), conv.items.len() - summarized + 1);
}

#[test]
fn masking_stubs_name_tool_size_and_id() {
    let conv = fixture::session(5, 12, 20);
    let policy = Policy {
        keep_recent_turns: 2,
        ..Policy::for_window(counter().total(&conv))
    };
    let budget = Budget::new(&policy);
    let p = plan(
        StrategyName::ObservationMasking,
        &conv,
        &budget,
        &policy,
        &counter(),
    )
    .unwrap();
    let stubbed: Vec<_> = p
        .items
        .iter()
        .filter(|i| matches!(i.action, Action::Reference { .. }))
        .collect();
    assert!(!stubbed.is_empty());
    for s in stubbed {
        let Action::Reference { stub } = &s.action else {
            unreachable!()
        };
        assert!(stub.starts_with(REFERENCE_PREFIX), "{stub}");
        assert!(
            stub.contains(s.id.as_str()) && stub.contains("tokens"),
            "{stub}"
        );
        assert!(s.tokens_after < s.tokens_before);
    }
    let printed = p.to_string();
    assert!(printed.starts_with("strategy observation-masking:"));
    assert_eq!(
        printed
            .lines()
            .filter(|l| l.contains(" -> ") && l.trim_start().starts_with(char::is_numeric))
            .count(),
        conv.items.len()
    );
}
