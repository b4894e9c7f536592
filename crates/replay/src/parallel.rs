//! Running every (session, strategy) pair of a comparison on a few threads, largest sessions first.

use crate::continuation::{prune_generic, tail_within, BoundaryScore, ContinuationSet, Held};
use crate::preflighter::StrategyFactory;
use crate::probes::ProbeSet;
use crate::session::{replay_session_with_cuts, ReplayOptions, SessionRun};
use compact_core::checkpoint::{build, CheckpointOptions};
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
    /// Its continuation cuts and anchors (and the compactions the transcript recorded).
    pub continuation: ContinuationSet,
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
        let fixed = options.counter.count_tools(&conversation.tools)
            + options.counter.framing().per_request as usize;
        let continuation =
            ContinuationSet::derive(&conversation, &options.counter, fixed, options.usable);
        Job {
            name: name.into(),
            format: format.into(),
            conversation,
            probes,
            continuation,
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
                let run = replay_session_with_cuts(
                    &jobs[j].conversation,
                    &jobs[j].probes,
                    &jobs[j].continuation,
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

/// Drops the anchors that sessions of several projects share (see [`prune_generic`]); call it once
/// all the jobs of a replay are loaded.
pub fn prune_generic_jobs(jobs: &mut [Job]) {
    prune_generic(
        jobs.iter_mut()
            .map(|j| (&mut j.continuation, j.name.as_str())),
    );
}

/// Builds at most this many checkpoints to find the one of a summary's size.
const SIZE_SEARCH_BUILDS: usize = 12;

/// The largest deterministic checkpoint of `history` that counts at most `size` tokens: the
/// builder's budget is an upper bound it often stays well under (entries are whole, sections have
/// floors), so the budget is searched for the one whose checkpoint comes closest to `size` from
/// below. The comparison with a summary is then at the summary's size, not a fifth under it.
pub fn checkpoint_of_size(
    history: &[compact_core::model::Item],
    size: usize,
    counter: compact_core::tokens::TokenCounter,
) -> compact_core::model::Checkpoint {
    let make = |max_tokens: usize| {
        let c = build(
            history,
            None,
            &CheckpointOptions {
                max_tokens,
                counter,
            },
        );
        let tokens = counter.count_text(&c.text);
        (c, tokens)
    };
    let (first, first_tokens) = make(size);
    let mut best = (first, first_tokens);
    // `lo` fits, `hi` (when known) does not.
    let mut lo = size;
    let mut hi: Option<usize> = None;
    if first_tokens > size {
        hi = Some(size);
        lo = 0;
    }
    for _ in 1..SIZE_SEARCH_BUILDS {
        let next = match hi {
            None => lo.saturating_mul(2).max(lo + 1),
            Some(h) if h > lo + 1 => lo + (h - lo) / 2,
            Some(_) => break,
        };
        let (c, tokens) = make(next);
        if tokens <= size {
            lo = next;
            // Everything the history holds already fits: a larger budget changes nothing.
            let plateau = hi.is_none() && tokens == best.1;
            if tokens > best.1 || best.1 > size {
                best = (c, tokens);
            }
            if tokens == size || plateau {
                break;
            }
        } else {
            hi = Some(next);
        }
    }
    best.0
}

/// Scores every compaction the transcripts recorded: the agent's own summary, a deterministic
/// checkpoint of the same size built from the history before it, and a tail of that size. Returned
/// with the job's format, in job order.
pub fn score_boundaries(jobs: &[Job], options: &ReplayOptions) -> Vec<(String, BoundaryScore)> {
    let counter = options.counter;
    let mut out = Vec::new();
    for job in jobs {
        let set = &job.continuation;
        for (cut, summary) in set.boundaries() {
            let summary_tokens = counter.count_text(summary);
            let history: Vec<_> = job.conversation.items[..cut.at]
                .iter()
                .filter(|i| i.meta.visibility.model)
                .cloned()
                .collect();
            let checkpoint = checkpoint_of_size(&history, summary_tokens, counter);
            let budgeted = build(
                &history,
                None,
                &CheckpointOptions {
                    max_tokens: summary_tokens,
                    counter,
                },
            );
            let in_text =
                |text: &str| -> Held { set.held_in(cut, &set.find_in(text).into_iter().collect()) };
            let tail = tail_within(
                &job.conversation.items[..cut.at],
                &counter,
                0,
                summary_tokens,
            );
            out.push((
                job.format.clone(),
                BoundaryScore {
                    summary_tokens,
                    checkpoint_tokens: counter.count_text(&checkpoint.text),
                    summary: in_text(summary),
                    checkpoint: in_text(&checkpoint.text),
                    tail: set.held_by(cut, tail),
                    budgeted_tokens: counter.count_text(&budgeted.text),
                    budgeted: in_text(&budgeted.text),
                },
            ));
        }
    }
    out
}
