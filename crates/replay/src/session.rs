//! The replay of one transcript through one strategy: the held history, call by call.

use crate::cache::{PrefixCache, RequestShape};
use crate::calls::{call_points, run_end};
use crate::continuation::{tail_within, ContinuationSet, CutScore};
use crate::fingerprint::{fingerprint, tools_fingerprint};
use crate::preflighter::{Compaction, History, Preflighter, Refusal};
use crate::pricing::Pricing;
use crate::probes::ProbeSet;
use crate::retention::{Retention, RetentionTracker};
use compact_core::boundary::{natural_boundary, Boundary};
use compact_core::model::{Conversation, Item};
use compact_core::tokens::TokenCounter;
use std::collections::HashMap;
use std::time::Instant;

/// Settings of a replay.
#[derive(Debug, Clone, Copy)]
pub struct ReplayOptions {
    /// The context window, in tokens: a request above it is an overflow.
    pub window: usize,
    /// What the input may use under the policy (window minus reserved output and buffer): the
    /// sliding-window baseline of the continuation probes fills it, and a cut is taken only where
    /// the history exceeds it.
    pub usable: usize,
    /// The counter used for every figure (the model's tokenizer and framing).
    pub counter: TokenCounter,
    /// The model's prices.
    pub pricing: Pricing,
}

/// One model call of a replayed session.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// Index of the original item the call produced first (its history is everything before it).
    pub at: usize,
    /// Tokens of the request sent.
    pub tokens: usize,
    /// Of those, tokens the prompt cache would serve.
    pub cached_tokens: usize,
    /// Tokens of what the agent generated (the real assistant items that followed).
    pub output_tokens: usize,
    /// The compaction the preflight ran, if any.
    pub compaction: Option<Compaction>,
    /// Why the preflight failed, if it did (the request was sent as held).
    pub refusal: Option<String>,
    /// Wall time of the preflight, in microseconds.
    pub preflight_us: u64,
    /// Probes expected and present in the request.
    pub retention: Retention,
    /// Cost of the call in USD, with the summariser calls of its compaction.
    pub cost: f64,
    /// Of that, the summariser calls' cost.
    pub summarizer_cost: f64,
    /// At a continuation cut: the anchors the request and the baselines hold.
    pub cut: Option<CutScore>,
    /// The natural boundary the held history was at when the call was made (where a compaction
    /// landed), if any.
    pub boundary: Option<Boundary>,
}

/// All calls of one session under one strategy.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionRun {
    /// The window the session was replayed at.
    pub window: usize,
    /// The calls, in order.
    pub calls: Vec<CallRecord>,
    /// The probes expected at the last call that its request no longer held (indices into the
    /// session's [`ProbeSet`]): what the strategy lost by the end.
    pub lost: Vec<u32>,
}

impl SessionRun {
    /// Calls whose request exceeded the window.
    pub fn overflows(&self) -> usize {
        self.calls.iter().filter(|c| c.tokens > self.window).count()
    }
    /// Calls at which a compaction ran.
    pub fn compactions(&self) -> usize {
        self.calls.iter().filter(|c| c.compaction.is_some()).count()
    }
    /// Calls whose preflight failed.
    pub fn refusals(&self) -> usize {
        self.calls.iter().filter(|c| c.refusal.is_some()).count()
    }
    /// Largest request.
    pub fn peak_tokens(&self) -> usize {
        self.calls.iter().map(|c| c.tokens).max().unwrap_or(0)
    }
    /// Sum of request tokens.
    pub fn input_tokens(&self) -> u64 {
        self.calls.iter().map(|c| c.tokens as u64).sum()
    }
    /// Sum of cached request tokens.
    pub fn cached_tokens(&self) -> u64 {
        self.calls.iter().map(|c| c.cached_tokens as u64).sum()
    }
    /// Sum of output tokens.
    pub fn output_tokens(&self) -> u64 {
        self.calls.iter().map(|c| c.output_tokens as u64).sum()
    }
    /// Total cost in USD.
    pub fn cost(&self) -> f64 {
        self.calls.iter().map(|c| c.cost).sum()
    }
    /// Retention at the last call (what the model knows at the end of the session).
    pub fn final_retention(&self) -> Retention {
        self.calls.last().map(|c| c.retention).unwrap_or_default()
    }
    /// Retention pooled over every call.
    pub fn pooled_retention(&self) -> Retention {
        let mut out = Retention::default();
        self.calls.iter().for_each(|c| out.add(&c.retention));
        out
    }
}

/// The history a live session holds, with per-item data kept in step with its items.
struct Held {
    conversation: Conversation,
    /// Fingerprint of each item, parallel to `conversation.items`.
    fingerprints: Vec<u64>,
    /// Probe hits by item fingerprint, so an item that survives a rewrite is not scanned again.
    hits: HashMap<u64, Box<[u32]>>,
    tracker: RetentionTracker,
}

impl Held {
    fn enter(&mut self, item: Item, probes: &ProbeSet) {
        let fp = fingerprint(&item);
        let hits = self
            .hits
            .entry(fp)
            .or_insert_with(|| probes.find_in_item(&item).into_boxed_slice());
        self.tracker.enter(hits);
        self.fingerprints.push(fp);
        self.conversation.items.push(item);
    }

