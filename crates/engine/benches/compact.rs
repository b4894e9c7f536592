//! Benchmark: `tiered` compaction of the largest corpus file against one cold exact token count of the
//! same file (its whole history, every item visible to the model). Run with
//! `cargo bench -p compact-engine --bench compact`.
//!
//! The compaction is measured the way the engine runs in practice: on a conversation whose per-item
//! counts are already memoised (the proxy and the session log count each item once, when it
//! arrives). It includes normalisation, planning, the deterministic checkpoint, applying the plan and
//! the verifying recount of the result. The cold count is a fresh import's first full count.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::Conversation;
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{block_on, Compactor, DeterministicSummarizer};
use compact_formats::import::{import, ImportMode, ImportOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs per measurement (the median is reported).
const RUNS: usize = 7;
/// The window compacted to: a common 128k model.
const WINDOW: usize = 128_000;

fn largest_corpus_file() -> Option<PathBuf> {
    let root = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus"
    ));
    let mut best: Option<(u64, PathBuf)> = None;
    for dir in std::fs::read_dir(&root).ok()? {
        let dir = dir.ok()?.path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).ok()? {
            let p = f.ok()?.path();
            let len = std::fs::metadata(&p).ok()?.len();
            if best.as_ref().is_none_or(|(l, _)| len > *l) {
                best = Some((len, p));
            }
        }
    }
    best.map(|(_, p)| p)
}

fn load(path: &std::path::Path, bytes: &[u8]) -> Conversation {
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    let options = ImportOptions {
        mode: ImportMode::Lenient,
        ..ImportOptions::default()
    };
    let mut conv = import(bytes, &name, &options).unwrap().conversation;
    // Importers hide earlier sessions of multi-session files from the model; the benchmark compacts
    // the file's whole history as one conversation.
    for item in &mut conv.items {
        item.meta.visibility.model = true;
    }
    conv
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let Some(path) = largest_corpus_file() else {
        println!("corpus not found: skipping the compaction benchmark");
        return;
    };
    let bytes = std::fs::read(&path).unwrap();
    let counter = TokenCounter::new(Encoding::O200kBase);

    let mut cold = Vec::new();
    let mut tokens = 0;
    for _ in 0..RUNS {
        let conv = load(&path, &bytes);
        let t = Instant::now();
        tokens = counter.total(&conv);
        cold.push(t.elapsed());
    }

    let compactor = Compactor::new(
        Policy::for_window(WINDOW),
        Arc::new(DeterministicSummarizer),
        counter,
    )
    .unwrap();
    let conv = load(&path, &bytes);
    counter.total(&conv);
    let mut warm = Vec::new();
    let mut report = None;
    for _ in 0..RUNS {
        let t = Instant::now();
        let done = block_on(compactor.compact(&conv)).unwrap();
        warm.push(t.elapsed());
        report = Some(done.report);
    }
    let report = report.unwrap();
    let (cold, warm) = (median(cold), median(warm));
    println!(
        "file: {} ({} bytes, {} items, {tokens} tokens)",
        path.display(),
        bytes.len(),
        conv.items.len()
    );
    println!(
        "cold exact count (o200k_base): {:.2} ms",
        cold.as_secs_f64() * 1e3
    );
    println!(
        "tiered compaction to a {WINDOW}-token window: {:.2} ms ({} -> {} tokens, tiers {:?})",
        warm.as_secs_f64() * 1e3,
        report.tokens_before,
        report.tokens_after,
        report.tiers_applied
    );
    println!(
        "ratio compaction / cold count: {:.2}",
        warm.as_secs_f64() / cold.as_secs_f64()
    );
}
