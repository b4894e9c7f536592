//! The PostgreSQL store against a real server on loopback (`scripts/services`): stale appends are
//! refused, the log survives a reconnect, a newer schema is refused, an unreachable server is a
//! typed error, and two processes driving the same sessions leave complete, ordered logs.

use crate::common::{manager_with, Agent};
use crate::services::postgres_schema;
use compact_core::model::Format;
use compact_session::chain::ChainHash;
use compact_session::record::{ItemSource, Record};
use compact_session::{
    CompactManager, Event, EventKind, PostgresStore, SessionError, Store, StoreError,
};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;

fn event() -> Record {
    Record::Event(Event::new(EventKind::Sent, json!({"n": 1})))
}

#[test]
fn postgres_stale_appends_are_refused_and_write_nothing() {
    let Some(url) = postgres_schema("conflict") else {
        return;
    };
    let a = PostgresStore::connect(&url).unwrap();
    let b = PostgresStore::connect(&url).unwrap();
    assert!(a.create("s").unwrap());
    assert!(!b.create("s").unwrap(), "created once");
    assert_eq!(a.append("s", 0, vec![event(), event()]).unwrap(), 2);
    match b.append("s", 0, vec![event()]) {
        Err(StoreError::Conflict {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (0, 2)),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(b.version("s").unwrap(), 2);
    let seqs: Vec<u64> = b.read("s", 0).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    assert_eq!(b.append("s", 2, vec![event()]).unwrap(), 3);
    assert_eq!(a.read("s", 2).unwrap().len(), 1);
    assert!(matches!(
        a.append("nope", 0, vec![event()]),
        Err(StoreError::UnknownSession(_))
    ));
    assert!(matches!(
        a.read("nope", 0),
        Err(StoreError::UnknownSession(_))
    ));
}

#[test]
fn postgres_lists_and_deletes_sessions() {
    let Some(url) = postgres_schema("list_delete") else {
        return;
    };
    let store = PostgresStore::connect(&url).unwrap();
    for id in ["b", "a", "c"] {
        assert!(store.create(id).unwrap());
    }
    store.append("a", 0, vec![event()]).unwrap();
    store.append("b", 0, vec![event(), event()]).unwrap();
    let listed = store.list_sessions().unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    assert_eq!(
        listed.iter().map(|s| s.version).collect::<Vec<_>>(),
        [1, 2, 0]
    );
    assert!(listed[0].last_event_ms.is_some() && listed[2].last_event_ms.is_none());
    assert!(store.delete_session("b").unwrap());
    assert!(!store.delete_session("b").unwrap(), "deleted once");
    assert!(matches!(
        store.read("b", 0),
        Err(StoreError::UnknownSession(_))
    ));
    assert_eq!(store.sessions().unwrap(), ["a", "c"]);
    // The others are untouched.
    assert_eq!(store.read("a", 0).unwrap().len(), 1);
}

#[test]
fn postgres_log_survives_reconnect() {
    let Some(url) = postgres_schema("reopen") else {
        return;
    };
    let mut agent = Agent::new(4, Format::Anthropic);
    let (last, records) = {
        let store = Arc::new(PostgresStore::connect(&url).unwrap());
        assert_eq!(store.schema_version().unwrap(), 1);
        let manager = manager_with(16_000, store.clone());
        let mut last = None;
        for _ in 0..25 {
            agent.step();
            last = Some(manager.preflight("s", &agent.history).unwrap());
        }
        (last.unwrap(), store.read("s", 0).unwrap())
    };
    let store = Arc::new(PostgresStore::connect(&url).unwrap());
    assert_eq!(store.schema_version().unwrap(), 1, "migrated once");
    assert_eq!(
        store.read("s", 0).unwrap(),
        records,
        "every record reads back equal"
    );
    assert_eq!(store.sessions().unwrap(), vec!["s".to_owned()]);
    let first = agent.history.items[1].meta.id.as_str().to_owned();
    let manager = manager_with(16_000, store);
    let recalled = manager.recall("s", &first).unwrap();
    assert_eq!(
        recalled.body(),
        agent.history.items[1].body(),
        "recall reads the log"
    );
    let again = manager.preflight("s", &agent.history).unwrap();
    assert!(!again.report.branched);
    assert_eq!(again.conversation, last.conversation);
}

#[test]
fn postgres_refuses_a_newer_schema() {
    let Some(url) = postgres_schema("too_new") else {
        return;
    };
    PostgresStore::connect(&url).unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .execute("INSERT INTO compact_schema (version) VALUES (99)", &[])
        .unwrap();
    match PostgresStore::connect(&url) {
        Err(StoreError::SchemaTooNew { found, supported }) => {
            assert_eq!((found, supported), (99, 1));
        }
        other => panic!("expected SchemaTooNew, got {other:?}"),
    }
}

#[test]
fn postgres_unreachable_server_is_a_backend_error() {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    for url in [
        "postgres://compact@127.0.0.1:1/compact_test?connect_timeout=5",
        "host=127.0.0.1 port=1 user=compact connect_timeout=5",
        "postgres://[not a url",
    ] {
        match PostgresStore::connect(url) {
            Err(StoreError::Backend(message)) => assert!(message.contains("postgres"), "{message}"),
            other => panic!("{url}: expected a backend error, got {other:?}"),
        }
    }
}

/// Sessions the two processes share, and the turns each drives in every one.
const SHARED_SESSIONS: u64 = 3;
const TURNS: usize = 14;

/// Conflicts one call may meet before the child gives up (each means the other process appended
/// first; the retry reloads the log and goes on).
const MAX_CONFLICTS: usize = 200;

fn preflight_retrying(manager: &CompactManager, session: &str, agent: &Agent) {
    for _ in 0..MAX_CONFLICTS {
        match manager.preflight(session, &agent.history) {
            Ok(_) => return,
            Err(SessionError::Store(StoreError::Conflict { .. })) => continue,
            Err(e) => panic!("{session}: {e}"),
        }
    }
    panic!("{session}: {MAX_CONFLICTS} conflicts in a row");
}

/// Run by [`two_processes_drive_the_same_sessions`] as a child process. In an ordinary test run
/// (without the variable) it returns at once.
#[test]
fn zz_child_postgres_writer() {
    let Ok(url) = std::env::var("COMPACT_SESSION_PG_CHILD") else {
        return;
    };
    let manager = manager_with(16_000, Arc::new(PostgresStore::connect(&url).unwrap()));
    let mut agents: Vec<Agent> = (0..SHARED_SESSIONS)
        .map(|i| Agent::new(300 + i, Format::OpenAiChat))
        .collect();
    for _ in 0..TURNS {
        for (i, agent) in agents.iter_mut().enumerate() {
            agent.step();
            preflight_retrying(&manager, &format!("s{i}"), agent);
        }
    }
}

#[test]
fn two_processes_drive_the_same_sessions() {
    let Some(url) = postgres_schema("two_processes") else {
        return;
    };
    // Migrate once here so both children start on the same schema.
    let store = PostgresStore::connect(&url).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "postgres::zz_child_postgres_writer",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("COMPACT_SESSION_PG_CHILD", &url)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let sessions = store.sessions().unwrap();
    assert_eq!(sessions, vec!["s0", "s1", "s2"]);
    for (i, s) in sessions.iter().enumerate() {
        let records = store.read(s, 0).unwrap();
        // Ordered, without gaps.
        let seqs: Vec<u64> = records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (1..=records.len() as u64).collect::<Vec<_>>(), "{s}");
        assert_eq!(store.version(s).unwrap(), records.len() as u64);
        // Not interleaved: every append is one whole call, its items, then its events, ending
        // with its Sent event (so each stretch up to a Sent holds exactly one token estimate).
        let mut estimates = 0;
        let mut seen_event = false;
        for r in &records {
            match &r.record {
                Record::Item(_) | Record::View(_) => {
                    if let Record::Item(_) = &r.record {
                        assert!(
                            !seen_event,
                            "{s} #{}: an item inside another call's events",
                            r.seq
                        );
                    }
                }
                Record::Event(e) => {
                    seen_event = true;
                    match e.kind {
                        EventKind::TokenEstimate => estimates += 1,
                        EventKind::Sent => {
                            assert_eq!(estimates, 1, "{s} #{}: calls interleaved", r.seq);
                            estimates = 0;
                            seen_event = false;
                        }
                        _ => {}
                    }
                }
            }
        }
        assert_eq!(estimates, 0, "{s}: the log ends inside a call");
        // Complete, no duplicates, each item after its parent.
        let mut links = HashSet::new();
        for r in &records {
            if let Record::Item(item) = &r.record {
                if item.source == ItemSource::Received {
                    assert!(
                        item.parent == ChainHash::GENESIS || links.contains(&item.parent),
                        "{s} #{}: logged before its parent",
                        r.seq
                    );
                    assert!(links.insert(item.hash), "{s} #{}: logged twice", r.seq);
                }
            }
        }
        let mut agent = Agent::new(300 + i as u64, Format::OpenAiChat);
        for _ in 0..TURNS {
            agent.step();
        }
        let mut tip = ChainHash::GENESIS;
        for item in &agent.history.items {
            tip = tip.next_item(item);
            assert!(
                links.contains(&tip),
                "{s}: item {} missing",
                item.meta.id.as_str()
            );
        }
    }
}

#[test]
fn postgres_reads_records_of_one_kind() {
    let Some(url) = postgres_schema("read_kind") else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(&url).unwrap());
    crate::sqlite::reads_records_of_one_kind(store);
}

