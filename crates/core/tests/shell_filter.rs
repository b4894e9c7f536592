//! The shell-output filter of `compactctl run`: properties (within budget, fitting output passes
//! byte for byte, last line kept, error lines kept when the budget allows) and examples.

use compact_core::model::ItemId;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_core::truncate::{
    filter_shell_output, finish_shell_output, head_allowance, is_error_line, streamed_prefix,
};
use proptest::prelude::*;

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

fn id() -> ItemId {
    ItemId::new("i00aa11bb22")
}

/// A build log: many similar progress lines, a few errors in the middle, a summary at the end.
fn build_log(lines: usize, errors: &[usize]) -> String {
    let mut out = String::new();
    for i in 0..lines {
        if errors.contains(&i) {
            out.push_str(&format!(
                "error[E0308]: mismatched types in src/module_{i}.rs:{i}:7\n"
            ));
        } else {
            out.push_str(&format!(
                "   Compiling crate-{i} v0.{i}.3 (/home/user/project/crates/c{i})\n"
            ));
        }
    }
    out.push_str("error: could not compile `project` (lib) due to 3 previous errors\n");
    out
}

#[test]
fn output_that_fits_passes_byte_for_byte() {
    let c = counter();
    let text = "line one   \n\x1b[31mred\x1b[0m\n\n\n\n";
    let (out, cut) = filter_shell_output(text, 1_000, &c, &id());
    assert_eq!(out, text);
    assert!(!cut.changed);
}

#[test]
fn a_long_build_log_keeps_every_error_and_the_summary() {
    let c = counter();
    let text = build_log(3_000, &[700, 1_500, 2_200]);
    let (out, cut) = filter_shell_output(&text, 1_000, &c, &id());
    assert!(cut.changed);
    assert!(c.count_text(&out) <= 1_000, "{}", c.count_text(&out));
    for line in text.lines().filter(|l| is_error_line(l)) {
        assert!(out.contains(line), "lost {line}");
    }
    assert!(out.ends_with("due to 3 previous errors\n"));
    assert!(out.contains("compactctl recall i00aa11bb22"));
    // The streamed head is the start of the output, as printed while the command ran.
    let printed = streamed_prefix(&text, head_allowance(1_000), &c);
    assert!(printed > 0);
    assert!(out.starts_with(&text[..printed]));
}

#[test]
fn a_head_that_fills_the_budget_leaves_the_output_within_it() {
    let c = counter();
    let text = "word ".repeat(5_000);
    // A caller that printed too much: the result still never exceeds the budget when it can.
    let cut = finish_shell_output(&text, 0, 150, &c, &id());
    assert!(cut.tokens <= 150);
    assert!(cut.changed);
}

fn arb_output() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        4 => "[a-z ]{0,60}",
        1 => "(error|FAILED|panic): [a-z0-9 ]{0,30}",
        1 => Just("   Compiling x v1.0".to_owned()),
        1 => "[0-9 ,.]{0,80}",
        1 => "[\\PC]{0,40}",
    ];
    (prop::collection::vec(line, 1..400), any::<bool>()).prop_map(|(lines, newline)| {
        let mut s = lines.join("\n");
        if newline {
            s.push('\n');
        }
        s
    })
}

