//! Prints what the agent of each transcript sent before each of its model calls, one JSON line per
//! call: `{"file", "call", "format", "request"}` (the request in the provider's wire format, its whole
//! history so far, without a model name or output limit). The Python binding's golden test drives
//! its manager with these lines (python/tests/test_golden.py).
//!
//! `cargo run -p compact-replay --example agent_requests -- [--max-calls N] FILE...`: at most the
//! first N calls of each file (default: all). A file that cannot be read prints one line with
//! `error` in place of `call` and `request`.

use compact_formats::import::ImportMode;
use compact_replay::AgentCalls;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut max_calls = usize::MAX;
    let mut files = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--max-calls" {
            match args.next().and_then(|n| n.parse().ok()) {
                Some(n) => max_calls = n,
                None => {
                    eprintln!("agent_requests: --max-calls takes a number");
                    return ExitCode::from(2);
                }
            }
        } else {
            files.push(arg);
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for file in &files {
        let name = std::path::Path::new(file)
            .file_name()
            .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned());
        let calls = std::fs::read(file)
            .map_err(|e| format!("{file}: {e}"))
            .and_then(|bytes| {
                AgentCalls::load(&bytes, file, ImportMode::Lenient).map_err(|e| e.to_string())
            });
        let lines: Vec<serde_json::Value> = match calls {
            Ok(calls) => (0..calls.len().min(max_calls))
                .filter_map(|k| calls.request(k).map(|r| (k, r)))
                .map(|(k, request)| match request {
                    Ok(request) => json!({"file": name, "call": k,
                        "format": calls.wire_format().name(), "request": request}),
                    Err(e) => json!({"file": name, "call": k, "error": e.to_string()}),
                })
                .collect(),
            Err(e) => vec![json!({"file": name, "error": e})],
        };
        for line in lines {
            if writeln!(out, "{line}").is_err() {
                return ExitCode::FAILURE;
            }
        }
    }
    if out.flush().is_err() {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
