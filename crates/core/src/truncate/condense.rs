//! The condenser of `compactctl run`: noise that no agent reads, dropped from a command's output
//! before the budget cut, whether the output fits or not, and announced in one line.
//!
//! Rules, each general to terminals and test runners, none touching an error line or the last
//! line:
//! - terminal rendering: a line with colour codes, carriage returns (progress redraws, CRLF line
//!   endings) or backspaces becomes what a terminal finally shows of it ([`render_line`]);
//! - long trailing whitespace (at least [`LONG_TRAILING_BLANKS`] spaces or tabs, as padded table
//!   columns leave) is trimmed; shorter trailing blanks are kept (a diff may be about them);
//! - runs of blank lines become one blank line;
//! - runs of at least [`MIN_REPEAT_RUN`] identical lines become one line counted
//!   (`line (repeated N times)`, as [`super::densify`] writes it);
//! - passing-test lines of cargo test (`test x ... ok`), pytest (`x::y PASSED`), go test -v
//!   (`=== RUN`, `--- PASS:`) and jest/vitest (`✓ name`) are dropped when the same run reports its
//!   totals (cargo's `test result:`, pytest's `== N passed ==`, go's `ok`/`PASS`/`FAIL` lines,
//!   jest's `Tests: N passed`), so the count of passing tests stays in view.
//!
//! Runs of lines equal once numbers are ignored are not collapsed: in the outputs that fit a
//! budget they are data an agent asked for (process ids, ports, dated file names). What was
//! condensed is said in one line at the start of the result, naming the recall reference; an
//! output with nothing to condense is returned as `None` (passed byte for byte).

use super::signals::is_error_line;
use super::terminal::render_line;
use super::{thousands, MARKER_OPEN};
use crate::model::ItemId;

/// Identical consecutive lines are counted from this many on (two copies cost less than a count).
const MIN_REPEAT_RUN: usize = 3;
/// Trailing spaces and tabs are trimmed from this many on: padding, not content. Fewer may be
/// meaningful (a Markdown line break, a whitespace change a diff shows).
const LONG_TRAILING_BLANKS: usize = 8;

/// What the condenser did to one output, for its announcement.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Changes {
    /// Lines rendered as a terminal shows them (colour codes, carriage returns, backspaces).
    rendered: usize,
    /// Lines whose long trailing whitespace was trimmed.
    trimmed: usize,
    /// Blank lines dropped from runs of blank lines.
    blank: usize,
    /// Runs of identical lines counted, and the lines they dropped.
    repeat_runs: usize,
    repeated: usize,
    /// Passing-test lines dropped, per runner named.
    passing: Vec<(&'static str, usize)>,
}

impl Changes {
    fn any(&self) -> bool {
        *self != Changes::default()
    }

    fn announce(&self, reference: &ItemId) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.rendered > 0 {
            parts.push(format!(
                "{} {} shown as a terminal shows {} (colour codes, carriage returns)",
                thousands(self.rendered),
                plural(self.rendered, "line", "lines"),
                plural(self.rendered, "it", "them")
            ));
        }
        if self.trimmed > 0 {
            parts.push(format!(
                "trailing blanks trimmed from {} {}",
                thousands(self.trimmed),
                plural(self.trimmed, "line", "lines")
            ));
        }
        if self.blank > 0 {
            parts.push(format!(
                "{} blank {} dropped",
                thousands(self.blank),
                plural(self.blank, "line", "lines")
            ));
        }
        if self.repeat_runs > 0 {
            parts.push(format!(
                "{} repeated {} counted",
                thousands(self.repeated),
                plural(self.repeated, "line", "lines")
            ));
        }
        for (runner, n) in &self.passing {
            parts.push(format!(
                "{} passing {} test {} dropped (totals kept)",
                thousands(*n),
                runner,
                plural(*n, "line", "lines")
            ));
        }
        format!(
            "{MARKER_OPEN}condensed: {}; full output: compactctl recall {reference}]",
            parts.join(", ")
        )
    }
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// A test runner whose passing lines may be dropped when the run reports its totals.
struct Runner {
    name: &'static str,
    passing: fn(&str) -> bool,
    totals: fn(&str) -> bool,
}

