//! The configuration file's session settings are effective: `policy.overflow_max_retries` bounds
//! recovery, `policy.manual_trigger_phrases` replaces the phrases, `storage:` opens the store.

use crate::common::Agent;
use compact_config::{Config, Overrides};
use compact_core::model::Format;
use compact_session::{open_store, CompactManager, Recovery, RecoveryError, SessionConfig};

const WORDING_ONLY: &str =
    r#"{"error":{"message":"prompt is too long","type":"invalid_request_error"}}"#;

fn config(yaml: &str) -> Config {
    Config::from_sources(
        Some(("compact.yaml", yaml)),
        &Overrides::default(),
        &Overrides::default(),
    )
    .unwrap()
}

#[test]
fn configured_retries_and_phrases_are_effective() {
    let config = config(
        "max_context_tokens: 64000\npolicy:\n  overflow_max_retries: 1\n  manual_trigger_phrases: [\"/squash\"]\nstorage: { kind: memory }\n",
    );
    let session = SessionConfig::from_config(&config);
    assert_eq!(session.overflow_max_retries, 1);
    assert_eq!(session.idle, None, "idle-time compaction is off unless set");
    assert!(!session.redact_summarizer_input);
    let redacting = SessionConfig::from_config(&self::config("redaction: {summarizer: true}\n"));
    assert!(redacting.redact_summarizer_input && redacting.redactor.is_some());
    let idle = SessionConfig::from_config(&self::config("policy:\n  idle_delay_ms: 1500\n"));
    assert_eq!(
        idle.idle.map(|i| i.after),
        Some(std::time::Duration::from_millis(1500))
    );
    assert_eq!(session.trigger_phrases, vec!["/squash".to_owned()]);
    let store = open_store(&config).expect("storage is set").unwrap();
    let manager = CompactManager::open(session, store).unwrap();

    let mut agent = Agent::new(5, Format::OpenAiChat);
    for _ in 0..30 {
        agent.step();
    }
    let prepared = manager.preflight("s", &agent.history).unwrap();
    let retry = match manager
        .recover("s", &prepared.conversation, 400, WORDING_ONLY)
        .unwrap()
    {
        Recovery::Retry(next) => next,
        Recovery::GiveUp(e) => panic!("the first attempt gave up: {e}"),
    };
    match manager.recover("s", &retry, 400, WORDING_ONLY).unwrap() {
        Recovery::GiveUp(RecoveryError::AttemptsExhausted { attempts: 1 }) => {}
        other => panic!("one retry was configured, got {other:?}"),
    }

    // The configured phrase compacts; a default phrase no longer does.
    agent.step();
    agent.user("/compact");
    let default_phrase = manager.preflight("s", &agent.history).unwrap();
    assert!(!default_phrase.report.manual);
    agent.step();
    agent.user("/squash keep the module names");
    let configured = manager.preflight("s", &agent.history).unwrap();
    assert!(configured.report.manual);
    assert!(configured.report.compaction.is_some());
}

