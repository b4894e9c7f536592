//! Reports: per-session and aggregate figures per strategy, and their JSON form.

use crate::continuation::{BoundaryScore, CutScore};
use crate::parallel::Job;
use crate::probes::ProbeKind;
use crate::retention::Retention;
use crate::session::SessionRun;
use crate::stats::percentile;
use compact_core::boundary::Boundary;
use serde_json::{json, Map, Value};

/// Figures of one strategy over one or more sessions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StrategyTotals {
    /// Strategy name.
    pub strategy: String,
    /// Sessions replayed.
    pub sessions: usize,
    /// Model calls.
    pub calls: usize,
    /// Calls over the window.
    pub overflows: usize,
    /// Calls at which a compaction ran.
    pub compactions: usize,
    /// Calls whose preflight failed (the request went out as held).
    pub refusals: usize,
    /// Largest request, in tokens.
    pub peak_tokens: usize,
    /// Request tokens, summed over calls.
    pub input_tokens: u64,
    /// Of those, served by the prompt cache.
    pub cached_tokens: u64,
    /// Output tokens (the agent's real replies).
    pub output_tokens: u64,
    /// Cost in USD, summariser calls included.
    pub cost: f64,
    /// Summariser calls the compactions made (0 with the deterministic checkpoint).
    pub summarizer_calls: u64,
    /// Their input tokens, as the provider reported them.
    pub summarizer_input_tokens: u64,
    /// Their output tokens.
    pub summarizer_output_tokens: u64,
    /// Of [`StrategyTotals::cost`], what they cost.
    pub summarizer_cost: f64,
    /// Probes at each session's last call, pooled over sessions.
    pub final_retention: Retention,
    /// Probes at every call, pooled.
    pub call_retention: Retention,
    /// Median preflight time, µs.
    pub preflight_us_p50: u64,
    /// 99th percentile preflight time, µs.
    pub preflight_us_p99: u64,
    /// Slowest preflight, µs.
    pub preflight_us_max: u64,
    /// Tiers applied, with how many compactions used each.
    pub tiers: Vec<(String, usize)>,
    /// Request tokens before each compaction, summed over compactions.
    pub compacted_input_tokens: u64,
    /// Tokens compactions removed with the reversible stage alone, summed.
    pub removed_reversible: u64,
    /// Tokens compactions removed with the lossy tiers (the rest), summed.
    pub removed_lossy: u64,
    /// Where compactions landed: at a user turn's end, a plan step done, checks passing after edits
    /// ([`compact_core::boundary`]), or in the middle of the work.
    pub landed: Landings,
    /// The first few distinct reasons preflights failed, for diagnosis.
    pub refusal_reasons: Vec<String>,
    /// Continuation probes at the cuts, with the naive baselines.
    pub continuation: ContinuationTotals,
}

/// Compactions counted by the point of the work they landed at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Landings {
    /// At a user turn's end.
    pub turn_end: usize,
    /// Right after a plan step was marked done.
    pub step_done: usize,
    /// Right after checks passed following edits.
    pub checks_passed: usize,
    /// Anywhere else (in the middle of a tool chain).
    pub mid_work: usize,
}

impl Landings {
    fn add(&mut self, at: Option<Boundary>) {
        match at {
            Some(Boundary::TurnEnd) => self.turn_end += 1,
            Some(Boundary::StepDone) => self.step_done += 1,
            Some(Boundary::ChecksPassed) => self.checks_passed += 1,
            None => self.mid_work += 1,
        }
    }

    /// Compactions at any natural boundary.
    pub fn at_boundary(&self) -> usize {
        self.turn_end + self.step_done + self.checks_passed
    }

    fn to_json(self) -> Value {
        json!({"turn_end": self.turn_end, "step_done": self.step_done,
               "checks_passed": self.checks_passed, "mid_work": self.mid_work})
    }
}

/// Continuation probes pooled over cuts: the mean share of anchors held by the strategy's request, by
/// a tail of the same size and by a window filling the usable budget, and the strategy's record
/// against the same-size tail cut by cut.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ContinuationTotals {
    /// Cuts scored.
    pub cuts: usize,
    /// Sum of the strategy's shares.
    pub strategy_sum: f64,
    /// Sum of the same-size tail's shares.
    pub tail_sum: f64,
    /// Sum of the usable-budget window's shares.
    pub window_sum: f64,
    /// Sum of the shares the strategy's request holds or names by a recallable id.
    pub recallable_sum: f64,
    /// Sum of the request tokens at the cuts.
    pub tokens_sum: u64,
    /// Cuts where the strategy held more than the same-size tail.
    pub wins: usize,
    /// Cuts where they held as much.
    pub ties: usize,
    /// Cuts where the tail held more.
    pub losses: usize,
}

