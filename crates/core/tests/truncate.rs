//! Integration tests of tier-0 truncation: densification cases, the head/tail cut, and properties.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Item, ItemBody, ItemId, Part, ToolCallKind, ToolResult};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_core::truncate::{
    densify, truncate_item, truncate_output, TruncationMode, TruncationPolicy,
};
use proptest::prelude::*;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn id() -> ItemId {
    ItemId::new("i42")
}

#[test]
fn densify_strips_ansi_and_progress_overwrites() {
    let raw = "\u{1b}[1m\u{1b}[32m   Compiling\u{1b}[0m foo v0.1.0\nDownloading  10%\rDownloading  55%\rDownloading 100%\n";
    assert_eq!(densify(raw), "   Compiling foo v0.1.0\nDownloading 100%");
}

#[test]
fn densify_collapses_repeated_lines_and_trims() {
    let raw = "start   \nwarning: retrying\nwarning: retrying\nwarning: retrying\nwarning: retrying\nend\n\n\n";
    assert_eq!(
        densify(raw),
        "start\nwarning: retrying (repeated 4 times)\nend"
    );
    // Two copies stay as they are: a count would cost more.
    assert_eq!(densify("a\na\nb"), "a\na\nb");
    assert_eq!(densify("x\n\n\n\n\ny"), "x\n(4 blank lines)\ny");
}

#[test]
fn densify_compacts_whole_json_only() {
    let pretty = "{\n  \"name\": \"compact\",\n  \"items\": [\n    1,\n    2\n  ]\n}\n";
    assert_eq!(densify(pretty), "{\"name\":\"compact\",\"items\":[1,2]}");
    // JSON embedded in other text is left as text.
    let mixed = "result:\n{\n  \"a\": 1\n}";
    assert_eq!(densify(mixed), mixed);
    // Numbers an f64 cannot hold exactly are not round-tripped.
    let big = "{\n  \"id\": 123456789012345678901234\n}";
    assert_eq!(densify(big), big);
}

#[test]
fn under_budget_is_unchanged() {
    let text = "\u{1b}[31mred\u{1b}[0m but short\n";
    let out = truncate_output(text, &TruncationPolicy::default(), &counter(), &id());
    assert!(!out.changed);
    assert_eq!(out.text, text);
    let none = truncate_output(
        &"x ".repeat(100_000),
        &TruncationPolicy::none(),
        &counter(),
        &id(),
    );
    assert!(!none.changed);
}

#[test]
fn densify_alone_can_be_enough() {
    let text = "progress 1%\r".repeat(2_000) + "done\n";
    let out = truncate_output(&text, &TruncationPolicy::tokens(100), &counter(), &id());
    assert!(out.changed && out.densified && !out.truncated);
    assert!(out.text.starts_with("done"));
}

fn pytest_log() -> String {
    let mut s = String::from(
        "============================= test session starts ==============================\n",
    );
    s.push_str("platform linux -- Python 3.12.1, pytest-8.0.0\ncollected 400 items\n\n");
    for i in 0..400 {
        s.push_str(&format!(
            "tests/test_api.py::test_case_{i:03} PASSED                                  [{:3}%]\n",
            i / 4
        ));
        if i == 217 {
            s.push_str("tests/test_api.py::test_login_expired FAILED\n");
            s.push_str("E   AssertionError: expected status 401, got 500\n");
        }
    }
    s.push_str(
        "=========================== short test summary info ============================\n",
    );
    s.push_str("FAILED tests/test_api.py::test_login_expired - AssertionError: expected status 401, got 500\n");
    s.push_str(
        "======================== 1 failed, 400 passed in 12.34s ========================\n",
    );
    s
}

