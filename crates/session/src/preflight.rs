//! The stages of [`CompactManager::preflight`] over one session's state: match the request to
//! the chain, take in what the provider holds and the memory candidates, count, decide, compact
//! when due, build the next view, commit, and after the commit promote facts and archive. Each
//! stage before the commit adds to a [`Draft`] (the records and events to log, the warnings); the
//! state changes in [`commit`] only, once the log holds the draft's records (the two-strike
//! breaker aside, which counts attempts whether or not they are logged). See [`crate::manager`]
//! for how a resent history is recognised.

use crate::annotation::{follow, follow_items, same_tools};
use crate::chain::ChainHash;
use crate::error::SessionError;
use crate::event::{
    BranchEvent, CompactedEvent, DecisionEvent, EstimateEvent, Event, EventData, EventKind,
    SentEvent, SkippedEvent,
};
use crate::limits::{manual_policy, room_for_growth, MAX_STRIKES};
use crate::manager::{items_compressed, CompactManager, PreflightReport, Prepared};
use crate::provider::ProviderHeld;
use crate::record::{ItemRecord, ItemSource, Record};
use crate::state::{call_ids, hides_only, view_record, SessionState};
use crate::trigger::manual_request;
use compact_core::boundary::{natural_boundary, natural_boundary_after};
use compact_core::budget::Budget;
use compact_core::memory::render::render;
use compact_core::memory::{Change as MemoryChange, Memory, Origin, Outcome};
use compact_core::model::{Conversation, Format, Item, ItemBody, Role};
use compact_core::normalize::{diagnose, normalize, Normalized, ProviderRules};
use compact_core::plan::Action;
use compact_core::policy::{Decision, Policy};
use compact_engine::{block_on, CompactError, Compaction, Settled};
use serde_json::json;
use std::borrow::Cow;
use std::sync::Arc;

/// What one preflight decided so far: the records and events to log, the warnings for the caller.
struct Draft<'r> {
    request: &'r Conversation,
    /// The request's model key.
    model: String,
    records: Vec<Record>,
    events: Vec<Event>,
    warnings: Vec<String>,
}

/// Where the request leaves the chain of the last one.
struct ChainMatch {
    /// Items held before this call.
    held: usize,
    /// Leading items of the request that are the items held.
    matched: usize,
    /// Of those, the ones equal only apart from their annotations.
    reannotated: Vec<usize>,
    branched: bool,
    /// The chain link of the request's last item.
    tip: ChainHash,
    /// The chain links of the request's new items.
    new_hashes: Vec<ChainHash>,
}

/// What the memory stage decided.
struct MemoryDraft {
    /// The facts after this call's candidates, when there were any.
    next: Option<Memory>,
    /// Facts this call accepted or merged (promoted to the project's memory after the commit).
    touched: Vec<String>,
    /// Why the block is rendered again, if it is.
    refresh_reason: Option<&'static str>,
    /// The block the view holds after this call (unless a compaction renders its own).
    block: Option<String>,
    /// True when that block differs from the one the view holds.
    moved: bool,
}

/// The count of the request as it would be sent without compaction.
struct Counted {
    /// Only the new items were counted, on top of what was sent.
    fast: bool,
    count: usize,
    /// The calibrated count.
    effective: usize,
    /// The view plus the new items (slow path), and it normalised.
    candidate: Option<Conversation>,
    normalized: Option<Normalized>,
    /// Items sent by the last call.
    previous_sent_len: usize,
    /// The request's tools are the view's, byte for byte.
    tools_equal: bool,
}

/// What the compaction stage did.
#[derive(Default)]
struct Compacted {
    compaction: Option<Compaction>,
    /// A compaction that was due failed (the call fails with it, after the commit).
    failure: Option<CompactError>,
}

/// What the compaction stage needs of the decision.
struct Due<'a> {
    decision: &'a Decision,
    budget: &'a Budget,
    ratio: f64,
    /// The request's latest user message.
    last_user: Option<usize>,
    manual: bool,
    /// Where the request's new items start.
    matched: usize,
}

/// How the view changes (short-lived: one per call, so not boxed).
#[allow(clippy::large_enum_variant)]
enum NextView {
    /// The new items are appended to the view sent last time (which needed no repair).
    Extend { tokens: usize },
    /// The view is replaced (compaction, branch, or a request that needed a full recount).
    Replace {
        view: Conversation,
        repaired: Option<Arc<Conversation>>,
        /// `repaired` only hides what a provider compaction supersedes.
        hides_only: bool,
        tokens: usize,
    },
}

