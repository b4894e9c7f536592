//! Configuration tests: layering (file < environment < flags), registry lookup, and errors that name
//! the file, line, column, key, variable or field.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_config::{
    env, Config, ConfigError, Overrides, SessionSettings, StorageSettings, SummarizerKind,
};
use compact_core::policy::{Mode, StrategyName, TruncationMode};

fn none() -> Overrides {
    Overrides::default()
}

const SEED_003: &str = r#"
model: "gpt-5-reasoning"
max_context_tokens: 128000
policy:
  trigger_pct: 0.85
  hard_cap_buffer: 1500
  keep_recent_turns: 6
  keep_tool_io_pairs: 4
  roles_never_prune: ["system","developer"]
  protected_flag: "protected"
  strategy: "task_state"
"#;

/// Seed 003's sections: `telemetry` (acted on), the archive adapter (replaced) and redaction.
const SEED_003_NOT_YET: &str = r#"telemetry:
  exporter: "console"
storage:
  adapter: "fs"
  path: "./.compact/archive"
redaction:
  enabled: true
  patterns:
    - "(?i)api[_-]?key\\s*[:=]\\s*\\S+"
"#;

#[test]
fn redaction_is_on_by_default_and_the_seed_s_section_sets_it() {
    let c = Config::from_sources(Some(("seed.yaml", SEED_003)), &none(), &none()).unwrap();
    assert!(c.session().redaction.enabled);
    assert!(c.session().redaction.patterns.is_empty());
    let at = SEED_003_NOT_YET.find("redaction:").unwrap();
    let file = format!("{SEED_003}{}", &SEED_003_NOT_YET[at..]);
    let c = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none()).unwrap();
    assert_eq!(
        c.session().redaction.patterns,
        vec![(
            "custom".to_owned(),
            "(?i)api[_-]?key\\s*[:=]\\s*\\S+".to_owned()
        )]
    );
    let off = format!("{SEED_003}redaction:\n  enabled: false\n  patterns:\n    - {{name: emp, regex: \"EMP-[0-9]+\"}}\n");
    let c = Config::from_sources(Some(("seed.yaml", &off)), &none(), &none()).unwrap();
    assert!(!c.session().redaction.enabled);
    assert_eq!(c.session().redaction.patterns[0].0, "emp");
    // A pattern that does not compile is located.
    let bad = format!("{SEED_003}redaction:\n  patterns:\n    - \"(unclosed\"\n");
    let err = Config::from_sources(Some(("seed.yaml", &bad)), &none(), &none())
        .unwrap_err()
        .to_string();
    let line = SEED_003.lines().count() + 2;
    assert!(err.contains(&format!("seed.yaml:{line}:")), "{err}");
    assert!(err.contains("not a valid regular expression"), "{err}");
}

#[test]
fn seed_003_example_loads() {
    let c = Config::from_sources(Some(("seed.yaml", SEED_003)), &none(), &none()).unwrap();
    let p = c.policy();
    assert_eq!(p.max_context_tokens, 128_000);
    assert_eq!(p.hard_cap_buffer, 1_500);
    assert_eq!(p.strategy, StrategyName::Tiered);
    assert_eq!(c.summarizer().template.as_deref(), Some("task_state"));
    assert_eq!(p.protected_flag, "protected");
}

#[test]
fn keys_that_have_no_effect_yet_are_rejected_by_name_and_line() {
    // Seed 003's archive adapter, after the rest of the seed: the error names the key, its line and
    // why (`storage:` itself is accepted).
    let line = SEED_003.lines().count() + 1;
    let file = format!("{SEED_003}storage:\n  adapter: \"fs\"\n");
    let err = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("seed.yaml:{}:3:", line + 1)),
        "{err}"
    );
    assert!(err.contains("`adapter` has no effect"), "{err}");
    assert!(err.contains("storage.archive"), "{err}");
}