#[test]
fn long_log_keeps_head_tail_errors_and_a_marker() {
    let log = pytest_log();
    let policy = TruncationPolicy::tokens(400);
    let c = counter();
    let out = truncate_output(&log, &policy, &c, &id());
    assert!(out.truncated);
    assert!(c.count_text(&out.text) <= 480, "within 400 x 1.2");
    assert!(out
        .text
        .starts_with("============================= test session starts"));
    assert!(out
        .text
        .ends_with("1 failed, 400 passed in 12.34s ========================"));
    assert!(
        out.text.contains("test_login_expired FAILED"),
        "error line from the middle kept:\n{}",
        out.text
    );
    assert!(out
        .text
        .contains("E   AssertionError: expected status 401, got 500"));
    let marker = out.text.lines().find(|l| l.starts_with("[… ")).unwrap();
    assert!(
        marker.contains("tokens /") && marker.contains("lines truncated"),
        "{marker}"
    );
    assert!(marker.contains("compactctl recall i42"), "{marker}");
    assert!(marker.contains("2 error lines"), "{marker}");
    assert!(out.removed_lines > 300);
    assert!(out.removed_tokens > 2_000);
    assert_eq!(out.kept_error_lines, 2);
    // Deterministic.
    assert_eq!(truncate_output(&log, &policy, &c, &id()), out);
}

#[test]
fn head_fraction_and_error_lines_are_configurable() {
    let log = pytest_log();
    let policy = TruncationPolicy {
        head_fraction: 0.0,
        keep_error_lines: false,
        ..TruncationPolicy::tokens(300)
    };
    let out = truncate_output(&log, &policy, &counter(), &id());
    assert!(out.text.starts_with("[… "), "no head:\n{}", out.text);
    assert_eq!(out.kept_error_lines, 0);
    assert!(!out.text.contains("E   AssertionError"));
}

#[test]
fn bytes_mode_and_single_huge_line() {
    let line = "é".repeat(50_000);
    let policy = TruncationPolicy {
        mode: TruncationMode::Bytes(1_000),
        ..TruncationPolicy::default()
    };
    let out = truncate_output(&line, &policy, &counter(), &id());
    assert!(out.text.len() <= 1_200);
    assert!(out.text.starts_with('é') && out.text.ends_with('é'));
    let tokens = truncate_output(&line, &TruncationPolicy::tokens(200), &counter(), &id());
    assert!(counter().count_text(&tokens.text) <= 240);
}

#[test]
fn tiny_budget_still_fits() {
    let text = "line\n".repeat(10_000);
    for n in [0, 1, 3, 10, 20] {
        let out = truncate_output(&text, &TruncationPolicy::tokens(n), &counter(), &id());
        assert!(
            counter().count_text(&out.text) <= n * 6 / 5,
            "budget {n}: {:?}",
            out.text
        );
    }
}

#[test]
fn truncate_item_keeps_id_and_leaves_small_items() {
    let mut item = Item::new(ItemBody::ToolResult(ToolResult {
        call_id: "c1".into(),
        tool_name: Some("Bash".into()),
        parts: vec![Part::text(pytest_log())],
        is_error: false,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Default::default(),
    }));
    item.meta.id = ItemId::new("i7");
    let out = truncate_item(&item, &TruncationPolicy::tokens(300), &counter()).unwrap();
    assert_eq!(out.meta.id.as_str(), "i7");
    let text = out.as_tool_result().unwrap().parts[0]
        .as_text()
        .unwrap()
        .to_owned();
    assert!(text.contains("compactctl recall i7"));
    assert!(
        truncate_item(&out, &TruncationPolicy::tokens(300), &counter()).is_none(),
        "already within budget"
    );
    assert!(truncate_item(
        &Item::text(compact_core::model::Role::User, "x"),
        &TruncationPolicy::tokens(1),
        &counter()
    )
    .is_none());
}

