//! Per session, the last request's decode, kept so that the next request is decoded from its
//! first new message on.
//!
//! An agent resends its whole history on every call. Decoding it (every message's JSON copied
//! into the conversation model, ids made unique, fingerprints computed) is work in the size of the
//! history, on every request. The proxy keeps, per session, the last request it decoded and the
//! decoder holding its items ([`IncrementalDecode`]); the next request's leading messages that are
//! equal, as JSON values, to the last request's are not decoded again. Comparing JSON values is
//! a walk with byte comparisons and no allocation.
//!
//! What the comparison guarantees: a message is reused only when it is the same JSON value as the
//! one decoded at its place last time (serde_json's equality: the same members with the same
//! values; the order of an object's members is not compared, and decoding does not depend on it
//! except for the order unknown members are written back in when the request is re-encoded). So
//! the conversation is the one a full decode would give.
//!
//! Parsing the body is work in the size of the history too, so the body is first scanned without
//! building anything ([`Scan`]: the bytes of each top-level member and of each message, borrowed
//! from the body); a member or message whose bytes are the same as at its place in the last
//! request's body is that request's JSON value, taken over without being parsed or compared again,
//! and only the rest is parsed ([`Held::rebuild`]). Same bytes, same value: the request is the one
//! a full parse would give (test `a_rebuilt_request_is_the_parsed_one`).
//!
//! Memory: per session, the last request's body, as parsed and its decoded items: several times
//! the body's size ([`Held::weight`]). The least recently used sessions are dropped beyond a count
//! (the session runtime's `max_cached_sessions`) and beyond a total weight
//! ([`DEFAULT_MAX_HELD_BYTES`]), whichever comes first, so that a thousand large sessions cannot
//! hold gigabytes here.

use bytes::Bytes;
use compact_core::model::Format;
use compact_formats::wire::{list_key, IncrementalDecode};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::ops::Range;

/// Default bound on the memory of the held decodes, all sessions together ([`Held::weight`]).
pub(crate) const DEFAULT_MAX_HELD_BYTES: usize = 256 * 1024 * 1024;

/// What a held decode weighs per byte of its request body: the body itself, its JSON value
/// (strings copied out, each object an index map) and the decoded items (their text copied again).
const WEIGHT_PER_BODY_BYTE: usize = 4;

/// One session's last request and its decoder.
#[derive(Default)]
pub(crate) struct Held {
    /// The last request decoded, once kept ([`Held::keep`]); `null` until then.
    request: Value,
    /// The decoder: decode the next request with it ([`Held::decode`]).
    pub decoder: IncrementalDecode,
    /// The body `request` was rebuilt from ([`Held::rebuild`]; empty after a full parse), where
    /// each of its top-level members is, and each message of its list.
    body: Bytes,
    members: Vec<(String, Range<usize>)>,
    messages: Vec<Range<usize>>,
    /// The size of the body of the request kept ([`Held::keep`]).
    body_len: usize,
}

