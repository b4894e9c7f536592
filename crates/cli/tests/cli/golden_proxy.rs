//! Golden outputs of the proxy on the corpus: `compactctl serve` at a 16k window in front of the
//! provider simulator, driven by each corpus session the way its agent would drive it, and a digest
//! per file of what the simulator received, pinned in `tests/golden/proxy.txt`.
//!
//! Each call sends the agent's whole history so far in the session's provider wire format
//! (`compact_replay::AgentCalls`: Claude Code as Anthropic Messages, Codex as Responses, the other
//! transcripts as Chat Completions), under a session header of its own, with a model the registry
//! does not know (so the window is `--window`'s) and non-streaming. Only the first [`MAX_CALLS`]
//! calls of each session are sent: a whole session's calls resend its history every time, which
//! in a debug build is minutes for the corpus; these calls already compact every long session
//! several times at 16k. The digest of a file covers, in order, the path and the exact bytes of each
//! request the simulator received, and the status each call returned to the agent.
//!
//! The Python binding's golden test (python/tests/test_golden.py) sends the same calls through its
//! manager; both files hold file names and digests only, never corpus text. The two digests differ
//! by design although both hosts run the session runtime: the proxy's digest is of whole requests
//! (model, output limit, tools), and once a session has compacted the proxy declares its
//! `compact_recall` tool, whose tokens count against the window, so its later compactions cut
//! elsewhere; with `--no-recall` the proxy sends exactly the messages the Python manager returns. A refactor must leave
//! every digest as it is; a change meant to alter outputs re-blesses with
//! `COMPACT_BLESS=1 cargo nextest run -p compactctl -E 'test(/golden_proxy/)'` and says why.

use crate::support::{corpus, corpus_files, simulator};
use compact_core::model::Format;
use compact_formats::import::ImportMode;
use compact_replay::AgentCalls;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The proxy's window: small enough that every long session compacts.
const WINDOW: &str = "16000";
/// Calls sent per session (the first ones); the Python golden test sends the same.
pub const MAX_CALLS: usize = 40;
/// The model every call names: one the registry does not know, so `--window` is its window.
pub const MODEL: &str = "compact-golden";
/// The output limit every call asks for.
pub const MAX_OUTPUT: u64 = 1024;

fn golden_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/proxy.txt")
}

/// FNV-1a, 64 bits, fed in pieces (the same digest as golden.rs and python/tests/test_golden.py).
pub struct Fnv(u64);

impl Fnv {
    pub fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub fn feed(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// The request the agent sends: its history with the model and the output limit, and the path.
pub fn agent_request(mut request: Value, format: Format) -> (&'static str, Value) {
    let (path, limit) = match format {
        Format::Anthropic => ("/v1/messages", "max_tokens"),
        Format::OpenAiResponses => ("/v1/responses", "max_output_tokens"),
        _ => ("/v1/chat/completions", "max_tokens"),
    };
    if let Some(map) = request.as_object_mut() {
        map.insert("model".into(), Value::from(MODEL));
        map.insert(limit.into(), Value::from(MAX_OUTPUT));
    }
    (path, request)
}

/// A plain HTTP/1.1 POST of a JSON body; the status of the reply.
fn post(addr: &str, path: &str, session: &str, body: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: proxy\r\nContent-Type: application/json\r\n\
         x-compact-session: {session}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply).unwrap();
    let head = String::from_utf8_lossy(&reply[..reply.len().min(64)]).into_owned();
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP reply: {head}"))
}

/// `compactctl serve` at [`WINDOW`] with an in-memory log, both upstreams at `upstream`, a scratch
/// state directory and no `COMPACT_*` variable of the caller's environment. Killed when dropped.
struct Serve(Child);

impl Serve {
    fn start(upstream: &str) -> (Serve, String) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_compactctl"));
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--store", "memory"])
            .args(["--window", WINDOW])
            .args([
                "--openai-base-url",
                upstream,
                "--anthropic-base-url",
                upstream,
            ])
            .env("RUST_LOG", "warn,compact=info")
            // `serve` also opens `compactctl run`'s store for recall: a scratch one, never the
            // user's own state directory.
            .env("XDG_STATE_HOME", crate::support::scratch_state())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("COMPACT_") {
                cmd.env_remove(key);
            }
        }
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let addr = crate::support::listening_addr(&mut stderr, "golden proxy");
        // Keep reading its log so that the process never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        (Serve(child), addr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every file's digest of what the simulator received through the proxy.
fn digests(files: &[PathBuf]) -> BTreeMap<String, String> {
    let (_rt, sim) = simulator(compact_sim::SimConfig::with_window(1_000_000));
    let (_serve, addr) = Serve::start(&sim.base_url());
    let mut out = BTreeMap::new();
    for (index, file) in files.iter().enumerate() {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(file).unwrap();
        let mut fnv = Fnv::new();
        match AgentCalls::load(&bytes, &file.to_string_lossy(), ImportMode::Lenient) {
            Err(e) => fnv.feed(format!("not loaded: {e}").as_bytes()),
            Ok(calls) => {
                let session = format!("golden-{index:03}");
                sim.clear();
                for k in 0..calls.len().min(MAX_CALLS) {
                    let request = calls.request(k).unwrap().unwrap();
                    let (path, request) = agent_request(request, calls.wire_format());
                    let body = serde_json::to_vec(&request).unwrap();
                    let status = post(&addr, path, &session, &body);
                    fnv.feed(format!("call {k} status {status}\n").as_bytes());
                }
                for received in sim.requests() {
                    assert!(
                        !received.raw.is_empty() || received.body_bytes == 0,
                        "{name}: the simulator kept no bytes of a {}-byte request",
                        received.body_bytes
                    );
                    fnv.feed(format!("{}\n", received.path).as_bytes());
                    fnv.feed(&received.raw);
                    fnv.feed(b"\n");
                }
            }
        }
        out.insert(format!("proxy {name}"), fnv.hex());
    }
    sim.clear();
    out
}

#[test]
fn golden_proxy_outputs_are_unchanged() {
    let Some(dir) = corpus() else { return };
    let files = corpus_files(&dir);
    assert!(!files.is_empty());
    let now = digests(&files);
    crate::golden::compare_or_bless(&golden_path(), &now);
}

#[test]
fn golden_proxy_requests_name_the_model_and_limit() {
    let (path, request) = agent_request(
        serde_json::json!({"messages": [{"role": "user", "content": "hi"}]}),
        Format::OpenAiResponses,
    );
    assert_eq!(path, "/v1/responses");
    assert_eq!(request["model"], MODEL);
    assert_eq!(request["max_output_tokens"], MAX_OUTPUT);
    let mut a = Fnv::new();
    a.feed(b"tokens ");
    a.feed(b"100");
    assert_eq!(a.hex(), crate::golden::digest(b"tokens 100"));
}