/// The next view and what it says of this call.
struct Next {
    view: NextView,
    /// The chain of the request (the held chain, moved here when the request extends it).
    chain: Vec<ChainHash>,
    /// The log sequence number of the compaction's view record, when one is logged.
    view_seq: Option<u64>,
    reused_items: usize,
    tokens_sent: usize,
    /// The memory block the view holds after this call.
    block_after: Option<String>,
    /// The request's tools are the view's, byte for byte.
    tools_equal: bool,
}

impl CompactManager {
    /// One preflight on a locked, current state: the stages in order, the commit, and what comes
    /// after it.
    pub(crate) fn preflight_locked(
        &self,
        session: &str,
        state: &mut SessionState,
        request: &Conversation,
    ) -> Result<Prepared, SessionError> {
        let learned = self.policy_for(state);
        let policy: &Policy = &learned;
        let budget = Budget::new(policy);
        let rules = ProviderRules::for_format(request.format.unwrap_or(Format::OpenAiChat));
        let mut draft = Draft {
            request,
            model: self.model_key(request),
            records: Vec::new(),
            events: Vec::new(),
            warnings: Vec::new(),
        };
        let ratio = state.calibration.ratio(&draft.model);
        let chain = match_chain(state, &mut draft);
        let provider_next = self.provider_change(state, &chain, &mut draft);
        let mut memory = self.admit_memory(session, state, &chain, &mut draft);
        // A manual request in a new latest user message (whose place also resets the two-strike
        // breaker).
        let last_user = request
            .items
            .iter()
            .rposition(|i| i.role() == Role::User && matches!(i.body(), ItemBody::Message(_)));
        let manual_note = last_user
            .filter(|&i| i >= chain.matched)
            .and_then(|i| manual_request(&request.items[i], &self.config().trigger_phrases));
        let manual = manual_note.is_some();
        let counted = self.count(state, &chain, &memory, rules, ratio, &mut draft);
        let (effective_tokens, counted_whole) = (counted.effective, !counted.fast);
        let decision = decide(
            state,
            &chain,
            &counted,
            (&budget, policy),
            manual,
            &mut draft,
        );
        let due = Due {
            decision: &decision,
            budget: &budget,
            ratio,
            last_user,
            manual,
            matched: chain.matched,
        };
        let mut compacted =
            self.compact_when_due(session, state, &memory, &counted, &due, &mut draft);
        let next = self.next_view(
            state,
            &chain,
            &memory,
            counted,
            &compacted,
            manual_note.as_deref(),
            &budget,
            policy,
            &mut draft,
        );
        self.redact_events(session, state, &mut draft.events);
        let mut records = std::mem::take(&mut draft.records);
        records.extend(draft.events.iter().cloned().map(Record::Event));
        let Next {
            view,
            chain: mut new_chain,
            view_seq,
            reused_items,
            tokens_sent,
            block_after,
            tools_equal,
        } = next;
        if let Err(e) = self.append(session, state, records) {
            if !chain.branched {
                // The held chain was moved into the new one: it goes back as it was.
                new_chain.truncate(chain.held);
                state.chain = new_chain;
            }
            return Err(e);
        }
        let touched = std::mem::take(&mut memory.touched);
        commit(
            state,
            &draft,
            &chain,
            Committed {
                chain: new_chain,
                view,
                provider: provider_next,
                memory: memory.next,
                block: block_after,
                memory_on: self.config().memory.is_some(),
                tools_equal,
            },
        );
        if let Some(e) = compacted.failure.take() {
            return Err(SessionError::Compact(e));
        }
        self.after_commit(
            session,
            state,
            &touched,
            view_seq,
            compacted.compaction.as_ref(),
            &mut draft,
        );
        let report = PreflightReport {
            decision,
            tokens: tokens_sent,
            effective_tokens,
            ratio,
            new_items: state.received.len() - chain.matched,
            reused_items,
            branched: chain.branched,
            counted_whole,
            manual,
            compaction: compacted.compaction.map(|c| c.report),
            warnings: draft.warnings,
        };
        Ok(Prepared {
            conversation: Arc::clone(state.sent()),
            report,
            events: draft.events,
        })
    }

