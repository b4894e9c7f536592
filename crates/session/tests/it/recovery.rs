//! Overflow recovery, calibration and manual compaction.

use crate::common::{counter, manager, Agent};
use compact_core::budget::Budget;
use compact_core::model::{Format, Item, Role};
use compact_core::policy::{Decision, Policy};
use compact_session::calibration::{MAX_RATIO, MIN_RATIO};
use compact_session::{Recovery, RecoveryError, SessionError, Usage};

const OVERFLOW: &str = r#"{"error":{"message":"This model's maximum context length is 16000 tokens. However, your messages resulted in 17000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
const WORDING_ONLY: &str =
    r#"{"error":{"message":"prompt is too long","type":"invalid_request_error"}}"#;

#[test]
fn recover_retries_at_most_three_times_then_gives_up() {
    let manager = manager(64_000);
    let mut agent = Agent::new(31, Format::OpenAiChat);
    for _ in 0..40 {
        agent.step();
    }
    let prepared = manager.preflight("s", &agent.history).unwrap();
    let mut request = (*prepared.conversation).clone();
    let mut sizes = vec![counter().total(&request)];
    for attempt in 1..=3 {
        match manager.recover("s", &request, 400, WORDING_ONLY).unwrap() {
            Recovery::Retry(next) => {
                let tokens = counter().total(&next);
                assert!(tokens < *sizes.last().unwrap(), "attempt {attempt} shrinks");
                sizes.push(tokens);
                request = next;
            }
            Recovery::GiveUp(e) => panic!("attempt {attempt} gave up: {e}"),
        }
    }
    match manager.recover("s", &request, 400, WORDING_ONLY).unwrap() {
        Recovery::GiveUp(RecoveryError::AttemptsExhausted { attempts: 3 }) => {}
        other => panic!("expected the attempts to run out, got {other:?}"),
    }
    let message = RecoveryError::AttemptsExhausted { attempts: 3 }.to_string();
    assert!(message.contains("start a new session"));
    // A new turn resets the count, and builds on the recovered view.
    agent.step();
    let next = manager.preflight("s", &agent.history).unwrap();
    assert!(!next.report.branched);
    assert_eq!(next.conversation.items[..request.len()], request.items[..]);
    assert!(matches!(
        manager
            .recover("s", &next.conversation, 400, WORDING_ONLY)
            .unwrap(),
        Recovery::Retry(_)
    ));
}

#[test]
fn a_hopeless_request_gives_up_with_a_typed_error_not_a_loop() {
    let manager = manager(16_000);
    let usable = Budget::new(&Policy::for_window(16_000)).usable;
    // A pinned system prompt of most of the budget: it fits our count, but nothing can shrink it.
    let mut agent = Agent::new(1, Format::OpenAiChat);
    let words = "policy clause ".repeat(usable * 8 / 10 / 2);
    agent.history.items[0] = Item::text(Role::System, words).with_id("sys");
    agent.user("hello");
    let prepared = manager.preflight("s", &agent.history).unwrap();
    let outcome = manager
        .recover("s", &prepared.conversation, 400, OVERFLOW)
        .unwrap();
    match outcome {
        Recovery::GiveUp(RecoveryError::Hopeless { floor, usable }) => assert!(floor > usable),
        Recovery::GiveUp(RecoveryError::NoProgress { .. }) => {}
        other => panic!("expected a typed give-up, got {other:?}"),
    }
    // A rate limit is not an overflow.
    assert!(matches!(
        manager
            .recover(
                "s",
                &prepared.conversation,
                429,
                r#"{"error":{"code":"rate_limit_exceeded"}}"#
            )
            .unwrap(),
        Recovery::GiveUp(RecoveryError::NotAnOverflow { status: 429 })
    ));
    // Recovering a request the session did not prepare is refused.
    let mut other = (*prepared.conversation).clone();
    other.items.pop();
    assert!(matches!(
        manager.recover("s", &other, 400, OVERFLOW),
        Err(SessionError::NotLastPrepared(_))
    ));
}

