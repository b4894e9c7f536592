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
//! The scan is work in the size of the body too. When a header names the session, its held
//! decode is known before the scan, which then compares the body with the held one (a `memcmp`)
//! and resumes after the last member or message that ends within the bytes they share: the same
//! bytes scanned from the same start give the same parts, so only what follows is scanned
//! ([`Held::scan`]; tests `a_scan_resumed_*` check it against a scan of the whole body).
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
    /// Where the list member is in `members` (when it is an array), whether a member was named
    /// twice, and the format the body was scanned for: what [`Held::scan`] resumes from.
    list_at: Option<usize>,
    duplicates: bool,
    scanned: Option<Format>,
    /// The size of the body of the request kept ([`Held::keep`]).
    body_len: usize,
}

/// A request body scanned for its members and messages, nothing parsed ([`Scan::of`],
/// [`Held::scan`]): where each part's bytes are in the body.
pub(crate) struct Scan<'a> {
    body: &'a [u8],
    /// The top-level members in order, each where its value is (a member named twice is its
    /// last occurrence, in that place).
    members: Vec<(String, Range<usize>)>,
    /// The messages (input items) of the list member, when it is an array: (its place in
    /// `members`, where each element is).
    list: Option<(usize, Vec<Range<usize>>)>,
    /// Whether a member is named twice (a later scan then does not resume from this one).
    duplicates: bool,
    /// How many leading bytes of `body` are those of the held body the scan resumed from (0 when
    /// scanned whole): a part that ends before this is the held one's, byte for byte.
    same_prefix: usize,
    /// The format scanned for (its list member).
    format: Format,
}

/// Where a scan starts or resumes (the bytes before it having been scanned already, in the same
/// state: [`Held::scan`]).
enum Resume {
    /// At the body's start.
    Start,
    /// After a member's value: a `,` or the object's end follows.
    AfterMember,
    /// Inside the list member's array, which opens at `open` and has `elements` so far; `pos` is
    /// after its `[` (when `elements` is empty) or after its last element.
    InList {
        key: String,
        open: usize,
        elements: Vec<Range<usize>>,
    },
}

impl<'a> Scan<'a> {
    /// Scans `body`, a request of `format`, whole; `None` when it is not a JSON object (a full
    /// parse says why).
    pub fn of(body: &'a [u8], format: Format) -> Option<Scan<'a>> {
        scan_object(body, format, Vec::new(), None, Resume::Start, 0, 0)
    }

    /// The bytes of a part of the body.
    fn text(&self, range: &Range<usize>) -> &'a [u8] {
        self.body.get(range.clone()).unwrap_or_default()
    }

