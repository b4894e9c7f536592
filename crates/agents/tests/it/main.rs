//! Tests of the agent integrations: hooks on transcripts, settings merged and removed, search and
//! the MCP tools' figures, and the same hooks on the shared corpus.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod corpus;
mod hook;
mod http;
mod install;
mod project;
mod store;
mod support;
mod tools;

#[path = "../../../core/tests/fixtures/corpus.rs"]
mod corpus_dir;
