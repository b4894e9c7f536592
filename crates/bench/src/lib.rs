//! Benchmarks that need several of Compact's crates at once live here as examples, so that no
//! library crate takes the others in as dev-dependencies for them:
//!
//! - `cargo run --release -p compact-bench --example cache_warm_bench` — the cache-warm
//!   summariser (compactor and LLM summariser against the simulator; real sessions with files).
//! - `cargo run --release -p compact-bench --example idle_bench` — idle-time compaction through the
//!   session runtime.
