//! The wiring layer on real parts: summarisers built from settings, the store a source names (files
//! in a temporary directory), and the exporters a configuration names, attached to a manager.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_config::{Config, Overrides, SummarizerKind, SummarizerSettings};
use compact_core::model::{Conversation, Format, Item, Role};
use compact_wiring::{Env, Fallback, Parts, StoreSource, WiringError};
use std::path::PathBuf;

fn config(yaml: &str) -> Config {
    Config::from_sources(
        Some(("test.yaml", yaml)),
        &Overrides::default(),
        &Overrides::default(),
    )
    .unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("compact-wiring-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn no_env() -> Env<'static> {
    Env(&|_| None)
}

#[test]
fn every_summarizer_kind_is_built_from_its_settings() {
    let deterministic = compact_wiring::summarizer(&SummarizerSettings::default(), None).unwrap();
    assert_eq!(deterministic.name(), "deterministic");
    for (kind, name) in [
        (SummarizerKind::OpenAi, "openai"),
        (SummarizerKind::Anthropic, "anthropic"),
        // The Python binding could not build this one before it shared this layer.
        (SummarizerKind::AnthropicCompaction, "anthropic-compaction"),
    ] {
        let settings = SummarizerSettings {
            kind,
            // A loopback URL needs no key.
            base_url: Some("http://127.0.0.1:9".into()),
            template: Some("brief".into()),
            ..SummarizerSettings::default()
        };
        let built = compact_wiring::summarizer(&settings, None).unwrap();
        assert_eq!(built.name(), name, "{kind:?}");
    }
}

#[test]
fn inconsistent_summarizer_settings_name_the_setting() {
    let unused = SummarizerSettings {
        model: Some("gpt-4o-mini".into()),
        ..SummarizerSettings::default()
    };
    let e = compact_wiring::summarizer(&unused, None).err().unwrap();
    assert!(matches!(e, WiringError::Summarizer(_)));
    assert!(e.to_string().contains("needs an LLM summarizer"), "{e}");
    let bad_template = SummarizerSettings {
        kind: SummarizerKind::OpenAi,
        base_url: Some("http://127.0.0.1:9".into()),
        template: Some("no-such-template".into()),
        ..SummarizerSettings::default()
    };
    let e = compact_wiring::summarizer(&bad_template, None)
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("summarizer.template:"), "{e}");
}

#[test]
fn a_route_lends_the_top_settings_by_kind() {
    let top = SummarizerSettings {
        kind: SummarizerKind::OpenAi,
        model: Some("small".into()),
        base_url: Some("http://127.0.0.1:9/v1".into()),
        template: Some("brief".into()),
        ..SummarizerSettings::default()
    };
    let same = compact_wiring::route_summarizer_settings(&top, SummarizerKind::OpenAi, "m", "u");
    assert_eq!(same, top);
    let provider = compact_wiring::route_summarizer_settings(
        &top,
        SummarizerKind::AnthropicCompaction,
        "claude-x",
        "http://127.0.0.1:8",
    );
    assert_eq!(provider.model.as_deref(), Some("claude-x"));
    assert_eq!(provider.base_url.as_deref(), Some("http://127.0.0.1:8"));
    assert_eq!(provider.template.as_deref(), Some("brief"));
    let plain =
        compact_wiring::route_summarizer_settings(&top, SummarizerKind::Deterministic, "m", "u");
    assert_eq!(plain.model, None);
    assert_eq!(plain.template, None);
    compact_wiring::summarizer(&plain, None).unwrap();
}

#[test]
fn the_store_comes_from_the_flag_the_configuration_or_the_fallback() {
    let dir = temp_dir("store");
    let none = config("max_context_tokens: 16000\n");
    // A library host: memory when nothing is configured.
    compact_wiring::store(&none, StoreSource::Configured(Fallback::Memory), &no_env()).unwrap();
    // A command that needs one: an error naming what to do.
    let e = compact_wiring::store(
        &none,
        StoreSource::Configured(Fallback::Required),
        &no_env(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("names no `storage`"), "{e}");
    // A server: a SQLite file in the user's state directory, from the environment passed in.
    let state = dir.join("state");
    let state_str = state.to_string_lossy().into_owned();
    let env = move |k: &str| (k == "XDG_STATE_HOME").then(|| state_str.clone());
    compact_wiring::store(
        &none,
        StoreSource::Configured(Fallback::UserState),
        &Env(&env),
    )
    .unwrap();
    assert!(state.join("compact/sessions.db").is_file());
    let e = compact_wiring::store(
        &none,
        StoreSource::Configured(Fallback::UserState),
        &no_env(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("pass --store"), "{e}");
    // The configuration's own storage.
    let db = dir.join("configured.db");
    let configured = config(&format!(
        "storage:\n  kind: sqlite\n  path: {}\n",
        db.display()
    ));
    compact_wiring::store(
        &configured,
        StoreSource::Configured(Fallback::Required),
        &no_env(),
    )
    .unwrap();
    assert!(db.is_file());
    // A flag: memory refused where the log must outlive the command, a missing file not created
    // for a command that only reads.
    let e = compact_wiring::store_at("memory", false, false)
        .err()
        .unwrap();
    assert!(e.to_string().contains("use sqlite:PATH"), "{e}");
    compact_wiring::store_at("memory", true, true).unwrap();
    let missing = format!("sqlite:{}", dir.join("missing.db").display());
    let e = compact_wiring::store_at(&missing, false, false)
        .err()
        .unwrap();
    assert!(e.to_string().contains("cannot open the store"), "{e}");
    compact_wiring::store_at(&missing, true, false).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_parts_of_a_configuration_run_a_manager_that_exports_its_events() {
    let dir = temp_dir("parts");
    let events = dir.join("events.jsonl");
    let yaml = format!(
        "max_context_tokens: 16000\nstorage:\n  kind: sqlite\n  path: {}\n  archive: {{ kind: fs, path: {} }}\ntelemetry:\n  exporter: jsonl\n  path: {}\n",
        dir.join("s.db").display(),
        dir.join("archive").display(),
        events.display()
    );
    let parts = Parts::open(
        &config(&yaml),
        StoreSource::Configured(Fallback::Required),
        &no_env(),
    )
    .unwrap();
    assert!(parts.archive.is_some());
    let exports = parts.exports.clone().expect("telemetry is configured");
    let manager = parts.manager().unwrap();
    let mut conv = Conversation {
        format: Some(Format::OpenAiChat),
        ..Conversation::default()
    };
    conv.push(Item::text(Role::User, "hello"));
    manager.preflight("s1", &conv).unwrap();
    assert!(exports.flush(std::time::Duration::from_secs(10)));
    let text = std::fs::read_to_string(&events).unwrap();
    assert!(
        text.lines()
            .any(|l| l.contains("compact.trigger_decision") && l.contains("s1")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
