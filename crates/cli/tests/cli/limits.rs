//! Hostile inputs: deep nesting, a huge single string, a file of very many tiny records, invalid
//! UTF-8 and NUL bytes. Each is either handled within bounded memory and time or refused with a
//! clear error naming the file (and the place, when there is one) and exit code 2; never a panic.
//! Inputs are generated into a temporary directory. The full-size runs (64 MB string, one million
//! records) with their timings and peak memory are `bench/limits.sh`.

use crate::support::{in_dir, root, run, temp_dir, Out};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Writes `bytes` to `name` in `dir`, returning the path.
fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = in_dir(dir, name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Checks a refusal: exit 2, one error line naming `file` and containing each of `needles`.
fn refused(out: Out, file: &str, needles: &[&str]) -> Out {
    let out = out.expect_code(2);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert!(
        out.stderr.starts_with("compactctl: error: "),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(file), "no {file} in: {}", out.stderr);
    for needle in needles {
        assert!(
            out.stderr.contains(needle),
            "no {needle:?} in: {}",
            out.stderr
        );
    }
    out
}

/// Runs the binary with its address space limited to `limit_mb` megabytes (`ulimit -v`): an
/// allocation beyond it fails, and the run with it.
fn run_within(limit_mb: u64, args: &[&str]) -> (Out, Duration) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"ulimit -v "$1" && shift && exec "$@""#)
        .arg("sh")
        .arg((limit_mb * 1024).to_string())
        .arg(env!("CARGO_BIN_EXE_compactctl"))
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("COMPACT_") {
            cmd.env_remove(key);
        }
    }
    let start = Instant::now();
    let output = cmd.output().expect("running compactctl under sh");
    let out = Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    (out, start.elapsed())
}

// ---- Nesting depth ----------------------------------------------------------------------------------

