//! Integration tests of the compaction proxy: the provider simulator and the proxy both run
//! in-process on 127.0.0.1 (port 0), and requests go through real HTTP.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

/// Planted secrets of every kind, shared with the session crate's redaction test.
#[path = "../../../session/tests/it/planted.rs"]
mod planted;

mod backends;
mod boundary;
mod cache_markers;
mod corporate_network;
mod faults;
mod idle;
mod long_session;
mod ops;
mod paths_and_encodings;
mod provider_compaction;
mod provider_state;
mod python;
mod recall;
mod recovery;
mod replicas;
mod requests;
mod shed;
mod subagents;
