//! Benchmark: what the SQLite store writes per append, page by page. Run with
//! `cargo bench -p compact-session --bench store_pages`.
//!
//! The appends are those `CompactManager::preflight` makes (recorded through a store that
//! forwards to a `MemoryStore`), replayed into SQLite schemas side by side:
//! - `mixed`: [`SESSIONS`] sessions each holding a 200k-token history (the preflight benchmark's
//!   shape), then one new 1k-token message in each session in turn;
//! - `agent`: one session of a ~5k-token history growing by one message a call;
//! - `fresh`: the first append of a new session (a ~5k-token history of ~50 items).
//!
//! After every timed append a second connection checkpoints the write-ahead log (so the next
//! append starts it again from its first frame) after reading the page number of every frame the
//! append wrote; the `dbstat` table then says which b-tree each page belongs to. Printed per
//! variant: WAL frames per append (and per b-tree), and the calling thread's CPU time per append
//! (p50, p99), the append only (not the checkpoint).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{counter, history_json, thread_cpu, with_message};
use compact_core::model::Format;
use compact_core::policy::Policy;
use compact_formats::wire::decode;
use compact_session::record::{Record, Stored};
use compact_session::{CompactManager, MemoryStore, SessionConfig, Store, StoreError};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Sessions of the `mixed` shape.
const SESSIONS: usize = 200;
/// Timed appends of the `agent` shape.
const TURNS: usize = 200;

/// One recorded append: session, expected version, rows (kind, item id, document).
type Row = (&'static str, Option<String>, String);

#[derive(Clone)]
struct Append {
    rows: Vec<Row>,
}

/// A store that records every append and forwards to a memory store.
struct Recorder {
    inner: MemoryStore,
    appends: Mutex<Vec<Append>>,
}

impl Store for Recorder {
    fn create(&self, session: &str) -> Result<bool, StoreError> {
        self.inner.create(session)
    }
    fn version(&self, session: &str) -> Result<u64, StoreError> {
        self.inner.version(session)
    }
    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<Record>,
    ) -> Result<u64, StoreError> {
        let rows = records
            .iter()
            .map(|r| (r.kind(), r.item_id().map(str::to_owned), r.to_json_string()))
            .collect();
        self.appends.lock().unwrap().push(Append { rows });
        self.inner.append(session, expected, records)
    }
    fn read(&self, session: &str, after: u64) -> Result<Vec<Stored>, StoreError> {
        self.inner.read(session, after)
    }
    fn find_items(&self, session: &str, item_id: &str) -> Result<Vec<Stored>, StoreError> {
        self.inner.find_items(session, item_id)
    }
    fn sessions(&self) -> Result<Vec<String>, StoreError> {
        self.inner.sessions()
    }
    fn delete_session(&self, session: &str) -> Result<bool, StoreError> {
        self.inner.delete_session(session)
    }
}

/// The appends of: one session's history, then `turns` calls each adding a message of `tokens`.
fn record(history: &Value, turns: usize, tokens: usize) -> Vec<Append> {
    let recorder = Arc::new(Recorder {
        inner: MemoryStore::new(),
        appends: Mutex::new(Vec::new()),
    });
    let config = SessionConfig::new(Policy::for_window(1_000_000), counter());
    let manager = CompactManager::open(config, recorder.clone()).unwrap();
    let mut request = history.clone();
    manager
        .preflight("s", &decode(Format::OpenAiChat, &request).unwrap())
        .unwrap();
    for i in 0..turns {
        request = with_message(&request, i, tokens);
        manager
            .preflight("s", &decode(Format::OpenAiChat, &request).unwrap())
            .unwrap();
    }
    let appends = recorder.appends.lock().unwrap().clone();
    appends
}