    /// Recomputes per-item data after the history was rewritten.
    fn rebuild(&mut self, probes: &ProbeSet) {
        let items = std::mem::take(&mut self.conversation.items);
        self.fingerprints.clear();
        self.tracker.clear();
        for item in items {
            self.enter(item, probes);
        }
    }

    /// Cheap consistency check: a preflight that reports no compaction must hand the history back as
    /// it was; if the item count or the last id changed anyway, per-item data is recomputed.
    fn looks_unchanged(&self, last_id: Option<&str>) -> bool {
        self.conversation.items.len() == self.fingerprints.len()
            && self.conversation.items.last().map(|i| i.meta.id.as_str()) == last_id
    }
}

/// Replays `source` through `strategy`: at each call point, hands the held history to the
/// preflight, records the request it returns, then appends the agent's real next items.
pub fn replay_session(
    source: &Conversation,
    probes: &ProbeSet,
    strategy: &mut dyn Preflighter,
    options: &ReplayOptions,
) -> SessionRun {
    replay_session_with_cuts(
        source,
        probes,
        &ContinuationSet::default(),
        strategy,
        options,
    )
}

/// [`replay_session`], also scoring the request and the naive baselines at each cut of
/// `continuation`.
pub fn replay_session_with_cuts(
    source: &Conversation,
    probes: &ProbeSet,
    continuation: &ContinuationSet,
    strategy: &mut dyn Preflighter,
    options: &ReplayOptions,
) -> SessionRun {
    let counter = options.counter;
    let tools_tokens = counter.count_tools(&source.tools);
    let tools_fp = tools_fingerprint(&source.tools);
    let per_request = counter.framing().per_request as usize;
    let mut held = Held {
        conversation: Conversation {
            items: Vec::with_capacity(source.items.len()),
            tools: source.tools.clone(),
            format: source.format,
            extra: source.extra.clone(),
        },
        fingerprints: Vec::with_capacity(source.items.len()),
        hits: HashMap::new(),
        tracker: RetentionTracker::new(probes),
    };
    let mut cache = PrefixCache::new(options.pricing.min_cached_prefix);
    let mut visible_fps: Vec<u64> = Vec::new();
    let mut visible_tokens: Vec<u32> = Vec::new();
    let mut run = SessionRun {
        window: options.window,
        calls: Vec::new(),
        lost: Vec::new(),
    };
    let mut next = 0usize;

    for at in call_points(&source.items) {
        for item in &source.items[next..at] {
            held.enter(item.clone(), probes);
        }
        next = at;

        let last_id = held
            .conversation
            .items
            .last()
            .map(|i| i.meta.id.as_str().to_owned());
        let conversation = std::mem::take(&mut held.conversation);
        let boundary = natural_boundary(&conversation);
        let started = Instant::now();
        let result = strategy.preflight(conversation);
        let preflight_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let (compaction, refusal, history) = match result {
            Ok(outcome) => {
                held.conversation = outcome.conversation;
                (outcome.compaction, None, outcome.history)
            }
            Err(refusal) => {
                let Refusal {
                    conversation,
                    reason,
                } = *refusal;
                held.conversation = conversation;
                (None, Some(reason), History::AsHeld)
            }
        };
        if compaction.is_some()
            || history == History::Repaired
            || !held.looks_unchanged(last_id.as_deref())
        {
            held.rebuild(probes);
        }

        visible_fps.clear();
        visible_tokens.clear();
        for (item, &fp) in held.conversation.items.iter().zip(&held.fingerprints) {
            if item.meta.visibility.model {
                visible_fps.push(fp);
                visible_tokens.push(u32::try_from(counter.count_item(item)).unwrap_or(u32::MAX));
            }
        }
        let tokens =
            tools_tokens + per_request + visible_tokens.iter().map(|&n| n as usize).sum::<usize>();
        let cached_tokens = cache.observe(RequestShape {
            tools_fingerprint: tools_fp,
            tools_tokens,
            items: &visible_fps,
            item_tokens: &visible_tokens,
        });
        let end = run_end(&source.items, at);
        let output_tokens: usize = source.items[at..end]
            .iter()
            .map(|i| counter.count_item(i))
            .sum();
        let cut = continuation.cut_at(at).map(|cut| {
            let fixed = tools_tokens + per_request;
            let held_items = held.conversation.items.iter();
            let history = &source.items[..at];
            CutScore {
                tokens,
                recallable: continuation.held_with_recall(cut, &held.conversation.items, history),
                strategy: continuation.held_by(cut, held_items),
                tail: continuation.held_by(cut, tail_within(history, &counter, fixed, tokens)),
                window: continuation
                    .held_by(cut, tail_within(history, &counter, fixed, options.usable)),
            }
        });
        let summarizer_cost = compaction.as_ref().map_or(0.0, |c| {
            options.pricing.summarizer_cost(
                c.summarizer.input_tokens,
                c.summarizer.cached_input_tokens,
                c.summarizer.output_tokens,
            )
        });
        run.calls.push(CallRecord {
            at,
            tokens,
            cached_tokens,
            output_tokens,
            compaction,
            refusal,
            preflight_us,
            retention: held.tracker.measure(probes, at),
            cost: options.pricing.cost(tokens, cached_tokens, output_tokens) + summarizer_cost,
            summarizer_cost,
            cut,
            boundary,
        });
    }
    if let Some(last) = run.calls.last() {
        run.lost = held.tracker.missing(probes, last.at);
    }
    run
}
