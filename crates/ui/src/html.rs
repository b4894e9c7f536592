//! HTML building blocks: [`escape`] (the one function every piece of text goes through on its way
//! into a page), path segments and query strings, and small formatting helpers.
//!
//! Transcript text is hostile input: a message may hold `<script>`, an `onerror=` attribute or a
//! `javascript:` link. Every text and attribute value is written through [`escape`], and every URL
//! a page links to is built here from a fixed path and [`encode_segment`]ed parts, so no text of a
//! session can open a tag, close an attribute or choose a URL scheme.

use std::fmt::Write as _;

/// Escapes `text` for HTML text and for a double- or single-quoted attribute value: `&`, `<`, `>`,
/// `"` and `'` become character references; control characters other than tab, newline and
/// carriage return become U+FFFD (they have no business in a page and some confuse parsers).
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

/// Percent-encodes one path segment or query value: every byte but ASCII letters, digits and
/// `-._~` is escaped, so the result never holds `/`, `:`, `?`, `#`, `&`, quotes or spaces.
pub fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `%XX` escapes (and `+` as a space, for query values when `plus_is_space`) decoded; `None` when
/// an escape is broken or the result is not UTF-8.
pub fn percent_decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = text.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The value of `key` in a query string (`a=1&b=2`), decoded; `None` when absent or undecodable.
pub fn query_param(query: &str, key: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == key).then(|| percent_decode(v, true)).flatten()
    })
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

/// A UTC time as `2026-11-25 10:52:07Z` from milliseconds since the Unix epoch (civil date from
/// days, Howard Hinnant's algorithm).
pub fn utc(ms: u64) -> String {
    let secs = ms / 1_000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
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
#[allow(clippy::unwrap_used)]
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
    fn segments_cannot_carry_a_scheme_or_a_path() {
        assert_eq!(
            encode_segment("javascript:alert(1)"),
            "javascript%3Aalert%281%29"
        );
        assert_eq!(
            encode_segment("a/b c?d#e&f\"'"),
            "a%2Fb%20c%3Fd%23e%26f%22%27"
        );
        assert_eq!(encode_segment("i0123~2.x_y-z"), "i0123~2.x_y-z");
        let hostile = "é/<x>";
        assert_eq!(
            percent_decode(&encode_segment(hostile), false).as_deref(),
            Some(hostile)
        );
    }

    #[test]
    fn queries_decode_and_broken_escapes_are_refused() {
        assert_eq!(
            query_param("a=1&q=foo+bar%21", "q").as_deref(),
            Some("foo bar!")
        );
        assert_eq!(query_param("q", "q").as_deref(), Some(""));
        assert_eq!(query_param("a=1", "q"), None);
        assert_eq!(percent_decode("bad%2", false), None);
        assert_eq!(percent_decode("%ff", false), None);
    }

    #[test]
    fn numbers_and_times_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(percent(Some(0.4567)), "45.7%");
        assert_eq!(percent(None), "-");
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(1_764_067_927_000), "2025-11-25 10:52:07Z");
        assert_eq!(preview("a  b\n\nc", 10), "a b c");
        assert_eq!(preview("abcdef", 3), "abc…");
    }
}