const RUNNERS: &[Runner] = &[
    Runner {
        name: "cargo",
        passing: |l| l.starts_with("test ") && l.ends_with(" ... ok"),
        totals: |l| l.starts_with("test result: "),
    },
    Runner {
        name: "pytest",
        passing: |l| {
            let head = l.split(" PASSED").next().unwrap_or("");
            l.contains(" PASSED") && head.contains("::") && !head.contains(' ')
        },
        totals: |l| l.starts_with('=') && l.trim_end().ends_with('=') && l.contains(" passed"),
    },
    Runner {
        name: "go",
        passing: |l| {
            let t = l.trim_start();
            t.starts_with("=== RUN ")
                || t.starts_with("=== PAUSE ")
                || t.starts_with("=== CONT ")
                || t.starts_with("--- PASS: ")
        },
        totals: |l| {
            l == "PASS" || l == "FAIL" || l.starts_with("ok  \t") || l.starts_with("FAIL\t")
        },
    },
    Runner {
        name: "jest",
        passing: |l| {
            let t = l.trim_start();
            t.starts_with("✓ ") || t.starts_with("√ ") || t.starts_with("✔ ")
        },
        totals: |l| {
            let t = l.trim_start();
            t.starts_with("Tests:") && t.contains(" passed")
        },
    },
];

/// The condensed form of `text` with its announcement first, or `None` when nothing in it is
/// noise by the rules of the module documentation. `reference` is the id that recalls `text`.
pub fn condense(text: &str, reference: &ItemId) -> Option<String> {
    let mut changes = Changes::default();
    let raw: Vec<&str> = text.split('\n').collect();
    // The last line that is not blank (never dropped, never merged).
    let last = raw.iter().rposition(|l| !l.trim().is_empty());
    let mut lines: Vec<(String, bool)> = Vec::with_capacity(raw.len());
    for line in &raw {
        let mut shown = if line.contains(['\u{1b}', '\r', '\u{8}']) {
            let r = render_line(line).trim_end().to_owned();
            if r != *line {
                changes.rendered += 1;
            }
            r
        } else {
            (*line).to_owned()
        };
        let body = shown.trim_end_matches([' ', '\t']).len();
        if shown.len() - body >= LONG_TRAILING_BLANKS {
            shown.truncate(body);
            changes.trimmed += 1;
        }
        let error = is_error_line(&shown);
        lines.push((shown, error));
    }
    let dropped = passing_lines(&lines, last, &mut changes);
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        if dropped[i] {
            i += 1;
            continue;
        }
        let (line, error) = &lines[i];
        // The next kept lines equal to this one (dropped lines in between are skipped).
        let mut run = vec![i];
        let mut j = i + 1;
        while j < lines.len() && (dropped[j] || lines[j].0 == *line) {
            if !dropped[j] {
                run.push(j);
            }
            j += 1;
        }
        let end = run.last().copied().unwrap_or(i) + 1;
        let holds_last = last.is_some_and(|l| run.contains(&l));
        if line.trim().is_empty() && run.len() > 1 {
            changes.blank += run.len() - 1;
            out.push(line.clone());
        } else if !line.trim().is_empty() && !error && !holds_last && run.len() >= MIN_REPEAT_RUN {
            changes.repeat_runs += 1;
            changes.repeated += run.len() - 1;
            out.push(format!("{line} (repeated {} times)", run.len()));
        } else {
            out.extend(run.iter().map(|&k| lines[k].0.clone()));
        }
        i = end;
    }
    if !changes.any() {
        return None;
    }
    Some(format!(
        "{}\n{}",
        changes.announce(reference),
        out.join("\n")
    ))
}

