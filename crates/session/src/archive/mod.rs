//! The [`Archive`]: objects kept beside the session log, for as long as a retention policy says.
//! Each compaction leaves the full pre-compaction transcript and its checkpoint there
//! ([`archive_compaction`]), and [`archive_events`] copies a session's events out of the log in
//! batches. [`recall`] returns an original item from the log or, when the log no longer has it,
//! from the archived transcripts. [`gc`] deletes the oldest objects first until the archive is
//! within an age and a total size ([`Retention`]).
//!
//! Implementations: [`FsArchive`] (a directory; atomic writes by temp file, fsync and rename) and
//! `S3Archive` (feature `s3`, on by default: any S3-compatible object store).
//!
//! # Layout
//! An object is named `<session>/<seq>-<kind>.json` ([`ObjectKey::path`]): the session id with
//! every byte outside `[A-Za-z0-9_-]` written `%XX` (so no id can climb out of its directory or
//! clash with another), the log sequence number it belongs to in 20 digits (names sort in log
//! order), and its [`ObjectKind`]. Objects are JSON documents carrying a format version (`v`).
//!
//! # Invariants
//! - An object is whole or absent: a reader never sees a partly written one, even after the
//!   writing process was killed (the filesystem renames a complete, synced temp file into place;
//!   S3 stores a PUT whole or not at all).
//! - The archive is written after the log: the log is the record, the archive a copy that may lag
//!   (a failed archive write is a warning, never a failed call) and may be pruned.

mod fs;
mod retention;
#[cfg(feature = "s3")]
mod s3;

pub use fs::FsArchive;
pub use retention::{gc, plan_gc, GcReport, Retention};
#[cfg(feature = "s3")]
pub use s3::{S3Archive, S3Config};

use crate::codec::{decode_item, encode_item, share_envelopes, CodecError};
use crate::record::{ItemSource, Record};
use crate::store::{Store, StoreError};
use compact_core::model::{Conversation, Item, ItemBody};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::SystemTime;

/// Format version of archived documents.
pub const ARCHIVE_FORMAT_VERSION: u64 = 1;

/// What an object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// Every item a compaction was given, as received, before it ran.
    Transcript,
    /// The checkpoint items a compaction produced.
    Checkpoint,
    /// A batch of the session's events, up to the object's sequence number.
    Events,
}

impl ObjectKind {
    /// The name used in object paths.
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Transcript => "transcript",
            ObjectKind::Checkpoint => "checkpoint",
            ObjectKind::Events => "events",
        }
    }

    fn parse(name: &str) -> Option<ObjectKind> {
        [
            ObjectKind::Transcript,
            ObjectKind::Checkpoint,
            ObjectKind::Events,
        ]
        .into_iter()
        .find(|k| k.as_str() == name)
    }
}

/// The name of an archived object.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The session.
    pub session: String,
    /// The log sequence number the object belongs to (the view record of a compaction, the last
    /// event of a batch).
    pub seq: u64,
    /// What it holds.
    pub kind: ObjectKind,
}

/// Digits of the sequence number in object names (`u64::MAX` has 20).
const SEQ_DIGITS: usize = 20;

impl ObjectKey {
    /// A key.
    pub fn new(session: &str, seq: u64, kind: ObjectKind) -> Self {
        ObjectKey {
            session: session.to_owned(),
            seq,
            kind,
        }
    }

    /// `<session>/<seq>-<kind>.json`, the session encoded (see the module documentation).
    pub fn path(&self) -> String {
        format!(
            "{}/{:0width$}-{}.json",
            encode_session(&self.session),
            self.seq,
            self.kind.as_str(),
            width = SEQ_DIGITS
        )
    }

    /// Reads a path [`ObjectKey::path`] wrote; `None` for anything else.
    pub fn parse(path: &str) -> Option<ObjectKey> {
        let (dir, file) = path.split_once('/')?;
        let stem = file.strip_suffix(".json")?;
        let (seq, kind) = stem.split_once('-')?;
        if seq.len() != SEQ_DIGITS || !seq.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(ObjectKey {
            session: decode_session(dir)?,
            seq: seq.parse().ok()?,
            kind: ObjectKind::parse(kind)?,
        })
    }
}

/// A session id as a path segment: bytes outside `[A-Za-z0-9_-]` as `%XX`.
pub fn encode_session(session: &str) -> String {
    let mut out = String::with_capacity(session.len());
    for b in session.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The session id of a path segment [`encode_session`] wrote; `None` for anything else.
pub fn decode_session(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = segment.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}

/// An object as listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectInfo {
    /// Its name.
    pub key: ObjectKey,
    /// Its size in bytes.
    pub size: u64,
    /// When it was written.
    pub modified: SystemTime,
}

