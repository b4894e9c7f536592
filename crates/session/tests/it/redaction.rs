//! Secrets never reach the session log, the archive, the events or the exporters' output (console
//! log lines, the JSONL file): sessions with planted secrets of every kind the built-in redactor
//! knows, driven through preflight (with compactions and write-time truncation) over SQLite and a
//! filesystem archive; then every byte the runtime wrote is searched for every secret. The proxy's
//! log lines and metrics are searched by the proxy's own test of the same secrets.

use crate::common::{manager_with, Agent, Rng};
use crate::planted::planted;
use compact_core::model::{Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_session::{
    ConsoleExporter, ExportQueue, Exporter, FsArchive, JsonlExporter, SqliteStore,
};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// Every file under `dir`, read whole.
fn all_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(all_bytes(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn no_planted_secret_reaches_the_log_the_archive_or_an_event() {
    let dir = std::env::temp_dir().join(format!("compact-redaction-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("archive")).unwrap();
    let store = Arc::new(SqliteStore::open(dir.join("sessions.db")).unwrap());
    let archive = Arc::new(FsArchive::open(dir.join("archive")).unwrap());
    // Log lines (the console exporter, to a file) and the JSONL event file are searched too.
    let console = std::fs::File::create(dir.join("console.log")).unwrap();
    let exporters: Vec<Arc<dyn Exporter>> = vec![
        Arc::new(ConsoleExporter::to(Box::new(console))),
        Arc::new(JsonlExporter::open(&dir.join("events.jsonl"), 1 << 30, 1).unwrap()),
    ];
    let exports = Arc::new(ExportQueue::start(exporters, 1 << 20).unwrap());
    let manager = manager_with(6_000, store)
        .with_archive(archive)
        .with_exports(Arc::clone(&exports));

    let mut rng = Rng::new(2026);
    let mut secrets: Vec<(&str, String)> = Vec::new();
    let mut events_json = String::new();
    let mut compactions = 0;
    // Three sessions (one per wire format) in the test run; `COMPACT_REDACTION_SESSIONS=100` for the
    // full size.
    let sessions: usize = std::env::var("COMPACT_REDACTION_SESSIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    for s in 0..sessions {
        let session = format!("s{s}");
        let format = [
            Format::OpenAiChat,
            Format::Anthropic,
            Format::OpenAiResponses,
        ][s % 3];
        let mut agent = Agent::new(500 + s as u64, format);
        for (k, (kind, text, secret)) in planted(&mut |n| rng.below(n)).into_iter().enumerate() {
            secrets.push((kind, secret));
            agent.step();
            // The secret comes in a user message, a tool call's arguments and a tool output that
            // write-time truncation shortens (its original is logged).
            match k % 3 {
                0 => agent.user(&format!("Use this: {text}")),
                1 => {
                    let id = format!("sec_{k}");
                    agent
                        .history
                        .push(Item::new(ItemBody::ToolCall(ToolCall::function(
                            &id,
                            "bash",
                            json!({"command": format!("echo '{text}' >> .env")}),
                        ))));
                    agent
                        .history
                        .push(Item::new(ItemBody::ToolResult(ToolResult::text(&id, "ok"))));
                }
                _ => {
                    let id = format!("sec_{k}");
                    agent
                        .history
                        .push(Item::new(ItemBody::ToolCall(ToolCall::function(
                            &id,
                            "bash",
                            json!({"command": "env"}),
                        ))));
                    let long: String = (0..400).map(|i| format!("VAR_{i}=value {i}\n")).collect();
                    let output = manager
                        .truncate_tool_output(&session, &id, &format!("{text}\n{long}"))
                        .unwrap_or_else(|_| format!("{text}\n{long}"));
                    agent
                        .history
                        .push(Item::new(ItemBody::ToolResult(ToolResult::text(
                            &id, output,
                        ))));
                }
            }
            agent.history.push(Item::text(Role::Assistant, "Noted."));
            let prepared = manager.preflight(&session, &agent.history).unwrap();
            compactions += usize::from(prepared.report.compaction.is_some());
            for e in &prepared.events {
                events_json.push_str(&e.to_json().to_string());
            }
        }
    }
    assert!(
        compactions >= sessions,
        "only {compactions} compactions: the archive saw too little"
    );
    assert!(exports.flush(std::time::Duration::from_secs(60)));
    assert_eq!(
        exports.stats().dropped,
        0,
        "every event reached the exporters"
    );
    drop(manager);
    drop(exports);

    let files = all_bytes(&dir);
    for name in ["console.log", "events.jsonl"] {
        assert!(
            files
                .iter()
                .any(|(p, b)| p.ends_with(name) && b.len() > 1_000),
            "{name} holds the exported events"
        );
    }
    assert!(
        files.iter().any(|(p, _)| p.contains("archive")),
        "nothing archived"
    );
    // One pass per file over all the secrets at once.
    let needles: Vec<&str> = secrets.iter().map(|(_, s)| s.as_str()).collect();
    let ac = aho_corasick::AhoCorasick::new(&needles).unwrap();
    let mut leaks = Vec::new();
    for (path, bytes) in &files {
        for m in ac.find_overlapping_iter(bytes.as_slice()) {
            leaks.push(format!("{} in {path}", secrets[m.pattern().as_usize()].0));
        }
    }
    for m in ac.find_overlapping_iter(events_json.as_str()) {
        leaks.push(format!("{} in an event", secrets[m.pattern().as_usize()].0));
    }
    assert!(leaks.is_empty(), "{} leaks: {leaks:?}", leaks.len());
    // And the placeholders are there instead.
    let log = &files
        .iter()
        .find(|(p, _)| p.ends_with("sessions.db"))
        .unwrap()
        .1;
    let wal: usize = files
        .iter()
        .filter(|(p, _)| p.contains("sessions.db"))
        .map(|(_, b)| b.len())
        .sum();
    assert!(wal > 0);
    assert!(
        files
            .iter()
            .any(|(_, b)| contains(b, "[REDACTED:aws_access_key:")),
        "no placeholder anywhere ({} bytes of log)",
        log.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A summariser that keeps every text it is given (then writes the deterministic checkpoint).
struct Recording(std::sync::Mutex<String>);

impl compact_engine::Summarizer for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    fn summarize<'a>(
        &'a self,
        request: compact_engine::SummaryRequest<'a>,
    ) -> compact_engine::BoxFuture<
        'a,
        Result<compact_engine::Summary, compact_engine::SummarizeError>,
    > {
        {
            let mut seen = self.0.lock().unwrap();
            for item in request.items {
                seen.push_str(&format!("{item:?}"));
            }
            if let Some(p) = request.previous {
                seen.push_str(&p.text);
            }
            if let Some(prefix) = request.prefix {
                seen.push_str(&format!("{:?}", prefix.items));
            }
        }
        compact_engine::DeterministicSummarizer.summarize(request)
    }
}

/// The texts the summariser saw over a session with planted secrets, with `redact_input` set or not;
/// and the secrets.
fn summariser_saw(redact_input: bool) -> (String, Vec<String>) {
    use compact_core::policy::{Policy, StrategyName};
    let mut rng = Rng::new(77);
    let secrets = planted(&mut |n| rng.below(n));
    let recording = Arc::new(Recording(std::sync::Mutex::new(String::new())));
    let mut policy = Policy::for_window(8_000);
    policy.strategy = StrategyName::Codex;
    let mut config = compact_session::SessionConfig::new(policy, crate::common::counter())
        .with_summarizer(Arc::clone(&recording) as Arc<dyn compact_engine::Summarizer>);
    config.redact_summarizer_input = redact_input;
    let m = compact_session::CompactManager::open(
        config,
        Arc::new(compact_session::MemoryStore::new()),
    )
    .unwrap();
    let mut agent = Agent::new(3, Format::OpenAiChat);
    let mut compactions = 0;
    for step in 0..secrets.len() * 3 + 30 {
        if step % 3 == 0 {
            if let Some((_, text, _)) = secrets.get(step / 3) {
                agent.user(text);
            }
        }
        agent.step();
        let prepared = m.preflight("s", &agent.history).unwrap();
        compactions += usize::from(prepared.report.compaction.is_some());
    }
    assert!(compactions > 0);
    let seen = recording.0.lock().unwrap().clone();
    (seen, secrets.into_iter().map(|(_, _, s)| s).collect())
}

#[test]
fn with_redaction_summarizer_on_the_summariser_never_sees_a_secret() {
    let (seen, secrets) = summariser_saw(true);
    assert!(
        seen.contains("[REDACTED:"),
        "the summariser saw the placeholders"
    );
    for secret in &secrets {
        assert!(
            !seen.contains(secret.as_str()),
            "the summariser saw {secret}"
        );
    }
    // Off (the default), it reads the text as the model does: the same run shows it the secrets.
    let (seen, secrets) = summariser_saw(false);
    assert!(secrets.iter().any(|s| seen.contains(s.as_str())));
}
