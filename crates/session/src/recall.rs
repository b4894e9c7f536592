//! Write-time truncation and recall: [`CompactManager::truncate_tool_output`] cuts an oversized tool
//! output as it arrives (seed 000) and keeps the original in the session log under the id its
//! marker names; [`CompactManager::recall`] returns any original item by id, whether a truncation
//! marker, a compaction's reference stub or a checkpoint's citation names it;
//! [`CompactManager::recall_for_model`] does the same for a model that asked for it in band and
//! logs a `compact.recall` event, so the model's use of recall is counted.

use crate::archive::ArchiveError;
use crate::chain::ChainHash;
use crate::error::SessionError;
use crate::event::{Event, EventKind};
use crate::limits::check_session_id;
use crate::manager::CompactManager;
use crate::record::{ItemRecord, ItemSource, Record};
use crate::store::StoreError;
use compact_core::model::{content_id, Item, ItemBody, ToolResult, Visibility};
use compact_core::truncate::truncate_output;
use serde_json::json;

/// Attempts of [`CompactManager::keep_original`] when other writers keep moving the session on.
pub const KEEP_ATTEMPTS: usize = 8;

/// What [`CompactManager::recall_for_model`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    /// The original item, when the log (or the archive) holds one under the id.
    pub item: Option<Item>,
    /// Tokens of the item's text (0 when not found), counted with the session's counter.
    pub tokens: usize,
}

impl CompactManager {
    /// The text to put in the history for a tool output that just arrived: unchanged when within
    /// the policy's tool-output limit, else densified and cut (head and tail around a marker naming
    /// a reference id). When the text changes, the original is logged (visible to the user, not to
    /// the model) and [`CompactManager::recall`] returns it by that id.
    pub fn truncate_tool_output(
        &self,
        session: &str,
        call_id: &str,
        output: &str,
    ) -> Result<String, SessionError> {
        let handle = self.handle(session);
        let mut slot = Self::lock(&handle);
        let state = self.existing(session, &mut slot)?;
        let mut original = Item::new(ItemBody::ToolResult(ToolResult::text(call_id, output)));
        original.meta.id = content_id(&original);
        original.meta.visibility = Visibility {
            model: false,
            user: true,
        };
        let config = self.config();
        let policy = config.policy.tool_output.truncation_policy();
        let cut = truncate_output(output, &policy, &config.counter, &original.meta.id);
        if !cut.changed {
            return Ok(cut.text);
        }
        let event = Event::new(
            EventKind::Truncated,
            json!({"reference": original.meta.id.as_str(), "call_id": call_id,
                   "original_tokens": cut.original_tokens, "tokens": cut.tokens,
                   "removed_lines": cut.removed_lines}),
        );
        let record = Record::Item(ItemRecord {
            source: ItemSource::TruncatedOriginal,
            hash: ChainHash::GENESIS.next_item(&original),
            parent: ChainHash::GENESIS,
            item: original,
        });
        self.append(session, state, vec![record, Record::Event(event)])?;
        Ok(cut.text)
    }

