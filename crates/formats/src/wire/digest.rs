//! Wire fingerprints ([`WireDigest`](compact_core::model::WireDigest)): while decoding, every item
//! gets a 128-bit XXH3 hash of the JSON it came from (the whole wire message or request field, walked
//! as decoded, with the format, the message's place and the item's place among the message's items).
//! A caller that sees the same history again (the session runtime, on every model call) compares
//! fingerprints instead of reading both copies of every item.
//!
//! The hash walks the parsed value: keys in their order, every string, number and literal, each
//! tagged with its type and length so that differently shaped values never feed the same bytes. It
//! is not a defence against crafted collisions (the sender owns its history anyway), and it is kept
//! in memory only, so it may change between versions.

use compact_core::model::{Format, Item};
use serde_json::Value;
use xxhash_rust::xxh3::Xxh3Default;

/// The fingerprint of `value`, found at `place` (a slot name or message index) of a `format` request.
pub(crate) fn value_digest(format: Format, place: &str, value: &Value) -> u128 {
    let mut h = Xxh3Default::new();
    h.update(format.name().as_bytes());
    h.update(&[0xff]);
    h.update(place.as_bytes());
    h.update(&[0xff]);
    walk(&mut h, value);
    h.digest128()
}

/// Stamps `items` (all decoded from the value whose fingerprint is `digest`) with their fingerprints.
pub(crate) fn stamp(items: &mut [Item], digest: u128) {
    for (k, item) in items.iter_mut().enumerate() {
        let k = k as u128;
        // Distinct per place, and never the bare digest of another value.
        item.set_wire_digest(
            digest ^ (k.wrapping_add(1)).wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835),
        );
    }
}

fn tagged(h: &mut Xxh3Default, tag: u8, len: usize) {
    let mut head = [0u8; 9];
    head[0] = tag;
    head[1..].copy_from_slice(&(len as u64).to_le_bytes());
    h.update(&head);
}

fn walk(h: &mut Xxh3Default, value: &Value) {
    match value {
        Value::Null => h.update(b"n"),
        Value::Bool(true) => h.update(b"t"),
        Value::Bool(false) => h.update(b"f"),
        Value::Number(n) => {
            let text = n.to_string();
            tagged(h, b'#', text.len());
            h.update(text.as_bytes());
        }
        Value::String(s) => {
            tagged(h, b's', s.len());
            h.update(s.as_bytes());
        }
        Value::Array(items) => {
            tagged(h, b'[', items.len());
            for v in items {
                walk(h, v);
            }
        }
        Value::Object(map) => {
            tagged(h, b'{', map.len());
            for (k, v) in map {
                tagged(h, b'k', k.len());
                h.update(k.as_bytes());
                walk(h, v);
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_json_equal_digest_and_any_change_differs() {
        let a = json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "n": 1});
        let d = |v: &Value| value_digest(Format::OpenAiChat, "0", v);
        assert_eq!(d(&a), d(&a.clone()));
        for other in [
            json!({"role": "user", "content": [{"type": "text", "text": "hj"}], "n": 1}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "n": 2}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "n": "1"}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}]}),
            json!({"role": "user", "content": [["text"], {"text": "hi"}], "n": 1}),
        ] {
            assert_ne!(d(&a), d(&other), "{other}");
        }
        // The same value in another place or format is another fingerprint.
        assert_ne!(d(&a), value_digest(Format::OpenAiChat, "1", &a));
        assert_ne!(d(&a), value_digest(Format::Anthropic, "0", &a));
        // Shapes never feed the same bytes: ["ab"] vs ["a", "b"].
        assert_ne!(d(&json!(["ab"])), d(&json!(["a", "b"])));
    }

    fn requests() -> Vec<(Format, Value)> {
        vec![
            (
                Format::OpenAiChat,
                json!({"model": "m", "messages": [
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "u"},
                    {"role": "assistant", "content": "a", "tool_calls": [
                        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c", "content": "out"}]}),
            ),
            (
                Format::OpenAiResponses,
                json!({"model": "m", "instructions": "s", "input": [
                    {"role": "user", "content": "u"},
                    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c", "output": "out"}]}),
            ),
            (
                Format::Anthropic,
                json!({"model": "m", "max_tokens": 9, "system": "s", "messages": [
                    {"role": "user", "content": "u"},
                    {"role": "assistant", "content": [{"type": "text", "text": "a"},
                        {"type": "tool_use", "id": "c", "name": "f", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "c", "content": "out"}]}]}),
            ),
        ]
    }

    #[test]
    fn every_decoded_item_has_a_fingerprint_and_only_changed_messages_change_theirs() {
        for (format, request) in requests() {
            let a = crate::wire::decode(format, &request).unwrap();
            let b = crate::wire::decode(format, &request).unwrap();
            let digests = |c: &compact_core::model::Conversation| -> Vec<u128> {
                c.items.iter().map(|i| i.wire_digest().unwrap()).collect()
            };
            let (da, db) = (digests(&a), digests(&b));
            assert_eq!(da, db, "{format:?}");
            // Siblings (items of one wire message) are told apart.
            let unique: std::collections::HashSet<_> = da.iter().collect();
            assert_eq!(unique.len(), da.len(), "{format:?}");
            // Change the tool output: only the result's fingerprint changes.
            let edited = serde_json::to_string(&request)
                .unwrap()
                .replace("\"out\"", "\"OUT\"");
            let edited: Value = serde_json::from_str(&edited).unwrap();
            let dc = digests(&crate::wire::decode(format, &edited).unwrap());
            let changed: Vec<usize> = (0..da.len()).filter(|&i| da[i] != dc[i]).collect();
            assert_eq!(changed, vec![da.len() - 1], "{format:?}");
        }
    }

    #[test]
    fn changing_the_body_forgets_the_fingerprint() {
        let (format, request) = requests().remove(0);
        let mut conv = crate::wire::decode(format, &request).unwrap();
        let item = &mut conv.items[1];
        assert!(item.wire_digest().is_some());
        let _ = item.body_mut();
        assert_eq!(item.wire_digest(), None);
    }
}
