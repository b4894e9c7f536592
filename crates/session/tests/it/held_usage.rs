//! A usage's records are held and logged in the transaction of the session's next turn (one
//! append per request), or alone once the session is quiet, when the manager is flushed, evicts
//! the session or is dropped. What a crash can lose: the usage records of each session's last
//! answered call, never a turn; a restart rebuilds the calibration from what the log holds.

use crate::common::{counter, manager_with, Agent, CountingStore};
use compact_core::model::Format;
use compact_session::record::Record;
use compact_session::{EventKind, MemoryStore, SqliteStore, Store, Usage};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the session's events are, in log order: `usage` for a usage report's calibration, else
/// the event's name.
fn event_kinds(store: &dyn Store, session: &str) -> Vec<&'static str> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if is_usage(&e) => Some(USAGE),
            Record::Event(e) => Some(e.kind.as_str()),
            _ => None,
        })
        .collect()
}

const USAGE: &str = "usage";
const SENT: &str = "compact.sent";

/// The `ratio` of each calibration event of the session, in order.
fn logged_ratios(store: &dyn Store, session: &str) -> Vec<f64> {
    calibrations(store, session, "ratio")
        .iter()
        .filter_map(serde_json::Value::as_f64)
        .collect()
}

/// The provider's count of each usage recorded for the session, in order.
fn logged_usages(store: &dyn Store, session: &str) -> Vec<u64> {
    calibrations(store, session, "provider_tokens")
        .iter()
        .filter_map(serde_json::Value::as_u64)
        .collect()
}

/// Field `field` of each calibration event of the session from a usage report, in order.
fn calibrations(store: &dyn Store, session: &str, field: &str) -> Vec<serde_json::Value> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if is_usage(&e) => e.get(field).cloned(),
            _ => None,
        })
        .collect()
}

/// A usage report's calibration event.
fn is_usage(e: &compact_session::Event) -> bool {
    e.kind == EventKind::Calibration && e.get("source").and_then(|v| v.as_str()) == Some("usage")
}

fn usage_of(tokens: usize) -> Usage {
    Usage {
        input_tokens: (tokens as u64) * 11 / 10,
        ..Usage::default()
    }
}

#[test]
fn a_usage_is_logged_in_the_next_turns_append() {
    let store = Arc::new(CountingStore::new());
    let manager = manager_with(64_000, Arc::clone(&store) as Arc<dyn Store>);
    let mut agent = Agent::new(3, Format::OpenAiChat);
    let mut reported = Vec::new();
    for turn in 1..=6 {
        agent.step();
        let prepared = manager.preflight("s", &agent.history).unwrap();
        // One append per request: the turn's, carrying the last call's usage.
        assert_eq!(store.appends.load(Ordering::Relaxed), turn, "turn {turn}");
        let usage = usage_of(prepared.report.tokens);
        manager.record_usage("s", &usage).unwrap();
        reported.push(usage.input_tokens);
        assert_eq!(store.appends.load(Ordering::Relaxed), turn, "turn {turn}");
    }
    // The log reads as before: each call's events, then its usage, then the next call's.
    let kinds = event_kinds(store.as_ref(), "s");
    let sent: Vec<usize> = (0..kinds.len()).filter(|&i| kinds[i] == SENT).collect();
    assert_eq!(sent.len(), 6);
    for pair in sent.windows(2) {
        let between = &kinds[pair[0]..pair[1]];
        assert_eq!(
            between.iter().filter(|k| **k == USAGE).count(),
            1,
            "{kinds:?}"
        );
    }
    // The last usage is held; a flush writes it alone.
    assert_eq!(logged_usages(store.as_ref(), "s"), reported[..5]);
    manager.flush().unwrap();
    assert_eq!(store.appends.load(Ordering::Relaxed), 7);
    assert_eq!(logged_usages(store.as_ref(), "s"), reported);
    // Numbered without gaps, and a manager reading the log sees the calibration in force.
    let seqs: Vec<u64> = store.read("s", 0).unwrap().iter().map(|s| s.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    assert_eq!(store.version("s").unwrap(), seqs.len() as u64);
    let other = manager_with(64_000, Arc::clone(&store) as Arc<dyn Store>);
    agent.step();
    let next = other.preflight("s", &agent.history).unwrap();
    let last = *logged_ratios(store.as_ref(), "s").last().unwrap();
    assert_eq!(next.report.ratio, last);
    assert!(!next.report.branched);
}

#[test]
fn held_usage_is_written_by_eviction_drop_and_a_quiet_session() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let manager = manager_with(64_000, Arc::clone(&store));
    let mut agent = Agent::new(4, Format::OpenAiChat);
    for session in ["evicted", "dropped", "quiet"] {
        agent.step();
        let prepared = manager.preflight(session, &agent.history).unwrap();
        manager
            .record_usage(session, &usage_of(prepared.report.tokens))
            .unwrap();
    }
    assert!(manager.evict("evicted"));
    assert_eq!(logged_usages(store.as_ref(), "evicted").len(), 1);
    // The quiet session's usage is written by the flusher, with no other call (the deadline is
    // far above the flush delay; only that it happens is checked).
    let deadline = Instant::now() + Duration::from_secs(60);
    while logged_usages(store.as_ref(), "quiet").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the quiet session's usage was never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(manager);
    assert_eq!(logged_usages(store.as_ref(), "dropped").len(), 1);
    for session in ["evicted", "dropped", "quiet"] {
        let seqs: Vec<u64> = store
            .read(session, 0)
            .unwrap()
            .iter()
            .map(|s| s.seq)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    }
}

