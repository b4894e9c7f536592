//! What a failure is, and which line of its output says why.
//!
//! A tool result is a failure when the harness flagged it as an error, when it reports a non-zero exit
//! code, when the call was interrupted, or (for a shell command whose harness reports no status) when
//! its output *ends* in an error: one of its last meaningful lines carries an error signal. A line
//! anywhere else that mentions "error" does not make a failure, and neither does a warning printed by a
//! command that succeeded (a shell start-up complaint, a deprecation notice from a git hook). Two
//! exceptions keep query commands honest: `grep` / `rg` / `diff` answering "no match" with exit 1, and
//! commands that only print a file or a log (`tail`, `cat`, `git log`), whose output is content.
//!
//! Start-up noise (the same error-looking line at the top of many successful outputs, such as a broken
//! shell profile) is learnt from the span itself and never chosen as a failure's error line.

use super::CommandStatus;
use crate::truncate::{exit_code, is_error_line, is_harness_header};
use std::collections::{HashMap, HashSet};

/// Longest kept error line, in characters (one message, not a stack dump).
const MAX_ERROR_LINE_CHARS: usize = 240;
/// How many meaningful lines at the end of an output decide whether it "ends in an error".
const TAIL_LINES: usize = 3;
/// How many meaningful lines at the top of a successful output are looked at for start-up noise.
const HEAD_LINES: usize = 3;
/// A line seen at the top of this many successful outputs is start-up noise.
const NOISE_MIN_OUTPUTS: usize = 2;

/// Commands whose exit status 1 means "no match" or "differences found", not failure.
const EXIT_ONE_MEANS_NO: &[&str] = &[
    "grep", "egrep", "fgrep", "rg", "ag", "diff", "cmp", "test", "[",
];
/// Commands that print files, logs or listings: their output is content, whatever it says.
const READERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "less",
    "more",
    "bat",
    "nl",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "find",
    "ls",
    "tree",
    "jq",
    "awk",
    "wc",
    "echo",
    "printf",
    "sort",
    "uniq",
    "cut",
    "journalctl",
    "sleep",
];
/// `git` subcommands that only show history or state.
const GIT_READERS: &[&str] = &["log", "show", "diff", "status", "blame", "grep", "reflog"];
/// Last lines that say only that something failed; the first error line above says why.
const GENERIC_TRAILERS: &[&str] = &[
    "error: test failed",
    "error: could not compile",
    "error: aborting due to",
    "npm err!",
    "elifecycle",
    "error command failed with exit code",
    "make: ***",
    "error: process completed with exit code",
    "failed (failures=",
    "error: script",
    "exited with code",
];
/// Lines that carry an error word but prove nothing on their own.
const CONTENTLESS: &[&str] = &["Traceback (most recent call last):", "Process exited"];
/// Words that make a line a warning rather than an error.
const WARNING_CUES: &[&str] = &["warning", "deprecat", "warn:", "[warn", "warn ", "notice:"];
/// Openings of advice lines (git's `hint:`, a harness's `Note:`): never the reason of a failure.
const ADVICE_OPENINGS: &[&str] = &["hint:", "note:", "tip:", "help:"];
/// Words that make a line an error even when it also mentions a warning.
const HARD_ERROR_CUES: &[&str] = &["error:", "error[", "fatal", "exception", "panicked"];

/// Error-looking lines that top many successful outputs in the span (a broken shell profile, a
/// tool's start-up complaint): never a failure's reason.
#[derive(Debug, Default)]
pub(super) struct Noise(HashSet<String>);

impl Noise {
    /// Learns the noise of a span from its successful outputs (`(status, flagged, text)` each).
    pub(super) fn learn<'a>(
        outputs: impl Iterator<Item = (CommandStatus, bool, &'a str)>,
    ) -> Noise {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (status, flagged, text) in outputs {
            let succeeded =
                status == CommandStatus::Exit(0) || (status == CommandStatus::Unknown && !flagged);
            if !succeeded {
                continue;
            }
            let mut local: HashSet<&str> = HashSet::new();
            for line in meaningful(text).take(HEAD_LINES) {
                if is_error_line(line) && local.insert(line) {
                    *seen.entry(line).or_default() += 1;
                }
            }
        }
        Noise(
            seen.into_iter()
                .filter(|(_, n)| *n >= NOISE_MIN_OUTPUTS)
                .map(|(l, _)| l.to_owned())
                .collect(),
        )
    }