    /// Stage 1a: what the provider holds. A provider compaction among the new items (or a branch)
    /// may be one the state does not know yet; a branch back to a history without any clears
    /// what the state knew (the provider reads such a request whole).
    fn provider_change(
        &self,
        state: &SessionState,
        chain: &ChainMatch,
        draft: &mut Draft<'_>,
    ) -> Option<Option<ProviderHeld>> {
        let request = draft.request;
        let new_items = &request.items[chain.matched..];
        let next = if chain.branched
            || new_items
                .iter()
                .any(|i| matches!(i.body(), ItemBody::ProviderCompaction(_)))
        {
            match ProviderHeld::in_request(request, &self.config().counter) {
                Some(held) => held.changes(state.provider.as_ref()).then_some(Some(held)),
                None => (chain.branched && state.provider.is_some()).then_some(None),
            }
        } else {
            None
        };
        match &next {
            Some(Some(held)) => draft.events.push(held.event()),
            Some(None) => draft.events.push(ProviderHeld::cleared_event()),
            None => {}
        }
        next
    }

    /// Stage 1b: memory. The candidates in the new items (and, for a new session, the project's
    /// facts), decided on a copy that becomes the state's once the log holds the decisions; and
    /// the block the view holds after this call: rendered again at a first call, a branch, a
    /// reload or after a forget (and at a compaction, later); else the one it holds.
    fn admit_memory(
        &self,
        session: &str,
        state: &SessionState,
        chain: &ChainMatch,
        draft: &mut Draft<'_>,
    ) -> MemoryDraft {
        let mut next: Option<Memory> = None;
        let mut touched: Vec<String> = Vec::new();
        let Some(mc) = self.config().memory.as_ref() else {
            return MemoryDraft {
                next,
                touched,
                refresh_reason: None,
                block: state.memory_block.clone(),
                moved: false,
            };
        };
        let mut candidates = Vec::new();
        if state.version == 0 && !state.prepared {
            if let Some(project) = mc.project() {
                match crate::memory::project_candidates(self.store().as_ref(), project) {
                    Ok(c) => candidates.extend(c),
                    Err(e) => draft
                        .warnings
                        .push(format!("project memory not loaded: {e}")),
                }
            }
        }
        candidates.extend(crate::memory::candidates_of(
            &draft.request.items[chain.matched..],
        ));
        if !candidates.is_empty() {
            let redactor = state
                .redactor
                .as_deref()
                .or(self.config().redactor.as_deref());
            crate::memory::redact_candidates(redactor, session, &mut candidates);
            let mut memory = state.memory.clone();
            for change in memory.admit(candidates, &mc.limits) {
                // A fact loaded from the project is no new evidence for the project.
                if let MemoryChange::Candidate {
                    outcome: Outcome::Accepted | Outcome::Merged,
                    fact: Some(id),
                    candidate,
                    ..
                } = &change
                {
                    if candidate.origin != Origin::Project {
                        touched.push(id.clone());
                    }
                }
                draft.events.push(crate::memory::change_event(&change));
            }
            next = Some(memory);
        }
        let refresh_reason = if !state.prepared {
            Some("first_call")
        } else if chain.branched {
            Some("branch")
        } else if state.fresh {
            Some("reload")
        } else if state.memory_refresh {
            Some("forget")
        } else {
            None
        };
        let mut block = state.memory_block.clone();
        if refresh_reason.is_some() {
            let memory = next.as_ref().unwrap_or(&state.memory);
            block = render(memory, mc.budget_tokens, &self.config().counter);
        }
        let moved = block != state.memory_block;
        MemoryDraft {
            next,
            touched,
            refresh_reason,
            block,
            moved,
        }
    }

    /// Stage 2: the count. The new items on top of what was sent (fast), or everything (slow).
    /// Tools whose annotations moved count the same.
    fn count(
        &self,
        state: &SessionState,
        chain: &ChainMatch,
        memory: &MemoryDraft,
        rules: ProviderRules,
        ratio: f64,
        draft: &mut Draft<'_>,
    ) -> Counted {
        let counter = self.config().counter;
        let request = draft.request;
        let new_items = &request.items[chain.matched..];
        let branched = chain.branched;
        let tools_equal = request.tools == state.view.tools;
        let fast = !branched
            && !state.fresh
            && state.prepared
            && (state.repaired.is_none() || state.repair_hides_only)
            && (tools_equal || same_tools(&request.tools, &state.view.tools))
            && request.format == state.view.format
            && !memory.moved
            && appends_cleanly(&state.call_ids, new_items, rules);
        let previous_sent_len = state.sent().items.len();
        let (count, candidate, normalized) = if fast {
            let added: usize = new_items
                .iter()
                .filter(|i| i.meta.visibility.model)
                .map(|i| counter.count_item(i))
                .sum();
            (state.sent_tokens + added, None, None)
        } else {
            let mut candidate = Conversation {
                items: Vec::new(),
                tools: request.tools.clone(),
                format: request.format,
                extra: request.extra.clone(),
            };
            let base: &[Item] = if branched {
                &request.items
            } else {
                &state.view.items
            };
            candidate.items =
                with_headroom(base.len() + if branched { 0 } else { new_items.len() });
            candidate.items.extend_from_slice(base);
            if !branched {
                candidate.items.extend_from_slice(new_items);
                // The view's items carry the annotations of the request they were last sent
                // for (or were logged with, after a reload): they take this request's.
                follow(&mut candidate.items, &request.items);
            }
            if self.config().memory.is_some() {
                crate::memory::inject(&mut candidate, memory.block.as_deref());
            }
            candidate.renumber_turns();
            let normalized = normalize(&candidate, &rules);
            let count = counter.total(&normalized.conversation);
            (count, Some(candidate), Some(normalized))
        };
        let effective = state.calibration.effective(&draft.model, count);
        draft.events.push(
            EstimateEvent {
                model: draft.model.clone(),
                tokens: count,
                ratio,
                effective,
                new_items: new_items.len(),
                items: request.items.len(),
            }
            .to_event(),
        );
        Counted {
            fast,
            count,
            effective,
            candidate,
            normalized,
            previous_sent_len,
            tools_equal,
        }
    }