/// A URL of the test database in a schema of its own, for a store whose connections are named
/// (`application_name`) so that the server's view of them can be counted, with `extra` options.
fn named_store_url(schema: &str, extra: &str) -> Option<(String, String, String)> {
    let url = postgres_schema(schema)?;
    let name = format!("compact_{schema}_{}", std::process::id());
    let store_url = format!("{url}&application_name={name}{extra}");
    Some((url, store_url, name))
}

/// The store's connections the server knows, and how many of them wait for a lock.
fn backends(admin: &mut postgres::Client, name: &str) -> (i64, i64) {
    let row = admin
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE wait_event_type = 'Lock')
               FROM pg_stat_activity WHERE application_name = $1",
            &[&name],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

/// Polls `what` until it holds (the server's view of connections changes after the fact).
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 30 s for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn postgres_pool_opens_connections_as_needed_and_never_more_than_its_max() {
    const MAX: usize = 3;
    const WRITERS: usize = 6;
    let Some((url, store_url, name)) = named_store_url("pool", &format!("&pool_max_size={MAX}"))
    else {
        return;
    };
    let store = Arc::new(PostgresStore::connect(&store_url).unwrap());
    assert_eq!(store.pool_max_size(), MAX);
    assert_eq!(store.open_connections(), 1, "one connection at connect");
    for i in 0..WRITERS {
        store.create(&format!("s{i}")).unwrap();
    }
    assert_eq!(store.open_connections(), 1, "one at a time needs one");

    // Appends wait while another transaction holds the sessions table: every writer holds its
    // connection meanwhile, so the pool opens as many as it may, and the rest wait for one.
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut lock = admin.transaction().unwrap();
    lock.batch_execute("LOCK TABLE compact_sessions IN EXCLUSIVE MODE")
        .unwrap();
    let writers: Vec<_> = (0..WRITERS)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || store.append(&format!("s{i}"), 0, vec![event(), event()]))
        })
        .collect();
    let mut watcher = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    wait_until("the pool's connections to wait for the lock", || {
        backends(&mut watcher, &name).1 == MAX as i64
    });
    assert_eq!(backends(&mut watcher, &name), (MAX as i64, MAX as i64));
    assert_eq!(store.open_connections(), MAX);
    lock.commit().unwrap();
    for w in writers {
        assert_eq!(w.join().unwrap().unwrap(), 2);
    }
    assert_eq!(store.open_connections(), MAX, "kept for the next calls");
    assert!(backends(&mut watcher, &name).0 <= MAX as i64);
    for i in 0..WRITERS {
        assert_eq!(store.read(&format!("s{i}"), 0).unwrap().len(), 2);
    }

    // Dropped, the store closes every connection.
    drop(store);
    wait_until("the store's connections to close", || {
        backends(&mut watcher, &name).0 == 0
    });
}

