//! Pages of a long text for tool results: at most a budget of characters as they are written in
//! JSON (a quote, backslash or newline takes two, another control character six), starting at a
//! cursor counted in characters of the text, with the cursor of the next page.

/// One page of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The characters of this page.
    pub text: String,
    /// Characters in the whole text.
    pub total: usize,
    /// Where the next page starts, `None` on the last.
    pub next: Option<usize>,
}

/// The page of `text` starting at character `cursor`, at most `budget` JSON-escaped characters
/// (at least one character, so that paging always moves on). An error names a cursor past the end.
pub fn page(text: &str, cursor: usize, budget: usize) -> Result<Page, String> {
    let total = text.chars().count();
    if cursor > total {
        return Err(format!(
            "`cursor` {cursor} is past the end ({total} characters)"
        ));
    }
    let mut out = String::new();
    let mut used = 0;
    let mut taken = 0;
    for c in text.chars().skip(cursor) {
        let cost = match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if c.is_control() => 6,
            _ => 1,
        };
        if used + cost > budget && taken > 0 {
            break;
        }
        used += cost;
        taken += 1;
        out.push(c);
    }
    let end = cursor + taken;
    Ok(Page {
        text: out,
        total,
        next: (end < total).then_some(end),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::page;

    #[test]
    fn pages_cover_the_text_once_in_order() {
        let text = "ab\"c\nd\u{1}é".repeat(50);
        let mut cursor = 0;
        let mut joined = String::new();
        loop {
            let p = page(&text, cursor, 17).unwrap();
            assert!(serde_json::to_string(&p.text).unwrap().len() - 2 <= 17 + 6);
            joined.push_str(&p.text);
            match p.next {
                Some(n) => cursor = n,
                None => break,
            }
        }
        assert_eq!(joined, text);
    }

    #[test]
    fn a_cursor_past_the_end_is_an_error_and_the_end_an_empty_page() {
        assert!(page("abc", 4, 10).unwrap_err().contains("past the end"));
        let last = page("abc", 3, 10).unwrap();
        assert_eq!((last.text.as_str(), last.next), ("", None));
    }
}
