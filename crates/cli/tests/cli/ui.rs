//! `compactctl replay --store --html` and `compactctl ui`: a replay fills a store through the
//! session runtime and writes a self-contained report; `ui` serves the store's pages on 127.0.0.1
//! and stops on SIGTERM.

use crate::support::{fixture, in_dir, run, simulator, temp_dir};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn get(addr: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn replay_fills_a_store_and_writes_a_report_that_ui_serves() {
    let dir = temp_dir("ui");
    let db = in_dir(&dir, "sessions.db");
    let html = in_dir(&dir, "report.html");
    let transcript = fixture("claude-code-long.jsonl");
    let out = run(&[
        "replay",
        &transcript,
        "--window",
        "8000",
        "--store",
        &format!("sqlite:{db}"),
        "--html",
        &html,
    ])
    .ok();
    assert!(
        out.stderr
            .contains("stored session `claude-code-long.jsonl`"),
        "{}",
        out.stderr
    );
    let report = std::fs::read_to_string(&html).unwrap();
    assert!(report.starts_with("<!DOCTYPE html>"));
    assert!(report
        .contains(r#"<meta http-equiv="Content-Security-Policy" content="default-src 'none';"#));
    assert!(report.contains(r#"class="chart sawtooth""#));
    assert!(!report.contains("<script"), "the report runs no script");
    // Nothing is fetched: no source or link points anywhere (the SVG namespace is a name).
    assert!(
        !report.contains("src=") && !report.contains("href="),
        "the report loads nothing"
    );

    let listed = run(&[
        "sessions",
        "list",
        "--json",
        "--store",
        &format!("sqlite:{db}"),
    ])
    .ok();
    assert!(
        listed.stdout.contains("claude-code-long.jsonl"),
        "{}",
        listed.stdout
    );

    let (child, addr) = serve(&db, &[]);
    let list = get(&addr, "/");
    assert!(list.starts_with("HTTP/1.1 200"), "{list}");
    assert!(
        list.contains(r#"href="/s/claude-code-long.jsonl""#),
        "{list}"
    );
    let session = get(&addr, "/s/claude-code-long.jsonl");
    assert!(session.contains(r#"class="chart sawtooth""#), "{session}");
    assert!(get(&addr, "/s/nope").starts_with("HTTP/1.1 404"));
    // A stored session can be reviewed (planned at the window it ran at; nothing applied yet).
    let review = get(&addr, "/s/claude-code-long.jsonl/review");
    assert!(review.starts_with("HTTP/1.1 200"), "{review}");
    assert!(
        review.contains(r#"<form id="review" method="post""#),
        "{review}"
    );
    assert!(get(&addr, "/s/nope/review").starts_with("HTTP/1.1 404"));
    stop(child);
    // `--read-only` serves the pages without the form.
    let (child, addr) = serve(&db, &["--read-only"]);
    assert!(!get(&addr, "/s/claude-code-long.jsonl").contains("review-link"));
    assert!(get(&addr, "/s/claude-code-long.jsonl/review").starts_with("HTTP/1.1 404"));
    stop(child);
}

/// `compactctl ui` over `db` with `extra` arguments, on a free port: the process and its address.
fn serve(db: &str, extra: &[&str]) -> (std::process::Child, String) {
    serve_env(db, extra, &[])
}

/// The same, with `env` set for the process.
fn serve_env(db: &str, extra: &[&str], env: &[(&str, &str)]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_compactctl"))
        .args(["ui", "--store", &format!("sqlite:{db}"), "--port", "0"])
        .args(extra)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{line}"))
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    (child, addr)
}

fn stop(mut child: std::process::Child) {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(child.wait().unwrap().success());
}

#[test]
fn ui_needs_an_existing_store() {
    let out = run(&[
        "ui",
        "--store",
        "sqlite:/nonexistent/compact/ui.db",
        "--port",
        "0",
    ])
    .expect_code(2);
    assert!(out.stderr.contains("no such file"), "{}", out.stderr);
    run(&["ui", "--port", "0"]).expect_code(2);
}

/// A reviewed compaction from `compactctl ui --config` is planned with the configuration's
/// summariser (here the simulated OpenAI model), not the embedded default.
#[test]
fn ui_reviews_with_the_configured_summarizer() {
    let (_rt, sim) = simulator(compact_sim::SimConfig::default());
    let dir = temp_dir("ui-summarizer");
    let db = in_dir(&dir, "sessions.db");
    let transcript = fixture("claude-code-long.jsonl");
    run(&[
        "replay",
        &transcript,
        "--window",
        "8000",
        "--store",
        &format!("sqlite:{db}"),
    ])
    .ok();
    let config = in_dir(&dir, "compact.yaml");
    std::fs::write(
        &config,
        format!(
            "summarizer: {{ kind: openai, model: sim-small, base_url: \"{}\", api_key_env: COMPACT_UI_TEST_KEY }}\n",
            sim.openai_base_url()
        ),
    )
    .unwrap();
    let (child, addr) = serve_env(
        &db,
        &["--config", &config],
        &[("COMPACT_UI_TEST_KEY", "sk-test-ui-0123456789")],
    );
    let review = get(&addr, "/s/claude-code-long.jsonl/review");
    stop(child);
    assert!(review.starts_with("HTTP/1.1 200"), "{review}");
    let planned = review
        .lines()
        .find(|l| l.contains(r#"id="planned""#))
        .unwrap_or_else(|| panic!("{review}"));
    assert!(planned.contains("summariser openai"), "{planned}");
}

/// Without `--bind`, `compactctl ui` listens on 127.0.0.1 only, as its help says (the pages show
/// whole transcripts): the address it prints is 127.0.0.1, and another loopback address of the
/// machine, which a socket on 0.0.0.0 would answer, is refused on its port.
#[test]
fn ui_without_bind_listens_on_127_0_0_1_only() {
    let dir = temp_dir("ui-loopback");
    let db = in_dir(&dir, "sessions.db");
    std::fs::write(&db, b"").unwrap();
    let (child, addr) = serve(&db, &["--read-only"]);
    let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
    let page = get(&addr, "/");
    let elsewhere = TcpStream::connect(("127.0.0.2", port)).map_err(|e| e.kind());
    stop(child);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert_eq!(
        elsewhere.map(|_| ()),
        Err(std::io::ErrorKind::ConnectionRefused)
    );
}
