//! Line-number gutters of file reads. Claude Code's `Read` prints `{n:>6}→{line}` and `cat -n`
//! prints `{n:>6}\t{line}`: the padding costs about a token a line and says nothing. [`unpad_gutter`]
//! drops it; [`pad_gutter`] puts it back, and a text is only rewritten when that gives back exactly
//! the original.

/// Width the gutters right-align their numbers to.
const WIDTH: usize = 6;
/// Fewer numbered lines than this are not worth rewriting.
const MIN_LINES: usize = 3;

/// The separator after the number, when `line` is `<spaces><digits><sep>...` padded to [`WIDTH`].
fn padded(line: &str) -> Option<(usize, char)> {
    let digits_at = line.len() - line.trim_start_matches(' ').len();
    let rest = &line[digits_at..];
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits_at + digits != WIDTH.max(digits) || (digits_at == 0 && digits < WIDTH)
    {
        return None;
    }
    let sep = rest[digits..].chars().next()?;
    (sep == '→' || sep == '\t').then_some((digits_at, sep))
}

/// The text with every gutter's padding removed, when at least three lines carry one and
/// [`pad_gutter`] gives back exactly `text`.
pub fn unpad_gutter(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut numbered = 0usize;
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        match padded(line) {
            Some((spaces, _)) => {
                numbered += 1;
                out.push_str(&line[spaces..]);
            }
            None => out.push_str(line),
        }
    }
    if numbered < MIN_LINES {
        return None;
    }
    super::checked(text, out, pad_gutter)
}

/// The inverse of [`unpad_gutter`]: every line that starts with digits followed by `→` or a tab
/// gets its padding back.
pub fn pad_gutter(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let numbered =
            digits > 0 && matches!(line[digits..].chars().next(), Some('→') | Some('\t'));
        if numbered {
            for _ in digits..WIDTH {
                out.push(' ');
            }
        }
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
    fn a_read_loses_its_padding_and_gets_it_back() {
        let read = "     1→fn main() {\n     2→    println!(\"hi\");\n     3→}\n\n<system-reminder>x</system-reminder>";
        let dense = unpad_gutter(read).unwrap();
        assert_eq!(
            dense,
            "1→fn main() {\n2→    println!(\"hi\");\n3→}\n\n<system-reminder>x</system-reminder>"
        );
        assert_eq!(pad_gutter(&dense), read);
        let cat = "    98\tlet a = 1;\n    99\tlet b = 2;\n   100\tlet c = 3;\n";
        assert_eq!(
            unpad_gutter(cat).unwrap(),
            "98\tlet a = 1;\n99\tlet b = 2;\n100\tlet c = 3;\n"
        );
        // Numbers of six digits and more have no padding: nothing to gain.
        assert_eq!(
            unpad_gutter("999999→a\n1000000→b\n1000001→c\n1000002→d"),
            None
        );
        let crossing = "  9999→a\n 99999→b\n999999→c\n1000000→d";
        assert_eq!(
            unpad_gutter(crossing).unwrap(),
            "9999→a\n99999→b\n999999→c\n1000000→d"
        );
    }

    #[test]
    fn text_that_would_not_come_back_is_left_alone() {
        // An unpadded numbered line besides padded ones would gain padding on the way back.
        let mixed = "     1→a\n     2→b\n     3→c\n12\tnot a gutter";
        assert_eq!(unpad_gutter(mixed), None);
        // Too few numbered lines.
        assert_eq!(unpad_gutter("     1→a\nplain"), None);
        // Wrong padding (five wide) is not a gutter.
        assert_eq!(unpad_gutter("    1→a\n    2→b\n    3→c"), None);
    }

    proptest! {
        #[test]
        fn the_round_trip_is_exact(lines in proptest::collection::vec(("[ 0-9]{0,8}", prop_oneof![Just("→"), Just("\t"), Just(""), Just(":")], "[ -~→\t]{0,20}"), 0..30)) {
            let text: Vec<String> = lines.iter().map(|(a, b, c)| format!("{a}{b}{c}")).collect();
            let text = text.join("\n");
            if let Some(dense) = unpad_gutter(&text) {
                prop_assert_eq!(pad_gutter(&dense), text.clone());
                prop_assert!(dense.len() < text.len());
            }
        }

        #[test]
        fn real_gutters_always_shrink(n in 1usize..2000, len in 3usize..40, body in "[a-z ]{0,30}") {
            let text: Vec<String> = (n..n + len).map(|k| format!("{k:>6}→{body}")).collect();
            let text = text.join("\n");
            let dense = unpad_gutter(&text);
            prop_assert!(dense.is_some(), "{}", text);
            prop_assert_eq!(pad_gutter(&dense.unwrap()), text);
        }
    }
}
