//! A hand-written ASCII fast path for the `o200k_base` and `cl100k_base` pretokenizer regexes.
//!
//! Exact counting splits text into pieces with the encoding's regex before BPE. The regex (a Unicode
//! lazy DFA) costs about as much as BPE itself on short pieces, so this module scans ASCII text by
//! hand, following the regex alternatives in their priority order. Whenever the decision for a piece
//! would depend on a non-ASCII character (a letter run that might continue with `é`, a symbol run
//! that might continue with `→`, an apostrophe followed by `ſ`...), the scanner hands that piece to
//! the regex itself (`split` on the rest of the text, which is exactly what the regex iterator does),
//! so the pieces are identical to the regex's by construction; `tests/tokens_exact.rs` checks it
//! piece for piece on fixtures and random text.
//!
//! How the alternatives reduce on ASCII (leftmost-first: the first alternative that matches wins):
//! - letters, optionally preceded by one character that is not a letter, digit, `\r` or `\n`
//!   (o200k: an upper-case run then a lower-case run, then an optional contraction such as `'ll`;
//!   cl100k: any letters, with contractions as pieces of their own, tried first);
//! - one to three digits;
//! - an optional space, a run of symbols, then any `\r`/`\n` (o200k also `/`);
//! - a whitespace run up to its last newline; a whitespace run reaching the end of the text; a
//!   whitespace run minus its last character (so the next word keeps its leading space); one space.

/// Which regex to emulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `o200k_base`.
    O200k = 0,
    /// `cl100k_base`.
    Cl100k = 1,
}

/// ASCII whitespace as the regex's Unicode `\s` sees it: `\t \n \v \f \r` and space.
fn is_space(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ')
}

/// `[^\s\p{L}\p{N}]` on ASCII.
fn is_symbol(b: u8) -> bool {
    b < 0x80 && !is_space(b) && !b.is_ascii_alphanumeric()
}

/// `[^\r\n\p{L}\p{N}]` on ASCII.
fn is_prefix(b: u8) -> bool {
    b < 0x80 && b != b'\r' && b != b'\n' && !b.is_ascii_alphanumeric()
}

/// Outcome of scanning one piece by hand.
enum Scan {
    /// The piece ends here (exclusive byte offset).
    End(usize),
    /// A non-ASCII character decides: ask the regex.
    Regex,
}

/// Advances over bytes matching `class`; `Err` when the run stops at a non-ASCII byte (which the
/// Unicode class might have included).
fn run(t: &[u8], mut i: usize, class: impl Fn(u8) -> bool) -> Result<usize, ()> {
    while let Some(&b) = t.get(i) {
        if b >= 0x80 {
            return Err(());
        }
        if !class(b) {
            break;
        }
        i += 1;
    }
    Ok(i)
}

/// Length of a contraction (`'s 't 're 've 'm 'll 'd`, any case) at `i`: `Ok(0)` for none, `Err`
/// when a non-ASCII character could decide (Unicode case folding maps `ſ` to `s`, `K` to `k`).
fn contraction(t: &[u8], i: usize) -> Result<usize, ()> {
    if t.get(i) != Some(&b'\'') {
        return Ok(0);
    }
    let lower = |j: usize| -> Result<Option<u8>, ()> {
        match t.get(j) {
            None => Ok(None),
            Some(&b) if b >= 0x80 => Err(()),
            Some(&b) => Ok(Some(b.to_ascii_lowercase())),
        }
    };
    match lower(i + 1)? {
        Some(b's' | b't' | b'm' | b'd') => Ok(2),
        Some(first @ (b'r' | b'v' | b'l')) => {
            let second = if first == b'l' { b'l' } else { b'e' };
            Ok(if lower(i + 2)? == Some(second) { 3 } else { 0 })
        }
        _ => Ok(0),
    }
}

/// The end of the piece starting at `p` (`p < t.len()`), or `Regex` when the hand scan cannot decide.
fn scan(flavor: Flavor, t: &[u8], p: usize) -> Scan {
    match scan_inner(flavor, t, p) {
        Ok(end) if end > p => Scan::End(end),
        _ => Scan::Regex,
    }
}