    /// What the session id is derived from when no header names the session: the `system` and
    /// `instructions` members, and the list up to its first user message (the list whole when it
    /// is not an array). `None` when a part does not parse.
    pub fn opening(&self, format: Format) -> Option<Value> {
        let key = list_key(format);
        let mut out = Map::new();
        for (k, range) in &self.members {
            if k == "system" || k == "instructions" || (k == key && self.list.is_none()) {
                out.insert(k.clone(), serde_json::from_slice(self.text(range)).ok()?);
            }
        }
        if let Some((_, elements)) = &self.list {
            let mut head = Vec::new();
            for range in elements {
                let item: Value = serde_json::from_slice(self.text(range)).ok()?;
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
}

/// JSON's whitespace.
fn skip_whitespace(body: &[u8], mut pos: usize) -> usize {
    while matches!(body.get(pos), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        pos += 1;
    }
    pos
}

/// Where the JSON value at `pos` (after any whitespace) is; `None` when there is none or it does
/// not parse. The value is checked as serde_json checks a `RawValue`, which is what a scan of the
/// whole body did.
fn value_at(body: &[u8], pos: usize) -> Option<Range<usize>> {
    let rest = body.get(pos..)?;
    let raw: &RawValue = serde_json::Deserializer::from_slice(rest)
        .into_iter()
        .next()?
        .ok()?;
    let start = pos + (raw.get().as_ptr() as usize).checked_sub(rest.as_ptr() as usize)?;
    Some(start..start + raw.get().len())
}

/// Scans the top-level object of `body` from `pos` in the state `resume` says, with `members`
/// (and the list's elements, `list`, when the list member is among them) already found.
fn scan_object(
    body: &[u8],
    format: Format,
    mut members: Vec<(String, Range<usize>)>,
    mut list: Option<Vec<Range<usize>>>,
    resume: Resume,
    mut pos: usize,
    same_prefix: usize,
) -> Option<Scan<'_>> {
    let key = list_key(format);
    let mut duplicates = false;
    // Whether a member follows (else a `,` or the end).
    let mut member_next = match resume {
        Resume::Start => {
            pos = skip_whitespace(body, pos);
            (body.get(pos) == Some(&b'{')).then_some(())?;
            pos = skip_whitespace(body, pos + 1);
            if body.get(pos) == Some(&b'}') {
                return finish(body, format, members, list, false, pos + 1, same_prefix);
            }
            true
        }
        Resume::AfterMember => false,
        Resume::InList {
            key,
            open,
            elements,
        } => {
            pos = scan_list(body, pos, &mut list, elements)?;
            members.push((key, open..pos));
            false
        }
    };
    loop {
        if !member_next {
            pos = skip_whitespace(body, pos);
            match body.get(pos) {
                Some(b',') => pos += 1,
                Some(b'}') => {
                    return finish(
                        body,
                        format,
                        members,
                        list,
                        duplicates,
                        pos + 1,
                        same_prefix,
                    )
                }
                _ => return None,
            }
        }
        member_next = false;
        let name = value_at(body, pos)?;
        if body.get(name.start) != Some(&b'"') {
            return None;
        }
        let name_text: String = serde_json::from_slice(body.get(name.clone())?).ok()?;
        pos = skip_whitespace(body, name.end);
        (body.get(pos) == Some(&b':')).then_some(())?;
        pos = skip_whitespace(body, pos + 1);
        if let Some(i) = members.iter().position(|(k, _)| *k == name_text) {
            members.remove(i);
            duplicates = true;
        }
        if name_text == key {
            list = None;
            if body.get(pos) == Some(&b'[') {
                let open = pos;
                pos = scan_list(body, pos + 1, &mut list, Vec::new())?;
                members.push((name_text, open..pos));
                continue;
            }
        }
        let value = value_at(body, pos)?;
        pos = value.end;
        members.push((name_text, value));
    }
}

/// Scans the list's array from `pos` (after its `[` when `elements` is empty, else after its last
/// element) to its end; puts its elements in `list` and returns where the array ends.
fn scan_list(
    body: &[u8],
    mut pos: usize,
    list: &mut Option<Vec<Range<usize>>>,
    mut elements: Vec<Range<usize>>,
) -> Option<usize> {
    if elements.is_empty() {
        pos = skip_whitespace(body, pos);
        if body.get(pos) == Some(&b']') {
            *list = Some(elements);
            return Some(pos + 1);
        }
        let element = value_at(body, pos)?;
        pos = element.end;
        elements.push(element);
    }
    loop {
        pos = skip_whitespace(body, pos);
        match body.get(pos) {
            Some(b',') => {
                let element = value_at(body, pos + 1)?;
                pos = element.end;
                elements.push(element);
            }
            Some(b']') => {
                *list = Some(elements);
                return Some(pos + 1);
            }
            _ => return None,
        }
    }
}

/// The scan, once the object ends at `pos`: only whitespace may follow.
fn finish(
    body: &[u8],
    format: Format,
    members: Vec<(String, Range<usize>)>,
    list: Option<Vec<Range<usize>>>,
    duplicates: bool,
    pos: usize,
    same_prefix: usize,
) -> Option<Scan<'_>> {
    if skip_whitespace(body, pos) != body.len() {
        return None;
    }
    let key = list_key(format);
    let list = match (members.iter().position(|(k, _)| k == key), list) {
        (Some(at), Some(elements)) => Some((at, elements)),
        _ => None,
    };
    Some(Scan {
        body,
        members,
        list,
        duplicates,
        same_prefix,
        format,
    })
}

/// How many leading bytes `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let len = a.len().min(b.len());
    let mut at = 0;
    while at + CHUNK <= len && a[at..at + CHUNK] == b[at..at + CHUNK] {
        at += CHUNK;
    }
    at + a[at..len]
        .iter()
        .zip(&b[at..len])
        .take_while(|(x, y)| x == y)
        .count()
}

