//! The shared fit pass: every strategy's plan fits the usable budget whenever the pinned items leave
//! room (oversized last turns, huge tool-call arguments, uncuttable reasoning, nothing left to mask),
//! and refuses with a typed, honest floor only when the pinned items alone are too large.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::budget::Budget;
use compact_core::model::{Conversation, Envelope, Item, ItemBody, Reasoning, Role};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::plan::{Action, Plan, Tier};
use compact_core::policy::{Policy, StrategyName};
use compact_core::strategy::{plan, StrategyError};
use compact_core::tokens::{Encoding, TokenCounter};
use std::sync::Arc;

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
    let mut reasoning = Item::new(ItemBody::Reasoning(Reasoning {
        encrypted: Some("gAAAAB".repeat(4_000)),
        ..Reasoning::default()
    }));
    // A Responses reasoning item is its own wire item: its envelope is its alone.
    reasoning.meta.envelope = Some(Arc::new(Envelope {
        message: 2,
        ..Envelope::default()
    }));
    conv.push(reasoning);
    let mut call = fixture::call("c1", "bash", r#"{"command":"ls src/billing"}"#);
    call.meta.envelope = Some(Arc::new(Envelope {
        message: 3,
        ..Envelope::default()
    }));
    conv.push(call);
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

#[test]
fn the_sliding_window_keeps_the_newest_pair_even_when_it_alone_is_over_the_target() {
    let mut conv = reads(6, 40);
    let c = counter();
    let policy = Policy::for_window(8_000);
    let budget = Budget::new(&policy);
    conv.push(fixture::call("big", "bash", r#"{"command":"cargo test"}"#));
    let line = "test ledger::sums_match ... ok\n";
    let lines = budget.target * 11 / 10 / c.count_text(line).max(1);
    conv.push(fixture::result("big", "bash", &line.repeat(lines), false));
    let last = conv.items.len() - 1;
    assert!(c.count_item(&conv.items[last]) > budget.target);
    assert!(c.total(&conv) > budget.usable);
    let p = plan(StrategyName::SlidingWindow, &conv, &budget, &policy, &c).unwrap();
    // The newest unit is kept (cut to fit if need be), never summarised away with the rest.
    assert!(
        p.items[last].action.is_present(),
        "{:?}",
        p.items[last].action
    );
    assert!(p.items[last - 1].action.is_present());
    assert!(c.total(&apply(&p, &conv)) <= budget.usable);
}

/// A session of `pairs` reads of `lines` lines each after a system prompt and a task.
fn reads(pairs: usize, lines: usize) -> Conversation {
    let mut conv = fixture::parse(
        "system: You are a coding agent.\nuser: Find why the ledger total drifts.\n",
    );
    for i in 0..pairs {
        let id = format!("c{i}");
        conv.push(fixture::call(
            &id,
            "read_file",
            &format!(r#"{{"path":"src/ledger/m{i}.rs"}}"#),
        ));
        let body: String = (0..lines)
            .map(|k| format!("    let entry_{k} = ledger.post({i}, {k});\n"))
            .collect();
        conv.push(fixture::result(&id, "read_file", &body, false));
    }
    conv
}

#[test]
fn the_fit_pass_references_older_outputs_and_records_how_many() {
    // Forty reads in one turn: observation masking has nothing old enough to mask, so the fit pass's
    // reference step does the work, oldest output first, and stops once the target is reached.
    let conv = reads(40, 50);
    let c = counter();
    let policy = Policy::for_window(40_000);
    let budget = Budget::new(&policy);
    let p = plan(
        StrategyName::ObservationMasking,
        &conv,
        &budget,
        &policy,
        &c,
    )
    .unwrap();
    let results: Vec<usize> = (0..conv.items.len())
        .filter(|&i| conv.items[i].as_tool_result().is_some())
        .collect();
    let referenced: Vec<usize> = results
        .iter()
        .copied()
        .filter(|&i| matches!(p.items[i].action, Action::Reference { .. }))
        .collect();
    assert!(referenced.len() > 1, "{p}");
    assert_eq!(referenced, results[..referenced.len()], "oldest first: {p}");
    assert_eq!(p.items[*results.last().unwrap()].action, Action::Keep);
    assert!(p.estimated_after() <= budget.target, "{p}");
    // No more than needed: without the last reference the plan would still be over the target.
    let last = &p.items[*referenced.last().unwrap()];
    assert!(p.estimated_after() + last.tokens_before - last.tokens_after > budget.target);
    let record = p
        .tiers
        .iter()
        .find(|t| t.note == "fit: older tool outputs referenced")
        .unwrap_or_else(|| panic!("{p}"));
    assert_eq!(record.items, referenced.len());
    assert_eq!(record.tokens_after, p.estimated_after());
}

#[test]
fn a_tight_floor_shrinks_the_checkpoint_before_cutting_the_last_items_deeper() {
    // The pinned system prompt grows until the plan no longer fits with the floor's items cut to
    // their soft size and a full checkpoint: at some size, shrinking the checkpoint is enough, and
    // the last items keep their soft size instead of being cut to a few dozen tokens.
    let c = counter();
    let policy = Policy::for_window(8_000);
    let budget = Budget::new(&policy);
    let build = |pad: usize| {
        let mut conv = reads(6, 30);
        conv.items[0] = Item::text(
            Role::System,
            format!(
                "You are a coding agent.\n{}",
                "Keep every change small.\n".repeat(pad)
            ),
        );
        conv.push(Item::text(
            Role::User,
            (0..60)
                .map(|k| format!("Row {k} of the export must match posting {k} of the ledger.\n"))
                .collect::<String>(),
        ));
        conv.push(fixture::call("last", "bash", r#"{"command":"cargo test"}"#));
        conv.push(fixture::result(
            "last",
            "bash",
            &(0..80)
                .map(|k| format!("test ledger::case_{k}::sums_match ... ok\n"))
                .collect::<String>(),
            false,
        ));
        conv
    };
    let mut full_budget = None;
    let mut shrunk = 0;
    for pad in (0..1_200).step_by(20) {
        let conv = build(pad);
        let Ok(p) = plan(StrategyName::Tiered, &conv, &budget, &policy, &c) else {
            break;
        };
        assert!(c.total(&apply(&p, &conv)) <= budget.usable);
        let Some(slot) = &p.checkpoint else { continue };
        let full = *full_budget.get_or_insert(slot.max_tokens);
        let cut_deep = p
            .items
            .iter()
            .any(|i| i.tier == Some(Tier::ShrinkRecent) && i.tokens_after < 256);
        if slot.max_tokens + 50 < full && !cut_deep {
            // Shrunk by what the plan was over, no more.
            assert_eq!(p.estimated_after(), budget.usable, "{p}");
            shrunk += 1;
        }
    }
    assert!(
        shrunk > 0,
        "no plan shrank the checkpoint before cutting the floor deeper"
    );
}

#[test]
fn a_refusal_breakdown_adds_up_to_its_floor() {
    // Pinned rules over the budget, with work to summarise: the floor includes a checkpoint, and
    // every token of it is accounted for once.
    let mut conv = reads(6, 30);
    conv.items[0] = Item::text(
        Role::System,
        "Always follow the house rules listed below.\n".repeat(800),
    );
    let c = counter();
    let policy = Policy::for_window(8_000);
    let budget = Budget::new(&policy);
    let mut with_checkpoint = 0;
    for &name in StrategyName::ALL {
        let Err(StrategyError::InsufficientBudget {
            floor, breakdown, ..
        }) = plan(name, &conv, &budget, &policy, &c)
        else {
            panic!("{}: expected a refusal", name.as_str());
        };
        let b = breakdown;
        assert_eq!(
            b.pinned + b.recent + b.user_messages + b.other + b.checkpoint + b.overhead,
            floor,
            "{}: {b}",
            name.as_str()
        );
        with_checkpoint += usize::from(b.checkpoint > 0);
    }
    assert!(with_checkpoint > 0);
}

#[test]
fn tier_2_records_every_item_it_summarises() {
    let conv = reads(40, 30);
    let c = counter();
    let policy = Policy::for_window(8_000);
    let budget = Budget::new(&policy);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    let summarised = p
        .items
        .iter()
        .filter(|i| i.action == Action::SummarizeInto)
        .count();
    let recorded: usize = p
        .tiers
        .iter()
        .filter(|t| t.tier == Tier::Summarize)
        .map(|t| t.items)
        .sum();
    assert!(summarised > 2, "{p}");
    assert_eq!(recorded, summarised, "{p}");
}

#[test]
fn tier_1_is_skipped_when_references_free_too_little() {
    // Six reads (the last few are recent and kept), then a long discussion: referencing both frees far less than tier 1's minimum
    // (5% of a 200k window), so nothing is referenced and tier 2 does the work.
    let mut conv = reads(6, 60);
    for k in 0..60 {
        conv.push(Item::text(
            Role::Assistant,
            (0..200)
                .map(|j| format!("Step {k}.{j}: the ledger posting {j} is reconciled. "))
                .collect::<String>(),
        ));
    }
    let c = counter();
    let policy = Policy::for_window(200_000);
    let budget = Budget::new(&policy);
    assert!(c.total(&conv) > budget.target);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    assert!(
        p.notes.iter().any(|n| n.starts_with("tier 1 skipped")),
        "{p}"
    );
    assert!(
        p.items.iter().all(|i| i.tier != Some(Tier::Reference)),
        "{p}"
    );
    assert!(p.items.iter().any(|i| i.action == Action::SummarizeInto));
}

#[test]
fn tiered_references_an_old_output_the_agent_is_working_on_last() {
    // Twelve reads of different files; the agent's latest edit names a function of the first one.
    let mut conv = fixture::parse("system: You are a coding agent.\nuser: Fix the ledger.\n");
    for i in 0..12 {
        let id = format!("r{i}");
        conv.push(fixture::call(
            &id,
            "Read",
            &format!(r#"{{"file_path":"src/m{i}.rs"}}"#),
        ));
        let body: String = (0..40)
            .map(|k| {
                format!("fn handler_{i}_{k}(input: &Input) -> Output {{ step(input, {k}) }}\n")
            })
            .collect();
        conv.push(fixture::result(&id, "Read", &body, false));
    }
    conv.push(fixture::call(
        "e",
        "Edit",
        r#"{"file_path":"src/main.rs","old_string":"handler_0_3(&input)","new_string":"handler_0_3(&input)?"}"#,
    ));
    conv.push(fixture::result(
        "e",
        "Edit",
        "The file src/main.rs has been updated.",
        false,
    ));
    let c = counter();
    let policy = Policy::for_window(16_000);
    let budget = Budget::new(&policy);
    assert!(c.total(&conv) > budget.target);
    let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
    let referenced = |i: usize| matches!(p.items[i].action, Action::Reference { .. });
    assert!(!referenced(3), "the output the agent works on: {p}");
    assert!(
        referenced(5),
        "an older output of no interest goes first: {p}"
    );
}