#[test]
fn postgres_connections_the_server_closed_are_replaced_without_failing_a_call() {
    let Some((url, store_url, name)) = named_store_url("reconnect", "&pool_max_size=2") else {
        return;
    };
    let store = PostgresStore::connect(&store_url).unwrap();
    store.create("s").unwrap();
    store.append("s", 0, vec![event()]).unwrap();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for round in 0..2 {
        // As a server restart or an idle timeout would: every connection of the store ends.
        admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                &[&name],
            )
            .unwrap();
        wait_until("the connections to end", || {
            backends(&mut admin, &name).0 == 0
        });
        assert_eq!(store.version("s").unwrap(), 1 + round, "round {round}");
        assert_eq!(
            store.append("s", 1 + round, vec![event()]).unwrap(),
            2 + round
        );
    }
    assert_eq!(store.read("s", 0).unwrap().len(), 3);
}

#[test]
fn postgres_store_dropped_inside_an_async_runtime_closes_cleanly() {
    let Some(url) = postgres_schema("drop_in_runtime") else {
        return;
    };
    let store = PostgresStore::connect(&url).unwrap();
    store.create("s").unwrap();
    // Where the proxy drops its store when its server stops (issue 41: exit 101 on SIGTERM).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    runtime.block_on(async move { drop(store) });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let store = PostgresStore::connect(&url).unwrap();
    runtime.block_on(async move { drop(store) });
}

