//! A line diff of a settings file before and after, for `--dry-run`: unchanged runs are shortened
//! to a few lines of context around each change.

/// Lines of context kept around a change.
const CONTEXT: usize = 2;

/// Above this many lines on either side the diff is the whole file removed and added (the
/// quadratic table would be too large; settings files are far smaller).
const MAX_LINES: usize = 5_000;

/// A unified-style diff (`-` removed, `+` added, ` ` context, `...` skipped) of `before` and
/// `after`; empty when they are equal.
pub fn diff(before: &str, after: &str) -> String {
    if before == after {
        return String::new();
    }
    let a: Vec<&str> = before.lines().collect();
    let b: Vec<&str> = after.lines().collect();
    let ops = if a.len() > MAX_LINES || b.len() > MAX_LINES {
        a.iter()
            .map(|l| ('-', *l))
            .chain(b.iter().map(|l| ('+', *l)))
            .collect()
    } else {
        lcs_ops(&a, &b)
    };
    render(&ops)
}

fn lcs_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<(char, &'a str)> {
    let (n, m) = (a.len(), b.len());
    // table[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut table = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            table[i][j] = if a[i] == b[j] {
                table[i + 1][j + 1] + 1
            } else {
                table[i + 1][j].max(table[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || table[i][j + 1] >= table[i + 1][j]) {
            ops.push(('+', b[j]));
            j += 1;
        } else {
            ops.push(('-', a[i]));
            i += 1;
        }
    }
    ops
}

fn render(ops: &[(char, &str)]) -> String {
    let near_change = |k: usize| {
        let lo = k.saturating_sub(CONTEXT);
        let hi = (k + CONTEXT + 1).min(ops.len());
        ops[lo..hi].iter().any(|(op, _)| *op != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (op, line)) in ops.iter().enumerate() {
        if *op == ' ' && !near_change(k) {
            if !skipped {
                out.push_str("...\n");
                skipped = true;
            }
            continue;
        }
        skipped = false;
        out.push(*op);
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::diff;

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(diff("a\nb\n", "a\nb\n"), "");
    }

    #[test]
    fn an_added_line_shows_with_context() {
        let before = "1\n2\n3\n4\n5\n6\n7\n";
        let after = "1\n2\n3\n4\nnew\n5\n6\n7\n";
        assert_eq!(diff(before, after), "...\n 3\n 4\n+new\n 5\n 6\n...\n");
    }

    #[test]
    fn a_removed_line_is_marked() {
        assert_eq!(diff("a\nb\n", "a\n"), " a\n-b\n");
    }
}