    fn contains(&self, line: &str) -> bool {
        self.0.contains(line)
    }
}

/// Tags a harness wraps an error message in.
const WRAPPER_TAGS: &[&str] = &[
    "<tool_use_error>",
    "</tool_use_error>",
    "<error>",
    "</error>",
];
/// A line with fewer letters or digits than this says nothing (`]`, `});`, a closing tag).
const MIN_TELLING_CHARS: usize = 3;

/// Trimmed lines that say something (at least a few letters or digits besides wrapper tags) and are
/// neither a bare status line (`Exit code: 1`) nor a harness's header (Codex's `Chunk ID: 3f2a9c`,
/// `Output:`). Lines are returned whole, tags included.
fn meaningful(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.lines().map(str::trim).filter(|l| {
        let mut t = *l;
        for tag in WRAPPER_TAGS {
            t = t.strip_prefix(tag).unwrap_or(t);
            t = t.strip_suffix(tag).unwrap_or(t);
        }
        let telling = t.chars().filter(|c| c.is_alphanumeric()).count() >= MIN_TELLING_CHARS;
        telling && !is_status_line(t.trim()) && !is_harness_header(t)
    })
}

/// A line that only reports the exit status.
fn is_status_line(line: &str) -> bool {
    exit_code(line).is_some() && line.len() < 48
}

/// True for a warning line (a warning cue and no hard error cue).
pub(super) fn is_warning(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    ADVICE_OPENINGS.iter().any(|a| lower.starts_with(a))
        || (WARNING_CUES.iter().any(|c| lower.contains(c))
            && !HARD_ERROR_CUES.iter().any(|c| lower.contains(c)))
}

/// A stack-frame line printed after the error message (Node's `at f (x.js:1:2)`, a caret line).
fn is_frame(line: &str) -> bool {
    line.starts_with("at ")
        || line.starts_with("File \"")
        || line.starts_with("Node.js v")
        || line.chars().all(|c| matches!(c, '^' | '~' | ' '))
}

/// An error line worth reporting: an error signal that is not a warning nor start-up noise.
fn is_real_error(line: &str, noise: &Noise) -> bool {
    is_error_line(line) && !is_warning(line) && !noise.contains(line)
}

/// Whether a tool result is a failure (see the module documentation). `command` is the shell command
/// the call ran, if it was one.
pub(super) fn is_failure(
    command: Option<&str>,
    status: CommandStatus,
    text: &str,
    noise: &Noise,
) -> bool {
    match status {
        CommandStatus::Interrupted => true,
        CommandStatus::Exit(0) | CommandStatus::NoResult => false,
        CommandStatus::Exit(_) | CommandStatus::Failed => {
            !command.is_some_and(|c| benign_exit(c, status, text))
        }
        CommandStatus::Unknown => {
            command.is_some_and(|c| !is_reader(c)) && ends_in_error(text, noise)
        }
    }
}

/// True when one of the last meaningful lines (stack frames skipped) is a real error.
fn ends_in_error(text: &str, noise: &Noise) -> bool {
    meaningful(text)
        .rev()
        .filter(|l| !is_frame(l) && !noise.contains(l))
        .take(TAIL_LINES)
        .any(|l| is_real_error(l, noise))
}

/// True when a non-zero exit is the normal answer of a query command (`rg` finding nothing) and the
/// output shows no error.
fn benign_exit(command: &str, status: CommandStatus, output: &str) -> bool {
    if status != CommandStatus::Exit(1) || meaningful(output).any(is_error_line) {
        return false;
    }
    EXIT_ONE_MEANS_NO.contains(&last_command_word(command).0)
}

/// True when the command only prints content (the last command of its pipeline or `&&` chain is a
/// reader such as `tail` or `git log`).
fn is_reader(command: &str) -> bool {
    let (word, next) = last_command_word(command);
    READERS.contains(&word) || (word == "git" && GIT_READERS.contains(&next))
}

/// The command word (and the word after it) of the last segment of a command line.
fn last_command_word(command: &str) -> (&str, &str) {
    let last = command
        .rsplit(['|', ';', '&', '\n'])
        .find(|s| !s.trim().is_empty())
        .unwrap_or(command);
    let mut words = last
        .split_whitespace()
        .skip_while(|w| w.contains('=') || ["sudo", "time", "env", "nohup"].contains(w));
    let word = words.next().unwrap_or("");
    let word = word.rsplit('/').next().unwrap_or(word);
    (word, words.next().unwrap_or(""))
}

