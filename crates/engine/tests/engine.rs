//! Engine tests: the compactor's progress guarantee, summariser fallbacks, the 40% acceptance on a
//! prepared fixture, and a synthetic session of more than three windows with zero calls over the window.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../core/tests/fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::model::{Conversation, Item, ItemBody, Role};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::policy::{Decision, Policy, StrategyName, SummarizerFailure};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{
    block_on, BoxFuture, CompactError, Compactor, DeterministicSummarizer, SummarizeError,
    Summarizer, Summary, SummaryRequest, SummaryUsage,
};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn compactor(policy: Policy) -> Compactor {
    Compactor::new(policy, Arc::new(DeterministicSummarizer), counter()).unwrap()
}

fn prepared() -> Conversation {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/tests/fixtures/engine/prepared.conv"
    ))
    .unwrap();
    fixture::parse(&src)
}

/// A summariser that always fails.
struct Failing;
impl Summarizer for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn summarize<'a>(
        &'a self,
        _: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(async {
            Err(
                SummarizeError::Transport("connection reset".into()).with_usage(SummaryUsage {
                    calls: 2,
                    input_tokens: 1_000,
                    output_tokens: 0,
                    cached_input_tokens: 0,
                }),
            )
        })
    }
}

/// A summariser that ignores its budget (returns far more than asked) and counts its calls.
struct Verbose(AtomicU32);
impl Summarizer for Verbose {
    fn name(&self) -> &str {
        "verbose"
    }
    fn summarize<'a>(
        &'a self,
        r: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let text = "summary word ".repeat(r.max_tokens * 3);
        Box::pin(async move {
            Ok(Summary {
                text,
                produced_by: "verbose".into(),
                ..Summary::default()
            })
        })
    }
}