    /// Stage 4: compaction when due, unless the two-strike breaker stopped automatic compaction.
    /// The breaker's count changes here, logged or not.
    fn compact_when_due(
        &self,
        session: &str,
        state: &mut SessionState,
        memory: &MemoryDraft,
        counted: &Counted,
        due: &Due<'_>,
        draft: &mut Draft<'_>,
    ) -> Compacted {
        let Due {
            decision,
            budget,
            ratio,
            last_user,
            manual,
            matched,
        } = *due;
        let (count, effective) = (counted.count, counted.effective);
        let mut done = Compacted::default();
        if !matches!(decision, Decision::Compact(_)) || state.strike_turn != last_user {
            state.strikes = 0;
        }
        state.strike_turn = last_user;
        let stopped_auto =
            !manual && matches!(decision, Decision::Compact(_)) && state.strikes >= MAX_STRIKES;
        if stopped_auto && budget.fits(effective) {
            draft.events.push(
                SkippedEvent {
                    reason: "two_strikes".to_owned(),
                    strikes: Some(state.strikes),
                    floor: Some(state.strike_floor),
                    trigger: Some(budget.trigger),
                    usable: Some(budget.usable),
                    effective: Some(effective),
                }
                .to_event(),
            );
            draft.warnings.push(format!(
                "automatic compaction stopped: {} compactions in a row left the request above the trigger of {} tokens (the last reached {}); the request fits and is sent unchanged",
                state.strikes, budget.trigger, state.strike_floor
            ));
            return done;
        }
        if stopped_auto {
            // The breaker spares compactions that cannot get under the trigger while the request
            // fits; one that no longer fits is compacted anyway (sent as it is, it would be
            // refused): a compaction that cannot make it fit fails with its typed error.
            draft.warnings.push(format!(
                "automatic compaction was stopped after {} compactions in a row left the request above the trigger of {} tokens, but the request ({effective} tokens) is over the usable {}: compacted anyway",
                state.strikes, budget.trigger, budget.usable
            ));
        }
        let Decision::Compact(reason) = decision else {
            return done;
        };
        let request = draft.request;
        let mut to_compact: Cow<'_, Conversation> = match &counted.candidate {
            Some(c) => Cow::Borrowed(c),
            None => {
                let mut c = Conversation::clone(&state.view);
                c.items.extend_from_slice(&request.items[matched..]);
                c.extra = request.extra.clone();
                c.renumber_turns();
                Cow::Owned(c)
            }
        };
        // A compaction rewrites the prompt from the checkpoint on: the block takes in what was
        // learnt since it was last rendered.
        self.refresh_block(
            memory.next.as_ref().unwrap_or(&state.memory),
            &mut to_compact,
        );
        let policy_for_run = if manual {
            manual_policy(&self.calibrated_policy(state, ratio), count)
        } else {
            room_for_growth(
                self.calibrated_policy(state, ratio),
                state.growth.expected(),
            )
        };
        let fits = budget.fits(effective);
        let outcome = match self.compactor(session, policy_for_run) {
            Ok(c) => block_on(c.compact_due(&to_compact, reason, fits)),
            Err(e) => Settled::of(Err(e), fits),
        };
        match outcome {
            Settled::Compacted(compaction) => {
                if manual {
                    state.strikes = 0;
                } else if state
                    .calibration
                    .effective(&draft.model, compaction.report.tokens_after)
                    > budget.trigger
                {
                    state.strikes += 1;
                    state.strike_floor = compaction.report.tokens_after;
                } else {
                    state.strikes = 0;
                }
                done.compaction = Some(*compaction);
            }
            Settled::Skipped(e) => {
                if !manual {
                    state.strikes += 1;
                    state.strike_floor = count;
                }
                draft.events.push(
                    SkippedEvent {
                        reason: e.to_string(),
                        ..SkippedEvent::default()
                    }
                    .to_event(),
                );
                draft.warnings.push(Settled::skipped_warning(&e));
            }
            Settled::Failed(e) => {
                draft.events.push(Event::new(
                    EventKind::Failed,
                    json!({"model": draft.model, "t_est": effective, "max": budget.window,
                           "reason": e.to_string()}),
                ));
                done.failure = Some(e);
            }
        }
        done
    }

    /// Stage 5: the next view (the compaction's, the recounted candidate, or the view extended),
    /// its chain, and the records and events that describe it.
    #[allow(clippy::too_many_arguments)]
    fn next_view(
        &self,
        state: &mut SessionState,
        chain: &ChainMatch,
        memory: &MemoryDraft,
        counted: Counted,
        compacted: &Compacted,
        manual_note: Option<&str>,
        budget: &Budget,
        policy: &Policy,
        draft: &mut Draft<'_>,
    ) -> Next {
        let request = draft.request;
        let manual = manual_note.is_some();
        let new_chain = extended_chain(state, chain);
        let mut view_seq = None;
        let view = if let Some(done) = &compacted.compaction {
            let mut view = done.conversation.clone();
            // What the compaction kept of the request carries the request's annotations, and
            // what it wrote carries none.
            follow(&mut view.items, &request.items);
            let record = view_record(&view, &request.items, &new_chain, trigger_name(manual));
            let seq = state.version + draft.records.len() as u64 + 1;
            view_seq = Some(seq);
            draft.records.push(Record::View(record));
            let report = &done.report;
            let mut event =
                CompactedEvent::of(trigger_name(manual), report, items_compressed(done));
            event.note = manual_note.map(str::to_owned);
            event.items_before = Some(report.items_before);
            event.items_after = Some(report.items_after);
            event.view_seq = seq;
            draft.events.push(event.to_event());
            draft.events.extend(seed_events(
                &draft.model,
                counted.effective,
                budget,
                policy,
                done,
            ));
            draft.warnings.extend(report.warnings.iter().cloned());
            NextView::Replace {
                view,
                repaired: None,
                hides_only: false,
                tokens: report.tokens_after,
            }
        } else if let (Some(candidate), Some(normalized)) = (counted.candidate, counted.normalized)
        {
            let hides = hides_only(&normalized.diagnostics);
            let repaired =
                (!normalized.diagnostics.is_empty()).then(|| Arc::new(normalized.conversation));
            NextView::Replace {
                view: candidate,
                repaired,
                hides_only: hides,
                tokens: counted.count,
            }
        } else {
            NextView::Extend {
                tokens: counted.count,
            }
        };
        let new_items = request.items.len() - chain.matched;
        let (sent_len_after, reused_items, tokens_sent) = match &view {
            NextView::Extend { tokens } => (
                counted.previous_sent_len + new_items,
                counted.previous_sent_len,
                *tokens,
            ),
            NextView::Replace {
                view,
                repaired,
                tokens,
                ..
            } => {
                let sent = repaired.as_deref().unwrap_or(view);
                (
                    sent.len(),
                    common_prefix(&state.sent().items, &sent.items),
                    *tokens,
                )
            }
        };
        let memory_on = self.config().memory.is_some();
        let block_after = match (&view, memory_on) {
            (_, false) => None,
            (NextView::Extend { .. }, true) => state.memory_block.clone(),
            (NextView::Replace { view, .. }, true) => crate::memory::block_in(view),
        };
        if memory_on && block_after != state.memory_block {
            let reason = if compacted.compaction.is_some() {
                "compaction"
            } else {
                memory.refresh_reason.unwrap_or("view")
            };
            let counter = &self.config().counter;
            draft.events.push(Event::new(
                EventKind::MemoryInjected,
                json!({"reason": reason,
                       "facts": block_after.as_deref().map_or(0, |b| b.matches("\n- ").count()),
                       "tokens": block_after.as_deref().map_or(0, |b| counter.count_text(b)),
                       "budget": self.config().memory.as_ref().map(|m| m.budget_tokens)}),
            ));
        }
        if compacted.failure.is_none() {
            draft.events.push(
                SentEvent {
                    tip: chain.tip.to_string(),
                    received: request.items.len(),
                    items: sent_len_after,
                    tokens: tokens_sent,
                    reused_items,
                    model: draft.model.clone(),
                    branched: chain.branched,
                    passthrough: None,
                }
                .to_event(),
            );
        }
        Next {
            view,
            chain: new_chain,
            view_seq,
            reused_items,
            tokens_sent,
            block_after,
            tools_equal: counted.tools_equal,
        }
    }

    /// After the commit: facts this call accepted go to the project's memory, and a compaction's
    /// transcript and checkpoint to the archive (failures of either are warnings).
    fn after_commit(
        &self,
        session: &str,
        state: &SessionState,
        touched: &[String],
        view_seq: Option<u64>,
        compaction: Option<&Compaction>,
        draft: &mut Draft<'_>,
    ) {
        let memory_config = self.config().memory.as_ref();
        if let Some(project) = memory_config.and_then(|m| m.project()) {
            if !touched.is_empty() {
                let limits = memory_config.map(|m| m.limits).unwrap_or_default();
                if let Err(e) = crate::memory::promote(
                    self.store().as_ref(),
                    project,
                    session,
                    &state.memory,
                    touched,
                    &limits,
                ) {
                    draft
                        .warnings
                        .push(format!("facts not promoted to the project's memory: {e}"));
                }
            }
        }
        if let (Some(seq), Some(done)) = (view_seq, compaction) {
            draft.warnings.extend(crate::archive::after_compaction(
                self.archive().map(|a| a.as_ref()),
                self.store().as_ref(),
                state
                    .redactor
                    .as_deref()
                    .or(self.config().redactor.as_deref()),
                session,
                seq,
                &draft.request.items,
                &done.conversation,
            ));
        }
    }
}

