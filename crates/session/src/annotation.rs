//! Per-call annotations: wire fields a client sets for one call that change nothing the model
//! reads. Anthropic's `cache_control` is the one there is: it marks where the provider should
//! write its prompt cache, and a client moves it on every call (Claude Code puts it on the last
//! block of the newest message only, so the message that had it last time loses it), while the
//! provider refuses a request with more than four of them.
//!
//! Two rules follow for the session runtime:
//! - **Annotations are not history.** The hash chain leaves them out
//!   ([`crate::codec::chain_bytes`]), and so does matching a request against the items last
//!   received: a marker that moved is not a branch, and the item is logged once, as first
//!   received. Matching also takes a message whose content went from a string to the one text
//!   block it stands for, or back, as the same ([`equivalent`]): Claude Code sends a string as a
//!   block to mark it.
//! - **The request sent carries the client's current annotations.** The items the view reuses
//!   (received earlier, possibly compacted since) take the annotations of the request items they
//!   stand for (by item id) and lose any others ([`follow`], [`follow_items`]), so markers never
//!   pile up call after call and never point where the client no longer wants them; a message's
//!   content goes out as a string or as blocks as the client sent it this time.
//!
//! Where an item holds them: its wire message's fields ([`Envelope::extra`]), its body's own
//! fields (a tool call's, tool result's, reasoning's or checkpoint's `extra`, the top level of an
//! opaque or provider compaction value) and each part's fields (a part's `extra`, the top level of
//! an opaque part's value). Only those wire-level members are annotations: a `cache_control` key
//! inside tool arguments or a tool's output is content.

use compact_core::model::{
    Envelope, Extra, Item, ItemBody, Part, PartKind, ProviderCompaction, ToolSpec,
};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// The wire members that are per-call annotations.
pub const ANNOTATIONS: [&str; 1] = ["cache_control"];

fn is_annotation(key: &str) -> bool {
    ANNOTATIONS.contains(&key)
}

/// The annotations of one map (members in the map's order).
fn of_map(map: &Extra) -> Vec<(&String, &Value)> {
    map.iter().filter(|(k, _)| is_annotation(k)).collect()
}

fn map_has(map: &Extra) -> bool {
    ANNOTATIONS.iter().any(|k| map.contains_key(*k))
}

fn value_has(v: &Value) -> bool {
    v.as_object().is_some_and(map_has)
}

/// `map` with the annotations of `from` in place of its own (`from` absent: none). True when
/// that changed it.
fn set_map(map: &mut Extra, from: Option<&Extra>) -> bool {
    let wanted: Vec<(String, Value)> = from.map_or_else(Vec::new, |f| {
        of_map(f)
            .into_iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    });
    let have: Vec<(String, Value)> = of_map(map)
        .into_iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if have == wanted {
        return false;
    }
    map.retain(|k, _| !is_annotation(k));
    map.extend(wanted);
    true
}

fn set_value(v: &mut Value, from: Option<&Value>) -> bool {
    match v {
        Value::Object(map) => set_map(map, from.and_then(Value::as_object)),
        _ => false,
    }
}

fn part_has(p: &Part) -> bool {
    map_has(&p.extra) || matches!(&p.kind, PartKind::Opaque(v) if value_has(v))
}

/// The parts of a body, when it has any.
fn parts(body: &ItemBody) -> &[Part] {
    match body {
        ItemBody::Message(m) => &m.parts,
        ItemBody::ToolResult(r) => &r.parts,
        _ => &[],
    }
}

/// The body's own fields that may hold annotations.
fn own(body: &ItemBody) -> Option<&Extra> {
    match body {
        ItemBody::Message(_) => None,
        ItemBody::ToolCall(c) => Some(&c.extra),
        ItemBody::ToolResult(r) => Some(&r.extra),
        ItemBody::Reasoning(r) => Some(&r.extra),
        ItemBody::Checkpoint(c) => Some(&c.extra),
        ItemBody::Opaque(o) => o.value.as_object(),
        ItemBody::ProviderCompaction(p) => p.value().as_object(),
    }
}

/// True when the item carries an annotation anywhere.
pub fn has_annotations(item: &Item) -> bool {
    item.meta
        .envelope
        .as_ref()
        .is_some_and(|e| map_has(&e.extra))
        || own(item.body()).is_some_and(map_has)
        || parts(item.body()).iter().any(part_has)
}