#[test]
fn manual_compaction_of_prepared_fixture_saves_40_percent() {
    let conv = prepared();
    let before = counter().total(&conv);
    let c = compactor(Policy::for_window(before));
    let done = block_on(c.compact(&conv)).unwrap();
    let r = &done.report;
    assert_eq!(r.tokens_before, before);
    assert!(
        r.tokens_after * 10 <= before * 6,
        "{} -> {} is less than 40%",
        before,
        r.tokens_after
    );
    assert!(normalize(&done.conversation, &ProviderRules::Anthropic)
        .diagnostics
        .is_empty());
    assert_eq!(r.strategy, StrategyName::Tiered);
    assert!(!r.tiers_applied.is_empty());
    let json = r.to_json();
    for key in [
        "tokens_before",
        "tokens_after",
        "items_before",
        "items_after",
        "strategy",
        "tiers_applied",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
    // The protected todo call and the system prompt survive.
    assert!(done.conversation.items.iter().any(|i| i
        .as_tool_call()
        .is_some_and(|t| t.name == "manage_todo_list")));
    assert_eq!(done.conversation.items[0].body(), conv.items[0].body());
}

#[test]
fn every_strategy_compacts_the_prepared_fixture() {
    let conv = prepared();
    let before = counter().total(&conv);
    for &s in StrategyName::ALL {
        let c = compactor(Policy::for_window(before)).with_strategy(s);
        match block_on(c.compact(&conv)) {
            Ok(done) => {
                assert!(done.report.tokens_after < before, "{s}");
                assert!(
                    normalize(&done.conversation, &ProviderRules::OpenAiChat)
                        .diagnostics
                        .is_empty(),
                    "{s}"
                );
            }
            // Every strategy must free something on this fixture: "no progress" is a failure here.
            Err(e) => panic!("{s}: {e}"),
        }
    }
}

#[test]
fn failed_summariser_falls_back_or_leaves_history_alone() {
    let conv = fixture::session(13, 30, 20);
    let before = counter().total(&conv);
    let c = Compactor::new(Policy::for_window(before / 2), Arc::new(Failing), counter()).unwrap();
    let done = block_on(c.compact(&conv)).unwrap();
    assert_eq!(done.report.summarizer.as_deref(), Some("deterministic"));
    // The failed calls are reported, not hidden behind the fallback.
    assert_eq!(done.report.summary_usage.calls, 2);
    assert_eq!(done.report.summary_usage.input_tokens, 1_000);
    assert!(
        done.report.warnings.iter().any(|w| w.contains("failing")),
        "{:?}",
        done.report.warnings
    );

    let strict = Policy {
        on_summarizer_failure: SummarizerFailure::Fail,
        ..Policy::for_window(before / 2)
    };
    let c = Compactor::new(strict, Arc::new(Failing), counter()).unwrap();
    let copy = conv.clone();
    assert!(matches!(
        block_on(c.compact(&conv)),
        Err(CompactError::Summarizer(_))
    ));
    assert_eq!(conv, copy);
}

#[test]
fn oversized_summaries_are_replanned_a_bounded_number_of_times() {
    let conv = fixture::session(11, 30, 20);
    let before = counter().total(&conv);
    let verbose = Arc::new(Verbose(AtomicU32::new(0)));
    let c = Compactor::new(Policy::for_window(before / 2), verbose.clone(), counter()).unwrap();
    let outcome = block_on(c.compact(&conv));
    assert!(verbose.0.load(Ordering::SeqCst) <= compact_engine::MAX_PLANS);
    match outcome {
        Ok(done) => assert!(done.report.tokens_after <= c.budget().usable),
        Err(
            CompactError::StillOverBudget { .. }
            | CompactError::InsufficientBudget { .. }
            | CompactError::NoProgress { .. },
        ) => {}
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn no_progress_is_an_error_not_a_loop() {
    let conv = prepared();
    let before = counter().total(&conv);
    let c = compactor(Policy::for_window(before));
    let once = block_on(c.compact(&conv)).unwrap().conversation;
    // Compacting the compacted conversation again (it fits, and there is too little left to free
    // to be worth a rewrite) is a typed error naming both sizes, not another round.
    match block_on(c.compact(&once)) {
        Err(CompactError::NoProgress { before, after }) => {
            assert_eq!(before, counter().total(&once));
            assert!(
                after >= before || before - after < c.budget().min_gain,
                "{before} -> {after}"
            );
        }
        other => panic!("expected NoProgress, got {other:?}"),
    }
    // A history that is all pinned (the system prompt and a protected user message) and over the
    // budget cannot be compacted by any strategy: a typed error, never a loop or a larger result.
    let mut pinned = Conversation::default();
    pinned.push(Item::text(Role::System, "You are a coding agent."));
    let mut big = Item::text(Role::User, "word ".repeat(4_000));
    big.meta.protected = true;
    pinned.push(big);
    let small = Policy::for_window(2_000);
    for &s in StrategyName::ALL {
        let c = compactor(small.clone()).with_strategy(s);
        match block_on(c.compact(&pinned)) {
            Err(
                CompactError::NoProgress { .. }
                | CompactError::InsufficientBudget { .. }
                | CompactError::StillOverBudget { .. },
            ) => {}
            other => panic!("{s}: expected a typed error, got {other:?}"),
        }
    }
    // Preflight below the trigger does nothing.
    let p = block_on(c.preflight(&once)).unwrap();
    assert_eq!(p.decision, Decision::None);
    assert!(p.report.is_none());
}

#[test]
fn long_session_never_sends_over_the_window() {
    let window = 16_000;
    let policy = Policy {
        keep_recent_turns: 3,
        ..Policy::for_window(window)
    };
    let c = compactor(policy);
    let usable = c.budget().usable;
    let mut rng = fixture::Rng(42);
    let mut conv = fixture::session(5, 0, 1);
    let mut produced = 0usize;
    let mut compactions = 0;
    let mut turn = 0;
    while produced < 3 * window {
        let before = counter().total(&conv);
        fixture::push_turn(&mut conv, &mut rng, turn, 12);
        produced += counter().total(&conv).saturating_sub(before);
        turn += 1;
        let p = block_on(c.preflight(&conv)).unwrap();
        let sent = counter().total(&p.conversation);
        assert!(sent <= usable, "turn {turn}: sent {sent} > usable {usable}");
        assert!(normalize(&p.conversation, &ProviderRules::OpenAiChat)
            .diagnostics
            .is_empty());
        if let Some(r) = &p.report {
            compactions += 1;
            if sent > c.budget().trigger {
                let dry = c.plan(&conv).unwrap();
                panic!(
                    "compaction left {sent} above the trigger: {r:?}\n{}",
                    dry.plan
                );
            }
        }
        conv = p.conversation;
    }
    assert!(
        compactions >= 2,
        "only {compactions} compactions over {turn} turns"
    );
    // One checkpoint at most: checkpoints are folded, never stacked.
    let checkpoints = conv
        .items
        .iter()
        .filter(|i| matches!(i.body(), ItemBody::Checkpoint(_)))
        .count();
    assert!(checkpoints <= 1, "{checkpoints} checkpoints");
}

/// At realistic budgets the deterministic checkpoint fits; at tiny ones it may overshoot (errors are
/// never dropped), which the compactor handles by re-planning with the real size.
#[test]
fn deterministic_summary_respects_its_budget() {
    let conv = fixture::session(17, 40, 10);
    let first = compact_core::checkpoint::build(
        &conv.items[..conv.items.len() / 2],
        None,
        &compact_core::checkpoint::CheckpointOptions {
            max_tokens: 2_000,
            counter: counter(),
        },
    );
    for max_tokens in [1_500, 3_000] {
        let request = SummaryRequest {
            items: &conv.items[conv.items.len() / 2..],
            previous: Some(&first),
            max_tokens,
            counter: counter(),
            also_preserve: None,
            prefix: None,
        };
        let s = block_on(DeterministicSummarizer.summarize(request)).unwrap();
        let n = counter().count_text(&s.text);
        assert!(n <= max_tokens, "{n} > {max_tokens}");
    }
}

/// A summariser that writes a few words whatever it is given, and counts its calls; the flag says
/// whether it stands for a model call.
struct Terse(AtomicU32, bool);
impl Summarizer for Terse {
    fn name(&self) -> &str {
        "terse"
    }
    fn costs_a_call(&self) -> bool {
        self.1
    }
    fn summarize<'a>(
        &'a self,
        _: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(Summary {
                text: "Earlier: the agent read and edited the files of the task.".into(),
                produced_by: "terse".into(),
                ..Summary::default()
            })
        })
    }
}

