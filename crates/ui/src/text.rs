//! Transcript text turned into page text: escaped, with the ids that reference stubs
//! (`[compact:ref ID]`) and truncation markers (`compactctl recall ID]`) name made into links to
//! their originals, checkpoint citations (`[a1b2c3d4, +2 more, e5f6]`) linked to the items they
//! cite, and search snippets with the match highlighted.

use crate::html::{escape, escape_into};
use compact_core::plan::REFERENCE_PREFIX;

/// What names an original in a stub or a marker: the text before the id.
const OPENERS: [&str; 2] = [REFERENCE_PREFIX, "compactctl recall "];

/// An id ends at whitespace, a bracket, a backquote, a quote or a comma.
fn id_end(text: &str) -> usize {
    text.find(|c: char| c.is_whitespace() || "[]`'\",;<>".contains(c))
        .unwrap_or(text.len())
}

/// `text` escaped, with every id a stub or marker names linked to `link(id)` (when it gives a URL;
/// the URL is escaped too).
pub fn linkify(text: &str, link: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut rest = text;
    loop {
        let next = OPENERS
            .iter()
            .filter_map(|o| rest.find(o).map(|at| (at, o.len())))
            .min();
        let Some((at, len)) = next else {
            escape_into(&mut out, rest);
            return out;
        };
        let start = at + len;
        escape_into(&mut out, &rest[..start]);
        let tail = &rest[start..];
        let end = id_end(tail);
        let id = &tail[..end];
        match (!id.is_empty()).then(|| link(id)).flatten() {
            Some(href) => {
                out.push_str(r#"<a class="recall" href=""#);
                out.push_str(&escape(&href));
                out.push_str(r#"">"#);
                escape_into(&mut out, id);
                out.push_str("</a>");
            }
            None => escape_into(&mut out, id),
        }
        rest = &tail[end..];
    }
}

/// A checkpoint's text escaped line by line, with each citation of an entry (the bracketed list
/// ending a `- ` line) linked through `link(cited)` where it resolves, and stub ids linked as in
/// [`linkify`].
pub fn checkpoint(
    text: &str,
    cite: &dyn Fn(&str) -> Option<String>,
    link: &dyn Fn(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(text.len() + 256);
    for line in text.lines() {
        let cited = line
            .trim_start()
            .starts_with("- ")
            .then(|| {
                let trimmed = line.trim_end();
                let open = trimmed.rfind(" [")?;
                trimmed.ends_with(']').then_some((open, trimmed))
            })
            .flatten();
        match cited {
            Some((open, trimmed)) => {
                out.push_str(&linkify(&trimmed[..open], link));
                out.push_str(" [");
                let inner = &trimmed[open + 2..trimmed.len() - 1];
                for (i, token) in inner.split(", ").enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    match cite(token) {
                        Some(href) => {
                            out.push_str(r#"<a class="cite" href=""#);
                            out.push_str(&escape(&href));
                            out.push_str(r#"">"#);
                            escape_into(&mut out, token);
                            out.push_str("</a>");
                        }
                        None => escape_into(&mut out, token),
                    }
                }
                out.push(']');
            }
            None => out.push_str(&linkify(line, link)),
        }
        out.push('\n');
    }
    out
}

/// The largest char boundary of `text` at or below `at`.
fn floor(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The smallest char boundary of `text` at or above `at`.
fn ceil(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// Where `needle` (ASCII-lowercased already) occurs in `haystack`, ignoring ASCII case.
pub fn find_ignore_case(haystack: &str, needle: &str) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    (0..=h.len() - n.len()).find(|&i| {
        haystack.is_char_boundary(i)
            && h[i..i + n.len()]
                .iter()
                .zip(n)
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
    })
}

/// A snippet of `text` around the match at `at` (of `len` bytes): up to `context` bytes each side,
/// escaped, the match in `<mark>`.
pub fn snippet(text: &str, at: usize, len: usize, context: usize) -> String {
    let start = floor(text, at.saturating_sub(context));
    let end = ceil(text, at + len + context);
    let hit_end = ceil(text, at + len);
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    escape_into(&mut out, &text[start..at]);
    out.push_str("<mark>");
    escape_into(&mut out, &text[at..hit_end]);
    out.push_str("</mark>");
    escape_into(&mut out, &text[hit_end..end]);
    if end < text.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn to(id: &str) -> Option<String> {
        (id != "unknown").then(|| format!("/item/{id}"))
    }

    #[test]
    fn stub_and_marker_ids_become_links_and_the_rest_stays_text() {
        let stub = "[compact:ref i0a1b2c3d4e] Output of `bash` <b> moved; recall `i0a1b2c3d4e`";
        let html = linkify(stub, &to);
        assert!(html.starts_with(
            r#"[compact:ref <a class="recall" href="/item/i0a1b2c3d4e">i0a1b2c3d4e</a>]"#
        ));
        assert!(html.contains("&lt;b&gt;"));
        let marker =
            "head\n[… 1,200 tokens / 40 lines truncated; full output: compactctl recall t-9]\ntail";
        assert!(linkify(marker, &to).contains(r#"<a class="recall" href="/item/t-9">t-9</a>]"#));
        assert_eq!(
            linkify("compactctl recall unknown]", &to),
            "compactctl recall unknown]"
        );
        // A hostile id is text, and its link is escaped.
        let html = linkify(r#"[compact:ref "><script>x</script>]"#, &to);
        assert!(!html.contains("<script>"));
    }

    #[test]
    fn checkpoint_citations_link_to_the_items_they_cite() {
        let text = "## Files\n- edited src/a.rs <x> [e2855f62, +2 more, i12]\n- no cites here";
        let html = checkpoint(
            text,
            &|c: &str| (c == "e2855f62").then(|| "/item/full".to_owned()),
            &to,
        );
        assert!(html.contains(r#"[<a class="cite" href="/item/full">e2855f62</a>, +2 more, i12]"#));
        assert!(html.contains("&lt;x&gt;"));
        assert!(html.contains("- no cites here\n"));
    }

    #[test]
    fn snippets_mark_the_match_on_char_boundaries() {
        let text = "ééé needle <b>ééé";
        let at = find_ignore_case(text, "needle").unwrap();
        let s = snippet(text, at, 6, 3);
        assert!(s.contains("<mark>needle</mark>"));
        assert!(s.contains("&lt;"));
        assert_eq!(find_ignore_case("ABC", "bc"), Some(1));
        assert_eq!(find_ignore_case("abc", "x"), None);
    }
}
