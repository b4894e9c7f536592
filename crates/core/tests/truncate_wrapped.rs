//! Codex's wrapped outputs (`{"output": "…", "metadata": {…}}`, one line of JSON) cut by their lines:
//! the printed output is cut as a plain output is, the wrapper written back with every other byte
//! kept, within the limit; plain outputs are cut exactly as before.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Item, ItemBody, ItemId, Part, ToolCallKind, ToolResult};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_core::truncate::{
    codex_output_span, codex_wrapped, densify, truncate_item, truncate_output, TruncationMode,
    TruncationPolicy,
};
use proptest::prelude::*;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn id() -> ItemId {
    ItemId::new("i42")
}

/// A cargo test run: 300 passing lines, a compile error in the middle, a failing summary at the end.
fn cargo_log() -> String {
    let mut s = String::from("   Compiling demo v0.1.0 (/work/demo)\n");
    for i in 0..300 {
        s.push_str(&format!("test tests::case_{i:03} ... ok\n"));
        if i == 140 {
            s.push_str("error[E0308]: mismatched types at src/lib.rs:42:17\n");
        }
    }
    s.push_str("test result: FAILED. 300 passed; 1 failed; finished in 2.31s\n");
    s
}

/// `output` in a wrapper whose metadata a re-serialisation would change (`3.20`, spacing, an
/// unknown field, a nested array).
fn wrap(output: &str) -> (String, &'static str) {
    let suffix = r#","metadata":{"exit_code":101,  "duration_seconds":3.20,"sandbox":["ro",{"net":false}]}}"#;
    (
        format!(
            "{{\"output\":{}{suffix}",
            serde_json::to_string(output).unwrap()
        ),
        suffix,
    )
}

#[test]
fn a_wrapped_output_is_cut_by_its_lines_and_written_back_as_the_same_wrapper() {
    let c = counter();
    let (text, suffix) = wrap(&cargo_log());
    let out = truncate_output(&text, &TruncationPolicy::tokens(300), &c, &id());
    assert!(out.truncated && out.changed);
    assert!(c.count_text(&out.text) <= 360, "within 300 x 1.2");
    assert_eq!(out.tokens, c.count_text(&out.text));
    // Still one valid wrapper, with the metadata byte for byte.
    let kept = codex_wrapped(&out.text).expect("a wrapper");
    assert!(out.text.starts_with("{\"output\":\""));
    assert!(out.text.ends_with(suffix), "{}", out.text);
    assert_eq!(kept.exit_code, Some(101));
    // The printed output cut by lines: the first and last lines whole, the error line from the
    // middle kept, the marker naming the id the full output is recalled by.
    let inner = kept.output;
    assert!(
        inner.starts_with("   Compiling demo v0.1.0 (/work/demo)\ntest tests::case_000 ... ok\n")
    );
    assert!(inner.ends_with("test result: FAILED. 300 passed; 1 failed; finished in 2.31s"));
    assert!(inner.contains("\nerror[E0308]: mismatched types at src/lib.rs:42:17\n"));
    let marker = inner.lines().find(|l| l.starts_with("[… ")).unwrap();
    assert!(marker.contains("lines truncated"), "{marker}");
    assert!(marker.contains("compactctl recall i42"), "{marker}");
    assert_eq!(out.kept_error_lines, 1);
    assert!(out.removed_lines > 200);
    // Every kept line is a whole line of the output.
    let log = cargo_log();
    let lines: Vec<&str> = log.lines().collect();
    for l in inner.lines().filter(|l| !l.starts_with("[… ")) {
        assert!(lines.contains(&l), "{l:?} is not a line of the output");
    }
    // Deterministic.
    assert_eq!(
        truncate_output(&text, &TruncationPolicy::tokens(300), &c, &id()),
        out
    );
}

