//! Error reporting and robustness: a truncated or malformed record names file, line, column and byte
//! offset; lenient mode turns it into a warning and skips the record; no input makes import panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::Format;
use compact_formats::import::{detect, import, ImportError, ImportMode, ImportOptions};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

const STRICT: ImportOptions = ImportOptions {
    format: None,
    mode: ImportMode::Strict,
};
const LENIENT: ImportOptions = ImportOptions {
    format: None,
    mode: ImportMode::Lenient,
};

fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{FIXTURES}/{rel}")).unwrap()
}

/// Byte offset where line `n` (1-based) starts, found by scanning for newlines.
fn line_start(bytes: &[u8], n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(n - 2)
        .map(|(i, _)| i + 1)
        .unwrap()
}

#[test]
fn truncated_last_line_is_located() {
    let bytes = fixture("claude-code/session-truncated.jsonl");
    let lines = bytes.split(|b| *b == b'\n').count();
    let err = import(&bytes, "session-truncated.jsonl", &STRICT).unwrap_err();
    let at = err.location().expect("a located error").clone();
    assert_eq!(at.line, lines);
    let start = line_start(&bytes, lines);
    assert!(
        at.offset >= start && at.offset <= bytes.len(),
        "{at:?}, line starts at {start}"
    );
    assert_eq!(at.offset, start + at.column - 1);
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("session-truncated.jsonl:{lines}:")),
        "{msg}"
    );
    assert!(msg.contains(&format!("byte offset {}", at.offset)), "{msg}");
    assert!(msg.contains("truncated"), "{msg}");
}

#[test]
fn lenient_skips_the_truncated_line_with_a_warning() {
    let bytes = fixture("claude-code/session-truncated.jsonl");
    let imp = import(&bytes, "session-truncated.jsonl", &LENIENT).unwrap();
    assert_eq!(imp.conversation.items.len(), 3);
    assert_eq!(imp.warnings.len(), 1);
    assert_eq!(imp.warnings[0].at.line, 4);
    assert!(imp.warnings[0]
        .to_string()
        .contains("session-truncated.jsonl:4:"));
    assert_eq!(imp.stats.records_malformed, 1);
    assert_eq!(imp.stats.records_read, 4);
}

#[test]
fn malformed_middle_line_in_a_rollout() {
    let good = fixture("codex/rollout-basic.jsonl");
    let text = String::from_utf8(good).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[4] = "{\"timestamp\":\"2025-11-03T14:00:05Z\",\"type\":\"response_item\",\"payload\":{\"type\": nope}}";
    let broken = lines.join("\n");
    let err = import(broken.as_bytes(), "rollout.jsonl", &STRICT).unwrap_err();
    let at = err.location().unwrap();
    assert_eq!(at.line, 5);
    assert_eq!(at.offset, line_start(broken.as_bytes(), 5) + at.column - 1);
    assert!(
        broken.as_bytes()[at.offset..].starts_with(b"nope") || at.column > 1,
        "{err}"
    );
    assert!(err.to_string().contains("malformed JSON"), "{err}");
    let imp = import(broken.as_bytes(), "rollout.jsonl", &LENIENT).unwrap();
    assert_eq!(imp.warnings.len(), 1);
    assert_eq!(imp.conversation.items.len(), 13);
}

#[test]
fn record_that_does_not_decode_names_its_line() {
    // Valid JSON, but the embedded message has no role.
    let text = concat!(
        r#"{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"u2","sessionId":"s","message":{"content":[{"type":"text","text":"x"}]}}"#,
        "\n"
    );
    let err = import(text.as_bytes(), "s.jsonl", &STRICT).unwrap_err();
    assert!(matches!(err, ImportError::Decode { .. }), "{err:?}");
    assert_eq!(err.location().unwrap().line, 2);
    assert!(err.to_string().contains("/message"), "{err}");
    let imp = import(text.as_bytes(), "s.jsonl", &LENIENT).unwrap();
    assert_eq!(imp.conversation.items.len(), 1);
    assert_eq!(imp.warnings.len(), 1);
}

#[test]
fn truncated_json_document_gives_line_column_and_offset() {
    let bytes = fixture("swe-agent/legacy.traj");
    let cut = &bytes[..bytes.len() * 2 / 3];
    let err = import(cut, "legacy.traj", &STRICT).unwrap_err();
    let at = err.location().unwrap();
    assert!(at.line > 1);
    assert_eq!(at.offset, line_start(cut, at.line) + at.column - 1);
    assert!(at.offset <= cut.len());
    assert!(err.to_string().contains("legacy.traj:"), "{err}");
    // Same through an explicit format, and with a name that gives no hint.
    let err2 = import(
        cut,
        "x",
        &ImportOptions {
            format: Some(Format::SweAgent),
            mode: ImportMode::Lenient,
        },
    )
    .unwrap_err();
    assert_eq!(err2.location().unwrap().offset, at.offset);
    let err3 = import(cut, "x", &STRICT).unwrap_err();
    assert_eq!(err3.location().unwrap().offset, at.offset, "{err3}");
}