/// Stage 1: where the request leaves the chain of the last one; the new items' records.
fn match_chain(state: &mut SessionState, draft: &mut Draft<'_>) -> ChainMatch {
    let request = draft.request;
    let held = state.received.len();
    let (matched, reannotated) = state.match_prefix(&request.items);
    let branched = matched < held;
    if branched {
        draft.events.push(
            BranchEvent {
                at: matched,
                held,
                received: request.items.len(),
                old_tip: state.chain.last().map(ToString::to_string),
            }
            .to_event(),
        );
    }
    let mut tip = matched
        .checked_sub(1)
        .map_or(ChainHash::GENESIS, |i| state.chain[i]);
    let new_items = &request.items[matched..];
    let mut new_hashes = Vec::with_capacity(new_items.len());
    for item in new_items {
        let parent = tip;
        tip = tip.next_item(item);
        new_hashes.push(tip);
        if state.logged.contains(&tip) {
            continue;
        }
        draft.records.push(Record::Item(ItemRecord {
            source: ItemSource::Received,
            hash: tip,
            parent,
            item: item.clone(),
        }));
    }
    ChainMatch {
        held,
        matched,
        reannotated,
        branched,
        tip,
        new_hashes,
    }
}

/// Stage 3: the engine's decision ([`compact_engine::decide`]) on the calibrated count, at the
/// natural boundary the request is at when the policy sets a floor (without one the boundary
/// changes nothing).
fn decide(
    state: &SessionState,
    chain: &ChainMatch,
    counted: &Counted,
    (budget, policy): (&Budget, &Policy),
    manual: bool,
    draft: &mut Draft<'_>,
) -> Decision {
    let effective = counted.effective;
    let at = budget.boundary.and_then(|_| match &counted.candidate {
        Some(c) => natural_boundary(c),
        None => natural_boundary_after(&state.sent().items, &draft.request.items[chain.matched..]),
    });
    let decision = compact_engine::decide(
        compact_engine::Due {
            count: effective,
            at,
            manual,
        },
        budget,
        policy,
    );
    draft.events.push(
        DecisionEvent {
            decision: decision_name(&decision).to_owned(),
            reason: decision_reason(&decision),
            model: draft.model.clone(),
            t_est: effective,
            max: budget.window,
            effective,
            trigger: budget.trigger,
            usable: budget.usable,
            window: budget.window,
            manual,
            boundary: at.map(|b| b.as_str().to_owned()),
        }
        .to_event(),
    );
    decision
}