#[test]
fn a_wrapped_cut_fills_its_budget() {
    let c = counter();
    for (lines, limit) in [
        (120usize, 100usize),
        (300, 200),
        (2_000, 500),
        (5_000, 2_000),
    ] {
        let raw: String = (0..lines).map(|i| format!("{}\n", i % 10)).collect();
        let (text, _) = wrap(&raw);
        let policy = TruncationPolicy {
            serialization_buffer: 1.0,
            ..TruncationPolicy::tokens(limit)
        };
        let t = truncate_output(&text, &policy, &c, &id());
        assert!(t.truncated && codex_wrapped(&t.text).is_some(), "{t:?}");
        assert!(t.tokens <= limit, "{} > {limit}", t.tokens);
        // Written back, each kept line costs its escaped newline too: within a few lines of it.
        assert!(
            t.tokens + 8 >= limit,
            "{} tokens of a {limit}-token budget",
            t.tokens
        );
    }
}

#[test]
fn members_around_the_output_and_their_order_and_spacing_survive() {
    let c = counter();
    let output = serde_json::to_string(&cargo_log()).unwrap();
    let before = "  { \"metadata\" : {\"exit_code\":0,\"duration_seconds\":0.5,\"x\":\"\\\"}\"} ,\"output\" : ";
    let after = " , \"next\":[1,2,{\"output\":\"nested, not the wrapper's\"}]}";
    let text = format!("{before}{output}{after}");
    let out = truncate_output(&text, &TruncationPolicy::tokens(200), &c, &id());
    assert!(out.truncated);
    assert!(c.count_text(&out.text) <= 240);
    assert!(
        out.text.starts_with(before) && out.text.ends_with(after),
        "{}",
        out.text
    );
    let kept = codex_wrapped(&out.text).unwrap();
    assert!(kept.output.ends_with("finished in 2.31s"));
    assert_eq!(kept.exit_code, Some(0));
}

#[test]
fn escapes_in_the_output_are_read_and_written_back() {
    let c = counter();
    // Quotes, backslashes, tabs, ANSI colour (escaped \u001b), a surrogate pair, an escaped slash.
    let mut raw = String::from("{\"output\":\"start \\\"quoted\\\" C:\\\\path\\ttab\\n");
    for i in 0..200 {
        raw.push_str(&format!(
            "\\u001b[32mok\\u001b[0m line {i} \\ud83e\\udd80 a\\/b\\n"
        ));
    }
    raw.push_str("\\u001b[31mError: boom\\u001b[0m\\n\",\"metadata\":{\"exit_code\":1}}");
    let out = truncate_output(&raw, &TruncationPolicy::tokens(150), &c, &id());
    assert!(c.count_text(&out.text) <= 180);
    let kept = codex_wrapped(&out.text).expect("a wrapper");
    assert!(out.text.ends_with(",\"metadata\":{\"exit_code\":1}}"));
    assert!(kept.output.starts_with("start \"quoted\" C:\\path\ttab\n"));
    // Densified as a plain output is (the colours dropped), the last line kept.
    assert!(kept.output.ends_with("Error: boom"), "{:?}", kept.output);
    assert!(kept.output.contains("🦀 a/b"));
    assert!(!kept.output.contains('\u{1b}'));
}

#[test]
fn a_wrapper_that_fits_once_densified_is_written_back_uncut() {
    let c = counter();
    let output = "Downloading 1%\r".repeat(400) + "Downloading 100%\ndone\n";
    let (text, suffix) = wrap(&output);
    let out = truncate_output(&text, &TruncationPolicy::tokens(100), &c, &id());
    assert!(out.changed && out.densified && !out.truncated);
    assert_eq!(
        out.text,
        format!("{{\"output\":\"Downloading 100%\\ndone\"{suffix}")
    );
}

