//! BM25 search over a session's items, with a snippet around the first matching term.
//!
//! A document is one item: its text, and for a tool call its tool name and arguments. Terms are
//! runs of letters, digits and `_`, lower-cased; a path or a dotted name is also split into its
//! parts by that rule, so `src/lib.rs` is found by `lib`. Ranking is Okapi BM25 with the usual
//! `k1 = 1.2`, `b = 0.75`; ties go to the later item (the more recent state of things).

use compact_core::model::{Item, ItemBody};
use std::collections::HashMap;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;
/// Characters of a snippet before the first matching term.
const SNIPPET_BEFORE: usize = 80;
/// Characters of a snippet in all.
const SNIPPET_CHARS: usize = 280;
/// Most distinct query terms used (a pasted paragraph is not a query).
pub const MAX_QUERY_TERMS: usize = 32;

/// One ranked item.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Position of the item in the log.
    pub index: usize,
    /// BM25 score.
    pub score: f64,
    /// Text around the first matching term.
    pub snippet: String,
}

/// The searchable text of an item.
pub fn document(item: &Item) -> String {
    match item.body() {
        ItemBody::ToolCall(call) => format!("{} {}", call.name, call.arguments.to_text()),
        _ => item.plain_text(),
    }
}

/// The terms of `text`, in order.
pub fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
}

/// The items of `items` matching `query`, best first (all of them; the caller pages).
pub fn search(items: &[Item], query: &str) -> Vec<Hit> {
    let mut query_terms: Vec<String> = Vec::new();
    for t in terms(query) {
        if !query_terms.contains(&t) && query_terms.len() < MAX_QUERY_TERMS {
            query_terms.push(t);
        }
    }
    if query_terms.is_empty() || items.is_empty() {
        return Vec::new();
    }
    let docs: Vec<String> = items.iter().map(document).collect();
    let mut lengths = Vec::with_capacity(docs.len());
    let mut freqs: Vec<HashMap<usize, u32>> = Vec::with_capacity(docs.len());
    let mut df = vec![0u32; query_terms.len()];
    for doc in &docs {
        let mut len = 0usize;
        let mut tf: HashMap<usize, u32> = HashMap::new();
        for t in terms(doc) {
            len += 1;
            if let Some(q) = query_terms.iter().position(|x| *x == t) {
                *tf.entry(q).or_default() += 1;
            }
        }
        for q in tf.keys() {
            df[*q] += 1;
        }
        lengths.push(len);
        freqs.push(tf);
    }
    let n = docs.len() as f64;
    let avg = (lengths.iter().sum::<usize>() as f64 / n).max(1.0);
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| (((n - f64::from(d) + 0.5) / (f64::from(d) + 0.5)) + 1.0).ln())
        .collect();
    let mut hits: Vec<Hit> = freqs
        .iter()
        .enumerate()
        .filter(|(_, tf)| !tf.is_empty())
        .map(|(index, tf)| {
            let len = lengths[index] as f64;
            let score = tf
                .iter()
                .map(|(&q, &f)| {
                    let f = f64::from(f);
                    idf[q] * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * len / avg))
                })
                .sum();
            Hit {
                index,
                score,
                snippet: snippet(&docs[index], &query_terms),
            }
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.index.cmp(&a.index)));
    hits
}

/// About [`SNIPPET_CHARS`] characters of `doc` around the first query term, on one line.
fn snippet(doc: &str, query_terms: &[String]) -> String {
    let lower: Vec<char> = doc.chars().flat_map(char::to_lowercase).collect();
    let chars: Vec<char> = doc.chars().collect();
    // Lower-casing can change the number of characters; fall back to the start when it did.
    let at = if lower.len() == chars.len() {
        let text: String = lower.iter().collect();
        query_terms
            .iter()
            .filter_map(|t| text.find(t.as_str()))
            .min()
            .map_or(0, |byte| text[..byte].chars().count())
    } else {
        0
    };
    let start = at.saturating_sub(SNIPPET_BEFORE);
    let end = (start + SNIPPET_CHARS).min(chars.len());
    let mut out: String = chars[start..end]
        .iter()
        .map(|&c| if c.is_whitespace() { ' ' } else { c })
        .collect();
    out = out
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    if start > 0 {
        out.insert_str(0, "...");
    }
    if end < chars.len() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_core::model::Role;

    fn items(texts: &[&str]) -> Vec<Item> {
        texts
            .iter()
            .enumerate()
            .map(|(k, t)| Item::text(Role::User, *t).with_id(format!("i{k}")))
            .collect()
    }

    #[test]
    fn rarer_terms_rank_higher() {
        let items = items(&[
            "the build failed with the linker",
            "the tests pass",
            "the linker error: undefined symbol foo_bar",
        ]);
        let hits = search(&items, "linker foo_bar");
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].index, 2);
        assert!(hits[0].score > hits[1].score);
        assert!(hits[0].snippet.contains("foo_bar"));
    }

    #[test]
    fn paths_are_found_by_their_parts() {
        let items = items(&["edited src/engine/lib.rs", "nothing here"]);
        let hits = search(&items, "LIB");
        assert_eq!(hits.iter().map(|h| h.index).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn an_empty_query_finds_nothing() {
        assert!(search(&items(&["a b c"]), "  ,; ").is_empty());
    }

    #[test]
    fn snippets_are_cut_around_the_match_on_char_boundaries() {
        let long = format!("{} needle {}", "é".repeat(500), "ü".repeat(500));
        let hits = search(&items(&[&long]), "needle");
        assert!(hits[0].snippet.starts_with("..."));
        assert!(hits[0].snippet.ends_with("..."));
        assert!(hits[0].snippet.contains("needle"));
        assert!(hits[0].snippet.chars().count() <= SNIPPET_CHARS + 6);
    }
}
