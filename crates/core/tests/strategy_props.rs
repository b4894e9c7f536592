//! Property tests over generated conversations (`COMPACT_PROPTEST_CASES` sets how many; each is
//! planned by every strategy): for every strategy, the applied plan normalises with
//! zero diagnostics, keeps pinned items unchanged, pairs every tool call, fits the budget (or fails
//! with the typed error), and is deterministic; nothing is compacted below the trigger.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::budget::Budget;
use compact_core::model::{Conversation, Item, ItemBody, Role};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::policy::{decide, Decision, Policy, StrategyName};
use compact_core::strategy::{plan, StrategyError};
use compact_core::tokens::{Encoding, TokenCounter};
use proptest::prelude::*;

/// Room the irreducible floor needs beyond the pinned items: the last user message, tool pair and item
/// cut to ~64 tokens each, plus a minimal checkpoint with its markers.
const FLOOR_SLACK: usize = 600;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

/// A summary text of about `tokens` tokens (the worst case a summariser may return).
fn filler(tokens: usize) -> String {
    "note ".repeat(tokens.saturating_sub(8))
}

fn generated(seed: u64, turns: usize, scale: usize, protect: u64) -> Conversation {
    let mut conv = fixture::session(seed, turns, scale);
    // Every other seed, a system message right after the first user message, where Claude Code
    // puts its environment: pinned like the leading one.
    if seed.is_multiple_of(2) {
        if let Some(at) = conv.items.iter().position(|i| i.role() == Role::User) {
            let env = Item::text(Role::System, "# Environment\n - Platform: linux\n");
            conv.items.insert(at + 1, env.with_id("environment"));
            conv.renumber_turns();
        }
    }
    let mut rng = fixture::Rng(seed ^ 0x9e37_79b9);
    for item in conv.items.iter_mut().skip(1) {
        if protect > 0 && rng.below(protect) == 0 && matches!(item.body(), ItemBody::Message(_)) {
            item.meta.protected = true;
        }
    }
    normalize(&conv, &ProviderRules::OpenAiChat).conversation
}

/// The invariants of one strategy's plan for `conv`.
fn check_plan(
    strategy: StrategyName,
    conv: &Conversation,
    policy: &Policy,
    budget: &Budget,
    c: &TokenCounter,
) -> Result<(), TestCaseError> {
    let total = c.total(conv);
    let first = plan(strategy, conv, budget, policy, c);
    let second = plan(strategy, conv, budget, policy, c);
    prop_assert_eq!(&first, &second, "same input, same output");
    let p = match first {
        Ok(p) => p,
        Err(StrategyError::InsufficientBudget {
            floor,
            budget: b,
            breakdown,
        }) => {
            // Every strategy may only refuse when the pinned items (and framing) alone leave no
            // room for the floor of the last items and a minimal checkpoint.
            prop_assert!(floor > b);
            prop_assert!(
                breakdown.pinned + breakdown.overhead + FLOOR_SLACK > b,
                "{} refused with room left: {breakdown}",
                strategy.as_str()
            );
            return Ok(());
        }
        Err(e) => return Err(TestCaseError::fail(format!("{strategy}: {e}"))),
    };
    let text = p
        .checkpoint
        .as_ref()
        .map(|s| s.fixed_text.clone().unwrap_or_else(|| filler(s.max_tokens)));
    let out = p.apply(conv, text.as_deref()).unwrap();
    for rules in [
        ProviderRules::OpenAiChat,
        ProviderRules::Anthropic,
        ProviderRules::OpenAiResponses,
    ] {
        let d = normalize(&out, &rules).diagnostics;
        prop_assert!(d.is_empty(), "{strategy}: {:?} {:?}", rules, d);
    }
    prop_assert_eq!(out.pairing().orphan_count(), 0);
    // Pinned items survive unchanged.
    let latest_protected = conv.items.iter().rposition(|i| {
        i.as_tool_call()
            .is_some_and(|t| policy.is_tool_protected(&t.name))
    });
    for (idx, item) in conv.items.iter().enumerate() {
        let pinned = item.meta.protected
            || matches!(item.body(), ItemBody::Message(m) if policy.is_role_pinned(m.role))
            || Some(idx) == latest_protected;
        if pinned {
            let found = out.find(item.meta.id.as_str());
            prop_assert!(
                found.is_some_and(|f| f.body() == item.body()),
                "{strategy}: pinned {} changed",
                item.meta.id
            );
        }
    }
    let after = c.total(&out);
    prop_assert!(
        after <= budget.usable,
        "{} output {} over usable {}",
        strategy.as_str(),
        after,
        budget.usable
    );
    prop_assert!(after <= total, "{strategy}: {total} -> {after}");
    prop_assert!(
        p.estimated_after() + 8 >= after,
        "{} estimate {} below actual {}",
        strategy.as_str(),
        p.estimated_after(),
        after
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fixture::proptest_cases(64), .. ProptestConfig::default() })]

    /// One generated conversation per case, planned by every strategy.
    #[test]
    fn plans_keep_invariants(
        seed in 1u64..1_000_000,
        turns in 2usize..14,
        scale in 1usize..30,
        protect in 0u64..12,
        window_share in 0.2f64..1.2,
    ) {
        let c = counter();
        let conv = generated(seed, turns, scale, protect);
        let total = c.total(&conv);
        let window = ((total as f64 * window_share) as usize).max(2_048);
        let policy = Policy::for_window(window);
        let budget = Budget::new(&policy);
        for &strategy in StrategyName::ALL {
            check_plan(strategy, &conv, &policy, &budget, &c)?;
        }
    }

    #[test]
    fn nothing_below_the_trigger(seed in 1u64..10_000, turns in 1usize..6) {
        let c = counter();
        let conv = generated(seed, turns, 3, 0);
        let total = c.total(&conv);
        let policy = Policy::for_window((total * 4).max(4_096));
        let budget = Budget::new(&policy);
        prop_assert_eq!(decide(total, &budget, &policy), Decision::None);
        if total <= budget.target {
            let p = plan(StrategyName::Tiered, &conv, &budget, &policy, &c).unwrap();
            prop_assert!(p.is_noop());
        }
    }
}
