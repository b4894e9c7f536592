//! A fast token estimator for models whose tokenizer is not public.
//!
//! Calibration (against `o200k_base`, see BENCHMARKS.md) is per character class: ASCII letters and
//! digits pack about four to a token, punctuation and symbols about one each, whitespace runs are
//! cheap, and CJK / other non-ASCII scripts cost about one token per character.

/// Estimates the token count of `text` without a vocabulary.
pub fn estimate_tokens(text: &str) -> usize {
    let mut alnum = 0usize;
    let mut punct = 0usize;
    let mut space = 0usize;
    let mut wide = 0usize;
    for b in text.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => alnum += 1,
            b' ' | b'\t' => space += 1,
            b'\n' | b'\r' => punct += 1,
            0x21..=0x7e => punct += 1,
            // Lead bytes of multi-byte characters: one per character.
            0xc0..=0xff => wide += 1,
            _ => {}
        }
    }
    // Words: letters/digits at ~4.2 per token; each punctuation byte ~0.8 of a token; spaces are mostly
    // absorbed into the following word; non-ASCII characters ~1 token each.
    let est = alnum as f64 / 4.2 + punct as f64 * 0.8 + space as f64 * 0.1 + wide as f64;
    est.ceil() as usize
}