#[test]
fn the_seed_s_telemetry_section_chooses_the_exporter_and_bad_ones_are_located() {
    let at = SEED_003_NOT_YET.find("storage:").unwrap();
    let file = format!("{SEED_003}{}", &SEED_003_NOT_YET[..at]);
    let c = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none()).unwrap();
    let t = c.session().telemetry.clone().expect("telemetry");
    assert_eq!(t.exporter, compact_config::ExporterSettings::Console);
    let jsonl = format!(
        "{SEED_003}telemetry:\n  exporter: jsonl\n  path: /tmp/e.jsonl\n  max_bytes: 1000\n  keep: 2\n  queue: 8\n"
    );
    let c = Config::from_sources(Some(("seed.yaml", &jsonl)), &none(), &none()).unwrap();
    let t = c.session().telemetry.clone().unwrap();
    assert_eq!(
        t.exporter,
        compact_config::ExporterSettings::Jsonl {
            path: "/tmp/e.jsonl".to_owned(),
            max_bytes: Some(1000),
            keep: Some(2)
        }
    );
    assert_eq!(t.queue, Some(8));
    assert!(
        Config::from_sources(Some(("seed.yaml", SEED_003)), &none(), &none())
            .unwrap()
            .session()
            .telemetry
            .is_none()
    );
    let line = SEED_003.lines().count() + 2;
    for (section, why) in [
        ("telemetry:\n  exporter: custom\n", "set in code"),
        ("telemetry:\n  exporter: jsonl\n", "needs `path`"),
        (
            "telemetry:\n  exporter: kafka\n",
            "not one of console, jsonl, otlp, none",
        ),
    ] {
        let file = format!("{SEED_003}{section}");
        let err = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{section}: {err}");
        assert!(
            err.contains(&format!("seed.yaml:{line}:")),
            "{section}: {err}"
        );
    }
    let unknown = format!("{SEED_003}telemetry:\n  exporter: console\n  color: true\n");
    let err = Config::from_sources(Some(("seed.yaml", &unknown)), &none(), &none())
        .unwrap_err()
        .to_string();
    assert!(err.contains("color"), "{err}");
}

#[test]
fn the_archive_is_configured_under_storage_and_misuse_is_located() {
    use compact_config::{ArchiveRetention, ArchiveSettings};
    let yaml = "storage:\n  path: s.db\n  archive: { kind: fs, path: arch, max_age_days: 30, max_bytes: 1000 }\n";
    let c = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none()).unwrap();
    assert_eq!(
        c.session().archive,
        Some(ArchiveSettings::Fs {
            path: "arch".into()
        })
    );
    assert_eq!(
        c.session().archive_retention,
        ArchiveRetention {
            max_age_days: Some(30),
            max_bytes: Some(1000)
        }
    );
    let s3 = "storage:\n  path: s.db\n  archive: { kind: s3, endpoint: \"http://127.0.0.1:9000\", bucket: b }\n";
    let c = Config::from_sources(Some(("c.yaml", s3)), &none(), &none()).unwrap();
    match &c.session().archive {
        Some(ArchiveSettings::S3 {
            region,
            access_key_env,
            path_style,
            ..
        }) => {
            assert_eq!(region, "us-east-1");
            assert_eq!(access_key_env, "AWS_ACCESS_KEY_ID");
            assert!(*path_style);
        }
        other => panic!("{other:?}"),
    }
    for (yaml, at, says) in [
        (
            "storage:\n  path: s.db\n  archive: { kind: tape, path: a }\n",
            "c.yaml:3:",
            "not one of fs, s3",
        ),
        (
            "storage:\n  path: s.db\n  archive: { kind: s3, endpoint: \"http://x\" }\n",
            "c.yaml:3:",
            "needs `bucket`",
        ),
        (
            "storage:\n  path: s.db\n  archive: { kind: fs }\n",
            "c.yaml:3:",
            "needs `path`",
        ),
        (
            "storage:\n  path: s.db\n  archive: { dir: a }\n",
            "c.yaml:",
            "unknown field `dir`",
        ),
    ] {
        let err = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(at), "{yaml}: {err}");
        assert!(err.contains(says), "{yaml}: {err}");
    }
}

#[test]
fn postgres_storage_is_accepted_and_misuse_is_located() {
    use compact_config::StorageSettings;
    let yaml = "storage:\n  kind: postgres\n  url: postgres://compact@127.0.0.1:5432/db\n";
    let c = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none()).unwrap();
    assert_eq!(
        c.session().storage,
        Some(StorageSettings::Postgres {
            url: "postgres://compact@127.0.0.1:5432/db".to_owned()
        })
    );
    for (yaml, at, says) in [
        ("storage:\n  kind: postgres\n", "c.yaml:2:3:", "needs `url"),
        (
            "storage:\n  kind: postgres\n  url: mysql://secret@x/db\n",
            "c.yaml:3:3:",
            "needs `url",
        ),
        (
            "storage:\n  kind: postgres\n  url: postgres://x/db\n  path: s.db\n",
            "c.yaml:4:3:",
            "`storage.path` is for `kind: sqlite`",
        ),
        (
            "storage:\n  path: s.db\n  url: postgres://x/db\n",
            "c.yaml:3:3:",
            "`storage.url` is for `kind: postgres`",
        ),
    ] {
        let err = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(at) && err.contains(says), "{yaml}: {err}");
        // The URL (which may hold a password) is never echoed.
        assert!(!err.contains("secret"), "{err}");
    }
}

