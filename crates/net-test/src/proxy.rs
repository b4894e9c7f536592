//! [`TestProxy`]: an HTTP proxy on a loopback port (CONNECT tunnels, absolute-form forwarding).

use base64::Engine as _;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

#[derive(Debug, Default)]
struct Counts {
    tunnels: AtomicUsize,
    forwards: AtomicUsize,
    refused: AtomicUsize,
    targets: std::sync::Mutex<Vec<String>>,
    request_lines: std::sync::Mutex<Vec<String>>,
}

/// An HTTP proxy. `CONNECT host:port` opens a tunnel; a request with an absolute URL
/// (`GET http://host:port/path`) is passed on to that host as a real proxy does: in origin form
/// (`GET /path`), without `Proxy-Authorization`, with `Connection: close` (one request per
/// connection, so each is rewritten).
/// With credentials set, anything without the matching `Proxy-Authorization: Basic` gets 407.
/// It stops when dropped.
#[derive(Debug)]
pub struct TestProxy {
    addr: SocketAddr,
    counts: Arc<Counts>,
    task: JoinHandle<()>,
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestProxy {
    /// A proxy on 127.0.0.1; `credentials` (user, password) are demanded when given.
    pub async fn start(credentials: Option<(&str, &str)>) -> io::Result<TestProxy> {
        let expected = credentials.map(|(user, password)| {
            format!(
                "basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
            )
        });
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let counts = Arc::new(Counts::default());
        let task = {
            let counts = Arc::clone(&counts);
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let counts = Arc::clone(&counts);
                    let expected = expected.clone();
                    tokio::spawn(async move {
                        let _ = handle(client, expected.as_deref(), &counts).await;
                    });
                }
            })
        };
        Ok(TestProxy { addr, counts, task })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://USER:PASSWORD@127.0.0.1:PORT`.
    pub fn url_with(&self, user: &str, password: &str) -> String {
        format!("http://{user}:{password}@{}", self.addr)
    }

    /// Tunnels opened.
    pub fn tunnels(&self) -> usize {
        self.counts.tunnels.load(Ordering::SeqCst)
    }

    /// Absolute-form connections passed on.
    pub fn forwards(&self) -> usize {
        self.counts.forwards.load(Ordering::SeqCst)
    }

    /// Requests answered 407.
    pub fn refused(&self) -> usize {
        self.counts.refused.load(Ordering::SeqCst)
    }

    /// The request line of every request received (`CONNECT host:port HTTP/1.1`,
    /// `POST http://host:port/path HTTP/1.1`), in order.
    pub fn request_lines(&self) -> Vec<String> {
        self.counts
            .request_lines
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    /// Every `host:port` a tunnel or a forward went to, in order.
    pub fn targets(&self) -> Vec<String> {
        self.counts
            .targets
            .lock()
            .map(|t| t.clone())
            .unwrap_or_default()
    }
}

async fn handle(mut client: TcpStream, expected: Option<&str>, counts: &Counts) -> io::Result<()> {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() >= MAX_HEAD {
            return Ok(());
        }
        head.push(client.read_u8().await?);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if let Ok(mut seen) = counts.request_lines.lock() {
        seen.push(request_line.to_owned());
    }
    let authorized = match expected {
        None => true,
        Some(expected) => lines.any(|line| {
            line.split_once(':').is_some_and(|(name, value)| {
                name.trim().eq_ignore_ascii_case("proxy-authorization")
                    && value.trim().eq_ignore_ascii_case(expected)
            })
        }),
    };
    if !authorized {
        counts.refused.fetch_add(1, Ordering::SeqCst);
        client
            .write_all(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"test\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .await?;
        return Ok(());
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let Ok(mut upstream) = TcpStream::connect(target).await else {
            client
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                .await?;
            return Ok(());
        };
        counts.tunnels.fetch_add(1, Ordering::SeqCst);
        record(counts, target);
        client
            .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            .await?;
        tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
        return Ok(());
    }
    let Some((authority, path)) = target
        .strip_prefix("http://")
        .map(|rest| match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, "/"),
        })
    else {
        client
            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await?;
        return Ok(());
    };
    let mut upstream = TcpStream::connect(authority).await?;
    counts.forwards.fetch_add(1, Ordering::SeqCst);
    record(counts, authority);
    let version = parts.next().unwrap_or("HTTP/1.1");
    let mut forwarded = format!("{method} {path} {version}\r\n");
    for line in text.split("\r\n").skip(1).filter(|l| !l.is_empty()) {
        let name = line.split(':').next().unwrap_or("").trim();
        if !["proxy-authorization", "proxy-connection", "connection"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            forwarded.push_str(line);
            forwarded.push_str("\r\n");
        }
    }
    forwarded.push_str("Connection: close\r\n\r\n");
    upstream.write_all(forwarded.as_bytes()).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

fn record(counts: &Counts, target: &str) {
    if let Ok(mut targets) = counts.targets.lock() {
        targets.push(target.to_owned());
    }
}
