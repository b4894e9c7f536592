//! [`CompactManager::recover`]: after a provider refused a request as too long, compact harder and
//! hand back a request to retry, at most [`crate::SessionConfig::overflow_max_retries`] times per
//! turn, or give up with a typed [`RecoveryError`] that tells the caller to start a new session
//! (seed 004: three compactions, then a fresh session; never a loop).
//!
//! Each attempt aims lower: the usable budget is set below both what the provider's message says
//! fits (its limit, divided by the calibration ratio) and [`RECOVERY_SHRINK`] to the power of the
//! attempt times what was sent. A provider message that states the request's size recalibrates the
//! session's ratio first. An attempt that does not shrink the request gives up at once (the
//! no-progress breaker).

use crate::commit::FinishedCompaction;
use crate::error::SessionError;
use crate::event::{CalibrationEvent, Event, EventData, EventKind};
use crate::limits::window_for_usable;
use crate::manager::{items_compressed, CompactManager};
use crate::record::Record;
use compact_core::budget::Budget;
use compact_core::model::Conversation;
use compact_engine::{block_on, CompactError};
use compact_formats::overflow::classify;
use serde_json::json;

/// Each recovery attempt aims at this share of the previous request, compounded per attempt.
pub const RECOVERY_SHRINK: f64 = 0.85;

/// What to do after a provider error.
#[derive(Debug, Clone)]
pub enum Recovery {
    /// Send this request instead.
    Retry(Conversation),
    /// Stop: the error says why; the caller should start a new session.
    GiveUp(RecoveryError),
}

/// Why recovery gave up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecoveryError {
    /// The provider error is not a context overflow (compaction cannot fix it).
    #[error(
        "the provider error (HTTP {status}) is not a context overflow; compaction cannot fix it"
    )]
    NotAnOverflow {
        /// The HTTP status.
        status: u16,
    },
    /// The attempts of this turn are used up.
    #[error("reached the maximum of {attempts} compaction attempts for this turn; please start a new session to continue")]
    AttemptsExhausted {
        /// Attempts made.
        attempts: u32,
    },
    /// Compacting harder no longer shrinks the request.
    #[error("compaction no longer shrinks the request ({tokens} tokens); please start a new session to continue")]
    NoProgress {
        /// Tokens of the request.
        tokens: usize,
    },
    /// What cannot be compacted (pinned items, the latest turn) is already too large.
    #[error("the request cannot fit: its irreducible floor is {floor} tokens but only {usable} are usable; please start a new session to continue")]
    Hopeless {
        /// The floor.
        floor: usize,
        /// The usable budget aimed at.
        usable: usize,
    },
}

impl CompactManager {
    /// Handles a provider's error response to `request`, which must be the request the session's
    /// last [`CompactManager::preflight`] (or `recover`) returned. On [`Recovery::Retry`] the
    /// returned request is also the session's new view: the next preflight builds on it.
    pub fn recover(
        &self,
        session: &str,
        request: &Conversation,
        status: u16,
        body: &str,
    ) -> Result<Recovery, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        if !state.prepared {
            return Err(SessionError::NothingPrepared(session.to_owned()));
        }
        if state.sent().items != request.items {
            return Err(SessionError::NotLastPrepared(session.to_owned()));
        }
        let sent_tokens = state.sent_tokens;
        let give_up = |this: &Self,
                       state: &mut crate::state::SessionState,
                       error: RecoveryError|
         -> Result<Recovery, SessionError> {
            let event = Event::new(
                EventKind::Recovery,
                json!({"outcome": "give_up", "attempt": state.recovery_attempts,
                       "tokens": sent_tokens, "reason": error.to_string()}),
            );
            this.append(session, state, vec![Record::Event(event)])?;
            Ok(Recovery::GiveUp(error))
        };
        let Some(overflow) = classify(status, body) else {
            return give_up(self, state, RecoveryError::NotAnOverflow { status });
        };
        let max = self.config().overflow_max_retries;
        if state.recovery_attempts >= max {
            return give_up(
                self,
                state,
                RecoveryError::AttemptsExhausted { attempts: max },
            );
        }
        state.recovery_attempts += 1;
        let attempt = state.recovery_attempts;

