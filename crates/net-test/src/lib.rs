//! Loopback network fixtures for Compact's tests (never for production code):
//!
//! - [`TestCa`]: a private certificate authority made on the spot, its PEM written to a file the
//!   client under test is told to trust (`network.ca_file`), and server certificates it signs for
//!   `localhost` and `127.0.0.1`.
//! - [`TlsServer`]: TLS on a loopback port, either an echo server answering every request with
//!   what it saw (HTTP/1.1, and HTTP/2 when offered over ALPN) or a terminator forwarding the
//!   decrypted bytes to a plain HTTP/1.1 server (the provider simulator, a local S3 server).
//! - [`TestProxy`]: an HTTP proxy that opens `CONNECT` tunnels and forwards absolute-form
//!   requests, counting both, optionally demanding basic credentials (407 otherwise).
//!
//! Everything listens on 127.0.0.1 with a port of its own, so tests run in parallel, and nothing
//! reads or sets the environment.

mod ca;
mod proxy;
mod server;

pub use ca::TestCa;
pub use proxy::TestProxy;
pub use server::{Alpn, Backend, TlsServer};

/// An `std::io::Error` with `message` (the fixtures' one error type).
pub(crate) fn io_error(message: impl std::fmt::Display) -> std::io::Error {
    std::io::Error::other(message.to_string())
}
