//! Search output grouped by file. `grep -n` / ripgrep / Claude Code's `Grep` print one match per line
//! as `path:line:text` (context lines as `path-line-text`), so a file with twenty matches spells its
//! path twenty times. [`group_by_file`] writes each run of two or more lines of one file under a
//! `path:` header line, each line after it indented by a tab without the path; [`ungroup`] puts the
//! paths back, and a text is only rewritten when that gives back exactly the original.

/// At least this share of the non-empty lines must be `path:` or `path-` lines.
const MIN_MATCH_SHARE: f64 = 0.8;
/// Runs shorter than this stay as they are.
const MIN_RUN: usize = 2;

/// The path and the rest (separator included) of a search output line, when it has one: a path
/// without spaces that contains a `/` or a `.`, then `:` (a match) or `-` and a line number (a
/// context line); a path split at a `-` must end in a file name with an extension.
fn split_line(line: &str) -> Option<(&str, &str)> {
    if line.starts_with('\t') {
        return None;
    }
    let bytes = line.as_bytes();
    let stop = line.find(' ').unwrap_or(line.len());
    let plausible = |p: &str| !p.is_empty() && (p.contains('/') || p.contains('.'));
    if let Some(at) = line[..stop].find(':') {
        let path = &line[..at];
        return plausible(path).then(|| (path, &line[at..]));
    }
    (1..stop)
        .filter(|&i| bytes[i] == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        .map(|i| (&line[..i], &line[i..]))
        .find(|(p, _)| plausible(p) && p.rsplit('/').next().is_some_and(|f| f.contains('.')))
}

/// The grouped form of `text` (see the module documentation), when it is search output, grouping
/// shortens it and [`ungroup`] gives it back exactly.
pub fn group_by_file(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.split('\n').collect();
    let split: Vec<Option<(&str, &str)>> = lines.iter().map(|l| split_line(l)).collect();
    let non_empty = lines.iter().filter(|l| !l.is_empty()).count();
    let matched = split.iter().filter(|s| s.is_some()).count();
    if non_empty < MIN_RUN || (matched as f64) < MIN_MATCH_SHARE * non_empty as f64 {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        if i > 0 {
            out.push('\n');
        }
        let Some((path, _)) = split[i] else {
            out.push_str(lines[i]);
            i += 1;
            continue;
        };
        let mut run = 1;
        while split
            .get(i + run)
            .copied()
            .flatten()
            .is_some_and(|(p, _)| p == path)
        {
            run += 1;
        }
        if run < MIN_RUN {
            out.push_str(lines[i]);
        } else {
            out.push_str(path);
            out.push(':');
            for (_, rest) in split[i..i + run].iter().flatten() {
                out.push_str("\n\t");
                out.push_str(rest);
            }
        }
        i += run;
    }
    super::checked(text, out, ungroup)
}

/// The inverse of [`group_by_file`]: a line ending in `:` followed by tab-indented lines is a header;
/// each indented line gets the header's path back.
pub fn ungroup(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::with_capacity(text.len() * 2);
    let mut header: Option<&str> = None;
    let mut first = true;
    for (i, line) in lines.iter().enumerate() {
        if let (Some(path), Some(rest)) = (header, line.strip_prefix('\t')) {
            if !first {
                out.push('\n');
            }
            first = false;
            out.push_str(path);
            out.push_str(rest);
            continue;
        }
        header = None;
        let next_indented = lines.get(i + 1).is_some_and(|n| n.starts_with('\t'));
        if let Some(path) = line.strip_suffix(':').filter(|_| next_indented) {
            header = Some(path);
            continue;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(line);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn matches_of_one_file_share_a_header() {
        let text = "src/csv/reader.rs:14:    fn parse_row(&mut self) -> RowResult {\nsrc/csv/reader.rs:40:        let row = self.parse_row()?;\nsrc/csv/reader.rs-41-        row\ntests/read_rows.rs:9:    assert_eq!(reader.parse_row().unwrap(), expected_row);\n";
        let grouped = group_by_file(text).unwrap();
        assert_eq!(
            grouped,
            "src/csv/reader.rs:\n\t:14:    fn parse_row(&mut self) -> RowResult {\n\t:40:        let row = self.parse_row()?;\n\t-41-        row\ntests/read_rows.rs:9:    assert_eq!(reader.parse_row().unwrap(), expected_row);\n"
        );
        assert_eq!(ungroup(&grouped), text);
        // A list of files (files_with_matches) has nothing to group.
        assert_eq!(group_by_file("src/a.rs\nsrc/b.rs\n"), None);
        // Prose is not search output.
        assert_eq!(group_by_file("Found 3 files\nsee: below\nok"), None);
    }

    proptest! {
        #[test]
        fn the_round_trip_is_exact(lines in proptest::collection::vec(("[a-c]{1,2}(/[a-c]{1,2})?\\.rs|[a-c ]{0,3}", prop_oneof![Just(":"), Just("-"), Just("\t"), Just("")], "[0-9]{0,2}", prop_oneof![Just(":"), Just("-"), Just("")], "[ -~\t]{0,12}"), 0..25)) {
            let text: Vec<String> = lines.iter().map(|(a, b, c, d, e)| format!("{a}{b}{c}{d}{e}")).collect();
            let text = text.join("\n");
            if let Some(grouped) = group_by_file(&text) {
                prop_assert_eq!(ungroup(&grouped), text.clone());
                prop_assert!(grouped.len() < text.len());
            }
        }
    }
}
