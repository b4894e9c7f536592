//! Exit status of a command, read from the text of its output ("Exit code: 1", "exit status 2",
//! "returncode: 0", `"exit_code": 0`, "exited with code 1", "[Command finished with exit code 0]"),
//! and Codex's JSON wrapper around a command's output ([`codex_wrapped`]).

use std::ops::Range;

/// Phrases after which an exit code follows (lower case).
const NEEDLES: &[&str] = &[
    "exit code",
    "exit status",
    "exit_code",
    "exitcode",
    "returncode",
    "return code",
    "exited with code",
    "exited with status",
];

/// How many bytes at the start and at the end of an output are searched: harnesses put the status in
/// a header (Codex) or a footer (OpenHands, shells); the middle is program output.
const WINDOW_BYTES: usize = 400;

/// The exit code reported in `text`, looking in its first and last `WINDOW_BYTES` bytes (the head
/// first), or `None` when no status is reported.
pub fn exit_code(text: &str) -> Option<i32> {
    let head_end = floor_boundary(text, WINDOW_BYTES.min(text.len()));
    if let Some(code) = find_code(&text[..head_end]) {
        return Some(code);
    }
    if text.len() > head_end {
        let tail_start = ceil_boundary(text, text.len().saturating_sub(WINDOW_BYTES).max(head_end));
        return find_code(&text[tail_start..]);
    }
    None
}

/// What Codex's harness wrapper around a command's output holds
/// (`{"output": "...", "metadata": {"exit_code": N, ...}}`, as older Codex versions send shell
/// results): see [`codex_wrapped`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexWrapped {
    /// What the command printed.
    pub output: String,
    /// Whether the wrapper has a `metadata` field.
    pub has_metadata: bool,
    /// `metadata.exit_code`, when it is an integer.
    pub exit_code: Option<i64>,
}

/// The contents of `text` when it is a JSON object with a string `output` (Codex's wrapper; leading
/// whitespace allowed), else `None`.
pub fn codex_wrapped(text: &str) -> Option<CodexWrapped> {
    let trimmed = text.trim_start();
    if !trimmed.starts_with('{') {
        return None;
    }
    let Ok(serde_json::Value::Object(mut map)) = serde_json::from_str(trimmed) else {
        return None;
    };
    let metadata = map.get("metadata");
    let has_metadata = metadata.is_some();
    let exit_code = metadata
        .and_then(|m| m.get("exit_code"))
        .and_then(serde_json::Value::as_i64);
    match map.remove("output") {
        Some(serde_json::Value::String(output)) => Some(CodexWrapped {
            output,
            has_metadata,
            exit_code,
        }),
        _ => None,
    }
}

/// Where the output's JSON string (quotes included) lies in `text`, a wrapper [`codex_wrapped`]
/// reads, so that it can be replaced leaving every other byte as it was: the byte range of the value
/// of the one top-level `output` member. `None` when no member or more than one is named `output`
/// (which one a reader takes is not defined), or when the scan meets something it does not expect
/// (it never panics). Apart from `codex_wrapped`: only a cut needs it.
pub fn codex_output_span(text: &str) -> Option<Range<usize>> {
    let b = text.as_bytes();
    let mut at = skip_ws(b, 0);
    if b.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_ws(b, at + 1);
    let mut found = None;
    while b.get(at) == Some(&b'"') {
        let key_end = string_end(b, at)?;
        let key: String = serde_json::from_str(text.get(at..key_end)?).ok()?;
        at = skip_ws(b, key_end);
        if b.get(at) != Some(&b':') {
            return None;
        }
        let value_start = skip_ws(b, at + 1);
        let value_end = value_end(b, value_start)?;
        if key == "output" {
            if found.is_some() {
                return None;
            }
            found = Some(value_start..value_end);
        }
        at = skip_ws(b, value_end);
        match b.get(at) {
            Some(b',') => at = skip_ws(b, at + 1),
            Some(b'}') => return found,
            _ => return None,
        }
    }
    // An empty object, or a member that does not open with a string.
    None
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while b
        .get(at)
        .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r'))
    {
        at += 1;
    }
    at
}

