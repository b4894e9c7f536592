//! [`CompactManager::record_passthrough`]: a request its host sends on as the client made it (the
//! preflight failed, the prepared request could not be encoded) is still a call of the session:
//! its new items and the call are logged, so that the log holds every turn and the next call
//! builds on it.

use crate::chain::ChainHash;
use crate::error::SessionError;
use crate::event::{EventData, SentEvent};
use crate::limits::{check_session_id, CONFLICT_RETRIES};
use crate::manager::CompactManager;
use crate::record::{ItemRecord, ItemSource, Record};
use crate::store::StoreError;
use compact_core::model::Conversation;

impl CompactManager {
    /// Logs `request`, sent upstream untouched for `reason` (a short name: `preflight_failed`,
    /// `encode_failed`): the items the log does not hold yet and a `compact.sent` event with
    /// `passthrough` set to the reason and the request's whole count. The session's view then
    /// holds those items as received: the next call is prepared, and compacted when due, from it.
    ///
    /// Errors: an invalid session id, or a store failure (nothing is logged).
    pub fn record_passthrough(
        &self,
        session: &str,
        request: &Conversation,
        reason: &str,
    ) -> Result<(), SessionError> {
        check_session_id(session)?;
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        if slot.is_none() {
            self.store().create(session)?;
        }
        let tokens = self.config().counter.total(request);
        let model = self.model_key(request);
        let mut conflicts = 0;
        loop {
            let state = self.existing(session, &mut slot)?;
            let (matched, _) = state.match_prefix(&request.items);
            let mut tip = matched
                .checked_sub(1)
                .map_or(ChainHash::GENESIS, |i| state.chain[i]);
            let mut records = Vec::new();
            for item in &request.items[matched..] {
                let parent = tip;
                tip = tip.next_item(item);
                if !state.logged.contains(&tip) {
                    records.push(Record::Item(ItemRecord {
                        source: ItemSource::Received,
                        hash: tip,
                        parent,
                        item: item.clone(),
                    }));
                }
            }
            records.push(Record::Event(
                SentEvent {
                    tip: tip.to_string(),
                    received: request.items.len(),
                    items: request.items.len(),
                    tokens,
                    reused_items: 0,
                    model: model.to_owned(),
                    branched: matched < state.chain.len(),
                    passthrough: Some(reason.to_owned()),
                }
                .to_event(),
            ));
            // The state takes the records in as any other writer's: from the version they extend.
            let before = state.version;
            match self.append(session, state, records) {
                Ok(()) => {
                    state.version = before;
                    let caught_up = state.catch_up(self.store().as_ref(), session);
                    if caught_up.is_err() {
                        *slot = None;
                    }
                    drop(slot);
                    self.note_call(session);
                    return caught_up;
                }
                Err(SessionError::Store(StoreError::Conflict { .. }))
                    if conflicts < CONFLICT_RETRIES =>
                {
                    conflicts += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