impl Held {
    /// Scans `body`, a request of `format`, as [`Scan::of`] does, but over the bytes it shares
    /// with the body the held request was rebuilt from only as far as they need: the members and
    /// messages that end before the first byte that differs are the held ones at the same places
    /// (same bytes before them, same parse), and the scan resumes after the last of them. An
    /// agent's next request is its last one with messages appended, so only those are scanned.
    pub fn scan<'a>(&self, body: &'a [u8], format: Format) -> Option<Scan<'a>> {
        if self.body.is_empty() || self.duplicates || self.scanned != Some(format) {
            return Scan::of(body, format);
        }
        let same = common_prefix(&self.body, body);
        // The members wholly inside the shared bytes (the byte after each too, which ends it).
        let kept = self
            .members
            .iter()
            .position(|(_, range)| range.end >= same)
            .unwrap_or(self.members.len());
        let list_at = self.list_at;
        let members = |n: usize| self.members[..n].to_vec();
        let (resume, pos, list) = match self.members.get(kept) {
            // The list's `[` is shared: resume inside it, after its last element shared.
            Some((key, range)) if list_at == Some(kept) && range.start < same => {
                let elements = self
                    .messages
                    .iter()
                    .position(|r| r.end >= same)
                    .unwrap_or(self.messages.len());
                let pos = match elements {
                    0 => range.start + 1,
                    n => self.messages[n - 1].end,
                };
                let resume = Resume::InList {
                    key: key.clone(),
                    open: range.start,
                    elements: self.messages[..elements].to_vec(),
                };
                (resume, pos, None)
            }
            _ if kept == 0 => return Scan::of(body, format),
            _ => {
                let list = list_at
                    .filter(|at| *at < kept)
                    .map(|_| self.messages.clone());
                (Resume::AfterMember, self.members[kept - 1].1.end, list)
            }
        };
        scan_object(body, format, members(kept), list, resume, pos, same)
    }

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
        // A part at the same place within the bytes the scan found shared is the same without
        // comparing them again (when the scan resumed from this body).
        let same = |old: &Range<usize>, new: &Range<usize>| {
            (old == new && new.end < scan.same_prefix)
                || old_body.get(old.clone()) == Some(scan.text(new))
        };
        let mut out = Map::with_capacity(scan.members.len());
        let mut kept = 0;
        let mut members = Vec::with_capacity(scan.members.len());
        let mut messages = Vec::new();
        for (i, (key, range)) in scan.members.iter().enumerate() {
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
                            (Some(old_range), Some(value)) if same(old_range, element) => {
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
                                items.push(serde_json::from_slice(scan.text(element)).ok()?);
                            }
                        }
                    }
                    messages.clone_from(elements);
                    Value::Array(items)
                }
                _ => {
                    let reused = old_members
                        .iter()
                        .find(|(k, _)| k == key)
                        .filter(|(_, old_range)| same(old_range, range))
                        .and_then(|_| old.get_mut(key).map(std::mem::take));
                    match reused {
                        Some(value) => value,
                        None => serde_json::from_slice(scan.text(range)).ok()?,
                    }
                }
            };
            members.push((key.clone(), range.clone()));
            out.insert(key.clone(), value);
        }
        if scan.list.is_none() {
            kept = 0;
        }
        self.body = body.clone();
        self.members = members;
        self.messages = messages;
        self.list_at = scan.list.as_ref().map(|(at, _)| *at);
        self.duplicates = scan.duplicates;
        self.scanned = Some(scan.format);
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
        self.list_at = None;
        self.scanned = None;
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
    use std::collections::BTreeMap;

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

    /// What a scan of the whole body found before scans could resume (kept here as the reference
    /// the scanner is checked against): the members as a map of raw values, in the body's order,
    /// and the list's elements.
    #[allow(clippy::type_complexity)]
    fn reference_scan(
        body: &[u8],
        format: Format,
    ) -> Option<(
        Vec<(String, Range<usize>)>,
        Option<(usize, Vec<Range<usize>>)>,
    )> {
        let at = |raw: &RawValue| {
            let start = raw.get().as_ptr() as usize - body.as_ptr() as usize;
            start..start + raw.get().len()
        };
        let by_key: BTreeMap<String, &RawValue> = serde_json::from_slice(body).ok()?;
        let mut members: Vec<(String, &RawValue)> = by_key.into_iter().collect();
        members.sort_by_key(|(_, raw)| raw.get().as_ptr() as usize);
        let key = list_key(format);
        let list = members.iter().position(|(k, _)| k == key).and_then(|i| {
            let elements: Vec<&RawValue> = serde_json::from_str(members[i].1.get()).ok()?;
            Some((i, elements.into_iter().map(at).collect()))
        });
        Some((members.into_iter().map(|(k, r)| (k, at(r))).collect(), list))
    }

    /// Checks the scan of `new` resumed from `held` (which holds `old`, scanned and rebuilt as
    /// the proxy does) against the reference and against a rebuild's full parse, then keeps
    /// `new` in `held`.
    fn resumed(held: &mut Held, format: Format, old: &[u8], new: &[u8]) {
        let reference = reference_scan(new, format);
        let scan = held.scan(new, format);
        let found = scan.as_ref().map(|s| (s.members.clone(), s.list.clone()));
        assert_eq!(
            found,
            reference,
            "\nold {}\nnew {}",
            String::from_utf8_lossy(old),
            String::from_utf8_lossy(new)
        );
        let whole = Scan::of(new, format).map(|s| (s.members, s.list));
        assert_eq!(whole, reference, "{}", String::from_utf8_lossy(new));
        let Some(scan) = scan else {
            // Not an object: the proxy parses it whole and refuses it; the held decode stays.
            return;
        };
        let bytes = Bytes::copy_from_slice(new);
        let duplicates = scan.duplicates;
        let rebuilt = held.rebuild(&bytes, &scan);
        let parsed: Option<Value> = serde_json::from_slice(new).ok();
        let value = rebuilt.map(|(value, _)| value);
        assert_eq!(value, parsed, "{}", String::from_utf8_lossy(new));
        if let Some(value) = value {
            // (A member named twice is in the place of its last occurrence in a rebuilt request,
            // of its first in a parsed one: as before scans resumed.)
            if !duplicates {
                let order: Vec<&String> = value.as_object().unwrap().keys().collect();
                let parsed = parsed.unwrap();
                let parsed_order: Vec<&String> = parsed.as_object().unwrap().keys().collect();
                assert_eq!(order, parsed_order);
            }
            held.keep(value, new.len());
        } else {
            *held = Held::default();
        }
    }

    /// The held decode after `body` went through the proxy.
    fn held_with(format: Format, body: &[u8]) -> Held {
        let mut held = Held::default();
        resumed(&mut held, format, b"", body);
        held
    }

    #[test]
    fn a_scan_resumed_over_the_shared_bytes_is_the_whole_scan() {
        let f = Format::OpenAiChat;
        let turn = |n: usize| {
            let mut messages = vec![json!({"role": "system", "content": "Be brief."})];
            for i in 0..n {
                messages
                    .push(json!({"role": "user", "content": format!("step {i} \u{e9}\n\"q\"")}));
                messages.push(json!({"role": "assistant", "content": format!("done {i}")}));
            }
            messages
        };
        // An agent's requests, with members before and after the list, then the list last.
        for (before, after) in [
            (
                "\"model\": \"m\", ",
                ", \"temperature\": 0.5, \"stream\": false",
            ),
            ("\"model\":\"m\",", ""),
            ("", ", \"model\": \"m\""),
        ] {
            let body = |n: usize| {
                format!(
                    "{{{before}\"messages\": {}{after}}}",
                    serde_json::to_string(&turn(n)).unwrap()
                )
                .into_bytes()
            };
            let mut held = Held::default();
            let mut old = Vec::new();
            for n in 0..6 {
                let new = body(n);
                resumed(&mut held, f, &old, &new);
                old = new;
            }
            // The same body again, then the list cut back.
            resumed(&mut held, f, &old.clone(), &old);
            resumed(&mut held, f, &old, &body(2));
        }
        // Bodies that differ early (a member before the list), in the middle (a message, a number
        // that grows at the list's end), late (after the list), in whitespace, in structure.
        let cases: &[(&str, &str)] = &[
            (
                r#"{"model": "a", "messages": [{"role": "user"}]}"#,
                r#"{"model": "b", "messages": [{"role": "user"}]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 23]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2, 3]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2 ]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2,]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2] , "n": 1}"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2]} x"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2]}  "#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": [1, 2"#,
            ),
            (
                r#"{"model": "a", "messages": [1, 2]}"#,
                r#"{"model": "a", "messages": []}"#,
            ),
            (
                r#"{"model": "a", "messages": []}"#,
                r#"{"model": "a", "messages": [ ]}"#,
            ),
            (
                r#"{"model": "a", "messages": []}"#,
                r#"{"model": "a", "messages": [0]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1]}"#,
                r#"{"model": "a", "messages": "hi"}"#,
            ),
            (
                r#"{"model": "a", "messages": [1]}"#,
                r#"{"model": "a", "messages": [1], "messages": 2}"#,
            ),
            (
                r#"{"model": "a", "messages": [1], "messages": 2}"#,
                r#"{"model": "a", "messages": [1], "messages": [3]}"#,
            ),
            (
                r#"{"model": "a", "messages": [1]}"#,
                r#"{"model": "a", "messages": [1], "model": "b"}"#,
            ),
            (r#"{"model": "a", "n": 10}"#, r#"{"model": "a", "n": 100}"#),
            (
                r#"{"model": "a", "n": 10}"#,
                r#"{"model": "a", "n": 10, "messages": [{}]}"#,
            ),
            (r#"{"model": "a", "n": 1}"#, r#"{"model": "a", "n": 1.5e3}"#),
            (
                r#"{"model": "a", "n": true}"#,
                r#"{"model": "a", "n": truex}"#,
            ),
            (
                r#"{"a\"b": 1, "messages": [2]}"#,
                r#"{"a\"b": 1, "messages": [2, "\ud800"]}"#,
            ),
            (
                r#"{"a\"b": 1, "messages": [2]}"#,
                r#"{"a\"b": 1, "messages": [2, "\u00e9"]}"#,
            ),
            (r#"{"messages": [2]}"#, r#"{"mess\u0061ges": [2, 3]}"#),
            (r#"{"messages": [2]}"#, "{\"messages\": [2, \"\u{1}\"]}"),
            (r#"{"messages": [2]}"#, "{\"messages\": [2]}\n\t\r "),
            (r#"{"messages": [2]}"#, r#"[{"messages": [2]}]"#),
            (r#"{"messages": [2]}"#, r#"{}"#),
            (r#"{}"#, r#"{ }"#),
            (r#"{}"#, r#"{"messages": [{"a": [[[]]]}]}"#),
            (
                r#"{"messages": [{"a": [[[]]]}]}"#,
                r#"{"messages": [{"a": [[[]]]}, {"b": [[}]]}"#,
            ),
            (
                r#"{"messages": [1], "x": {"y": [1, 2]}}"#,
                r#"{"messages": [1], "x": {"y": [1, 2, 3]}}"#,
            ),
            (
                r#"{"messages": [1], "x": 2}"#,
                r#"{"messages": [1], "x": 2, "x": 3}"#,
            ),
            (r#"{"messages": [1], "x": 2}"#, r#"{"messages": [1], 5: 2}"#),
        ];
        for (old, new) in cases {
            let mut held = held_with(f, old.as_bytes());
            resumed(&mut held, f, old.as_bytes(), new.as_bytes());
            // And back.
            let mut held = held_with(f, new.as_bytes());
            resumed(&mut held, f, new.as_bytes(), old.as_bytes());
        }
        // Another format for the same session: the list is another member.
        let body = br#"{"model": "a", "input": [1], "messages": [2]}"#;
        let mut held = held_with(f, body);
        resumed(&mut held, Format::OpenAiResponses, body, body);
    }

    #[test]
    fn a_scan_resumed_after_an_edit_anywhere_is_the_whole_scan() {
        // Every edit of one byte (replaced by a JSON structural or value character, or removed)
        // and every insertion, at every position of a body: the resumed scan is the whole one
        // (most edits leave no JSON; the others move, join or split members and messages).
        let f = Format::OpenAiChat;
        let old = br#"{"model": "m", "messages": [{"role": "user", "content": "a\"b"}, 12, [3], {"x": null}], "n": -1.5, "s": "t"}"#;
        let alphabet = b"{}[],:\" 0123456789.-eatrunlf\\";
        let mut held = held_with(f, old);
        for pos in 0..=old.len() {
            for c in alphabet {
                let mut inserted = old.to_vec();
                inserted.insert(pos, *c);
                let mut replaced = old.to_vec();
                if pos < old.len() {
                    replaced[pos] = *c;
                }
                for new in [inserted, replaced] {
                    resumed(&mut held, f, old, &new);
                    held = held_with(f, old);
                }
            }
            let mut removed = old.to_vec();
            if pos < old.len() {
                removed.remove(pos);
            }
            resumed(&mut held, f, old, &removed);
            held = held_with(f, old);
            // Cut short here.
            resumed(&mut held, f, old, &old[..pos]);
            held = held_with(f, old);
        }
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