#[test]
fn configured_sqlite_storage_is_opened_at_its_path() {
    let dir = std::env::temp_dir().join(format!("compact-session-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sessions.db");
    let config = config(&format!(
        "storage:\n  kind: sqlite\n  path: {}\n",
        path.display()
    ));
    let store = open_store(&config).expect("storage is set").unwrap();
    let manager = CompactManager::open(SessionConfig::from_config(&config), store).unwrap();
    manager
        .preflight("s", &Agent::new(2, Format::Anthropic).history)
        .unwrap();
    drop(manager);
    assert!(path.exists());
    let again = open_store(&config).unwrap().unwrap();
    assert_eq!(again.sessions().unwrap(), vec!["s".to_owned()]);
    assert!(open_store(&self::config("model: gpt-4o\n")).is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "postgres")]
#[test]
fn configured_postgres_storage_is_opened_at_its_url() {
    let Some(url) = crate::services::postgres_schema("config") else {
        return;
    };
    let config = config(&format!("storage:\n  kind: postgres\n  url: \"{url}\"\n"));
    let store = open_store(&config).expect("storage is set").unwrap();
    let manager = CompactManager::open(SessionConfig::from_config(&config), store).unwrap();
    manager
        .preflight("s", &Agent::new(2, Format::Anthropic).history)
        .unwrap();
    drop(manager);
    let again = open_store(&config).unwrap().unwrap();
    assert_eq!(again.sessions().unwrap(), vec!["s".to_owned()]);
}

#[test]
fn configured_redaction_is_effective() {
    use compact_core::model::{Item, Role};
    let history = |text: &str| {
        let mut c = compact_core::model::Conversation::default();
        c.push(Item::text(Role::User, text));
        c
    };
    let logged = |manager: &CompactManager| -> String {
        manager
            .store()
            .read("s", 0)
            .unwrap()
            .iter()
            .map(|r| r.record.to_json().to_string())
            .collect()
    };
    let text = "badge EMP-123456 and key AKIAQ3EGRIV5EXAMPLE7";
    // Default: built-in detectors, plus the file's own pattern.
    let on = config("max_context_tokens: 64000\nredaction:\n  patterns:\n    - {name: employee_id, regex: \"EMP-[0-9]{6}\"}\n");
    let manager = CompactManager::open(
        SessionConfig::from_config(&on),
        std::sync::Arc::new(compact_session::MemoryStore::new()),
    )
    .unwrap();
    manager.preflight("s", &history(text)).unwrap();
    let log = logged(&manager);
    assert!(
        !log.contains("EMP-123456") && !log.contains("AKIAQ3EGRIV5EXAMPLE7"),
        "{log}"
    );
    assert!(log.contains("[REDACTED:employee_id:"), "{log}");
    // Off: logged as received.
    let off = config("max_context_tokens: 64000\nredaction: { enabled: false }\n");
    let session = SessionConfig::from_config(&off);
    assert!(session.redactor.is_none());
    let manager = CompactManager::open(
        session,
        std::sync::Arc::new(compact_session::MemoryStore::new()),
    )
    .unwrap();
    manager.preflight("s", &history(text)).unwrap();
    assert!(logged(&manager).contains("AKIAQ3EGRIV5EXAMPLE7"));
}

#[test]
fn the_configured_archive_opens_and_its_retention_is_read() {
    let dir = std::env::temp_dir().join(format!("compact-config-archive-{}", std::process::id()));
    let yaml = format!(
        "max_context_tokens: 64000\nstorage:\n  kind: memory\n  archive: {{ kind: fs, path: \"{}\", max_age_days: 2, max_bytes: 5000 }}\n",
        dir.display()
    );
    let c = config(&yaml);
    let archive = compact_session::open_archive(&c, &|_| None)
        .expect("an archive is configured")
        .unwrap();
    assert!(archive.list(None).unwrap().is_empty());
    assert!(dir.is_dir());
    let retention = compact_session::archive_retention(&c);
    assert_eq!(
        retention.max_age,
        Some(std::time::Duration::from_secs(2 * 86_400))
    );
    assert_eq!(retention.max_bytes, Some(5000));
    let _ = std::fs::remove_dir_all(&dir);

    // S3 keys come from the variables the file names; a missing one is a typed error naming it.
    let s3 = config(
        "max_context_tokens: 64000\nstorage:\n  kind: memory\n  archive: { kind: s3, endpoint: \"http://127.0.0.1:9\", bucket: b, access_key_env: MY_KEY }\n",
    );
    let err = match compact_session::open_archive(&s3, &|_| None).unwrap() {
        Err(e) => e.to_string(),
        Ok(_) => panic!("opened without keys"),
    };
    assert!(err.contains("MY_KEY"), "{err}");
    assert!(
        compact_session::open_archive(&config("max_context_tokens: 64000\n"), &|_| None).is_none()
    );
}

#[test]
fn configured_telemetry_exports_to_a_jsonl_file_including_a_recovery() {
    let dir = std::env::temp_dir().join(format!("compact-telemetry-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("events.jsonl");
    let config = config(&format!(
        "max_context_tokens: 64000\ntelemetry:\n  exporter: jsonl\n  path: {}\n",
        path.display()
    ));
    let exports = std::sync::Arc::new(
        compact_session::open_exports(&config)
            .expect("telemetry is set")
            .unwrap(),
    );
    let store = std::sync::Arc::new(compact_session::MemoryStore::new());
    let manager = CompactManager::open(SessionConfig::from_config(&config), store)
        .unwrap()
        .with_exports(std::sync::Arc::clone(&exports));
    let mut agent = Agent::new(5, Format::OpenAiChat);
    for _ in 0..30 {
        agent.step();
    }
    let prepared = manager.preflight("s", &agent.history).unwrap();
    let Recovery::Retry(_) = manager
        .recover("s", &prepared.conversation, 400, WORDING_ONLY)
        .unwrap()
    else {
        panic!("the first attempt gave up");
    };
    let usage = compact_session::Usage {
        input_tokens: 30_000,
        ..compact_session::Usage::default()
    };
    manager.record_usage("s", &usage).unwrap();
    // The usage's events are exported once logged: with the next turn, or a flush.
    manager.flush().unwrap();
    assert!(exports.flush(std::time::Duration::from_secs(30)));
    let names: Vec<String> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].to_string())
        .collect();
    for name in [
        "compact.token_estimate",
        "compact.trigger_decision",
        "compact.recovery",
        "compact.overflow_recovered",
    ] {
        assert!(
            names.contains(&format!("\"{name}\"")),
            "{name} in {names:?}"
        );
    }
    assert_eq!(exports.stats().dropped, 0);
    let _ = std::fs::remove_dir_all(dir);
}