/// A request body scanned for its members and messages, nothing parsed ([`Scan::of`]).
pub(crate) struct Scan<'a> {
    body: &'a [u8],
    /// The top-level members in order.
    members: Vec<(String, &'a RawValue)>,
    /// The messages (input items) of the list member, when it is an array: (its place in
    /// `members`, its elements).
    list: Option<(usize, Vec<&'a RawValue>)>,
}

impl<'a> Scan<'a> {
    /// Scans `body`, a request of `format`; `None` when it is not a JSON object (a full parse says
    /// why).
    pub fn of(body: &'a [u8], format: Format) -> Option<Scan<'a>> {
        let by_key: BTreeMap<String, &RawValue> = serde_json::from_slice(body).ok()?;
        // In the body's order (a member named twice is its last occurrence, in that place).
        let mut members: Vec<(String, &RawValue)> = by_key.into_iter().collect();
        members.sort_by_key(|(_, raw)| raw.get().as_ptr() as usize);
        let key = list_key(format);
        let list = members.iter().position(|(k, _)| k == key).and_then(|at| {
            let elements: Vec<&RawValue> = serde_json::from_str(members[at].1.get()).ok()?;
            Some((at, elements))
        });
        Some(Scan {
            body,
            members,
            list,
        })
    }

    /// What the session id is derived from when no header names the session: the `system` and
    /// `instructions` members, and the list up to its first user message (the list whole when it
    /// is not an array). `None` when a part does not parse.
    pub fn opening(&self, format: Format) -> Option<Value> {
        let key = list_key(format);
        let mut out = Map::new();
        for (k, raw) in &self.members {
            if k == "system" || k == "instructions" || (k == key && self.list.is_none()) {
                out.insert(k.clone(), serde_json::from_str(raw.get()).ok()?);
            }
        }
        if let Some((_, elements)) = &self.list {
            let mut head = Vec::new();
            for raw in elements {
                let item: Value = serde_json::from_str(raw.get()).ok()?;
                let user = item.get("role").and_then(Value::as_str) == Some("user");
                head.push(item);
                if user {
                    break;
                }
            }
            out.insert(key.to_owned(), Value::Array(head));
        }
        Some(Value::Object(out))
    }

    /// Where `raw` (borrowed from the body) is in the body.
    fn range(&self, raw: &RawValue) -> Range<usize> {
        let start = (raw.get().as_ptr() as usize).saturating_sub(self.body.as_ptr() as usize);
        start..start + raw.get().len()
    }
}

impl Held {
    /// Decodes `request` (of `format`) with the decoder, reusing the items of the leading messages
    /// that are equal to the last request's (the decoder keeps none when the format changed). The
    /// conversation is then `self.decoder.conversation()`; the request is compared with next time
    /// only once kept.
    pub fn decode(
        &mut self,
        format: Format,
        request: &Value,
    ) -> Result<(), compact_formats::DecodeError> {
        let key = list_key(format);
        let keep = match (
            self.request.get(key).and_then(Value::as_array),
            request.get(key).and_then(Value::as_array),
        ) {
            (Some(old), Some(new)) => old.iter().zip(new).take_while(|(a, b)| a == b).count(),
            _ => 0,
        };
        self.request = Value::Null;
        self.forget_body();
        self.decoder.decode(format, request, keep)?;
        Ok(())
    }

    /// The request `scan` holds (its body is `body`), parsed: the members and messages whose bytes
    /// are those at their place in the last request rebuilt from (their values are taken over
    /// from it), the rest parsed. Also how many leading messages were taken over: decode it with
    /// [`Held::decode_reusing`] and that number. `None` when a part does not parse (parse the
    /// body whole: the error says why).
    pub fn rebuild(&mut self, body: &Bytes, scan: &Scan<'_>) -> Option<(Value, usize)> {
        let mut old = match std::mem::take(&mut self.request) {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let old_body = std::mem::take(&mut self.body);
        let old_members = std::mem::take(&mut self.members);
        let old_messages = std::mem::take(&mut self.messages);
        let same = |range: &Range<usize>, raw: &RawValue| {
            old_body.get(range.clone()) == Some(raw.get().as_bytes())
        };
        let mut out = Map::with_capacity(scan.members.len());
        let mut kept = 0;
        let mut members = Vec::with_capacity(scan.members.len());
        let mut messages = Vec::new();
        for (i, (key, raw)) in scan.members.iter().enumerate() {
            let value = match &scan.list {
                Some((at, elements)) if *at == i => {
                    let mut before = match old.get_mut(key) {
                        Some(Value::Array(items)) if items.len() == old_messages.len() => {
                            std::mem::take(items)
                        }
                        _ => Vec::new(),
                    };
                    let mut items = Vec::with_capacity(elements.len());
                    let mut leading = true;
                    for (j, element) in elements.iter().enumerate() {
                        let reused = match (old_messages.get(j), before.get_mut(j)) {
                            (Some(range), Some(value)) if same(range, element) => {
                                Some(std::mem::take(value))
                            }
                            _ => None,
                        };
                        match reused {
                            Some(value) => {
                                kept += usize::from(leading);
                                items.push(value);
                            }
                            None => {
                                leading = false;
                                items.push(serde_json::from_str(element.get()).ok()?);
                            }
                        }
                        messages.push(scan.range(element));
                    }
                    Value::Array(items)
                }
                _ => {
                    let reused = old_members
                        .iter()
                        .find(|(k, _)| k == key)
                        .filter(|(_, range)| same(range, raw))
                        .and_then(|_| old.get_mut(key).map(std::mem::take));
                    match reused {
                        Some(value) => value,
                        None => serde_json::from_str(raw.get()).ok()?,
                    }
                }
            };
            members.push((key.clone(), scan.range(raw)));
            out.insert(key.clone(), value);
        }
        if scan.list.is_none() {
            kept = 0;
        }
        self.body = body.clone();
        self.members = members;
        self.messages = messages;
        Some((Value::Object(out), kept))
    }

    /// Decodes `request` (of `format`), as [`Held::rebuild`] gave it, reusing the items of its
    /// first `keep` messages (the ones it took over).
    pub fn decode_reusing(
        &mut self,
        format: Format,
        request: &Value,
        keep: usize,
    ) -> Result<(), compact_formats::DecodeError> {
        self.request = Value::Null;
        if let Err(e) = self.decoder.decode(format, request, keep) {
            self.forget_body();
            return Err(e);
        }
        Ok(())
    }

    /// Drops what [`Held::rebuild`] needs of the last body (after a full parse, which has none).
    fn forget_body(&mut self) {
        self.body = Bytes::new();
        self.members.clear();
        self.messages.clear();
    }

    /// Keeps `request`, the one just decoded (from a body of `body_len` bytes), for the next
    /// comparison.
    pub fn keep(&mut self, request: Value, body_len: usize) {
        self.request = request;
        self.body_len = body_len;
    }

    /// An estimate of the memory this holds: a multiple of the kept request's body size
    /// ([`WEIGHT_PER_BODY_BYTE`]), at least one.
    pub fn weight(&self) -> usize {
        self.body_len.saturating_mul(WEIGHT_PER_BODY_BYTE).max(1)
    }
}

/// The sessions' held decodes ([`compact_session::SessionCache`]), the least recently used dropped
/// beyond a count of sessions and beyond a total [`Held::weight`].
pub(crate) type Decoders = compact_session::SessionCache<Held>;

/// Held decodes of at most `max_sessions` sessions (at least one) weighing at most `max_bytes`
/// together.
pub(crate) fn held_decodes(max_sessions: usize, max_bytes: usize) -> Decoders {
    compact_session::SessionCache::weighted(max_sessions, max_bytes, Held::weight)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_formats::wire::decode;
    use serde_json::json;

    fn chat(messages: &[Value]) -> Value {
        json!({"model": "m", "messages": messages})
    }

    #[test]
    fn only_the_messages_after_the_first_changed_one_are_decoded() {
        let mut held = Held::default();
        let mut messages = vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Read a.rs", "x-extra": {"k": 1}}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "fn a() {}"}),
        ];
        let check = |held: &mut Held, request: Value, decoded: usize| {
            held.decode(Format::OpenAiChat, &request).unwrap();
            assert_eq!(held.decoder.decoded(), decoded, "{request}");
            assert_eq!(
                held.decoder.conversation(),
                &decode(Format::OpenAiChat, &request).unwrap(),
                "{request}"
            );
            held.keep(request, 0);
        };
        check(&mut held, chat(&messages), 4);
        messages.push(json!({"role": "assistant", "content": "It is empty."}));
        check(&mut held, chat(&messages), 1);
        check(&mut held, chat(&messages), 0);
        // A changed message in the middle: decoded from there.
        messages[1]["x-extra"]["k"] = json!(2);
        check(&mut held, chat(&messages), 4);
        // An integer that became a float is another value.
        messages[1]["x-extra"]["k"] = json!(2.0);
        check(&mut held, chat(&messages), 4);
        // Messages dropped from the front.
        messages.remove(0);
        check(&mut held, chat(&messages), 4);
        // Another format: everything.
        let responses = json!({"model": "m", "input": [{"role": "user", "content": "hi"}]});
        held.decode(Format::OpenAiResponses, &responses).unwrap();
        assert_eq!(held.decoder.decoded(), 1);
        // A request that does not decode leaves nothing to reuse.
        let bad = chat(&[json!({"role": "wizard", "content": "x"})]);
        assert!(held.decode(Format::OpenAiChat, &bad).is_err());
        check(&mut held, chat(&messages), messages.len());
    }

    /// Rebuilds `body` with `held`, checks it against a full parse and the count taken over, and
    /// keeps it as the proxy does.
    fn rebuilt(held: &mut Held, format: Format, body: &str, kept: usize) {
        let bytes = Bytes::from(body.to_owned());
        let scan = Scan::of(&bytes, format).unwrap();
        let (value, k) = held.rebuild(&bytes, &scan).unwrap();
        let parsed: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value, parsed, "{body}");
        let order: Vec<&String> = value.as_object().unwrap().keys().collect();
        let parsed_order: Vec<&String> = parsed.as_object().unwrap().keys().collect();
        assert_eq!(order, parsed_order, "{body}");
        assert_eq!(k, kept, "{body}");
        held.decode_reusing(format, &value, k).unwrap();
        assert_eq!(
            held.decoder.conversation(),
            &decode(format, &parsed).unwrap(),
            "{body}"
        );
        held.keep(value, bytes.len());
    }

    #[test]
    fn a_rebuilt_request_is_the_parsed_one() {
        let mut held = Held::default();
        let mut messages = vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Read a.rs \u{e9}\n", "x-extra": {"k": 1}}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "fn a() {}"}),
        ];
        let body = |messages: &[Value], model: &str| {
            format!(
                "{{\"model\": \"{model}\", \"messages\": {}, \"temperature\": 0.5}}",
                serde_json::to_string(messages).unwrap()
            )
        };
        rebuilt(&mut held, Format::OpenAiChat, &body(&messages, "m"), 0);
        // The agent's next turn: every message of the last request taken over.
        messages.push(json!({"role": "assistant", "content": "It is empty."}));
        messages.push(json!({"role": "user", "content": "Go on."}));
        rebuilt(&mut held, Format::OpenAiChat, &body(&messages, "m"), 4);
        rebuilt(&mut held, Format::OpenAiChat, &body(&messages, "other"), 6);
        // A changed message in the middle: the ones before it are taken over.
        messages[2]["content"] = json!("thinking");
        rebuilt(&mut held, Format::OpenAiChat, &body(&messages, "other"), 2);
        // The same value written with other bytes is parsed again, and equal.
        let spaced = body(&messages, "other").replace("\"role\":", "\"role\" : ");
        rebuilt(&mut held, Format::OpenAiChat, &spaced, 0);
        // Messages dropped from the front: nothing is at its place any more.
        messages.remove(0);
        rebuilt(&mut held, Format::OpenAiChat, &body(&messages, "other"), 0);
        // Members in another order, a member named twice, no list, a list that is not an array.
        rebuilt(
            &mut held,
            Format::OpenAiChat,
            r#"{"temperature": 1, "model": "a", "model": "b", "messages": [{"role": "user", "content": "x"}]}"#,
            0,
        );
        let mut held = Held::default();
        let input = r#"{"model": "m", "input": "hi", "instructions": "Be brief."}"#;
        rebuilt(&mut held, Format::OpenAiResponses, input, 0);
        rebuilt(&mut held, Format::OpenAiResponses, input, 0);
        // Not an object, not JSON: no scan (the full parse says why).
        assert!(Scan::of(b"[1, 2]", Format::OpenAiChat).is_none());
        assert!(Scan::of(b"{\"model\": ", Format::OpenAiChat).is_none());
        assert!(Scan::of(b"{} x", Format::OpenAiChat).is_none());
    }

    fn held_of(body_len: usize) -> Held {
        let mut held = Held::default();
        held.keep(json!({"model": "m"}), body_len);
        held
    }

    #[test]
    fn held_decodes_stay_within_their_count_and_their_bytes() {
        // Room for 100 sessions and 1 MB of decodes: sessions of 10 KB bodies (40 KB each) reach
        // the bytes first.
        let max = 1024 * 1024;
        let decoders = held_decodes(100, max);
        for i in 0..300 {
            decoders.put(&format!("s{i}"), held_of(10 * 1024));
            assert!(
                decoders.weight() <= max,
                "{} bytes after {i}",
                decoders.weight()
            );
            assert!(decoders.len() <= 100);
            // The session just put back is kept; the oldest go first.
            assert!(decoders.take(&format!("s{i}")).is_some());
            decoders.put(&format!("s{i}"), held_of(10 * 1024));
        }
        assert!(decoders.take("s0").is_none());
        assert!(decoders.take("s299").is_some());
        // Small decodes: the count bounds them.
        let decoders = held_decodes(100, max);
        for i in 0..300 {
            decoders.put(&format!("s{i}"), held_of(10));
            assert!(decoders.len() <= 100);
        }
        assert_eq!(decoders.weight(), decoders.len() * 40);
        // Taking a decode out and putting another back for the same session counts it once.
        let before = decoders.weight();
        let held = decoders.take("s299").unwrap();
        assert_eq!(decoders.weight(), before - held.weight());
        decoders.put("s299", held_of(20));
        decoders.put("s299", held_of(20));
        assert_eq!(decoders.weight(), before - 40 + 80);
        // One decode heavier than the whole bound is not kept (nor does it evict the others).
        let len = decoders.len();
        decoders.put("huge", held_of(max));
        assert!(decoders.take("huge").is_none());
        assert_eq!(decoders.len(), len);
    }

    #[test]
    fn the_opening_holds_what_the_session_fingerprint_reads() {
        use crate::route::Route;
        use crate::session_id::fingerprint;
        let body = json!({"model": "m", "system": "S", "messages": [
            {"role": "developer", "content": "D"}, {"role": "user", "content": "U"},
            {"role": "assistant", "content": "A"}, {"role": "user", "content": "V"}]});
        let bytes = body.to_string();
        let scan = Scan::of(bytes.as_bytes(), Format::OpenAiChat).unwrap();
        let opening = scan.opening(Format::OpenAiChat).unwrap();
        assert_eq!(opening["messages"].as_array().unwrap().len(), 2);
        for route in [Route::ChatCompletions, Route::Messages] {
            assert_eq!(fingerprint(route, &opening), fingerprint(route, &body));
        }
        let body = json!({"model": "m", "instructions": "I", "input": "hello"});
        let bytes = body.to_string();
        let scan = Scan::of(bytes.as_bytes(), Format::OpenAiResponses).unwrap();
        let opening = scan.opening(Format::OpenAiResponses).unwrap();
        assert_eq!(
            fingerprint(Route::Responses, &opening),
            fingerprint(Route::Responses, &body)
        );
    }
}
