//! Pieces shared by the three wire formats: item construction, checkpoint recognition, grouping items
//! back into wire messages for encoding, and `data:` URLs.

use super::json::{is_plain_text_block, merge};
use super::{Loss, LossKind};
use compact_core::model::{
    Checkpoint, Envelope, Extra, Format, Item, ItemBody, Message, Part, PartKind, Role,
    CHECKPOINT_OPEN,
};
use serde_json::Value;
use std::sync::Arc;

/// Key under which a checkpoint decoded from text that is not exactly [`Checkpoint::wire_text`] keeps
/// its original text (so the round trip stays exact). Never emitted as a wire field.
pub(crate) const CHECKPOINT_WIRE_TEXT: &str = "wire_text";

/// An item decoded from `format` inside the wire message `env`.
pub(crate) fn new_item(body: ItemBody, env: &Arc<Envelope>, format: Format) -> Item {
    let mut item = Item::new(body);
    item.meta.origin = Some(format);
    item.meta.envelope = Some(Arc::clone(env));
    item
}

/// An envelope for message `index` of `format`.
pub(crate) fn envelope(
    format: Format,
    index: u32,
    extra: Extra,
    content_was_string: bool,
) -> Arc<Envelope> {
    Arc::new(Envelope {
        format: Some(format),
        message: index,
        extra,
        content_was_string,
        slot: None,
    })
}

/// A user part seen through checkpoint glasses.
pub(crate) enum Recognised {
    /// Checkpoint wire text.
    Checkpoint(Checkpoint),
    /// Any other part, unchanged.
    Part(Part),
}

/// The checkpoint a user text part stands for, or the part back when it is not one.
pub(crate) fn checkpoint_of(part: Part) -> Recognised {
    let PartKind::Text(text) = &part.kind else {
        return Recognised::Part(part);
    };
    // A text part with a kept `type` is a variant (refusal, off-role text type): never a checkpoint.
    if !text.starts_with(CHECKPOINT_OPEN) || part.extra.contains_key("type") {
        return Recognised::Part(part);
    }
    let Some(mut cp) = Checkpoint::from_wire_text(text) else {
        return Recognised::Part(part);
    };
    if cp.wire_text() != *text {
        cp.extra
            .insert(CHECKPOINT_WIRE_TEXT.to_owned(), Value::String(text.clone()));
    }
    cp.extra.extend(part.extra);
    Recognised::Checkpoint(cp)
}

/// The text a checkpoint is sent as: its original wire text when it was decoded from one that is
/// still accurate, else [`Checkpoint::wire_text`].
pub(crate) fn checkpoint_text(cp: &Checkpoint) -> String {
    if let Some(Value::String(orig)) = cp.extra.get(CHECKPOINT_WIRE_TEXT) {
        if let Some(parsed) = Checkpoint::from_wire_text(orig) {
            if parsed.text == cp.text && parsed.generation == cp.generation {
                return orig.clone();
            }
        }
    }
    cp.wire_text()
}

/// The wire fields a checkpoint's text part carried (without the internal original-text key).
pub(crate) fn checkpoint_part_extra(cp: &Checkpoint) -> Extra {
    let mut extra = cp.extra.clone();
    extra.remove(CHECKPOINT_WIRE_TEXT);
    extra
}

/// Whether the unknown fields of an item are re-emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Keep {
    /// The item comes from the target format (or a transcript of it): re-emit its `extra` fields.
    Extra,
    /// The item comes from elsewhere: build canonical objects and report dropped fields.
    Canonical,
}

/// The wire dialect an item's fields belong to: its envelope's format or origin, with transcripts
/// mapped to the wire format their records embed (Claude Code -> Anthropic, Codex -> Responses).
pub(crate) fn dialect(item: &Item) -> Option<Format> {
    let f = item
        .meta
        .envelope
        .as_ref()
        .and_then(|e| e.format)
        .or(item.meta.origin)?;
    match f {
        Format::OpenAiChat | Format::OpenAiResponses | Format::Anthropic => Some(f),
        Format::ClaudeCode => Some(Format::Anthropic),
        Format::CodexRollout => Some(Format::OpenAiResponses),
        _ => None,
    }
}