/// The chain of the request: the held chain up to where the request leaves it, then the new
/// links (an extension moves the held chain here; [`commit`] or a failed append puts it back).
fn extended_chain(state: &mut SessionState, chain: &ChainMatch) -> Vec<ChainHash> {
    let mut out = if chain.branched {
        let mut out = with_headroom(chain.matched + chain.new_hashes.len());
        out.extend_from_slice(&state.chain[..chain.matched]);
        out
    } else {
        std::mem::take(&mut state.chain)
    };
    out.extend_from_slice(&chain.new_hashes);
    out
}

/// What the state becomes once the log holds the call's records.
struct Committed {
    chain: Vec<ChainHash>,
    view: NextView,
    provider: Option<Option<ProviderHeld>>,
    memory: Option<Memory>,
    block: Option<String>,
    memory_on: bool,
    tools_equal: bool,
}

/// Stage 6: the state takes what the log now holds.
fn commit(state: &mut SessionState, draft: &Draft<'_>, chain: &ChainMatch, next: Committed) {
    let request = draft.request;
    let matched = chain.matched;
    state.logged.extend(chain.new_hashes.iter().copied());
    state.chain = next.chain;
    if let Some(held) = next.provider {
        state.provider = held;
    }
    if let Some(memory) = next.memory {
        state.memory = memory;
    }
    if next.memory_on {
        state.memory_block = next.block;
        state.memory_refresh = false;
    }
    let new_items = &request.items[matched..];
    match next.view {
        NextView::Extend { tokens } => {
            extend_view(
                state,
                request,
                &chain.reannotated,
                new_items,
                next.tools_equal,
            );
            state.growth.note(tokens.saturating_sub(state.sent_tokens));
            state.sent_tokens = tokens;
        }
        NextView::Replace {
            mut view,
            repaired,
            hides_only,
            tokens,
        } => {
            reserve_headroom(&mut view.items, 1);
            view.tools.clone_from(&request.tools);
            view.format = request.format;
            view.extra.clone_from(&request.extra);
            state.call_ids = call_ids(&view.items);
            state.view = Arc::new(view);
            state.repaired = repaired;
            state.repair_hides_only = hides_only;
            state.sent_tokens = tokens;
        }
    }
    // The items already held equal the request's first `matched` ones: keep them (those equal
    // only apart from their annotations become the new copies, so that the next call finds them
    // equal by fingerprint), add the rest.
    state.received.truncate(matched);
    for &i in &chain.reannotated {
        state.received[i] = request.items[i].clone();
    }
    reserve_headroom(&mut state.received, new_items.len());
    state.received.extend_from_slice(new_items);
    state.model.clone_from(&draft.model);
    state.prepared = true;
    state.fresh = false;
    if matched < state.received.len() || chain.branched {
        state.recovery_attempts = 0;
        state.recovery_last_tokens = None;
    }
}

