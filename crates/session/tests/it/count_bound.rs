//! A request whose upper bound (from its lengths) cannot reach any threshold is sent without its
//! exact count: the decision must be the one the exact count makes, over many generated
//! conversations and thresholds, and a usage reported against the bound must calibrate as one
//! reported against the exact count (the samples are held until the count is made).

use crate::common::{bounded, counter, Agent, Rng};
use compact_core::boundary::natural_boundary;
use compact_core::budget::Budget;
use compact_core::model::{Conversation, Format};
use compact_core::policy::{Mode, Policy};
use compact_engine::Due;
use compact_session::{Calibration, CompactManager, MemoryStore, SessionConfig, Usage};
use std::sync::Arc;

fn manager(policy: Policy) -> CompactManager {
    CompactManager::open(
        SessionConfig::new(policy, counter()),
        Arc::new(MemoryStore::new()),
    )
    .unwrap()
}

/// A policy for `window` with thresholds drawn from `rng`: trigger, soft threshold, tokens left,
/// boundary floor and mode.
fn policy(rng: &mut Rng, window: usize) -> Policy {
    let mut p = Policy::for_window(window);
    p.trigger_pct = 0.5 + rng.below(45) as f64 / 100.0;
    p.target_pct = 0.3;
    p.soft_trigger_pct = (rng.below(2) == 0).then_some(p.trigger_pct - 0.1);
    p.min_tokens_left = (rng.below(3) == 0).then(|| rng.below(window as u64 / 4) as usize);
    p.boundary_trigger_pct = (rng.below(3) == 0).then_some(p.trigger_pct - 0.05);
    p.mode = match rng.below(4) {
        0 => Mode::Remind,
        1 => Mode::Off,
        _ => Mode::Auto,
    };
    p.validate().unwrap();
    p
}

/// The decision the exact count of what was sent makes (a new session: ratio 1).
fn exact_decision(policy: &Policy, sent: &Conversation) -> (usize, compact_core::policy::Decision) {
    let budget = Budget::new(policy);
    let exact = counter().total(&Conversation::clone(sent));
    let at = budget.boundary.and_then(|_| natural_boundary(sent));
    let due = Due {
        count: exact,
        at,
        manual: false,
    };
    (exact, compact_engine::decide(due, &budget, policy))
}

#[test]
fn a_bounded_count_decides_as_the_exact_count() {
    let (mut bounded_calls, mut exact_calls) = (0, 0);
    for seed in 1..=120u64 {
        let mut rng = Rng::new(seed * 7919);
        let window = 2_000 + rng.below(60_000) as usize;
        let policy = policy(&mut rng, window);
        let format = [
            Format::OpenAiChat,
            Format::Anthropic,
            Format::OpenAiResponses,
        ][rng.below(3) as usize];
        let mut agent = Agent::new(seed, format);
        for _ in 0..1 + rng.below(12) {
            agent.step();
        }
        let m = manager(policy.clone());
        let prepared = m.preflight("s", &agent.history).unwrap();
        if prepared.report.compaction.is_some() {
            // Compacted: the count was exact (a bound never compacts); what it sent is another
            // conversation.
            assert!(!bounded(&prepared));
            exact_calls += 1;
            continue;
        }
        let (exact, decision) = exact_decision(&policy, &prepared.conversation);
        assert_eq!(
            prepared.report.decision, decision,
            "seed {seed}: window {window}, exact count {exact}, reported {}",
            prepared.report.tokens
        );
        if bounded(&prepared) {
            bounded_calls += 1;
            assert!(prepared.report.tokens >= exact, "seed {seed}");
            assert_eq!(decision, compact_core::policy::Decision::None);
        } else {
            exact_calls += 1;
            assert_eq!(prepared.report.tokens, exact, "seed {seed}");
        }
    }
    // Both paths were taken many times.
    assert!(bounded_calls > 20, "{bounded_calls} bounded");
    assert!(exact_calls > 20, "{exact_calls} exact");
}

#[test]
fn a_manual_request_is_counted_exactly() {
    let mut agent = Agent::new(3, Format::OpenAiChat);
    agent.step();
    let m = manager(Policy::for_window(200_000));
    assert!(bounded(&m.preflight("s", &agent.history).unwrap()));
    agent.user("/compact");
    let prepared = m.preflight("s", &agent.history).unwrap();
    assert!(!bounded(&prepared));
}

#[test]
fn usage_against_a_bound_calibrates_as_against_the_exact_count() {
    let mut checked_bounded = 0;
    for seed in 1..=6u64 {
        let mut rng = Rng::new(seed * 104_729);
        // Windows where the first calls stay bounded and later ones are counted and compacted.
        let window = if seed % 2 == 1 {
            // Far from the trigger: every call counted whole goes out with a bound.
            1_000_000
        } else {
            12_000 + rng.below(100_000) as usize
        };
        let m = manager(Policy::for_window(window));
        let mut agent = Agent::new(seed, Format::OpenAiChat);
        let mut reference = Calibration::default();
        let mut last_len = 0;
        for call in 0..30 {
            agent.step();
            // Now and then the client goes back a few items (a branch: counted whole again).
            let request = if call % 4 == 3 && last_len > 3 {
                let mut back = agent.history.clone();
                back.items.truncate(last_len - 2);
                back
            } else {
                agent.history.clone()
            };
            last_len = request.items.len();
            let prepared = m.preflight("s", &request).unwrap();
            assert_eq!(
                prepared.report.ratio.to_bits(),
                reference.ratio("test-model").to_bits(),
                "seed {seed}, call {call}: the ratio used"
            );
            let was_bounded = bounded(&prepared);
            let exact = if was_bounded {
                checked_bounded += 1;
                counter().total(&Conversation::clone(&prepared.conversation))
            } else {
                prepared.report.tokens
            };
            // The provider counts a tenth more, give or take.
            let provider = (exact as f64 * (1.05 + rng.below(10) as f64 / 100.0)) as u64;
            let usage = Usage {
                input_tokens: provider,
                model: Some("test-model".to_owned()),
                ..Usage::default()
            };
            let update = m.record_usage("s", &usage).unwrap();
            reference.observe("test-model", provider, exact);
            if was_bounded {
                // Held: the ratio moves once the next call counts the request.
                assert_eq!(update.our_tokens, prepared.report.tokens);
            } else {
                assert_eq!(
                    update.ratio.to_bits(),
                    reference.ratio("test-model").to_bits()
                );
            }
        }
    }
    assert!(checked_bounded > 10, "{checked_bounded} bounded calls");
}