#[test]
fn calibration_is_bounded_and_used_in_decisions() {
    let manager = manager(16_000);
    let budget = Budget::new(&Policy::for_window(16_000));
    let mut agent = Agent::new(2, Format::OpenAiChat);
    // Grow to a bit over half the trigger: uncalibrated, no compaction is due.
    while counter().total(&agent.history) < budget.trigger * 55 / 100 {
        agent.step();
    }
    let first = manager.preflight("s", &agent.history).unwrap();
    assert_eq!(first.report.decision, Decision::None);
    assert_eq!(first.report.ratio, 1.0);

    // The provider reports ten times our count: the ratio is bounded at 2.
    let update = manager
        .record_usage(
            "s",
            &Usage {
                input_tokens: first.report.tokens as u64 * 10,
                ..Usage::default()
            },
        )
        .unwrap();
    assert!(update.clamped);
    assert_eq!(update.ratio, MAX_RATIO);
    assert_eq!(update.model, "test-model");

    // The same history plus one small message now crosses the trigger: 2 x count.
    agent.user("one more thing");
    let second = manager.preflight("s", &agent.history).unwrap();
    assert_eq!(second.report.ratio, MAX_RATIO);
    assert!(second.report.effective_tokens >= 2 * (second.report.tokens.min(first.report.tokens)));
    assert!(matches!(second.report.decision, Decision::Compact(_)));
    assert!(second.report.compaction.is_some());

    // A tiny report pulls the ratio down, never below 0.5.
    for _ in 0..50 {
        manager
            .record_usage(
                "s",
                &Usage {
                    input_tokens: 1,
                    ..Usage::default()
                },
            )
            .unwrap();
    }
    let third = manager.preflight("s", &agent.history).unwrap();
    assert!(
        third.report.ratio >= MIN_RATIO && third.report.ratio < 0.51,
        "{}",
        third.report.ratio
    );
}

#[test]
fn manual_compaction_by_phrase_and_by_call() {
    let manager = manager(64_000);
    let mut agent = Agent::new(8, Format::Anthropic);
    for _ in 0..15 {
        agent.step();
    }
    let before = manager.preflight("s", &agent.history).unwrap();
    assert!(before.report.compaction.is_none(), "far from the trigger");
    agent.user("/compact keep the test names");
    let prepared = manager.preflight("s", &agent.history).unwrap();
    assert!(prepared.report.manual);
    let report = prepared.report.compaction.expect("the phrase compacts");
    assert!(
        report.tokens_after * 10 <= report.tokens_before * 6,
        "a manual compaction saves at least 40%: {} -> {}",
        report.tokens_before,
        report.tokens_after
    );
    // The same phrase resent (not new) does not compact again.
    let again = manager.preflight("s", &agent.history).unwrap();
    assert!(again.report.compaction.is_none());

    for _ in 0..20 {
        agent.step();
    }
    manager.preflight("s", &agent.history).unwrap();
    let manual = manager.manual_compact("s", "before the release").unwrap();
    assert!(manual.tokens_saved > 0 && manual.items_compressed > 0);
    assert_eq!(
        manual.tokens_saved,
        manual.tokens_before - manual.tokens_after
    );
    // The next preflight builds on the manually compacted view.
    agent.step();
    let next = manager.preflight("s", &agent.history).unwrap();
    assert_eq!(
        next.conversation.items[..manual.conversation.len()],
        manual.conversation.items[..]
    );
}

/// A window the user did not know: the session is configured for 64k, the provider's error says
/// 16k. After the recovery every later call is prepared for 16k, also from a reloaded log, so the
/// overflow does not happen again.
#[test]
fn an_overflow_teaches_the_session_the_window_the_provider_stated() {
    let store: std::sync::Arc<dyn compact_session::Store> =
        std::sync::Arc::new(compact_session::MemoryStore::new());
    let manager = crate::common::manager_with(64_000, store.clone());
    let mut agent = Agent::new(7, Format::OpenAiChat);
    while counter().total(&agent.history) < 20_000 {
        agent.step();
    }
    let prepared = manager.preflight("s", &agent.history).unwrap();
    assert!(prepared.report.compaction.is_none(), "fits 64k");
    let request = (*prepared.conversation).clone();
    // The provider counts as we do here: its window is 16,000 of our tokens.
    let overflow = format!(
        r#"{{"error":{{"message":"This model's maximum context length is 16000 tokens. However, your messages resulted in {} tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}}}"#,
        counter().total(&request)
    );
    let Recovery::Retry(retried) = manager.recover("s", &request, 400, &overflow).unwrap() else {
        panic!("expected a retry")
    };
    let usable = Budget::new(&Policy::for_window(16_000)).usable;
    assert!(counter().total(&retried) <= usable);
    for manager in [manager, crate::common::manager_with(64_000, store)] {
        for _ in 0..6 {
            agent.step();
            let next = manager.preflight("s", &agent.history).unwrap();
            let tokens = counter().total(&next.conversation);
            assert!(tokens <= usable, "{tokens} tokens for a 16k provider");
        }
    }
}
