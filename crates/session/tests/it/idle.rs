//! Idle-time compaction: a quiet session whose next call would compact is compacted ahead of it, so
//! the next preflight only appends; a call that comes in meanwhile wins; the background thread
//! does it once per quiet spell.

use crate::common::{counter, manager, Agent};
use compact_core::budget::Budget;
use compact_core::model::Format;
use compact_core::policy::{Mode, Policy, StrategyName, SummarizerFailure};
use compact_engine::{
    BoxFuture, DeterministicSummarizer, SummarizeError, Summarizer, Summary, SummaryRequest,
};
use compact_session::record::Record;
use compact_session::{
    CompactManager, EventKind, IdleCompactor, IdleOutcome, IdleSettings, MemoryStore, SessionConfig,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WINDOW: usize = 16_000;

fn idle_events(m: &CompactManager, session: &str) -> Vec<serde_json::Value> {
    m.store()
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e)
                if e.kind == EventKind::Compacted
                    && e.get("trigger").and_then(|t| t.as_str()) == Some("idle") =>
            {
                Some(e.to_json())
            }
            _ => None,
        })
        .collect()
}

/// Drives `agent` through `m` until an idle compaction is due, as a `probe` manager with the same
/// policy (and its own deterministic summariser) fed the same calls says; `m` is left uncompacted.
fn grow_until_due(m: &CompactManager, probe: &CompactManager, agent: &mut Agent) {
    for _ in 0..400 {
        agent.step();
        m.preflight("s", &agent.history).unwrap();
        probe.preflight("s", &agent.history).unwrap();
        if matches!(
            probe.idle_compact("s").unwrap(),
            IdleOutcome::Compacted { .. }
        ) {
            return;
        }
    }
    panic!("no idle compaction due in 400 steps");
}

#[test]
fn a_quiet_session_whose_next_call_would_compact_is_compacted_ahead_of_it() {
    let m = manager(WINDOW);
    // The same calls through a manager that never compacts when idle.
    let control = manager(WINDOW);
    let trigger = Budget::new(&Policy::for_window(WINDOW)).trigger;
    let mut agent = Agent::new(21, Format::OpenAiChat);
    let mut compacted_at = None;
    for step in 0..400 {
        agent.step();
        let ours = m.preflight("s", &agent.history).unwrap();
        let theirs = control.preflight("s", &agent.history).unwrap();
        if compacted_at.is_none() {
            // Until the first idle compaction both managers do the same thing.
            assert_eq!(ours.conversation.items, theirs.conversation.items);
        }
        if let Some(at) = compacted_at {
            // After it, ours extends the compacted view until it reaches the trigger again;
            // the control compacts at the first call that reaches the trigger.
            assert!(ours.report.tokens < trigger);
            if theirs.report.compaction.is_some() {
                assert!(
                    ours.report.compaction.is_none(),
                    "step {step}: the idle compaction at step {at} did that call's work"
                );
                assert!(ours.report.reused_items > 0 && ours.report.new_items > 0);
                return;
            }
            continue;
        }
        match m.idle_compact("s").unwrap() {
            IdleOutcome::Compacted {
                tokens_before,
                tokens_after,
            } => {
                assert!(tokens_after < tokens_before);
                assert_eq!(idle_events(&m, "s").len(), 1);
                compacted_at = Some(step);
            }
            IdleOutcome::NotDue {
                tokens,
                expected_growth,
                trigger: t,
            } => {
                assert_eq!(t, trigger);
                assert!(expected_growth.is_none_or(|g| tokens + g < trigger));
            }
            other => panic!("step {step}: {other:?}"),
        }
    }
    panic!("no idle compaction followed by a control compaction in 400 steps ({compacted_at:?})");
}

#[test]
fn nothing_is_compacted_for_an_unknown_session_a_first_call_or_another_mode() {
    let m = manager(WINDOW);
    assert_eq!(m.idle_compact("nobody").unwrap(), IdleOutcome::NotHeld);
    let mut agent = Agent::new(3, Format::OpenAiChat);
    agent.step();
    m.preflight("s", &agent.history).unwrap();
    // One call: no growth seen yet.
    assert!(matches!(
        m.idle_compact("s").unwrap(),
        IdleOutcome::NotDue {
            expected_growth: None,
            ..
        }
    ));
    // `remind` mode never compacts by itself, so neither does the idle check.
    let mut policy = Policy::for_window(WINDOW);
    policy.mode = Mode::Remind;
    let reminding = CompactManager::open(
        SessionConfig::new(policy, counter()),
        Arc::new(MemoryStore::new()),
    )
    .unwrap();
    for _ in 0..200 {
        agent.step();
        reminding.preflight("s", &agent.history).unwrap();
        assert!(
            matches!(
                reminding.idle_compact("s").unwrap(),
                IdleOutcome::NotDue { .. }
            ),
            "remind mode"
        );
    }
    assert!(idle_events(&reminding, "s").is_empty());
}

/// A summariser whose first call waits until the test lets it go (the deterministic one after).
struct Gate {
    first: AtomicBool,
    entered: Mutex<Option<mpsc::Sender<()>>>,
    release: Mutex<Option<mpsc::Receiver<()>>>,
}

impl Summarizer for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn summarize<'a>(
        &'a self,
        request: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        if self.first.swap(false, Ordering::SeqCst) {
            if let Some(entered) = self.entered.lock().unwrap().take() {
                entered.send(()).unwrap();
            }
            if let Some(release) = self.release.lock().unwrap().take() {
                release.recv().unwrap();
            }
        }
        DeterministicSummarizer.summarize(request)
    }
}

