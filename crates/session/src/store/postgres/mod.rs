//! [`PostgresStore`]: session logs in a PostgreSQL database, shared by several processes or
//! machines.
//!
//! # Concurrency
//! A session's row in `compact_sessions` holds its version. An append is one transaction that first
//! moves the version on with `UPDATE ... SET version = new WHERE id = $1 AND version = expected`:
//! the update takes the row's lock, so a second writer on the same session waits for the first to
//! commit or roll back, then re-evaluates its condition against the committed version, finds it
//! moved on, updates nothing and gets [`StoreError::Conflict`] having written nothing. The records
//! are inserted in the same transaction under the primary key `(session, seq)`, which would refuse
//! a duplicated sequence number even if the version check were bypassed. So two processes on one
//! session never lose, duplicate or interleave records: each append is all of one writer's records
//! or none, numbered right after the version it extended.
//!
//! A client killed mid-append leaves no trace: its connection drops, the server rolls the open
//! transaction back.
//!
//! # Connections
//! A small bounded pool ([`pool`]): connections opened lazily up to `pool_max_size` (default
//! [`options::DEFAULT_POOL_MAX_SIZE`], 8), each call one connection for one transaction, a connection the
//! server closed replaced, and every connection closed on a thread of its own (so dropping the
//! store inside an async runtime is safe). TLS follows libpq's `sslmode` ([`tls`]); the options
//! the postgres crate does not read are taken out of the URL first ([`options`]).
//!
//! # Schema
//! Versioned in the table `compact_schema` (one row per applied migration). [`MIGRATIONS`] are
//! applied at connect, all in one transaction under an advisory lock (two processes connecting to
//! a new database at once apply each migration once); a database migrated by a newer program is
//! refused ([`StoreError::SchemaTooNew`]). Tables are created unqualified, so they land in the
//! connection's `search_path` (the URL's `options=-c search_path=...` picks a schema).

mod options;
mod pool;
mod tls;

use super::{SessionSummary, Store, StoreError};
use crate::record::{Record, Stored};
use pool::{Connector, Pool};
use postgres::Client;
use std::time::Duration;

/// Schema migrations; migration `i` (from 0) brings the database to version `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: sessions with their version, and the records of every session's log (the document is
    // kept as text, byte for byte as written: `jsonb` would reorder keys).
    "CREATE TABLE compact_sessions (
         id TEXT PRIMARY KEY,
         version BIGINT NOT NULL CHECK (version >= 0)
     );
     CREATE TABLE compact_records (
         session TEXT NOT NULL REFERENCES compact_sessions(id),
         seq BIGINT NOT NULL CHECK (seq >= 1),
         kind TEXT NOT NULL,
         item_id TEXT,
         doc TEXT NOT NULL,
         PRIMARY KEY (session, seq)
     );
     CREATE INDEX compact_records_by_item ON compact_records (session, item_id)
         WHERE item_id IS NOT NULL;",
];

/// Key of the advisory lock that serialises migrations (any fixed number; "CMPCTSCH" in ASCII).
const MIGRATION_LOCK: i64 = 0x434d_5043_5453_4348;

/// How long connecting may take before the store is reported unreachable, when the URL does not
/// say (`connect_timeout`): long enough for a loaded server, short enough that a wrong address
/// fails a call rather than hanging it.
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Session logs in PostgreSQL.
pub struct PostgresStore {
    pool: Pool,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config may hold a password: name the server only.
        let config = self.pool.config();
        f.debug_struct("PostgresStore")
            .field("hosts", &config.get_hosts())
            .field("dbname", &config.get_dbname())
            .field("sslmode", &self.pool.sslmode().as_str())
            .field("pool_max_size", &self.pool.max())
            .finish_non_exhaustive()
    }
}

fn backend(e: postgres::Error) -> StoreError {
    StoreError::Backend(format!("postgres: {}", describe(&e)))
}