/// The item without its annotations (borrowed when it has none).
pub fn without_annotations(item: &Item) -> Cow<'_, Item> {
    if !has_annotations(item) {
        return Cow::Borrowed(item);
    }
    let mut item = item.clone();
    take_from(&mut item, None);
    Cow::Owned(item)
}

/// True when `a` and `b` differ at most in their annotations and in whether their wire message's
/// content was a plain string: Claude Code sends a user message whose content is a string as one
/// text block while that message carries the marker, and as the string again once the marker has
/// moved on (the model reads the same either way). What matching accepts as the item last
/// received; the chain's links still tell the two shapes apart.
pub fn equivalent(a: &Item, b: &Item) -> bool {
    let (a, b) = (without_annotations(a), without_annotations(b));
    if *a == *b {
        return true;
    }
    let string = match (&a.meta.envelope, &b.meta.envelope) {
        (Some(ea), Some(eb)) if ea.content_was_string != eb.content_was_string => {
            ea.content_was_string
        }
        _ => return false,
    };
    let mut b = b.into_owned();
    if let Some(eb) = &b.meta.envelope {
        let mut env = Envelope::clone(eb);
        env.content_was_string = string;
        b.meta.envelope = Some(Arc::new(env));
    }
    *a == b
}

/// Gives `target` the annotations `source` has at the same places (its wire message, its body,
/// its parts by position), and none elsewhere; `source` absent: removes them all. The body is
/// touched only when it changes (which forgets its token memo and wire fingerprint). True when
/// anything changed.
pub fn take_from(target: &mut Item, source: Option<&Item>) -> bool {
    let mut changed = take_envelope(target, source);
    let src_body = source.map(Item::body);
    let body_differs = {
        let own_differs = match (own(target.body()), src_body.and_then(own)) {
            (Some(t), s) => of_map(t) != s.map(of_map).unwrap_or_default(),
            (None, _) => false,
        };
        let src_parts = src_body.map_or(&[][..], parts);
        own_differs
            || parts(target.body()).iter().enumerate().any(|(i, p)| {
                let s = src_parts.get(i);
                of_map(&p.extra) != s.map(|s| of_map(&s.extra)).unwrap_or_default()
                    || opaque_annotations(p) != s.map(opaque_annotations).unwrap_or_default()
            })
    };
    if !body_differs {
        return changed;
    }
    changed = true;
    if let ItemBody::ProviderCompaction(p) = target.body() {
        let mut value = p.value().clone();
        let from = src_body.and_then(own).map(|m| Value::Object(m.clone()));
        set_value(&mut value, from.as_ref());
        let wire = p.wire();
        target.set_body(ItemBody::ProviderCompaction(ProviderCompaction::new(
            wire, value,
        )));
        return changed;
    }
    let body = target.body_mut();
    let src_own = src_body.and_then(own);
    match &mut *body {
        ItemBody::Message(_) | ItemBody::ProviderCompaction(_) => {}
        ItemBody::ToolCall(c) => {
            set_map(&mut c.extra, src_own);
        }
        ItemBody::ToolResult(r) => {
            set_map(&mut r.extra, src_own);
        }
        ItemBody::Reasoning(r) => {
            set_map(&mut r.extra, src_own);
        }
        ItemBody::Checkpoint(c) => {
            set_map(&mut c.extra, src_own);
        }
        ItemBody::Opaque(o) => {
            set_value(
                &mut o.value,
                src_own.map(|m| Value::Object(m.clone())).as_ref(),
            );
        }
    }
    let src_parts = src_body.map_or(&[][..], parts);
    let target_parts = match &mut *body {
        ItemBody::Message(m) => &mut m.parts[..],
        ItemBody::ToolResult(r) => &mut r.parts[..],
        _ => &mut [][..],
    };
    for (i, p) in target_parts.iter_mut().enumerate() {
        let s = src_parts.get(i);
        set_map(&mut p.extra, s.map(|s| &s.extra));
        if let PartKind::Opaque(v) = &mut p.kind {
            let from = s.and_then(|s| match &s.kind {
                PartKind::Opaque(v) => Some(v),
                _ => None,
            });
            set_value(v, from);
        }
    }
    changed
}

fn opaque_annotations(p: &Part) -> Vec<(&String, &Value)> {
    match &p.kind {
        PartKind::Opaque(Value::Object(m)) => of_map(m),
        _ => Vec::new(),
    }
}

