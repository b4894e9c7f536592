//! The connector under TLS: a TCP connection to the destination, to the proxy (for an `http`
//! destination, whose requests then go in absolute form), or through the proxy's `CONNECT`
//! tunnel (for an `https` destination, TLS then running inside the tunnel).

use crate::proxy::{ProxyRules, ProxyServer};
use hyper::http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tower_service::Service;

/// The longest proxy answer to `CONNECT` read (status line and headers).
const MAX_CONNECT_ANSWER: usize = 8 * 1024;

/// Why a connection failed, with the proxy involved when there was one.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// Reaching the proxy or its tunnel failed.
    #[error("{message}")]
    Proxy {
        /// The proxy's `host:port`.
        proxy: String,
        /// Why.
        message: String,
    },
    /// Reaching the destination failed.
    #[error("{0}")]
    Direct(String),
}

/// A TCP connection, marked when it goes to a proxy that forwards absolute-form requests.
#[derive(Debug)]
pub(crate) struct Conn {
    io: TokioIo<TcpStream>,
    forwarding_proxy: bool,
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.forwarding_proxy)
    }
}

impl Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }
}

/// Connects directly or through the proxy [`ProxyRules`] pick for each destination.
#[derive(Clone)]
pub(crate) struct ProxyConnector {
    tcp: HttpConnector,
    rules: Arc<ProxyRules>,
}

impl ProxyConnector {
    pub(crate) fn new(rules: Arc<ProxyRules>) -> ProxyConnector {
        let mut tcp = HttpConnector::new();
        // TLS is layered on top: this connector sees https destinations too.
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        ProxyConnector { tcp, rules }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<Conn, ConnectError>> + Send>>;

impl Service<Uri> for ProxyConnector {
    type Response = Conn;
    type Error = ConnectError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.tcp
            .poll_ready(cx)
            .map_err(|e| ConnectError::Direct(crate::error::chain(&e)))
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let mut tcp = self.tcp.clone();
        let proxy = self.rules.proxy_for(&dst).cloned();
        Box::pin(async move {
            let Some(proxy) = proxy else {
                let io = tcp
                    .call(dst)
                    .await
                    .map_err(|e| ConnectError::Direct(crate::error::chain(&e)))?;
                return Ok(Conn {
                    io,
                    forwarding_proxy: false,
                });
            };
            let failed = |message: String| ConnectError::Proxy {
                proxy: proxy.address(),
                message,
            };
            let proxy_uri = proxy.uri().map_err(|e| failed(e.to_string()))?;
            let io = tcp
                .call(proxy_uri)
                .await
                .map_err(|e| failed(format!("cannot connect: {}", crate::error::chain(&e))))?;
            if dst.scheme_str() != Some("https") {
                return Ok(Conn {
                    io,
                    forwarding_proxy: true,
                });
            }
            let host = dst
                .host()
                .ok_or_else(|| failed("the destination has no host".to_owned()))?;
            let port = dst.port_u16().unwrap_or(443);
            let stream = tunnel(io.into_inner(), host, port, &proxy)
                .await
                .map_err(failed)?;
            Ok(Conn {
                io: TokioIo::new(stream),
                forwarding_proxy: false,
            })
        })
    }
}

/// Asks the proxy on `stream` for a tunnel to `host:port`; the stream is the tunnel once the
/// proxy answers 2xx. The error is the proxy's status line, or what went wrong.
async fn tunnel(
    mut stream: TcpStream,
    host: &str,
    port: u16,
    proxy: &ProxyServer,
) -> Result<TcpStream, String> {
    let target = format!("{host}:{port}");
    let mut request =
        format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\nProxy-Connection: Keep-Alive\r\n")
            .into_bytes();
    if let Some(auth) = proxy.authorization() {
        request.extend_from_slice(b"Proxy-Authorization: ");
        request.extend_from_slice(auth.as_bytes());
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"\r\n");
    stream
        .write_all(&request)
        .await
        .map_err(|e| format!("sending CONNECT: {e}"))?;
    // Byte by byte up to the blank line: nothing past the proxy's answer may be consumed (the
    // destination's bytes follow it in the same stream).
    let mut answer = Vec::with_capacity(128);
    while !answer.ends_with(b"\r\n\r\n") {
        if answer.len() >= MAX_CONNECT_ANSWER {
            return Err("the answer to CONNECT is too long".to_owned());
        }
        let byte = stream
            .read_u8()
            .await
            .map_err(|e| format!("reading the answer to CONNECT: {e}"))?;
        answer.push(byte);
    }
    let text = String::from_utf8_lossy(&answer);
    let status_line = text.lines().next().unwrap_or("").trim();
    let code = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok());
    match code {
        Some(200..=299) => Ok(stream),
        Some(407) if proxy.authorization().is_some() => Err(format!(
            "{status_line} (the proxy refused the credentials in its URL)"
        )),
        Some(407) => Err(format!(
            "{status_line} (put the credentials in the proxy URL: http://user:password@host:port)"
        )),
        Some(_) => Err(status_line.to_owned()),
        None => Err(format!("not an HTTP answer: {status_line:?}")),
    }
}