/// A schema under test: its DDL, and how an append is written.
#[derive(Clone, Copy, PartialEq)]
enum Variant {
    /// Schema 1 (before migration 2): WITHOUT ROWID records keyed (session text, seq).
    Schema1,
    /// Schema 2 (the store's since migration 2): records in a rowid table, sessions by integer
    /// key, (sid, seq) unique, items indexed.
    Rowid,
    /// `Rowid` with the records' rowid itself `sid << 32 | seq` (no second index).
    RowidPacked,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::Schema1 => "schema 1 (WITHOUT ROWID, text key)",
            Variant::Rowid => "schema 2 (rowid table + (sid, seq) index)",
            Variant::RowidPacked => "rowid = sid<<32|seq",
        }
    }

    fn ddl(self) -> &'static str {
        match self {
            Variant::Schema1 => {
                "CREATE TABLE sessions (id TEXT PRIMARY KEY, version INTEGER NOT NULL);
                 CREATE TABLE records (session TEXT NOT NULL REFERENCES sessions(id), seq INTEGER NOT NULL,
                     kind TEXT NOT NULL, item_id TEXT, doc TEXT NOT NULL, PRIMARY KEY (session, seq)) WITHOUT ROWID;
                 CREATE INDEX records_by_item ON records(session, item_id) WHERE item_id IS NOT NULL;"
            }
            Variant::Rowid => {
                "CREATE TABLE sessions (sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, version INTEGER NOT NULL);
                 CREATE TABLE records (sid INTEGER NOT NULL, seq INTEGER NOT NULL,
                     kind TEXT NOT NULL, item_id TEXT, doc TEXT NOT NULL);
                 CREATE UNIQUE INDEX records_by_seq ON records(sid, seq);
                 CREATE INDEX records_by_item ON records(sid, item_id) WHERE item_id IS NOT NULL;"
            }
            Variant::RowidPacked => {
                "CREATE TABLE sessions (sid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, version INTEGER NOT NULL);
                 CREATE TABLE records (key INTEGER PRIMARY KEY,
                     kind TEXT NOT NULL, item_id TEXT, doc TEXT NOT NULL);
                 CREATE INDEX records_by_item ON records(item_id) WHERE item_id IS NOT NULL;"
            }
        }
    }

    /// Appends `rows` to `session` in one transaction (checking its version as the store does).
    fn append(self, conn: &mut Connection, session: &str, rows: &[Row]) {
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .unwrap();
        match self {
            Variant::Schema1 => {
                let v: Option<i64> = tx
                    .prepare_cached("SELECT version FROM sessions WHERE id = ?1")
                    .unwrap()
                    .query_row(params![session], |r| r.get(0))
                    .optional()
                    .unwrap();
                let mut seq = match v {
                    Some(v) => v,
                    None => {
                        tx.prepare_cached("INSERT INTO sessions (id, version) VALUES (?1, 0)")
                            .unwrap()
                            .execute(params![session])
                            .unwrap();
                        0
                    }
                };
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO records (session, seq, kind, item_id, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
                    )
                    .unwrap();
                for (kind, item, doc) in rows {
                    seq += 1;
                    insert
                        .execute(params![session, seq, kind, item, doc])
                        .unwrap();
                }
                tx.prepare_cached("UPDATE sessions SET version = ?2 WHERE id = ?1")
                    .unwrap()
                    .execute(params![session, seq])
                    .unwrap();
            }
            Variant::Rowid | Variant::RowidPacked => {
                let found: Option<(i64, i64)> = tx
                    .prepare_cached("SELECT sid, version FROM sessions WHERE id = ?1")
                    .unwrap()
                    .query_row(params![session], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()
                    .unwrap();
                let (sid, mut seq) = match found {
                    Some(f) => f,
                    None => {
                        tx.prepare_cached("INSERT INTO sessions (id, version) VALUES (?1, 0)")
                            .unwrap()
                            .execute(params![session])
                            .unwrap();
                        (tx.last_insert_rowid(), 0)
                    }
                };
                if self == Variant::Rowid {
                    let mut insert = tx
                        .prepare_cached(
                            "INSERT INTO records (sid, seq, kind, item_id, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
                        )
                        .unwrap();
                    for (kind, item, doc) in rows {
                        seq += 1;
                        insert.execute(params![sid, seq, kind, item, doc]).unwrap();
                    }
                } else {
                    let mut insert = tx
                        .prepare_cached(
                            "INSERT INTO records (key, kind, item_id, doc) VALUES (?1, ?2, ?3, ?4)",
                        )
                        .unwrap();
                    for (kind, item, doc) in rows {
                        seq += 1;
                        insert
                            .execute(params![(sid << 32) | seq, kind, item, doc])
                            .unwrap();
                    }
                }
                tx.prepare_cached("UPDATE sessions SET version = ?2 WHERE sid = ?1")
                    .unwrap()
                    .execute(params![sid, seq])
                    .unwrap();
            }
        }
        tx.commit().unwrap();
    }
}

/// Options beside the schema.
#[derive(Clone, Copy)]
struct Options {
    page_size: u32,
    foreign_keys: bool,
}

struct Db {
    conn: Connection,
    side: Connection,
    wal: std::path::PathBuf,
    page_size: usize,
    variant: Variant,
    /// Page numbers written per timed append.
    written: Vec<Vec<u32>>,
    cpu: Vec<Duration>,
}

