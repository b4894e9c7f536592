//! [`SqliteStore`]: session logs in one SQLite file (the embedded default).
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a commit is in the write-ahead log
//! before `append` returns, so a process killed at any point (SIGKILL included) leaves every
//! committed append readable and no partial one (an append is one transaction). Only a crash of
//! the machine itself can lose the last appends before a checkpoint; `synchronous = FULL` would
//! close that at one fsync per append.
//!
//! Appends are committed in groups: an append's rows are written out (JSON) before any lock is
//! taken, then queued; whichever appending thread next holds the connection commits every append
//! queued by then in one transaction (each checked against its session's version in turn, a stale
//! one refused and written nothing, as alone), and each `append` returns once the transaction that
//! holds it has committed. So several sessions appending at once pay one `BEGIN`/`COMMIT` and one
//! write of each page they share, and the durability is the same as one transaction per append:
//! **an append that returned is committed** (no acknowledged append is ever held in memory only),
//! and a batch is all or nothing. A process killed at any point (SIGKILL included) therefore loses
//! nothing its caller was told was written (test `sqlite_keeps_every_acknowledged_append_through_a_sigkill`);
//! a crash of the machine can lose the appends committed since the last checkpoint's fsync (see
//! above), never part of one.
//!
//! Checkpoints are kept off the call path: the writing connection never checkpoints on commit
//! (`wal_autocheckpoint = 0`); a checkpointer thread with its own connection copies the WAL back
//! into the database with a passive checkpoint (which never blocks a writer) once appends pause for
//! [`CHECKPOINT_IDLE`], or every [`CHECKPOINT_MAX_DELAY`] under continuous load. Its fsync is the
//! only one `synchronous = NORMAL` makes, so no `append` waits for the disk.
//!
//! The schema is versioned with `PRAGMA user_version`; [`MIGRATIONS`] are applied in order at open,
//! each in its own transaction, and a database from a newer program is refused
//! ([`StoreError::SchemaTooNew`]). Since version 2 the records are a rowid table appended at its
//! end, found by session through the index `(sid, seq)` (the session's integer key): an append
//! writes about 6 pages where the session-keyed table of version 1 wrote about 11 (benchmark
//! `store_pages`).