/// Why an archive operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// A filesystem operation failed (disk full, permissions, ...).
    #[error("archive: cannot {op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// On what.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The object store answered with an error status.
    #[error("archive: {op} {key} failed with HTTP {status}: {message}")]
    Status {
        /// What was being done.
        op: &'static str,
        /// The object (or bucket) path.
        key: String,
        /// The HTTP status.
        status: u16,
        /// The start of the response body.
        message: String,
    },
    /// The object store could not be reached, or its answer not read.
    #[error("archive: {op} {key}: {message}")]
    Unreachable {
        /// What was being done.
        op: &'static str,
        /// The object (or bucket) path.
        key: String,
        /// Why.
        message: String,
    },
    /// The archive's settings are unusable (a bad endpoint URL, ...).
    #[error("archive: bad configuration: {0}")]
    Config(String),
    /// An object is not a document this program wrote.
    #[error("archive: object {key} is corrupt: {message}")]
    Corrupt {
        /// The object path.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// The session log failed (while copying events out of it, or recalling from it).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where a session's archived objects are kept. Every method is safe to call from several threads.
pub trait Archive: Send + Sync {
    /// Writes `body` under `key`, replacing any object of that name. Whole or not at all.
    fn put(&self, key: &ObjectKey, body: &[u8]) -> Result<(), ArchiveError>;

    /// The object under `key`, `None` when there is none.
    fn get(&self, key: &ObjectKey) -> Result<Option<Vec<u8>>, ArchiveError>;

    /// The objects of `session` (every session's when `None`), sorted by key.
    fn list(&self, session: Option<&str>) -> Result<Vec<ObjectInfo>, ArchiveError>;

    /// Deletes the object under `key` (nothing when there is none).
    fn delete(&self, key: &ObjectKey) -> Result<(), ArchiveError>;
}

fn document(kind: ObjectKind, session: &str, seq: u64, body: (&str, Value)) -> Vec<u8> {
    let mut doc = json!({
        "v": ARCHIVE_FORMAT_VERSION,
        "type": kind.as_str(),
        "session": session,
        "seq": seq,
    });
    doc[body.0] = body.1;
    doc.to_string().into_bytes()
}

/// Archives a compaction recorded at log sequence number `seq`: `transcript` (every item the
/// compaction was given, as received) and the checkpoint items of `view` (the compacted result).
pub fn archive_compaction(
    archive: &dyn Archive,
    session: &str,
    seq: u64,
    transcript: &[Item],
    view: &Conversation,
) -> Result<(), ArchiveError> {
    let items: Vec<Value> = transcript.iter().map(encode_item).collect();
    archive.put(
        &ObjectKey::new(session, seq, ObjectKind::Transcript),
        &document(
            ObjectKind::Transcript,
            session,
            seq,
            ("items", json!(items)),
        ),
    )?;
    let checkpoints: Vec<Value> = view
        .items
        .iter()
        .filter(|i| matches!(i.body(), ItemBody::Checkpoint(_)))
        .map(encode_item)
        .collect();
    archive.put(
        &ObjectKey::new(session, seq, ObjectKind::Checkpoint),
        &document(
            ObjectKind::Checkpoint,
            session,
            seq,
            ("items", json!(checkpoints)),
        ),
    )
}

/// What the manager does after logging a compaction when it has an archive: archives it (its full
/// transcript and checkpoint) and the events logged since the last archived batch, and turns a
/// failure into a warning for the caller's report (the log already holds everything).
pub(crate) fn after_compaction(
    archive: Option<&dyn Archive>,
    store: &dyn Store,
    redactor: Option<&compact_core::redact::Redactor>,
    session: &str,
    seq: u64,
    transcript: &[Item],
    view: &Conversation,
) -> Option<String> {
    let archive = archive?;
    // The archive gets what the log got: items with their secrets redacted (the events are read
    // back from the log, redacted already).
    let redacted;
    let (transcript, view) = match redactor {
        Some(r) => {
            let mut items = transcript.to_vec();
            for item in &mut items {
                r.redact_item(session, item);
            }
            // Of the view, only its checkpoints are archived.
            let mut v = Conversation {
                items: view
                    .items
                    .iter()
                    .filter(|i| matches!(i.body(), ItemBody::Checkpoint(_)))
                    .cloned()
                    .collect(),
                ..Conversation::default()
            };
            for item in &mut v.items {
                r.redact_item(session, item);
            }
            redacted = (items, v);
            (&redacted.0[..], &redacted.1)
        }
        None => (transcript, view),
    };
    let result = archive_compaction(archive, session, seq, transcript, view)
        .and_then(|()| archive_events(store, archive, session).map(drop));
    result
        .err()
        .map(|e| format!("the compaction was logged but not archived: {e}"))
}

/// Copies the events of `session`'s log that no archived batch holds yet into one new
/// [`ObjectKind::Events`] object (named by the last log record read, so the next call starts
/// after it); returns how many events it archived.
pub fn archive_events(
    store: &dyn Store,
    archive: &dyn Archive,
    session: &str,
) -> Result<usize, ArchiveError> {
    let after = archive
        .list(Some(session))?
        .iter()
        .filter(|o| o.key.kind == ObjectKind::Events)
        .map(|o| o.key.seq)
        .max()
        .unwrap_or(0);
    let records = store.read(session, after)?;
    let Some(last) = records.last().map(|r| r.seq) else {
        return Ok(0);
    };
    let events: Vec<Value> = records
        .iter()
        .filter_map(|r| match &r.record {
            Record::Event(e) => Some(json!({"seq": r.seq, "event": e.to_json()})),
            _ => None,
        })
        .collect();
    let count = events.len();
    archive.put(
        &ObjectKey::new(session, last, ObjectKind::Events),
        &document(ObjectKind::Events, session, last, ("events", json!(events))),
    )?;
    Ok(count)
}

/// The items of an archived transcript or checkpoint object.
pub fn read_items(archive: &dyn Archive, key: &ObjectKey) -> Result<Vec<Item>, ArchiveError> {
    let path = key.path();
    let corrupt = |message: String| ArchiveError::Corrupt {
        key: path.clone(),
        message,
    };
    let Some(bytes) = archive.get(key)? else {
        return Err(corrupt("listed but gone".to_owned()));
    };
    let doc: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if doc.get("v").and_then(Value::as_u64) != Some(ARCHIVE_FORMAT_VERSION) {
        return Err(corrupt("unknown archive format version".to_owned()));
    }
    let Some(Value::Array(items)) = doc.get("items") else {
        return Err(corrupt("no `items` array".to_owned()));
    };
    let mut items = items
        .iter()
        .map(decode_item)
        .collect::<Result<Vec<_>, CodecError>>()
        .map_err(|e| corrupt(e.to_string()))?;
    share_envelopes(&mut items);
    Ok(items)
}

/// The original item with id `reference`: from the session log when it holds it (an original a
/// write-time truncation replaced first), else from the archived transcripts and checkpoints,
/// newest first (the log was pruned, or the session is gone from the store). `None` when neither
/// has it.
pub fn recall(
    store: &dyn Store,
    archive: Option<&dyn Archive>,
    session: &str,
    reference: &str,
) -> Result<Option<Item>, ArchiveError> {
    let logged = match store.find_items(session, reference) {
        Ok(found) => found,
        Err(StoreError::UnknownSession(_)) if archive.is_some() => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut items: Vec<_> = logged
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Item(r) => Some(r),
            _ => None,
        })
        .collect();
    items.sort_by_key(|r| r.source != ItemSource::TruncatedOriginal);
    if let Some(r) = items.into_iter().next() {
        return Ok(Some(r.item));
    }
    let Some(archive) = archive else {
        return Ok(None);
    };
    let mut objects = archive.list(Some(session))?;
    objects.retain(|o| o.key.kind != ObjectKind::Events);
    // Newest first; at one sequence number the transcript (originals) before the checkpoint.
    objects.sort_by(|a, b| b.key.seq.cmp(&a.key.seq).then(a.key.kind.cmp(&b.key.kind)));
    for object in objects {
        let found = read_items(archive, &object.key)?
            .into_iter()
            .find(|i| i.meta.id.as_str() == reference);
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_stay_in_their_directory() {
        for session in ["s1", "a/b", "..", ".", "x%41", "naïve id", "-_-"] {
            let key = ObjectKey::new(session, 42, ObjectKind::Checkpoint);
            let path = key.path();
            let (dir, _) = path.split_once('/').unwrap();
            assert!(!dir.contains('/') && !dir.contains('.'), "{path}");
            assert_eq!(ObjectKey::parse(&path), Some(key), "{path}");
        }
        assert_eq!(
            ObjectKey::new("s", 7, ObjectKind::Transcript).path(),
            "s/00000000000000000007-transcript.json"
        );
        for bad in [
            "s/7-transcript.json",
            "s/00000000000000000007-other.json",
            "s/00000000000000000007-events",
            "%zz/00000000000000000007-events.json",
            "/00000000000000000007-events.json",
            "a.b/00000000000000000007-events.json",
        ] {
            assert_eq!(ObjectKey::parse(bad), None, "{bad}");
        }
    }
}
