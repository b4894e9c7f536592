//! Error signals: whether a line of tool output reports a failure (used to keep such lines when a
//! long output is cut, and by fact extraction to find the key error line).
//!
//! A line is an error line when it carries a failure marker (`FAILED`, `npm ERR!`, apt's `E: `,
//! pytest's `E   `, "No such file", "not found"), reports a non-zero exit code, or uses an error
//! word (`error`, `failed`, `panic`, `traceback`, `denied`, ...) as a word of its own. Not:
//! - a harness's header line (Codex's `Chunk ID: 3f2a9c`, `Wall time: 0.5 seconds`, `Output:`),
//!   unless it reports a non-zero exit code (`Process exited with code 1`);
//! - a line that reports a success: a passing test (`✓ …`, `test … ok`, `… PASSED`, `ok  pkg`), a
//!   `status=ok` field;
//! - an error word inside a name (`libgpg-error-dev/stable`, `serde-error-chain`, `src/errors/`),
//!   one that counts nothing (`0 failed`, `errors=0`, `without errors`) or names a metric
//!   (`error=0.031`), and a lower-case error word in a package's description
//!   (`python3-tblib - traceback serialization library; error handling`, pip's `Summary:`).

/// Case-insensitive words that mark a failure when they appear as a word in a line.
const ERROR_WORDS: &[&str] = &[
    "error",
    "errors",
    "failed",
    "failure",
    "fatal",
    "panic",
    "panicked",
    "traceback",
    "exception",
    "segfault",
    "aborted",
    "denied",
    "cannot",
    "undefined",
];

/// Case-sensitive markers of failing tests and tool errors that the error words do not cover
/// (pytest, cargo, jest, go test, npm, shells).
const ERROR_MARKERS: &[&str] = &[
    "FAILED",
    "FAIL:",
    "FAIL ",
    "Err(",
    "ERR!",
    "No such file",
    "not found",
    "✗",
    "✘",
    "✕",
];

/// Markers that make a line an error even when it also reads as a success.
const HARD_MARKERS: &[&str] = &["FAILED", "panicked", "Traceback"];

/// pytest prints the failing assertion's explanation on lines starting with `E` and three spaces.
const PYTEST_ERROR_PREFIX: &str = "E   ";

/// Openings of error lines (once indentation is trimmed): apt's fetch errors (`Err:1 http://…`),
/// TAP's failing test (`not ok 3 - …`). apt's other errors are `E: ` and a capital
/// ([`APT_ERROR_OPENING`]).
const ERROR_OPENINGS: &[&str] = &["Err:", "not ok "];
/// apt's error lines: `E: Unable to locate package foo` (a drive letter in a table, `E:    None`,
/// is not one).
const APT_ERROR_OPENING: &str = "E: ";

/// Openings of lines that report a success: a passing test (jest/vitest, TAP, go test, cargo's
/// summary) or a step that worked.
const OK_OPENINGS: &[&str] = &[
    "✓",
    "✔",
    "√ ",
    "[ok]",
    "[OK]",
    "[PASS]",
    "PASS ",
    "PASS:",
    "PASSED",
    "--- PASS",
    "ok ",
    "ok\t",
    "OK ",
    "Successfully ",
    "SUCCESS",
    "test result: ok",
];

/// Endings of lines that report a success (cargo's and unittest's `test … ok`, pytest's `PASSED`).
const OK_ENDINGS: &[&str] = &["... ok", "... OK", " PASSED", " ✓"];

/// Values of a `key=value` field that say it went well (`status=ok`, `result=success`).
const OK_VALUES: &[&str] = &["ok", "success", "succeeded", "passed", "pass"];

/// Values after an error word used as a key that count nothing (`errors=0`, `failed: none`).
const NOTHING_VALUES: &[&str] = &["0", "none", "null", "nil", "false", "no"];

/// Words before an error word that say there was none (`0 failed`, `no errors`, `without errors`).
const NEGATIONS: &[&str] = &["0", "no", "zero", "without"];

/// Characters that join words into one name (a package, a path, a module): an error word joined
/// to another word by one of them is part of the name (`libgpg-error-dev`, `src/errors/mod.rs`).
const NAME_JOINERS: &[u8] = b"-./\\@";