use super::{decode, SessionSummary, Store, StoreError};
use crate::record::{Record, Stored};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Schema migrations; migration `i` (from 0) brings the database to version `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: sessions with their version, and the records of every session's log.
    "CREATE TABLE sessions (
         id TEXT PRIMARY KEY,
         version INTEGER NOT NULL
     );
     CREATE TABLE records (
         session TEXT NOT NULL REFERENCES sessions(id),
         seq INTEGER NOT NULL,
         kind TEXT NOT NULL,
         item_id TEXT,
         doc TEXT NOT NULL,
         PRIMARY KEY (session, seq)
     ) WITHOUT ROWID;
     CREATE INDEX records_by_item ON records(session, item_id) WHERE item_id IS NOT NULL;",
    // 2: records in a rowid table, sessions by an integer key. Rows are appended at the table's
    // end (the page being filled stays in the cache) instead of into the middle of a b-tree keyed
    // by the session's text, which read and wrote a page of each session's tail per append and
    // copied the session id into every key. Every record is copied as it is, in log order.
    "CREATE TABLE sessions_v2 (
         sid INTEGER PRIMARY KEY,
         id TEXT NOT NULL UNIQUE,
         version INTEGER NOT NULL
     );
     INSERT INTO sessions_v2 (id, version) SELECT id, version FROM sessions ORDER BY id;
     CREATE TABLE records_v2 (
         sid INTEGER NOT NULL,
         seq INTEGER NOT NULL,
         kind TEXT NOT NULL,
         item_id TEXT,
         doc TEXT NOT NULL
     );
     INSERT INTO records_v2 (sid, seq, kind, item_id, doc)
         SELECT s.sid, r.seq, r.kind, r.item_id, r.doc
           FROM records r JOIN sessions_v2 s ON s.id = r.session
          ORDER BY s.sid, r.seq;
     DROP INDEX records_by_item;
     DROP TABLE records;
     DROP TABLE sessions;
     ALTER TABLE sessions_v2 RENAME TO sessions;
     ALTER TABLE records_v2 RENAME TO records;
     CREATE UNIQUE INDEX records_by_seq ON records(sid, seq);
     CREATE INDEX records_by_item ON records(sid, item_id) WHERE item_id IS NOT NULL;",
];

/// How long a writer waits for another connection's lock before reporting the store busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The checkpointer runs once appends have paused this long ("idle")...
pub const CHECKPOINT_IDLE: Duration = Duration::from_millis(50);
/// ...or at the latest this long after the first append it has not yet copied back, so that the
/// WAL stays small under continuous load (SQLite's own auto-checkpoint, turned off here, fires at
/// 1,000 pages, about 4 MB; a second of appends is usually far less).
pub const CHECKPOINT_MAX_DELAY: Duration = Duration::from_secs(1);

/// Session logs in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
    /// Appends waiting for the next group commit (see the module documentation).
    queue: Mutex<Vec<Arc<Queued>>>,
    checkpointer: Option<Checkpointer>,
}

/// One append waiting in the queue: its rows, written out, and its outcome once committed.
#[derive(Debug)]
struct Queued {
    session: String,
    expected: u64,
    /// Per record: its kind, its item id, its document.
    rows: Vec<(&'static str, Option<String>, String)>,
    /// Set by the thread that committed (or failed) the group holding this append.
    outcome: Mutex<Option<Result<u64, StoreError>>>,
}

/// What the appends and the checkpointer thread share.
#[derive(Debug, Default)]
struct Pending {
    /// When the oldest append not yet checkpointed committed, and when the newest did.
    since: Option<(Instant, Instant)>,
    /// Set when the store is dropped.
    stop: bool,
}

/// The checkpointer thread and its signal.
#[derive(Debug)]
struct Checkpointer {
    shared: Arc<(Mutex<Pending>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts a thread checkpointing the database at `path` through its own connection.
    fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open(path).map_err(backend)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        let shared: Arc<(Mutex<Pending>, Condvar)> = Arc::default();
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("compact-sqlite-checkpoint".to_owned())
            .spawn(move || checkpoint_loop(&conn, &theirs))
            .map_err(|e| StoreError::Backend(format!("cannot start the checkpointer: {e}")))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    /// Records that an append committed.
    fn notify(&self) {
        let (lock, signal) = &*self.shared;
        let mut pending = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        pending.since = Some(pending.since.map_or((now, now), |(first, _)| (first, now)));
        signal.notify_one();
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        {
            let (lock, signal) = &*self.shared;
            let mut pending = lock
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pending.stop = true;
            signal.notify_one();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Waits for appends, then for a pause (or the maximum delay), then checkpoints; until stopped.
/// A failed checkpoint is left for the next round (the WAL keeps every commit meanwhile).
fn checkpoint_loop(conn: &Connection, shared: &(Mutex<Pending>, Condvar)) {
    let (lock, signal) = shared;
    let mut pending = lock
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        if pending.stop {
            return;
        }
        let Some((first, last)) = pending.since else {
            pending = signal
                .wait(pending)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            continue;
        };
        let now = Instant::now();
        let due = (last + CHECKPOINT_IDLE).min(first + CHECKPOINT_MAX_DELAY);
        if now < due {
            pending = signal
                .wait_timeout(pending, due - now)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
            continue;
        }
        pending.since = None;
        drop(pending);
        let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        pending = lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl SqliteStore {
    /// Opens (creating when absent) the database at `path` and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let conn = Connection::open(path).map_err(backend)?;
        let mut store = Self::setup(conn)?;
        store.checkpointer = Some(Checkpointer::start(path)?);
        Ok(store)
    }

    /// A private in-memory database (for tests).
    pub fn open_in_memory() -> Result<Self, StoreError> {
        Self::setup(Connection::open_in_memory().map_err(backend)?)
    }

    fn setup(mut conn: Connection) -> Result<Self, StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(backend)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(backend)?;
        // Checkpoints are the checkpointer thread's (see the module documentation).
        conn.pragma_update(None, "wal_autocheckpoint", 0)
            .map_err(backend)?;
        let supported = MIGRATIONS.len() as i64;
        // Each step re-reads the version inside its write transaction: two processes opening a new
        // file at once apply each migration once.
        loop {
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let found: i64 = tx
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(backend)?;
            if found > supported {
                return Err(StoreError::SchemaTooNew { found, supported });
            }
            let Some(sql) = MIGRATIONS.get(found.max(0) as usize) else {
                break;
            };
            tx.execute_batch(sql).map_err(backend)?;
            tx.pragma_update(None, "user_version", found + 1)
                .map_err(backend)?;
            tx.commit().map_err(backend)?;
        }
        Ok(SqliteStore {
            conn: Mutex::new(conn),
            queue: Mutex::new(Vec::new()),
            checkpointer: None,
        })
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.lock()?
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(backend)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Connection>, StoreError> {
        self.conn
            .lock()
            .map_err(|_| StoreError::Backend("sqlite connection lock poisoned".to_owned()))
    }
}

/// A session's integer key (`sessions.sid`) and its version.
fn sid_version_of(conn: &Connection, session: &str) -> Result<(i64, u64), StoreError> {
    conn.prepare_cached("SELECT sid, version FROM sessions WHERE id = ?1")
        .map_err(backend)?
        .query_row(params![session], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
        })
        .optional()
        .map_err(backend)?
        .map(|(sid, v)| (sid, u64::try_from(v).unwrap_or(0)))
        .ok_or_else(|| StoreError::UnknownSession(session.to_owned()))
}

/// A session's integer key, `UnknownSession` when it has no log.
fn sid_of(conn: &Connection, session: &str) -> Result<i64, StoreError> {
    sid_version_of(conn, session).map(|(sid, _)| sid)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store for SqliteStore {
    fn create(&self, session: &str) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let n = conn
            .prepare_cached("INSERT OR IGNORE INTO sessions (id, version) VALUES (?1, 0)")
            .map_err(backend)?
            .execute(params![session])
            .map_err(backend)?;
        Ok(n == 1)
    }

    fn version(&self, session: &str) -> Result<u64, StoreError> {
        let conn = self.lock()?;
        sid_version_of(&conn, session).map(|(_, version)| version)
    }

    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<u64, StoreError> {
        let mine = queued(session.to_owned(), expected, &records);
        self.commit_queued(std::slice::from_ref(&mine));
        take_outcome(&mine).unwrap_or_else(lost)
    }

    fn append_many(
        &self,
        appends: Vec<(String, u64, Vec<Record>)>,
    ) -> Vec<Result<u64, StoreError>> {
        let mine: Vec<Arc<Queued>> = appends
            .into_iter()
            .map(|(session, expected, records)| queued(session, expected, &records))
            .collect();
        self.commit_queued(&mine);
        mine.iter()
            .map(|q| take_outcome(q).unwrap_or_else(lost))
            .collect()
    }

    fn read(&self, session: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        let conn = self.lock()?;
        let sid = sid_of(&conn, session)?;
        let mut stmt = conn
            .prepare_cached("SELECT seq, doc FROM records WHERE sid = ?1 AND seq > ?2 ORDER BY seq")
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![sid, to_i64(after)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(backend)?;
        decode_rows(session, rows)
    }

    fn read_kind(
        &self,
        session: &str,
        after: u64,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<Stored>, StoreError> {
        let conn = self.lock()?;
        let sid = sid_of(&conn, session)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, doc FROM records WHERE sid = ?1 AND seq > ?2 AND kind = ?3 ORDER BY seq LIMIT ?4",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(
                params![
                    sid,
                    to_i64(after),
                    kind,
                    to_i64(u64::try_from(limit).unwrap_or(u64::MAX))
                ],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
            )
            .map_err(backend)?;
        decode_rows(session, rows)
    }

    fn seqs_of_kind(&self, session: &str, kind: &str) -> Result<Vec<u64>, StoreError> {
        let conn = self.lock()?;
        let sid = sid_of(&conn, session)?;
        let mut stmt = conn
            .prepare_cached("SELECT seq FROM records WHERE sid = ?1 AND kind = ?2 ORDER BY seq")
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![sid, kind], |r| r.get::<_, i64>(0))
            .map_err(backend)?;
        rows.map(|r| {
            r.map(|seq| u64::try_from(seq).unwrap_or(0))
                .map_err(backend)
        })
        .collect()
    }

    fn find_items(&self, session: &str, item_id: &str) -> Result<Vec<Stored>, StoreError> {
        let conn = self.lock()?;
        let sid = sid_of(&conn, session)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, doc FROM records WHERE sid = ?1 AND item_id = ?2 ORDER BY seq",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![sid, item_id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(backend)?;
        decode_rows(session, rows)
    }

    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        let conn = self.lock()?;
        let mut stmt = conn
            .prepare_cached("SELECT id FROM sessions ORDER BY id")
            .map_err(backend)?;
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let conn = self.lock()?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT s.id, s.version,
                        (SELECT doc FROM records r
                          WHERE r.sid = s.sid AND r.kind = 'event'
                          ORDER BY r.seq DESC LIMIT 1)
                   FROM sessions s ORDER BY s.id",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (id, version, doc) = row.map_err(backend)?;
            let last_event_ms = match doc {
                Some(doc) => match decode(&id, 0, &doc)?.record {
                    Record::Event(e) => Some(e.at_ms),
                    _ => None,
                },
                None => None,
            };
            out.push(SessionSummary {
                id,
                version: u64::try_from(version).unwrap_or(0),
                last_event_ms,
            });
        }
        Ok(out)
    }

    fn delete_session(&self, session: &str) -> Result<bool, StoreError> {
        let mut conn = self.lock()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        tx.prepare_cached(
            "DELETE FROM records WHERE sid = (SELECT sid FROM sessions WHERE id = ?1)",
        )
        .map_err(backend)?
        .execute(params![session])
        .map_err(backend)?;
        let n = tx
            .prepare_cached("DELETE FROM sessions WHERE id = ?1")
            .map_err(backend)?
            .execute(params![session])
            .map_err(backend)?;
        tx.commit().map_err(backend)?;
        drop(conn);
        if let Some(checkpointer) = &self.checkpointer {
            checkpointer.notify();
        }
        Ok(n == 1)
    }
}

/// An append ready for the queue: its rows written out (before any lock is taken).
fn queued(session: String, expected: u64, records: &[Record]) -> Arc<Queued> {
    let rows = records
        .iter()
        .map(|r| (r.kind(), r.item_id().map(str::to_owned), r.to_json_string()))
        .collect();
    Arc::new(Queued {
        session,
        expected,
        rows,
        outcome: Mutex::new(None),
    })
}

/// The outcome of an append whose group committed without setting it (never expected).
fn lost() -> Result<u64, StoreError> {
    Err(StoreError::Backend(
        "sqlite append was lost from its group".to_owned(),
    ))
}

impl SqliteStore {
    /// Queues `mine` and returns once each has its outcome: committed in the group of whichever
    /// thread holds the connection next (this one, or one that held it meanwhile).
    fn commit_queued(&self, mine: &[Arc<Queued>]) {
        let fail_all = |message: &str| {
            for queued in mine {
                let mut outcome = queued
                    .outcome
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if outcome.is_none() {
                    *outcome = Some(Err(StoreError::Backend(message.to_owned())));
                }
            }
        };
        match self.queue.lock() {
            Ok(mut queue) => queue.extend(mine.iter().cloned()),
            Err(_) => return fail_all("sqlite append queue lock poisoned"),
        }
        let mut conn = match self.lock() {
            Ok(conn) => conn,
            Err(e) => return fail_all(&e.to_string()),
        };
        // A thread that held the connection meanwhile may have committed these appends already.
        if mine.iter().all(|q| has_outcome(q)) {
            return;
        }
        let group = match self.queue.lock() {
            Ok(mut queue) => std::mem::take(&mut *queue),
            Err(_) => return fail_all("sqlite append queue lock poisoned"),
        };
        let outcomes = match commit_group(&mut conn, &group) {
            Ok(outcomes) => outcomes,
            Err(e) => {
                let message = e.to_string();
                (0..group.len())
                    .map(|_| Err(StoreError::Backend(message.clone())))
                    .collect()
            }
        };
        let committed = outcomes.iter().any(Result::is_ok);
        // Every outcome is set before the connection is let go: a thread of the group that takes
        // it next finds its own.
        for (queued, outcome) in group.iter().zip(outcomes) {
            *queued
                .outcome
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(outcome);
        }
        drop(conn);
        if committed {
            if let Some(checkpointer) = &self.checkpointer {
                checkpointer.notify();
            }
        }
    }
}

/// True once a queued append's group committed (or failed).
fn has_outcome(queued: &Queued) -> bool {
    queued
        .outcome
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .is_some()
}

/// The outcome of a queued append, once its group committed.
fn take_outcome(queued: &Queued) -> Option<Result<u64, StoreError>> {
    queued
        .outcome
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
}

/// Commits a group of queued appends in one transaction: each is checked against its session's
/// version as the earlier ones in the group left it, a stale one is a conflict and writes nothing.
/// The per-append outcomes; an error when the transaction failed (nothing of the group written).
fn commit_group(
    conn: &mut Connection,
    group: &[Arc<Queued>],
) -> Result<Vec<Result<u64, StoreError>>, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(backend)?;
    let mut outcomes = Vec::with_capacity(group.len());
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO records (sid, seq, kind, item_id, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(backend)?;
        let mut update = tx
            .prepare_cached("UPDATE sessions SET version = ?2 WHERE sid = ?1")
            .map_err(backend)?;
        for queued in group {
            let session = queued.session.as_str();
            let (sid, actual) = match sid_version_of(&tx, session) {
                Ok(v) => v,
                Err(e @ StoreError::UnknownSession(_)) => {
                    outcomes.push(Err(e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            if actual != queued.expected {
                outcomes.push(Err(StoreError::Conflict {
                    session: session.to_owned(),
                    expected: queued.expected,
                    actual,
                }));
                continue;
            }
            let mut seq = queued.expected;
            for (kind, item_id, doc) in &queued.rows {
                seq += 1;
                insert
                    .execute(params![sid, to_i64(seq), kind, item_id, doc])
                    .map_err(backend)?;
            }
            update.execute(params![sid, to_i64(seq)]).map_err(backend)?;
            outcomes.push(Ok(seq));
        }
    }
    tx.commit().map_err(backend)?;
    Ok(outcomes)
}

/// Decodes `(seq, doc)` rows of one session's log.
fn decode_rows(
    session: &str,
    rows: impl Iterator<Item = rusqlite::Result<(i64, String)>>,
) -> Result<Vec<Stored>, StoreError> {
    rows.map(|row| {
        let (seq, doc) = row.map_err(backend)?;
        decode(session, u64::try_from(seq).unwrap_or(0), &doc)
    })
    .collect()
}
