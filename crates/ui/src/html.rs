//! HTML building blocks: [`escape`] (the one function every piece of text goes through on its way
//! into a page), path segments and query strings, and small formatting helpers. The text helpers
//! the charts share ([`escape`], [`escape_into`], [`thousands`], [`percent`], [`preview`]) live in
//! `compact-chart` and are re-exported here.
//!
//! Transcript text is hostile input: a message may hold `<script>`, an `onerror=` attribute or a
//! `javascript:` link. Every text and attribute value is written through [`escape`], and every URL
//! a page links to is built here from a fixed path and [`encode_segment`]ed parts, so no text of a
//! session can open a tag, close an attribute or choose a URL scheme.

use std::fmt::Write as _;

pub use compact_chart::{escape, escape_into, percent, preview, thousands};

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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

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
    fn times_read_well() {
        assert_eq!(utc(0), "1970-01-01 00:00:00Z");
        assert_eq!(utc(1_764_067_927_000), "2025-11-25 10:52:07Z");
    }
}