fn arb_output() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[a-z ]{0,40}",
        "error: [a-z]{1,20}",
        "[0-9]{1,8}",
        "[\u{4e00}-\u{4e50}]{1,20}",
        Just("\u{1b}[31mred\u{1b}[0m".to_owned()),
        Just("50%\r100%".to_owned()),
        Just("x".repeat(1500)),
    ];
    prop::collection::vec(line, 0..120).prop_map(|lines| lines.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, ..ProptestConfig::default() })]

    #[test]
    fn result_is_within_budget_and_keeps_ends(text in arb_output(), budget in 0usize..400, head in 0u8..=10) {
        let c = counter();
        let policy = TruncationPolicy { head_fraction: f64::from(head) / 10.0, ..TruncationPolicy::tokens(budget) };
        let limit = budget * 6 / 5;
        let out = truncate_output(&text, &policy, &c, &id());
        prop_assert!(c.count_text(&out.text) <= limit);
        if c.count_text(&text) <= limit {
            prop_assert!(!out.changed);
            prop_assert_eq!(&out.text, &text);
        }
        if out.truncated {
            let dense = densify(&text);
            let first = dense.lines().next().unwrap_or("");
            let last = dense.lines().last().unwrap_or("");
            // The kept head is a prefix of the densified text, the kept tail a suffix.
            let marker_at = out.text.find("[… ").unwrap_or(0);
            let head_text = out.text[..marker_at].trim_end_matches('\n');
            prop_assert!(dense.starts_with(head_text));
            // When a whole line's worth of room was given to each side, the first and last lines survive.
            if budget >= 300 && head == 5 && c.count_text(first) < 20 && c.count_text(last) < 20 {
                prop_assert!(out.text.starts_with(first));
                prop_assert!(out.text.ends_with(last));
            }
        }
        prop_assert_eq!(truncate_output(&text, &policy, &c, &id()), out);
    }
}

#[test]
fn the_serialization_buffer_scales_the_limit_and_a_bad_one_counts_as_one() {
    let with = |buffer: f64| TruncationPolicy {
        serialization_buffer: buffer,
        ..TruncationPolicy::tokens(1_000)
    };
    let max = |p: TruncationPolicy| p.limit().unwrap().max;
    // The default buffer (1.2) applies: floor(1000 x 1.2).
    assert_eq!(max(TruncationPolicy::tokens(1_000)), 1_200);
    assert_eq!(max(with(1.5)), 1_500);
    // Not finite, zero or negative: no buffer at all (never an unbounded or a zero limit).
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -2.0] {
        assert_eq!(max(with(bad)), 1_000, "buffer {bad}");
    }
    let bytes = TruncationPolicy {
        mode: TruncationMode::Bytes(100),
        serialization_buffer: 0.0,
        ..TruncationPolicy::default()
    };
    assert_eq!(bytes.limit().unwrap().max, 100);
    assert!(TruncationPolicy::none().limit().is_none());
}

#[test]
fn an_output_that_fits_once_densified_reports_its_dense_size() {
    let c = counter();
    let raw = "progress\n".repeat(400) + "done\n";
    let t = truncate_output(&raw, &TruncationPolicy::tokens(40), &c, &id());
    assert!(t.changed && t.densified && !t.truncated, "{t:?}");
    assert_eq!(t.tokens, c.count_text(&t.text), "{t:?}");
    assert!(t.tokens < c.count_text(&raw));
}

#[test]
fn a_cut_fills_its_budget_and_names_what_it_removed() {
    let c = counter();
    for (lines, limit) in [
        (120usize, 100usize),
        (300, 200),
        (2_000, 500),
        (5_000, 2_000),
    ] {
        // Lines of one or two tokens: the cut can land within a few tokens of its limit.
        let raw: String = (0..lines).map(|i| format!("{}\n", i % 10)).collect();
        let policy = TruncationPolicy {
            serialization_buffer: 1.0,
            ..TruncationPolicy::tokens(limit)
        };
        let t = truncate_output(&raw, &policy, &c, &id());
        assert!(t.truncated, "{t:?}");
        assert!(t.tokens <= limit, "{} > {limit}", t.tokens);
        assert!(
            t.tokens + 6 >= limit,
            "{} tokens of a {limit}-token budget",
            t.tokens
        );
        // The marker gives the removed tokens and lines with thousands separators.
        let grouped = |n: usize| {
            let s = n.to_string();
            let mut out = String::new();
            for (k, ch) in s.chars().enumerate() {
                if k > 0 && (s.len() - k).is_multiple_of(3) {
                    out.push(',');
                }
                out.push(ch);
            }
            out
        };
        let said = format!(
            "{} tokens / {} lines truncated",
            grouped(t.removed_tokens),
            grouped(t.removed_lines)
        );
        assert!(t.text.contains(&said), "no {said:?} in {:?}", t.text);
    }
}

