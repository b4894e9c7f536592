//! The hook's log: one line per failure, appended, so that a hook that printed nothing can be
//! explained. Only the reason is written (an error names files, lines and fields, never transcript
//! content), with control characters removed and the length capped.

use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// Longest logged reason, in characters.
pub const MAX_REASON_CHARS: usize = 2_000;

/// The log line for `reason`: seconds since the epoch, the agent, the event, the reason.
pub fn line(agent: &str, event: &str, reason: &str) -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!(
        "{secs} compactctl hook {} {}: {}\n",
        clean(agent, 40),
        clean(event, 60),
        clean(reason, MAX_REASON_CHARS)
    )
}

/// Appends `line` to the log at `path`, creating the file and its directory. Failing to log is
/// itself silent: the hook must never fail the agent.
pub fn append(path: &Path, line: &str) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = file.write_all(line.as_bytes());
    }
}

/// `text` on one line: control characters as spaces, at most `max` characters.
fn clean(text: &str, max: usize) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_one_line_and_bounded() {
        let reason = format!("bad\nline\r\u{1b}[31m{}", "x".repeat(5_000));
        let l = line("claude-code", "Pre\nCompact", &reason);
        assert_eq!(l.matches('\n').count(), 1);
        assert!(l.ends_with('\n'));
        assert!(!l.contains('\u{1b}'));
        assert!(l.chars().count() < MAX_REASON_CHARS + 100);
    }
}