/// A checkpoint far under its planned size leaves room: the compaction is re-planned once with the
/// checkpoint's real size and keeps more of the history, still within the target and valid.
#[test]
fn a_checkpoint_under_its_plan_gives_its_room_back_to_the_history() {
    let conv = fixture::session(17, 40, 20);
    let before = counter().total(&conv);
    let policy = Policy::for_window(before / 2);
    // A summariser that costs a model call is not asked twice: the first plan stands.
    let billed = Arc::new(Terse(AtomicU32::new(0), true));
    let c = Compactor::new(policy.clone(), billed.clone(), counter()).unwrap();
    let once = block_on(c.compact(&conv)).unwrap();
    assert_eq!(billed.0.load(Ordering::SeqCst), 1, "one billed summary");
    assert_eq!(once.report.plans, 1);
    let terse = Arc::new(Terse(AtomicU32::new(0), false));
    let c = Compactor::new(policy.clone(), terse.clone(), counter()).unwrap();
    let done = block_on(c.compact(&conv)).unwrap();
    assert_eq!(terse.0.load(Ordering::SeqCst), 2, "one summary per plan");
    assert_eq!(done.report.plans, 2);
    assert!(
        done.report
            .warnings
            .iter()
            .any(|w| w.contains("re-planned to keep more")),
        "{:?}",
        done.report.warnings
    );
    assert!(done.report.tokens_after <= c.budget().target);
    // The first plan alone (summarised with the budgeted size) keeps less.
    let dry = c.plan(&conv).unwrap();
    let first_kept = dry
        .plan
        .items
        .iter()
        .filter(|p| p.action.is_present())
        .count();
    let kept = done
        .plan
        .items
        .iter()
        .filter(|p| p.action.is_present())
        .count();
    assert!(kept > first_kept, "{kept} items kept, {first_kept} before");
    let check = normalize(
        &done.conversation,
        &ProviderRules::for_format(compact_core::model::Format::OpenAiChat),
    );
    assert!(check.diagnostics.is_empty(), "{:?}", check.diagnostics);
}

