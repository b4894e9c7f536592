//! The estimator's error against exact `o200k_base` stays within the bounds documented in
//! `compact_core::tokens::estimate_tokens`'s module, per content type.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::tokens::{estimate_tokens, Encoding};

/// Chunks are cut at the first line break after this many bytes (as in the calibration).
const CHUNK_BYTES: usize = 400;

/// (fixture, bound on the whole-fixture relative error, bound on the worst chunk's relative error).
const BOUNDS: &[(&str, f64, f64)] = &[
    ("prose", 0.03, 0.05),
    ("code", 0.03, 0.10),
    ("json", 0.03, 0.10),
    ("shell", 0.03, 0.10),
    ("cjk", 0.03, 0.12),
];

fn chunks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chunk = String::new();
    for line in text.split_inclusive('\n') {
        chunk.push_str(line);
        if chunk.len() > CHUNK_BYTES {
            out.push(std::mem::take(&mut chunk));
        }
    }
    if !chunk.is_empty() {
        out.push(chunk);
    }
    out
}

fn rel_err(est: usize, exact: usize) -> f64 {
    (est as f64 - exact as f64) / exact as f64
}

#[test]
fn estimate_error_within_documented_bounds() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens/");
    for &(name, whole_bound, chunk_bound) in BOUNDS {
        let text = std::fs::read_to_string(format!("{dir}{name}.txt")).unwrap();
        let exact = Encoding::O200kBase.count(&text);
        let whole = rel_err(estimate_tokens(&text), exact);
        println!("{name}: whole-fixture error {:+.1}%", whole * 100.0);
        assert!(
            whole.abs() <= whole_bound,
            "{name}: whole error {whole:+.3} beyond {whole_bound}"
        );
        for chunk in chunks(&text) {
            let err = rel_err(estimate_tokens(&chunk), Encoding::O200kBase.count(&chunk));
            assert!(
                err.abs() <= chunk_bound,
                "{name}: chunk error {err:+.3} beyond {chunk_bound} on {chunk:?}"
            );
        }
    }
}

#[test]
fn estimate_basics() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("a"), 1);
    assert_eq!(
        Encoding::Estimate.count("hello world"),
        estimate_tokens("hello world")
    );
    // Monotone in repetition: twice the text, about twice the tokens.
    let t = "The quick brown fox jumps over the lazy dog. ";
    let one = estimate_tokens(t);
    let ten = estimate_tokens(&t.repeat(10));
    assert!((9 * one..=11 * one).contains(&ten), "{one} vs {ten}");
}