/// Header lines a harness puts before a command's output (Codex: `Chunk ID: 3f2a9c`, `Wall time:
/// 0.5 seconds`, `Process exited with code 1`, `Original token count: 1234`, `Output:`; its older
/// format `Exit code: 1`).
const HARNESS_HEADERS: &[&str] = &[
    "Chunk ID:",
    "Wall time:",
    "Original token count:",
    "Total output lines:",
    "Process running with session ID",
    "Process exited with code",
    "Exit code:",
];
/// A header line is short; a longer line that starts like one is program output.
const MAX_HEADER_CHARS: usize = 64;

/// True when `line` is a line of a harness's header (Codex's `Chunk ID:`, `Wall time:`,
/// `Exit code:` and the like, and a bare `Output:`): metadata about the command, never its output.
pub fn is_harness_header(line: &str) -> bool {
    let t = line.trim();
    t == "Output:"
        || (t.len() <= MAX_HEADER_CHARS && HARNESS_HEADERS.iter().any(|h| t.starts_with(h)))
}

/// True when `line` carries an error signal (see the module documentation).
pub fn is_error_line(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() {
        return false;
    }
    if is_harness_header(t) {
        return has_failing_exit_code(line);
    }
    let apt_error = t
        .strip_prefix(APT_ERROR_OPENING)
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
    if apt_error
        || line.starts_with(PYTEST_ERROR_PREFIX)
        || ERROR_OPENINGS.iter().any(|o| t.starts_with(o))
    {
        return true;
    }
    if says_ok(t) && !opens_with_error(t) && !HARD_MARKERS.iter().any(|m| line.contains(m)) {
        return false;
    }
    if ERROR_MARKERS.iter().any(|m| line.contains(m)) || has_failing_exit_code(line) {
        return true;
    }
    has_error_word(line)
}

fn has_failing_exit_code(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    (lower.contains("exit") || lower.contains("return"))
        && super::exit_code(line).is_some_and(|c| c != 0)
}

/// True for a line that reports a success (a passing test, a `status=ok` field).
fn says_ok(t: &str) -> bool {
    OK_OPENINGS.iter().any(|o| t.starts_with(o))
        || OK_ENDINGS.iter().any(|e| t.ends_with(e))
        || t.contains(" PASSED ")
        || t.split([' ', '\t', ',', ';']).any(|field| {
            field.split_once('=').is_some_and(|(key, value)| {
                !key.is_empty()
                    && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && OK_VALUES.contains(&value.to_ascii_lowercase().as_str())
            })
        })
}

/// True for a line that opens with an error word and a colon (`Error: expected status=ok`): an
/// error message, whatever it quotes.
fn opens_with_error(t: &str) -> bool {
    let word_end = t
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(t.len());
    t[word_end..].starts_with(':')
        && ERROR_WORDS.contains(&t[..word_end].to_ascii_lowercase().as_str())
}

/// True for a package's one-line description: `name - text` (apt-cache search, with a lower-case
/// package name first) or a `Summary:` / `Description:` field (pip show, dpkg -s).
fn is_description(t: &str) -> bool {
    if ["Summary:", "Description:", "description:"]
        .iter()
        .any(|f| t.starts_with(f))
    {
        return true;
    }
    let Some((name, _)) = t.split_once(" - ") else {
        return false;
    };
    !name.is_empty()
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.+_/@".contains(&b))
}

/// True when an error word of `line` stands as a word of its own (see the module documentation).
fn has_error_word(line: &str) -> bool {
    let bytes = line.as_bytes();
    let description = is_description(line.trim());
    // The word before, when only spaces separate it from this one.
    let mut prev = String::new();
    let mut prev_end = 0;
    for (at, end) in word_spans(line) {
        let word = line[at..end].to_ascii_lowercase();
        let negated = NEGATIONS.contains(&prev.as_str()) && line[prev_end..at].trim().is_empty();
        if ERROR_WORDS.contains(&word.as_str()) && !negated {
            let upper = line[at..end].bytes().all(|b| !b.is_ascii_lowercase());
            let joined_before = at >= 2
                && NAME_JOINERS.contains(&bytes[at - 1])
                && bytes[at - 2].is_ascii_alphanumeric();
            let joined_after = end + 1 < bytes.len()
                && NAME_JOINERS.contains(&bytes[end])
                && bytes[end + 1].is_ascii_alphanumeric();
            let in_name = (joined_before || joined_after) && !upper;
            let prose = description && !upper && bytes.get(end) != Some(&b':');
            if !in_name && !prose && !counts_nothing(&line[end..]) {
                return true;
            }
        }
        prev = word;
        prev_end = end;
    }
    false
}

