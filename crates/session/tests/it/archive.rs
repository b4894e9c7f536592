//! The archive: the filesystem and S3 implementations behave alike (whole objects, listing,
//! replacing, deleting), a manager archives every compaction and recalls from the archive when the
//! log lacks an item, events are copied out in batches, retention deletes oldest first, and a
//! writer killed mid-write leaves only whole objects.

use crate::common::{counter, manager_with, Agent};
use compact_core::model::Format;
use compact_session::archive::{
    archive_events, gc, read_items, Archive, ArchiveError, FsArchive, ObjectKey, ObjectKind,
    Retention,
};
use compact_session::record::Record;
use compact_session::{CompactManager, MemoryStore, SessionConfig, SessionError, Store};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("compact-archive-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// What every archive must do.
fn behaves_like_an_archive(archive: &dyn Archive) {
    let a = ObjectKey::new("s/1", 3, ObjectKind::Transcript);
    let b = ObjectKey::new("s/1", 12, ObjectKind::Checkpoint);
    let c = ObjectKey::new("other", 1, ObjectKind::Events);
    assert_eq!(archive.get(&a).unwrap(), None);
    assert!(archive.list(None).unwrap().is_empty());
    archive.put(&b, b"second").unwrap();
    archive.put(&a, b"first").unwrap();
    archive.put(&c, &vec![7u8; 100_000]).unwrap();
    assert_eq!(archive.get(&a).unwrap().as_deref(), Some(&b"first"[..]));
    assert_eq!(archive.get(&c).unwrap().map(|v| v.len()), Some(100_000));
    let listed = archive.list(Some("s/1")).unwrap();
    let keys: Vec<_> = listed.iter().map(|o| o.key.clone()).collect();
    assert_eq!(
        keys,
        vec![a.clone(), b.clone()],
        "one session, in log order"
    );
    assert_eq!(listed[0].size, 5);
    assert_eq!(archive.list(None).unwrap().len(), 3);
    archive.put(&a, b"replaced").unwrap();
    assert_eq!(archive.get(&a).unwrap().as_deref(), Some(&b"replaced"[..]));
    archive.delete(&a).unwrap();
    archive.delete(&a).unwrap();
    assert_eq!(archive.get(&a).unwrap(), None);
    assert_eq!(archive.list(Some("s/1")).unwrap().len(), 1);
    // Size retention: only the newest object fits.
    let report = gc(
        archive,
        &Retention {
            max_age: None,
            max_bytes: Some(100_000),
        },
        SystemTime::now(),
    )
    .unwrap();
    assert_eq!(report.kept, 1);
    assert!(report.kept_bytes <= 100_000);
    assert_eq!(archive.list(None).unwrap().len(), 1);
}

#[test]
fn fs_archive_behaves_like_an_archive() {
    let archive = FsArchive::open(temp_dir("conformance")).unwrap();
    behaves_like_an_archive(&archive);
}

#[cfg(feature = "s3")]
fn s3_archive(name: &str) -> Option<compact_session::S3Archive> {
    let endpoint = crate::services::s3_url()?;
    let archive = compact_session::S3Archive::new(&compact_session::S3Config {
        endpoint,
        bucket: format!("compact-test-{name}-{}", std::process::id()),
        region: "us-east-1".into(),
        access_key: "test".into(),
        secret_key: "test".into(),
        prefix: "archive/".into(),
        path_style: true,
    })
    .unwrap();
    archive.create_bucket().unwrap();
    archive.create_bucket().unwrap();
    Some(archive)
}

#[cfg(feature = "s3")]
#[test]
fn s3_archive_behaves_like_an_archive() {
    let Some(archive) = s3_archive("conformance") else {
        return;
    };
    behaves_like_an_archive(&archive);
}

#[cfg(feature = "s3")]
#[test]
fn s3_unreachable_is_a_typed_error() {
    let archive = compact_session::S3Archive::new(&compact_session::S3Config {
        endpoint: "http://127.0.0.1:1".into(),
        bucket: "nowhere".into(),
        region: "us-east-1".into(),
        access_key: "k".into(),
        secret_key: "s".into(),
        prefix: String::new(),
        path_style: true,
    })
    .unwrap();
    let key = ObjectKey::new("s", 1, ObjectKind::Events);
    assert!(matches!(
        archive.put(&key, b"x"),
        Err(ArchiveError::Unreachable { .. })
    ));
    assert!(matches!(
        archive.list(None),
        Err(ArchiveError::Unreachable { .. })
    ));
}

#[test]
fn fs_archive_failures_are_typed() {
    let root = temp_dir("failures");
    let archive = FsArchive::open(&root).unwrap();
    // A file where the session's directory should be.
    std::fs::write(root.join("blocked"), b"").unwrap();
    let key = ObjectKey::new("blocked", 1, ObjectKind::Transcript);
    assert!(matches!(
        archive.put(&key, b"x"),
        Err(ArchiveError::Io { .. })
    ));
    // Not ours: ignored by listings.
    std::fs::create_dir_all(root.join("s")).unwrap();
    std::fs::write(root.join("s/notes.txt"), b"").unwrap();
    std::fs::write(
        root.join("s/.00000000000000000001-events.json.1.0.tmp"),
        b"{",
    )
    .unwrap();
    assert!(archive.list(None).unwrap().is_empty());
}

fn drive_until_compacted(manager: &compact_session::CompactManager, agent: &mut Agent) -> usize {
    let mut compactions = 0;
    for _ in 0..60 {
        agent.step();
        let prepared = manager.preflight("s", &agent.history).unwrap();
        assert!(prepared
            .report
            .warnings
            .iter()
            .all(|w| !w.contains("archived")));
        compactions += usize::from(prepared.report.compaction.is_some());
        if compactions >= 2 {
            break;
        }
    }
    compactions
}

#[test]
fn a_manager_archives_every_compaction_and_recalls_from_the_archive() {
    let archive: Arc<dyn Archive> = Arc::new(FsArchive::open(temp_dir("manager")).unwrap());
    let store = Arc::new(MemoryStore::new());
    // The reversible stage alone would reach the target of these synthetic sessions: this test is
    // about the checkpoints the lossy tiers archive, so it is off.
    let policy = compact_core::policy::Policy {
        reversible: compact_core::policy::ReversibleMode::Off,
        ..compact_core::policy::Policy::for_window(16_000)
    };
    let manager = CompactManager::open(SessionConfig::new(policy, counter()), store.clone())
        .unwrap()
        .with_archive(Arc::clone(&archive));
    let mut agent = Agent::new(11, Format::OpenAiChat);
    assert_eq!(drive_until_compacted(&manager, &mut agent), 2);
    let manual = manager.manual_compact("s", "checkpoint please").unwrap();
    assert!(manual
        .report
        .warnings
        .iter()
        .all(|w| !w.contains("archived")));

    // One transcript and one checkpoint per view record, named by its sequence number.
    let views: Vec<u64> = store
        .read("s", 0)
        .unwrap()
        .iter()
        .filter(|r| matches!(r.record, Record::View(_)))
        .map(|r| r.seq)
        .collect();
    assert_eq!(views.len(), 3);
    let objects = archive.list(Some("s")).unwrap();
    let mut expected = Vec::new();
    for &seq in &views {
        expected.push(ObjectKey::new("s", seq, ObjectKind::Transcript));
        expected.push(ObjectKey::new("s", seq, ObjectKind::Checkpoint));
    }
    assert_eq!(
        objects
            .iter()
            .map(|o| o.key.clone())
            .filter(|k| k.kind != ObjectKind::Events)
            .collect::<Vec<_>>(),
        expected
    );
    // With each compaction, the events logged since the last batch were archived too: every event
    // of the log up to the last compaction is in exactly one batch.
    let batches: Vec<u64> = objects
        .iter()
        .filter(|o| o.key.kind == ObjectKind::Events)
        .map(|o| o.key.seq)
        .collect();
    assert_eq!(batches.len(), 3, "{batches:?}");
    for (batch, &view) in batches.iter().zip(&views) {
        assert!(*batch > view, "the batch after view {view} ends at {batch}");
    }
    let logged_events = store
        .read("s", 0)
        .unwrap()
        .iter()
        .filter(|r| r.seq <= batches[2] && matches!(r.record, Record::Event(_)))
        .count();
    let archived_events: usize = batches
        .iter()
        .map(|&seq| {
            let key = ObjectKey::new("s", seq, ObjectKind::Events);
            let doc: serde_json::Value =
                serde_json::from_slice(&archive.get(&key).unwrap().unwrap()).unwrap();
            doc["events"].as_array().unwrap().len()
        })
        .sum();
    assert_eq!(archived_events, logged_events);
    // The last transcript is the whole history the manual compaction was given.
    let last = read_items(
        archive.as_ref(),
        &ObjectKey::new("s", views[2], ObjectKind::Transcript),
    )
    .unwrap();
    assert_eq!(last.len(), agent.history.len());
    for (a, b) in last.iter().zip(&agent.history.items) {
        assert_eq!(a.meta.id, b.meta.id);
        assert_eq!(a.body(), b.body());
    }
    // Every checkpoint object reads back; the compactions that summarised left their checkpoint.
    let checkpoints: Vec<usize> = views
        .iter()
        .map(|&seq| {
            read_items(
                archive.as_ref(),
                &ObjectKey::new("s", seq, ObjectKind::Checkpoint),
            )
            .unwrap()
            .len()
        })
        .collect();
    assert!(checkpoints.iter().any(|&n| n > 0), "{checkpoints:?}");

    // A manager whose store lost the session still recalls every item from the archive; one
    // without an archive cannot.
    let first = &agent.history.items[1];
    let bare = manager_with(16_000, Arc::new(MemoryStore::new()));
    assert!(matches!(
        bare.recall("s", first.meta.id.as_str()),
        Err(SessionError::UnknownSession(_))
    ));
    let archived =
        manager_with(16_000, Arc::new(MemoryStore::new())).with_archive(Arc::clone(&archive));
    let recalled = archived.recall("s", first.meta.id.as_str()).unwrap();
    assert_eq!(recalled.body(), first.body());
    assert!(matches!(
        archived.recall("s", "no-such-item"),
        Err(SessionError::UnknownReference { .. })
    ));
}

#[test]
fn events_are_copied_out_of_the_log_in_batches() {
    let archive = FsArchive::open(temp_dir("events")).unwrap();
    let store = Arc::new(MemoryStore::new());
    let manager = manager_with(128_000, store.clone());
    let mut agent = Agent::new(12, Format::Anthropic);
    for _ in 0..3 {
        agent.step();
        manager.preflight("s", &agent.history).unwrap();
    }
    let events = |from: u64| {
        store
            .read("s", from)
            .unwrap()
            .iter()
            .filter(|r| matches!(r.record, Record::Event(_)))
            .count()
    };
    let first = archive_events(store.as_ref(), &archive, "s").unwrap();
    assert_eq!(first, events(0));
    assert_eq!(archive_events(store.as_ref(), &archive, "s").unwrap(), 0);
    let version = store.version("s").unwrap();
    agent.step();
    manager.preflight("s", &agent.history).unwrap();
    assert_eq!(
        archive_events(store.as_ref(), &archive, "s").unwrap(),
        events(version)
    );
    let batches: Vec<u64> = archive
        .list(Some("s"))
        .unwrap()
        .iter()
        .map(|o| o.key.seq)
        .collect();
    assert_eq!(batches, vec![version, store.version("s").unwrap()]);
}

#[test]
fn fs_retention_deletes_by_age_then_size_oldest_first() {
    let root = temp_dir("retention");
    let archive = FsArchive::open(&root).unwrap();
    let now = SystemTime::now();
    let day = Duration::from_secs(86_400);
    // Objects 1..=5 written 5, 4, 3, 2 and 1 days ago, 1,000 bytes each.
    for seq in 1..=5u64 {
        let key = ObjectKey::new("s", seq, ObjectKind::Events);
        archive.put(&key, &[b' '; 1_000]).unwrap();
        let file = std::fs::File::options()
            .write(true)
            .open(root.join(key.path()))
            .unwrap();
        file.set_modified(now - day * (6 - seq as u32)).unwrap();
    }
    let report = gc(
        &archive,
        &Retention {
            max_age: Some(day * 4 + Duration::from_secs(60)),
            max_bytes: None,
        },
        now,
    )
    .unwrap();
    assert_eq!(
        report.deleted,
        vec![ObjectKey::new("s", 1, ObjectKind::Events)]
    );
    assert_eq!(
        (report.kept, report.kept_bytes, report.freed_bytes),
        (4, 4_000, 1_000)
    );
    let report = gc(
        &archive,
        &Retention {
            max_age: None,
            max_bytes: Some(2_500),
        },
        now,
    )
    .unwrap();
    let seqs: Vec<u64> = report.deleted.iter().map(|k| k.seq).collect();
    assert_eq!(seqs, vec![2, 3]);
    let left: Vec<u64> = archive
        .list(None)
        .unwrap()
        .iter()
        .map(|o| o.key.seq)
        .collect();
    assert_eq!(left, vec![4, 5]);
}

/// Bytes of each object the killed writer writes: large enough that a write takes several
/// system calls, so a kill lands inside one.
const KILLED_OBJECT_BYTES: usize = 256 * 1024;

fn killed_body(seq: u64) -> Vec<u8> {
    let mut body = format!("{{\"seq\":{seq},\"pad\":\"").into_bytes();
    body.resize(KILLED_OBJECT_BYTES, b'x');
    body.extend_from_slice(b"\"}");
    body
}

/// Run by [`fs_archive_survives_a_killed_writer`] as a child process: writes until killed. In an
/// ordinary test run (without the variable) it returns at once.
#[test]
fn zz_child_archive_writer() {
    let Ok(root) = std::env::var("COMPACT_ARCHIVE_SIGKILL_ROOT") else {
        return;
    };
    let archive = FsArchive::open(root).unwrap();
    for seq in 1.. {
        // Each object is written twice: a kill can land in a replacement too.
        for _ in 0..2 {
            archive
                .put(
                    &ObjectKey::new("s", seq, ObjectKind::Transcript),
                    &killed_body(seq),
                )
                .unwrap();
        }
    }
}

#[test]
fn fs_archive_survives_a_killed_writer() {
    let root = temp_dir("sigkill");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "archive::zz_child_archive_writer",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("COMPACT_ARCHIVE_SIGKILL_ROOT", &root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let probe = FsArchive::open(&root).unwrap();
    let mut spins = 0u64;
    while probe.list(Some("s")).unwrap().len() < 40 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the writer stopped on its own"
        );
        spins += 1;
        std::thread::sleep(Duration::from_millis(10));
        assert!(spins < 60_000, "the writer made no progress");
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let objects = probe.list(None).unwrap();
    assert!(objects.len() >= 40);
    for object in &objects {
        let body = probe.get(&object.key).unwrap().unwrap();
        assert_eq!(
            body,
            killed_body(object.key.seq),
            "{:?} is whole",
            object.key
        );
    }
    let seqs: Vec<u64> = objects.iter().map(|o| o.key.seq).collect();
    assert_eq!(seqs, (1..=objects.len() as u64).collect::<Vec<_>>());
}

/// An archive whose every write fails (a full disk, an unreachable bucket).
struct Broken;

impl Archive for Broken {
    fn put(&self, _: &ObjectKey, _: &[u8]) -> Result<(), ArchiveError> {
        Err(ArchiveError::Config("broken on purpose".into()))
    }
    fn get(&self, _: &ObjectKey) -> Result<Option<Vec<u8>>, ArchiveError> {
        Ok(None)
    }
    fn list(
        &self,
        _: Option<&str>,
    ) -> Result<Vec<compact_session::archive::ObjectInfo>, ArchiveError> {
        Ok(Vec::new())
    }
    fn delete(&self, _: &ObjectKey) -> Result<(), ArchiveError> {
        Ok(())
    }
}

#[test]
fn a_failing_archive_is_a_warning_and_loses_nothing() {
    let store = Arc::new(MemoryStore::new());
    let manager = manager_with(16_000, store.clone()).with_archive(Arc::new(Broken));
    let mut agent = Agent::new(13, Format::OpenAiChat);
    let mut warned = false;
    for _ in 0..60 {
        agent.step();
        let prepared = manager.preflight("s", &agent.history).unwrap();
        if prepared.report.compaction.is_some() {
            warned = prepared
                .report
                .warnings
                .iter()
                .any(|w| w.contains("not archived") && w.contains("broken on purpose"));
            break;
        }
    }
    assert!(warned, "the compaction reported the failed archive write");
    for item in &agent.history.items {
        assert!(!store
            .find_items("s", item.meta.id.as_str())
            .unwrap()
            .is_empty());
    }
}

/// The S3 archive through the outbound client: every request goes to the configured HTTP proxy
/// (absolute form, with the credentials of its URL) and on to the S3 server.
#[cfg(feature = "s3")]
#[test]
fn s3_requests_go_through_the_configured_proxy() {
    let Some(endpoint) = crate::services::s3_url() else {
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime
        .block_on(compact_net_test::TestProxy::start(Some(("archive", "pw"))))
        .unwrap();
    let client = compact_net::Client::new(
        &compact_net::NetSettings {
            proxy: Some(proxy.url_with("archive", "pw")),
            ..compact_net::NetSettings::default()
        },
        &compact_net::ProxyEnv::default(),
    )
    .unwrap();
    let archive = compact_session::S3Archive::with_client(
        &compact_session::S3Config {
            endpoint: endpoint.clone(),
            bucket: format!("compact-test-proxied-{}", std::process::id()),
            region: "us-east-1".into(),
            access_key: "test".into(),
            secret_key: "test".into(),
            prefix: "archive/".into(),
            path_style: true,
        },
        client,
    )
    .unwrap();
    archive.create_bucket().unwrap();
    behaves_like_an_archive(&archive);
    let server = endpoint.trim_start_matches("http://").trim_end_matches('/');
    assert!(proxy.forwards() >= 1);
    assert!(
        proxy.targets().iter().all(|t| t == server),
        "{:?}",
        proxy.targets()
    );
    assert_eq!(proxy.refused(), 0);
}