/// Cases per property: 64 (sized for CI), or `COMPACT_PROPTEST_CASES` for a long run.
fn cases() -> u32 {
    std::env::var("COMPACT_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn within_budget_and_last_line_kept(text in arb_output(), budget in 100usize..1_500) {
        let c = counter();
        let (out, cut) = filter_shell_output(&text, budget, &c, &id());
        prop_assert!(c.count_text(&out) <= budget);
        prop_assert_eq!(cut.tokens, c.count_text(&out));
        if c.count_text(&text) <= budget {
            prop_assert_eq!(&out, &text);
            prop_assert!(!cut.changed);
        } else {
            prop_assert!(out.contains("compactctl recall i00aa11bb22") || cut.rest.is_empty());
            let last = text.trim_end().rsplit('\n').next().unwrap_or("").trim_end();
            if !last.is_empty() && c.count_text(last) < budget / 4 {
                let repeated = format!("{last} (repeated");
                prop_assert!(
                    out.trim_end().ends_with(last) || out.contains(&repeated),
                    "last line `{}` lost",
                    last
                );
            }
        }
    }

    #[test]
    fn the_streamer_takes_exactly_the_lines_counting_each_would(
        text in arb_output(),
        allowance in 0usize..400,
    ) {
        // Reference: every line counted as it comes.
        let c = counter();
        let (mut used, mut expected) = (0, 0);
        for line in text.split_inclusive('\n') {
            let cost = c.count_text(line);
            if !line.ends_with('\n') || used + cost > allowance {
                break;
            }
            used += cost;
            expected += line.len();
        }
        prop_assert_eq!(streamed_prefix(&text, allowance, &c), expected);
    }

    #[test]
    fn error_lines_kept_when_the_budget_allows(
        filler in 200usize..2_000,
        errors in prop::collection::btree_set(0usize..2_000, 0..6),
    ) {
        let c = counter();
        let at: Vec<usize> = errors.into_iter().filter(|&e| e < filler).collect();
        let text = build_log(filler, &at);
        let (out, _) = filter_shell_output(&text, 1_000, &c, &id());
        prop_assert!(c.count_text(&out) <= 1_000);
        for line in text.lines().filter(|l| is_error_line(l)) {
            prop_assert!(out.contains(line), "lost {}", line);
        }
    }
}

#[test]
fn output_nothing_of_which_was_printed_keeps_its_start() {
    let c = counter();
    // Lines whose first words differ (in more than digits), so that they are not folded together.
    let word = |mut i: usize| {
        let mut w = String::new();
        for _ in 0..4 {
            w.push(char::from(b'a' + (i % 26) as u8));
            i /= 26;
        }
        w
    };
    let mut text: String = (0..3_000)
        .map(|i| format!("{} checked against {}\n", word(i), word(i * 7 + 3)))
        .collect();
    text.push_str("error: could not compile `project` (lib) due to 3 previous errors\n");
    // No head was streamed: the cut itself keeps the start of the output, with its end.
    let cut = finish_shell_output(&text, 0, 600, &c, &id());
    assert!(cut.changed);
    assert!(cut.tokens <= 600, "{}", cut.tokens);
    let first = &text[..text.find('\n').unwrap_or(text.len())];
    assert!(cut.rest.starts_with(first), "{}", cut.rest);
    assert!(
        cut.rest.ends_with("due to 3 previous errors\n"),
        "{}",
        cut.rest
    );
}

/// A Codex CLI tool output (header, then the command's output): an `apt` install whose progress
/// says `status=ok` and whose package lines name `error` libraries, with two real errors in the
/// middle. The cut keeps the two errors, and neither the header nor an ok or package line is taken
/// for an error.
#[test]
fn a_codex_output_keeps_its_real_errors_only() {
    let c = counter();
    let mut text = String::from(
        "Chunk ID: 3f2a9c\nWall time: 0.5 seconds\nProcess exited with code 100\n\
         Original token count: 5210\nOutput:\n",
    );
    for i in 0..300 {
        text.push_str(&format!("step {i}/300 status=ok errors=0 elapsed={i}s\n"));
        if i % 30 == 7 {
            text.push_str(&format!(
                "libgpg-error-dev/stable 1.46-{i} amd64\n\
                 python3-tblib - traceback serialization library; error handling\n"
            ));
        }
        if i == 150 {
            text.push_str("E: Unable to locate package python3-nonexistent\n");
        }
        if i == 210 {
            text.push_str("npm ERR! code ELIFECYCLE\n");
        }
    }
    text.push_str("done\n");
    let errors: Vec<&str> = text.lines().filter(|l| is_error_line(l)).collect();
    assert_eq!(
        errors,
        [
            "Process exited with code 100",
            "E: Unable to locate package python3-nonexistent",
            "npm ERR! code ELIFECYCLE"
        ]
    );
    for printed in [0, streamed_prefix(&text, head_allowance(600), &c)] {
        let cut = finish_shell_output(&text, printed, 600, &c, &id());
        let out = format!("{}{}", &text[..printed], cut.rest);
        assert!(cut.tokens <= 600, "{}", cut.tokens);
        assert!(out.starts_with("Chunk ID: 3f2a9c\n"), "{out}");
        assert!(
            out.contains("\nE: Unable to locate package python3-nonexistent\n"),
            "{out}"
        );
        assert!(out.contains("\nnpm ERR! code ELIFECYCLE\n"), "{out}");
        // Every error line of the removed middle is kept: none is counted as left out.
        assert!(
            !out.contains("not shown") && !out.contains("in it;"),
            "{out}"
        );
        assert!(out.ends_with("done\n"), "{out}");
    }
}