/// True when the text after an error word gives it a value that counts nothing or measures
/// something: `=0`, `: none`, `=false`, `=0.031`.
fn counts_nothing(after: &str) -> bool {
    let Some(value) = after
        .trim_start_matches(' ')
        .strip_prefix(['=', ':'])
        .map(|v| v.trim_start_matches(' '))
    else {
        return false;
    };
    let token: &str = value
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '.')
        .next()
        .unwrap_or("");
    let token = token.trim_end_matches('.');
    let metric = token.contains('.') && token.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    (metric || NOTHING_VALUES.contains(&token.to_ascii_lowercase().as_str()))
        && ends_field(&value[token.len()..])
}

/// True when `rest` (the text after a field's value) starts no sentence: nothing, a separator, or
/// another `key=value` / `key: value` field (`errors=0 warnings=2`, but not `error: none of the
/// selected packages`).
fn ends_field(rest: &str) -> bool {
    let r = rest.trim_start_matches('.').trim_start();
    if r.is_empty() || r.starts_with([',', ';', ')', ']', '}', '|']) {
        return true;
    }
    let word_end = r
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(r.len());
    word_end > 0 && r[word_end..].starts_with(['=', ':'])
}

/// The byte spans of the words of `line` (runs of ASCII letters, digits and `_`).
fn word_spans(line: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = line.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        while i < bytes.len() && !is_word(bytes[i]) {
            i += 1;
        }
        if i >= bytes.len() {
            return None;
        }
        let start = i;
        while i < bytes.len() && is_word(bytes[i]) {
            i += 1;
        }
        Some((start, i))
    })
}

/// The message of an error line: its trimmed text with every run of ASCII digits as one `#`, so the
/// same error at another time, line number, address or count has the same message.
pub fn error_message_key(line: &str) -> String {
    let mut key = String::with_capacity(line.len());
    let mut in_digits = false;
    for c in line.trim().chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                key.push('#');
            }
            in_digits = true;
        } else {
            key.push(c);
            in_digits = false;
        }
    }
    key
}

#[cfg(test)]
mod tests {
    use super::{is_error_line, is_harness_header};

    #[test]
    fn recognises_signals() {
        assert!(is_error_line("thread 'main' panicked at src/lib.rs:3:5"));
        assert!(is_error_line(
            "FAILED tests/test_api.py::test_login - AssertionError"
        ));
        assert!(is_error_line("E   assert 1 == 2"));
        assert!(!is_error_line("THE   END"));
        assert!(is_error_line("Traceback (most recent call last):"));
        assert!(is_error_line("Process exited with code 2"));
        assert!(!is_error_line("Process exited with code 0"));
        assert!(!is_error_line(
            "test result: ok. 12 passed; 0 failed; 0 ignored"
        ));
        assert!(!is_error_line("Compiled with no errors"));
        assert!(!is_error_line("all good"));
    }

    /// Real error lines of compilers, package managers, test runners and shells.
    #[test]
    fn real_error_lines_are_found() {
        for line in [
            "error: could not compile `app` (lib) due to 2 previous errors",
            "Error: Cannot find module 'express'",
            "ERROR tests/test_db.py - sqlite3.OperationalError: no such table: users",
            "2026-11-28 10:00:01,123 ERROR [worker] job 7 crashed",
            "E: Unable to locate package python3-foo",
            "Err:3 http://deb.debian.org/debian bookworm/main amd64 libfoo1 amd64 1.2-3",
            "npm ERR! code ELIFECYCLE",
            "npm ERR! 404 Not Found - GET https://registry.npmjs.org/left-padd",
            "npm error code E404",
            "fatal: not a git repository (or any of the parent directories): .git",
            "Traceback (most recent call last):",
            "FAILED tests/test_api.py::test_login - AssertionError: 401 != 200",
            "test tests::parse_error ... FAILED",
            "thread 'main' panicked at src/main.rs:12:5:",
            "error[E0308]: mismatched types",
            "FAIL src/components/App.test.tsx",
            "--- FAIL: TestErrorPath (0.00s)",
            "not ok 3 - error handling rejects bad input",
            "  ✕ rejects an expired token (12 ms)",
            "bash: cargo-nextest: command not found",
            "cat: config/app.yaml: No such file or directory",
            "bash: ./deploy.sh: Permission denied",
            "Process exited with code 1",
            "Exit code: 127",
            "make: *** [Makefile:12: build] Error 2",
            "[2026-11-28 10:00:01: ERROR/MainProcess] Task app.sync raised an exception",
            "src/app.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.",
            "  3:5  error  'x' is defined but never used  no-unused-vars",
            "myapp - ERROR - database connection failed",
            "Tests: 1 failed, 4 passed, 5 total",
            "errors: 3",
            "error: none of the selected packages contains these features: tls",
            "error: 0 is not a valid port",
            "Error: expected status=ok, got status=fail",
            "Segmentation fault (core dumped): segfault at 0",
        ] {
            assert!(is_error_line(line), "{line}");
        }
    }

