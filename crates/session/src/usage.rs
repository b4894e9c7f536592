//! [`CompactManager::record_usage`]: after each response, the provider's count of the request
//! updates the session's calibration ([`crate::calibration`]).

use crate::calibration::CalibrationUpdate;
use crate::error::SessionError;
use crate::event::{Event, EventKind};
use crate::manager::CompactManager;
use crate::provider::ProviderHeld;
use crate::record::Record;
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
        let state = self.existing(session, &mut slot)?;
        if !state.prepared || state.sent_tokens == 0 {
            return Err(SessionError::NothingPrepared(session.to_owned()));
        }
        let model = usage.model.clone().unwrap_or_else(|| state.model.clone());
        let mut calibration = state.calibration.clone();
        let update = calibration.observe(&model, usage.total_input(), state.sent_tokens);
        let event = Event::new(
            EventKind::Calibration,
            json!({"model": update.model, "provider_tokens": update.provider_tokens,
                   "our_tokens": update.our_tokens, "sample": update.sample,
                   "ratio": update.ratio, "clamped": update.clamped, "source": "usage",
                   // What the provider served from its prompt cache: the web view's cache-hit
                   // share per call, as measured.
                   "cached_input_tokens": usage.cached_input()}),
        );
        let mut records = vec![Record::Event(event)];
        if state.recovery_attempts > 0 {
            // The request sent after an overflow recovery went through.
            records.push(Record::Event(Event::new(
                EventKind::OverflowRecovered,
                json!({"model": update.model, "attempts": state.recovery_attempts,
                       "t_est": state.sent_tokens, "provider_tokens": update.provider_tokens}),
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
        let held = usage.provider_compaction.map(|_| {
            let items = state
                .sent()
                .items
                .iter()
                .filter(|i| {
                    i.meta.visibility.model && !matches!(i.role(), Role::System | Role::Developer)
                })
                .count();
            ProviderHeld::from_reply(items, state.sent_tokens)
        });
        if let Some(held) = &held {
            records.push(Record::Event(held.event()));
        }
        self.append(session, state, records)?;
        state.calibration = calibration;
        if held.is_some() {
            state.provider = held;
        }
        drop(slot);
        self.note_call(session);
        Ok(update)
    }
}