#[test]
fn session_settings_are_accepted_and_resolved() {
    let yaml = "policy:\n  overflow_max_retries: 2\n  manual_trigger_phrases: [\"/squash\"]\nstorage: { kind: sqlite, path: ./s.db }\n";
    let c = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none()).unwrap();
    let s = c.session();
    assert_eq!(s.overflow_max_retries, Some(2));
    assert_eq!(s.manual_trigger_phrases, Some(vec!["/squash".to_owned()]));
    assert_eq!(
        s.storage,
        Some(StorageSettings::Sqlite {
            path: "./s.db".into()
        })
    );
    // `kind` defaults to sqlite when a path is given; memory takes no path.
    let c = Config::from_sources(
        Some(("c.yaml", "storage: { path: x.db }\n")),
        &none(),
        &none(),
    )
    .unwrap();
    assert_eq!(
        c.session().storage,
        Some(StorageSettings::Sqlite {
            path: "x.db".into()
        })
    );
    let c = Config::from_sources(
        Some(("c.yaml", "storage:\n  kind: memory\n")),
        &none(),
        &none(),
    )
    .unwrap();
    assert_eq!(c.session().storage, Some(StorageSettings::Memory));
    // Unset: the runtime's defaults.
    let c = Config::from_sources(None, &none(), &none()).unwrap();
    assert_eq!(c.session(), &SessionSettings::default());
    // The environment variable works now, and a flag layer wins over it.
    let env = env::from_vars([("COMPACT_OVERFLOW_MAX_RETRIES", "1")]).unwrap();
    let c = Config::from_sources(Some(("c.yaml", yaml)), &env, &none()).unwrap();
    assert_eq!(c.session().overflow_max_retries, Some(1));
    // Idle-time compaction: off unless set, off at 0, from the file or the environment.
    assert_eq!(c.session().idle_delay_ms, None);
    let idle = "policy:\n  idle_delay_ms: 5000\n";
    let c = Config::from_sources(Some(("c.yaml", idle)), &none(), &none()).unwrap();
    assert_eq!(c.session().idle_delay_ms, Some(5000));
    let env = env::from_vars([("COMPACT_IDLE_DELAY_MS", "0")]).unwrap();
    let c = Config::from_sources(Some(("c.yaml", idle)), &env, &none()).unwrap();
    assert_eq!(c.session().idle_delay_ms, None, "0 turns it off");
}

#[test]
fn bad_session_settings_name_file_line_and_column() {
    for (yaml, at, says) in [
        (
            "policy:\n  trigger_pct: 0.9\n  overflow_max_retries: 11\n",
            "c.yaml:3:3:",
            "at most 10",
        ),
        (
            "policy:\n  overflow_max_retries: -1\n",
            "c.yaml:2:",
            "overflow_max_retries",
        ),
        (
            "policy:\n  overflow_max_retries: lots\n",
            "c.yaml:2:",
            "overflow_max_retries",
        ),
        (
            "policy:\n  manual_trigger_phrases: [\"/c\", \" \"]\n",
            "c.yaml:2:3:",
            "empty phrase",
        ),
        ("storage:\n  kind: floppy\n", "c.yaml:2:", "floppy"),
        (
            "storage:\n  kind: memory\n  path: m.db\n",
            "c.yaml:3:3:",
            "in-memory store has no file",
        ),
        (
            "model: gpt-4o\nstorage: { kind: sqlite }\n",
            "c.yaml:2:1:",
            "needs `path`",
        ),
        ("storage:\n  paht: x.db\n", "c.yaml:2:", "paht"),
    ] {
        let err = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(at), "{yaml}: {err}");
        assert!(err.contains(says), "{yaml}: {err}");
    }
    let err = env::from_vars([("COMPACT_OVERFLOW_MAX_RETRIES", "many")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("COMPACT_OVERFLOW_MAX_RETRIES"), "{err}");
    let env = env::from_vars([("COMPACT_OVERFLOW_MAX_RETRIES", "50")]).unwrap();
    let err = Config::from_sources(None, &env, &none())
        .unwrap_err()
        .to_string();
    assert!(err.contains("policy.overflow_max_retries"), "{err}");
}

#[test]
fn layers_apply_in_order() {
    let file = "policy:\n  trigger_pct: 0.8\n  keep_recent_turns: 5\n  strategy: codex\n";
    let env = env::from_vars([
        ("COMPACT_TRIGGER_PCT", "0.75"),
        ("COMPACT_MODE", "remind"),
        ("PATH", "/bin"),
    ])
    .unwrap();
    let flags = Overrides {
        trigger_pct: Some(0.7),
        ..Overrides::default()
    };
    let c = Config::from_sources(Some(("c.yaml", file)), &env, &flags).unwrap();
    let p = c.policy();
    assert_eq!(p.trigger_pct, 0.7);
    assert_eq!(p.mode, Mode::Remind);
    assert_eq!(p.keep_recent_turns, 5);
    assert_eq!(p.strategy, StrategyName::Codex);
}