/// [`Keep::Extra`] when the item belongs to `target`.
pub(crate) fn keep_for(item: &Item, target: Format) -> Keep {
    if dialect(item) == Some(target) {
        Keep::Extra
    } else {
        Keep::Canonical
    }
}

/// A run of items to encode: a wire message of the target format, or one item from elsewhere.
pub(crate) enum Unit<'a> {
    /// Consecutive items of one wire message of the target format.
    Wire {
        /// Their shared envelope.
        env: &'a Envelope,
        /// `(index in the conversation, item)`.
        items: Vec<(usize, &'a Item)>,
    },
    /// An item with no envelope of the target format.
    Loose {
        /// Index in the conversation.
        idx: usize,
        /// The item.
        item: &'a Item,
        /// Whether its fields are re-emitted.
        keep: Keep,
    },
}

/// Groups the model-visible items of `items` into [`Unit`]s for `target`.
pub(crate) fn units(items: &[Item], target: Format) -> Vec<Unit<'_>> {
    let mut out: Vec<Unit<'_>> = Vec::new();
    for (idx, item) in items.iter().enumerate() {
        if !item.meta.visibility.model {
            continue;
        }
        let env = item
            .meta
            .envelope
            .as_ref()
            .filter(|e| e.format == Some(target));
        let Some(env) = env else {
            out.push(Unit::Loose {
                idx,
                item,
                keep: keep_for(item, target),
            });
            continue;
        };
        if let Some(Unit::Wire { env: last, items }) = out.last_mut() {
            let same = std::ptr::eq(*last, env.as_ref())
                || (last.message == env.message && last.slot == env.slot);
            if same {
                items.push((idx, item));
                continue;
            }
        }
        out.push(Unit::Wire {
            env: env.as_ref(),
            items: vec![(idx, item)],
        });
    }
    out
}

/// Extra keys that are decoder bookkeeping rather than wire data of their own: a `type` kept because it
/// is optional or variable, an `is_error: false` kept for exactness, a checkpoint's original text.
/// `role` is kept on an Anthropic message whose first block does not imply its role.
const BOOKKEEPING_KEYS: [&str; 4] = ["type", "is_error", "role", CHECKPOINT_WIRE_TEXT];

/// `null`, `[]`, `{}` and `""`: values that carry nothing when dropped.
fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// The extra keys worth reporting as dropped: not bookkeeping, not empty.
fn reportable(extra: &Extra) -> Vec<&str> {
    extra
        .iter()
        .filter(|(k, v)| !is_empty_value(v) && !BOOKKEEPING_KEYS.contains(&k.as_str()))
        .map(|(k, _)| k.as_str())
        .collect()
}

/// Records a [`LossKind::FieldsDropped`] loss when a canonical encode leaves unknown fields behind
/// (and a [`LossKind::PartChanged`] one when a refusal part becomes plain text).
pub(crate) fn note_fields(losses: &mut Vec<Loss>, idx: usize, what: &str, extra: &Extra) {
    if extra.get("type").and_then(Value::as_str) == Some("refusal") {
        losses.push(Loss::item(
            idx,
            LossKind::PartChanged,
            "refusal became text",
        ));
    }
    let keys = reportable(extra);
    if !keys.is_empty() {
        losses.push(Loss::item(
            idx,
            LossKind::FieldsDropped,
            format!("{what}: {}", keys.join(", ")),
        ));
    }
}

/// Re-emits an item's or part's unknown fields into its encoded object `o` when it belongs to the
/// target format ([`Keep::Extra`]), else reports them dropped (see [`note_fields`]).
pub(crate) fn carry_extra(
    o: &mut Extra,
    extra: &Extra,
    keep: Keep,
    idx: usize,
    what: &str,
    losses: &mut Vec<Loss>,
) {
    if keep == Keep::Extra {
        merge(o, extra);
    } else {
        note_fields(losses, idx, what, extra);
    }
}

