//! Markdown tables padded to their column widths (`| name    | size |`), as formatters and many tools
//! print them: the padding costs tokens and says nothing. [`unpad_tables`] writes each table's rows
//! without it (`|name|size|`, the separator `|-|-|`); [`pad_tables`] pads every table back to its
//! widest cell, and a text is only rewritten when that gives back exactly the original. Lines that
//! are not table rows (the prose around a table) are never touched.

/// A table needs at least this many rows (separator included) to be worth rewriting.
const MIN_ROWS: usize = 3;

fn is_row(line: &str) -> bool {
    let t = line.trim_end();
    t.len() >= 2 && t.starts_with('|') && t.ends_with('|') && line == t
}

/// The cells of a row, trimmed (a `\\|` inside a cell is not a separator).
fn cells(line: &str) -> Option<Vec<&str>> {
    let inner = &line[1..line.len() - 1];
    if inner.contains("\\|") {
        return None;
    }
    Some(inner.split('|').map(str::trim).collect())
}

fn is_separator(cells: &[&str]) -> bool {
    cells
        .iter()
        .all(|c| !c.is_empty() && c.bytes().all(|b| b == b'-'))
}

/// Calls `f` with each run of table rows (start index, lines) and copies other lines as they are.
fn map_tables(text: &str, mut f: impl FnMut(&[&str]) -> Option<Vec<String>>) -> (String, bool) {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let mut end = i;
        while end < lines.len() && is_row(lines[end]) {
            end += 1;
        }
        if end - i >= MIN_ROWS {
            if let Some(rows) = f(&lines[i..end]) {
                changed |= rows.iter().zip(&lines[i..end]).any(|(a, b)| a != b);
                out.extend(rows);
                i = end;
                continue;
            }
        }
        let stop = end.max(i + 1);
        out.extend(lines[i..stop].iter().map(|l| (*l).to_owned()));
        i = stop;
    }
    (out.join("\n"), changed)
}

fn rows_of<'a>(rows: &[&'a str]) -> Option<Vec<Vec<&'a str>>> {
    let parsed: Vec<Vec<&str>> = rows.iter().map(|r| cells(r)).collect::<Option<_>>()?;
    let n = parsed.first()?.len();
    (parsed.iter().all(|r| r.len() == n) && parsed.get(1).is_some_and(|r| is_separator(r)))
        .then_some(parsed)
}

/// The text with every padded table unpadded, when there is one and [`pad_tables`] gives back
/// exactly `text`.
pub fn unpad_tables(text: &str) -> Option<String> {
    let (out, changed) = map_tables(text, |rows| {
        let parsed = rows_of(rows)?;
        Some(
            parsed
                .iter()
                .map(|r| {
                    if is_separator(r) {
                        format!("|{}|", vec!["-"; r.len()].join("|"))
                    } else {
                        format!("|{}|", r.join("|"))
                    }
                })
                .collect(),
        )
    });
    super::checked(text, out, pad_tables).filter(|_| changed)
}

/// The inverse of [`unpad_tables`]: each table is padded to its widest cell per column (one space
/// each side, the separator dashes across the whole width).
pub fn pad_tables(text: &str) -> String {
    map_tables(text, |rows| {
        let parsed = rows_of(rows)?;
        let mut widths = vec![0usize; parsed[0].len()];
        for r in parsed.iter().filter(|r| !is_separator(r)) {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count()).max(1);
            }
        }
        Some(
            parsed
                .iter()
                .map(|r| {
                    let body: Vec<String> = if is_separator(r) {
                        widths.iter().map(|w| "-".repeat(w + 2)).collect()
                    } else {
                        r.iter()
                            .zip(&widths)
                            .map(|(c, w)| format!(" {c}{} ", " ".repeat(w - c.chars().count())))
                            .collect()
                    };
                    format!("|{}|", body.join("|"))
                })
                .collect(),
        )
    })
    .0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_table_loses_its_padding_and_the_prose_around_it_stays() {
        let text = "Benchmarks follow.\n\n| name      | time  |\n|-----------|-------|\n| parse     | 12 ms |\n| serialize | 3 ms  |\n\nAll figures are medians.";
        let out = unpad_tables(text).unwrap();
        assert_eq!(
            out,
            "Benchmarks follow.\n\n|name|time|\n|-|-|\n|parse|12 ms|\n|serialize|3 ms|\n\nAll figures are medians."
        );
        assert_eq!(pad_tables(&out), text);
        // A table not padded to its widest cell would not come back: left alone.
        assert_eq!(
            unpad_tables("| a | b |\n|---|---|\n| long cell | x |"),
            None
        );
        // Prose with pipes is not a table.
        assert_eq!(unpad_tables("a | b\nc | d\ne | f"), None);
    }

    proptest! {
        #[test]
        fn the_round_trip_is_exact(rows in proptest::collection::vec(proptest::collection::vec("[a-c ]{0,4}", 2), 0..6), prose in "[a-z |]{0,10}", padded in any::<bool>()) {
            let mut table: Vec<String> = rows.iter().map(|r| format!("|{}|", r.join("|"))).collect();
            if table.len() > 1 {
                table.insert(1, "|---|---|".to_owned());
            }
            let mut text = format!("{prose}\n{}\n{prose}", table.join("\n"));
            if padded {
                text = pad_tables(&text);
            }
            if let Some(out) = unpad_tables(&text) {
                prop_assert_eq!(pad_tables(&out), text.clone());
                prop_assert!(out.len() < text.len());
            }
        }
    }
}
