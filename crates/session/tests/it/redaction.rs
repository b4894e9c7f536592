//! Secrets never reach the session log, the archive or the events: sessions with planted secrets of
//! every kind the built-in redactor knows, driven through preflight (with compactions and
//! write-time truncation) over SQLite and a filesystem archive; then every byte the runtime wrote
//! is searched for every secret.

use crate::common::{manager_with, Agent, Rng};
use compact_core::model::{Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_session::{FsArchive, SqliteStore};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

/// Random text of `n` characters from `alphabet`.
fn random(rng: &mut Rng, alphabet: &str, n: usize) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    (0..n)
        .map(|_| chars[rng.below(chars.len() as u64) as usize])
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const HEX: &str = "0123456789abcdef";

/// One planted secret of each kind: the text that carries it, and the secret itself.
fn planted(rng: &mut Rng) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    let mut put = |kind: &'static str, secret: String, carrier: &dyn Fn(&str) -> String| {
        let text = carrier(&secret);
        out.push((kind, text, secret));
    };
    let s = format!("MIIEow{}", random(rng, ALNUM, 60));
    put("private_key", s, &|s| {
        format!("-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----")
    });
    put("gcp_private_key_id", random(rng, HEX, 40), &|s| {
        format!(r#"{{"type": "service_account", "private_key_id": "{s}"}}"#)
    });
    put(
        "anthropic_key",
        format!("sk-ant-api03-{}", random(rng, ALNUM, 80)),
        &|s| format!("ANTHROPIC_API_KEY={s}"),
    );
    put(
        "openai_key",
        format!("sk-proj-{}", random(rng, ALNUM, 48)),
        &|s| format!("export OPENAI_API_KEY={s}"),
    );
    put(
        "aws_access_key",
        format!("AKIA{}", random(rng, UPPER_DIGITS, 16)),
        &|s| format!("aws_access_key_id = {s}"),
    );
    put("aws_secret_key", random(rng, ALNUM, 40), &|s| {
        format!("aws_secret_access_key = {s}")
    });
    put(
        "google_api_key",
        format!("AIza{}", random(rng, ALNUM, 35)),
        &|s| format!("key={s}&q=1"),
    );
    put(
        "azure_storage_key",
        format!("{}==", random(rng, ALNUM, 86)),
        &|s| format!("DefaultEndpointsProtocol=https;AccountName=a;AccountKey={s};"),
    );
    put(
        "github_token",
        format!("ghp_{}", random(rng, ALNUM, 36)),
        &|s| format!("GITHUB_TOKEN={s}"),
    );
    put(
        "github_fine_grained_token",
        format!("github_pat_{}", random(rng, ALNUM, 82)),
        &|s| format!("token: {s}"),
    );
    put(
        "gitlab_token",
        format!("glpat-{}", random(rng, ALNUM, 20)),
        &|s| format!("CI_TOKEN {s}"),
    );
    put(
        "slack_token",
        format!("xoxb-{}-{}", random(rng, HEX, 12), random(rng, ALNUM, 24)),
        &|s| format!("slack {s}"),
    );
    put(
        "stripe_key",
        format!("sk_live_{}", random(rng, ALNUM, 24)),
        &|s| format!("stripe.api_key = \"{s}\""),
    );
    put("twilio_key", format!("SK{}", random(rng, HEX, 32)), &|s| {
        format!("twilio {s}")
    });
    put(
        "sendgrid_key",
        format!("SG.{}.{}", random(rng, ALNUM, 22), random(rng, ALNUM, 43)),
        &|s| format!("SENDGRID {s}"),
    );
    put(
        "npm_token",
        format!("npm_{}", random(rng, ALNUM, 36)),
        &|s| format!("//registry.npmjs.org/:_authToken={s}"),
    );
    put(
        "pypi_token",
        format!("pypi-AgEIcHlwaS5vcmc{}", random(rng, ALNUM, 60)),
        &|s| format!("password = {s}"),
    );
    put(
        "huggingface_token",
        format!("hf_{}", random(rng, ALNUM, 34)),
        &|s| format!("HF_TOKEN={s}"),
    );
    put(
        "jwt",
        format!(
            "eyJ{}.eyJ{}.{}",
            random(rng, ALNUM, 20),
            random(rng, ALNUM, 30),
            random(rng, ALNUM, 43)
        ),
        &|s| format!("cookie session={s}"),
    );
    put("bearer_token", random(rng, ALNUM, 32), &|s| {
        format!("curl -H 'Authorization: Bearer {s}' https://api.example.com")
    });
    put(
        "database_url",
        format!("pw{}", random(rng, ALNUM, 14)),
        &|s| format!("DATABASE_URL=postgres://app:{s}@db:5432/app"),
    );
    put(
        "password_assignment",
        format!("{}-{}", random(rng, ALNUM, 8), random(rng, ALNUM, 8)),
        &|s| format!("password={s}"),
    );
    out
}

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
    let manager = manager_with(6_000, store).with_archive(archive);

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
        for (k, (kind, text, secret)) in planted(&mut rng).into_iter().enumerate() {
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
    drop(manager);

    let files = all_bytes(&dir);
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
    let secrets = planted(&mut rng);
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