#[test]
fn a_wrapper_whose_frame_leaves_no_room_is_cut_as_one_line() {
    let c = counter();
    // The metadata alone is over the limit: no written-back wrapper can fit.
    let meta = "word ".repeat(400);
    let text = format!(
        "{{\"output\":{},\"metadata\":{{\"note\":\"{meta}\"}}}}",
        serde_json::to_string(&cargo_log()).unwrap()
    );
    let out = truncate_output(&text, &TruncationPolicy::tokens(100), &c, &id());
    assert!(out.truncated);
    assert!(c.count_text(&out.text) <= 120);
    assert!(codex_wrapped(&out.text).is_none());
    assert!(out.text.starts_with("{\"output\":\""));
}

#[test]
fn a_wrapper_naming_output_twice_is_cut_as_one_line() {
    let c = counter();
    let long = serde_json::to_string(&cargo_log()).unwrap();
    let text = format!("{{\"output\":\"a\",\"output\":{long},\"metadata\":{{}}}}");
    assert_eq!(codex_output_span(&text), None);
    let out = truncate_output(&text, &TruncationPolicy::tokens(100), &c, &id());
    assert!(out.truncated);
    assert!(codex_wrapped(&out.text).is_none());
    // An escaped key is the same key.
    let text = format!("{{\"outp\\u0075t\":\"a\",\"output\":{long}}}");
    assert_eq!(codex_output_span(&text), None);
}

#[test]
fn the_output_span_is_the_output_string() {
    let text = " {\"a\":{\"output\":[1,\"}\"]},\"output\":\"x\\\"y\",\"b\":-1.5e3}";
    let w = codex_wrapped(text).unwrap();
    let span = codex_output_span(text).unwrap();
    assert_eq!(&text[span], "\"x\\\"y\"");
    assert_eq!(w.output, "x\"y");
}

#[test]
fn truncate_item_cuts_a_wrapped_result_under_its_id() {
    let (text, suffix) = wrap(&cargo_log());
    let mut item = Item::new(ItemBody::ToolResult(ToolResult {
        call_id: "call_1".into(),
        tool_name: Some("shell".into()),
        parts: vec![Part::text(text)],
        is_error: false,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Default::default(),
    }));
    item.meta.id = ItemId::new("i9");
    let out = truncate_item(&item, &TruncationPolicy::tokens(300), &counter()).unwrap();
    assert_eq!(out.meta.id.as_str(), "i9");
    let text = out.as_tool_result().unwrap().parts[0].as_text().unwrap();
    assert!(text.ends_with(suffix));
    assert!(codex_wrapped(text)
        .unwrap()
        .output
        .contains("compactctl recall i9"));
}

/// What the cut made of plain outputs before wrappers were looked into: it must not change.
#[test]
fn plain_outputs_are_cut_exactly_as_before() {
    let c = counter();
    let plain = cargo_log();
    let out = truncate_output(&plain, &TruncationPolicy::tokens(100), &c, &id());
    assert_eq!(out.text, PLAIN_CUT);
    // A JSON object that is not a wrapper (no string `output`) is cut as the one line it is.
    let json = format!(
        "{{\"result\":{},\"metadata\":{{\"exit_code\":0}}}}",
        serde_json::to_string(&plain).unwrap()
    );
    let out = truncate_output(&json, &TruncationPolicy::tokens(60), &c, &id());
    assert_eq!(out.text, JSON_CUT);
}

const PLAIN_CUT: &str = r#"   Compiling demo v0.1.0 (/work/demo)
test tests::case_000 ... ok
test tests::case_001 ... ok
[… 2,675 tokens / 297 lines truncated, 1 error line from it kept below; full output: compactctl recall i42]
error[E0308]: mismatched types at src/lib.rs:42:17
test tests::case_299 ... ok
test result: FAILED. 300 passed; 1 failed; finished in 2.31s"#;
const JSON_CUT: &str = r#"{"result":"   Compiling demo v0.1.0 (/work/demo)\ntest
[… 3,026 tokens / 1 line truncated; full output: compactctl recall i42]
1 failed; finished in 2.31s\n","metadata":{"exit_code":0}}"#;

