//! The shared fit pass: every strategy's plan fits the usable budget whenever the pinned items leave
//! room (oversized last turns, huge tool-call arguments, uncuttable reasoning, nothing left to mask),
//! and refuses with a typed, honest floor only when the pinned items alone are too large.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::budget::Budget;
use compact_core::model::{Conversation, Item, ItemBody, Reasoning, Role};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::plan::{Action, Plan};
use compact_core::policy::{Policy, StrategyName};
use compact_core::strategy::{plan, StrategyError};
use compact_core::tokens::{Encoding, TokenCounter};

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn fixture_conv(name: &str) -> Conversation {
    let path = format!(
        "{}/tests/fixtures/strategy/{name}.conv",
        env!("CARGO_MANIFEST_DIR")
    );
    let src = std::fs::read_to_string(path).unwrap();
    let (_, body) = src.split_once('\n').unwrap();
    fixture::parse(body)
}

/// Applies `p` with a summary as long as its budget allows (the worst case a summariser may return).
fn apply(p: &Plan, conv: &Conversation) -> Conversation {
    let text = p.checkpoint.as_ref().map(|c| {
        c.fixed_text
            .clone()
            .unwrap_or_else(|| "note ".repeat(c.max_tokens.saturating_sub(8)))
    });
    p.apply(conv, text.as_deref()).unwrap()
}

/// Plans `conv` with every strategy and checks each output fits, pairs its calls and keeps pinned items.
fn assert_every_strategy_fits(conv: &Conversation, window: usize) {
    let c = counter();
    let policy = Policy::for_window(window);
    let budget = Budget::new(&policy);
    assert!(
        c.total(conv) > budget.usable,
        "the input must be over the budget"
    );
    for &name in StrategyName::ALL {
        let p = plan(name, conv, &budget, &policy, &c)
            .unwrap_or_else(|e| panic!("{}: {e}", name.as_str()));
        let out = apply(&p, conv);
        let after = c.total(&out);
        assert!(
            after <= budget.usable,
            "{}: {after} over usable {}",
            name.as_str(),
            budget.usable
        );
        assert!(p.estimated_after() + 8 >= after, "{}", name.as_str());
        assert!(
            normalize(&out, &ProviderRules::OpenAiResponses)
                .diagnostics
                .is_empty(),
            "{}",
            name.as_str()
        );
        let system = &conv.items[0];
        assert_eq!(
            out.find(system.meta.id.as_str()).map(Item::body),
            Some(system.body()),
            "{}: pinned system message changed",
            name.as_str()
        );
    }
}

#[test]
fn every_strategy_fits_an_oversized_last_turn() {
    // The last user message, the last call's arguments and its result are each larger than the budget.
    let conv = fixture_conv("oversized-tail");
    assert_every_strategy_fits(&conv, 2_400);
}

#[test]
fn huge_tool_call_arguments_are_cut_and_stay_json() {
    let conv = fixture_conv("oversized-tail");
    let c = counter();
    let policy = Policy::for_window(2_400);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Deletion, &conv, &budget, &policy, &c).unwrap();
    let out = apply(&p, &conv);
    let call = out
        .items
        .iter()
        .find_map(Item::as_tool_call)
        .filter(|t| t.name == "write_file")
        .expect("the last call stays");
    let args = call.arguments.to_value().expect("arguments are still JSON");
    assert_eq!(args["path"], "src/import/parse.rs");
    let content = args["content"].as_str().unwrap();
    assert!(content.contains("characters cut"), "{content}");
}

#[test]
fn a_standalone_reasoning_item_in_the_floor_is_dropped() {
    let mut conv = fixture::parse(
        "system: You are a coding agent.\nuser: Plan the refactor of the billing module.\n",
    );
    let reasoning = Item::new(ItemBody::Reasoning(Reasoning {
        encrypted: Some("gAAAAB".repeat(4_000)),
        ..Reasoning::default()
    }));
    conv.push(reasoning);
    conv.push(fixture::call(
        "c1",
        "bash",
        r#"{"command":"ls src/billing"}"#,
    ));
    conv.push(fixture::result(
        "c1",
        "bash",
        "invoice.rs\nledger.rs",
        false,
    ));
    let c = counter();
    let policy = Policy::for_window(4_000);
    let budget = Budget::new(&policy);
    assert!(c.total(&conv) > budget.usable);
    for &name in StrategyName::ALL {
        let p = plan(name, &conv, &budget, &policy, &c)
            .unwrap_or_else(|e| panic!("{}: {e}", name.as_str()));
        // Dropped by the fit pass (or summarised with the last pair, the `codex` way).
        assert!(!p.items[2].action.is_present(), "{}", name.as_str());
        if name != StrategyName::Codex {
            assert_eq!(p.items[2].action, Action::Drop, "{}", name.as_str());
            assert!(p.items[4].action.is_present(), "{}", name.as_str());
        }
        assert!(c.total(&apply(&p, &conv)) <= budget.usable);
    }
}

#[test]
fn pinned_items_over_the_budget_are_the_only_refusal() {
    let mut conv = Conversation::default();
    conv.push(Item::text(
        Role::System,
        "Always follow the house rules listed below.\n".repeat(400),
    ));
    conv.push(Item::text(Role::User, "Rename the crate."));
    let c = counter();
    let policy = Policy::for_window(4_000);
    let budget = Budget::new(&policy);
    for &name in StrategyName::ALL {
        match plan(name, &conv, &budget, &policy, &c) {
            Err(StrategyError::InsufficientBudget {
                floor,
                budget: b,
                breakdown,
            }) => {
                assert!(floor > b, "{}", name.as_str());
                assert!(breakdown.pinned > b, "{}: {breakdown}", name.as_str());
            }
            other => panic!("{}: expected a refusal, got {other:?}", name.as_str()),
        }
    }
}

#[test]
fn masking_continues_when_nothing_is_left_to_mask() {
    // Every output is recent (one turn), so masking alone has nothing to do while over the budget.
    let mut src = String::from("system: You are a coding agent.\nuser: Audit every module.\n");
    for i in 0..12 {
        src.push_str(&format!(
            "call c{i} read_file {{\"path\":\"src/m{i}.rs\"}}\nresult c{i}: module {i}\n  @repeat 40 fn item() {{ /* body */ }}\n"
        ));
    }
    let conv = fixture::parse(&src);
    let c = counter();
    let policy = Policy::for_window(3_000);
    let budget = Budget::new(&policy);
    assert!(c.total(&conv) > budget.usable);
    let p = plan(
        StrategyName::ObservationMasking,
        &conv,
        &budget,
        &policy,
        &c,
    )
    .unwrap();
    assert!(!p.is_noop());
    assert!(p.estimated_after() <= budget.usable);
    // Still no summary: masking never calls a summariser.
    assert!(p.checkpoint.is_none());
}