impl ContinuationTotals {
    /// Adds one cut.
    pub fn add(&mut self, cut: &CutScore) {
        self.cuts += 1;
        let (s, t) = (cut.strategy.share(), cut.tail.share());
        self.strategy_sum += s;
        self.tail_sum += t;
        self.window_sum += cut.window.share();
        self.recallable_sum += cut.recallable.share();
        self.tokens_sum += cut.tokens as u64;
        match s.partial_cmp(&t) {
            Some(std::cmp::Ordering::Greater) => self.wins += 1,
            Some(std::cmp::Ordering::Less) => self.losses += 1,
            _ => self.ties += 1,
        }
    }

    fn mean(&self, sum: f64) -> Option<f64> {
        (self.cuts > 0).then(|| sum / self.cuts as f64)
    }

    /// Mean share the strategy held (`None` without cuts).
    pub fn strategy(&self) -> Option<f64> {
        self.mean(self.strategy_sum)
    }

    /// Mean share the same-size tail held.
    pub fn tail(&self) -> Option<f64> {
        self.mean(self.tail_sum)
    }

    /// Mean share the usable-budget window held.
    pub fn window(&self) -> Option<f64> {
        self.mean(self.window_sum)
    }

    /// Mean share the strategy's request held or named by a recallable id.
    pub fn with_recall(&self) -> Option<f64> {
        self.mean(self.recallable_sum)
    }

    /// Mean request tokens at the cuts.
    pub fn tokens(&self) -> Option<f64> {
        self.mean(self.tokens_sum as f64)
    }

    /// The JSON object of these figures.
    pub fn to_json(self) -> Value {
        json!({
            "cuts": self.cuts,
            "score": self.strategy(),
            "score_with_recall": self.with_recall(),
            "tail_same_size": self.tail(),
            "window_usable": self.window(),
            "tokens_at_cut": self.tokens(),
            "vs_tail": {"wins": self.wins, "ties": self.ties, "losses": self.losses},
        })
    }
}

/// The agent's own compactions recorded in transcripts, pooled: mean shares held by its summary, by a
/// deterministic checkpoint of the same size and by a tail of that size.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BoundaryTotals {
    /// Compactions scored.
    pub count: usize,
    /// Sum of the summaries' tokens.
    pub summary_tokens: u64,
    /// Sum of the checkpoints' tokens.
    pub checkpoint_tokens: u64,
    /// Sum of the summaries' shares.
    pub summary_sum: f64,
    /// Sum of the checkpoints' shares.
    pub checkpoint_sum: f64,
    /// Sum of the tails' shares.
    pub tail_sum: f64,
    /// Sum of the tokens of the checkpoints given the summary's size as budget.
    pub budgeted_tokens: u64,
    /// Sum of their shares.
    pub budgeted_sum: f64,
}

impl BoundaryTotals {
    /// Totals of `scores`.
    pub fn of<'a>(scores: impl IntoIterator<Item = &'a BoundaryScore>) -> Self {
        let mut t = BoundaryTotals::default();
        for b in scores {
            t.count += 1;
            t.summary_tokens += b.summary_tokens as u64;
            t.checkpoint_tokens += b.checkpoint_tokens as u64;
            t.summary_sum += b.summary.share();
            t.checkpoint_sum += b.checkpoint.share();
            t.tail_sum += b.tail.share();
            t.budgeted_tokens += b.budgeted_tokens as u64;
            t.budgeted_sum += b.budgeted.share();
        }
        t
    }

    /// Mean of `sum` over the compactions (`None` without any).
    pub fn mean(&self, sum: f64) -> Option<f64> {
        (self.count > 0).then(|| sum / self.count as f64)
    }

    /// The JSON object of these figures.
    pub fn to_json(self) -> Value {
        json!({
            "compactions": self.count,
            "summary_tokens": self.mean(self.summary_tokens as f64),
            "checkpoint_tokens": self.mean(self.checkpoint_tokens as f64),
            "summary": self.mean(self.summary_sum),
            "checkpoint": self.mean(self.checkpoint_sum),
            "tail": self.mean(self.tail_sum),
            "checkpoint_budgeted_tokens": self.mean(self.budgeted_tokens as f64),
            "checkpoint_budgeted": self.mean(self.budgeted_sum),
        })
    }
}

