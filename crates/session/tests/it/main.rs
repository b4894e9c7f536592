//! Integration tests of the session runtime, one module per concern. Every test drives the public
//! API only; none depends on timing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod concurrency;
mod config;
mod errors;
mod incremental;
mod log;
mod overflow_e2e;
mod recovery;
mod sqlite;