/// An error with its causes: the postgres crate's own message is only its kind ("db error",
/// "error connecting to server"); the server's message, the I/O or TLS failure are its source.
/// None of them repeats the password.
fn describe(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db?...`, or the
    /// key=value form), with TLS as its `sslmode` says (libpq's five modes; `sslrootcert` names
    /// the authorities to trust) and a pool of at most `pool_max_size` connections, and brings its
    /// schema up to date. An unreachable server, bad credentials, a failed TLS handshake or a
    /// malformed URL give [`StoreError::Backend`], never repeating the password.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let options::Options {
            mut config,
            sslmode,
            root_certs,
            pool_max_size,
        } = options::parse(url)?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        let tls = tls::connector(sslmode, root_certs.as_ref())?;
        let pool = Pool::new(
            Connector {
                config,
                sslmode,
                tls,
            },
            pool_max_size,
        );
        // The first connection is opened now: a wrong address or credentials fail here, and the
        // schema is brought up to date once.
        migrate(pool.take()?.client()?)?;
        Ok(PostgresStore { pool })
    }

    /// The schema version of the database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.pool.run(schema_version)
    }

    /// The most connections the store opens (`pool_max_size`).
    pub fn pool_max_size(&self) -> usize {
        self.pool.max()
    }

    /// The connections open now, idle or in use (at most [`PostgresStore::pool_max_size`]).
    pub fn open_connections(&self) -> usize {
        self.pool.open()
    }

    /// The records `sql` selects (`seq, doc`) of `session`, read in one repeatable-read snapshot
    /// with the check that the session exists.
    fn read_rows(
        &self,
        session: &str,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<Stored>, StoreError> {
        self.pool.run(|client| {
            let mut tx = client
                .build_transaction()
                .isolation_level(postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .map_err(backend)?;
            version_of(&mut tx, session)?;
            let rows = tx.query(sql, params).map_err(backend)?;
            tx.commit().map_err(backend)?;
            decode_rows(session, &rows)
        })
    }
}

fn schema_version(client: &mut impl postgres::GenericClient) -> Result<i64, StoreError> {
    let row = client
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM compact_schema",
            &[],
        )
        .map_err(backend)?;
    Ok(row.get(0))
}

fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let supported = MIGRATIONS.len() as i64;
    let mut tx = client.transaction().map_err(backend)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(backend)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS compact_schema (
             version BIGINT PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )
    .map_err(backend)?;
    let found = schema_version(&mut tx)?;
    if found > supported {
        return Err(StoreError::SchemaTooNew { found, supported });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found.max(0) as usize) {
        tx.batch_execute(sql).map_err(backend)?;
        tx.execute(
            "INSERT INTO compact_schema (version) VALUES ($1)",
            &[&(i as i64 + 1)],
        )
        .map_err(backend)?;
    }
    tx.commit().map_err(backend)
}

fn version_of(client: &mut impl postgres::GenericClient, session: &str) -> Result<u64, StoreError> {
    client
        .query_opt(
            "SELECT version FROM compact_sessions WHERE id = $1",
            &[&session],
        )
        .map_err(backend)?
        .map(|row| to_u64(row.get(0)))
        .ok_or_else(|| StoreError::UnknownSession(session.to_owned()))
}

fn decode_rows(session: &str, rows: &[postgres::Row]) -> Result<Vec<Stored>, StoreError> {
    rows.iter()
        .map(|row| {
            let seq: i64 = row.get(0);
            let doc: &str = row.get(1);
            super::decode(session, to_u64(seq), doc)
        })
        .collect()
}

impl Store for PostgresStore {
    fn create(&self, session: &str) -> Result<bool, StoreError> {
        self.pool.run(|client| {
            let n = client
                .execute(
                    "INSERT INTO compact_sessions (id, version) VALUES ($1, 0) ON CONFLICT (id) DO NOTHING",
                    &[&session],
                )
                .map_err(backend)?;
            Ok(n == 1)
        })
    }

    fn version(&self, session: &str) -> Result<u64, StoreError> {
        self.pool.run(|client| version_of(client, session))
    }

    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<u64, StoreError> {
        let new = expected + records.len() as u64;
        let mut seqs = Vec::with_capacity(records.len());
        let mut kinds = Vec::with_capacity(records.len());
        let mut item_ids = Vec::with_capacity(records.len());
        let mut docs = Vec::with_capacity(records.len());
        for (i, record) in records.iter().enumerate() {
            seqs.push(to_i64(expected + i as u64 + 1));
            kinds.push(record.kind());
            item_ids.push(record.item_id());
            docs.push(record.to_json_string());
        }
        self.pool.run(|client| {
            let mut tx = client.transaction().map_err(backend)?;
            let moved = tx
                .execute(
                    "UPDATE compact_sessions SET version = $3 WHERE id = $1 AND version = $2",
                    &[&session, &to_i64(expected), &to_i64(new)],
                )
                .map_err(backend)?;
            if moved != 1 {
                // Nothing was written; the transaction rolls back when dropped.
                let actual = version_of(&mut tx, session)?;
                return Err(StoreError::Conflict {
                    session: session.to_owned(),
                    expected,
                    actual,
                });
            }
            if !records.is_empty() {
                // One statement for the whole append: one round trip whatever its size.
                tx.execute(
                    "INSERT INTO compact_records (session, seq, kind, item_id, doc)
                     SELECT $1, * FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::TEXT[])",
                    &[&session, &seqs, &kinds, &item_ids, &docs],
                )
                .map_err(backend)?;
            }
            tx.commit().map_err(backend)?;
            Ok(new)
        })
    }

    fn read(&self, session: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        self.read_rows(
            session,
            "SELECT seq, doc FROM compact_records WHERE session = $1 AND seq > $2 ORDER BY seq",
            &[&session, &to_i64(after)],
        )
    }

    fn read_kind(
        &self,
        session: &str,
        after: u64,
        kind: &str,
        limit: usize,
    ) -> Result<Vec<Stored>, StoreError> {
        self.read_rows(
            session,
            "SELECT seq, doc FROM compact_records WHERE session = $1 AND seq > $2 AND kind = $3 ORDER BY seq LIMIT $4",
            &[&session, &to_i64(after), &kind, &to_i64(u64::try_from(limit).unwrap_or(u64::MAX))],
        )
    }

    fn seqs_of_kind(&self, session: &str, kind: &str) -> Result<Vec<u64>, StoreError> {
        self.pool.run(|client| {
            version_of(client, session)?;
            let rows = client
                .query(
                    "SELECT seq FROM compact_records WHERE session = $1 AND kind = $2 ORDER BY seq",
                    &[&session, &kind],
                )
                .map_err(backend)?;
            rows.iter()
                .map(|r| {
                    r.try_get::<_, i64>(0)
                        .map(|seq| u64::try_from(seq).unwrap_or(0))
                        .map_err(backend)
                })
                .collect()
        })
    }

    fn find_items(&self, session: &str, item_id: &str) -> Result<Vec<Stored>, StoreError> {
        self.pool.run(|client| {
            version_of(client, session)?;
            let rows = client
                .query(
                    "SELECT seq, doc FROM compact_records WHERE session = $1 AND item_id = $2 ORDER BY seq",
                    &[&session, &item_id],
                )
                .map_err(backend)?;
            decode_rows(session, &rows)
        })
    }

    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        self.pool.run(|client| {
            let rows = client
                .query(
                    "SELECT id FROM compact_sessions ORDER BY id COLLATE \"C\"",
                    &[],
                )
                .map_err(backend)?;
            Ok(rows.iter().map(|r| r.get(0)).collect())
        })
    }

    fn list_sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let rows = self.pool.run(|client| {
            client
                .query(
                    "SELECT s.id, s.version,
                            (SELECT r.doc FROM compact_records r
                              WHERE r.session = s.id AND r.kind = 'event'
                              ORDER BY r.seq DESC LIMIT 1)
                       FROM compact_sessions s ORDER BY s.id COLLATE \"C\"",
                    &[],
                )
                .map_err(backend)
        })?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.get(0);
            let version: i64 = row.get(1);
            let doc: Option<String> = row.get(2);
            let last_event_ms = match doc {
                Some(doc) => match super::decode(&id, 0, &doc)?.record {
                    Record::Event(e) => Some(e.at_ms),
                    _ => None,
                },
                None => None,
            };
            out.push(SessionSummary {
                id,
                version: to_u64(version),
                last_event_ms,
            });
        }
        Ok(out)
    }

    fn delete_session(&self, session: &str) -> Result<bool, StoreError> {
        self.pool.run(|client| {
            let mut tx = client.transaction().map_err(backend)?;
            // Lock the session row first: a concurrent append (which moves the row's version)
            // waits, then finds no session; the records go before the row they reference.
            tx.execute(
                "SELECT id FROM compact_sessions WHERE id = $1 FOR UPDATE",
                &[&session],
            )
            .map_err(backend)?;
            tx.execute(
                "DELETE FROM compact_records WHERE session = $1",
                &[&session],
            )
            .map_err(backend)?;
            let n = tx
                .execute("DELETE FROM compact_sessions WHERE id = $1", &[&session])
                .map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok(n == 1)
        })
    }
}
