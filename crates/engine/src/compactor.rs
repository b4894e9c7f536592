//! [`Compactor`]: plans with a strategy, asks the summariser for the checkpoint text, applies the plan,
//! re-estimates (re-planning with the real summary size when it came out larger than planned, or
//! well under it and the result left room below the target, or with a larger one when a free
//! summariser's record left entries out) and verifies. Every attempt must shrink
//! the conversation: no progress is a typed error, never a loop.

use crate::deterministic::DeterministicSummarizer;
use crate::error::CompactError;
use crate::report::Report;
use crate::summarizer::{Summarizer, SummaryRequest, SummaryUsage};
use compact_core::budget::Budget;
use compact_core::model::Conversation as Conv;
use compact_core::model::{Conversation, Format};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::partition::Survey;
use compact_core::plan::Plan;
use compact_core::plan::{Action, PlanBuilder, Tier};
use compact_core::policy::{
    Policy, ReversibleMode, StrategyName, SummarizerFailure, TriggerReason,
};
use compact_core::provider;
use compact_core::strategy::{self, Request};
use compact_core::tokens::TokenCounter;
use std::sync::Arc;

/// Plans per compaction: the first, and re-plans with the real summary size when it came out larger
/// than planned. Bounded so a summariser that ignores its budget cannot cause a loop. A compaction that
/// fits may take one plan more to grow a record that left entries out (`GROWN_SUMMARY_SHARE`) and
/// one more to use the room a smaller summary left (`ROOM_SHARE`).
pub const MAX_PLANS: u32 = 3;

/// Share of the usable budget a compaction must leave empty below the target before it is re-planned
/// with its checkpoint's real size ([`Compactor::use_room`]).
pub const ROOM_SHARE: f64 = 0.08;
/// Fewest tokens of room worth a re-plan whatever the window: a re-plan rewrites the kept span and
/// may cost a summary, worth it when a tool output or two come back, not a line.
pub const MIN_ROOM_TOKENS: usize = 1_500;

/// Share of the usable budget a checkpoint may grow to when, at its planned size (the scaled
/// [`compact_core::budget::SUMMARY_SHARE`]), it left entries out ([`Compactor::grow_record`]). Never
/// over the policy's `summary_max_tokens`, so it matters where the share binds: small windows.
pub const GROWN_SUMMARY_SHARE: f64 = 1.0 / 3.0;

/// A compaction re-planned with another checkpoint size ([`Compactor::replan`]), not yet adopted.
struct Replanned {
    plan: Plan,
    out: Conversation,
    tokens_after: usize,
    text_tokens: Option<usize>,
    /// The re-plan's checkpoint limit.
    planned: usize,
    /// Warnings of applying it.
    warnings: Vec<String>,
    /// What building its checkpoint produced (its usage is already counted in the caller's draft).
    trial: Draft,
}

impl Replanned {
    /// Takes this re-plan in place of a compaction of `plans` plans: its warnings, the summariser
    /// that produced it and `message` go to `draft` (and its cached checkpoint text with
    /// `keep_cached`).
    fn adopt(self, draft: &mut Draft, message: String, plans: u32, keep_cached: bool) -> Applied {
        draft.warnings.extend(self.warnings);
        draft.warnings.extend(self.trial.warnings);
        draft.produced_by = self.trial.produced_by;
        if keep_cached {
            draft.cached = self.trial.cached;
        }
        draft.warnings.push(message);
        Applied {
            plan: self.plan,
            out: self.out,
            tokens_after: self.tokens_after,
            text_tokens: self.text_tokens,
            plans: plans + 1,
        }
    }
}

/// A plan applied: the compacted conversation, its size, the size of its checkpoint text, and how
/// many plans it took.
struct Applied {
    plan: Plan,
    out: Conversation,
    tokens_after: usize,
    text_tokens: Option<usize>,
    plans: u32,
}