#[test]
fn a_single_huge_line_keeps_its_start_and_end_within_the_budget() {
    let c = counter();
    let line: String = (0..4_000).map(|i| format!("w{} ", i % 10)).collect();
    let raw = format!("BEGIN {line} END");
    let policy = TruncationPolicy {
        serialization_buffer: 1.0,
        head_fraction: 0.5,
        ..TruncationPolicy::tokens(300)
    };
    let t = truncate_output(&raw, &policy, &c, &id());
    assert!(t.truncated, "{t:?}");
    assert!(
        t.tokens <= 300 && t.tokens + 40 >= 300,
        "{} tokens",
        t.tokens
    );
    assert!(t.text.starts_with("BEGIN w0 w1"), "{}", &t.text[..40]);
    assert!(
        t.text.ends_with("w8 w9  END"),
        "{}",
        &t.text[t.text.len() - 40..]
    );
}

/// A log whose middle repeats one timestamped error many times and holds one other error late.
fn repeated_error_log() -> String {
    let mut lines = vec!["starting the device monitor".to_owned()];
    for i in 0..120 {
        lines.push(format!(
            "10:{:02}:{:02} monitor: [modem] error: get device status failed",
            i / 60,
            i % 60
        ));
        lines.push(format!("10:{:02}:{:02} monitor: polling", i / 60, i % 60));
        if i == 100 {
            lines.push("10:01:40 monitor: panic: tethering socket closed".to_owned());
        }
    }
    lines.push("monitor stopped".to_owned());
    lines.join("\n")
}

#[test]
fn every_distinct_error_message_comes_before_repetitions_of_one() {
    let log = repeated_error_log();
    let c = counter();
    let out = truncate_output(&log, &TruncationPolicy::tokens(300), &c, &id());
    assert!(out.truncated);
    // Head-first in order, the 120 repetitions of the modem error would take all the room; one of
    // each message is chosen first, then repetitions while room is left.
    assert!(
        out.text.contains("panic: tethering socket closed"),
        "{}",
        out.text
    );
    let repeats = out
        .text
        .lines()
        .filter(|l| l.contains("get device status failed"))
        .count();
    assert!(
        repeats >= 2,
        "room left over goes to repetitions:\n{}",
        out.text
    );
    assert!(repeats < 120);
    // The marker counts the error lines it had no room for.
    let marker = out.text.lines().find(|l| l.starts_with("[… ")).unwrap();
    let kept_from_middle = out.kept_error_lines;
    assert!(
        marker.contains(&format!(
            "{kept_from_middle} error lines from it kept below"
        )) && marker.contains("more not shown"),
        "{marker}"
    );
    // Kept error lines stay in their order.
    let at = |s: &str| out.text.find(s).unwrap();
    assert!(at("10:00:00 monitor: [modem]") < at("panic: tethering"));
}

#[test]
fn an_error_line_repeated_word_for_word_is_kept_once() {
    let mut lines = vec!["build started".to_owned()];
    for i in 0..200 {
        lines.push(format!("compiling unit {i}"));
        if i % 40 == 7 {
            lines.push("error: linker `cc` not found".to_owned());
        }
    }
    lines.push("build failed".to_owned());
    let log = lines.join("\n");
    let out = truncate_output(&log, &TruncationPolicy::tokens(200), &counter(), &id());
    assert_eq!(
        out.text.matches("error: linker `cc` not found").count(),
        1,
        "already in the head, the line is not repeated from the middle:\n{}",
        out.text
    );
    assert!(out.text.find("error: linker").unwrap() < out.text.find("[… ").unwrap());
    assert_eq!(out.kept_error_lines, 0);
    let marker = out.text.lines().find(|l| l.starts_with("[… ")).unwrap();
    assert!(!marker.contains("not shown"), "{marker}");
}