/// A summariser that fills its whole budget and says that entries were left out (as the
/// deterministic record does when it has more to say than its budget), counting its calls; the
/// flag says whether it stands for a model call.
struct Full(AtomicU32, bool);
impl Summarizer for Full {
    fn name(&self) -> &str {
        "full"
    }
    fn costs_a_call(&self) -> bool {
        self.1
    }
    fn summarize<'a>(
        &'a self,
        r: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let mut text = String::from(
            "# Record of earlier work\n## Errors and failed approaches\n(4 more not shown)\n",
        );
        while r.counter.count_text(&text) + 12 < r.max_tokens {
            text.push_str("- a failure kept\n");
        }
        Box::pin(async move {
            Ok(Summary {
                text,
                produced_by: "full".into(),
                ..Summary::default()
            })
        })
    }
}

/// A checkpoint that was given the whole scaled limit and still left entries out is re-planned once
/// with a larger one (a third of the usable budget, at most `summary_max_tokens`): the record grows,
/// the history gives way, the result stays within the target. A billed summariser is asked once.
#[test]
fn a_record_with_more_to_say_than_its_budget_grows_at_small_windows() {
    let conv = fixture::session(17, 40, 20);
    let before = counter().total(&conv);
    let policy = Policy::for_window(before / 2);
    let billed = Arc::new(Full(AtomicU32::new(0), true));
    let c = Compactor::new(policy.clone(), billed.clone(), counter()).unwrap();
    let once = block_on(c.compact(&conv)).unwrap();
    assert_eq!(billed.0.load(Ordering::SeqCst), 1, "one billed summary");
    assert_eq!(once.report.plans, 1);
    let limit = c.budget().limits.summary;
    let grown = ((c.budget().usable as f64 / 3.0) as usize).min(policy.summary_max_tokens);
    assert!(
        grown > limit,
        "the share binds at this window: {grown} > {limit}"
    );

    let free = Arc::new(Full(AtomicU32::new(0), false));
    let c = Compactor::new(policy.clone(), free.clone(), counter()).unwrap();
    let done = block_on(c.compact(&conv)).unwrap();
    assert_eq!(free.0.load(Ordering::SeqCst), 2, "one summary per plan");
    assert_eq!(done.report.plans, 2);
    assert!(
        done.report
            .warnings
            .iter()
            .any(|w| w.contains("left entries out")),
        "{:?}",
        done.report.warnings
    );
    let text = done
        .conversation
        .items
        .iter()
        .find_map(|i| match i.body() {
            ItemBody::Checkpoint(c) => Some(c.text.clone()),
            _ => None,
        })
        .unwrap();
    let tokens = counter().count_text(&text);
    assert!(
        tokens > limit && tokens <= grown,
        "{limit} < {tokens} <= {grown}"
    );
    assert!(done.report.tokens_after <= c.budget().target);
    let check = normalize(
        &done.conversation,
        &ProviderRules::for_format(compact_core::model::Format::OpenAiChat),
    );
    assert!(check.diagnostics.is_empty(), "{:?}", check.diagnostics);

    // Where the policy's own limit binds (a large window), there is nothing to grow into.
    let wide = Policy {
        summary_max_tokens: limit.min(200),
        ..policy
    };
    let free = Arc::new(Full(AtomicU32::new(0), false));
    let c = Compactor::new(wide, free.clone(), counter()).unwrap();
    let done = block_on(c.compact(&conv)).unwrap();
    assert_eq!(done.report.plans, 1);
    assert_eq!(free.0.load(Ordering::SeqCst), 1);
}