/// The index just past the JSON string opening at `at` (a `"`).
fn string_end(b: &[u8], at: usize) -> Option<usize> {
    let mut i = at + 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index just past the JSON value starting at `at`.
fn value_end(b: &[u8], at: usize) -> Option<usize> {
    match b.get(at)? {
        b'"' => string_end(b, at),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = at;
            while b
                .get(i)
                .is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r'))
            {
                i += 1;
            }
            (i > at).then_some(i)
        }
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The last code found in `window` (the footer status wins over an echoed command in a footer window).
fn find_code(window: &str) -> Option<i32> {
    let lower = window.to_ascii_lowercase();
    let mut found = None;
    for needle in NEEDLES {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(needle) {
            let at = from + pos + needle.len();
            if let Some(code) = parse_after(&lower[at..]) {
                if found.is_none_or(|(p, _)| from + pos >= p) {
                    found = Some((from + pos, code));
                }
            }
            from = at;
        }
    }
    found.map(|(_, code)| code)
}

/// Parses `[ :="'=]*-?digits` at the start of `rest`, or a hexadecimal status (`0xC0000142`, as
/// Windows reports a process killed by a system error), read as the 32-bit value it is.
fn parse_after(rest: &str) -> Option<i32> {
    let rest = rest.trim_start_matches([' ', ':', '=', '"', '\'', '\t']);
    if let Some(hex) = rest.strip_prefix("0x") {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        if end == 0 || end > 8 {
            return None;
        }
        // The status's bits, as the process's 32-bit exit code (NTSTATUS values are negative).
        return u32::from_str_radix(&hex[..end], 16)
            .ok()
            .map(|v| i32::from_ne_bytes(v.to_ne_bytes()));
    }
    let (neg, digits) = match rest.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    if end == 0 || end > 6 {
        return None;
    }
    let value: i32 = digits[..end].parse().ok()?;
    Some(if neg { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::{codex_wrapped, exit_code};

    #[test]
    #[allow(clippy::unwrap_used)]
    fn reads_codex_wrappers() {
        let w = codex_wrapped(" {\"output\":\"a\\nb\",\"metadata\":{\"exit_code\":2}}").unwrap();
        assert_eq!(
            (w.output.as_str(), w.has_metadata, w.exit_code),
            ("a\nb", true, Some(2))
        );
        let w = codex_wrapped("{\"output\":\"x\"}").unwrap();
        assert_eq!((w.has_metadata, w.exit_code), (false, None));
        assert_eq!(codex_wrapped("{\"output\":1}"), None);
        assert_eq!(codex_wrapped("plain {\"output\":\"x\"}"), None);
        assert_eq!(codex_wrapped("{not json"), None);
    }

    #[test]
    fn reads_common_shapes() {
        assert_eq!(
            exit_code("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom"),
            Some(1)
        );
        assert_eq!(
            exit_code(
                "{\"output\":\"ok\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"
            ),
            Some(0)
        );
        assert_eq!(
            exit_code("...\n[Command finished with exit code 2]"),
            Some(2)
        );
        assert_eq!(
            exit_code("error: process didn't exit successfully (exit status: 101)"),
            Some(101)
        );
        assert_eq!(exit_code("returncode=-9"), Some(-9));
        // A hexadecimal status is not the 0 before its `x`.
        assert_eq!(
            exit_code("dofork: child died unexpectedly, retry 0, exit code 0xC0000142, errno 11"),
            Some(-1_073_741_502)
        );
        assert_eq!(exit_code("process exited with code 0x0"), Some(0));
        assert_eq!(exit_code("exit code 0x"), None);
        assert_eq!(exit_code("all fine"), None);
        let long = format!("Exit code: 3\n{}\n", "x".repeat(5000));
        assert_eq!(exit_code(&long), Some(3));
    }

    #[test]
    fn windows_that_start_or_end_inside_a_character_are_read_whole() {
        // Four-byte characters everywhere: byte 400 and the start of the last 400 bytes fall
        // inside one, whatever the length's remainder.
        for pad in 0..4 {
            let footer = format!("{}\n[Command finished with exit code 7]", "x".repeat(pad));
            let text = format!("{}{footer}", "🦀".repeat(300));
            assert_eq!(exit_code(&text), Some(7), "pad {pad}");
            let header = format!("exit status: 5\n{}", "🦀".repeat(300));
            assert_eq!(exit_code(&format!("{header}{}", "x".repeat(pad))), Some(5));
            assert_eq!(exit_code(&"🦀".repeat(300 + pad)), None);
        }
    }
}
