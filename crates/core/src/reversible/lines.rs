//! Runs of identical lines in logs and test output. Each run of [`MIN_RUN`] or more identical lines
//! keeps its first line, unchanged, followed by a marker line with the count of the copies removed;
//! [`expand_repeats`] puts them back, and a text is only rewritten when that gives back exactly the
//! original. No line's bytes change and the order stays (unlike a terminal rendering, which drops
//! escapes and trailing spaces: that one is left to tier 0's truncation).

/// Runs shorter than this stay (two copies cost less than a marker).
pub const MIN_RUN: usize = 3;
const MARKER_OPEN: &str = "[compact: the line above repeats ";
const MARKER_CLOSE: &str = " more times]";

fn marker_count(line: &str) -> Option<usize> {
    line.strip_prefix(MARKER_OPEN)?
        .strip_suffix(MARKER_CLOSE)?
        .parse()
        .ok()
}

/// The text with every run of identical lines collapsed (see the module documentation), when one
/// is and the round trip is exact.
pub fn collapse_repeats(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let mut run = 1;
        while i + run < lines.len() && lines[i + run] == lines[i] {
            run += 1;
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(lines[i]);
        if run >= MIN_RUN {
            changed = true;
            out.push('\n');
            out.push_str(&format!("{MARKER_OPEN}{}{MARKER_CLOSE}", run - 1));
        } else {
            for _ in 1..run {
                out.push('\n');
                out.push_str(lines[i]);
            }
        }
        i += run;
    }
    super::checked(text, out, expand_repeats).filter(|_| changed)
}

/// The inverse of [`collapse_repeats`]: each marker line becomes that many copies of the line above.
pub fn expand_repeats(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    let mut previous: Option<&str> = None;
    for (i, line) in text.split('\n').enumerate() {
        if let (Some(prev), Some(n)) = (previous, marker_count(line)) {
            for _ in 0..n {
                out.push('\n');
                out.push_str(prev);
            }
            continue;
        }
        if i > 0 {
            out.push('\n');
        }
        out.push_str(line);
        previous = Some(line);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_run_keeps_its_first_line_and_a_count() {
        let log = "start\nwaiting for lock\nwaiting for lock\nwaiting for lock\nwaiting for lock\n\x1b[31merror: timed out  \ndone";
        let out = collapse_repeats(log).unwrap();
        assert_eq!(
            out,
            "start\nwaiting for lock\n[compact: the line above repeats 3 more times]\n\x1b[31merror: timed out  \ndone"
        );
        assert_eq!(expand_repeats(&out), log);
        assert_eq!(collapse_repeats("a\na\nb"), None);
    }

    proptest! {
        #[test]
        fn the_round_trip_is_exact(lines in proptest::collection::vec(prop_oneof![Just("x".to_owned()), Just(String::new()), Just("[compact: the line above repeats 2 more times]".to_owned()), "[a-b ]{0,3}"], 0..40)) {
            let text = lines.join("\n");
            if let Some(out) = collapse_repeats(&text) {
                prop_assert_eq!(expand_repeats(&out), text.clone());
                prop_assert!(out.len() < text.len());
            }
        }
    }
}
