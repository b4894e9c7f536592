//! Integration tests of the session runtime, one module per concern. Every test drives the public
//! API only; none depends on timing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod annotations;
mod archive;
mod codec_corpus;
mod common;
mod concurrency;
mod config;
mod conflict;
mod errors;
mod exports;
mod held_usage;
mod idle;
mod incremental;
mod log;
mod memory;
mod memory_corpus;
#[cfg(feature = "otlp")]
mod otlp;
mod overflow_e2e;
mod planted;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_tls;
mod provider_state;
mod recovery;
mod redaction;
mod review;
mod services;
mod sqlite;
mod strikes;
