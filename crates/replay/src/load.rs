//! Turning transcript files into replay [`Job`]s: import, then restore the history the source's own
//! compactions had hidden, so every strategy starts from what the agent really produced.

use crate::continuation::SourceBoundary;
use crate::parallel::Job;
use crate::session::ReplayOptions;
use crate::ReplayError;
use compact_core::model::{Conversation, ItemBody, ItemId};
use compact_formats::import::{import, ImportMode, ImportOptions};
use std::collections::HashSet;

/// What [`load_job`] did besides importing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadNotes {
    /// Checkpoints the source's own compactions wrote, removed from the replayed history.
    pub source_checkpoints: usize,
    /// Items those compactions had hidden from the model, made visible again.
    pub restored_items: usize,
    /// Import warnings (lenient mode).
    pub warnings: Vec<String>,
    /// Where those compactions happened in the restored history, with the summaries they wrote.
    pub boundaries: Vec<SourceBoundary>,
}

/// Imports `bytes` (named `file_name`) and prepares it for replay.
pub fn load_job(
    bytes: &[u8],
    file_name: &str,
    mode: ImportMode,
    options: &ReplayOptions,
) -> Result<(Job, LoadNotes), ReplayError> {
    let imported = import(bytes, file_name, &ImportOptions { format: None, mode })
        .map_err(|e| ReplayError::Import(e.to_string()))?;
    let mut conversation = imported.conversation;
    let mut notes = undo_source_compactions(&mut conversation);
    notes.warnings = imported.warnings.iter().map(ToString::to_string).collect();
    let name = std::path::Path::new(file_name).file_name().map_or_else(
        || file_name.to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut job = Job::new(name, imported.format.name(), conversation, options);
    job.continuation =
        std::mem::take(&mut job.continuation).with_boundaries(&job.conversation, &notes.boundaries);
    Ok((job, notes))
}

/// Undoes compactions recorded in the source (Codex `compacted`, Claude Code compact boundaries): the
/// items a checkpoint covers become visible again and the checkpoint is removed, so the replay sees
/// the history as the agent produced it and the strategies under test do their own compacting.
pub fn undo_source_compactions(conversation: &mut Conversation) -> LoadNotes {
    let mut notes = LoadNotes::default();
    let covered: HashSet<ItemId> = conversation
        .items
        .iter()
        .filter_map(|item| match item.body() {
            ItemBody::Checkpoint(c) if !c.covers.is_empty() => Some(c.covers.iter().cloned()),
            _ => None,
        })
        .flatten()
        .collect();
    if covered.is_empty() {
        return notes;
    }
    let mut kept = 0usize;
    conversation.items.retain(|item| match item.body() {
        ItemBody::Checkpoint(c) if !c.covers.is_empty() => {
            notes.source_checkpoints += 1;
            notes.boundaries.push(SourceBoundary {
                at: kept,
                summary: c.text.clone(),
            });
            false
        }
        _ => {
            kept += 1;
            true
        }
    });
    for item in &mut conversation.items {
        if covered.contains(&item.meta.id) && !item.meta.visibility.model {
            item.meta.visibility.model = true;
            notes.restored_items += 1;
        }
    }
    notes
}