/// The line that says why a failure failed: the last real error line (stack frames, warnings and
/// start-up noise skipped; a line that reports an exit code only when no other error line is
/// left); when that line only says that something failed (`error: test failed`), the first real
/// error line is put before it. Falls back to the last meaningful line.
pub(super) fn error_line(text: &str, noise: &Noise) -> String {
    let lines: Vec<&str> = meaningful(text)
        .filter(|l| !CONTENTLESS.iter().any(|c| l.starts_with(c)) && !noise.contains(l))
        .collect();
    // A line that reports an exit code (`dofork: child died unexpectedly, exit code 0xC0000142`,
    // `Command failed with exit code 2`) restates that something failed; a real error line without
    // one says why, when there is one.
    let last_error = lines
        .iter()
        .rev()
        .find(|l| is_real_error(l, noise) && exit_code(l).is_none())
        .or_else(|| lines.iter().rev().find(|l| is_real_error(l, noise)));
    let line = match last_error {
        Some(last) => {
            let lower = last.to_ascii_lowercase();
            let generic = GENERIC_TRAILERS.iter().any(|g| lower.contains(g));
            let first = lines.iter().find(|l| is_real_error(l, noise) && *l != last);
            match first.filter(|_| generic) {
                Some(cause) => format!("{} … {last}", super::shorten(cause, 140)),
                None => (*last).to_owned(),
            }
        }
        // No error signal: the last line, unless it is advice, then the first line that is not.
        None => {
            let last = lines.iter().rev().find(|l| !is_frame(l));
            let line = match last {
                Some(l) if is_warning(l) => lines.iter().find(|l| !is_warning(l)).or(last),
                other => other,
            };
            line.map_or_else(|| "(no error output)".to_owned(), |l| (*l).to_owned())
        }
    };
    super::shorten(&line, MAX_ERROR_LINE_CHARS)
}