/// At most this many distinct refusal reasons are kept per strategy (enough to diagnose, short enough
/// to read).
const MAX_REFUSAL_REASONS: usize = 3;

impl StrategyTotals {
    /// Totals of `runs` under `strategy`.
    pub fn from_runs<'a>(strategy: &str, runs: impl IntoIterator<Item = &'a SessionRun>) -> Self {
        let mut out = StrategyTotals {
            strategy: strategy.to_owned(),
            ..StrategyTotals::default()
        };
        let mut times = Vec::new();
        for run in runs {
            out.sessions += 1;
            out.calls += run.calls.len();
            out.overflows += run.overflows();
            out.compactions += run.compactions();
            out.refusals += run.refusals();
            out.peak_tokens = out.peak_tokens.max(run.peak_tokens());
            out.input_tokens += run.input_tokens();
            out.cached_tokens += run.cached_tokens();
            out.output_tokens += run.output_tokens();
            out.cost += run.cost();
            out.final_retention.add(&run.final_retention());
            out.call_retention.add(&run.pooled_retention());
            for call in &run.calls {
                times.push(call.preflight_us);
                out.summarizer_cost += call.summarizer_cost;
                if let Some(cut) = &call.cut {
                    out.continuation.add(cut);
                }
                if let Some(reason) = &call.refusal {
                    if out.refusal_reasons.len() < MAX_REFUSAL_REASONS
                        && !out.refusal_reasons.contains(reason)
                    {
                        out.refusal_reasons.push(reason.clone());
                    }
                }
                if let Some(c) = &call.compaction {
                    out.landed.add(call.boundary);
                    out.summarizer_calls += u64::from(c.summarizer.calls);
                    out.summarizer_input_tokens += c.summarizer.input_tokens;
                    out.summarizer_output_tokens += c.summarizer.output_tokens;
                    let removed = c.tokens_before.saturating_sub(c.tokens_after);
                    let reversible = c.reversible_saved.min(removed);
                    out.compacted_input_tokens += c.tokens_before as u64;
                    out.removed_reversible += reversible as u64;
                    out.removed_lossy += (removed - reversible) as u64;
                }
                for tier in call.compaction.iter().flat_map(|c| &c.tiers) {
                    match out.tiers.iter_mut().find(|(t, _)| t == tier) {
                        Some(entry) => entry.1 += 1,
                        None => out.tiers.push((tier.clone(), 1)),
                    }
                }
            }
        }
        out.preflight_us_p50 = percentile(&mut times, 50.0);
        out.preflight_us_p99 = percentile(&mut times, 99.0);
        out.preflight_us_max = times.last().copied().unwrap_or(0);
        out
    }

    /// Cached share of input tokens (0 when nothing was sent).
    pub fn cache_hit_ratio(&self) -> f64 {
        if self.input_tokens == 0 {
            0.0
        } else {
            self.cached_tokens as f64 / self.input_tokens as f64
        }
    }

    /// The JSON object of these figures.
    pub fn to_json(&self) -> Value {
        let by_kind: Map<String, Value> = ProbeKind::ALL
            .iter()
            .map(|&k| (k.as_str().to_owned(), json!(self.final_retention.of(k))))
            .collect();
        let tiers: Map<String, Value> = self
            .tiers
            .iter()
            .map(|(t, n)| (t.clone(), json!(n)))
            .collect();
        json!({
            "strategy": self.strategy,
            "sessions": self.sessions,
            "calls": self.calls,
            "overflows": self.overflows,
            "compactions": self.compactions,
            "refusals": self.refusals,
            "peak_tokens": self.peak_tokens,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
            "cache_hit_ratio": self.cache_hit_ratio(),
            "cost": self.cost,
            "summarizer": {"calls": self.summarizer_calls,
                           "input_tokens": self.summarizer_input_tokens,
                           "output_tokens": self.summarizer_output_tokens,
                           "cost": self.summarizer_cost},
            "retention": self.final_retention.overall(),
            "retention_failed_approaches": self.final_retention.of(ProbeKind::FailedCommand),
            "retention_by_kind": by_kind,
            "retention_per_call": self.call_retention.overall(),
            "retention_failed_approaches_per_call": self.call_retention.of(ProbeKind::FailedCommand),
            "preflight_us_p50": self.preflight_us_p50,
            "preflight_us_p99": self.preflight_us_p99,
            "preflight_us_max": self.preflight_us_max,
            "tiers": tiers,
            "compacted_input_tokens": self.compacted_input_tokens,
            "removed_reversible": self.removed_reversible,
            "removed_lossy": self.removed_lossy,
            "compactions_landed": self.landed.to_json(),
            "refusal_reasons": self.refusal_reasons,
            "continuation": self.continuation.to_json(),
        })
    }
}

