//! `compactctl serve`: the binary starts the proxy on the address asked for, answers health and
//! admin requests, refuses bad settings with exit 2, and stops cleanly on SIGTERM.

use crate::support::run_env;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

/// A plain HTTP/1.1 GET; the whole response as text.
pub(crate) fn get(addr: &str, path: &str, auth: Option<&str>) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: proxy\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn serve_answers_and_stops_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
        .env("XDG_STATE_HOME", crate::support::scratch_state())
        .args([
            "--openai-base-url",
            "http://127.0.0.1:9",
            "--window",
            "32000",
        ])
        .env("COMPACT_ADMIN_TOKEN", "cli-token")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let listening: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(listening["event"], "listening", "{line}");
    assert_eq!(listening["admin_api"], true);
    assert_eq!(listening["recall"], true, "in-band recall is on by default");
    let addr = listening["addr"].as_str().unwrap().to_owned();
    assert!(addr.starts_with("127.0.0.1:"));
    let rest = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });

    let health = get(&addr, "/healthz", None);
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"),
        "{health}"
    );
    assert!(get(&addr, "/admin/sessions", None).starts_with("HTTP/1.1 401"));
    let sessions = get(&addr, "/admin/sessions", Some("cli-token"));
    assert!(
        sessions.starts_with("HTTP/1.1 200") && sessions.contains("{\"sessions\":[]}"),
        "{sessions}"
    );
    // The upstream (port 9) is closed: a clean 502 in the client's provider shape.
    let mut stream = TcpStream::connect(&addr).unwrap();
    let body = r#"{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}"#;
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 502"), "{reply}");
    assert!(reply.contains("\"code\":\"upstream_error\""), "{reply}");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let log = rest.join().unwrap();
    assert!(log.contains("\"event\":\"stopped\""), "{log}");
    assert!(!log.contains("cli-token"), "the admin token is in the log");
}

#[test]
fn serve_refuses_bad_settings() {
    for args in [
        ["serve", "--listen", "nowhere"],
        ["serve", "--openai-base-url", "ftp://example"],
        ["serve", "--store", "redis://x"],
        ["serve", "--max-in-flight", "lots"],
        ["serve", "--queue-timeout-ms", "0"],
    ] {
        let out = run_env(&args, &[]);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    }
}