/// A command line reduced to what identifies the command: without a leading `cd DIR &&`, without
/// `2>&1`, without trailing `| tail` / `| head` / `| grep` filters, whitespace collapsed. Two runs
/// with the same key are the same command (for counting failures and seeing them resolved).
pub fn command_key(command: &str) -> String {
    let mut s = command.trim();
    while let Some(rest) = s.strip_prefix("cd ") {
        match rest.find("&&") {
            Some(at) => s = rest[at + 2..].trim_start(),
            None => break,
        }
    }
    let mut s = s.replace("2>&1", " ");
    while let Some(pos) = s.rfind('|') {
        let seg = s[pos + 1..].trim_start();
        let word = seg.split_whitespace().next().unwrap_or("");
        if ["tail", "head", "grep", "less", "cat", "tee"].contains(&word)
            && !s[..pos].ends_with('|')
        {
            s.truncate(pos);
        } else {
            break;
        }
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_noise() -> Noise {
        Noise::default()
    }

    #[test]
    fn a_warning_on_success_is_not_a_failure() {
        let out = "hint: the pre-commit hook uses a deprecated option\nwarning: deprecated config key\n[main 1a2b3c] Add x\n 1 file changed";
        assert!(!is_failure(
            Some("git commit -m x"),
            CommandStatus::Unknown,
            out,
            &no_noise()
        ));
        assert!(!is_failure(
            Some("npm run build"),
            CommandStatus::Unknown,
            "built\nwarning: 3 deprecated packages",
            &no_noise()
        ));
        assert!(!is_failure(
            Some("sleep 300 && tail -5 build.log"),
            CommandStatus::Unknown,
            "step 4\nerror: flaky network",
            &no_noise()
        ));
    }

    #[test]
    fn output_ending_in_an_error_is_a_failure() {
        let out = "Traceback (most recent call last):\n  File \"x.py\", line 1\nNameError: name 'rng' is not defined";
        assert!(is_failure(
            Some("python x.py"),
            CommandStatus::Unknown,
            out,
            &no_noise()
        ));
        assert_eq!(
            error_line(out, &no_noise()),
            "NameError: name 'rng' is not defined"
        );
        // An error early in a long successful run is not.
        let out = "error: retrying\nstep 1 ok\nstep 2 ok\nstep 3 ok\ndone";
        assert!(!is_failure(
            Some("make"),
            CommandStatus::Unknown,
            out,
            &no_noise()
        ));
    }

    #[test]
    fn start_up_noise_is_learnt_and_skipped() {
        let noisy = "/opt/conda/etc/profile.d/conda.sh:48: parse error near `()'";
        let ok1 = format!("{noisy}\nhello");
        let ok2 = format!("{noisy}\nworld");
        let failed = format!("Exit code 1\n{noisy}\nerror: no such table: users");
        let noise = Noise::learn(
            [
                (CommandStatus::Unknown, false, ok1.as_str()),
                (CommandStatus::Unknown, false, ok2.as_str()),
                (CommandStatus::Exit(1), true, failed.as_str()),
            ]
            .into_iter(),
        );
        assert!(!is_failure(
            Some("ls"),
            CommandStatus::Unknown,
            noisy,
            &noise
        ));
        assert!(!is_failure(
            Some("./run.sh"),
            CommandStatus::Unknown,
            noisy,
            &noise
        ));
        assert_eq!(error_line(&failed, &noise), "error: no such table: users");
    }

    /// Codex CLI's header (`Chunk ID`, `Wall time`, exit code, token count, `Output:`) is never
    /// the reason, even when the output under it holds no error line.
    #[test]
    fn a_harness_header_is_never_the_reason() {
        let header = "Chunk ID: 3f2a9c\nWall time: 0.5 seconds\nProcess exited with code 1\nOriginal token count: 1234\nOutput:\n";
        let warned = format!(
            "{header}npm WARN deprecated inflight@1.0.6: leaks memory\nnpm WARN deprecated glob@7.2.3: no longer supported"
        );
        assert_eq!(
            error_line(&warned, &no_noise()),
            "npm WARN deprecated glob@7.2.3: no longer supported"
        );
        assert_eq!(error_line(header, &no_noise()), "(no error output)");
        let failed = format!("{header}Building...\nsrc/app.ts(3,7): error TS2322: bad type\nDone");
        assert_eq!(
            error_line(&failed, &no_noise()),
            "src/app.ts(3,7): error TS2322: bad type"
        );
    }

    #[test]
    fn wrapper_tags_and_punctuation_say_nothing() {
        let out = "<tool_use_error>InputValidationError: questions is too long\n[\n  {}\n]</tool_use_error>";
        assert_eq!(
            error_line(out, &no_noise()),
            "<tool_use_error>InputValidationError: questions is too long"
        );
    }

    #[test]
    fn advice_is_not_the_reason() {
        let out = "The user doesn't want to proceed with this tool use.\nNote: the next message may hold a preference.";
        assert_eq!(
            error_line(out, &no_noise()),
            "The user doesn't want to proceed with this tool use."
        );
    }

    #[test]
    fn a_line_reporting_an_exit_code_is_not_the_reason_when_another_is() {
        let out = "Exit code 1\n      0 [main] bash (12728) child_copy: cygheap read copy failed, Win32 error 299\n      0 [main] bash 362 dofork: child -1 - forked process 12728 died unexpectedly, retry 0, exit code 0xC0000142, errno 11\n/etc/profile: fork: retry: Resource temporarily unavailable";
        assert_eq!(
            error_line(out, &no_noise()),
            "0 [main] bash (12728) child_copy: cygheap read copy failed, Win32 error 299"
        );
        // The only error line is kept even though it reports an exit code.
        let out = "building\nError: Command failed with exit code 2: tsc --noEmit";
        assert_eq!(
            error_line(out, &no_noise()),
            "Error: Command failed with exit code 2: tsc --noEmit"
        );
    }

    #[test]
    fn generic_trailers_get_their_cause() {
        let out = "test a ... ok\nthread 'b' panicked at src/lib.rs:4:5:\nassertion failed\nerror: test failed, to rerun pass `--lib`";
        assert_eq!(
            error_line(out, &no_noise()),
            "thread 'b' panicked at src/lib.rs:4:5: … error: test failed, to rerun pass `--lib`"
        );
    }

    #[test]
    fn query_commands_answering_no_are_not_failures() {
        assert!(!is_failure(
            Some("rg -n foo src"),
            CommandStatus::Exit(1),
            "",
            &no_noise()
        ));
        assert!(is_failure(
            Some("rg -n foo nope"),
            CommandStatus::Exit(2),
            "rg: nope: No such file or directory",
            &no_noise()
        ));
    }

    #[test]
    fn command_keys() {
        assert_eq!(
            command_key("cd /repo && cargo test -p auth 2>&1 | tail -20"),
            "cargo test -p auth"
        );
        assert_eq!(command_key("  npm   test "), "npm test");
        assert_eq!(command_key("a || tail -1"), "a || tail -1");
    }
}