/// One session's figures under every strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionReport {
    /// Display name.
    pub name: String,
    /// Transcript format.
    pub format: String,
    /// Items in the transcript.
    pub items: usize,
    /// Probes derived, per [`ProbeKind::index`].
    pub probes: [usize; ProbeKind::COUNT],
    /// Figures per strategy, in the order of the comparison.
    pub strategies: Vec<StrategyTotals>,
    /// Request tokens per call, per strategy (for plots).
    pub tokens_per_call: Vec<Vec<usize>>,
    /// Share of expected probes present at each call, per strategy (`None` before any is expected).
    pub retention_per_call: Vec<Vec<Option<f64>>>,
    /// The probes each strategy lost by the last call (expected there, no longer in its request):
    /// kind and text, per strategy.
    pub lost_probes: Vec<Vec<(ProbeKind, String)>>,
}

/// A transcript that could not be read or imported, left out of the replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedFile {
    /// The file as named on the command line.
    pub file: String,
    /// Why it was left out (the import error, which names the place).
    pub reason: String,
}

/// A whole replay: every session and the aggregate per strategy.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Window replayed at.
    pub window: usize,
    /// Model whose tokenizer and prices were used.
    pub model: String,
    /// Tokenizer name.
    pub encoding: String,
    /// Sessions, in input order.
    pub sessions: Vec<SessionReport>,
    /// Figures per strategy over all sessions.
    pub aggregate: Aggregate,
    /// Figures per strategy over the sessions of each transcript format, formats in name order.
    pub by_format: Vec<(String, Aggregate)>,
    /// Transcripts left out because they could not be read, in input order (empty from
    /// [`Report::build`]; the caller that loaded the files fills it).
    pub skipped: Vec<SkippedFile>,
    /// The compactions the transcripts recorded, scored per format (formats in name order; empty
    /// from [`Report::build`], filled by [`Report::with_boundaries`]).
    pub boundaries: Vec<(String, BoundaryTotals)>,
}

/// Figures per strategy over all sessions, in the order of the comparison.
pub type Aggregate = Vec<StrategyTotals>;

impl Report {
    /// Builds the report of `runs` (indexed `[job][strategy]`, as [`crate::run_matrix`] returns them).
    pub fn build(
        model: &str,
        encoding: &str,
        window: usize,
        jobs: &[Job],
        names: &[String],
        runs: &[Vec<SessionRun>],
    ) -> Report {
        let sessions = jobs
            .iter()
            .zip(runs)
            .map(|(job, row)| {
                let mut probes = [0usize; ProbeKind::COUNT];
                job.probes
                    .probes()
                    .iter()
                    .for_each(|p| probes[p.kind.index()] += 1);
                SessionReport {
                    name: job.name.clone(),
                    format: job.format.clone(),
                    items: job.conversation.items.len(),
                    probes,
                    strategies: names
                        .iter()
                        .zip(row)
                        .map(|(n, r)| StrategyTotals::from_runs(n, [r]))
                        .collect(),
                    tokens_per_call: row
                        .iter()
                        .map(|r| r.calls.iter().map(|c| c.tokens).collect())
                        .collect(),
                    retention_per_call: row
                        .iter()
                        .map(|r| r.calls.iter().map(|c| c.retention.overall()).collect())
                        .collect(),
                    lost_probes: row
                        .iter()
                        .map(|r| {
                            r.lost
                                .iter()
                                .filter_map(|&i| job.probes.probes().get(i as usize))
                                .map(|p| (p.kind, p.text.clone()))
                                .collect()
                        })
                        .collect(),
                }
            })
            .collect();
        let totals = |keep: &dyn Fn(&Job) -> bool| -> Aggregate {
            names
                .iter()
                .enumerate()
                .map(|(s, name)| {
                    StrategyTotals::from_runs(
                        name,
                        jobs.iter()
                            .zip(runs)
                            .filter(|(job, _)| keep(job))
                            .filter_map(|(_, row)| row.get(s)),
                    )
                })
                .collect()
        };
        let aggregate = totals(&|_| true);
        let formats: std::collections::BTreeSet<&str> =
            jobs.iter().map(|j| j.format.as_str()).collect();
        let by_format = formats
            .into_iter()
            .map(|f| (f.to_owned(), totals(&|job: &Job| job.format == f)))
            .collect();
        Report {
            window,
            model: model.to_owned(),
            encoding: encoding.to_owned(),
            sessions,
            aggregate,
            by_format,
            skipped: Vec::new(),
            boundaries: Vec::new(),
        }
    }