#[test]
fn serve_logs_to_sqlite_in_the_state_directory_by_default() {
    let state = std::env::temp_dir().join(format!("compact-serve-state-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&state);
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["serve", "--listen", "127.0.0.1:0", "--window", "32000"])
        .args(["--openai-base-url", "http://127.0.0.1:9"])
        .env("XDG_STATE_HOME", &state)
        .env_remove("COMPACT_CONFIG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let addr = crate::support::listening_addr(&mut stderr, "serve");
    assert!(get(&addr, "/healthz", None).starts_with("HTTP/1.1 200"));
    let db = state.join("compact").join("sessions.db");
    assert!(db.is_file(), "{} was not created", db.display());
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&state);
}

/// Starts `compactctl serve` on a free port with an in-memory store and `args`, and stops it once
/// it has written its first line: that `listening` line, parsed, and as written.
fn listening_line(args: &[&str]) -> (serde_json::Value, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
        .env("XDG_STATE_HOME", crate::support::scratch_state())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let listening: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(listening["event"], "listening", "{line}");
    (listening, line)
}

#[test]
fn serve_no_recall_turns_in_band_recall_off() {
    let (listening, line) = listening_line(&["--no-recall"]);
    assert_eq!(listening["recall"], false, "{line}");
}

#[test]
fn serve_takes_the_load_shedding_bounds_from_its_flags() {
    let (listening, line) = listening_line(&[
        "--max-in-flight",
        "3",
        "--max-queue",
        "1",
        "--queue-timeout-ms",
        "250",
    ]);
    assert_eq!(
        (
            &listening["max_in_flight"],
            &listening["max_queue"],
            &listening["queue_timeout_ms"]
        ),
        (
            &serde_json::json!(3),
            &serde_json::json!(1),
            &serde_json::json!(250)
        ),
        "{line}"
    );
    let (listening, line) = listening_line(&["--max-in-flight", "off"]);
    assert!(listening["max_in_flight"].is_null(), "{line}");
    let (listening, line) = listening_line(&["--max-in-flight", "0"]);
    let default = listening["max_in_flight"].as_u64().unwrap_or(0);
    assert!((128..=512).contains(&default), "0 is the default: {line}");
    assert_eq!(listening["max_queue"], default / 4, "{line}");
}

#[test]
fn serve_builds_the_compaction_backend_of_each_model_route() {
    let dir = crate::support::temp_dir("serve-backends");
    let config = crate::support::in_dir(&dir, "proxy.yaml");
    std::fs::write(
        &config,
        "proxy:\n  anthropic: { base_url: \"http://127.0.0.1:9\" }\n  models:\n    - { name: claude-a, summarizer: anthropic-compaction }\n    - { name: claude-b, context_window: 64000 }\n",
    )
    .unwrap();
    let (listening, line) = listening_line(&["--config", &config]);
    assert_eq!(listening["summarizer"], "deterministic", "{line}");
    assert_eq!(
        listening["backends"],
        serde_json::json!({"claude-a": "anthropic-compaction"}),
        "{line}"
    );

    // An unknown backend is a configuration error naming the key and the model.
    std::fs::write(
        &config,
        "proxy:\n  models:\n    - { name: claude-a, summarizer: provider }\n",
    )
    .unwrap();
    let out = run_env(&["serve", "--store", "memory", "--config", &config], &[]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("proxy.models.summarizer") && out.stderr.contains("claude-a"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `RUST_LOG=trace`: the proxy's dependencies log too (the outbound client, the runtime), and still
/// no line holds the client's key, a header value, or a message: the subscriber caps the
/// dependencies whose verbose levels print them (`compact_proxy::log::LEAKY_TARGETS`).
#[test]
fn at_rust_log_trace_dependencies_log_but_no_key_or_message_does() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let sim = runtime
        .block_on(compact_sim::Simulator::spawn(
            compact_sim::SimConfig::default(),
        ))
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
        .env("XDG_STATE_HOME", crate::support::scratch_state())
        .args(["--openai-base-url", &sim.base_url(), "--window", "32000"])
        .env("RUST_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut addr = None;
    let mut early = String::new();
    for _ in 0..10_000 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        early.push_str(&line);
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        if parsed["event"] == "listening" {
            addr = parsed["addr"].as_str().map(str::to_owned);
            break;
        }
    }
    let addr = addr.unwrap_or_else(|| panic!("no listening line: {early}"));
    let rest = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let key = "sk-trace-SECRET-4242";
    let content = "PLANTED-MESSAGE-CONTENT-7731";
    let body = format!(
        r#"{{"model":"sim-model","max_tokens":10,"messages":[{{"role":"user","content":"{content}"}}]}}"#
    );
    let mut stream = TcpStream::connect(&addr).unwrap();
    write!(
        stream,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: proxy\r\nAuthorization: Bearer {key}\r\nX-Custom-Header: {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let upstream = sim.requests();
    assert!(upstream
        .iter()
        .any(|r| r.header("authorization").is_some_and(|v| v.contains(key))));
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
    let log = early + &rest.join().unwrap();
    for line in log.lines() {
        let parsed: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(
            parsed["level"].is_string() && parsed["target"].is_string(),
            "{line}"
        );
    }
    assert!(log.contains("\"event\":\"request\""), "{log}");
    assert!(
        log.lines().any(|l| !l.contains("\"target\":\"compact")),
        "at trace, a dependency logs too: {log}"
    );
    assert!(!log.contains(key), "a log line holds the key");
    assert!(!log.contains(content), "a log line holds the message");
}
