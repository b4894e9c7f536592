//! Integration tests of compact-llm (one binary): the overflow classifier table, plan-mode
//! validation, and end-to-end summarisation against the in-process simulator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cache_warm;
mod network;
mod overflow;
mod plan;
mod provider_compaction;
mod summarize;