/// The new items appended to the view sent last time (and to what was sent, when that only hides
/// what a provider compaction supersedes); the items whose annotations the client changed take the
/// new ones (the view followed the last request's already).
fn extend_view(
    state: &mut SessionState,
    request: &Conversation,
    reannotated: &[usize],
    new_items: &[Item],
    tools_equal: bool,
) {
    let reannotated_items = || reannotated.iter().map(|&i| &request.items[i]);
    let mut targets = vec![Arc::make_mut(&mut state.view)];
    if let Some(repaired) = state.repaired.as_mut() {
        targets.push(Arc::make_mut(repaired));
    }
    for conv in targets {
        follow_items(&mut conv.items, reannotated_items());
        if !tools_equal {
            conv.tools.clone_from(&request.tools);
        }
        reserve_headroom(&mut conv.items, new_items.len());
        let start = conv.items.len();
        conv.items.extend_from_slice(new_items);
        renumber_from(conv, start);
        conv.extra.clone_from(&request.extra);
    }
    state.call_ids.extend(
        new_items
            .iter()
            .filter_map(|i| i.as_tool_call().map(|c| c.call_id.clone())),
    );
}

/// True when appending `new` to a view that needed no repair needs none either: the new items are
/// model-visible, their calls reuse no id of the view, and on their own they need no repair (every
/// result answers a new call, every new call is answered, results are placed as `rules` want).
/// The view's calls are all answered, so a result answering one of them would be a second result.
fn appends_cleanly(
    view_calls: &std::collections::HashSet<String>,
    new: &[Item],
    rules: ProviderRules,
) -> bool {
    // A provider compaction may supersede what was sent before it (normalisation then hides
    // that): the request is recounted whole.
    if !new.iter().all(|i| i.meta.visibility.model)
        || new
            .iter()
            .any(|i| matches!(i.body(), ItemBody::ProviderCompaction(_)))
    {
        return false;
    }
    let mut seen = std::collections::HashSet::new();
    for item in new {
        if let Some(c) = item.as_tool_call() {
            if view_calls.contains(&c.call_id) || !seen.insert(c.call_id.as_str()) {
                return false;
            }
        }
    }
    let tail = Conversation {
        items: new.to_vec(),
        ..Conversation::default()
    };
    diagnose(&tail, &rules).is_empty()
}

