//! Unified diffs with wide context (`git diff -U20`, `git show -W`, `diff -U`): every changed line,
//! every file and hunk header and [`DIFF_CONTEXT`] context lines on each side of a change are kept;
//! a longer run of context lines between them becomes a marker naming how many lines it stood for
//! and the item id that restores the output. Default `git diff` output (three lines of context) is
//! left as it is.

/// Context lines kept on each side of a change.
pub const DIFF_CONTEXT: usize = 3;
/// A run of context lines is shortened only when it removes at least this many (a marker for
/// fewer would cost about what it saves).
const MIN_REMOVED: usize = 4;

/// Whether `line` opens a hunk (`@@ -a,b +c,d @@`).
fn hunk_header(line: &str) -> bool {
    line.starts_with("@@ -") && line[4..].contains(" @@")
}

/// `text` with the long context runs of its hunks shortened, or `None` when it is not a unified
/// diff or has no such run.
pub fn trim_diff_context(text: &str, reference: &crate::model::ItemId) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    if !lines.iter().any(|l| hunk_header(l)) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        if !hunk_header(lines[i]) {
            out.push_str(lines[i]);
            i += 1;
            continue;
        }
        out.push_str(lines[i]);
        i += 1;
        // The hunk's body: context (' ' or an empty line), changes ('+', '-'), and "\ No newline".
        let start = i;
        while i < lines.len() {
            let l = lines[i];
            let body = matches!(l.as_bytes().first(), Some(b' ' | b'+' | b'-' | b'\\'))
                || l == "\n"
                || l == "\r\n";
            if !body || l.starts_with("--- ") || l.starts_with("+++ ") {
                break;
            }
            i += 1;
        }
        changed |= trim_hunk(&lines[start..i], reference, &mut out);
    }
    changed.then_some(out)
}

/// Writes `body` (one hunk's lines) to `out` with its long context runs shortened; true when one
/// was.
fn trim_hunk(body: &[&str], reference: &crate::model::ItemId, out: &mut String) -> bool {
    let is_context = |l: &str| !(l.starts_with('+') || l.starts_with('-') || l.starts_with('\\'));
    let mut changed = false;
    let mut j = 0;
    while j < body.len() {
        if !is_context(body[j]) {
            out.push_str(body[j]);
            j += 1;
            continue;
        }
        let run_start = j;
        while j < body.len() && is_context(body[j]) {
            j += 1;
        }
        let run = &body[run_start..j];
        // Context before the hunk's first change and after its last needs keeping on one side only.
        let keep_head = if run_start == 0 { 0 } else { DIFF_CONTEXT };
        let keep_tail = if j == body.len() { 0 } else { DIFF_CONTEXT };
        let removed = run.len().saturating_sub(keep_head + keep_tail);
        // A hunk without a change (not something diff writes) is left whole.
        if removed < MIN_REMOVED || (run_start == 0 && j == body.len()) {
            run.iter().for_each(|l| out.push_str(l));
            continue;
        }
        run[..keep_head].iter().for_each(|l| out.push_str(l));
        out.push_str(&format!(
            "[… {removed} unchanged lines; recall `{reference}` for them]\n"
        ));
        run[run.len() - keep_tail..]
            .iter()
            .for_each(|l| out.push_str(l));
        changed = true;
    }
    changed
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::model::ItemId;

    fn diff(context_before: usize, between: usize, after: usize) -> String {
        let mut d = String::from("diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,40 +1,40 @@ fn main()\n");
        for k in 0..context_before {
            d.push_str(&format!(" let before_{k} = {k};\n"));
        }
        d.push_str("-let old_value = 1;\n+let new_value = 2;\n");
        for k in 0..between {
            d.push_str(&format!(" let between_{k} = {k};\n"));
        }
        d.push_str("-remove_me();\n");
        for k in 0..after {
            d.push_str(&format!(" let after_{k} = {k};\n"));
        }
        d
    }

    #[test]
    fn default_git_context_is_left_alone() {
        assert_eq!(trim_diff_context(&diff(3, 6, 3), &ItemId::new("i1")), None);
        assert_eq!(
            trim_diff_context("no diff here\n", &ItemId::new("i1")),
            None
        );
    }

    #[test]
    fn wide_context_keeps_every_change_and_three_lines_around_it() {
        let id = ItemId::new("i0123456789");
        let text = diff(20, 30, 20);
        let out = trim_diff_context(&text, &id).unwrap();
        // Every header and changed line is kept, in order.
        let kept: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
        let outs: Vec<&str> = out
            .lines()
            .filter(|l| !l.starts_with(' ') && !l.starts_with("[…"))
            .collect();
        assert_eq!(kept, outs);
        // Three lines on each side of each change; the rest named by a marker with the id.
        assert!(out.contains(
            "[… 17 unchanged lines; recall `i0123456789` for them]\n let before_17 = 17;\n"
        ));
        assert!(out.contains(" let before_19 = 19;\n-let old_value"));
        assert!(!out.contains("before_16"));
        assert!(out.contains("[… 17 unchanged lines; recall `i0123456789` for them]"));
        assert!(out.contains("[… 24 unchanged lines; recall `i0123456789` for them]"));
        assert!(out.contains(" let between_2 = 2;\n[…"));
        assert!(out.contains("them]\n let between_27 = 27;\n"));
        assert!(out.contains(" let between_29 = 29;\n-remove_me();"));
        assert!(out.contains("[… 17 unchanged lines"));
        assert!(out.ends_with(
            " let after_2 = 2;\n[… 17 unchanged lines; recall `i0123456789` for them]\n"
        ));
        assert!(out.len() < text.len() / 2);
    }

    #[test]
    fn short_runs_stay_whole() {
        // 9 lines between two changes: 3 + 3 kept, 3 removed is under the minimum.
        assert_eq!(trim_diff_context(&diff(3, 9, 3), &ItemId::new("i1")), None);
        assert!(trim_diff_context(&diff(3, 10, 3), &ItemId::new("i1")).is_some());
    }
}
