//! What a session's last preflight converted and decoded, kept for its next one.
//!
//! A host resends its whole history on every model call, and almost all of it is what it sent
//! last time. Converting every message dict into JSON and decoding it again costs more than the
//! session runtime's own work, so a session keeps its last call's messages as converted (JSON
//! values) and the decoder holding their items ([`IncrementalDecode`]). On the next call, each
//! message is checked against what was kept for its place; the leading messages that convert to
//! the same JSON are neither converted nor decoded again, from the first one that does not on
//! everything is.
//!
//! What the check guarantees: a message is reused only when what it converts to now is exactly
//! the JSON it was decoded from (same keys in the same order, same strings, same number kinds and
//! values), so the request decoded is the one a full conversion and decode would give. It does
//! not trust the identity of dicts and lists, so a dict changed in place (a content string
//! replaced, a tool call's arguments changed, a part appended to a content list, a key added,
//! removed or moved) is seen, and an equal dict built anew is reused. It is done in two steps:
//! - by identity ([`Snapshots::unchanged`]): the message still holds, node for node, the very
//!   objects it was converted from (its snapshot, [`Snapshots`]: dicts, lists and tuples walked,
//!   leaves of an exact immutable type compared by address). This is the usual case of a host
//!   that resends its history, and it reads no text;
//! - when that fails, by content ([`element_is`]): the message is compared with its JSON, leaves
//!   still the objects of the snapshot not read again. The snapshot is renewed when the message
//!   is the object held at its place (a host that builds its messages anew on every call would
//!   never use it).
//!
//! A message holding an object that needs Python code to convert (a pydantic model) is always
//! converted again, as is everything after it.
//!
//! A caller that vouches for its old messages (`assume_unchanged`: it never changes one in place)
//! skips the check for each message that is the same object as at its place last time: then a
//! call reads only what is new, as a Rust host that keeps its decoded history does.
//!
//! Memory: per session, the caller's messages as JSON and their decoded items, about twice the
//! history's text, plus a reference to every object of the caller's messages (16 bytes each in
//! the snapshots; they keep the objects alive until the session's next call replaces them); the
//! least recently used sessions beyond the manager's `max_cached_sessions` are dropped, as is a
//! session that is evicted or whose call failed.

use crate::convert::{element_is, element_to_value};
use crate::errors::Failure;
use crate::identity::Snapshots;
use crate::messages::{messages_from_py, resolve_format, Parts, Request};
use compact_core::model::{Conversation, Format};
use compact_formats::wire::IncrementalDecode;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use serde_json::Value;

/// One session's last request: the caller's messages as converted, the format and system prompt
/// they were decoded with, and the decoder holding their items.
pub struct Held {
    messages: Vec<Value>,
    /// The objects each message was last seen made of (see [`Snapshots`]).
    seen: Snapshots,
    /// The caller's message objects (for a caller that vouches for them: [`Incoming::convert`]).
    objects: Vec<Py<PyAny>>,
    format: Format,
    system: Option<Value>,
    decoder: IncrementalDecode,
}

/// A call's request, converted, with what it reuses of the session's last one.
pub struct Incoming {
    /// The request.
    pub request: Request,
    /// Messages of the request (a leading system message it added included) whose items the
    /// decoder keeps from the last call.
    keep: usize,
    /// The caller's messages converted by this call (the others were reused).
    pub converted: usize,
    /// Leading messages compared by content because they no longer held the very objects of
    /// their snapshot (whether found equal or not).
    pub compared: usize,
    seen: Snapshots,
    objects: Vec<Py<PyAny>>,
    system: Option<Value>,
    decoder: IncrementalDecode,
}

impl Incoming {
    /// Converts a call's arguments as [`Request::build`] wants them, reusing what `held` (the
    /// session's last call) converted for the leading messages that are unchanged. Errors are
    /// those of a full conversion, in the same order (messages, format, other parts).
    ///
    /// With `vouched`, the caller promises that it changes no message object it passed before in
    /// place (it may append messages, drop them or put new objects in their place): a leading
    /// message that is the very object found at its place last time is then reused without being
    /// read, as a Rust host that keeps its decoded history ([`IncrementalDecode`]) trusts its own
    /// prefix. Any other message is checked as without it.
    pub fn convert(
        held: Option<Held>,
        vouched: bool,
        messages: &Bound<'_, PyAny>,
        format: Option<&str>,
        system: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        model: Option<&str>,
    ) -> Result<Incoming, Failure> {
        let had = held.is_some();
        let mut last = match held {
            Some(h) => h,
            None => Held {
                messages: Vec::new(),
                seen: Snapshots::default(),
                objects: Vec::new(),
                format: Format::OpenAiChat,
                system: None,
                decoder: IncrementalDecode::new(),
            },
        };
        let prior = had.then(|| (last.format, last.system.take()));
        let Converted { reused, compared } = convert_messages(messages, &mut last, vouched)?;
        let Held {
            messages: values,
            seen,
            objects,
            decoder,
            ..
        } = last;
        let format = resolve_format(format, &values)?;
        let parts = Parts::from_py(system, tools, model)?;
        let leading = usize::from(format == Format::OpenAiChat && parts.system.is_some());
        let keep = match prior {
            Some((f, s)) if f == format && s == parts.system => leading + reused,
            _ => 0,
        };
        let converted = values.len() - reused;
        Ok(Incoming {
            request: Request::build(format, values, &parts),
            keep,
            converted,
            compared,
            seen,
            objects,
            system: parts.system,
            decoder,
        })
    }