/// Gives the items from `start` on the turn numbers [`Conversation::push`] would.
fn renumber_from(conv: &mut Conversation, start: usize) {
    let mut turn = start
        .checked_sub(1)
        .and_then(|i| conv.items.get(i))
        .map_or(0, |i| i.meta.turn);
    for idx in start..conv.items.len() {
        let item = &mut conv.items[idx];
        if idx > 0 && item.role() == Role::User && matches!(item.body(), ItemBody::Message(_)) {
            turn += 1;
        }
        item.meta.turn = turn;
    }
}

/// Spare room, as a share of a session's length, kept in the vectors that grow by one request's
/// new items per call (items received, the view, the chain). A vector built at its exact size (a
/// full rebuild, a branch, a compaction) would otherwise reallocate, and copy every item, on the
/// very next call, which is the call the incremental path promises to keep cheap; with a quarter
/// spare, a session's vectors are copied once per quarter of growth at most.
const HEADROOM_DIVISOR: usize = 4;

/// Spare room added besides the share: a short session's next few calls never reallocate either.
const HEADROOM_MIN: usize = 16;

/// An empty vector with room for `len` elements plus the headroom.
fn with_headroom<T>(len: usize) -> Vec<T> {
    Vec::with_capacity(len + len / HEADROOM_DIVISOR + HEADROOM_MIN)
}

/// Makes room for `additional` more elements; when it must grow, it grows with the headroom.
fn reserve_headroom<T>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() < additional {
        let len = v.len() + additional;
        v.reserve_exact(additional + len / HEADROOM_DIVISOR + HEADROOM_MIN);
    }
}

fn common_prefix(a: &[Item], b: &[Item]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Items the compaction removed, replaced or cut.
/// Seed 003's events of a compaction: the policy it ran with, what it removed, and the checkpoint
/// it wrote (when it wrote one).
fn seed_events(
    model: &str,
    t_est: usize,
    budget: &Budget,
    policy: &Policy,
    done: &Compaction,
) -> Vec<Event> {
    let report = &done.report;
    let count = |a: fn(&Action) -> bool| done.plan.items.iter().filter(|p| a(&p.action)).count();
    let pinned = done
        .conversation
        .items
        .iter()
        .filter(|i| i.meta.protected || policy.is_role_pinned(i.role()))
        .count();
    let mut events = vec![
        Event::new(
            EventKind::PolicyApplied,
            json!({"model": model, "t_est": t_est, "max": budget.window,
                   "policy": {"strategy": report.strategy.as_str(), "trigger_pct": policy.trigger_pct,
                              "target_pct": policy.target_pct, "min_gain_pct": policy.min_gain_pct,
                              "buffer": budget.buffer, "reserved_output": budget.reserved_output},
                   "kept": {"pinned": pinned, "recent_turns": policy.keep_recent_turns,
                            "tool_pairs": policy.keep_tool_io_pairs},
                   "tiers": report.tiers_applied}),
        ),
        Event::new(
            EventKind::PrunedMessages,
            json!({"model": model, "pruned_count": items_compressed(done),
                   "summarized": count(|a| matches!(a, Action::SummarizeInto)),
                   "dropped": count(|a| matches!(a, Action::Drop)),
                   "referenced": count(|a| matches!(a, Action::Reference { .. })),
                   "truncated": count(|a| matches!(a, Action::Truncate { .. })),
                   "densified": count(|a| matches!(a, Action::Densify { .. })),
                   "tokens_before": report.tokens_before, "tokens_after": report.tokens_after}),
        ),
    ];
    if let Some(summary_tokens) = report.summary_tokens {
        events.push(Event::new(
            EventKind::SummaryCreated,
            json!({"model": model, "summary_tokens": summary_tokens,
                   "summarizer": report.summarizer,
                   "summarizer_calls": report.summary_usage.calls,
                   "summarizer_input_tokens": report.summary_usage.input_tokens,
                   "summarizer_cached_input_tokens": report.summary_usage.cached_input_tokens}),
        ));
    }
    events
}

fn trigger_name(manual: bool) -> &'static str {
    if manual {
        "manual"
    } else {
        "auto"
    }
}

fn decision_name(d: &Decision) -> &'static str {
    match d {
        Decision::None => "none",
        Decision::Remind(_) => "remind",
        Decision::Compact(_) => "compact",
    }
}

fn decision_reason(d: &Decision) -> Option<String> {
    match d {
        Decision::None => None,
        Decision::Remind(r) => Some(format!("{r:?}")),
        Decision::Compact(r) => Some(r.to_string()),
    }
}
