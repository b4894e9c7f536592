//! [`ProxyError`]: why the proxy could not start or serve.

use crate::upstream::TlsError;
use std::net::SocketAddr;

/// Why the proxy could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The listening socket could not be bound or read.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The TLS client could not be set up.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The session runtime refused the configuration.
    #[error(transparent)]
    Session(#[from] compact_session::SessionError),
}