#[test]
fn truncated_atif_trajectory_is_located() {
    let bytes = fixture("atif/truncated.json");
    let err = import(&bytes, "trajectory.json", &STRICT).unwrap_err();
    let at = err.location().expect("a located error").clone();
    let lines = bytes.split(|b| *b == b'\n').count();
    assert_eq!(at.line, lines, "{err}");
    assert_eq!(at.offset, line_start(&bytes, at.line) + at.column - 1);
    assert!(at.offset <= bytes.len());
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("trajectory.json:{lines}:")),
        "{msg}"
    );
    assert!(msg.contains("truncated"), "{msg}");
    // The same through `--format atif`, in either mode: a broken document has no record to skip.
    for mode in [ImportMode::Strict, ImportMode::Lenient] {
        let opts = ImportOptions {
            format: Some(Format::Atif),
            mode,
        };
        let err = import(&bytes, "trajectory.json", &opts).unwrap_err();
        assert_eq!(err.location().unwrap().offset, at.offset, "{err}");
    }
}

#[test]
fn malformed_atif_step_names_its_line_and_pointer() {
    let text = String::from_utf8(fixture("atif/tools-session.json")).unwrap();
    let broken = text.replacen(
        "\"source\": \"agent\",\n      \"model_name\": \"gpt-5-mini\",\n      \"message\": \"\"",
        "\"source\": \"robot\",\n      \"model_name\": \"gpt-5-mini\",\n      \"message\": \"\"",
        1,
    );
    assert_ne!(broken, text);
    let err = import(broken.as_bytes(), "trajectory.json", &STRICT).unwrap_err();
    assert!(matches!(err, ImportError::Malformed { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("`/steps/3/source`"), "{msg}");
    assert!(msg.contains("\"robot\""), "{msg}");
    // The location is the opening brace of the fourth step.
    let at = err.location().unwrap();
    assert_eq!(broken.as_bytes()[at.offset], b'{');
    assert!(broken[at.offset..]
        .trim_start_matches(['{', ' ', '\n'])
        .starts_with("\"step_id\": 4"));
    assert_eq!(
        at.offset,
        line_start(broken.as_bytes(), at.line) + at.column - 1
    );
    // Lenient: the step is skipped with a warning, the rest imports.
    let imp = import(broken.as_bytes(), "trajectory.json", &LENIENT).unwrap();
    assert_eq!(imp.warnings.len(), 1);
    assert_eq!(imp.warnings[0].at, *at);
    assert_eq!(imp.stats.records_malformed, 1);
    assert_eq!(imp.conversation.items.len(), 11);
    assert!(imp
        .conversation
        .items
        .iter()
        .all(|i| !i.meta.id.as_str().starts_with("s4")));
    // A document that is JSON but not a trajectory.
    let opts = ImportOptions {
        format: Some(Format::Atif),
        mode: ImportMode::Strict,
    };
    let err = import(b"[1, 2]", "t.json", &opts).unwrap_err();
    assert!(err.to_string().contains("not an ATIF trajectory"), "{err}");
    let err = import(br#"{"steps": {"a": 1}}"#, "t.json", &opts).unwrap_err();
    assert!(
        err.to_string().contains("`/steps`: expected an array"),
        "{err}"
    );
    let err = import(
        br#"{"steps": [{"source": "agent", "message": "", "tool_calls": [{"tool_call_id": "c"}]}]}"#,
        "t.json",
        &opts,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("`/steps/0/tool_calls/0/function_name`: missing"),
        "{err}"
    );
}

#[test]
fn empty_and_unrecognisable_inputs() {
    assert!(matches!(
        import(b"", "e.jsonl", &STRICT),
        Err(ImportError::Empty { .. })
    ));
    assert!(matches!(
        import(b"  \n\n\t", "e.jsonl", &STRICT),
        Err(ImportError::Empty { .. })
    ));
    assert!(matches!(
        import(b"hello world\n", "notes.txt", &STRICT),
        Err(ImportError::UnknownFormat { .. })
    ));
    assert!(matches!(
        import(b"{\"a\":1}\n{\"b\":2}\n", "x.jsonl", &STRICT),
        Err(ImportError::UnknownFormat { .. })
    ));
    assert_eq!(detect(b"", "x"), None);
    let native = ImportOptions {
        format: Some(Format::Native),
        mode: ImportMode::Strict,
    };
    assert!(matches!(
        import(b"{}", "x", &native),
        Err(ImportError::Unsupported { .. })
    ));
}

#[test]
fn invalid_utf8_in_aider_history() {
    let mut bytes =
        b"# aider chat started at 2025-01-01 10:00:00\n\n#### hi\n\nhello \xFF\xFE there\n"
            .to_vec();
    let err = import(&bytes, "h.md", &STRICT).unwrap_err();
    let at = err.location().unwrap();
    assert_eq!((at.line, at.column), (5, 7));
    assert_eq!(bytes[at.offset], 0xFF);
    let imp = import(&bytes, "h.md", &LENIENT).unwrap();
    assert_eq!(imp.warnings.len(), 1);
    assert_eq!(imp.conversation.items.len(), 2);
    bytes.clear();
}

#[test]
fn deeply_nested_json_is_an_error_not_a_crash() {
    let depth = 100_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    for format in compact_core::model::Format::ALL {
        let opts = ImportOptions {
            format: Some(format),
            mode: ImportMode::Lenient,
        };
        let _ = import(deep.as_bytes(), "deep.json", &opts);
    }
    let line = format!(
        "{{\"type\":\"user\",\"message\":{}{}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let err = import(
        line.as_bytes(),
        "deep.jsonl",
        &ImportOptions {
            format: Some(Format::ClaudeCode),
            mode: ImportMode::Strict,
        },
    )
    .unwrap_err();
    assert_eq!(err.location().unwrap().line, 1);
    let _ = detect(deep.as_bytes(), "deep.json");
}

/// A small deterministic generator (xorshift) for garbage inputs.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Truncation points (and byte-flipped copies) per fixture: enough to hit every record kind while
/// keeping the test to a few seconds in a debug build.
const CUTS: usize = 10;
/// Random byte strings and random JSON-ish fragment soups.
const RANDOM_INPUTS: usize = 32;

/// Inputs built to reach the importers' corners: every fixture truncated at many points and with
/// bytes flipped, plus random bytes and JSON-ish fragments.
fn hostile_inputs() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for rel in [
        "claude-code/session-tools.jsonl",
        "claude-code/session-compact.jsonl",
        "codex/rollout-basic.jsonl",
        "codex/rollout-compacted.jsonl",
        "swe-agent/legacy.traj",
        "swe-agent/function-calling.traj",
        "openhands/events.json",
        "openhands/eval-output.jsonl",
        "aider/chat.history.md",
        "atif/tools-session.json",
        "atif/terminus.json",
    ] {
        let bytes = fixture(rel);
        for k in 1..CUTS {
            out.push(bytes[..bytes.len() * k / CUTS].to_vec());
        }
        for _ in 0..CUTS {
            let mut b = bytes.clone();
            for _ in 0..4 {
                let i = (rng.next() as usize) % b.len();
                b[i] = rng.next() as u8;
            }
            out.push(b);
        }
    }
    for _ in 0..RANDOM_INPUTS {
        let len = (rng.next() % 512) as usize;
        out.push((0..len).map(|_| rng.next() as u8).collect());
    }
    let fragments: [&[u8]; 12] = [
        b"{",
        b"[",
        b"\"",
        b"}",
        b"]",
        b"null",
        b"{\"type\":",
        b"\n",
        b"{\"payload\":",
        b"{\"history\":[",
        b"#### ",
        b"> ",
    ];
    for _ in 0..RANDOM_INPUTS {
        let n = (rng.next() % 24) as usize;
        out.push(
            (0..n)
                .flat_map(|_| fragments[(rng.next() as usize) % fragments.len()].to_vec())
                .collect(),
        );
    }
    out
}

#[test]
fn no_input_panics_in_any_format_or_mode() {
    let inputs = hostile_inputs();
    let mut formats: Vec<Option<Format>> = vec![None];
    formats.extend(Format::ALL.iter().copied().map(Some));
    let mut imported = 0usize;
    for input in &inputs {
        let _ = detect(input, "x.jsonl");
        for format in &formats {
            for mode in [ImportMode::Strict, ImportMode::Lenient] {
                let opts = ImportOptions {
                    format: *format,
                    mode,
                };
                match import(input, "x.jsonl", &opts) {
                    Ok(_) => imported += 1,
                    Err(e) => {
                        let msg = e.to_string();
                        assert!(msg.starts_with("x.jsonl"), "{msg}");
                        if let Some(at) = e.location() {
                            assert!(at.offset <= input.len(), "{at:?}");
                        }
                    }
                }
            }
        }
    }
    assert!(imported > 0);
}

#[test]
fn binary_and_utf16_files_are_refused_whatever_the_format_named() {
    let nul = b"> user: hello\n\x00\x00\x00 binary junk\n".to_vec();
    let utf16 = b"\xff\xfe{\x00\"\x00".to_vec();
    let named = Format::ALL.iter().copied().filter(|&f| f != Format::Native);
    for format in named.map(Some).chain([None]) {
        for mode in [ImportMode::Strict, ImportMode::Lenient] {
            let options = ImportOptions { format, mode };
            match import(&nul, "junk.md", &options) {
                Err(ImportError::Malformed { at, what }) => {
                    assert_eq!((at.line, at.column, at.offset), (2, 1, 14), "{format:?}");
                    assert!(what.contains("NUL"), "{what}");
                }
                other => panic!("{format:?} {mode:?}: expected a located refusal, got {other:?}"),
            }
            let err = import(&utf16, "utf16.json", &options).unwrap_err();
            assert!(err.to_string().contains("UTF-16"), "{format:?}: {err}");
        }
    }
    // Invalid UTF-8 in a file no format recognises is named at its byte.
    let err = import(b"plain text \xc3\x28 here", "notes.txt", &STRICT).unwrap_err();
    assert!(
        err.to_string().contains("notes.txt:1:12") && err.to_string().contains("0xC3"),
        "{err}"
    );
}