#[test]
fn error_lines_without_room_are_counted_in_the_marker() {
    let mut lines = vec!["run".to_owned()];
    for i in 0..300 {
        lines.push(format!(
            "case {i}: error: expected {i} but the parser returned something else entirely"
        ));
    }
    lines.push("done".to_owned());
    let log = lines.join("\n");
    let policy = TruncationPolicy {
        keep_error_lines: true,
        ..TruncationPolicy::tokens(120)
    };
    let out = truncate_output(&log, &policy, &counter(), &id());
    let marker = out.text.lines().find(|l| l.starts_with("[… ")).unwrap();
    assert!(
        marker.contains("not shown") || marker.contains("error lines in it"),
        "{marker}"
    );
    assert!(counter().count_text(&out.text) <= 144, "within 120 x 1.2");
}

/// Issue 45: when only the marker fits, it still says how many error lines it dropped.
#[test]
fn a_marker_alone_counts_the_error_lines_it_drops() {
    let mut lines = vec!["run".to_owned()];
    for i in 0..300 {
        lines.push(format!(
            "case {i}: error: expected {i} but the parser returned something else entirely"
        ));
    }
    lines.push("done".to_owned());
    let log = lines.join("\n");
    let out = truncate_output(&log, &TruncationPolicy::tokens(25), &counter(), &id());
    assert!(
        out.text.starts_with("[… ") && !out.text.contains('\n'),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(", 300 error lines in it;"),
        "{}",
        out.text
    );
    assert!(counter().count_text(&out.text) <= 30);
}

#[test]
fn room_the_error_lines_do_not_use_goes_to_the_head_and_tail() {
    let c = counter();
    for limit in [200usize, 500, 2_000] {
        // Short lines, and one short error line in the middle: the room set aside for error lines
        // is mostly unused, and the cut must still land within a few tokens of its limit.
        let mut raw: String = (0..3_000).map(|i| format!("{}\n", i % 10)).collect();
        raw.insert_str(raw.len() / 2, "error: E1\n");
        let policy = TruncationPolicy {
            serialization_buffer: 1.0,
            ..TruncationPolicy::tokens(limit)
        };
        let t = truncate_output(&raw, &policy, &c, &id());
        assert!(t.truncated, "{t:?}");
        assert_eq!(t.kept_error_lines, 1, "{}", t.text);
        assert!(t.text.contains("error: E1"), "{}", t.text);
        assert!(t.tokens <= limit, "{} > {limit}", t.tokens);
        assert!(
            t.tokens + 8 >= limit,
            "{} tokens of a {limit}-token budget with one error line",
            t.tokens
        );
    }
}

#[test]
fn repetitions_that_fit_are_all_kept_and_every_removed_line_is_counted() {
    let c = counter();
    // 60 occurrences of one error (differing in their digits only) spread over a long log of
    // other lines: they fit in the room for error lines, so every one is kept, well past the
    // number of lines a cut gives up after when they do not fit.
    let mut lines: Vec<String> = Vec::new();
    for i in 0..3_000 {
        lines.push(format!("step {i} ok"));
        if i % 50 == 25 {
            lines.push(format!(
                "error 17: socket closed at 10:{:02}:{:02}",
                i / 60 % 60,
                i % 60
            ));
        }
    }
    let raw = lines.join("\n");
    let policy = TruncationPolicy {
        serialization_buffer: 1.0,
        ..TruncationPolicy::tokens(4_000)
    };
    let t = truncate_output(&raw, &policy, &c, &id());
    assert!(t.truncated, "{t:?}");
    let repeats = t.text.lines().filter(|l| l.starts_with("error 17")).count();
    assert_eq!(repeats, 60, "{}", t.text);
    // Every line of the input is either in the output or counted as removed by the marker.
    let markers = t.text.lines().filter(|l| l.starts_with("[… ")).count();
    assert_eq!(markers, 1, "{}", t.text);
    let kept = t.text.lines().count() - markers;
    assert_eq!(
        t.removed_lines + kept,
        lines.len(),
        "{} removed + {kept} kept of {} lines",
        t.removed_lines,
        lines.len()
    );
}
