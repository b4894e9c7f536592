//! Token counting benchmarks (`cargo bench -p compact-core --bench tokens`; plain `std::time`, no
//! framework): exact-count throughput side by side with tiktoken-rs (whole mixed corpus, then per
//! content type), the estimator's speed, and the cost of recounting a 200k-token conversation after
//! appending one 1k-token message. Figures and their reading: BENCHMARKS.md.
//!
//! Throughput is reported per core: each figure is the best of several passes, timed both by wall
//! clock and by the thread's own CPU time (`/proc/thread-self/schedstat` on Linux), because a
//! loaded machine stretches wall time without changing the work done.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use compact_core::model::{Conversation, Item, Role};
use compact_core::tokens::{clear_piece_cache, estimate_tokens, Encoding, TokenCounter};
use std::hint::black_box;
use std::time::Instant;

/// Passes per throughput measurement (best one is reported).
const PASSES: usize = 5;
/// Target size of the conversation for the incremental benchmark, in tokens.
const CONVERSATION_TOKENS: usize = 200_000;
/// Size of each conversation item's text, in bytes (about 1k tokens of mixed text).
const ITEM_BYTES: usize = 4_000;
/// Repetitions of the incremental measurement.
const RECOUNTS: usize = 20;

/// Thread CPU time in seconds, when the OS exposes it.
fn cpu_now() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = s.split_whitespace().next()?.parse().ok()?;
    Some(ns / 1e9)
}

/// Runs `f` once; returns (wall seconds, CPU seconds or wall when unavailable).
fn time<R>(mut f: impl FnMut() -> R) -> (f64, f64, R) {
    let c0 = cpu_now();
    let t0 = Instant::now();
    let r = black_box(f());
    let wall = t0.elapsed().as_secs_f64();
    let cpu = match (c0, cpu_now()) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => wall,
    };
    (wall, cpu, r)
}

/// Best (wall, cpu) over `PASSES` runs of `f`, with `setup` before each (not timed).
fn best<R: PartialEq + std::fmt::Debug>(
    mut setup: impl FnMut(),
    mut f: impl FnMut() -> R,
) -> (f64, f64, R) {
    let (mut bw, mut bc, mut out) = (f64::MAX, f64::MAX, None);
    for _ in 0..PASSES {
        setup();
        let (w, c, r) = time(&mut f);
        bw = bw.min(w);
        bc = bc.min(c);
        if let Some(prev) = &out {
            assert_eq!(prev, &r, "passes disagree");
        }
        out = Some(r);
    }
    (bw, bc, out.unwrap())
}

fn fixtures() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens/");
    ["prose", "code", "json", "shell", "cjk"]
        .iter()
        .map(|n| {
            (
                (*n).to_owned(),
                std::fs::read_to_string(format!("{dir}{n}.txt")).unwrap(),
            )
        })
        .collect()
}

/// The shared transcript corpus (aider markdown, Codex/OpenHands JSONL, SWE-agent trajectories), if present.
fn corpus() -> Option<Vec<String>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    (!texts.is_empty()).then_some(texts)
}

fn mbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / secs / 1e6
}

