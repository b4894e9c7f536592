//! Running every (session, strategy) pair of a comparison on a few threads, largest sessions first.

use crate::preflighter::StrategyFactory;
use crate::probes::ProbeSet;
use crate::session::{replay_session, ReplayOptions, SessionRun};
use compact_core::model::Conversation;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One transcript to replay, with its probes.
#[derive(Debug, Clone)]
pub struct Job {
    /// Display name (usually the file name).
    pub name: String,
    /// The transcript format's name, for reports.
    pub format: String,
    /// The original transcript.
    pub conversation: Conversation,
    /// Its probes.
    pub probes: ProbeSet,
}

impl Job {
    /// A job for `conversation`, deriving its probes and filling its items' token memos (so that every
    /// strategy's copies of the items start counted).
    pub fn new(
        name: impl Into<String>,
        format: impl Into<String>,
        conversation: Conversation,
        options: &ReplayOptions,
    ) -> Job {
        options.counter.total(&conversation);
        let probes = ProbeSet::derive(&conversation);
        Job {
            name: name.into(),
            format: format.into(),
            conversation,
            probes,
        }
    }
}

/// Told each time a (session, strategy) replay finishes.
pub trait ProgressSink: Sync {
    /// `done` of `total` replays are finished.
    fn advance(&self, done: usize, total: usize);
}

impl ProgressSink for () {
    fn advance(&self, _: usize, _: usize) {}
}

/// Replays every job under every strategy on up to `threads` threads. The result is indexed
/// `[job][strategy]`. Replays are independent, so the figures do not depend on the thread count
/// (timings aside).
pub fn run_matrix(
    jobs: &[Job],
    strategies: &[StrategyFactory],
    options: &ReplayOptions,
    threads: usize,
    progress: &dyn ProgressSink,
) -> Vec<Vec<SessionRun>> {
    let mut order: Vec<(usize, usize)> = (0..jobs.len())
        .flat_map(|j| (0..strategies.len()).map(move |s| (j, s)))
        .collect();
    // Largest sessions first, so a big one does not start last and run alone.
    order.sort_by_key(|&(j, _)| std::cmp::Reverse(jobs[j].conversation.items.len()));
    let total = order.len();
    let results: Mutex<Vec<Vec<Option<SessionRun>>>> =
        Mutex::new(vec![vec![None; strategies.len()]; jobs.len()]);
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, total.max(1)) {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(j, s)) = order.get(k) else { break };
                let mut preflighter = strategies[s].start();
                let run = replay_session(
                    &jobs[j].conversation,
                    &jobs[j].probes,
                    preflighter.as_mut(),
                    options,
                );
                if let Ok(mut table) = results.lock() {
                    table[j][s] = Some(run);
                }
                progress.advance(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|row| row.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}
