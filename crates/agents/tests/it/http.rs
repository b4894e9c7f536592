//! The streamable HTTP transport's own guards, at the HTTP level: where it agrees to listen, the
//! request body limit, the bearer token, the endpoint path, and a clean stop.

use crate::support::fixture;
use compact_agents::mcp::http::{serve_http_with_runs, HttpOptions};
use compact_agents::mcp::source::Source;
use compact_agents::AgentsError;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-http-test","version":"1"}}}"#;

#[test]
fn a_non_loopback_address_is_refused_unless_allowed() {
    for addr in ["0.0.0.0:8765", "192.0.2.7:8765", "[::]:8765"] {
        let addr: SocketAddr = addr.parse().unwrap();
        let err = HttpOptions::new(addr).check().unwrap_err();
        assert!(matches!(err, AgentsError::NotLoopback { .. }), "{err}");
        assert!(err.to_string().contains("--allow-remote"), "{err}");
        // Refused before anything is bound or served.
        let served = serve_http_with_runs(
            Source::Transcript(fixture("claude-session.jsonl")),
            None,
            HttpOptions::new(addr),
            |url| panic!("listening at {url}"),
            async {},
        );
        assert!(matches!(served, Err(AgentsError::NotLoopback { .. })));
        let allowed = HttpOptions {
            allow_remote: true,
            ..HttpOptions::new(addr)
        };
        allowed.check().unwrap();
    }
    for addr in ["127.0.0.1:0", "127.3.4.5:9", "[::1]:0"] {
        HttpOptions::new(addr.parse().unwrap()).check().unwrap();
    }
    let empty_token = HttpOptions {
        token: Some(" ".to_owned()),
        ..HttpOptions::new("127.0.0.1:0".parse().unwrap())
    };
    assert!(empty_token.check().is_err());
}

/// A server on a free loopback port, stopped (and checked to stop cleanly) on drop.
struct Running {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), AgentsError>>>,
}

impl Running {
    fn start(options: HttpOptions) -> Running {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            serve_http_with_runs(
                Source::Transcript(fixture("claude-session.jsonl")),
                None,
                options,
                |url| tx.send(url.to_owned()).unwrap(),
                async move {
                    while !flag.load(Ordering::SeqCst) {
                        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    }
                },
            )
        });
        let url = rx.recv().expect("the server did not start");
        let addr = url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap()
            .parse()
            .unwrap();
        Running {
            addr,
            stop,
            thread: Some(thread),
        }
    }

    /// Sends one request and returns the status code and the response's header lines.
    fn request(&self, head: &str, body: &[u8]) -> (u16, Vec<String>) {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        let head = head.replace("{addr}", &self.addr.to_string());
        let request = format!(
            "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        // The server may answer (413) and close before reading a body it refuses.
        let _ = stream.write_all(body);
        let mut reader = BufReader::new(stream);
        let mut status = String::new();
        reader.read_line(&mut status).unwrap();
        let code = status
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {status:?}"));
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line.trim().is_empty() {
                break;
            }
            headers.push(line.trim().to_ascii_lowercase());
        }
        (code, headers)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let stopped = thread.join().expect("the server thread panicked");
            if !std::thread::panicking() {
                stopped.expect("the server did not stop cleanly");
            }
        }
    }
}

const POST: &str = "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream";

#[test]
fn an_oversized_body_is_rejected_and_the_server_keeps_serving() {
    let server = Running::start(HttpOptions {
        max_body_bytes: 64 * 1024,
        ..HttpOptions::new("127.0.0.1:0".parse().unwrap())
    });
    // A JSON-RPC request padded past the limit: 413, not a crash and not a hang.
    let mut big = INITIALIZE.trim_end_matches('}').to_owned();
    big.push_str(&format!(r#","pad":"{}"}}"#, "x".repeat(200 * 1024)));
    let (code, _) = server.request(POST, big.as_bytes());
    assert_eq!(code, 413);
    // The same server still opens a session for a request within the limit.
    let (code, headers) = server.request(POST, INITIALIZE.as_bytes());
    assert_eq!(code, 200, "{headers:?}");
    assert!(
        headers.iter().any(|h| h.starts_with("mcp-session-id:")),
        "{headers:?}"
    );
    // Only /mcp is served, and only for a loopback Host (DNS rebinding).
    let (code, _) = server.request(&POST.replace("/mcp", "/other"), INITIALIZE.as_bytes());
    assert_eq!(code, 404);
    let (code, _) = server.request(
        &POST.replace("Host: {addr}", "Host: attacker.example"),
        INITIALIZE.as_bytes(),
    );
    assert_eq!(code, 403);
}

#[test]
fn a_token_is_required_when_set() {
    let server = Running::start(HttpOptions {
        token: Some("s3cret-token".to_owned()),
        ..HttpOptions::new("127.0.0.1:0".parse().unwrap())
    });
    let (code, headers) = server.request(POST, INITIALIZE.as_bytes());
    assert_eq!(code, 401);
    assert!(
        headers.iter().any(|h| h == "www-authenticate: bearer"),
        "{headers:?}"
    );
    let wrong = format!("{POST}\r\nAuthorization: Bearer s3cret-tokem");
    assert_eq!(server.request(&wrong, INITIALIZE.as_bytes()).0, 401);
    let right = format!("{POST}\r\nAuthorization: Bearer s3cret-token");
    assert_eq!(server.request(&right, INITIALIZE.as_bytes()).0, 200);
}