    /// Logs `original`, an output cut outside the manager (`compactctl run`), so that
    /// [`CompactManager::recall`] returns it by its id; `fields` (the command, its directory, exit
    /// code, time) go into a `compact.truncated` event beside it. The session is created when new;
    /// the records are redacted like every other. Writers on the same session (commands run in
    /// parallel) are retried after a conflict, at most [`KEEP_ATTEMPTS`] times.
    pub fn keep_original(
        &self,
        session: &str,
        original: Item,
        fields: serde_json::Value,
    ) -> Result<(), SessionError> {
        check_session_id(session)?;
        self.store().create(session)?;
        for _ in 0..KEEP_ATTEMPTS {
            let handle = self.handle(session);
            let mut slot = Self::lock(&handle);
            // A session this manager has not loaded (`compactctl run` keeps every output in one
            // session, one process per command) is not read back: the append needs only the
            // log's version, and the redaction of this item's own secrets. Keeping an output
            // costs the same however long the log is.
            let mut detached = None;
            let state = match slot.as_mut() {
                Some(state) if !state.stale => state,
                _ => detached.insert(crate::state::SessionState {
                    version: self.store().version(session)?,
                    ..crate::state::SessionState::default()
                }),
            };
            let mut data = json!({"reference": original.meta.id.as_str()});
            if let (Some(map), serde_json::Value::Object(more)) = (data.as_object_mut(), &fields) {
                map.extend(more.clone());
            }
            let record = Record::Item(ItemRecord {
                source: ItemSource::TruncatedOriginal,
                hash: ChainHash::GENESIS.next_item(&original),
                parent: ChainHash::GENESIS,
                item: original.clone(),
            });
            let event = Record::Event(Event::new(EventKind::Truncated, data));
            match self.append(session, state, vec![record, event]) {
                Err(SessionError::Store(StoreError::Conflict { .. })) => {}
                other => return other,
            }
        }
        Err(SessionError::Store(StoreError::Backend(format!(
            "session `{session}`: {KEEP_ATTEMPTS} conflicting writers in a row"
        ))))
    }

    /// The original item with id `reference` from the session's log: an output a write-time
    /// truncation replaced, or any received item (which compaction may have cut, referenced or
    /// summarised in the view; the log keeps it whole). With an archive
    /// ([`CompactManager::with_archive`]), an item the log no longer holds is looked up in the
    /// archived transcripts ([`crate::archive::recall`]).
    pub fn recall(&self, session: &str, reference: &str) -> Result<Item, SessionError> {
        check_session_id(session)?;
        let archive = self.archive().map(|a| a.as_ref());
        match crate::archive::recall(self.store().as_ref(), archive, session, reference) {
            Ok(Some(item)) => Ok(item),
            Ok(None) => Err(SessionError::UnknownReference {
                session: session.to_owned(),
                reference: reference.to_owned(),
            }),
            Err(ArchiveError::Store(StoreError::UnknownSession(s))) => {
                Err(SessionError::UnknownSession(s))
            }
            Err(ArchiveError::Store(e)) => Err(SessionError::Store(e)),
            Err(e) => Err(SessionError::Archive(e)),
        }
    }
    /// [`CompactManager::recall`] for a model that called a recall tool in band (the proxy's
    /// `compact_recall`): an id the session does not know is `item: None`, not an error, since it
    /// is an answer the model gets. A `compact.recall` event (`reference`, `found`, `tokens`) is
    /// logged either way, retried on conflicts like [`CompactManager::keep_original`]; a session
    /// that does not exist is [`SessionError::UnknownSession`] and logs nothing.
    pub fn recall_for_model(
        &self,
        session: &str,
        reference: &str,
    ) -> Result<Recalled, SessionError> {
        let item = match self.recall(session, reference) {
            Ok(item) => Some(item),
            Err(SessionError::UnknownReference { .. }) => None,
            Err(e) => return Err(e),
        };
        let tokens = item
            .as_ref()
            .map_or(0, |i| self.config().counter.count_text(&i.plain_text()));
        let data = json!({"reference": reference, "found": item.is_some(), "tokens": tokens});
        for _ in 0..KEEP_ATTEMPTS {
            let handle = self.handle(session);
            let mut slot = Self::lock(&handle);
            let state = self.existing(session, &mut slot)?;
            let event = Record::Event(Event::new(EventKind::Recall, data.clone()));
            match self.append(session, state, vec![event]) {
                Err(SessionError::Store(StoreError::Conflict { .. })) => {}
                Err(e) => return Err(e),
                Ok(()) => return Ok(Recalled { item, tokens }),
            }
        }
        Err(SessionError::Store(StoreError::Backend(format!(
            "session `{session}`: {KEEP_ATTEMPTS} conflicting writers in a row"
        ))))
    }
}
