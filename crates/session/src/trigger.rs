//! Manual compaction requested in the conversation itself: the latest user message is one of the
//! configured trigger phrases (`/compact`, `/summarize`, "Please compact this conversation" by
//! default, seed 004), alone or followed by a note (`/compact keep the API notes`).

use compact_core::model::{Item, ItemBody, Role};

/// The default trigger phrases.
pub const DEFAULT_TRIGGER_PHRASES: [&str; 3] =
    ["/compact", "/summarize", "Please compact this conversation"];

/// Whether `item` is a user message asking for compaction: its text, trimmed, equals a phrase or
/// starts with one followed by white space (ASCII case is ignored). Returns the note after the
/// phrase (empty when none).
pub fn manual_request(item: &Item, phrases: &[String]) -> Option<String> {
    let ItemBody::Message(m) = item.body() else {
        return None;
    };
    if m.role != Role::User {
        return None;
    }
    let text: String = m
        .parts
        .iter()
        .filter_map(|p| p.as_text())
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    phrases.iter().find_map(|phrase| {
        let phrase = phrase.trim();
        if phrase.is_empty() || text.len() < phrase.len() || !text.is_char_boundary(phrase.len()) {
            return None;
        }
        let (head, rest) = text.split_at(phrase.len());
        let head_matches = head.eq_ignore_ascii_case(phrase);
        let separated =
            rest.starts_with(char::is_whitespace) || rest.chars().all(|c| c.is_ascii_punctuation());
        (head_matches && separated).then(|| {
            rest.trim()
                .trim_matches(|c: char| c.is_ascii_punctuation())
                .to_owned()
        })
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn phrases() -> Vec<String> {
        DEFAULT_TRIGGER_PHRASES
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    #[test]
    fn phrases_match_alone_or_with_a_note() {
        let p = phrases();
        let user = |t: &str| Item::text(Role::User, t);
        assert_eq!(manual_request(&user(" /compact "), &p), Some(String::new()));
        assert_eq!(
            manual_request(&user("/compact keep the API"), &p),
            Some("keep the API".into())
        );
        assert_eq!(
            manual_request(&user("please compact this conversation."), &p),
            Some(String::new())
        );
        assert_eq!(manual_request(&user("/compacted"), &p), None);
        assert_eq!(manual_request(&user("run /compact later"), &p), None);
        assert_eq!(
            manual_request(&Item::text(Role::Assistant, "/compact"), &p),
            None
        );
    }
}