impl Db {
    fn open(dir: &Path, name: &str, variant: Variant, options: Options) -> Db {
        let path = dir.join(format!("{name}.db"));
        let _ = std::fs::remove_file(&path);
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "page_size", options.page_size)
            .unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        conn.pragma_update(
            None,
            "foreign_keys",
            if options.foreign_keys { "ON" } else { "OFF" },
        )
        .unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        conn.execute_batch(variant.ddl()).unwrap();
        let side = Connection::open(&path).unwrap();
        let mut wal = path.into_os_string();
        wal.push("-wal");
        Db {
            conn,
            side,
            wal: wal.into(),
            page_size: options.page_size as usize,
            variant,
            written: Vec::new(),
            cpu: Vec::new(),
        }
    }

    /// Checkpoints; returns the page numbers of the frames the WAL held.
    fn checkpoint(&self) -> Vec<u32> {
        let frames: i64 = self
            .side
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| r.get(1))
            .unwrap();
        let bytes = std::fs::read(&self.wal).unwrap();
        let frame = 24 + self.page_size;
        (0..usize::try_from(frames).unwrap())
            .map(|i| {
                let at = 32 + i * frame;
                u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap())
            })
            .collect()
    }

    fn load(&mut self, session: &str, rows: &[Row]) {
        self.variant.append(&mut self.conn, session, rows);
        self.checkpoint();
    }

    fn timed(&mut self, session: &str, rows: &[Row]) {
        let before = thread_cpu().unwrap_or_default();
        self.variant.append(&mut self.conn, session, rows);
        self.cpu
            .push(thread_cpu().unwrap_or_default().saturating_sub(before));
        let pages = self.checkpoint();
        self.written.push(pages);
    }

    fn report(&self, shape: &str, label: &str) {
        let mut owner: BTreeMap<u32, String> = BTreeMap::new();
        let mut stmt = self
            .side
            .prepare("SELECT pageno, name, pagetype FROM dbstat")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, u32>(0)?,
                    format!("{}:{}", r.get::<_, String>(1)?, r.get::<_, String>(2)?),
                ))
            })
            .unwrap();
        for row in rows {
            let (page, name) = row.unwrap();
            owner.insert(page, name);
        }
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        for pages in &self.written {
            for p in pages {
                let name = if *p == 1 {
                    "page 1".to_owned()
                } else {
                    owner
                        .get(p)
                        .cloned()
                        .unwrap_or_else(|| "free/other".to_owned())
                };
                *by.entry(name).or_default() += 1;
            }
        }
        let n = self.written.len() as f64;
        let total: usize = self.written.iter().map(Vec::len).sum();
        let mut cpu = self.cpu.clone();
        cpu.sort();
        let at = |p: f64| cpu[((cpu.len() as f64 * p).ceil() as usize).min(cpu.len()) - 1];
        println!(
            "{shape:<6} {label:<44} frames/append {:>6.2}   cpu p50 {:>9.1?} p99 {:>9.1?}",
            total as f64 / n,
            at(0.5),
            at(0.99)
        );
        let parts: Vec<String> = by
            .iter()
            .map(|(k, v)| format!("{k} {:.2}", *v as f64 / n))
            .collect();
        println!("         {}", parts.join(", "));
    }
}

fn session_id(i: usize) -> String {
    // Proxy-like ids: 32 hex characters.
    format!(
        "{:032x}",
        (i as u128).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835)
    )
}

fn main() {
    let dir = std::env::temp_dir().join(format!("compact-store-pages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));

    let big = record(&history_json(200_000, 120), 1, 1_000);
    let small = record(&history_json(5_000, 6), TURNS, 1_000);
    let size = |rows: &[Row]| rows.iter().map(|r| r.2.len()).sum::<usize>();
    println!(
        "mixed: history append {} rows {} B, turn append {} rows {} B; fresh: {} rows {} B; agent turn: {} rows {} B",
        big[0].rows.len(),
        size(&big[0].rows),
        big[1].rows.len(),
        size(&big[1].rows),
        small[0].rows.len(),
        size(&small[0].rows),
        small[1].rows.len(),
        size(&small[1].rows),
    );

    let variants = [Variant::Schema1, Variant::Rowid, Variant::RowidPacked];
    let mut options = vec![];
    for v in variants {
        options.push((
            v,
            Options {
                page_size: 4096,
                foreign_keys: true,
            },
            "4k fk",
        ));
        options.push((
            v,
            Options {
                page_size: 4096,
                foreign_keys: false,
            },
            "4k",
        ));
    }
    options.push((
        Variant::Rowid,
        Options {
            page_size: 8192,
            foreign_keys: false,
        },
        "8k",
    ));
    options.push((
        Variant::Schema1,
        Options {
            page_size: 8192,
            foreign_keys: true,
        },
        "8k fk",
    ));
    for (variant, opts, tag) in options {
        let label = format!("{} [{tag}]", variant.name());
        if only.as_deref().is_some_and(|o| !label.contains(o)) {
            continue;
        }
        // mixed
        let mut db = Db::open(&dir, "mixed", variant, opts);
        for i in 0..SESSIONS {
            db.load(&session_id(i), &big[0].rows);
        }
        for i in 0..SESSIONS {
            db.timed(&session_id(i), &big[1].rows);
        }
        db.report("mixed", &label);
        drop(db);
        // fresh and agent
        let mut db = Db::open(&dir, "agent", variant, opts);
        for i in 0..20 {
            db.load(&session_id(1000 + i), &small[0].rows);
        }
        for i in 0..SESSIONS {
            db.timed(&session_id(i), &small[0].rows);
        }
        db.report("fresh", &label);
        db.written.clear();
        db.cpu.clear();
        for t in &small[1..] {
            db.timed(&session_id(7), &t.rows);
        }
        db.report("agent", &label);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