/// A line of printed output, hostile ones included.
fn arb_line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,40}",
        "error: [a-z]{1,20}",
        "[\u{4e00}-\u{4e50}]{1,20}",
        "[\"\\\\/\t\u{0}-\u{1f}\u{7f}]{1,12}",
        "[\u{1F980}-\u{1F9A0}]{1,6}",
        Just("\u{1b}[31mred\u{1b}[0m".to_owned()),
        Just("50%\r100%".to_owned()),
        Just("\\u0000 \\ud800 \\\"".to_owned()),
        Just("x".repeat(900)),
    ]
}

/// Metadata JSON (as written, spacing included) with an exit code and unknown fields.
fn arb_metadata() -> impl Strategy<Value = String> {
    (
        -300i64..300,
        prop_oneof![Just(""), Just(" "), Just("\n  ")],
        "[a-z\"\\\\ ]{0,20}",
    )
        .prop_map(|(code, ws, note)| {
            format!(
                "{{{ws}\"exit_code\":{ws}{code},\"duration_seconds\":1.50,\"note\":{}}}",
                serde_json::to_string(&note).unwrap()
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn wrapped_in_a_valid_wrapper_out_with_its_metadata_within_the_limit(
        lines in prop::collection::vec(arb_line(), 0..150),
        metadata in arb_metadata(),
        metadata_first in any::<bool>(),
        budget in 80usize..600,
        head in 0u8..=10,
    ) {
        let c = counter();
        let output = lines.join("\n");
        let literal = serde_json::to_string(&output).unwrap();
        let text = if metadata_first {
            format!("{{\"metadata\":{metadata},\"output\":{literal}}}")
        } else {
            format!("{{\"output\":{literal},\"metadata\":{metadata}}}")
        };
        let policy = TruncationPolicy { head_fraction: f64::from(head) / 10.0, ..TruncationPolicy::tokens(budget) };
        let out = truncate_output(&text, &policy, &c, &id());
        prop_assert!(c.count_text(&out.text) <= budget * 6 / 5);
        let kept = codex_wrapped(&out.text);
        prop_assert!(kept.is_some(), "not a wrapper: {}", out.text);
        let kept = kept.unwrap();
        let span = codex_output_span(&out.text).unwrap();
        let (before, after) = (&out.text[..span.start], &out.text[span.end..]);
        let original = codex_output_span(&text).unwrap();
        prop_assert_eq!(before, &text[..original.start]);
        prop_assert_eq!(after, &text[original.end..]);
        if out.truncated {
            // The kept head is a prefix of the densified output.
            let dense = densify(&output);
            let head_text = kept.output[..kept.output.find("[… ").unwrap_or(0)].trim_end_matches('\n');
            prop_assert!(dense.starts_with(head_text));
        } else if !out.changed {
            prop_assert_eq!(&out.text, &text);
        }
        prop_assert_eq!(truncate_output(&text, &policy, &c, &id()), out);
    }

    #[test]
    fn hostile_text_never_panics_and_stays_within_the_limit(
        text in prop_oneof![
            "\\PC{0,400}",
            "\\{\"output\":\"[a-z\\\\\"u0-9d]{0,300}\"(,\"metadata\":\\{[a-z\":0-9,\\\\]{0,40}\\})?\\}",
            "[ \t\n]{0,3}\\{\"output\":\"(\\\\u[0-9a-fA-F]{4}|\\\\[nrt\"\\\\/]|[a-z ]){0,200}\"\\}",
        ],
        budget in 0usize..200,
        bytes in any::<bool>(),
    ) {
        let c = counter();
        let mode = if bytes { TruncationMode::Bytes(budget) } else { TruncationMode::Tokens(budget) };
        let policy = TruncationPolicy { mode, ..TruncationPolicy::default() };
        let out = truncate_output(&text, &policy, &c, &id());
        let size = if bytes { out.text.len() } else { c.count_text(&out.text) };
        prop_assert!(size <= budget * 6 / 5);
    }
}