/// The wire message's annotations (and whether its content is sent as a plain string: see
/// [`equivalent`]): when they differ, `target` takes `source`'s envelope itself if the two are
/// otherwise equal (so it shares it with its siblings), else a copy of its own with `source`'s
/// annotations and string flag.
fn take_envelope(target: &mut Item, source: Option<&Item>) -> bool {
    let src = source.and_then(|s| s.meta.envelope.as_ref());
    let Some(env) = target.meta.envelope.as_ref() else {
        return false;
    };
    let wanted = src.map(|e| of_map(&e.extra)).unwrap_or_default();
    let string = src.map_or(env.content_was_string, |e| e.content_was_string);
    if of_map(&env.extra) == wanted && env.content_was_string == string {
        return false;
    }
    if let Some(src) = src {
        if same_but_annotations(env, src) {
            target.meta.envelope = Some(Arc::clone(src));
            return true;
        }
    }
    let mut copy = Envelope::clone(env);
    set_map(&mut copy.extra, src.map(|e| &e.extra));
    copy.content_was_string = string;
    target.meta.envelope = Some(Arc::new(copy));
    true
}

/// Equal but for annotations and the string flag.
fn same_but_annotations(a: &Envelope, b: &Envelope) -> bool {
    fn rest(e: &Envelope) -> Vec<(&String, &Value)> {
        e.extra.iter().filter(|(k, _)| !is_annotation(k)).collect()
    }
    a.format == b.format && a.message == b.message && a.slot == b.slot && rest(a) == rest(b)
}

/// Makes the items of `view` carry the annotations of the items of `source` they stand for (the
/// item of `source` with the same id), and the others none. For a view built from an earlier
/// request's items, or by a compaction, before it is sent in answer to `source`.
pub fn follow(view: &mut [Item], source: &[Item]) {
    let by_id: HashMap<&str, &Item> = source.iter().map(|i| (i.meta.id.as_str(), i)).collect();
    for item in view {
        match by_id.get(item.meta.id.as_str()) {
            Some(s) => {
                take_from(item, Some(s));
            }
            None if has_annotations(item) => {
                take_from(item, None);
            }
            None => {}
        }
    }
}

/// [`follow`] for a few items of the source only (those whose annotations changed since the view
/// last followed it): each is looked for from the end of the view, where the items a client
/// re-marks usually are.
pub fn follow_items<'a>(view: &mut [Item], changed: impl IntoIterator<Item = &'a Item>) {
    for source in changed {
        if let Some(item) = view.iter_mut().rev().find(|i| i.meta.id == source.meta.id) {
            take_from(item, Some(source));
        }
    }
}

/// True when the tool declarations are the same apart from their annotations.
pub fn same_tools(a: &[ToolSpec], b: &[ToolSpec]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x == y
                || (x.name == y.name
                    && x.description == y.description
                    && x.schema == y.schema
                    && strip_value(&x.raw) == strip_value(&y.raw))
        })
}

fn strip_value(v: &Value) -> Cow<'_, Value> {
    if !value_has(v) {
        return Cow::Borrowed(v);
    }
    let mut v = v.clone();
    set_value(&mut v, None);
    Cow::Owned(v)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_core::model::Format;
    use serde_json::json;

    fn request(marked: usize) -> Vec<Item> {
        let mut messages = vec![
            json!({"role": "user", "content": [{"type": "text", "text": "go"}]}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cache_control": 1}}]}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                "content": [{"type": "text", "text": "out"}]}]}),
        ];
        let blocks = messages[marked]["content"].as_array_mut().unwrap();
        blocks.last_mut().unwrap()["cache_control"] = json!({"type": "ephemeral"});
        let req = json!({"model": "m", "max_tokens": 9, "messages": messages});
        compact_formats::wire::decode(Format::Anthropic, &req)
            .unwrap()
            .items
    }

    #[test]
    fn items_take_the_markers_of_the_request_they_stand_for() {
        let (old, new) = (request(0), request(2));
        assert!(has_annotations(&old[0]) && !has_annotations(&new[0]));
        // A tool argument named `cache_control` is content, not an annotation.
        assert!(!has_annotations(&new[2]));
        assert_eq!(without_annotations(&old[0]), without_annotations(&new[0]));
        assert_eq!(without_annotations(&old[3]), without_annotations(&new[3]));
        assert_ne!(old[3], new[3]);
        let mut view = old.clone();
        follow(&mut view, &new);
        assert_eq!(view, new);
        let mut view = old.clone();
        follow_items(&mut view, [&new[0], &new[3]]);
        assert_eq!(view, new);
        // Items the request does not hold lose theirs.
        let mut view = old.clone();
        follow(&mut view, &[]);
        assert!(view.iter().all(|i| !has_annotations(i)));
    }
}