fn throughput(label: &str, texts: &[String]) {
    let bytes: usize = texts.iter().map(String::len).sum();
    println!(
        "\n## Exact counting: {label} ({:.2} MB, {} texts)",
        bytes as f64 / 1e6,
        texts.len()
    );
    println!(
        "{:<8} {:<34} {:>10} {:>12} {:>12}",
        "enc", "counter", "tokens", "MB/s (cpu)", "MB/s (wall)"
    );
    let tik = [
        (Encoding::O200kBase, tiktoken_rs::o200k_base_singleton()),
        (Encoding::Cl100kBase, tiktoken_rs::cl100k_base_singleton()),
    ];
    for (enc, tk) in tik {
        // Warm-up: load both vocabularies outside the timed region.
        enc.count("warm up");
        tk.encode_ordinary("warm up");
        let (ow, oc, ours) = best(clear_piece_cache, || {
            texts.iter().map(|t| enc.count(t)).sum::<usize>()
        });
        let (uw, uc, plain) = best(
            || {},
            || texts.iter().map(|t| enc.count_uncached(t)).sum::<usize>(),
        );
        let (tw, tc, theirs) = best(
            || {},
            || {
                texts
                    .iter()
                    .map(|t| tk.encode_ordinary(t).len())
                    .sum::<usize>()
            },
        );
        assert_eq!(ours, theirs, "{enc}: counts differ from tiktoken-rs");
        assert_eq!(
            plain, theirs,
            "{enc}: uncached counts differ from tiktoken-rs"
        );
        let rows = [
            ("compact (cold piece cache)", ours, oc, ow),
            ("bpe-openai (no cache)", plain, uc, uw),
            ("tiktoken-rs encode_ordinary", theirs, tc, tw),
        ];
        for (name, n, c, w) in rows {
            println!(
                "{:<8} {:<34} {:>10} {:>12.1} {:>12.1}",
                enc.name(),
                name,
                n,
                mbps(bytes, c),
                mbps(bytes, w)
            );
        }
        println!(
            "{:<8} speed-up vs tiktoken-rs: {:.2}x (cpu), {:.2}x (wall)",
            enc.name(),
            tc / oc,
            tw / ow
        );
    }
}

/// Passes over each small fixture in the per-type table (each pass starts with an empty cache).
const FIXTURE_PASSES: usize = 200;

/// Per content type: each ~4 KB fixture counted cold (empty piece cache) many times.
fn per_type(fixtures: &[(String, String)]) {
    println!("\n## Exact counting per content type (o200k_base; one fixture, cold piece cache every pass)");
    println!(
        "{:<8} {:>8} {:>16} {:>16} {:>16}",
        "type", "tokens", "compact MB/s", "no cache MB/s", "tiktoken MB/s"
    );
    let tk = tiktoken_rs::o200k_base_singleton();
    let enc = Encoding::O200kBase;
    for (name, text) in fixtures {
        let bytes = text.len() * FIXTURE_PASSES;
        let (_, oc, n) = time(|| {
            (0..FIXTURE_PASSES)
                .map(|_| {
                    clear_piece_cache();
                    enc.count(text)
                })
                .sum::<usize>()
        });
        let (_, uc, _) = time(|| {
            (0..FIXTURE_PASSES)
                .map(|_| enc.count_uncached(text))
                .sum::<usize>()
        });
        let (_, tc, m) = time(|| {
            (0..FIXTURE_PASSES)
                .map(|_| tk.encode_ordinary(text).len())
                .sum::<usize>()
        });
        assert_eq!(n, m, "{name}: counts differ from tiktoken-rs");
        println!(
            "{:<8} {:>8} {:>16.1} {:>16.1} {:>16.1}",
            name,
            n / FIXTURE_PASSES,
            mbps(bytes, oc),
            mbps(bytes, uc),
            mbps(bytes, tc)
        );
    }
}

fn estimator(texts: &[String]) {
    let bytes: usize = texts.iter().map(String::len).sum();
    let (w, c, n) = best(
        || {},
        || texts.iter().map(|t| estimate_tokens(t)).sum::<usize>(),
    );
    println!(
        "\n## Estimator\nestimate_tokens: {n} tokens, {:.0} MB/s (cpu), {:.0} MB/s (wall)",
        mbps(bytes, c),
        mbps(bytes, w)
    );
}