/// `depth` nested arrays around `inner`.
fn nested(depth: usize, inner: &str) -> String {
    format!("{}{inner}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn deep_nesting_is_refused_at_the_depth_limit_with_its_place() {
    let dir = temp_dir("limits-deep");
    let depth = 100_000;
    let request = format!(
        r#"{{"messages":[{{"role":"user","content":{}}}]}}"#,
        nested(depth, "1")
    );
    let doc = write(&dir, "deep.json", request.as_bytes());
    let jsonl = write(
        &dir,
        "deep.jsonl",
        format!(
            "{{\"role\":\"user\",\"content\":\"hi\"}}\n{{\"role\":\"user\",\"content\":{}}}\n",
            nested(depth, "\"x\"")
        )
        .as_bytes(),
    );
    // serde_json's limit is 128 levels: the error names the byte where the 128th level opens.
    for args in [
        vec!["inspect", doc.as_str()],
        vec!["inspect", doc.as_str(), "--format", "openai-chat"],
        vec!["compact", doc.as_str(), "--window", "8000"],
    ] {
        refused(run(&args), "deep.json:1:", &["recursion limit exceeded"]);
    }
    for format in [
        &[][..],
        &["--format", "openai-chat"],
        &["--format", "anthropic"],
    ] {
        let mut args = vec!["inspect", jsonl.as_str()];
        args.extend_from_slice(format);
        refused(run(&args), "deep.jsonl:2:", &["recursion limit exceeded"]);
    }
    // Lenient: the deep record is skipped with a warning, the rest imports.
    let out = run(&["inspect", &jsonl, "--format", "openai-chat", "--lenient"]).ok();
    assert!(out.stderr.contains("deep.jsonl:2:"), "{}", out.stderr);
    // The configuration file: YAML nesting is refused the same way.
    let yaml = write(
        &dir,
        "deep.yaml",
        format!("redaction:\n  patterns: {}\n", nested(10_000, "")).as_bytes(),
    );
    let session = root().join("examples/session.json");
    refused(
        run(&[
            "compact",
            session.to_str().unwrap(),
            "--window",
            "8000",
            "--config",
            &yaml,
        ]),
        "deep.yaml",
        &[],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- A huge single string ---------------------------------------------------------------------------

/// A chat request whose user message is `mb` megabytes of prose.
fn huge_request(mb: usize) -> Vec<u8> {
    let sentence = "lorem ipsum dolor sit amet, consectetur adipiscing elit 12345 ";
    let text = sentence.repeat((mb << 20) / sentence.len());
    format!(
        r#"{{"messages":[{{"role":"system","content":"You are helpful."}},{{"role":"user","content":"{text}"}}]}}"#
    )
    .into_bytes()
}

#[cfg(unix)]
#[test]
fn a_64_mb_string_is_read_within_bounded_memory() {
    let dir = temp_dir("limits-string");
    let file = write(&dir, "huge.json", &huge_request(64));
    // Reading, counting and listing it: about 4x the input at the peak (bench/limits.sh).
    let (out, took) = run_within(1_536, &["inspect", &file, "--json"]);
    let report = out.ok().json();
    assert_eq!(report["items"], 2);
    assert!(report["tokens"]["total"].as_u64().unwrap() > 10_000_000);
    assert!(took < Duration::from_secs(60), "{took:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn a_huge_string_is_truncated_to_fit_within_bounded_memory() {
    let dir = temp_dir("limits-string-compact");
    let file = write(&dir, "big.json", &huge_request(4));
    let out_file = in_dir(&dir, "out.json");
    let (out, took) = run_within(
        1_024,
        &[
            "compact",
            &file,
            "--window",
            "8000",
            "-o",
            &out_file,
            "--report-json",
            "-",
        ],
    );
    let report = out.ok().json();
    assert!(report["tokens_after"].as_u64().unwrap() < 8_000, "{report}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    let sent: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(sent["messages"][1]["role"], "user");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- Very many tiny records ------------------------------------------------------------------------

/// `n` tiny Chat messages, one per JSONL line, users and assistants alternating.
fn tiny_records(n: usize) -> Vec<u8> {
    let mut out = String::with_capacity(n * 40);
    for i in 0..n {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        out.push_str(&format!("{{\"role\":\"{role}\",\"content\":\"m{i}\"}}\n"));
    }
    out.into_bytes()
}

#[cfg(unix)]
#[test]
fn a_hundred_thousand_tiny_records_compact_in_linear_time() {
    // One million take about 20 s and 3.3 GB (bench/limits.sh); a tenth of them here.
    let dir = temp_dir("limits-records");
    let file = write(&dir, "tiny.jsonl", &tiny_records(100_000));
    let out_file = in_dir(&dir, "out.json");
    for strategy in ["tiered", "cfpm"] {
        let (out, took) = run_within(
            2_048,
            &[
                "compact",
                &file,
                "--window",
                "8000",
                "--strategy",
                strategy,
                "-o",
                &out_file,
                "--report-json",
                "-",
            ],
        );
        let report = out.ok().json();
        assert_eq!(report["items_before"], 100_000, "{report}");
        // Quadratic work on 100k items (the checkpoint's covered ids, merged entries and request
        // statuses, cfpm's entries) took minutes; linear takes seconds.
        assert!(took < Duration::from_secs(60), "{strategy}: {took:?}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_trajectory_of_many_tiny_steps_imports_in_linear_time() {
    // ATIF is one JSON document: each step's location was found by scanning the file from its
    // start (quadratic: 100k steps took minutes); it is now one forward pass.
    let dir = temp_dir("limits-atif");
    let steps: Vec<String> = (0..100_000)
        .map(|i| {
            let source = if i % 2 == 0 { "user" } else { "agent" };
            format!(
                r#"{{"step_id":{},"source":"{source}","message":"m{i}"}}"#,
                i + 1
            )
        })
        .collect();
    let doc = format!(
        r#"{{"schema_version":"ATIF-v1.2","session_id":"s","agent":{{"name":"a","version":"1"}},"steps":[{}]}}"#,
        steps.join(",\n")
    );
    let file = write(&dir, "trajectory.json", doc.as_bytes());
    let start = Instant::now();
    let report = run(&["inspect", &file, "--json"]).ok().json();
    assert_eq!(report["format"], "atif");
    assert_eq!(report["items"], 100_000);
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn more_than_a_million_records_are_refused_before_parsing() {
    let dir = temp_dir("limits-many");
    let file = write(&dir, "many.jsonl", &b"{}\n".repeat(1_000_001));
    let start = Instant::now();
    refused(
        run(&["inspect", &file]),
        "many.jsonl",
        &["1000001 JSONL records, more than the 1000000"],
    );
    refused(
        run(&["compact", &file, "--window", "8000"]),
        "many.jsonl",
        &["more than the 1000000"],
    );
    assert!(start.elapsed() < Duration::from_secs(20));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- Invalid UTF-8 ----------------------------------------------------------------------------------

#[test]
fn invalid_utf8_is_refused_with_its_place() {
    let dir = temp_dir("limits-utf8");
    // Inside a JSON string of a request, of a JSONL record, and of a transcript.
    let doc = write(
        &dir,
        "bad.json",
        b"{\"messages\":[{\"role\":\"user\",\"content\":\"caf\xc3 ok\"}]}",
    );
    refused(
        run(&["inspect", &doc]),
        "bad.json:1:43 (byte offset 42)",
        &["invalid UTF-8 (byte 0xC3)"],
    );
    let jsonl = write(
        &dir,
        "bad.jsonl",
        b"{\"role\":\"user\",\"content\":\"ok\"}\n{\"role\":\"assistant\",\"content\":\"\xff\"}\n",
    );
    refused(
        run(&["compact", &jsonl, "--window", "8000"]),
        "bad.jsonl:2:32 (byte offset 62)",
        &["invalid unicode code point"],
    );
    // Lenient: that record is skipped with a warning naming it.
    let out = run(&["inspect", &jsonl, "--lenient", "--json"]).ok();
    assert!(out.stderr.contains("bad.jsonl:2:"), "{}", out.stderr);
    assert_eq!(out.json()["items"], 1);
    // Raw bytes: a UTF-16 file, binary garbage, a Markdown (aider) history.
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain("{\"messages\":[]}".bytes().flat_map(|b| [b, 0]))
        .collect();
    let utf16 = write(&dir, "utf16.json", &utf16);
    refused(run(&["inspect", &utf16]), "utf16.json", &["UTF-16"]);
    let garbage = write(&dir, "garbage.bin", b"\x81\x82\x83 not text");
    refused(
        run(&["inspect", &garbage]),
        "garbage.bin:1:1 (byte offset 0)",
        &["invalid UTF-8 (byte 0x81)"],
    );
    let md = write(
        &dir,
        "chat.history.md",
        b"# aider chat started at 2025-01-01 10:00:00\n\n#### hello\n\nworld \xff\n",
    );
    refused(
        run(&["inspect", &md]),
        "chat.history.md:5:7",
        &["invalid UTF-8"],
    );
    // `count` counts UTF-8 text: invalid bytes are refused, not replaced.
    let text = write(&dir, "bad.txt", b"hello\nw\xf0\x28rld\n");
    refused(
        run(&["count", &text]),
        "bad.txt:2:2 (byte offset 7)",
        &["invalid UTF-8 (byte 0xF0)"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---- NUL bytes --------------------------------------------------------------------------------------

#[test]
fn nul_bytes_are_refused_raw_and_carried_escaped() {
    let dir = temp_dir("limits-nul");
    // A raw NUL inside a JSON string (a control character JSON forbids): refused as binary data, at
    // its place, whatever the format.
    let raw = write(
        &dir,
        "raw.json",
        b"{\"messages\":[{\"role\":\"user\",\n\"content\":\"a\x00b\"}]}",
    );
    refused(
        run(&["inspect", &raw]),
        "raw.json:2:13 (byte offset 41)",
        &["binary data (a NUL byte)"],
    );
    // After a document, and as a whole binary file.
    let trailing = write(
        &dir,
        "trailing.json",
        b"{\"messages\":[{\"role\":\"user\",\"content\":\"ab\"}]}\x00\x00",
    );
    refused(
        run(&["inspect", &trailing]),
        "trailing.json:1:",
        &["NUL byte"],
    );
    let binary = write(&dir, "zeros.bin", &[0u8; 4096]);
    refused(
        run(&["inspect", &binary]),
        "zeros.bin:1:1 (byte offset 0)",
        &["binary data (a NUL byte)"],
    );
    // Escaped (`\u0000`) it is valid JSON: carried through, never printed raw.
    let escaped = write(
        &dir,
        "escaped.json",
        br#"{"messages":[{"role":"user","content":"a\u0000b\u001b[31m"}]}"#,
    );
    let out = run(&["inspect", &escaped]).ok();
    assert!(
        !out.stdout.contains('\0') && !out.stdout.contains('\u{1b}'),
        "{:?}",
        out.stdout
    );
    let out_file = in_dir(&dir, "out.json");
    run(&["compact", &escaped, "--window", "8000", "-o", &out_file]).ok();
    let sent: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(sent["messages"][0]["content"], "a\u{0}b\u{1b}[31m");
    std::fs::remove_dir_all(&dir).unwrap();
}