/// A request made ready for planning: normalised, with what the provider's last compaction
/// superseded hidden.
struct Input<'a> {
    /// The request as given.
    conv: &'a Conversation,
    /// `conv` normalised, superseded items hidden: what the strategy plans.
    base: Conversation,
    /// What the provider's last compaction superseded (dropped from the result).
    dropped: Superseded,
    rules: ProviderRules,
    tokens_before: usize,
    /// Normalisation repairs `conv` needed.
    input_repairs: usize,
}

/// What the plans of one compaction carry from one to the next: the warnings so far, who produced
/// the checkpoint text, what the summariser calls cost, and the last summary made.
#[derive(Default)]
struct Draft {
    warnings: Vec<String>,
    produced_by: Option<String>,
    usage: SummaryUsage,
    /// The last summary and the items it covers: a re-plan that summarises the same items reuses
    /// it instead of asking again.
    cached: Option<(Vec<compact_core::model::ItemId>, String)>,
    /// The summariser failed and the deterministic fallback wrote the checkpoint: it is not asked
    /// again for a re-plan that is only worth making, not needed.
    fell_back: bool,
}

/// The result of a compaction.
#[derive(Debug, Clone)]
pub struct Compaction {
    /// The compacted conversation (normalised).
    pub conversation: Conversation,
    /// The plan that was applied.
    pub plan: Plan,
    /// What it did.
    pub report: Report,
}

/// A plan without summarising or applying it (`compactctl plan` / `diff`).
#[derive(Debug, Clone)]
pub struct DryRun {
    /// The normalised input the plan refers to (plan indices index into it).
    pub conversation: Conversation,
    /// The plan.
    pub plan: Plan,
    /// Normalisation repairs made to the input.
    pub input_repairs: usize,
}

