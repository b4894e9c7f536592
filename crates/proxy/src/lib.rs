//! Compact's compaction proxy: an HTTP server that speaks the OpenAI (Chat Completions,
//! Responses) and Anthropic (Messages) APIs and keeps every conversation that passes through it
//! inside its model's context window. Point an agent's base URL at it (`compactctl serve`); it
//! forwards to the real provider.
//!
//! For each request on `POST /v1/chat/completions`, `/v1/responses` and `/v1/messages` (also
//! without `/v1`, and at Azure OpenAI's paths: [`Route`]) the proxy decodes the request (its body
//! first decoded when it comes with a gzip, deflate, br or zstd `Content-Encoding`, within the
//! body limit) into Compact's conversation model, runs the session runtime's incremental
//! preflight ([`compact_session::CompactManager::preflight`]: the view sent last time is reused
//! byte for byte, so prompt caches keep hitting), encodes the result in the same wire format
//! (unknown fields intact) and forwards it. Replies stream back event by event as they arrive;
//! their usage calibrates the session's counts. A context-overflow reply (any provider's body,
//! including a Responses stream that fails before any output) is recovered transparently: the
//! runtime compacts harder and the proxy resends, at most three times per turn; a hopeless request
//! gets the upstream's error unchanged. Every other path is forwarded untouched
//! (`/v1/messages/count_tokens` included: the upstream counts what it is given).
//!
//! When a request sent upstream names a reference (a compaction's stub, a truncation marker), the
//! proxy offers the model a `compact_recall` tool and answers recall-only replies itself from the
//! session log, sending the request again with the originals, so the client sees one ordinary
//! reply ([`recall`]).
//!
//! A session is named by the `x-compact-session` header, or else fingerprinted from the
//! conversation's opening (system prompt and first user message, text only: [`session_id`]).
//!
//! Operations: `GET /healthz`, `GET /readyz` (503 while draining or when the store is
//! unreachable), `GET /metrics` (Prometheus text: [`metrics`]) and an admin API under `/admin/`
//! behind a bearer token (off without one: [`admin`]). They are never shed: every other request
//! passes [`admission`] first, a bound on the requests worked on at once and on those waiting for
//! a slot, past which a request is answered 503 with `Retry-After` at once.
//!
//! Architecture invariants: the proxy owns no compaction logic (it calls the session runtime) and
//! no configuration source (a [`ProxyConfig`] is resolved by the caller and passed in); headers
//! pass through except hop-by-hop ones, and credentials are forwarded but never logged, stored or
//! echoed ([`headers`], [`log`]); the proxy never answers with a panic: every failure is a JSON
//! error in the shape of the client's provider ([`reply`]).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use compact_core::policy::Policy;
//! use compact_core::tokens::{Encoding, TokenCounter};
//! use compact_proxy::{Proxy, ProxyConfig};
//! use compact_session::{MemoryStore, SessionConfig};
//! use std::sync::Arc;
//!
//! let session = SessionConfig::new(Policy::for_window(200_000), TokenCounter::new(Encoding::O200kBase));
//! let proxy = Proxy::new(ProxyConfig::new(session), Arc::new(MemoryStore::new()))?;
//! let listener = proxy.bind().await?;
//! proxy.serve(listener, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```

pub mod admin;
pub mod admission;
mod compacting;
pub mod config;
mod content_encoding;
mod decoders;
mod error;
mod handler;
pub mod headers;
pub mod log;
pub mod managers;
pub mod metrics;
pub mod recall;
pub mod reply;
pub mod route;
mod server;
pub mod session_id;
mod state;
pub mod stream;
pub mod upstream;
pub mod usage;

pub use config::{
    AdmissionConfig, Backend, KeptOutputs, ModelRoute, ProxyConfig, RecallConfig, Upstream,
};
pub use error::ProxyError;
pub use log::MemoryLog;
pub use metrics::Metrics;
pub use route::{Family, Route};
pub use server::Proxy;