        let model = state.model.clone();
        let mut records = Vec::new();
        if let Some(requested) = overflow.requested.filter(|_| sent_tokens > 0) {
            let update = state.calibration.observe(&model, requested, sent_tokens);
            // The provider stated the exact count: use it as is (bounded), not smoothed.
            state
                .calibration
                .set(&model, update.sample.min(crate::calibration::MAX_RATIO));
            records.push(Record::Event(
                CalibrationEvent {
                    model: model.clone(),
                    provider_tokens: requested,
                    our_tokens: sent_tokens,
                    sample: update.sample,
                    ratio: state.calibration.ratio(&model),
                    source: "overflow".to_owned(),
                    ..CalibrationEvent::default()
                }
                .to_event(),
            ));
        }
        // The provider said its window: every later call is prepared for it.
        if let Some(limit) = overflow.limit.and_then(|l| usize::try_from(l).ok()) {
            state.learn_window(limit);
        }
        let ratio = state.calibration.ratio(&model);
        let base = self.calibrated_policy(state, ratio);
        let provider_usable = overflow
            .limit
            .and_then(|l| usize::try_from(l).ok())
            .map(|l| {
                let window = ((l as f64) / ratio.max(1.0)).floor() as usize;
                Budget::for_window(window.min(base.max_context_tokens), &base).usable
            })
            .unwrap_or(usize::MAX);
        let shrunk = (sent_tokens as f64 * RECOVERY_SHRINK.powi(attempt as i32)) as usize;
        let mut policy = base.clone();
        policy.max_context_tokens = window_for_usable(&base, provider_usable.min(shrunk));
        // The retried request carries the memory block as the facts stand now.
        let mut to_compact = std::borrow::Cow::Borrowed(request);
        self.refresh_block(&state.memory, &mut to_compact);
        let outcome = self
            .compactor(session, policy)
            .and_then(|c| block_on(c.compact(&to_compact)));
        let done = match outcome {
            Ok(done) => done,
            Err(CompactError::InsufficientBudget { floor, budget, .. }) => {
                return give_up(
                    self,
                    state,
                    RecoveryError::Hopeless {
                        floor,
                        usable: budget,
                    },
                );
            }
            Err(CompactError::NoProgress { .. } | CompactError::StillOverBudget { .. }) => {
                return give_up(
                    self,
                    state,
                    RecoveryError::NoProgress {
                        tokens: sent_tokens,
                    },
                );
            }
            Err(e) => return Err(SessionError::Compact(e)),
        };
        let after = done.report.tokens_after;
        if state.recovery_last_tokens.is_some_and(|last| after >= last) || after >= sent_tokens {
            return give_up(
                self,
                state,
                RecoveryError::NoProgress {
                    tokens: sent_tokens,
                },
            );
        }
        let mut view = done.conversation.clone();
        crate::annotation::follow(&mut view.items, &request.items);
        view.tools = request.tools.clone();
        view.format = request.format;
        view.extra = request.extra.clone();
        let event = Event::new(
            EventKind::Recovery,
            json!({"outcome": "retry", "attempt": attempt, "tokens_before": sent_tokens,
                   "tokens_after": after, "items_compressed": items_compressed(&done),
                   "limit": overflow.limit, "requested": overflow.requested}),
        );
        // Recovery has no warning channel: a failed archive write is dropped here (the log holds
        // everything it would have held).
        self.commit_compaction(
            session,
            state,
            FinishedCompaction {
                view: &view,
                tokens: after,
                trigger: "recovery",
                event: None,
                before: records,
                after: vec![Record::Event(event)],
            },
        )?;
        state.recovery_last_tokens = Some(after);
        Ok(Recovery::Retry(view))
    }
}
