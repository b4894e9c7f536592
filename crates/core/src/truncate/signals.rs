//! Error signals: whether a line of tool output reports a failure (used to keep such lines when a
//! long output is cut, and by fact extraction to find the key error line).

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
/// (pytest, cargo, jest, go test, shells).
const ERROR_MARKERS: &[&str] = &[
    "FAILED",
    "FAIL:",
    "FAIL ",
    "Err(",
    "No such file",
    "not found",
    "✗",
    "✘",
];

/// pytest prints the failing assertion's explanation on lines starting with `E` and three spaces.
const PYTEST_ERROR_PREFIX: &str = "E   ";

/// True when `line` carries an error signal: an error word (`error`, `failed`, `panic`, `traceback`,
/// `exception`, ...), a failing-test marker (`FAILED`, pytest's `E   ` lines), or a non-zero exit code.
pub fn is_error_line(line: &str) -> bool {
    if line.trim_start().is_empty() {
        return false;
    }
    if line.starts_with(PYTEST_ERROR_PREFIX) || ERROR_MARKERS.iter().any(|m| line.contains(m)) {
        return true;
    }
    let lower = line.to_ascii_lowercase();
    if (lower.contains("exit") || lower.contains("return"))
        && super::exit_code(line).is_some_and(|c| c != 0)
    {
        return true;
    }
    let mut prev = "";
    for word in lower
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
    {
        // "0 failed", "no errors" report the absence of failures.
        if ERROR_WORDS.contains(&word) && prev != "0" && prev != "no" {
            return true;
        }
        prev = word;
    }
    false
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
    use super::is_error_line;

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
}