#[test]
fn a_call_that_comes_in_during_the_idle_compaction_wins() {
    let (entered_tx, entered) = mpsc::channel();
    let (release, release_rx) = mpsc::channel();
    let gate = Arc::new(Gate {
        first: AtomicBool::new(false),
        entered: Mutex::new(Some(entered_tx)),
        release: Mutex::new(Some(release_rx)),
    });
    // `codex` summarises on every compaction, so the idle one calls the summariser.
    let mut policy = Policy::for_window(WINDOW);
    policy.strategy = StrategyName::Codex;
    let config = SessionConfig::new(policy.clone(), counter())
        .with_summarizer(Arc::clone(&gate) as Arc<dyn Summarizer>);
    let m = Arc::new(CompactManager::open(config, Arc::new(MemoryStore::new())).unwrap());
    let mut agent = Agent::new(21, Format::OpenAiChat);
    // Grow the session until an idle compaction is due (checked without running one: a probe
    // manager over the same calls says when).
    let probe = CompactManager::open(
        SessionConfig::new(policy, counter()),
        Arc::new(MemoryStore::new()),
    )
    .unwrap();
    grow_until_due(&m, &probe, &mut agent);
    let version = m.store().version("s").unwrap();
    gate.first.store(true, Ordering::SeqCst);
    let idle = {
        let m = Arc::clone(&m);
        std::thread::spawn(move || m.idle_compact("s").unwrap())
    };
    // The summariser is running without the session's lock: a call goes through meanwhile. (The
    // timeout only keeps a broken build from hanging; nothing is timed.)
    entered
        .recv_timeout(Duration::from_secs(120))
        .expect("the idle compaction calls the summariser");
    agent.step();
    let next = m.preflight("s", &agent.history).unwrap();
    assert!(next.report.tokens > 0);
    release.send(()).unwrap();
    assert_eq!(idle.join().unwrap(), IdleOutcome::Superseded);
    assert!(
        idle_events(&m, "s").is_empty(),
        "the dropped result is not logged"
    );
    assert!(m.store().version("s").unwrap() > version);
    // The session goes on normally.
    agent.step();
    m.preflight("s", &agent.history).unwrap();
}

#[test]
fn the_background_thread_compacts_each_quiet_session_once_per_quiet_spell() {
    let m = Arc::new(manager(WINDOW));
    let mut agent = Agent::new(21, Format::OpenAiChat);
    grow_until_due(&m, &manager(WINDOW), &mut agent);
    // A session with little in it is looked at and left alone.
    let mut small = Agent::new(5, Format::OpenAiChat);
    small.step();
    m.preflight("small", &small.history).unwrap();
    small.step();
    m.preflight("small", &small.history).unwrap();

    let idle = IdleCompactor::start(
        &m,
        IdleSettings {
            after: Duration::from_millis(20),
        },
    )
    .unwrap();
    // Waits (no timing is asserted) until the thread has compacted the quiet session.
    let deadline = Instant::now() + Duration::from_secs(60);
    while idle.stats().compacted.load(Ordering::Relaxed) == 0 {
        assert!(Instant::now() < deadline, "no idle compaction within 60 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    while idle.stats().checked.load(Ordering::Relaxed) < 2 {
        assert!(
            Instant::now() < deadline,
            "the small session was not looked at"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(idle_events(&m, "s").len(), 1);
    assert!(idle_events(&m, "small").is_empty());
    // Once per quiet spell: nothing more happens until a call starts a new one.
    let checked = idle.stats().checked.load(Ordering::Relaxed);
    assert!(m.quiet_sessions(Duration::ZERO).is_empty());
    agent.step();
    let next = m.preflight("s", &agent.history).unwrap();
    assert!(next.report.compaction.is_none());
    while idle.stats().checked.load(Ordering::Relaxed) == checked {
        assert!(
            Instant::now() < deadline,
            "the new quiet spell was not looked at"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let stats = idle.stats();
    drop(idle);
    let compacted = stats.compacted.load(Ordering::Relaxed);
    // At most once per spell: the first, and the one the call above may have made due again.
    assert!(compacted <= 2, "{compacted}");
    assert_eq!(idle_events(&m, "s").len() as u64, compacted);
}

/// A summariser that always fails.
struct Down;

impl Summarizer for Down {
    fn name(&self) -> &str {
        "down"
    }
    fn summarize<'a>(
        &'a self,
        _: SummaryRequest<'a>,
    ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
        Box::pin(async { Err(SummarizeError::Transport("connection refused".into())) })
    }
}

#[test]
fn a_failed_idle_compaction_changes_nothing() {
    // `codex` needs the summariser, and a failure is not papered over by the checkpoint.
    let mut policy = Policy::for_window(WINDOW);
    policy.strategy = StrategyName::Codex;
    policy.on_summarizer_failure = SummarizerFailure::Fail;
    let probe = CompactManager::open(
        SessionConfig::new(policy.clone(), counter()),
        Arc::new(MemoryStore::new()),
    )
    .unwrap();
    let m = CompactManager::open(
        SessionConfig::new(policy, counter()).with_summarizer(Arc::new(Down)),
        Arc::new(MemoryStore::new()),
    )
    .unwrap();
    let mut agent = Agent::new(21, Format::OpenAiChat);
    grow_until_due(&m, &probe, &mut agent);
    let before = m.view("s").unwrap();
    let version = m.store().version("s").unwrap();
    let outcome = m.idle_compact("s").unwrap();
    assert!(matches!(outcome, IdleOutcome::Failed(_)), "{outcome:?}");
    assert_eq!(m.store().version("s").unwrap(), version, "nothing logged");
    assert_eq!(m.view("s").unwrap(), before, "the view is as it was");
}