#[test]
fn the_reversible_stage_mode_layers_and_bad_names_are_located() {
    use compact_core::policy::ReversibleMode;
    let c = Config::from_sources(None, &none(), &none()).unwrap();
    assert_eq!(c.policy().reversible, ReversibleMode::On);
    let file = "policy:\n  reversible: off\n";
    let c = Config::from_sources(Some(("c.yaml", file)), &none(), &none()).unwrap();
    assert_eq!(c.policy().reversible, ReversibleMode::Off);
    let env = env::from_vars([("COMPACT_REVERSIBLE", "only")]).unwrap();
    let c = Config::from_sources(Some(("c.yaml", file)), &env, &none()).unwrap();
    assert_eq!(c.policy().reversible, ReversibleMode::Only);
    let flags = Overrides {
        reversible: Some("on".into()),
        ..Overrides::default()
    };
    let c = Config::from_sources(Some(("c.yaml", file)), &env, &flags).unwrap();
    assert_eq!(c.policy().reversible, ReversibleMode::On);
    let err = Config::from_sources(
        Some(("c.yaml", "policy:\n  reversible: maybe\n")),
        &none(),
        &none(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("policy.reversible") && err.contains("maybe"),
        "{err}"
    );
}

#[test]
fn model_window_comes_from_the_registry_and_models_section() {
    let c = Config::from_sources(Some(("c.yaml", "model: gpt-4o\n")), &none(), &none()).unwrap();
    assert_eq!(c.policy().max_context_tokens, 128_000);
    assert!(c.model().is_some());
    let file = "model: my-local\nmodels:\n  - { name: my-local, context_window: 32768, max_output_tokens: 4096 }\n";
    let c = Config::from_sources(Some(("c.yaml", file)), &none(), &none()).unwrap();
    assert_eq!(c.policy().max_context_tokens, 32_768);
    assert_eq!(c.policy().reserved_output_tokens, 4_096);
    let err = Config::from_sources(
        Some(("c.yaml", "model: no-such-model-xyz\n")),
        &none(),
        &none(),
    )
    .unwrap_err();
    assert!(matches!(err, ConfigError::UnknownModel(_)), "{err}");
}

#[test]
fn unknown_keys_and_bad_types_name_the_place() {
    let err = Config::from_sources(
        Some((
            "compact.yaml",
            "policy:\n  keep_recent_turns: 3\n  trigger: 0.8\n",
        )),
        &none(),
        &none(),
    )
    .unwrap_err();
    match &err {
        ConfigError::Parse {
            file,
            line,
            message,
            ..
        } => {
            assert_eq!(file, "compact.yaml");
            assert_eq!(*line, 3);
            assert!(message.contains("trigger"), "{message}");
        }
        other => panic!("{other}"),
    }
    let err = Config::from_sources(
        Some(("c.yaml", "policy:\n  trigger_pct: high\n")),
        &none(),
        &none(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("c.yaml:2"), "{err}");
}

#[test]
fn bad_values_name_the_field_or_variable() {
    let err = Config::from_sources(
        Some(("c.yaml", "policy:\n  trigger_pct: 1.5\n")),
        &none(),
        &none(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("trigger_pct") && err.to_string().contains("1.5"),
        "{err}"
    );
    let err = Config::from_sources(
        Some(("c.yaml", "policy:\n  strategy: fifo\n")),
        &none(),
        &none(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("policy.strategy") && err.to_string().contains("fifo"),
        "{err}"
    );
    let err = env::from_vars([("COMPACT_KEEP_RECENT_TURNS", "many")]).unwrap_err();
    assert!(
        err.to_string().contains("COMPACT_KEEP_RECENT_TURNS"),
        "{err}"
    );
    let flags = Overrides {
        summarizer_kind: Some("gemini".into()),
        ..Overrides::default()
    };
    let err = Config::from_sources(None, &none(), &flags).unwrap_err();
    assert!(err.to_string().contains("summarizer.kind"), "{err}");
}

#[test]
fn defaults_without_any_source() {
    let c = Config::from_sources(None, &none(), &none()).unwrap();
    assert_eq!(c.policy(), &compact_core::policy::Policy::default());
    assert_eq!(c.summarizer().kind, SummarizerKind::Deterministic);
    let flags = Overrides {
        tool_output_mode: Some("bytes".into()),
        ..Overrides::default()
    };
    let c = Config::from_sources(None, &none(), &flags).unwrap();
    assert_eq!(c.policy().tool_output.mode, TruncationMode::Bytes);
}

#[test]
fn documented_example_file_resolves() {
    let lib = include_str!("../src/lib.rs");
    let start = lib.find("//! ```yaml\n").unwrap() + "//! ```yaml\n".len();
    let end = start + lib[start..].find("//! ```\n").unwrap();
    let yaml: String = lib[start..end]
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("//! ").unwrap_or("")))
        .collect();
    let c = Config::from_sources(Some(("example.yaml", &yaml)), &none(), &none()).unwrap();
    assert_eq!(c.summarizer().kind, SummarizerKind::OpenAi);
    assert_eq!(c.policy().soft_trigger_pct, Some(0.70));
    assert!(c.registry().lookup("my-local-model").is_some());
}

#[test]
fn a_config_file_that_is_not_utf8_names_the_line_and_column() {
    let dir = std::env::temp_dir().join(format!("compact-config-utf8-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.yaml");
    std::fs::write(&path, b"policy:\n  strategy: tiered\n  note: \"ok \xff\"\n").unwrap();
    match Config::load(Some(&path), &none()) {
        Err(ConfigError::Parse {
            line,
            column,
            message,
            ..
        }) => {
            assert_eq!((line, column), (3, 13), "{message}");
            assert!(
                message.contains("0xff") && message.contains("UTF-8"),
                "{message}"
            );
        }
        other => panic!("expected a positioned error, got {other:?}"),
    }
    // A UTF-16 file is named as such.
    std::fs::write(&path, b"\xff\xfep\x00o\x00").unwrap();
    let err = Config::load(Some(&path), &none()).unwrap_err().to_string();
    assert!(err.contains(":1:1:") && err.contains("UTF-16"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn proxy_settings_layer_and_are_validated() {
    let yaml = "proxy:\n  listen: 127.0.0.1:9000\n  max_body_bytes: 1024\n  upstream_timeout_secs: 5\n  openai: { base_url: \"https://api.openai.com/v1/\", context_window: 64000 }\n  models:\n    - { name: local, base_url: \"http://127.0.0.1:8000\", context_window: 32768 }\n  admin_token_env: MY_TOKEN\n  recall: off\n  recall_max_detours: 2\n";
    let c = Config::from_sources(Some(("p.yaml", yaml)), &none(), &none()).unwrap();
    let p = c.proxy();
    assert_eq!(p.recall, Some(false));
    assert_eq!(p.recall_max_detours, Some(2));
    assert_eq!(p.listen, Some("127.0.0.1:9000".parse().unwrap()));
    assert_eq!(p.max_body_bytes, Some(1024));
    assert_eq!(p.upstream_timeout_secs, Some(5));
    let openai = p.openai.as_ref().unwrap();
    assert_eq!(openai.base_url, "https://api.openai.com/v1");
    assert_eq!(openai.context_window, Some(64_000));
    assert!(p.anthropic.is_none());
    assert_eq!(p.models[0].context_window, Some(32_768));
    assert_eq!(p.admin_token_env.as_deref(), Some("MY_TOKEN"));
    let on = Config::from_sources(Some(("p.yaml", "proxy:\n  recall: on\n")), &none(), &none());
    assert_eq!(on.unwrap().proxy().recall, Some(true));

    // The environment wins over the file.
    let env = env::from_vars([
        ("COMPACT_PROXY_LISTEN", "0.0.0.0:7000"),
        ("COMPACT_PROXY_ANTHROPIC_BASE_URL", "http://127.0.0.1:1"),
    ])
    .unwrap();
    let c = Config::from_sources(Some(("p.yaml", yaml)), &env, &none()).unwrap();
    assert_eq!(c.proxy().listen, Some("0.0.0.0:7000".parse().unwrap()));
    assert_eq!(
        c.proxy().anthropic.as_ref().unwrap().base_url,
        "http://127.0.0.1:1"
    );

    for (bad, names) in [
        ("proxy:\n  listen: nowhere\n", "proxy.listen"),
        (
            "proxy:\n  openai: { base_url: \"ftp://x\" }\n",
            "proxy.openai.base_url",
        ),
        (
            "proxy:\n  models: [ { name: m, base_url: \"http://\" } ]\n",
            "proxy.models.base_url",
        ),
        ("proxy:\n  max_body_bytes: 0\n", "proxy.max_body_bytes"),
        ("proxy:\n  lisen: 127.0.0.1:1\n", "lisen"),
        (
            "proxy:\n  listen: 127.0.0.1:1\n  recall: maybe\n",
            "p.yaml:3:",
        ),
        ("proxy:\n  recal: on\n", "recal"),
    ] {
        let err = Config::from_sources(Some(("p.yaml", bad)), &none(), &none()).unwrap_err();
        assert!(err.to_string().contains(names), "{bad}: {err}");
    }
}

#[test]
fn load_shedding_settings_layer_and_are_validated() {
    use compact_config::InFlightLimit;
    let c = Config::from_sources(None, &none(), &none()).unwrap();
    let p = c.proxy();
    assert_eq!(
        (p.max_in_flight, p.max_queue, p.queue_timeout_ms),
        (None, None, None),
        "unset: the proxy's defaults"
    );
    let yaml = "proxy:\n  max_in_flight: 64\n  max_queue: 8\n  queue_timeout_ms: 250\n";
    let c = Config::from_sources(Some(("p.yaml", yaml)), &none(), &none()).unwrap();
    let p = c.proxy();
    assert_eq!(p.max_in_flight, Some(InFlightLimit::Max(64)));
    assert_eq!((p.max_queue, p.queue_timeout_ms), (Some(8), Some(250)));
    let zero = "proxy:\n  max_in_flight: 0\n  max_queue: 0\n";
    let c = Config::from_sources(Some(("p.yaml", zero)), &none(), &none()).unwrap();
    assert_eq!(
        (c.proxy().max_in_flight, c.proxy().max_queue),
        (None, Some(0)),
        "max_in_flight 0 is the default; max_queue 0 is no queue"
    );
    let off = "proxy:\n  max_in_flight: off\n";
    let c = Config::from_sources(Some(("p.yaml", off)), &none(), &none()).unwrap();
    assert_eq!(c.proxy().max_in_flight, Some(InFlightLimit::Off));

    // The environment wins over the file, and the flags over both.
    let env = env::from_vars([
        ("COMPACT_PROXY_MAX_IN_FLIGHT", "OFF"),
        ("COMPACT_PROXY_MAX_QUEUE", "3"),
        ("COMPACT_PROXY_QUEUE_TIMEOUT_MS", "40"),
    ])
    .unwrap();
    let c = Config::from_sources(Some(("p.yaml", yaml)), &env, &none()).unwrap();
    let p = c.proxy();
    assert_eq!(p.max_in_flight, Some(InFlightLimit::Off));
    assert_eq!((p.max_queue, p.queue_timeout_ms), (Some(3), Some(40)));
    let flags = Overrides {
        proxy_max_in_flight: Some("12".to_owned()),
        proxy_queue_timeout_ms: Some(5),
        ..Overrides::default()
    };
    let c = Config::from_sources(Some(("p.yaml", yaml)), &env, &flags).unwrap();
    let p = c.proxy();
    assert_eq!(p.max_in_flight, Some(InFlightLimit::Max(12)));
    assert_eq!((p.max_queue, p.queue_timeout_ms), (Some(3), Some(5)));

    for (bad, names) in [
        ("proxy:\n  max_in_flight: lots\n", "proxy.max_in_flight"),
        ("proxy:\n  max_in_flight: -1\n", "proxy.max_in_flight"),
        ("proxy:\n  queue_timeout_ms: 0\n", "proxy.queue_timeout_ms"),
        ("proxy:\n  max_queue: -1\n", "p.yaml:2:"),
        ("proxy:\n  max_queu: 1\n", "max_queu"),
    ] {
        let err = Config::from_sources(Some(("p.yaml", bad)), &none(), &none()).unwrap_err();
        assert!(err.to_string().contains(names), "{bad}: {err}");
    }
    for (var, value) in [
        ("COMPACT_PROXY_MAX_QUEUE", "many"),
        ("COMPACT_PROXY_QUEUE_TIMEOUT_MS", "1s"),
    ] {
        let err = env::from_vars([(var, value)]).unwrap_err();
        assert!(err.to_string().contains(var), "{err}");
    }
    let vars = env::from_vars([("COMPACT_PROXY_MAX_IN_FLIGHT", "unbounded")]).unwrap();
    let err = Config::from_sources(None, &vars, &none()).unwrap_err();
    assert!(err.to_string().contains("proxy.max_in_flight"), "{err}");
}

#[test]
fn a_model_route_chooses_its_compaction_backend() {
    let yaml = "summarizer: { kind: deterministic }\nproxy:\n  models:\n    - { name: claude-a, summarizer: anthropic-compaction }\n    - { name: claude-b, context_window: 64000 }\n    - { name: claude-c, summarizer: Deterministic }\n";
    let c = Config::from_sources(Some(("p.yaml", yaml)), &none(), &none()).unwrap();
    let models = &c.proxy().models;
    assert_eq!(
        models[0].summarizer,
        Some(SummarizerKind::AnthropicCompaction)
    );
    assert_eq!(models[1].summarizer, None);
    assert_eq!(models[2].summarizer, Some(SummarizerKind::Deterministic));
    assert_eq!(c.summarizer().kind, SummarizerKind::Deterministic);

    // An unknown backend names the key, the value and the model.
    let bad = "proxy:\n  models:\n    - { name: claude-a, summarizer: provider-magic }\n";
    let err = Config::from_sources(Some(("p.yaml", bad)), &none(), &none())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("proxy.models.summarizer")
            && err.contains("provider-magic")
            && err.contains("claude-a")
            && err.contains("anthropic-compaction"),
        "{err}"
    );
    // A misspelt key is refused at its line.
    let typo = "proxy:\n  models:\n    - { name: claude-a, sumarizer: anthropic-compaction }\n";
    let err = Config::from_sources(Some(("p.yaml", typo)), &none(), &none())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("sumarizer") && err.contains("p.yaml:3:"),
        "{err}"
    );
}

#[test]
fn the_otlp_exporter_takes_a_url_a_protocol_headers_and_a_service_name() {
    let file = format!(
        "{SEED_003}telemetry:\n  exporter: otlp\n  endpoint: http://127.0.0.1:4318\n  protocol: http\n  headers:\n    x-api-key: s3cr3t-value\n  service_name: agent-7\n  timeout_ms: 500\n  queue: 16\n"
    );
    let c = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none()).unwrap();
    let t = c.session().telemetry.clone().expect("telemetry");
    let compact_config::ExporterSettings::Otlp(otlp) = &t.exporter else {
        panic!("not otlp: {:?}", t.exporter)
    };
    assert_eq!(otlp.endpoint.as_deref(), Some("http://127.0.0.1:4318"));
    assert_eq!(otlp.protocol, compact_config::OtlpProtocol::Http);
    assert_eq!(otlp.headers["x-api-key"], "s3cr3t-value");
    assert_eq!(otlp.service_name.as_deref(), Some("agent-7"));
    assert_eq!(otlp.timeout_ms, Some(500));
    assert_eq!(t.queue, Some(16));
    // Header values are secrets: neither the settings' Debug nor the config's shows them.
    let shown = format!("{:?} {:?}", t, c.session());
    assert!(!shown.contains("s3cr3t-value"), "{shown}");
    assert!(shown.contains("x-api-key"), "{shown}");

    // Without `endpoint` the exporter's environment decides (OTEL_EXPORTER_OTLP_ENDPOINT).
    let bare = format!("{SEED_003}telemetry:\n  exporter: otlp\n");
    let c = Config::from_sources(Some(("seed.yaml", &bare)), &none(), &none()).unwrap();
    let t = c.session().telemetry.clone().unwrap();
    assert_eq!(
        t.exporter,
        compact_config::ExporterSettings::Otlp(compact_config::OtlpSettings::default())
    );

    let line = SEED_003.lines().count() + 3;
    for (section, key, why) in [
        ("  endpoint: localhost:4318\n", "endpoint", "must be a URL"),
        (
            "  endpoint: ftp://collector:21\n",
            "endpoint",
            "must be a URL",
        ),
        ("  endpoint: http://:4318\n", "endpoint", "no host"),
        (
            "  endpoint: http://collector:port\n",
            "endpoint",
            "bad port",
        ),
        ("  protocol: thrift\n", "protocol", "not one of http, grpc"),
        (
            "  headers:\n    \"bad name\": s3cr3t-value\n",
            "headers",
            "not a header name",
        ),
        ("  service_name: \"\"\n", "service_name", "is empty"),
        ("  timeout_ms: 0\n", "timeout_ms", "above 0"),
        ("  path: /tmp/e.jsonl\n", "path", "is for `exporter: jsonl`"),
    ] {
        let file = format!("{SEED_003}telemetry:\n  exporter: otlp\n{section}");
        let err = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{section}: {err}");
        assert!(err.contains(key), "{section}: {err}");
        assert!(!err.contains("s3cr3t-value"), "{section}: {err}");
        assert!(
            err.contains(&format!("seed.yaml:{line}:")),
            "{section}: {err}"
        );
    }
    let grpc = format!("{SEED_003}telemetry:\n  exporter: otlp\n  endpoint: http://127.0.0.1:4317\n  protocol: grpc\n");
    let c = Config::from_sources(Some(("seed.yaml", &grpc)), &none(), &none()).unwrap();
    match c.session().telemetry.clone().map(|t| t.exporter) {
        Some(compact_config::ExporterSettings::Otlp(s)) => {
            assert_eq!(s.protocol, compact_config::OtlpProtocol::Grpc)
        }
        other => panic!("{other:?}"),
    }
    // The OTLP keys belong to `exporter: otlp` only.
    let file =
        format!("{SEED_003}telemetry:\n  exporter: console\n  endpoint: http://127.0.0.1:4318\n");
    let err = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none())
        .unwrap_err()
        .to_string();
    assert!(err.contains("is for `exporter: otlp`"), "{err}");
}

#[test]
fn the_memory_section_is_opt_in_and_bad_keys_are_located() {
    let c = Config::from_sources(Some(("seed.yaml", SEED_003)), &none(), &none()).unwrap();
    assert!(c.session().memory.is_none(), "off unless asked for");
    let on = format!(
        "{SEED_003}memory:\n  budget_tokens: 600\n  caps: {{decision: 10, file_state: 5}}\n  min_confidence: 0.5\n  project: shop\n  gate: true\n"
    );
    let c = Config::from_sources(Some(("seed.yaml", &on)), &none(), &none()).unwrap();
    let m = c.session().memory.clone().expect("memory");
    assert_eq!(m.budget_tokens, Some(600));
    assert_eq!(m.caps.get("decision"), Some(&10));
    assert_eq!(m.min_confidence, Some(0.5));
    assert_eq!(m.project.as_deref(), Some("shop"));
    assert!(m.project_store && m.gate);
    let off = format!("{SEED_003}memory:\n  enabled: false\n  budget_tokens: 600\n");
    let c = Config::from_sources(Some(("seed.yaml", &off)), &none(), &none()).unwrap();
    assert!(c.session().memory.is_none());
    let first = SEED_003.lines().count() + 1;
    for (section, line, why) in [
        ("memory:\n  budjet_tokens: 5\n", first + 1, "budjet_tokens"),
        (
            "memory:\n  budget_tokens: 0\n",
            first + 1,
            "must be above 0",
        ),
        ("memory:\n  min_confidence: 1.5\n", first + 1, "0..=1"),
        (
            "memory:\n  caps:\n    decision: 3\n    facts: 2\n",
            first + 3,
            "not a fact kind",
        ),
        ("memory:\n  project: \"  \"\n", first + 1, "is empty"),
    ] {
        let file = format!("{SEED_003}{section}");
        let err = Config::from_sources(Some(("seed.yaml", &file)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(why) && err.contains(&format!("seed.yaml:{line}")),
            "{section}: {err}"
        );
    }
}

#[test]
fn summarizer_cache_warm_from_the_file_and_the_environment() {
    use compact_config::CacheWarmSetting;
    let c = Config::from_sources(None, &none(), &none()).unwrap();
    assert_eq!(c.summarizer().cache_warm, CacheWarmSetting::Auto);
    let file = "summarizer: { kind: openai, cache_warm: always }\n";
    let c = Config::from_sources(Some(("c.yaml", file)), &none(), &none()).unwrap();
    assert_eq!(c.summarizer().cache_warm, CacheWarmSetting::Always);
    let vars = env::from_vars([("COMPACT_SUMMARIZER_CACHE_WARM", "off")]).unwrap();
    let c = Config::from_sources(Some(("c.yaml", file)), &vars, &none()).unwrap();
    assert_eq!(c.summarizer().cache_warm, CacheWarmSetting::Off);
    let vars = env::from_vars([("COMPACT_SUMMARIZER_CACHE_WARM", "sometimes")]).unwrap();
    let err = Config::from_sources(None, &vars, &none()).unwrap_err();
    assert!(err.to_string().contains("summarizer.cache_warm"), "{err}");
}

#[test]
fn the_network_section_sets_proxy_no_proxy_and_ca_file() {
    let yaml = "network:\n  proxy: http://u:p@proxy.corp:3128\n  no_proxy: \"localhost,.corp\"\n  ca_file: /etc/corp/ca.pem\n";
    let config = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none()).unwrap();
    let n = config.network();
    assert_eq!(n.proxy.as_deref(), Some("http://u:p@proxy.corp:3128"));
    assert_eq!(n.no_proxy.as_deref(), Some("localhost,.corp"));
    assert_eq!(
        n.ca_file.as_deref(),
        Some(std::path::Path::new("/etc/corp/ca.pem"))
    );
    let unset = Config::from_sources(None, &none(), &none()).unwrap();
    assert_eq!(*unset.network(), compact_config::NetworkSettings::default());
}

#[test]
fn bad_network_settings_name_the_key_and_line_but_never_the_password() {
    for (yaml, key, line) in [
        (
            "network:\n  proxy: https://u:hunter2@proxy:443\n",
            "proxy",
            2,
        ),
        ("model: gpt-4o\nnetwork:\n  ca_file: \"\"\n", "ca_file", 3),
        ("network:\n  proxy: http://u:hunter2@\n", "proxy", 2),
        ("network:\n  proxy_url: http://p:1\n", "proxy_url", 2),
    ] {
        let e = Config::from_sources(Some(("c.yaml", yaml)), &none(), &none())
            .unwrap_err()
            .to_string();
        assert!(e.contains(&format!("c.yaml:{line}")), "{e}");
        assert!(e.contains(key), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
    }
}
