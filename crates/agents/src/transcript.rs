//! Reading an agent's transcript (a Claude Code session JSONL or a Codex rollout) and finding the
//! span a compaction drops: the items the latest compaction hid (after it ran), or everything the
//! model sees now (just before it runs).

use crate::error::AgentsError;
use compact_core::model::{Conversation, Item, ItemBody, ItemId};
use compact_formats::import::{import, ImportMode, ImportOptions, Imported};
use std::collections::HashSet;
use std::io::Read;
use std::path::Path;

/// Largest transcript read, in bytes (256 MiB). Claude Code sessions in the corpus are 2-4 MB; a
/// larger file is refused rather than read into memory.
pub const MAX_TRANSCRIPT_BYTES: u64 = 256 * 1024 * 1024;

/// Reads and imports a transcript, leniently: a line cut short by a writer still appending (the
/// agent is running) or a malformed record is skipped, not fatal. The format is detected.
pub fn load(path: &Path) -> Result<Imported, AgentsError> {
    load_with_bytes(path).map(|(imported, _)| imported)
}

/// [`load`], also returning the file's bytes (for what the importer does not keep, such as the
/// usage the agent recorded).
pub fn load_with_bytes(path: &Path) -> Result<(Imported, Vec<u8>), AgentsError> {
    let bytes = read_bounded(path, MAX_TRANSCRIPT_BYTES)?;
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let options = ImportOptions {
        format: None,
        mode: ImportMode::Lenient,
    };
    let imported = import(&bytes, &name, &options)?;
    Ok((imported, bytes))
}

/// Reads at most `limit` bytes of `path`; a larger file is [`AgentsError::TooLarge`].
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, AgentsError> {
    let file = std::fs::File::open(path).map_err(|e| AgentsError::io(path, e))?;
    let meta = file.metadata().map_err(|e| AgentsError::io(path, e))?;
    if !meta.is_file() {
        // A directory, a device (`/dev/zero`) or a pipe is not a transcript or a settings file.
        return Err(AgentsError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| AgentsError::io(path, e))?;
    let read = bytes.len() as u64;
    if read > limit {
        return Err(AgentsError::TooLarge {
            path: path.to_path_buf(),
            bytes: std::fs::metadata(path).map_or(read, |m| m.len()),
            limit,
        });
    }
    Ok(bytes)
}

/// Which span of a transcript a checkpoint is built from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// What the latest compaction hid (the transcript already holds its boundary): the items
    /// between the previous compaction and the latest one.
    LastCompacted,
    /// What the model sees now, which a compaction about to run will summarise.
    Visible,
}

/// The items of `span`, in transcript order, without checkpoint items (the agent's own summaries:
/// they are what the agent keeps, not what it drops). Empty when the transcript records no
/// compaction (for [`Span::LastCompacted`]).
pub fn span(conv: &Conversation, span: Span) -> Vec<Item> {
    let keep: Box<dyn Fn(&Item) -> bool> = match span {
        Span::Visible => Box::new(|item: &Item| item.meta.visibility.model),
        Span::LastCompacted => {
            let Some(covers) = latest_checkpoint_covers(conv) else {
                return Vec::new();
            };
            let covered: HashSet<ItemId> = covers.into_iter().collect();
            Box::new(move |item: &Item| covered.contains(&item.meta.id))
        }
    };
    conv.items
        .iter()
        .filter(|item| !matches!(item.body(), ItemBody::Checkpoint(_)))
        .filter(|item| keep(item))
        .cloned()
        .collect()
}

/// The ids the latest checkpoint item (the agent's latest compaction) stands for.
fn latest_checkpoint_covers(conv: &Conversation) -> Option<Vec<ItemId>> {
    conv.items.iter().rev().find_map(|item| match item.body() {
        ItemBody::Checkpoint(c) => Some(c.covers.clone()),
        _ => None,
    })
}

/// True when the latest compaction the transcript records has its summary in place (a boundary
/// whose summary record is not written yet would otherwise make [`Span::LastCompacted`] the span
/// of the compaction before it).
pub fn last_compaction_complete(imported: &Imported) -> bool {
    let summaries = imported
        .conversation
        .items
        .iter()
        .filter(|i| matches!(i.body(), ItemBody::Checkpoint(_)))
        .count();
    summaries >= imported.stats.compactions
}

/// The agent's own latest summary text, if the transcript holds one.
pub fn latest_summary(conv: &Conversation) -> Option<&str> {
    conv.items.iter().rev().find_map(|item| match item.body() {
        ItemBody::Checkpoint(c) => Some(c.text.as_str()),
        _ => None,
    })
}
