//! Text on its way into HTML or SVG: [`escape`] (the one function every piece of text goes through
//! into a page or a chart) and small number and text formatting helpers.

/// Escapes `text` for HTML or XML text and for a double- or single-quoted attribute value: `&`,
/// `<`, `>`, `"` and `'` become character references; control characters other than tab, newline
/// and carriage return become U+FFFD (they have no business in a page, some confuse parsers, and
/// XML forbids them).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    escape_into(&mut out, text);
    out
}

/// [`escape`], appending to `out`.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

/// `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `42.0%`, or `-` when there is nothing to divide.
pub fn percent(fraction: Option<f64>) -> String {
    fraction.map_or_else(|| "-".to_owned(), |f| format!("{:.1}%", f * 100.0))
}

/// At most `max` characters of `text` (whitespace runs collapsed), with `…` when cut.
pub fn preview(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in text.split_whitespace() {
        if count > 0 {
            out.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count >= max {
                out.push('…');
                return out;
            }
            out.push(c);
            count += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_in_text_and_attributes() {
        assert_eq!(
            escape(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(
            escape("\"><svg onload=alert(1)>"),
            "&quot;&gt;&lt;svg onload=alert(1)&gt;"
        );
        assert_eq!(
            escape("a\u{0}b\u{1b}[0m\tc\n"),
            "a\u{fffd}b\u{fffd}[0m\tc\n"
        );
        assert_eq!(escape("naïve — ok"), "naïve — ok");
    }

    #[test]
    fn numbers_and_previews_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(percent(Some(0.4567)), "45.7%");
        assert_eq!(percent(None), "-");
        assert_eq!(preview("a  b\n\nc", 10), "a b c");
        assert_eq!(preview("abcdef", 3), "abc…");
    }
}
