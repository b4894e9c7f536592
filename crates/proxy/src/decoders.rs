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
//! Memory: per session, the last request as parsed and its decoded items; the least recently used
//! sessions beyond the capacity (the session runtime's `max_cached_sessions`) are dropped.

use compact_core::model::Format;
use compact_formats::wire::{list_key, IncrementalDecode};
use serde_json::Value;

/// One session's last request and its decoder.
#[derive(Default)]
pub(crate) struct Held {
    /// The last request decoded, once kept ([`Held::keep`]); `null` until then.
    request: Value,
    /// The decoder: decode the next request with it ([`Held::decode`]).
    pub decoder: IncrementalDecode,
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
        self.decoder.decode(format, request, keep)?;
        Ok(())
    }

    /// Keeps `request`, the one just decoded, for the next comparison.
    pub fn keep(&mut self, request: Value) {
        self.request = request;
    }
}

/// The sessions' held decodes, the least recently used dropped beyond a capacity.
pub(crate) type Decoders = compact_session::SessionCache<Held>;

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
            held.keep(request);
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
}