    /// The same report with the transcripts' own compactions scored (from
    /// [`crate::score_boundaries`]), pooled per format and over all as `all`.
    pub fn with_boundaries(mut self, scores: &[(String, BoundaryScore)]) -> Report {
        if scores.is_empty() {
            return self;
        }
        let formats: std::collections::BTreeSet<&str> =
            scores.iter().map(|(f, _)| f.as_str()).collect();
        self.boundaries = formats
            .into_iter()
            .map(|f| {
                let of = scores.iter().filter(|(g, _)| g == f).map(|(_, b)| b);
                (f.to_owned(), BoundaryTotals::of(of))
            })
            .collect();
        if self.boundaries.len() > 1 {
            let all = BoundaryTotals::of(scores.iter().map(|(_, b)| b));
            self.boundaries.push(("all".to_owned(), all));
        }
        self
    }

    /// The same report, naming the transcripts that were left out.
    pub fn with_skipped(mut self, skipped: Vec<SkippedFile>) -> Report {
        self.skipped = skipped;
        self
    }

    /// The report as JSON: `window`, `model`, `encoding`, `strategies` (aggregate, one object per
    /// strategy), `sessions` (each with its own per-strategy objects, tokens per call and the probes
    /// lost by the last call, `{kind, text}` each) and
    /// `skipped` (`{file, reason}` per transcript that could not be read).
    pub fn to_json(&self) -> Value {
        let sessions: Vec<Value> = self
            .sessions
            .iter()
            .map(|s| {
                let probes: Map<String, Value> = ProbeKind::ALL
                    .iter()
                    .map(|&k| (k.as_str().to_owned(), json!(s.probes[k.index()])))
                    .collect();
                let strategies: Vec<Value> = s
                    .strategies
                    .iter()
                    .zip(s.tokens_per_call.iter().zip(&s.retention_per_call))
                    .enumerate()
                    .map(|(i, (t, (tokens, retention)))| {
                        let mut v = t.to_json();
                        if let Value::Object(map) = &mut v {
                            map.insert("tokens_per_call".into(), json!(tokens));
                            map.insert("retention_per_call_series".into(), json!(retention));
                            let lost: Vec<Value> = s
                                .lost_probes
                                .get(i)
                                .into_iter()
                                .flatten()
                                .map(|(k, text)| json!({"kind": k.as_str(), "text": text}))
                                .collect();
                            map.insert("lost_probes".into(), json!(lost));
                        }
                        v
                    })
                    .collect();
                json!({
                    "name": s.name,
                    "format": s.format,
                    "items": s.items,
                    "probes": probes,
                    "strategies": strategies,
                })
            })
            .collect();
        json!({
            "window": self.window,
            "model": self.model,
            "encoding": self.encoding,
            "strategies": self.aggregate.iter().map(StrategyTotals::to_json).collect::<Vec<_>>(),
            "by_format": self
                .by_format
                .iter()
                .map(|(f, a)| (f.clone(), json!(a.iter().map(StrategyTotals::to_json).collect::<Vec<_>>())))
                .collect::<Map<String, Value>>(),
            "sessions": sessions,
            "source_compactions": self
                .boundaries
                .iter()
                .map(|(f, b)| (f.clone(), b.to_json()))
                .collect::<Map<String, Value>>(),
            "skipped": self
                .skipped
                .iter()
                .map(|k| json!({"file": k.file, "reason": k.reason}))
                .collect::<Vec<_>>(),
        })
    }
}
