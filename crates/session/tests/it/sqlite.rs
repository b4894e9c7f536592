//! The SQLite store: survives a reopen and a killed process; refuses stale appends.

use crate::common::{manager_with, Agent};
use compact_core::model::Format;
use compact_session::record::Record;
use compact_session::{Event, EventKind, MemoryStore, SqliteStore, Store, StoreError};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

fn temp_db(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("compact-session-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("sessions.db")
}

#[test]
fn sqlite_log_survives_reopen() {
    let path = temp_db("reopen");
    let mut agent = Agent::new(4, Format::Anthropic);
    let (last, reference, records) = {
        let store = Arc::new(SqliteStore::open(&path).unwrap());
        assert_eq!(store.schema_version().unwrap(), 2);
        let manager = manager_with(128_000, store.clone());
        let mut last = None;
        for _ in 0..20 {
            agent.step();
            last = Some(manager.preflight("s", &agent.history).unwrap());
        }
        let cut = manager
            .truncate_tool_output(
                "s",
                "c9",
                &crate::common::output(&mut crate::common::Rng::new(3), "big.log", 3_000),
            )
            .unwrap();
        let reference = store
            .read("s", 0)
            .unwrap()
            .iter()
            .find_map(|s| match &s.record {
                Record::Event(e) if e.kind == EventKind::Truncated => e
                    .get("reference")
                    .and_then(|r| r.as_str())
                    .map(str::to_owned),
                _ => None,
            });
        assert!(reference.as_deref().is_some_and(|r| cut.contains(r)));
        (last.unwrap(), reference, store.read("s", 0).unwrap())
    };
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    assert_eq!(
        store.read("s", 0).unwrap(),
        records,
        "every record reads back equal"
    );
    assert_eq!(store.sessions().unwrap(), vec!["s".to_owned()]);
    let manager = manager_with(128_000, store);
    let reference = reference.unwrap();
    let original = manager.recall("s", &reference).unwrap();
    assert_eq!(original.as_tool_result().unwrap().call_id, "c9");
    // The reopened manager recognises the history and builds on the view it sent.
    agent.step();
    let next = manager.preflight("s", &agent.history).unwrap();
    assert!(!next.report.branched);
    assert!(next.report.compaction.is_none());
    assert_eq!(next.report.reused_items, last.conversation.len());
    assert_eq!(
        next.conversation.items[..last.conversation.len()],
        last.conversation.items[..]
    );
}

#[test]
fn stale_appends_are_refused_and_write_nothing() {
    let path = temp_db("conflict");
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap();
    let memory = MemoryStore::new();
    let event = || Record::Event(Event::new(EventKind::Sent, json!({"n": 1})));
    for (first, second) in [(&a as &dyn Store, &b as &dyn Store), (&memory, &memory)] {
        first.create("s").unwrap();
        assert!(!second.create("s").unwrap(), "created once");
        let v = first.version("s").unwrap();
        assert_eq!(first.append("s", v, vec![event(), event()]).unwrap(), v + 2);
        match second.append("s", v, vec![event()]) {
            Err(StoreError::Conflict {
                expected, actual, ..
            }) => {
                assert_eq!((expected, actual), (v, v + 2));
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert_eq!(second.version("s").unwrap(), v + 2);
        assert_eq!(second.read("s", 0).unwrap().len() as u64, v + 2);
    }
}

/// Appends to several sessions in one call (one transaction on SQLite; one after another in
/// memory): each is checked against its own version, and a stale or unknown one is refused
/// without writing anything of it or stopping the others.
#[test]
fn append_many_writes_each_session_or_refuses_it_alone() {
    let sqlite = SqliteStore::open(temp_db("many")).unwrap();
    let memory = MemoryStore::new();
    let event = |n: u64| Record::Event(Event::new(EventKind::Sent, json!({"n": n})));
    for store in [&sqlite as &dyn Store, &memory] {
        for s in ["a", "b", "c"] {
            store.create(s).unwrap();
        }
        store.append("b", 0, vec![event(0)]).unwrap();
        let outcomes = store.append_many(vec![
            ("a".to_owned(), 0, vec![event(1), event(2)]),
            ("b".to_owned(), 0, vec![event(3)]),
            ("nobody".to_owned(), 0, vec![event(4)]),
            ("c".to_owned(), 0, vec![event(5)]),
        ]);
        assert_eq!(outcomes.len(), 4);
        assert_eq!(outcomes[0].as_ref().ok(), Some(&2));
        match &outcomes[1] {
            Err(StoreError::Conflict {
                expected, actual, ..
            }) => assert_eq!((*expected, *actual), (0, 1)),
            other => panic!("expected a conflict, got {other:?}"),
        }
        assert!(
            matches!(outcomes[2], Err(StoreError::UnknownSession(_))),
            "{:?}",
            outcomes[2]
        );
        assert_eq!(outcomes[3].as_ref().ok(), Some(&1));
        let numbers = |s: &str| -> Vec<u64> {
            store
                .read(s, 0)
                .unwrap()
                .iter()
                .map(|r| match &r.record {
                    Record::Event(e) => e.get("n").and_then(|n| n.as_u64()).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(numbers("a"), [1, 2]);
        assert_eq!(numbers("b"), [0]);
        assert_eq!(numbers("c"), [5]);
        assert!(store.append_many(Vec::new()).is_empty());
    }
}

/// Run by [`sqlite_survives_a_killed_writer`] as a child process: writes until killed. In an
/// ordinary test run (without the variable) it returns at once.
#[test]
fn zz_child_writer_for_the_sigkill_test() {
    let Ok(path) = std::env::var("COMPACT_SESSION_SIGKILL_DB") else {
        return;
    };
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let manager = manager_with(16_000, store);
    let mut agents: Vec<Agent> = (0..3)
        .map(|i| Agent::new(100 + i, Format::OpenAiChat))
        .collect();
    loop {
        for (i, agent) in agents.iter_mut().enumerate() {
            agent.step();
            manager.preflight(&format!("s{i}"), &agent.history).unwrap();
        }
    }
}

#[test]
fn sqlite_survives_a_killed_writer() {
    let path = temp_db("sigkill");
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "sqlite::zz_child_writer_for_the_sigkill_test",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COMPACT_SESSION_SIGKILL_DB", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the child has written a good part of a session, then kill it mid-stream.
    let probe = SqliteStore::open(&path).unwrap();
    let mut spins = 0u64;
    loop {
        let written = probe.version("s2").unwrap_or(0);
        if written >= 200 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the writer stopped on its own"
        );
        spins += 1;
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(spins < 30_000, "the writer made no progress");
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    drop(probe);

    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions, vec!["s0", "s1", "s2"]);
    for s in &sessions {
        let records = store.read(s, 0).unwrap();
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        assert_eq!(
            seqs,
            (1..=records.len() as u64).collect::<Vec<_>>(),
            "{s}: no gap"
        );
        assert_eq!(store.version(s).unwrap(), records.len() as u64);
        // Every append ends with its Sent event: the log ends on a whole call.
        if let Some(last) = records.last() {
            assert!(
                matches!(&last.record, Record::Event(e) if e.kind == EventKind::Sent),
                "{s}"
            );
        }
    }
    // A manager on the reopened store continues every session.
    let manager = manager_with(16_000, store);
    for s in &sessions {
        let mut agent = Agent::new(7, Format::OpenAiChat);
        agent.step();
        manager.preflight(s, &agent.history).unwrap();
    }
}

#[test]
fn a_new_manager_rebuilds_the_compacted_view_from_the_log() {
    let path = temp_db("rebuild");
    let mut agent = Agent::new(6, Format::OpenAiChat);
    let mut last = None;
    {
        let manager = manager_with(16_000, Arc::new(SqliteStore::open(&path).unwrap()));
        let mut compacted = false;
        while !compacted
            || last
                .as_ref()
                .is_some_and(|p: &compact_session::Prepared| p.report.compaction.is_some())
        {
            agent.step();
            let prepared = manager.preflight("s", &agent.history).unwrap();
            compacted |= prepared.report.compaction.is_some();
            last = Some(prepared);
        }
    }
    // The last call extended a compacted view; a new process resending the same history gets the
    // same request back, rebuilt from the view record and the items logged after it.
    let last = last.unwrap();
    let manager = manager_with(16_000, Arc::new(SqliteStore::open(&path).unwrap()));
    let again = manager.preflight("s", &agent.history).unwrap();
    assert!(!again.report.branched);
    assert!(again.report.compaction.is_none());
    assert_eq!(again.conversation, last.conversation);
    assert_eq!(again.report.tokens, last.report.tokens);
}

/// Run by [`a_full_disk_is_a_typed_error_and_loses_nothing_written`] as a child process whose files
/// cannot grow past a limit (`ulimit -f`): drives one session until the store refuses a write,
/// printing `OK <steps>` after each call that succeeded and `ERR <kind>` for the first that did not.
/// In an ordinary test run (without the variable) it returns at once.
#[test]
fn zz_child_writer_for_the_disk_full_test() {
    use compact_session::SessionError;
    let Ok(path) = std::env::var("COMPACT_SESSION_DISKFULL_DB") else {
        return;
    };
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let manager = manager_with(16_000, store);
    let mut agent = Agent::new(31, Format::OpenAiChat);
    for step in 1..=5_000 {
        agent.step();
        match manager.preflight("s", &agent.history) {
            Ok(_) => println!("OK {step}"),
            Err(SessionError::Store(e)) => {
                println!("ERR store {e}");
                // The same call again: refused again or accepted, never a panic or a half write.
                match manager.preflight("s", &agent.history) {
                    Ok(_) => println!("RETRY ok"),
                    Err(SessionError::Store(_)) => println!("RETRY store"),
                    Err(other) => println!("RETRY other {other}"),
                }
                return;
            }
            Err(other) => {
                println!("ERR other {other}");
                return;
            }
        }
    }
    println!("NEVER FULL");
}

#[test]
fn a_full_disk_is_a_typed_error_and_loses_nothing_written() {
    let path = temp_db("diskfull");
    let exe = std::env::current_exe().unwrap();
    // Files of the child cannot grow past 512 KiB; SIGXFSZ is ignored so that the write fails with
    // EFBIG instead of killing the process (an ignored signal stays ignored across exec).
    let script = format!(
        "trap '' XFSZ; ulimit -f 512; exec '{}' --exact sqlite::zz_child_writer_for_the_disk_full_test --nocapture --test-threads=1",
        exe.display()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .env("COMPACT_SESSION_DISKFULL_DB", &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let ok_steps: Vec<usize> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("OK ")?.trim().parse().ok())
        .collect();
    assert!(out.status.success(), "child failed: {stdout}");
    assert!(
        stdout.contains("ERR store"),
        "no typed store error: {stdout}"
    );
    assert!(!stdout.contains("RETRY other"), "{stdout}");
    let last_ok = *ok_steps
        .last()
        .expect("some calls succeeded before the disk filled");
    assert!(last_ok >= 5, "the disk filled after {last_ok} calls");

    // Without the limit: the log reads back whole, ends on a whole call, and holds every item of
    // every call that succeeded.
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let records = store.read("s", 0).unwrap();
    let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
    assert_eq!(seqs, (1..=records.len() as u64).collect::<Vec<_>>());
    assert!(matches!(
        &records.last().unwrap().record,
        Record::Event(e) if e.kind == EventKind::Sent
    ));
    let logged: std::collections::HashSet<String> = records
        .iter()
        .filter_map(|r| r.record.item_id().map(str::to_owned))
        .collect();
    let mut agent = Agent::new(31, Format::OpenAiChat);
    for _ in 0..last_ok {
        agent.step();
    }
    for item in &agent.history.items {
        assert!(
            logged.contains(item.meta.id.as_str()),
            "{} is missing",
            item.meta.id
        );
    }
    // And a manager on it goes on with the session.
    let manager = manager_with(16_000, store);
    agent.step();
    manager.preflight("s", &agent.history).unwrap();
}

/// `read_kind` returns the records of one kind after a sequence number, in order, at most `limit`,
/// and `seqs_of_kind` their numbers, as `read` filtered would (every store: the defaults on the
/// memory store, SQL on the others).
pub(crate) fn reads_records_of_one_kind(store: Arc<dyn Store>) {
    let manager = manager_with(8_000, Arc::clone(&store));
    let mut agent = Agent::new(5, Format::OpenAiChat);
    for _ in 0..6 {
        agent.step();
        manager.preflight("k", &agent.history).unwrap();
    }
    let all = store.read("k", 0).unwrap();
    for kind in ["item", "view", "event"] {
        let expected: Vec<u64> = all
            .iter()
            .filter(|s| s.record.kind() == kind)
            .map(|s| s.seq)
            .collect();
        let got: Vec<u64> = store
            .read_kind("k", 0, kind, usize::MAX)
            .unwrap()
            .iter()
            .map(|s| s.seq)
            .collect();
        assert_eq!(got, expected, "{kind}");
        // The numbers alone, without decoding.
        assert_eq!(store.seqs_of_kind("k", kind).unwrap(), expected, "{kind}");
        if let Some(&first) = expected.first() {
            let after: Vec<u64> = store
                .read_kind("k", first, kind, 2)
                .unwrap()
                .iter()
                .map(|s| s.seq)
                .collect();
            assert_eq!(
                after,
                expected.iter().skip(1).take(2).copied().collect::<Vec<_>>()
            );
        }
    }
    assert!(matches!(
        store.read_kind("nope", 0, "event", 1),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(matches!(
        store.seqs_of_kind("nope", "view"),
        Err(StoreError::UnknownSession(_))
    ));
}

#[test]
fn sqlite_and_memory_read_records_of_one_kind() {
    reads_records_of_one_kind(Arc::new(SqliteStore::open(temp_db("read_kind")).unwrap()));
    reads_records_of_one_kind(Arc::new(MemoryStore::new()));
}

/// Run by [`sqlite_keeps_every_acknowledged_append_through_a_sigkill`] as a child process: four
/// threads append to their own sessions at once (so appends commit in groups) and print
/// `ack <session> <version>` once an append has returned, as a proxy answers its client once the
/// turn is logged; until killed. In an ordinary test run (without the variable) it returns at once.
#[test]
fn zz_child_group_writer_for_the_ack_test() {
    let Ok(path) = std::env::var("COMPACT_SESSION_ACK_DB") else {
        return;
    };
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (store, out) = (Arc::clone(&store), Arc::clone(&out));
            std::thread::spawn(move || {
                let session = format!("g{t}");
                store.create(&session).unwrap();
                let mut version = store.version(&session).unwrap();
                loop {
                    let records = vec![
                        Record::Event(Event::new(EventKind::Sent, json!({"n": version}))),
                        Record::Event(Event::new(EventKind::Sent, json!({"n": version + 1}))),
                    ];
                    version = store.append(&session, version, records).unwrap();
                    let mut out = out.lock().unwrap();
                    use std::io::Write;
                    writeln!(out, "ack {session} {version}").unwrap();
                    out.flush().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// Group commit loses nothing acknowledged: a writer killed with SIGKILL after it acknowledged
/// appends (four threads at once, so appends share transactions) leaves every acknowledged append
/// in the log on reopen, the log of each session without a gap and ending on a whole append.
#[test]
fn sqlite_keeps_every_acknowledged_append_through_a_sigkill() {
    use std::io::BufRead;
    let path = temp_db("ack");
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "sqlite::zz_child_group_writer_for_the_ack_test",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COMPACT_SESSION_ACK_DB", &path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked: std::collections::BTreeMap<String, u64> = Default::default();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut seen = 0;
    // Kill it mid-stream, once it has acknowledged a good number of appends...
    while seen < 2_000 {
        let Some(line) = lines.next() else {
            panic!("the writer stopped on its own after {seen} acknowledgements");
        };
        let line = line.unwrap();
        let mut parts = line.split(' ');
        if parts.next() != Some("ack") {
            continue;
        }
        let (session, version) = (parts.next().unwrap(), parts.next().unwrap());
        acked.insert(session.to_owned(), version.parse().unwrap());
        seen += 1;
    }
    // SIGKILL on Unix; then the acknowledgements it printed before it died count too.
    child.kill().unwrap();
    for line in lines {
        let Ok(line) = line else { break };
        let mut parts = line.split(' ');
        if let (Some("ack"), Some(session), Some(Ok(version))) = (
            parts.next(),
            parts.next(),
            parts.next().map(str::parse::<u64>),
        ) {
            acked.insert(session.to_owned(), version);
        }
    }
    child.wait().unwrap();
    assert_eq!(acked.len(), 4, "every thread acknowledged appends");

    let store = SqliteStore::open(&path).unwrap();
    for (session, version) in &acked {
        let records = store.read(session, 0).unwrap();
        let logged = records.len() as u64;
        assert!(
            logged >= *version,
            "{session}: {version} acknowledged, {logged} in the log"
        );
        assert_eq!(store.version(session).unwrap(), logged);
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (1..=logged).collect::<Vec<_>>(), "{session}: no gap");
        assert_eq!(logged % 2, 0, "{session}: whole appends only");
    }
}

/// Appends racing on one session through one store (so they meet in one group): each is either
/// written whole at the version it named or refused as a conflict writing nothing, never both or
/// neither, and the log has no gap.
#[test]
fn racing_appends_on_one_session_are_each_written_or_refused_whole() {
    let path = temp_db("race");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    store.create("s").unwrap();
    let written = Arc::new(std::sync::Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let (store, written) = (Arc::clone(&store), Arc::clone(&written));
            std::thread::spawn(move || {
                for i in 0..200 {
                    let v = store.version("s").unwrap();
                    let records = vec![
                        Record::Event(Event::new(EventKind::Sent, json!({"t": t, "i": i}))),
                        Record::Event(Event::new(EventKind::Sent, json!({"t": t, "i": i}))),
                    ];
                    match store.append("s", v, records) {
                        Ok(next) => {
                            assert_eq!(next, v + 2);
                            written.lock().unwrap().push((t, i, v));
                        }
                        Err(StoreError::Conflict { expected, .. }) => assert_eq!(expected, v),
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let written = written.lock().unwrap();
    let records = store.read("s", 0).unwrap();
    assert_eq!(records.len(), written.len() * 2);
    for (t, i, v) in written.iter() {
        for seq in [v + 1, v + 2] {
            let Record::Event(e) = &records[(seq - 1) as usize].record else {
                panic!("record {seq} is not an event");
            };
            assert_eq!((e.get("t"), e.get("i")), (Some(&json!(t)), Some(&json!(i))));
        }
    }
}

/// The schema of version 1 (each record keyed by its session's text), as that program created it.
const SCHEMA_V1: &str = "CREATE TABLE sessions (
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
     CREATE INDEX records_by_item ON records(session, item_id) WHERE item_id IS NOT NULL;";

/// Each record's number and stored document (what a store reads back is decoded from it; the
/// memory store's records also hold what the document does not, such as memoised counts).
fn written(log: Vec<compact_session::record::Stored>) -> Vec<(u64, String)> {
    log.into_iter()
        .map(|s| (s.seq, s.record.to_json_string()))
        .collect()
}

/// A database written with schema version 1 opens with this program: migrated to the current
/// schema, every session's log reads back record for record and its documents byte for byte, with
/// the same versions, item look-ups and listing, and appends go on from there; a database from a
/// newer program is still refused.
#[test]
fn a_version_1_database_is_migrated_keeping_every_record() {
    let path = temp_db("migrate_v1");
    // The logs, made by the manager (a small window, so views and compaction events too).
    let memory = Arc::new(MemoryStore::new());
    let manager = manager_with(6_000, memory.clone());
    let sessions = ["a", "b with spaces, é", "c/3"];
    for (i, session) in sessions.iter().enumerate() {
        let mut agent = Agent::new(20 + i as u64, Format::OpenAiChat);
        for _ in 0..4 + 3 * i {
            agent.step();
            manager.preflight(session, &agent.history).unwrap();
        }
    }
    manager.flush().unwrap();
    memory.create("empty").unwrap();
    let mut all: Vec<String> = sessions.iter().map(|s| (*s).to_owned()).collect();
    all.push("empty".to_owned());
    all.sort();
    // The same logs in a version-1 file, written as that program wrote them.
    let mut docs = Vec::new();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(SCHEMA_V1).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        for session in &all {
            let log = memory.read(session, 0).unwrap();
            conn.execute(
                "INSERT INTO sessions (id, version) VALUES (?1, ?2)",
                rusqlite::params![session, log.len() as i64],
            )
            .unwrap();
            for stored in log {
                let doc = stored.record.to_json_string();
                conn.execute(
                    "INSERT INTO records (session, seq, kind, item_id, doc) VALUES (?1, ?2, ?3, ?4, ?5)",
                    rusqlite::params![
                        session,
                        stored.seq as i64,
                        stored.record.kind(),
                        stored.record.item_id(),
                        doc
                    ],
                )
                .unwrap();
                docs.push((session.clone(), stored.seq as i64, doc));
            }
        }
    }
    assert!(docs.len() > 100, "{} records", docs.len());
    for reopen in 0..2 {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), 2, "reopen {reopen}");
        assert_eq!(store.sessions().unwrap(), all);
        assert_eq!(
            store.list_sessions().unwrap(),
            memory.list_sessions().unwrap()
        );
        for session in &all {
            assert_eq!(
                written(store.read(session, 0).unwrap()),
                written(memory.read(session, 0).unwrap())
            );
            assert_eq!(
                store.version(session).unwrap(),
                memory.version(session).unwrap()
            );
            for stored in memory.read(session, 0).unwrap() {
                if let Some(id) = stored.record.item_id() {
                    assert_eq!(
                        written(store.find_items(session, id).unwrap()),
                        written(memory.find_items(session, id).unwrap())
                    );
                }
            }
        }
    }
    // Byte for byte: every document as it was written.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT s.id, r.seq, r.doc FROM records r JOIN sessions s ON s.sid = r.sid
                  ORDER BY s.id, r.seq",
            )
            .unwrap();
        let found: Vec<(String, i64, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(found, docs);
    }
    // Appends go on after the migrated records; a new session after the migrated ones.
    let store = SqliteStore::open(&path).unwrap();
    let version = store.version("a").unwrap();
    let event = Record::Event(Event::new(EventKind::Sent, json!({"n": 1})));
    assert_eq!(
        store.append("a", version, vec![event.clone()]).unwrap(),
        version + 1
    );
    assert_eq!(store.read("a", version).unwrap()[0].record, event);
    assert!(store.create("d").unwrap());
    assert_eq!(store.append("d", 0, vec![event.clone()]).unwrap(), 1);
    assert_eq!(store.read("d", 0).unwrap().len(), 1);
    assert!(store.delete_session("b with spaces, é").unwrap());
    assert!(matches!(
        store.read("b with spaces, é", 0),
        Err(StoreError::UnknownSession(_))
    ));
    assert_eq!(
        written(store.read("c/3", 0).unwrap()),
        written(memory.read("c/3", 0).unwrap())
    );
    drop(store);
    // A newer program's database is refused, not migrated.
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 3).unwrap();
    }
    assert!(matches!(
        SqliteStore::open(&path),
        Err(StoreError::SchemaTooNew {
            found: 3,
            supported: 2
        })
    ));
}
