//! [`NetError`]: why a client could not be built or a request got no answer. Messages name the
//! destination's host (and the proxy's address), never a URL's query or a proxy's credentials.

use std::time::Duration;

/// Why a client could not be built or a request got no response.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// A setting is unusable (a proxy URL, the TLS setup).
    #[error("network settings: {0}")]
    Config(String),
    /// A CA bundle could not be read.
    #[error("the CA bundle {path} ({setting}) cannot be used: {message}")]
    CaFile {
        /// The file.
        path: String,
        /// The setting that named it (`network.ca_file`, `SSL_CERT_FILE`).
        setting: String,
        /// Why.
        message: String,
    },
    /// The request could not be made (its URL has no host, a header is invalid).
    #[error("invalid request: {0}")]
    Request(String),
    /// No response headers within the time allowed.
    #[error("{host} did not answer within {after:?}")]
    Timeout {
        /// The destination's `host:port`.
        host: String,
        /// The time allowed.
        after: Duration,
    },
    /// The proxy could not be reached or refused the tunnel.
    #[error("the proxy {proxy} did not open a tunnel to {host}: {message}")]
    Proxy {
        /// The proxy's `host:port`.
        proxy: String,
        /// The destination's `host:port`.
        host: String,
        /// Why (the proxy's status line, or the connection's error).
        message: String,
    },
    /// The server's certificate is not trusted (or TLS failed otherwise).
    #[error("TLS with {host} failed: {message}")]
    Tls {
        /// The destination's `host:port`.
        host: String,
        /// Why, with a hint about trust settings when the certificate was refused.
        message: String,
    },
    /// Connecting, sending or reading failed, or the connection closed before an answer.
    #[error("{host} could not be reached or closed the connection: {message}")]
    Connect {
        /// The destination's `host:port`.
        host: String,
        /// Why.
        message: String,
    },
}

impl NetError {
    /// A short label for metrics (`config`, `ca_file`, `request`, `timeout`, `proxy`, `tls`,
    /// `connect`).
    pub fn kind(&self) -> &'static str {
        match self {
            NetError::Config(_) => "config",
            NetError::CaFile { .. } => "ca_file",
            NetError::Request(_) => "request",
            NetError::Timeout { .. } => "timeout",
            NetError::Proxy { .. } => "proxy",
            NetError::Tls { .. } => "tls",
            NetError::Connect { .. } => "connect",
        }
    }
}

/// An error and its sources on one line.
pub(crate) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}