/// Issue 45: error lines take all the room after the head but the tail's floor, not half of it, so
/// a test run with forty distinct failures keeps every one within 1,000 tokens; the tail still ends
/// with the summary, and a flood that cannot fit says how many lines it left out.
#[test]
fn error_lines_take_the_room_they_need_and_the_marker_counts_the_rest() {
    let c = counter();
    let mut text = String::new();
    for i in 0..600 {
        if i % 15 == 7 {
            text.push_str(&format!(
                "FAILED tests/test_mod{i}.py::test_case_{i} - KeyError\n"
            ));
        } else {
            text.push_str(&format!(
                "tests/test_mod{i}.py::test_case_{i} PASSED [{i}%]\n"
            ));
        }
    }
    text.push_str("=== 40 failed, 560 passed in 12.34s ===\n");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("FAILED")).collect();
    assert_eq!(errors.len(), 40);
    assert!(errors.iter().all(|l| is_error_line(l)));
    let error_tokens: usize = errors.iter().map(|l| c.count_text(l) + 1).sum();
    // More than half of what the head leaves: the old rule could not keep them all.
    assert!(
        error_tokens > (1_000 - head_allowance(1_000)) / 2,
        "{error_tokens}"
    );
    let (out, cut) = filter_shell_output(&text, 1_000, &c, &id());
    assert!(cut.changed);
    assert!(c.count_text(&out) <= 1_000);
    for line in &errors {
        assert!(out.contains(line), "lost {line}");
    }
    assert!(out.ends_with("=== 40 failed, 560 passed in 12.34s ===\n"));

    // Three times as many failures cannot fit: the marker says how many were left out.
    let flood: String = (0..400)
        .map(|i| format!("FAILED tests/test_mod{i}.py::test_case_{i} - KeyError: 'k{i}'\n"))
        .collect::<String>()
        + "=== 400 failed in 99.00s ===\n";
    let (out, _) = filter_shell_output(&flood, 1_000, &c, &id());
    assert!(c.count_text(&out) <= 1_000);
    assert!(out.contains("more not shown"), "{out}");
    assert!(out.ends_with("=== 400 failed in 99.00s ===\n"));
}

/// Issue 45, found by `within_budget_and_last_line_kept` with 2,000 cases: at a tight budget the
/// error lines' share left the tail too little for the last line, which was kept as its end only.
/// The error lines now give up what the last line needs; the ones left out are counted.
#[test]
fn a_tight_budget_keeps_the_last_line_whole_over_error_lines() {
    let c = counter();
    let text = "a a  gq acb  qf bblb\n  a  gq xg  a\nerror: a\nerror: 0 0  0000a 0a\n\
                error:  0a 0a\n0  0,0, 0, ,.,. 0.0  0,.,. 0.0\n\
                dau  ajbbd  a  a  bba a  a  dbp  a  xj\n";
    assert!(c.count_text(text) > 100);
    let (out, cut) = filter_shell_output(text, 100, &c, &id());
    assert!(cut.tokens <= 100, "{}", cut.tokens);
    assert!(
        out.ends_with("\ndau  ajbbd  a  a  bba a  a  dbp  a  xj\n"),
        "{out}"
    );
    assert!(
        out.contains("\nerror: a\n") && out.contains("more not shown"),
        "{out}"
    );
}
