//! Compact's one outbound HTTP client: everything Compact sends (the proxy's upstream calls, the LLM
//! summarisers, the S3 archive, OTLP/HTTP export) goes through a [`Client`] built here, so that one
//! set of rules decides how a request leaves the machine.
//!
//! - **Proxies.** `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY` (and their lowercase
//!   forms), read once into a [`ProxyEnv`] by the binary and passed in, or the configuration's
//!   `network.proxy` and `network.no_proxy`, which replace them. An `https` destination is reached
//!   through an HTTP `CONNECT` tunnel, an `http` one by sending the absolute URL to the proxy.
//!   Credentials in the proxy URL (`http://user:pass@proxy:3128`) become `Proxy-Authorization:
//!   Basic`; they never appear in `Debug` output, errors or logs. `NO_PROXY` takes `*`, host names
//!   (matching their subdomains; a leading `.` or `*.` is the same), IP addresses, CIDR ranges and a
//!   `:port` after any of them ([`NoProxy`]).
//! - **Trust.** The system's roots (`rustls-native-certs`; on Linux the bundle OpenSSL would use,
//!   `SSL_CERT_FILE`/`SSL_CERT_DIR` as OpenSSL reads them), the Mozilla roots when the system has
//!   none, and the PEM bundles of `network.ca_file` and `SSL_CERT_FILE` added to them. rustls with
//!   the ring provider, as everywhere in the workspace.
//! - **Protocols.** HTTP/2 when the TLS server offers it (ALPN), HTTP/1.1 otherwise and for plain
//!   `http`. One pool of connections per [`Client`]; clones share it.
//! - **Synchronous callers** (the S3 archive, the OTLP exporter's thread) use a [`BlockingClient`]:
//!   the same client driven by a runtime thread of its own.
//!
//! - **Inbound.** [`server::serve`] is the one accept loop the proxy, the web view and the MCP
//!   server run their hyper services on (graceful, bounded shutdown; accept errors survived).
//!
//! Nothing here reads the environment on its own: [`ProxyEnv::from_process`] is called once by the
//! binary, and tests pass a [`ProxyEnv`] they build, so parallel tests never share settings.
//!
//! ```no_run
//! # async fn demo() -> Result<(), compact_net::NetError> {
//! use compact_net::{Client, NetSettings, ProxyEnv};
//! use std::time::Duration;
//!
//! let env = ProxyEnv::from_vars([("HTTPS_PROXY", "http://proxy.corp:3128"), ("NO_PROXY", ".corp,10.0.0.0/8")]);
//! let client = Client::new(&NetSettings::default(), &env)?;
//! let request = compact_net::http::Request::get("https://api.openai.com/v1/models")
//!     .body(compact_net::Body::default())
//!     .expect("a valid request");
//! let response = client.send(request, Duration::from_secs(30)).await?;
//! println!("{}", response.status());
//! # Ok(()) }
//! ```

mod blocking;
mod client;
mod connect;
mod env;
mod error;
mod no_proxy;
mod proxy;
pub mod server;
mod tls;

pub use blocking::{BlockingClient, Collected};
pub use client::{Client, NetSettings};
pub use env::ProxyEnv;
pub use error::NetError;
pub use no_proxy::NoProxy;
pub use proxy::{ProxyRules, ProxyServer, PROXY_OFF};
pub use tls::RootCounts;

/// The `http` crate's types, as hyper uses them.
pub use hyper::http;
/// The request body every call sends: the whole body, in memory.
pub type Body = http_body_util::Full<bytes::Bytes>;