    /// Decodes the request (only its messages after those kept): the request and its conversation.
    pub fn decode(&mut self) -> Result<(&Request, &Conversation), Failure> {
        let conversation = self.request.decode_with(&mut self.decoder, self.keep)?;
        Ok((&self.request, conversation))
    }

    /// Messages of the request the last [`Incoming::decode`] decoded (the others were kept).
    pub fn decoded(&self) -> usize {
        self.decoder.decoded()
    }

    /// What the session keeps for its next call (after this one succeeded).
    pub fn into_held(self) -> Held {
        let format = self.request.format;
        Held {
            messages: self.request.into_messages(),
            seen: self.seen,
            objects: self.objects,
            format,
            system: self.system,
            decoder: self.decoder,
        }
    }
}

/// How many leading messages a call kept, and how many it compared by content.
#[derive(Default)]
struct Converted {
    /// Leading messages kept because they still convert to the same JSON (or, vouched for, are
    /// the same objects).
    reused: usize,
    /// Leading messages whose snapshot did not match, compared with their JSON.
    compared: usize,
}

/// Converts the caller's messages into `last` (the last call's, which become this call's: its
/// JSON values, snapshots and objects), and says how many leading ones were kept.
fn convert_messages(
    messages: &Bound<'_, PyAny>,
    last: &mut Held,
    vouched: bool,
) -> Result<Converted, Failure> {
    if let Ok(list) = messages.cast::<PyList>() {
        return convert_elements(list.iter(), last, vouched);
    }
    if let Ok(tuple) = messages.cast::<PyTuple>() {
        return convert_elements(tuple.iter(), last, vouched);
    }
    // Another iterable is converted whole; its objects are remembered when it next comes as a
    // list.
    last.messages = messages_from_py(messages)?;
    last.seen = Snapshots::default();
    last.objects.clear();
    Ok(Converted::default())
}

fn convert_elements<'py>(
    elements: impl Iterator<Item = Bound<'py, PyAny>>,
    last: &mut Held,
    vouched: bool,
) -> Result<Converted, Failure> {
    let Held {
        messages: values,
        seen,
        objects,
        ..
    } = last;
    seen.truncate(values.len());
    let mut reused = 0;
    let mut compared = 0;
    let mut count = 0;
    let mut path = String::from("messages");
    for (i, element) in elements.enumerate() {
        count = i + 1;
        if reused == i && i < values.len() {
            let same_object = objects
                .get(i)
                .is_some_and(|o| o.as_ptr() == element.as_ptr());
            let reuse =
                (vouched && same_object && i < seen.len()) || seen.unchanged(i, &element) || {
                    compared += 1;
                    // The snapshot is renewed for a message object the host keeps (or one that
                    // has none yet): a host that builds its messages anew on every call would
                    // pay for a snapshot it never uses.
                    let mut renewed = (same_object || i >= seen.len()).then(Vec::new);
                    let equal = element_is(&element, &values[i], seen.of(i), renewed.as_mut());
                    if let Some(renewed) = renewed.filter(|_| equal) {
                        seen.renew(i, renewed);
                    }
                    equal
                };
            if reuse {
                if !same_object {
                    set(objects, i, &element);
                }
                reused += 1;
                continue;
            }
            values.truncate(i);
            seen.truncate(i);
        }
        path.truncate("messages".len());
        path.push('[');
        path.push_str(&i.to_string());
        path.push(']');
        values.push(element_to_value(&element, &mut path, seen.recording())?);
        seen.close();
        set(objects, i, &element);
    }
    values.truncate(count);
    seen.truncate(count);
    objects.truncate(count);
    Ok(Converted { reused, compared })
}

/// Puts `element` at `i` of `objects`, whose first `i` are the objects of the messages before
/// it. When it holds fewer (the last call's messages were not a list), it stays short: an object
/// is only ever held at its own message's place.
fn set(objects: &mut Vec<Py<PyAny>>, i: usize, element: &Bound<'_, PyAny>) {
    if i < objects.len() {
        objects[i] = element.clone().unbind();
    } else if i == objects.len() {
        objects.push(element.clone().unbind());
    }
}

/// The sessions' held requests, the least recently used dropped beyond the manager's
/// `max_cached_sessions`.
pub type Reuse = compact_session::SessionCache<Held>;
