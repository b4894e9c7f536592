//! The [`Store`] trait: where session logs live. Implementations: [`MemoryStore`] (tests, embedded
//! use without persistence), [`SqliteStore`] (the embedded default: one file, WAL) and
//! `PostgresStore` (feature `postgres`, on by default: several processes or machines sharing
//! sessions).
//!
//! The trait is shaped for stores shared by several processes (a PostgreSQL store, an object-store
//! archive, next): a session's log is a sequence of records numbered 1, 2, ... without gaps, and
//! every append names the version (the last sequence number) it extends. An append whose expected
//! version is not the session's current one fails with [`StoreError::Conflict`] and writes nothing,
//! so two writers can never interleave, lose or duplicate records (optimistic concurrency: the loser
//! re-reads and decides again). An append is atomic: all of its records or none.

mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod sqlite;

pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
pub use sqlite::SqliteStore;

use crate::codec::CodecError;
use crate::record::{Record, Stored};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// No session with this id.
    #[error("unknown session `{0}`")]
    UnknownSession(String),
    /// The session's log moved on since the caller read it (another writer appended): nothing was
    /// written; re-read and retry.
    #[error(
        "session `{session}` is at version {actual}, not {expected}: another writer appended first"
    )]
    Conflict {
        /// The session.
        session: String,
        /// The version the append extended.
        expected: u64,
        /// The session's version.
        actual: u64,
    },
    /// A stored record could not be read (a damaged or foreign database).
    #[error("session `{session}` record {seq} is corrupt: {source}")]
    Corrupt {
        /// The session.
        session: String,
        /// The record's sequence number.
        seq: u64,
        /// Why.
        source: CodecError,
    },
    /// The backend failed (I/O error, disk full, locked, unreachable); nothing was written.
    #[error("store backend failed: {0}")]
    Backend(String),
    /// The database was written by a newer version of this program.
    #[error("store schema version {found} is newer than this program's {supported}")]
    SchemaTooNew {
        /// Version found.
        found: i64,
        /// Newest version this program knows.
        supported: i64,
    },
}

/// A place where session logs are kept. Every method is safe to call from several threads.
pub trait Store: Send + Sync {
    /// Creates the session if it does not exist; true when it was created.
    fn create(&self, session: &str) -> Result<bool, StoreError>;

    /// The session's version: the sequence number of its last record (0 for an empty log).
    fn version(&self, session: &str) -> Result<u64, StoreError>;

    /// Appends `records` after version `expected`, numbering them `expected + 1, ...`, and returns
    /// the new version. All or nothing; [`StoreError::Conflict`] when the session is not at
    /// `expected`.
    fn append(&self, session: &str, expected: u64, records: Vec<Record>)
        -> Result<u64, StoreError>;

    /// Appends to several sessions, each `(session, expected, records)` as [`Store::append`]
    /// does, with one outcome each in order (a conflict on one writes nothing of it and does not
    /// stop the others). What the usage flusher writes for many quiet sessions at once.
    ///
    /// The default appends them one after another; the SQLite store commits them in one
    /// transaction (a failure of that transaction fails every one of them, nothing written).
    fn append_many(
        &self,
        appends: Vec<(String, u64, Vec<Record>)>,
    ) -> Vec<Result<u64, StoreError>> {
        appends
            .into_iter()
            .map(|(session, expected, records)| self.append(&session, expected, records))
            .collect()
    }

    /// The records with sequence numbers above `after`, in order.
    fn read(&self, session: &str, after: u64) -> Result<Vec<Stored>, StoreError>;

    /// At most `limit` records of one kind (`item`, `view` or `event`, as [`Record::kind`] names
    /// them) with sequence numbers above `after`, in order: what a reader that needs only a log's
    /// events (a session's activity) or its first item reads without decoding the rest.
    ///
    /// The default filters [`Store::read`]; the SQLite and PostgreSQL stores select by the kind
    /// they store beside each record.
    fn read_kind(
        &self,
        session: &str,
        after: u64,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<Stored>, StoreError> {
        Ok(self
            .read(session, after)?
            .into_iter()
            .filter(|s| s.record.kind() == kind)
            .take(limit)
            .collect())
    }

    /// The sequence numbers of every record of one kind, in order, without decoding a record: a
    /// reader that needs two views of hundreds (a compaction's diff) finds them with this, then
    /// reads them with [`Store::read_kind`].
    ///
    /// The default filters [`Store::read`]; the SQLite and PostgreSQL stores select the numbers
    /// alone.
    fn seqs_of_kind(&self, session: &str, kind: &str) -> Result<Vec<u64>, StoreError> {
        Ok(self
            .read(session, 0)?
            .into_iter()
            .filter(|s| s.record.kind() == kind)
            .map(|s| s.seq)
            .collect())
    }

    /// The item records whose item has id `item_id`, oldest first.
    fn find_items(&self, session: &str, item_id: &str) -> Result<Vec<Stored>, StoreError>;

    /// Every session id, sorted.
    fn sessions(&self) -> Result<Vec<String>, StoreError>;

    /// Every session with its version and when its log last recorded an event, sorted by id.
    ///
    /// The default reads every log whole; a store that can look up a session's last event directly
    /// should override it.
    fn list_sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let mut out = Vec::new();
        for id in self.sessions()? {
            let records = match self.read(&id, 0) {
                Ok(records) => records,
                // Deleted since it was listed.
                Err(StoreError::UnknownSession(_)) => continue,
                Err(e) => return Err(e),
            };
            out.push(SessionSummary {
                version: records.last().map_or(0, |s| s.seq),
                last_event_ms: records.iter().rev().find_map(|s| match &s.record {
                    Record::Event(e) => Some(e.at_ms),
                    _ => None,
                }),
                id,
            });
        }
        Ok(out)
    }

    /// Removes a session and its whole log (retention: `compactctl sessions gc`); true when it
    /// existed. The log is append-only while a session lives: deletion takes a session whole,
    /// never part of its log. A manager still holding the session's state gets
    /// [`StoreError::UnknownSession`] on its next append, and nothing is recreated behind its back.
    fn delete_session(&self, session: &str) -> Result<bool, StoreError>;
}

/// What [`Store::list_sessions`] reports of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSummary {
    /// The session id.
    pub id: String,
    /// Its version (the number of records in its log).
    pub version: u64,
    /// When its latest event was recorded (milliseconds since the Unix epoch), if it has one.
    pub last_event_ms: Option<u64>,
}

/// Reads a record's storage document (the text a store kept for record `seq`).
pub(crate) fn decode(session: &str, seq: u64, doc: &str) -> Result<Stored, StoreError> {
    let corrupt = |source: CodecError| StoreError::Corrupt {
        session: session.to_owned(),
        seq,
        source,
    };
    let value: serde_json::Value = serde_json::from_str(doc).map_err(|e| {
        corrupt(CodecError {
            path: String::new(),
            message: e.to_string(),
        })
    })?;
    let record = Record::from_json(&value).map_err(corrupt)?;
    Ok(Stored { seq, record })
}
