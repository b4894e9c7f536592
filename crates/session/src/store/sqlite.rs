//! [`SqliteStore`]: session logs in one SQLite file (the embedded default).
//!
//! The database runs in WAL mode with `synchronous = NORMAL`: a commit is in the write-ahead log
//! before `append` returns, so a process killed at any point (SIGKILL included) leaves every
//! committed append readable and no partial one (an append is one transaction). Only a crash of
//! the machine itself can lose the last appends before a checkpoint; `synchronous = FULL` would
//! close that at one fsync per append.
//!
//! The schema is versioned with `PRAGMA user_version`; [`MIGRATIONS`] are applied in order at open,
//! each in its own transaction, and a database from a newer program is refused
//! ([`StoreError::SchemaTooNew`]).

use super::{Store, StoreError};
use crate::record::{Record, Stored};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

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
];

/// How long a writer waits for another connection's lock before reporting the store busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Session logs in one SQLite file.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

fn backend(e: rusqlite::Error) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl SqliteStore {
    /// Opens (creating when absent) the database at `path` and brings its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let conn = Connection::open(path).map_err(backend)?;
        Self::setup(conn)
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

fn version_of(conn: &Connection, session: &str) -> Result<u64, StoreError> {
    conn.query_row(
        "SELECT version FROM sessions WHERE id = ?1",
        params![session],
        |r| r.get::<_, i64>(0),
    )
    .optional()
    .map_err(backend)?
    .map(|v| u64::try_from(v).unwrap_or(0))
    .ok_or_else(|| StoreError::UnknownSession(session.to_owned()))
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Store for SqliteStore {
    fn create(&self, session: &str) -> Result<bool, StoreError> {
        let conn = self.lock()?;
        let n = conn
            .execute(
                "INSERT OR IGNORE INTO sessions (id, version) VALUES (?1, 0)",
                params![session],
            )
            .map_err(backend)?;
        Ok(n == 1)
    }

    fn version(&self, session: &str) -> Result<u64, StoreError> {
        let conn = self.lock()?;
        version_of(&conn, session)
    }

    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<u64, StoreError> {
        let mut conn = self.lock()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let actual = version_of(&tx, session)?;
        if actual != expected {
            return Err(StoreError::Conflict {
                session: session.to_owned(),
                expected,
                actual,
            });
        }
        let mut seq = expected;
        {
            let mut insert = tx
                .prepare_cached(
                    "INSERT INTO records (session, seq, kind, item_id, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(backend)?;
            for record in &records {
                seq += 1;
                let doc = record.to_json().to_string();
                insert
                    .execute(params![
                        session,
                        to_i64(seq),
                        record.kind(),
                        record.item_id(),
                        doc
                    ])
                    .map_err(backend)?;
            }
        }
        tx.execute(
            "UPDATE sessions SET version = ?2 WHERE id = ?1",
            params![session, to_i64(seq)],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(seq)
    }

    fn read(&self, session: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        let conn = self.lock()?;
        version_of(&conn, session)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, doc FROM records WHERE session = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![session, to_i64(after)], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, doc) = row.map_err(backend)?;
            out.push(super::decode(
                session,
                u64::try_from(seq).unwrap_or(0),
                &doc,
            )?);
        }
        Ok(out)
    }

    fn find_items(&self, session: &str, item_id: &str) -> Result<Vec<Stored>, StoreError> {
        let conn = self.lock()?;
        version_of(&conn, session)?;
        let mut stmt = conn
            .prepare_cached(
                "SELECT seq, doc FROM records WHERE session = ?1 AND item_id = ?2 ORDER BY seq",
            )
            .map_err(backend)?;
        let rows = stmt
            .query_map(params![session, item_id], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(backend)?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, doc) = row.map_err(backend)?;
            out.push(super::decode(
                session,
                u64::try_from(seq).unwrap_or(0),
                &doc,
            )?);
        }
        Ok(out)
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
}