/// Compacts conversations under one policy, strategy and summariser. Immutable once built.
#[derive(Clone)]
pub struct Compactor {
    policy: Policy,
    budget: Budget,
    strategy: StrategyName,
    summarizer: Arc<dyn Summarizer>,
    fallback: Arc<dyn Summarizer>,
    counter: TokenCounter,
    rules: Option<ProviderRules>,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("strategy", &self.strategy)
            .field("summarizer", &self.summarizer.name())
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Compactor {
    /// A compactor for a validated `policy` (its strategy, its window), summarising with `summarizer`.
    pub fn new(
        policy: Policy,
        summarizer: Arc<dyn Summarizer>,
        counter: TokenCounter,
    ) -> Result<Self, CompactError> {
        policy.validate()?;
        let budget = Budget::new(&policy);
        Ok(Compactor {
            strategy: policy.strategy,
            policy,
            budget,
            summarizer,
            fallback: Arc::new(DeterministicSummarizer),
            counter,
            rules: None,
        })
    }

    /// The same compactor with another strategy.
    pub fn with_strategy(mut self, strategy: StrategyName) -> Self {
        self.strategy = strategy;
        self
    }

    /// The same compactor normalising for `rules` (default: the rules of each conversation's format).
    pub fn with_rules(mut self, rules: ProviderRules) -> Self {
        self.rules = Some(rules);
        self
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The budget.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The strategy.
    pub fn strategy(&self) -> StrategyName {
        self.strategy
    }

    /// The token counter.
    pub fn counter(&self) -> &TokenCounter {
        &self.counter
    }

    /// The normalisation rules for `conv`.
    pub fn rules_for(&self, conv: &Conversation) -> ProviderRules {
        self.rules
            .unwrap_or_else(|| ProviderRules::for_format(conv.format.unwrap_or(Format::OpenAiChat)))
    }

    /// Plans without summarising or applying (dry run).
    pub fn plan(&self, conv: &Conversation) -> Result<DryRun, CompactError> {
        if let Some(call) = provider::compaction_call(conv) {
            return Err(CompactError::ProviderCompactionCall(call));
        }
        let normalized = normalize(conv, &self.rules_for(conv));
        let dropped = Superseded::of(conv, &normalized.conversation, &self.counter);
        let base = provider::hide(normalized.conversation.clone(), &dropped.indices);
        let request = Request::new(&base, &self.budget, &self.policy, &self.counter);
        let mut plan = strategy::run(self.strategy, &request)?;
        dropped.mark(&mut plan);
        Ok(DryRun {
            input_repairs: normalized.diagnostics.len(),
            conversation: normalized.conversation,
            plan,
        })
    }

    /// Compacts `conv` (whatever its size: the trigger is [`Compactor::preflight`]'s business). The
    /// result is smaller than the input and within the usable budget, or an error; `conv` is never
    /// changed.
    pub async fn compact(&self, conv: &Conversation) -> Result<Compaction, CompactError> {
        self.compact_freeing(conv, self.budget.min_gain).await
    }

    /// Compacts `conv` for the trigger `reason`: as [`Compactor::compact`], except that a compaction
    /// fired at a natural boundary ([`TriggerReason::Boundary`]) of a request that fits need only
    /// free [`Budget::boundary_gain`] (what lies between the boundary floor and the target), not the
    /// full minimum gain: it comes before the trigger on purpose.
    pub async fn compact_for(
        &self,
        conv: &Conversation,
        reason: &TriggerReason,
    ) -> Result<Compaction, CompactError> {
        let min_gain = match reason {
            TriggerReason::Boundary { .. } => self.budget.boundary_gain(),
            _ => self.budget.min_gain,
        };
        self.compact_freeing(conv, min_gain).await
    }

    /// Compacts `conv` ahead of the trigger, requiring only `min_gain` tokens freed instead of the
    /// policy's minimum gain (a compaction that runs before the trigger on purpose, such as the
    /// session runtime's idle-time one, frees what lies between the count and the target).
    pub async fn compact_ahead(
        &self,
        conv: &Conversation,
        min_gain: usize,
    ) -> Result<Compaction, CompactError> {
        self.compact_freeing(conv, min_gain.max(1)).await
    }

    /// Compacts `conv`, requiring `min_gain` tokens freed when the request fits: first by dropping
    /// only what the provider's last compaction superseded, when that is enough, else by planning.
    async fn compact_freeing(
        &self,
        conv: &Conversation,
        min_gain: usize,
    ) -> Result<Compaction, CompactError> {
        if let Some(call) = provider::compaction_call(conv) {
            return Err(CompactError::ProviderCompactionCall(call));
        }
        let rules = self.rules_for(conv);
        let normalized = normalize(conv, &rules);
        // What the provider's last compaction already stands for goes first, at no loss: hidden
        // from the strategy, and dropped from the result.
        let dropped = Superseded::of(conv, &normalized.conversation, &self.counter);
        let input = Input {
            conv,
            base: provider::hide(normalized.conversation, &dropped.indices),
            dropped,
            rules,
            tokens_before: self.counter.total(conv),
            input_repairs: normalized.diagnostics.len(),
        };
        if let Some(done) = self.superseded_only(
            conv,
            &input.base,
            &input.dropped,
            (input.tokens_before, min_gain),
            input.input_repairs,
        )? {
            return Ok(done);
        }
        self.plan_and_apply(&input, min_gain).await
    }

    /// Plans `input`, fills the checkpoint, applies, and re-plans (at most [`MAX_PLANS`] plans)
    /// when the summary came out larger than planned or the result is still over the usable window.
    async fn plan_and_apply(
        &self,
        input: &Input<'_>,
        min_gain: usize,
    ) -> Result<Compaction, CompactError> {
        let mut draft = Draft::default();
        if input.input_repairs > 0 {
            draft.warnings.push(format!(
                "input needed {} normalisation repairs",
                input.input_repairs
            ));
        }
        let mut summary_tokens: Option<usize> = None;
        let mut last_after = input.tokens_before;
        for attempt in 1..=MAX_PLANS {
            let request = Request {
                summary_tokens,
                ..Request::new(&input.base, &self.budget, &self.policy, &self.counter)
            };
            let mut plan = strategy::run(self.strategy, &request)?;
            if plan.is_noop() && input.dropped.indices.is_empty() {
                return Err(CompactError::NoProgress {
                    before: input.tokens_before,
                    after: plan.estimated_after(),
                });
            }
            let text = self.checkpoint_text(input, &plan, &mut draft).await?;
            let text_tokens = text.as_deref().map(|t| self.counter.count_text(t));
            let planned = plan.checkpoint.as_ref().map_or(0, |c| c.max_tokens);
            if let Some(actual) = text_tokens.filter(|&t| t > planned) {
                // A fixed text comes out the same whatever the plan: re-planning cannot help it.
                let summarised = plan
                    .checkpoint
                    .as_ref()
                    .is_some_and(|c| c.fixed_text.is_none());
                if attempt < MAX_PLANS && summarised {
                    draft.warnings.push(format!(
                        "summary of {actual} tokens exceeded the planned {planned}: re-planned"
                    ));
                    summary_tokens = Some(actual);
                    continue;
                }
            }
            input.dropped.mark(&mut plan);
            let out = self.apply_checked(input, &plan, text.as_deref(), &mut draft.warnings)?;
            let tokens_after = self.counter.total(&out);
            last_after = tokens_after;
            if self.too_little_freed(input.tokens_before, tokens_after, min_gain) {
                return Err(CompactError::NoProgress {
                    before: input.tokens_before,
                    after: tokens_after,
                });
            }
            if tokens_after > self.budget.usable {
                if attempt < MAX_PLANS {
                    summary_tokens =
                        text_tokens.map(|t| t.max(planned) + tokens_after - self.budget.usable);
                    continue;
                }
                return Err(CompactError::StillOverBudget {
                    after: tokens_after,
                    usable: self.budget.usable,
                });
            }
            let first = Applied {
                plan,
                out,
                tokens_after,
                text_tokens,
                plans: attempt,
            };
            let grown = self.grow_record(input, min_gain, first, &mut draft).await?;
            let done = self.use_room(input, min_gain, grown, &mut draft).await?;
            let report = self.report(
                input,
                (&done.out, done.tokens_after),
                &done.plan,
                draft,
                (done.plans, done.text_tokens),
            );
            return Ok(Compaction {
                conversation: done.out,
                plan: done.plan,
                report,
            });
        }
        Err(CompactError::StillOverBudget {
            after: last_after,
            usable: self.budget.usable,
        })
    }

    /// `first` (a compaction that fits), or, when its checkpoint came in under its planned size and
    /// left room below the target ([`Compactor::room_worth_replanning`]), the compaction
    /// re-planned with the checkpoint's real size: the strategy then summarises less and keeps more of
    /// the recent history. The re-plan is taken only when it keeps more, stays within the target and
    /// still frees `min_gain`; otherwise `first` stands. One extra plan at most (and one summary of
    /// fewer items).
    async fn use_room(
        &self,
        input: &Input<'_>,
        min_gain: usize,
        first: Applied,
        draft: &mut Draft,
    ) -> Result<Applied, CompactError> {
        let target = self.budget.target;
        let room = target.saturating_sub(first.tokens_after);
        let planned = first.plan.checkpoint.as_ref().map_or(0, |c| c.max_tokens);
        let Some(actual) = first.text_tokens.filter(|&t| t < planned) else {
            return Ok(first);
        };
        if !self.second_summary_is_free(&first.plan, draft) || room < self.room_worth_replanning() {
            return Ok(first);
        }
        let first_covers = first.plan.checkpoint.as_ref().map(|c| &c.covers);
        let Some(r) = self
            .replan(
                input,
                actual,
                draft,
                |plan| plan.checkpoint.as_ref().map(|c| &c.covers) != first_covers,
                |text_tokens, limit| text_tokens.is_none_or(|t| t <= limit),
            )
            .await
        else {
            return Ok(first);
        };
        if r.tokens_after > target
            || r.tokens_after <= first.tokens_after
            || self.too_little_freed(input.tokens_before, r.tokens_after, min_gain)
        {
            return Ok(first);
        }
        let message = format!(
            "summary of {actual} tokens came in under the planned {planned}: re-planned to keep more ({} -> {} tokens)",
            first.tokens_after, r.tokens_after
        );
        Ok(r.adopt(draft, message, first.plans, false))
    }

    /// `first`, or, when its checkpoint was given the whole scaled limit
    /// ([`compact_core::budget::Limits::summary`]) and still left entries out
    /// ([`compact_core::checkpoint::leaves_out`]), the compaction re-planned with a larger
    /// checkpoint: [`Compactor::grown_summary_tokens`] (a third of the usable budget, never over the
    /// policy's `summary_max_tokens`). The strategy then summarises more of the oldest history to
    /// make that room, within the same target: at small windows, where the scaled quarter is short
    /// of what the record has to say, the record keeps the failures and requests it would drop at
    /// the next re-fit. Taken only when the grown record holds more, fits its budget, the result
    /// stays within the target and still frees `min_gain`; only with a summariser that costs no
    /// model call (a second summary would be billed otherwise). One extra plan at most.
    async fn grow_record(
        &self,
        input: &Input<'_>,
        min_gain: usize,
        first: Applied,
        draft: &mut Draft,
    ) -> Result<Applied, CompactError> {
        let Some(slot) = first.plan.checkpoint.as_ref() else {
            return Ok(first);
        };
        let planned = slot.max_tokens;
        let grown = self.grown_summary_tokens();
        let full = draft
            .cached
            .as_ref()
            .filter(|(covers, _)| *covers == slot.covers)
            .is_some_and(|(_, text)| compact_core::checkpoint::leaves_out(text));
        let Some(actual) = first.text_tokens else {
            return Ok(first);
        };
        if !self.second_summary_is_free(&first.plan, draft)
            || !full
            || planned < self.budget.limits.summary
            || grown <= planned
        {
            return Ok(first);
        }
        let Some(r) = self
            .replan(
                input,
                grown,
                draft,
                |_| true,
                |text_tokens, limit| text_tokens.is_some_and(|t| t <= limit && t > actual),
            )
            .await
        else {
            return Ok(first);
        };
        if r.tokens_after > self.budget.target.max(first.tokens_after)
            || self.too_little_freed(input.tokens_before, r.tokens_after, min_gain)
        {
            return Ok(first);
        }
        let message = format!(
            "summary of {actual} tokens left entries out: re-planned with room for {}",
            r.planned
        );
        Ok(r.adopt(draft, message, first.plans, true))
    }

    /// Whether [`Compactor::use_room`] and [`Compactor::grow_record`] may build a second checkpoint
    /// for a compaction planned as `plan`: its checkpoint is summarised (not a fixed text), the
    /// first summary did not fall back, and the summariser costs no model call (one would be billed
    /// for another call over most of the same span).
    fn second_summary_is_free(&self, plan: &Plan, draft: &Draft) -> bool {
        plan.checkpoint
            .as_ref()
            .is_some_and(|c| c.fixed_text.is_none())
            && !draft.fell_back
            && !self.summarizer.costs_a_call()
    }

    /// A trial of the compaction re-planned with a checkpoint of `summary_tokens` (for
    /// [`Compactor::grow_record`] and [`Compactor::use_room`]): `None` when the strategy fails or
    /// plans nothing, `plan_ok` refuses the plan, the summariser fails (no reason to fail a
    /// compaction that already fits), `text_ok` refuses the text's size (given the re-plan's
    /// checkpoint limit), or the plan does not apply. The trial's usage is added to `draft`'s
    /// either way; the rest of it is adopted only by [`Replanned::adopt`].
    async fn replan(
        &self,
        input: &Input<'_>,
        summary_tokens: usize,
        draft: &mut Draft,
        plan_ok: impl Fn(&Plan) -> bool,
        text_ok: impl Fn(Option<usize>, usize) -> bool,
    ) -> Option<Replanned> {
        let request = Request {
            summary_tokens: Some(summary_tokens),
            ..Request::new(&input.base, &self.budget, &self.policy, &self.counter)
        };
        let mut plan = strategy::run(self.strategy, &request).ok()?;
        if plan.is_noop() || plan.checkpoint.is_none() || !plan_ok(&plan) {
            return None;
        }
        let mut trial = Draft {
            produced_by: draft.produced_by.clone(),
            ..Draft::default()
        };
        let text = self.checkpoint_text(input, &plan, &mut trial).await;
        draft.usage = draft.usage.plus(trial.usage);
        let text = text.ok()?;
        let text_tokens = text.as_deref().map(|t| self.counter.count_text(t));
        let planned = plan.checkpoint.as_ref().map_or(0, |c| c.max_tokens);
        if !text_ok(text_tokens, planned) {
            return None;
        }
        input.dropped.mark(&mut plan);
        let mut warnings = Vec::new();
        let out = self
            .apply_checked(input, &plan, text.as_deref(), &mut warnings)
            .ok()?;
        let tokens_after = self.counter.total(&out);
        Some(Replanned {
            plan,
            out,
            tokens_after,
            text_tokens,
            planned,
            warnings,
            trial,
        })
    }

    /// The checkpoint size [`Compactor::grow_record`] re-plans with: [`GROWN_SUMMARY_SHARE`] of the
    /// usable budget, at most the policy's `summary_max_tokens`.
    fn grown_summary_tokens(&self) -> usize {
        ((self.budget.usable as f64 * GROWN_SUMMARY_SHARE) as usize)
            .min(self.policy.summary_max_tokens)
    }

    /// The least room below the target that [`Compactor::use_room`] re-plans for: [`ROOM_SHARE`] of
    /// the usable budget, and at least [`MIN_ROOM_TOKENS`].
    fn room_worth_replanning(&self) -> usize {
        ((self.budget.usable as f64 * ROOM_SHARE) as usize).max(MIN_ROOM_TOKENS)
    }

    /// The text of `plan`'s checkpoint, if it has one: the strategy's fixed text, the summary made
    /// for an earlier plan that covers the same items, or a new summary of `input`.
    async fn checkpoint_text(
        &self,
        input: &Input<'_>,
        plan: &Plan,
        draft: &mut Draft,
    ) -> Result<Option<String>, CompactError> {
        let Some(slot) = &plan.checkpoint else {
            return Ok(None);
        };
        if let Some(fixed) = &slot.fixed_text {
            draft.produced_by = Some(self.strategy.as_str().to_owned());
            return Ok(Some(fixed.clone()));
        }
        if let Some((_, text)) = draft
            .cached
            .as_ref()
            .filter(|(covers, _)| *covers == slot.covers)
        {
            return Ok(Some(text.clone()));
        }
        let text = self
            .summarize((input.conv, &input.base), plan, draft)
            .await?;
        draft.cached = Some((slot.covers.clone(), text.clone()));
        Ok(Some(text))
    }

    /// `plan` applied to `input` with the checkpoint `text`, normalised again (a repair that needed
    /// is a warning).
    fn apply_checked(
        &self,
        input: &Input<'_>,
        plan: &Plan,
        text: Option<&str>,
        warnings: &mut Vec<String>,
    ) -> Result<Conversation, CompactError> {
        let applied = plan.apply(&input.base, text)?;
        let check = normalize(&applied, &input.rules);
        if check.diagnostics.is_empty() {
            return Ok(applied);
        }
        warnings.push(format!(
            "output needed {} normalisation repairs",
            check.diagnostics.len()
        ));
        Ok(check.conversation)
    }

    /// Whether going from `tokens_before` to `tokens_after` is no progress: nothing freed, or, for
    /// a request that fits, less than `min_gain`.
    fn too_little_freed(&self, tokens_before: usize, tokens_after: usize, min_gain: usize) -> bool {
        // A request that fits is only worth rewriting (and its prompt cache losing) when the
        // compaction frees enough to keep the next one away for a while.
        // Under `reversible: only` nothing is lost, so any gain is worth it.
        let too_little = self.budget.fits(tokens_before)
            && self.policy.reversible != ReversibleMode::Only
            && tokens_before.saturating_sub(tokens_after) < min_gain;
        tokens_after >= tokens_before || too_little
    }

    /// The report of a compaction of `input` into `out` (of `tokens_after` tokens) by `plan`, the
    /// plan number `attempt`, whose checkpoint text counted `text_tokens`.
    fn report(
        &self,
        input: &Input<'_>,
        (out, tokens_after): (&Conversation, usize),
        plan: &Plan,
        draft: Draft,
        (attempt, text_tokens): (u32, Option<usize>),
    ) -> Report {
        let mut warnings = draft.warnings;
        warnings.extend(plan.notes.iter().cloned());
        Report {
            tokens_before: input.tokens_before,
            tokens_after,
            items_before: input.conv.items.len(),
            items_after: out.items.len(),
            strategy: self.strategy,
            tiers_applied: plan.tiers_applied(),
            summarizer: draft.produced_by,
            summary_usage: draft.usage,
            summary_tokens: text_tokens,
            usable: self.budget.usable,
            target: self.budget.target,
            plans: attempt,
            input_repairs: input.input_repairs,
            warnings,
            reversible_saved: plan.reversible_saved(),
        }
    }

    /// The compaction that only drops what the provider's last compaction superseded, when that
    /// alone brings the request to the target (and frees what a compaction must); `None` otherwise.
    fn superseded_only(
        &self,
        conv: &Conversation,
        base: &Conversation,
        dropped: &Superseded,
        (tokens_before, min_gain): (usize, usize),
        input_repairs: usize,
    ) -> Result<Option<Compaction>, CompactError> {
        if dropped.indices.is_empty() {
            return Ok(None);
        }
        let tokens_after = self.counter.total(base);
        let too_little = self.budget.fits(tokens_before)
            && tokens_before.saturating_sub(tokens_after) < min_gain;
        if tokens_after > self.budget.target || tokens_after >= tokens_before || too_little {
            return Ok(None);
        }
        let survey = Survey::of(base, &self.policy, &self.counter);
        let mut plan = PlanBuilder::new(
            self.strategy,
            base,
            &survey,
            &self.budget,
            &self.counter,
            self.policy.tool_output.head_fraction,
        )
        .finish();
        dropped.mark(&mut plan);
        let out = plan.apply(base, None)?;
        let tokens_after = self.counter.total(&out);
        let report = Report {
            tokens_before,
            tokens_after,
            items_before: conv.items.len(),
            items_after: out.items.len(),
            strategy: self.strategy,
            tiers_applied: plan.tiers_applied(),
            summarizer: None,
            summary_usage: SummaryUsage::default(),
            summary_tokens: None,
            usable: self.budget.usable,
            target: self.budget.target,
            plans: 1,
            input_repairs,
            warnings: plan.notes.clone(),
            reversible_saved: plan.reversible_saved(),
        };
        Ok(Some(Compaction {
            conversation: out,
            plan,
            report,
        }))
    }

    /// Summarises the plan's checkpoint items of `base` (the normalised conversation); `conv` is the
    /// request as given, which the summariser may send back to read the provider's prompt cache.
    async fn summarize(
        &self,
        (conv, base): (&Conversation, &Conversation),
        plan: &Plan,
        draft: &mut Draft,
    ) -> Result<String, CompactError> {
        let items = plan.summary_items(base);
        let previous = plan.previous_checkpoint(base);
        let max_tokens = plan.checkpoint.as_ref().map_or(0, |c| c.max_tokens);
        let request = |_: ()| SummaryRequest {
            items: &items,
            previous: previous.as_ref(),
            max_tokens,
            counter: self.counter,
            also_preserve: None,
            prefix: Some(conv),
        };
        let failure = match self.summarizer.summarize(request(())).await {
            Ok(s) if !s.text.trim().is_empty() => Ok(s),
            Ok(_) => Err(crate::SummarizeError::Empty(
                "the summary was empty".to_owned(),
            )),
            Err(e) => Err(e),
        };
        let summary = match failure {
            Ok(s) => s,
            Err(e) if self.policy.on_summarizer_failure == SummarizerFailure::Fail => {
                return Err(CompactError::Summarizer(e))
            }
            Err(e) => {
                // The failed calls cost tokens: the report counts them beside the fallback's own.
                let spent = e.usage();
                draft.usage = draft.usage.plus(spent);
                draft.fell_back = true;
                let cost = if spent.calls > 0 {
                    format!(
                        " after {} call(s), {} input and {} output tokens",
                        spent.calls, spent.input_tokens, spent.output_tokens
                    )
                } else {
                    String::new()
                };
                draft.warnings.push(format!(
                    "summariser `{}` failed{cost} ({}); used the deterministic checkpoint instead",
                    self.summarizer.name(),
                    e.cause()
                ));
                self.fallback.summarize(request(())).await?
            }
        };
        draft.usage = draft.usage.plus(summary.usage);
        draft.warnings.extend(summary.warnings.iter().cloned());
        draft.produced_by = Some(summary.produced_by.clone());
        Ok(summary.text)
    }
}

/// The items before the provider's last compaction that a compaction drops first, with their token
/// counts (they are hidden while the strategy plans, so its plan counts them as nothing).
struct Superseded {
    indices: Vec<usize>,
    tokens: Vec<usize>,
}

impl Superseded {
    /// The items of `normalized` (the normalisation of `input`) that the provider's last compaction
    /// in `input` supersedes, found by id (normalisation may already have hidden them, and may
    /// insert or move other items).
    fn of(input: &Conv, normalized: &Conv, counter: &TokenCounter) -> Self {
        let ids: std::collections::HashSet<&compact_core::model::ItemId> =
            provider::superseded(input, None)
                .into_iter()
                .map(|i| &input.items[i].meta.id)
                .collect();
        let indices: Vec<usize> = normalized
            .items
            .iter()
            .enumerate()
            .filter(|(_, item)| ids.contains(&item.meta.id))
            .map(|(i, _)| i)
            .collect();
        Superseded {
            tokens: indices
                .iter()
                .map(|&i| counter.count_item(&normalized.items[i]))
                .collect(),
            indices,
        }
    }

    /// Marks the items dropped in `plan` (made for the conversation with them hidden).
    fn mark(&self, plan: &mut Plan) {
        if self.indices.is_empty() {
            return;
        }
        for (&i, &tokens) in self.indices.iter().zip(&self.tokens) {
            if let Some(p) = plan.items.get_mut(i) {
                p.action = Action::Drop;
                p.tier = Some(Tier::Drop);
                p.tokens_before = tokens;
                p.tokens_after = 0;
                p.replacement = None;
            }
        }
        plan.tokens_before += self.tokens.iter().sum::<usize>();
        plan.notes.push(format!(
            "{} item(s) before the provider's last compaction dropped first (the provider no longer needs them)",
            self.indices.len()
        ));
    }
}
