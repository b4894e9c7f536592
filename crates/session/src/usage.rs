//! [`CompactManager::record_usage`]: after each response, the provider's count of the request
//! updates the session's calibration ([`crate::calibration`]).

use crate::calibration::{Calibration, CalibrationUpdate};
use crate::error::SessionError;
use crate::event::{CalibrationEvent, Event, EventData, EventKind};
use crate::limits::CONFLICT_RETRIES;
use crate::manager::CompactManager;
use crate::provider::ProviderHeld;
use crate::record::Record;
use crate::state::SessionState;
use crate::store::StoreError;
use compact_core::model::Role;
use serde_json::json;

/// Input-token usage a provider reported for one response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    /// Input tokens as reported (OpenAI `prompt_tokens` / `input_tokens`, which include cached
    /// tokens; Anthropic `input_tokens`, which does not).
    pub input_tokens: u64,
    /// Anthropic `cache_read_input_tokens` (0 for OpenAI, whose cached tokens are in `input_tokens`).
    pub cache_read_input_tokens: u64,
    /// Anthropic `cache_creation_input_tokens` (0 for OpenAI).
    pub cache_creation_input_tokens: u64,
    /// OpenAI's cached part of `input_tokens` (Chat `usage.prompt_tokens_details.cached_tokens`,
    /// Responses `usage.input_tokens_details.cached_tokens`; 0 for Anthropic, whose cached tokens
    /// are `cache_read_input_tokens`).
    pub cached_input_tokens: u64,
    /// The model that answered, when known (else the last request's `model`).
    pub model: Option<String>,
    /// The provider's own compaction pass, when the reply says it ran one (Anthropic
    /// `usage.iterations`, a Responses `compaction` output item): then `input_tokens` is what that
    /// pass read (the whole request as the provider counted it), and the provider now holds a
    /// compaction the client will send back.
    pub provider_compaction: Option<CompactionPass>,
}

/// The usage of a provider's compaction pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionPass {
    /// Input tokens the pass read.
    pub input_tokens: u64,
    /// Output tokens it wrote (the summary).
    pub output_tokens: u64,
    /// Input tokens billed for the whole reply (every iteration).
    pub billed_input_tokens: u64,
    /// Output tokens billed for the whole reply (every iteration).
    pub billed_output_tokens: u64,
}

impl Usage {
    /// Every input token the provider counted for the request.
    pub fn total_input(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }

    /// The input tokens the provider read from its prompt cache (OpenAI's cached part, Anthropic's
    /// cache reads), at most [`Usage::total_input`].
    pub fn cached_input(&self) -> u64 {
        self.cached_input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .min(self.total_input())
    }
}

impl CompactManager {
    /// Records the provider's usage for the request the session's last preflight returned, and
    /// updates the calibration ratio of its model. Returns what changed (also logged).
    pub fn record_usage(
        &self,
        session: &str,
        usage: &Usage,
    ) -> Result<CalibrationUpdate, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        // The state as this process's last preflight left it, even if another writer appended
        // since (the figures of that call are what the usage measures).
        let state = match slot.as_mut() {
            Some(state) => state,
            None => self.existing(session, &mut slot)?,
        };
        if !state.prepared || state.sent_tokens == 0 {
            return Err(SessionError::NothingPrepared(session.to_owned()));
        }
        // What the usage measures is the call this process prepared: its figures are taken now,
        // so that a record that must wait for another writer's (the next turn, served elsewhere)
        // still compares the provider's count with this call's.
        let call = CallFigures {
            model: usage.model.clone().unwrap_or_else(|| state.model.clone()),
            sent_tokens: state.sent_tokens,
            recovery_attempts: state.recovery_attempts,
            sent_items: state
                .sent()
                .items
                .iter()
                .filter(|i| {
                    i.meta.visibility.model && !matches!(i.role(), Role::System | Role::Developer)
                })
                .count(),
        };
        let mut conflicts = 0;
        let update = loop {
            let state = self.existing(session, &mut slot)?;
            let (records, calibration, update, held) = usage_records(state, &call, usage);
            match self.append(session, state, records) {
                Ok(()) => {
                    state.calibration = calibration;
                    if held.is_some() {
                        state.provider = held;
                    }
                    break update;
                }
                Err(SessionError::Store(StoreError::Conflict { .. }))
                    if conflicts < CONFLICT_RETRIES =>
                {
                    conflicts += 1;
                }
                Err(e) => return Err(e),
            }
        };
        drop(slot);
        self.note_call(session);
        Ok(update)
    }
}

/// The figures of the call a usage is recorded for.
#[derive(Debug)]
struct CallFigures {
    model: String,
    sent_tokens: usize,
    recovery_attempts: u32,
    /// The model-visible items of what was sent, instructions aside.
    sent_items: usize,
}

/// One usage report whose records are not in the log yet: what it measures, and its records as
/// they would be logged now (redacted).
#[derive(Debug)]
#[allow(dead_code)] // Filled in by the next commit.
pub(crate) struct HeldUsage {
    call: CallFigures,
    usage: Usage,
    records: Vec<Record>,
    /// When it was reported.
    since: std::time::Instant,
}

/// The records of a usage (calibration, a recovery that went through, the provider's own
/// compaction), the calibration and provider state they leave, and the update.
fn usage_records(
    state: &SessionState,
    call: &CallFigures,
    usage: &Usage,
) -> (
    Vec<Record>,
    Calibration,
    CalibrationUpdate,
    Option<ProviderHeld>,
) {
    let mut calibration = state.calibration.clone();
    let update = calibration.observe(&call.model, usage.total_input(), call.sent_tokens);
    let event = CalibrationEvent {
        model: update.model.clone(),
        provider_tokens: update.provider_tokens,
        our_tokens: update.our_tokens,
        sample: update.sample,
        ratio: update.ratio,
        clamped: Some(update.clamped),
        source: "usage".to_owned(),
        // What the provider served from its prompt cache: the web view's cache-hit share per
        // call, as measured.
        cached_input_tokens: Some(usage.cached_input()),
    }
    .to_event();
    let mut records = vec![Record::Event(event)];
    if call.recovery_attempts > 0 {
        // The request sent after an overflow recovery went through.
        records.push(Record::Event(Event::new(
            EventKind::OverflowRecovered,
            json!({"model": update.model, "attempts": call.recovery_attempts,
                   "t_est": call.sent_tokens, "provider_tokens": update.provider_tokens}),
        )));
    }
    if let Some(pass) = usage.provider_compaction {
        // The provider now holds a compaction of everything it was sent: the client sends it
        // back next, and what it stands for is the first thing the next compaction drops.
        records.push(Record::Event(Event::new(
            EventKind::ProviderCompaction,
            json!({"model": update.model, "input_tokens": pass.input_tokens,
                   "output_tokens": pass.output_tokens,
                   "billed_input_tokens": pass.billed_input_tokens,
                   "billed_output_tokens": pass.billed_output_tokens}),
        )));
    }
    let held = usage
        .provider_compaction
        .map(|_| ProviderHeld::from_reply(call.sent_items, call.sent_tokens));
    if let Some(held) = &held {
        records.push(Record::Event(held.event()));
    }
    (records, calibration, update, held)
}