/// Which lines are passing-test lines of a runner whose totals the output also reports (never an
/// error line, never the last line `last`); counts them in `changes`.
fn passing_lines(
    lines: &[(String, bool)],
    last: Option<usize>,
    changes: &mut Changes,
) -> Vec<bool> {
    let mut dropped = vec![false; lines.len()];
    for runner in RUNNERS {
        if !lines.iter().any(|(l, _)| (runner.totals)(l)) {
            continue;
        }
        let mut n = 0;
        for (k, (line, error)) in lines.iter().enumerate() {
            if !dropped[k] && !*error && Some(k) != last && (runner.passing)(line) {
                dropped[k] = true;
                n += 1;
            }
        }
        if n > 0 {
            changes.passing.push((runner.name, n));
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> ItemId {
        ItemId::new("i0123456789")
    }

    #[test]
    fn nothing_to_condense_gives_none() {
        for text in [
            "",
            "one\ntwo\n",
            "a  \nmarkdown line break kept\n\nsingle blank\n",
            "x\nx\ny\n",
            "test a ... ok\ntest b ... ok\nno totals here",
        ] {
            assert_eq!(condense(text, &id()), None, "{text:?}");
        }
    }

    #[test]
    fn redraws_and_colours_become_what_the_terminal_shows() {
        let text = "\u{1b}[32mok\u{1b}[0m\n 10%\r 50%\r100%\nline\r\ndone";
        let out = condense(text, &id()).unwrap_or_default();
        assert_eq!(
            out,
            "[… condensed: 3 lines shown as a terminal shows them (colour codes, carriage \
             returns); full output: compactctl recall i0123456789]\nok\n100%\nline\ndone"
        );
    }

    #[test]
    fn blank_runs_long_trailing_blanks_and_repeats() {
        let text = format!(
            "a\n\n\n\nb{}\nsame\nsame\nsame\nsame\nend\n",
            " ".repeat(LONG_TRAILING_BLANKS)
        );
        let out = condense(&text, &id()).unwrap_or_default();
        assert_eq!(
            out,
            "[… condensed: trailing blanks trimmed from 1 line, 2 blank lines dropped, 3 repeated \
             lines counted; full output: compactctl recall i0123456789]\n\
             a\n\nb\nsame (repeated 4 times)\nend\n"
        );
    }

    #[test]
    fn error_lines_and_the_last_line_are_never_merged() {
        let text = "error: x\nerror: x\nerror: x\nend\nend\nend";
        assert_eq!(condense(text, &id()), None);
    }

    #[test]
    fn passing_tests_dropped_only_with_totals() {
        let text = "running 4 tests\ntest a ... ok\ntest b ... FAILED\ntest c ... ok\n\
                    test d ... ok\n\nfailures:\n    b\n\n\
                    test result: FAILED. 3 passed; 1 failed; 0 ignored\n";
        let out = condense(text, &id()).unwrap_or_default();
        assert_eq!(
            out,
            "[… condensed: 3 passing cargo test lines dropped (totals kept); full output: \
             compactctl recall i0123456789]\nrunning 4 tests\ntest b ... FAILED\n\nfailures:\n    \
             b\n\ntest result: FAILED. 3 passed; 1 failed; 0 ignored\n"
        );
        let pytest = "tests/a.py::test_one PASSED [ 50%]\ntests/a.py::test_two PASSED [100%]\n\
                      ===== 2 passed in 0.12s =====";
        let out = condense(pytest, &id()).unwrap_or_default();
        assert!(out.ends_with("]\n===== 2 passed in 0.12s ====="), "{out}");
        let go = "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    b_test.go:9: \
                  bad\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tpkg\t0.01s";
        let out = condense(go, &id()).unwrap_or_default();
        assert!(
            out.ends_with(
                "]\n    b_test.go:9: bad\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tpkg\t0.01s"
            ),
            "{out}"
        );
        let jest = "PASS src/a.test.ts\n  ✓ adds (3 ms)\n  ✓ subtracts\n\
                    Tests:       2 passed, 2 total";
        let out = condense(jest, &id()).unwrap_or_default();
        assert!(out.contains("2 passing jest test lines"), "{out}");
        assert!(out.ends_with("]\nPASS src/a.test.ts\nTests:       2 passed, 2 total"));
    }
}