#[test]
fn postgres_errors_and_debug_name_the_problem_never_the_password() {
    for (url, wanted) in [
        (
            "postgres://compact:hunter2@127.0.0.1:1/x?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
            "postgres: sslrootcert `/nonexistent/ca.pem`: no such file",
        ),
        (
            "postgres://compact:hunter2@127.0.0.1:1/x?sslmode=sometimes",
            "sslmode `sometimes`: expected disable, prefer, require, verify-ca or verify-full",
        ),
        (
            "host=127.0.0.1 port=1 password=hunter2 pool_max_size=0",
            "pool_max_size `0`",
        ),
        (
            "postgres://compact:hunter2@127.0.0.1:1/x?connect_timeout=5",
            "error connecting to server: Connection refused",
        ),
    ] {
        match PostgresStore::connect(url) {
            Err(StoreError::Backend(m)) => {
                assert!(m.contains(wanted), "{url}: {m}");
                assert!(!m.contains("hunter2"), "{url}: {m}");
            }
            other => panic!("{url}: expected a backend error, got {other:?}"),
        }
    }
    let not_pem = std::env::temp_dir().join(format!("compact-not-a-ca-{}.pem", std::process::id()));
    std::fs::write(&not_pem, "just text\n").unwrap();
    let url = format!(
        "postgres://compact@127.0.0.1:1/x?sslmode=verify-ca&sslrootcert={}",
        not_pem.display()
    );
    match PostgresStore::connect(&url) {
        Err(StoreError::Backend(m)) => assert!(m.ends_with("no certificate in it"), "{m}"),
        other => panic!("expected a backend error, got {other:?}"),
    }
    let _ = std::fs::remove_file(&not_pem);

    let Some(url) = postgres_schema("debug") else {
        return;
    };
    // Trust authentication ignores the password, which is still in the URL.
    let url = url.replacen("postgres://compact@", "postgres://compact:hunter2@", 1);
    let store = PostgresStore::connect(&format!("{url}&pool_max_size=4")).unwrap();
    let debug = format!("{store:?}");
    assert!(!debug.contains("hunter2"), "{debug}");
    assert!(
        debug.contains("compact_test") && debug.contains("pool_max_size: 4"),
        "{debug}"
    );
}