/// Records a [`LossKind::FieldsDropped`] loss for each wire message of another format whose
/// message-level fields (`name`, `id`, `status`, ...) are not carried into `target`.
pub(crate) fn note_envelopes(items: &[Item], target: Format, losses: &mut Vec<Loss>) {
    let mut last: Option<&Arc<Envelope>> = None;
    for (idx, item) in items.iter().enumerate() {
        let Some(env) = item.meta.envelope.as_ref() else {
            continue;
        };
        if !item.meta.visibility.model
            || env.format == Some(target)
            || last.is_some_and(|l| Arc::ptr_eq(l, env))
        {
            continue;
        }
        last = Some(env);
        let keys = reportable(&env.extra);
        if !keys.is_empty() {
            losses.push(Loss::item(
                idx,
                LossKind::FieldsDropped,
                format!("message: {}", keys.join(", ")),
            ));
        }
    }
}

/// Splits a `data:<mime>;base64,<data>` URL into `(mime, data)`.
pub(crate) fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (mime, data) = rest.split_once(";base64,")?;
    Some((mime, data))
}

/// `data:<mime>;base64,<data>`.
pub(crate) fn data_url(mime: &str, data: &str) -> String {
    format!("data:{mime};base64,{data}")
}

/// The `content` member for a list of wire parts: a plain string when the message had one and the
/// parts are still a single plain text part of type `text_type`, nothing when it had a string (or no
/// content) and there are no parts, else the array.
pub(crate) fn content_value(parts: Vec<Value>, was_string: bool, text_type: &str) -> Option<Value> {
    if was_string {
        if parts.is_empty() {
            return None;
        }
        if parts.len() == 1 {
            if let Some(text) = is_plain_text_block(&parts[0], text_type) {
                return Some(Value::String(text));
            }
        }
    }
    Some(Value::Array(parts))
}

/// Appends message parts as bodies: a message item per run of ordinary parts, and (for user messages)
/// a checkpoint item for each checkpoint text part.
pub(crate) fn push_parts(bodies: &mut Vec<ItemBody>, role: Role, parts: Vec<Part>) {
    let mut run: Vec<Part> = Vec::new();
    for part in parts {
        if role != Role::User {
            run.push(part);
            continue;
        }
        match checkpoint_of(part) {
            Recognised::Checkpoint(cp) => {
                if !run.is_empty() {
                    bodies.push(ItemBody::Message(Message {
                        role,
                        parts: std::mem::take(&mut run),
                    }));
                }
                bodies.push(ItemBody::Checkpoint(cp));
            }
            Recognised::Part(part) => run.push(part),
        }
    }
    if !run.is_empty() {
        bodies.push(ItemBody::Message(Message { role, parts: run }));
    }
}

/// Call ids for legacy Chat `function_call`s (which have none) when the target needs one: each
/// id-less call gets `call_legacy_<n>`, and each id-less result answers the latest such call.
#[derive(Debug, Default)]
pub(crate) struct LegacyIds {
    issued: usize,
    current: Option<String>,
}

impl LegacyIds {
    /// The id to write for a call.
    pub(crate) fn call(&mut self, id: &str, idx: usize, losses: &mut Vec<Loss>) -> String {
        if !id.is_empty() {
            return id.to_owned();
        }
        self.issued += 1;
        let id = format!("call_legacy_{}", self.issued);
        losses.push(Loss::item(
            idx,
            LossKind::IdSynthesized,
            format!("legacy function_call given id `{id}`"),
        ));
        self.current = Some(id.clone());
        id
    }

    /// The id to write for a result.
    pub(crate) fn result(&mut self, id: &str) -> String {
        if !id.is_empty() {
            return id.to_owned();
        }
        self.current
            .clone()
            .unwrap_or_else(|| "call_legacy_0".to_owned())
    }
}

/// Whether a reasoning item with no wire origin may be written for a target (it is never converted
/// between providers: signatures and encrypted payloads are bound to the provider that made them).
pub(crate) fn is_native(item: &Item) -> bool {
    dialect(item).is_none() && item.meta.origin.is_none()
}