/// The flusher writes quiet sessions' held usages several to a store call (`append_many`: one
/// transaction on SQLite), each once and after its turn; a session another writer appended to
/// since its usage was held meets a conflict in that call and has its usage made again on top of
/// the other writer's turn, alone: logged once, not twice.
#[test]
fn quiet_sessions_are_flushed_together_and_a_conflict_alone() {
    let store = Arc::new(CountingStore::new());
    let shared = Arc::clone(&store) as Arc<dyn Store>;
    let manager = manager_with(64_000, Arc::clone(&shared));
    let sessions = ["q0", "q1", "q2", "q3", "q4"];
    let mut agents = Vec::new();
    for (i, session) in sessions.iter().enumerate() {
        let mut agent = Agent::new(30 + i as u64, Format::OpenAiChat);
        agent.step();
        let prepared = manager.preflight(session, &agent.history).unwrap();
        manager
            .record_usage(session, &usage_of(prepared.report.tokens))
            .unwrap();
        agents.push(agent);
    }
    // Another writer's turn on q4 while its usage is held here.
    let other = manager_with(64_000, Arc::clone(&shared));
    agents[4].step();
    other.preflight("q4", &agents[4].history).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while sessions
        .iter()
        .any(|s| logged_usages(store.as_ref(), s).is_empty())
    {
        assert!(
            Instant::now() < deadline,
            "a quiet session was never written"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let batches = store.batches.lock().unwrap().clone();
    assert!(
        batches.iter().any(|b| b.len() > 1),
        "no store call wrote two sessions: {batches:?}"
    );
    assert!(
        batches.iter().flatten().any(|s| s == "q4"),
        "q4 was not in a call: {batches:?}"
    );
    for session in sessions {
        assert_eq!(logged_usages(store.as_ref(), session).len(), 1, "{session}");
        let seqs: Vec<u64> = store
            .read(session, 0)
            .unwrap()
            .iter()
            .map(|s| s.seq)
            .collect();
        assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    }
    // q4: both turns, then the usage, made again on top of the other writer's turn.
    let kinds = event_kinds(store.as_ref(), "q4");
    assert_eq!(kinds.iter().filter(|k| **k == SENT).count(), 2, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&USAGE), "{kinds:?}");
    drop(manager);
    assert!(sessions
        .iter()
        .all(|s| logged_usages(store.as_ref(), s).len() == 1));
}

/// Run by [`sqlite_keeps_every_answered_turn_through_a_sigkill`] as a child process: three
/// threads drive their own sessions through one manager on SQLite, printing `turn <session> <n>`
/// once a preflight returned (the proxy forwards the request then) and `usage <session> <n>` once
/// its usage is recorded (the proxy answers the client then); until killed. In an ordinary test
/// run (without the variable) it returns at once.
#[test]
fn zz_child_agent_for_the_usage_kill_test() {
    let Ok(path) = std::env::var("COMPACT_SESSION_USAGE_DB") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    let manager = Arc::new(manager_with(16_000, store));
    let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
    let threads: Vec<_> = (0..3u64)
        .map(|t| {
            let (manager, out) = (Arc::clone(&manager), Arc::clone(&out));
            std::thread::spawn(move || {
                let session = format!("k{t}");
                let mut agent = Agent::new(100 + t, Format::OpenAiChat);
                let say = |line: String| {
                    use std::io::Write;
                    let mut out = out.lock().unwrap();
                    writeln!(out, "{line}").unwrap();
                    out.flush().unwrap();
                };
                for n in 1.. {
                    agent.step();
                    let prepared = manager.preflight(&session, &agent.history).unwrap();
                    say(format!("turn {session} {n}"));
                    // A provider counting a little more than we do, varying per call.
                    let tokens = prepared.report.tokens * (100 + n % 7) / 100;
                    manager.record_usage(&session, &usage_of(tokens)).unwrap();
                    say(format!("usage {session} {n}"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// What a SIGKILL of a process serving agents on SQLite loses: no answered turn (every call whose
/// preflight returned is in the log), and at most the usage records of each session's last
/// answered call (every usage followed by a turn is logged). A manager opened on the database
/// afterwards takes the calibration the log holds.
#[test]
fn sqlite_keeps_every_answered_turn_through_a_sigkill() {
    use std::io::BufRead;
    let dir =
        std::env::temp_dir().join(format!("compact-session-{}-usage-kill", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sessions.db");
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "held_usage::zz_child_agent_for_the_usage_kill_test",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COMPACT_SESSION_USAGE_DB", &path)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    // Per session: the last turn answered, the last usage recorded.
    let mut turns: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut note = |line: &str| {
        let mut parts = line.split(' ');
        let (Some(what), Some(session), Some(Ok(n))) = (
            parts.next(),
            parts.next(),
            parts.next().map(str::parse::<u64>),
        ) else {
            return false;
        };
        let entry = turns.entry(session.to_owned()).or_default();
        match what {
            "turn" => entry.0 = n,
            "usage" => entry.1 = n,
            _ => return false,
        }
        true
    };
    let mut lines = std::io::BufReader::new(stdout).lines();
    let mut seen = 0;
    // Kill it mid-run, once every session has answered a good number of turns.
    while seen < 120 {
        let Some(line) = lines.next() else {
            panic!("the agent stopped on its own after {seen} lines");
        };
        seen += usize::from(note(&line.unwrap()));
    }
    child.kill().unwrap();
    for line in lines {
        let Ok(line) = line else { break };
        note(&line);
    }
    child.wait().unwrap();
    assert_eq!(turns.len(), 3, "every session answered turns");

    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&path).unwrap());
    for (session, (answered, usages)) in &turns {
        let kinds = event_kinds(store.as_ref(), session);
        let sent = kinds.iter().filter(|k| **k == SENT).count() as u64;
        let calibrations = kinds.iter().filter(|k| **k == USAGE).count() as u64;
        // Every answered turn is logged (the one being prepared when it died may be too).
        assert!(
            sent == *answered || sent == answered + 1,
            "{session}: {answered} turns answered, {sent} logged"
        );
        // Every usage but the last call's is logged: it rides with the turn after it.
        // (One more when it died between recording a usage and saying so, its flush done.)
        assert!(
            calibrations + 1 >= *usages && calibrations <= usages + 1,
            "{session}: {usages} usages recorded, {calibrations} logged"
        );
        assert!(
            calibrations + 1 >= sent,
            "{session}: a usage before a turn lost"
        );
        let seqs: Vec<u64> = store
            .read(session, 0)
            .unwrap()
            .iter()
            .map(|s| s.seq)
            .collect();
        assert_eq!(
            seqs,
            (1..=seqs.len() as u64).collect::<Vec<_>>(),
            "{session}"
        );
    }
    // A restart takes the calibration the log holds: the next call is decided on the last
    // logged ratio, and continues the session without a branch.
    let manager = manager_with(16_000, Arc::clone(&store));
    for (t, session) in turns.keys().enumerate() {
        let sent = event_kinds(store.as_ref(), session)
            .iter()
            .filter(|k| **k == SENT)
            .count();
        let mut agent = Agent::new(100 + t as u64, Format::OpenAiChat);
        for _ in 0..=sent {
            agent.step();
        }
        let prepared = manager.preflight(session, &agent.history).unwrap();
        let last = *logged_ratios(store.as_ref(), session).last().unwrap();
        assert_eq!(prepared.report.ratio, last, "{session}");
        assert!(!prepared.report.branched, "{session}");
        assert!(counter().total(&prepared.conversation) <= 16_000);
    }
    drop(manager);
    let _ = std::fs::remove_dir_all(&dir);
}