    /// Codex CLI puts a header before a command's output; only its exit code line can be an error.
    #[test]
    fn a_harness_header_is_never_the_error() {
        for line in [
            "Chunk ID: 3f2a9c",
            "Wall time: 0.5 seconds",
            "Original token count: 1234",
            "Output:",
            "Process exited with code 0",
        ] {
            assert!(is_harness_header(line), "{line}");
            assert!(!is_error_line(line), "{line}");
        }
        assert!(is_harness_header("Process exited with code 1"));
        assert!(is_error_line("Process exited with code 1"));
        // Program output that merely starts like a header is output.
        assert!(!is_harness_header("Output: error: disk full"));
        assert!(is_error_line("Output: error: disk full"));
    }

    /// Progress and test lines that report a success, whatever words their names hold.
    #[test]
    fn lines_that_report_a_success_are_not_errors() {
        for line in [
            "step 12/40 status=ok errors=0",
            "[ok] status=ok elapsed=3s",
            "sync shard=3 status=OK retried_failures=2 error=none",
            "job 9 result=success (handled 2 transient errors)",
            "test tests::error::parse_rejects_garbage ... ok",
            "test_error_handling (tests.test_api.ApiTest) ... ok",
            "tests/test_errors.py::test_timeout PASSED                    [ 50%]",
            "  ✓ returns 404 when the user is not found (3 ms)",
            "ok  \tgithub.com/acme/app/errors\t0.012s",
            "ok 4 - error handling rejects bad input",
            "--- PASS: TestFatalError (0.00s)",
            "Successfully installed error-tracker-1.2.0 http-errors-2.0.0",
        ] {
            assert!(!is_error_line(line), "{line}");
        }
        // A success line with a hard failure marker is still an error line.
        assert!(is_error_line("[ok] status=ok but test_x FAILED"));
    }

    /// Counts of nothing and metrics named after errors.
    #[test]
    fn error_words_that_count_nothing_are_not_errors() {
        for line in [
            "step 3 errors=0 warnings=2",
            "summary: failed: 0, passed: 12",
            "epoch 4 loss=0.213 error=0.031",
            "validation error: 0.0412",
            "finished without errors",
            "0 failed, 12 passed",
            "error=None retries=0",
        ] {
            assert!(!is_error_line(line), "{line}");
        }
        assert!(is_error_line("step 3 errors=2 warnings=0"));
        // A zero that belongs to something else does not negate the word after it.
        assert!(is_error_line("case 0: error: expected 0, got 1"));
    }

    /// `apt list`, `apt-cache search`, `pip show`, `npm ls`, `cargo tree` output: error words in
    /// package names and descriptions.
    #[test]
    fn error_words_in_package_names_and_descriptions_are_not_errors() {
        for line in [
            "libgpg-error0/stable,now 1.46-1 amd64 [installed,automatic]",
            "libgpg-error-dev/stable 1.46-1 amd64",
            "python3-tblib - traceback serialization library; error handling",
            "serde-error-chain - Error chains for serde deserialization failures",
            "libsegfault-dev - catch segfault and print a backtrace",
            "Summary: Traceback serialization library, error handling made simple",
            "Name: error-chain",
            "├── error-ex@1.3.2",
            "│ └─┬ http-errors@2.0.0 deduped",
            "├── thiserror v1.0.69 (proc-macro)",
            "  src/errors/mod.rs | 12 ++++++------",
            "Installing /home/dev/.cargo/bin/cargo-fatal-lint",
            "$ biome check --error-on-warnings",
            "E:          None   FullyDecrypted   Off",
        ] {
            assert!(!is_error_line(line), "{line}");
        }
    }
}