fn scan_inner(flavor: Flavor, t: &[u8], p: usize) -> Result<usize, ()> {
    let c0 = *t.get(p).ok_or(())?;
    if c0 >= 0x80 {
        return Err(());
    }
    if flavor == Flavor::Cl100k {
        let n = contraction(t, p)?;
        if n > 0 {
            return Ok(p + n);
        }
    }
    // Letter alternatives, with an optional one-character prefix.
    let word_start = if c0.is_ascii_alphabetic() {
        Some(p)
    } else if is_prefix(c0) {
        match t.get(p + 1) {
            Some(&b) if b >= 0x80 => return Err(()),
            Some(&b) if b.is_ascii_alphabetic() => Some(p + 1),
            _ => None,
        }
    } else {
        None
    };
    if let Some(w) = word_start {
        return match flavor {
            Flavor::O200k => {
                // [A-Z]*[a-z]+ or [A-Z]+[a-z]*: both take the upper run then the lower run.
                let upper_end = run(t, w, |b| b.is_ascii_uppercase())?;
                let lower_end = run(t, upper_end, |b| b.is_ascii_lowercase())?;
                Ok(lower_end + contraction(t, lower_end)?)
            }
            Flavor::Cl100k => run(t, w, |b| b.is_ascii_alphabetic()),
        };
    }
    if c0.is_ascii_digit() {
        let mut end = p;
        while end < p + 3 {
            match t.get(end) {
                Some(&b) if b.is_ascii_digit() => end += 1,
                Some(&b) if b >= 0x80 => return Err(()),
                _ => break,
            }
        }
        return Ok(end);
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*` (o200k: `[\r\n/]*`).
    let sym_start = if is_symbol(c0) {
        Some(p)
    } else if c0 == b' ' {
        match t.get(p + 1) {
            Some(&b) if b >= 0x80 => return Err(()),
            Some(&b) if is_symbol(b) => Some(p + 1),
            _ => None,
        }
    } else {
        None
    };
    if let Some(s) = sym_start {
        let end = run(t, s, is_symbol)?;
        let mut tail = end;
        while let Some(&b) = t.get(tail) {
            let more = b == b'\r' || b == b'\n' || (flavor == Flavor::O200k && b == b'/');
            if !more {
                break;
            }
            tail += 1;
        }
        return Ok(tail);
    }
    // Whitespace: c0 is ASCII whitespace here (everything else was handled above).
    let ws_end = run(t, p, is_space)?;
    if let Some(last_nl) = t[p..ws_end].iter().rposition(|&b| b == b'\r' || b == b'\n') {
        return Ok(p + last_nl + 1);
    }
    if ws_end == t.len() || ws_end - p == 1 {
        return Ok(ws_end);
    }
    Ok(ws_end - 1)
}

/// Calls `f` on each piece of `text`, exactly as `tokenizer.split(text)` would yield them.
pub(crate) fn for_each_piece(
    flavor: Flavor,
    tokenizer: &bpe_openai::Tokenizer,
    text: &str,
    mut f: impl FnMut(&str),
) {
    let bytes = text.as_bytes();
    let mut p = 0;
    while p < bytes.len() {
        let end = match scan(flavor, bytes, p) {
            Scan::End(end) => end,
            Scan::Regex => match text.get(p..).and_then(|rest| tokenizer.split(rest).next()) {
                Some(piece) if !piece.is_empty() => p + piece.len(),
                // The regex matches every non-empty input; if it ever did not, count the rest
                // as one piece rather than loop.
                _ => bytes.len(),
            },
        };
        // Hand-scanned ends fall on ASCII boundaries and regex ends on char boundaries.
        if let Some(piece) = text.get(p..end) {
            f(piece);
        }
        p = end;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pieces(flavor: Flavor, text: &str) -> Vec<String> {
        let tok = match flavor {
            Flavor::O200k => bpe_openai::o200k_base(),
            Flavor::Cl100k => bpe_openai::cl100k_base(),
        };
        let mut out = Vec::new();
        for_each_piece(flavor, tok, text, |p| out.push(p.to_owned()));
        let want: Vec<String> = tok.split(text).map(str::to_owned).collect();
        assert_eq!(out, want, "{flavor:?} on {text:?}");
        out
    }

    #[test]
    fn matches_regex_on_tricky_ascii() {
        for flavor in [Flavor::O200k, Flavor::Cl100k] {
            for text in [
                "Hello WORLD HELLOWorld don't I'LL we're 'sdf",
                "   x  \n  y\r\n\r\n\t\tz  ",
                "a+b=12345 {\n  \"k\": [1, 2]}\n// c/d//\n",
                " (hello) ...  --flag=/usr/bin/\n",
                "end with spaces   ",
                "\u{b}\u{c} \x01\x7f",
            ] {
                pieces(flavor, text);
            }
        }
    }

    #[test]
    fn falls_back_on_non_ascii() {
        for flavor in [Flavor::O200k, Flavor::Cl100k] {
            for text in [
                "café naïve",
                "x'ſ y",
                "a\u{a0} b",
                "12² →→ 中文 😀!",
                " é",
                "ab\u{301}c",
            ] {
                pieces(flavor, text);
            }
        }
    }

    /// Characters that exercise every branch: ASCII classes, contractions, Unicode letters, marks,
    /// digits, whitespace and symbols that the regex treats specially.
    const ALPHABET: &[char] = &[
        'a', 'z', 'A', 'Z', 's', 'S', 'l', 'L', 'e', 'r', 'v', 't', 'm', 'd', '0', '7', ' ', ' ',
        '\t', '\n', '\r', '\u{b}', '\'', '/', '{', '"', '.', '-', '_', 'é', 'É', 'ſ', '\u{301}',
        '²', '٣', '\u{a0}', '\u{3000}', '中', '😀', '→', '\u{85}',
    ];

    proptest::proptest! {
        #[test]
        fn matches_regex_on_random_text(idx in proptest::collection::vec(0..ALPHABET.len(), 0..64)) {
            let text: String = idx.iter().map(|&i| ALPHABET[i]).collect();
            pieces(Flavor::O200k, &text);
            pieces(Flavor::Cl100k, &text);
        }
    }

    #[test]
    fn matches_regex_on_fixtures() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/tokens");
        for name in ["prose.txt", "code.txt", "json.txt", "shell.txt", "cjk.txt"] {
            let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
            pieces(Flavor::O200k, &text);
            pieces(Flavor::Cl100k, &text);
        }
    }
}