/// Cuts `source` into items of about `ITEM_BYTES` until the conversation holds `CONVERSATION_TOKENS`.
fn build_items(source: &str, counter: &TokenCounter) -> (Vec<String>, String) {
    let mut items = Vec::new();
    let mut tokens = 0;
    let mut start = 0;
    let mut round = 0;
    while tokens < CONVERSATION_TOKENS {
        let mut end = (start + ITEM_BYTES).min(source.len());
        while !source.is_char_boundary(end) {
            end -= 1;
        }
        // Distinct items even when the source wraps around.
        let text = format!("[{round}:{start}] {}", &source[start..end]);
        tokens += counter.count_text(&text);
        items.push(text);
        start = if end >= source.len() {
            round += 1;
            0
        } else {
            end
        };
    }
    let mut extra = String::new();
    while counter.count_text(&extra) < 1_000 {
        extra.push_str("Appended: the test suite passes except ledger::closes_period; next I will read src/ledger.rs around line 218 and fix the period close. ");
    }
    (items, extra)
}

fn incremental(source: &str) {
    let counter = TokenCounter::new(Encoding::O200kBase);
    let (texts, extra) = build_items(source, &counter);
    let build = || {
        let mut conv = Conversation::default();
        for (i, t) in texts.iter().enumerate() {
            let role = if i % 2 == 0 {
                Role::User
            } else {
                Role::Assistant
            };
            conv.push(Item::text(role, t.clone()));
        }
        conv
    };
    // Cold: fresh items (empty memos) and an empty piece cache.
    let mut cold_best = (f64::MAX, f64::MAX);
    let mut total = 0;
    for _ in 0..PASSES {
        let conv = build();
        clear_piece_cache();
        let (w, c, n) = time(|| counter.total(&conv));
        cold_best = (cold_best.0.min(w), cold_best.1.min(c));
        total = n;
    }
    // Incremental: a counted conversation, one 1k-token message appended, counted again.
    let mut inc_best = (f64::MAX, f64::MAX);
    let extra_tokens = counter.count_text(&extra);
    for _ in 0..RECOUNTS {
        let mut conv = build();
        counter.total(&conv);
        conv.push(Item::text(Role::User, extra.clone()));
        clear_piece_cache();
        let (w, c, n) = time(|| counter.total(&conv));
        assert!(n > total, "recount must include the new message");
        inc_best = (inc_best.0.min(w), inc_best.1.min(c));
    }
    println!(
        "\n## Incremental recount\nconversation: {} items, {total} tokens; appended message: {extra_tokens} tokens",
        texts.len()
    );
    println!(
        "cold count:        {:>9.3} ms (cpu) {:>9.3} ms (wall)",
        cold_best.1 * 1e3,
        cold_best.0 * 1e3
    );
    println!(
        "recount after add: {:>9.3} ms (cpu) {:>9.3} ms (wall)",
        inc_best.1 * 1e3,
        inc_best.0 * 1e3
    );
    println!(
        "ratio: {:.3}% (cpu), {:.3}% (wall) of a cold count (bar: 1%)",
        inc_best.1 / cold_best.1 * 100.0,
        inc_best.0 / cold_best.0 * 100.0
    );
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let fixtures = fixtures();
    let fixture_texts: Vec<String> = fixtures.iter().map(|(_, t)| t.clone()).collect();
    match corpus() {
        Some(texts) => {
            let mut mixed = texts;
            mixed.extend(fixture_texts.iter().cloned());
            throughput(
                "shared corpus + fixtures (prose, code, JSON, shell, CJK)",
                &mixed,
            );
            estimator(&mixed);
            incremental(&mixed.concat());
            per_type(&fixtures);
        }
        None => {
            println!("shared corpus not found: measuring on the fixtures only");
            // Repeat the fixtures to a measurable size; each copy differs by a prefix line.
            let texts: Vec<String> = (0..50)
                .flat_map(|i| fixture_texts.iter().map(move |t| format!("copy {i}\n{t}")))
                .collect();
            throughput("fixtures x50 (prose, code, JSON, shell, CJK)", &texts);
            estimator(&texts);
            incremental(&fixture_texts.concat());
            per_type(&fixtures);
        }
    }
}
