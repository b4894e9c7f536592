//! The session log's storage format for items: a versioned JSON document per [`Item`], written and
//! read only here (the core model is deliberately not serialisable; this is its one storage form).
//!
//! The document holds everything [`Item`]'s equality looks at except the turn index (derived from
//! position) and the token memo (a cache): so `decode(encode(item)) == item`, and two items that
//! are equal encode to the same bytes. Those bytes are the *canonical item bytes*; the hash chain
//! ([`crate::chain`]) is computed over them less the per-call annotations ([`chain_bytes`]).
//! Object keys keep their insertion order (the workspace builds `serde_json` with
//! `preserve_order`), so an encoding is a pure function of the item.
//!
//! Version 1 (this one) is the only version; [`ITEM_FORMAT_VERSION`] is stored with every record
//! so a later version can read older logs.

use compact_core::model::{
    Arguments, Checkpoint, CompactionWire, Envelope, Extra, Format, Item, ItemBody, ItemId, Media,
    MediaSource, Message, Opaque, Part, PartKind, ProviderCompaction, Reasoning, Role, ToolCall,
    ToolCallKind, ToolResult, Visibility,
};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Version of the item document written by [`encode_item`].
pub const ITEM_FORMAT_VERSION: u64 = 1;

/// A document that is not a valid item of this format: the path of the offending field and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid stored item at `{path}`: {message}")]
pub struct CodecError {
    /// JSON path of the offending field (`body.parts[2].kind`).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

fn bad(path: &str, message: impl Into<String>) -> CodecError {
    CodecError {
        path: path.to_owned(),
        message: message.into(),
    }
}

/// The item as its storage document, as a `Value` (for callers that embed or edit it; the bytes
/// of a document are written by [`ItemDoc`] without building one).
pub fn encode_item(item: &Item) -> Value {
    let meta = &item.meta;
    json!({
        "id": meta.id.as_str(),
        "protected": meta.protected,
        "model": meta.visibility.model,
        "user": meta.visibility.user,
        "ts": meta.timestamp,
        "origin": meta.origin.map(Format::name),
        "env": meta.envelope.as_deref().map(encode_envelope),
        "body": encode_body(item.body()),
    })
}

/// The canonical bytes of an item (its storage document, serialised): the bytes of
/// `serde_json::to_vec(&encode_item(item))`, written straight from the item by [`ItemDoc`].
pub fn canonical_bytes(item: &Item) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    // Writing to a `Vec` cannot fail, nor can the document (its map keys are strings).
    let _ = serde_json::to_writer(&mut out, &ItemDoc(item));
    out
}

/// The bytes the hash chain ([`crate::chain`]) is computed over: the canonical bytes of the item
/// without its per-call annotations (`cache_control`: see [`crate::annotation`]), so a marker a
/// client moved is not a new item. For an item without annotations (every item of an OpenAI
/// request, most of an Anthropic one) they are its canonical bytes, so the links logged before
/// annotations were left out stay what this computes; a link logged for an annotated item then
/// differs, and matching still recognises such an item by value apart from its annotations
/// (`SessionState::match_prefix`). The stored item itself keeps its annotations.
pub fn chain_bytes(item: &Item) -> Vec<u8> {
    canonical_bytes(&crate::annotation::without_annotations(item))
}

/// An item's storage document, serialised straight from the item's fields: the same keys in the
/// same order, the same values and so the same bytes as serialising [`encode_item`]'s `Value`,
/// without building that tree (its maps, copied strings and extras). Every `*Doc` below mirrors
/// one `encode_*` function above; the two are kept byte-identical by the tests.
pub struct ItemDoc<'a>(pub &'a Item);

/// Serialises map entries in order (the shape every document below has).
macro_rules! doc_map {
    ($s:expr, $($key:literal => $value:expr),+ $(,)?) => {{
        let mut m = $s.serialize_map(None)?;
        $(m.serialize_entry($key, &$value)?;)+
        m.end()
    }};
}

impl Serialize for ItemDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let meta = &self.0.meta;
        doc_map!(s,
            "id" => meta.id.as_str(),
            "protected" => meta.protected,
            "model" => meta.visibility.model,
            "user" => meta.visibility.user,
            "ts" => meta.timestamp,
            "origin" => meta.origin.map(Format::name),
            "env" => meta.envelope.as_deref().map(EnvelopeDoc),
            "body" => BodyDoc(self.0.body()),
        )
    }
}

struct EnvelopeDoc<'a>(&'a Envelope);

impl Serialize for EnvelopeDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let env = self.0;
        doc_map!(s,
            "format" => env.format.map(Format::name),
            "message" => env.message,
            "extra" => env.extra,
            "string" => env.content_was_string,
            "slot" => env.slot,
        )
    }
}

struct BodyDoc<'a>(&'a ItemBody);

impl Serialize for BodyDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            ItemBody::Message(m) => doc_map!(s,
                "type" => "message", "role" => m.role.as_str(), "parts" => PartsDoc(&m.parts),
            ),
            ItemBody::ToolCall(c) => doc_map!(s,
                "type" => "tool_call", "call_id" => c.call_id, "name" => c.name,
                "args" => ArgsDoc(&c.arguments),
                "kind" => call_kind_name(c.kind), "extra" => c.extra,
            ),
            ItemBody::ToolResult(r) => doc_map!(s,
                "type" => "tool_result", "call_id" => r.call_id, "tool_name" => r.tool_name,
                "parts" => PartsDoc(&r.parts), "is_error" => r.is_error,
                "kind" => call_kind_name(r.kind), "string" => r.content_was_string,
                "extra" => r.extra,
            ),
            ItemBody::Reasoning(r) => doc_map!(s,
                "type" => "reasoning", "text" => r.text, "summary" => r.summary,
                "signature" => r.signature, "encrypted" => r.encrypted, "redacted" => r.redacted,
                "extra" => r.extra,
            ),
            ItemBody::Checkpoint(c) => doc_map!(s,
                "type" => "checkpoint", "text" => c.text, "generation" => c.generation,
                "covers" => CoversDoc(&c.covers), "extra" => c.extra,
            ),
            ItemBody::Opaque(o) => doc_map!(s,
                "type" => "opaque", "label" => o.label, "role" => o.role.map(Role::as_str),
                "value" => o.value,
            ),
            ItemBody::ProviderCompaction(p) => doc_map!(s,
                "type" => "provider_compaction", "wire" => compaction_wire_name(p.wire()),
                "value" => p.value(),
            ),
        }
    }
}

struct ArgsDoc<'a>(&'a Arguments);

impl Serialize for ArgsDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Arguments::Json(v) => doc_map!(s, "json" => v),
            Arguments::Text(t) => doc_map!(s, "text" => t),
        }
    }
}

struct CoversDoc<'a>(&'a [ItemId]);

impl Serialize for CoversDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(ItemId::as_str))
    }
}

struct PartsDoc<'a>(&'a [Part]);

impl Serialize for PartsDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(PartDoc))
    }
}

struct PartDoc<'a>(&'a Part);

impl Serialize for PartDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let part = self.0;
        match &part.kind {
            PartKind::Text(t) => doc_map!(s, "kind" => "text", "data" => t, "extra" => part.extra),
            PartKind::Image(m) => {
                doc_map!(s, "kind" => "image", "data" => MediaDoc(m), "extra" => part.extra)
            }
            PartKind::File(m) => {
                doc_map!(s, "kind" => "file", "data" => MediaDoc(m), "extra" => part.extra)
            }
            PartKind::Audio(m) => {
                doc_map!(s, "kind" => "audio", "data" => MediaDoc(m), "extra" => part.extra)
            }
            PartKind::Opaque(v) => {
                doc_map!(s, "kind" => "opaque", "data" => v, "extra" => part.extra)
            }
        }
    }
}

struct MediaDoc<'a>(&'a Media);

impl Serialize for MediaDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        doc_map!(s,
            "source" => MediaSourceDoc(&m.source), "mime" => m.mime, "name" => m.name,
            "detail" => m.detail, "size" => m.size,
        )
    }
}

struct MediaSourceDoc<'a>(&'a MediaSource);

impl Serialize for MediaSourceDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            MediaSource::Url(t) => doc_map!(s, "url" => t),
            MediaSource::Base64(t) => doc_map!(s, "base64" => t),
            MediaSource::FileId(t) => doc_map!(s, "file_id" => t),
            MediaSource::Text(t) => doc_map!(s, "text" => t),
            MediaSource::None => s.serialize_unit(),
        }
    }
}

fn encode_envelope(env: &Envelope) -> Value {
    json!({
        "format": env.format.map(Format::name),
        "message": env.message,
        "extra": env.extra,
        "string": env.content_was_string,
        "slot": env.slot,
    })
}

fn encode_body(body: &ItemBody) -> Value {
    match body {
        ItemBody::Message(m) => json!({
            "type": "message", "role": m.role.as_str(), "parts": encode_parts(&m.parts),
        }),
        ItemBody::ToolCall(c) => json!({
            "type": "tool_call", "call_id": c.call_id, "name": c.name,
            "args": match &c.arguments {
                Arguments::Json(v) => json!({"json": v}),
                Arguments::Text(s) => json!({"text": s}),
            },
            "kind": call_kind_name(c.kind), "extra": c.extra,
        }),
        ItemBody::ToolResult(r) => json!({
            "type": "tool_result", "call_id": r.call_id, "tool_name": r.tool_name,
            "parts": encode_parts(&r.parts), "is_error": r.is_error,
            "kind": call_kind_name(r.kind), "string": r.content_was_string, "extra": r.extra,
        }),
        ItemBody::Reasoning(r) => json!({
            "type": "reasoning", "text": r.text, "summary": r.summary, "signature": r.signature,
            "encrypted": r.encrypted, "redacted": r.redacted, "extra": r.extra,
        }),
        ItemBody::Checkpoint(c) => json!({
            "type": "checkpoint", "text": c.text, "generation": c.generation,
            "covers": c.covers.iter().map(ItemId::as_str).collect::<Vec<_>>(), "extra": c.extra,
        }),
        ItemBody::Opaque(o) => json!({
            "type": "opaque", "label": o.label, "role": o.role.map(Role::as_str), "value": o.value,
        }),
        ItemBody::ProviderCompaction(p) => json!({
            "type": "provider_compaction", "wire": compaction_wire_name(p.wire()), "value": p.value(),
        }),
    }
}

fn encode_parts(parts: &[Part]) -> Value {
    Value::Array(parts.iter().map(encode_part).collect())
}

fn encode_part(part: &Part) -> Value {
    let (kind, data) = match &part.kind {
        PartKind::Text(t) => ("text", json!(t)),
        PartKind::Image(m) => ("image", encode_media(m)),
        PartKind::File(m) => ("file", encode_media(m)),
        PartKind::Audio(m) => ("audio", encode_media(m)),
        PartKind::Opaque(v) => ("opaque", v.clone()),
    };
    json!({"kind": kind, "data": data, "extra": part.extra})
}

fn encode_media(m: &Media) -> Value {
    let source = match &m.source {
        MediaSource::Url(s) => json!({"url": s}),
        MediaSource::Base64(s) => json!({"base64": s}),
        MediaSource::FileId(s) => json!({"file_id": s}),
        MediaSource::Text(s) => json!({"text": s}),
        MediaSource::None => Value::Null,
    };
    json!({
        "source": source, "mime": m.mime, "name": m.name, "detail": m.detail,
        "size": m.size.map(|(w, h)| json!([w, h])),
    })
}

fn call_kind_name(kind: ToolCallKind) -> &'static str {
    match kind {
        ToolCallKind::Function => "function",
        ToolCallKind::Custom => "custom",
        ToolCallKind::LocalShell => "local_shell",
        ToolCallKind::Server => "server",
    }
}

/// Envelope slots the wire decoders use (`Envelope::slot` is a static name).
const SLOTS: [&str; 3] = ["system", "instructions", "input"];

/// Reads an item document. Envelopes are not shared between items: see [`share_envelopes`].
pub fn decode_item(doc: &Value) -> Result<Item, CodecError> {
    let r = Reader {
        v: doc,
        path: String::new(),
    };
    let mut item = Item::new(decode_body(&r.field("body")?)?);
    item.meta.id = ItemId::new(r.str("id")?);
    item.meta.protected = r.bool("protected")?;
    item.meta.visibility = Visibility {
        model: r.bool("model")?,
        user: r.bool("user")?,
    };
    item.meta.timestamp = r.opt_str("ts")?.map(str::to_owned);
    item.meta.origin = r
        .opt_str("origin")?
        .map(|f| format(f, "origin"))
        .transpose()?;
    let env = r.field("env")?;
    if !env.v.is_null() {
        item.meta.envelope = Some(Arc::new(Envelope {
            format: env
                .opt_str("format")?
                .map(|f| format(f, "env.format"))
                .transpose()?,
            message: u32::try_from(env.u64("message")?)
                .map_err(|_| bad("env.message", "out of range"))?,
            extra: env.map("extra")?,
            content_was_string: env.bool("string")?,
            slot: match env.opt_str("slot")? {
                None => None,
                Some(s) => Some(
                    SLOTS
                        .into_iter()
                        .find(|k| *k == s)
                        .ok_or_else(|| bad("env.slot", format!("unknown slot `{s}`")))?,
                ),
            },
        }));
    }
    Ok(item)
}

/// Makes adjacent items whose envelopes are equal share one envelope, as decoding a wire request
/// does (grouping into wire messages and units compares envelopes by identity).
pub fn share_envelopes(items: &mut [Item]) {
    let mut last: Option<Arc<Envelope>> = None;
    for item in items {
        match (&last, &item.meta.envelope) {
            (Some(prev), Some(env)) if !Arc::ptr_eq(prev, env) && **prev == **env => {
                item.meta.envelope = Some(Arc::clone(prev));
            }
            _ => last = item.meta.envelope.clone(),
        }
    }
}

fn format(name: &str, path: &str) -> Result<Format, CodecError> {
    if name == Format::Native.name() {
        return Ok(Format::Native);
    }
    name.parse()
        .map_err(|_| bad(path, format!("unknown format `{name}`")))
}

fn role(name: &str, path: &str) -> Result<Role, CodecError> {
    [
        Role::System,
        Role::Developer,
        Role::User,
        Role::Assistant,
        Role::Tool,
    ]
    .into_iter()
    .find(|r| r.as_str() == name)
    .ok_or_else(|| bad(path, format!("unknown role `{name}`")))
}

fn call_kind(name: &str, path: &str) -> Result<ToolCallKind, CodecError> {
    [
        ToolCallKind::Function,
        ToolCallKind::Custom,
        ToolCallKind::LocalShell,
        ToolCallKind::Server,
    ]
    .into_iter()
    .find(|k| call_kind_name(*k) == name)
    .ok_or_else(|| bad(path, format!("unknown tool call kind `{name}`")))
}

fn decode_body(r: &Reader<'_>) -> Result<ItemBody, CodecError> {
    Ok(match r.str("type")? {
        "message" => ItemBody::Message(Message {
            role: role(r.str("role")?, &r.at("role"))?,
            parts: decode_parts(&r.field("parts")?)?,
        }),
        "tool_call" => {
            let args = r.field("args")?;
            let arguments = if let Some(v) = args.v.get("json") {
                Arguments::Json(v.clone())
            } else {
                Arguments::Text(args.str("text")?.to_owned())
            };
            ItemBody::ToolCall(ToolCall {
                call_id: r.str("call_id")?.to_owned(),
                name: r.str("name")?.to_owned(),
                arguments,
                kind: call_kind(r.str("kind")?, &r.at("kind"))?,
                extra: r.map("extra")?,
            })
        }
        "tool_result" => ItemBody::ToolResult(ToolResult {
            call_id: r.str("call_id")?.to_owned(),
            tool_name: r.opt_str("tool_name")?.map(str::to_owned),
            parts: decode_parts(&r.field("parts")?)?,
            is_error: r.bool("is_error")?,
            kind: call_kind(r.str("kind")?, &r.at("kind"))?,
            content_was_string: r.bool("string")?,
            extra: r.map("extra")?,
        }),
        "reasoning" => ItemBody::Reasoning(Reasoning {
            text: r.opt_str("text")?.map(str::to_owned),
            summary: r.strings("summary")?,
            signature: r.opt_str("signature")?.map(str::to_owned),
            encrypted: r.opt_str("encrypted")?.map(str::to_owned),
            redacted: r.bool("redacted")?,
            extra: r.map("extra")?,
        }),
        "checkpoint" => ItemBody::Checkpoint(Checkpoint {
            text: r.str("text")?.to_owned(),
            generation: u32::try_from(r.u64("generation")?)
                .map_err(|_| bad(&r.at("generation"), "out of range"))?,
            covers: r.strings("covers")?.into_iter().map(ItemId::new).collect(),
            extra: r.map("extra")?,
        }),
        "opaque" => ItemBody::Opaque(Opaque {
            label: r.str("label")?.to_owned(),
            role: r
                .opt_str("role")?
                .map(|s| role(s, &r.at("role")))
                .transpose()?,
            value: r.field("value")?.v.clone(),
        }),
        "provider_compaction" => ItemBody::ProviderCompaction(ProviderCompaction::new(
            compaction_wire(r.str("wire")?, &r.at("wire"))?,
            r.field("value")?.v.clone(),
        )),
        other => return Err(bad(&r.at("type"), format!("unknown item type `{other}`"))),
    })
}

fn compaction_wire_name(wire: CompactionWire) -> &'static str {
    match wire {
        CompactionWire::AnthropicBlock => "anthropic_block",
        CompactionWire::OpenAiItem => "openai_item",
        CompactionWire::OpenAiTrigger => "openai_trigger",
    }
}

fn compaction_wire(name: &str, path: &str) -> Result<CompactionWire, CodecError> {
    match name {
        "anthropic_block" => Ok(CompactionWire::AnthropicBlock),
        "openai_item" => Ok(CompactionWire::OpenAiItem),
        "openai_trigger" => Ok(CompactionWire::OpenAiTrigger),
        other => Err(bad(path, format!("unknown provider compaction `{other}`"))),
    }
}

fn decode_parts(r: &Reader<'_>) -> Result<Vec<Part>, CodecError> {
    let Value::Array(parts) = r.v else {
        return Err(bad(&r.path, "expected an array"));
    };
    parts
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = Reader {
                v,
                path: format!("{}[{i}]", r.path),
            };
            let data = p.field("data")?;
            let kind = match p.str("kind")? {
                "text" => PartKind::Text(
                    data.v
                        .as_str()
                        .ok_or_else(|| bad(&data.at(""), "expected a string"))?
                        .to_owned(),
                ),
                "image" => PartKind::Image(decode_media(&data)?),
                "file" => PartKind::File(decode_media(&data)?),
                "audio" => PartKind::Audio(decode_media(&data)?),
                "opaque" => PartKind::Opaque(data.v.clone()),
                other => return Err(bad(&p.at("kind"), format!("unknown part kind `{other}`"))),
            };
            Ok(Part {
                kind,
                extra: p.map("extra")?,
            })
        })
        .collect()
}

fn decode_media(r: &Reader<'_>) -> Result<Media, CodecError> {
    let source = r.field("source")?;
    let text = |key: &str| source.str(key).map(str::to_owned);
    let source = match source.v {
        Value::Null => MediaSource::None,
        Value::Object(o) if o.contains_key("url") => MediaSource::Url(text("url")?),
        Value::Object(o) if o.contains_key("base64") => MediaSource::Base64(text("base64")?),
        Value::Object(o) if o.contains_key("file_id") => MediaSource::FileId(text("file_id")?),
        Value::Object(o) if o.contains_key("text") => MediaSource::Text(text("text")?),
        _ => return Err(bad(&source.at(""), "unknown media source")),
    };
    let size = match r.v.get("size") {
        None | Some(Value::Null) => None,
        Some(Value::Array(wh)) => match wh.as_slice() {
            [w, h] => Some((dim(w, &r.at("size"))?, dim(h, &r.at("size"))?)),
            _ => return Err(bad(&r.at("size"), "expected [width, height]")),
        },
        Some(_) => return Err(bad(&r.at("size"), "expected [width, height]")),
    };
    Ok(Media {
        source,
        mime: r.opt_str("mime")?.map(str::to_owned),
        name: r.opt_str("name")?.map(str::to_owned),
        detail: r.opt_str("detail")?.map(str::to_owned),
        size,
    })
}

fn dim(v: &Value, path: &str) -> Result<u32, CodecError> {
    v.as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| bad(path, "expected a pixel size"))
}

/// A position in a document being read, for error paths.
struct Reader<'a> {
    v: &'a Value,
    path: String,
}

impl<'a> Reader<'a> {
    fn at(&self, key: &str) -> String {
        match (self.path.is_empty(), key.is_empty()) {
            (_, true) => self.path.to_owned(),
            (true, false) => key.to_owned(),
            (false, false) => format!("{}.{key}", self.path),
        }
    }

    fn field(&self, key: &str) -> Result<Reader<'a>, CodecError> {
        let v = self
            .v
            .get(key)
            .ok_or_else(|| bad(&self.at(key), "missing"))?;
        Ok(Reader {
            v,
            path: self.at(key),
        })
    }

    fn str(&self, key: &str) -> Result<&'a str, CodecError> {
        self.v
            .get(key)
            .and_then(Value::as_str)
            .ok_or_else(|| bad(&self.at(key), "expected a string"))
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, CodecError> {
        match self.v.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(bad(&self.at(key), "expected a string or null")),
        }
    }

    fn bool(&self, key: &str) -> Result<bool, CodecError> {
        self.v
            .get(key)
            .and_then(Value::as_bool)
            .ok_or_else(|| bad(&self.at(key), "expected a boolean"))
    }

    fn u64(&self, key: &str) -> Result<u64, CodecError> {
        self.v
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| bad(&self.at(key), "expected an unsigned integer"))
    }

    fn map(&self, key: &str) -> Result<Extra, CodecError> {
        match self.v.get(key) {
            Some(Value::Object(m)) => Ok(m.clone()),
            None | Some(Value::Null) => Ok(Map::new()),
            Some(_) => Err(bad(&self.at(key), "expected an object")),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>, CodecError> {
        match self.v.get(key) {
            Some(Value::Array(a)) => a
                .iter()
                .map(|s| {
                    s.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| bad(&self.at(key), "expected strings"))
                })
                .collect(),
            _ => Err(bad(&self.at(key), "expected an array of strings")),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_core::model::Conversation;

    fn sample() -> Vec<Item> {
        let env = Arc::new(Envelope {
            format: Some(Format::Anthropic),
            message: 3,
            extra: serde_json::from_value(json!({"id": "msg_1"})).unwrap(),
            content_was_string: false,
            slot: Some("system"),
        });
        let mut call = Item::new(ItemBody::ToolCall(ToolCall::function(
            "c1",
            "bash",
            json!({"command": "ls"}),
        )));
        call.meta.envelope = Some(Arc::clone(&env));
        call.meta.timestamp = Some("2026-01-01T00:00:00Z".into());
        let mut reasoning = Item::new(ItemBody::Reasoning(Reasoning {
            text: Some("think".into()),
            summary: vec!["s".into()],
            signature: Some("sig".into()),
            ..Reasoning::default()
        }));
        reasoning.meta.envelope = Some(env);
        let mut result = ToolResult::text("c1", "a.rs\nb.rs");
        result.tool_name = Some("bash".into());
        result.is_error = true;
        let image = Part {
            kind: PartKind::Image(Media {
                source: MediaSource::Base64("aGk=".into()),
                mime: Some("image/png".into()),
                size: Some((10, 20)),
                ..Media::default()
            }),
            extra: Extra::new(),
        };
        let mut user = Item::new(ItemBody::Message(Message {
            role: Role::User,
            parts: vec![Part::text("look"), image],
        }));
        user.meta.protected = true;
        user.meta.visibility.model = false;
        let mut conv = Conversation::default();
        conv.push(user);
        conv.push(reasoning);
        conv.push(call);
        conv.push(Item::new(ItemBody::ToolResult(result)));
        conv.push(Item::new(ItemBody::Checkpoint(Checkpoint {
            text: "record".into(),
            generation: 2,
            covers: vec![ItemId::new("a"), ItemId::new("b")],
            extra: Extra::new(),
        })));
        conv.push(Item::new(ItemBody::Opaque(Opaque {
            label: "compaction".into(),
            role: None,
            value: json!({"type": "compaction", "x": 1}),
        })));
        conv.items
    }

    #[test]
    fn every_item_round_trips_equal_and_canonical() {
        let items = sample();
        let mut back: Vec<Item> = items
            .iter()
            .map(|i| decode_item(&encode_item(i)).unwrap())
            .collect();
        share_envelopes(&mut back);
        for (a, b) in items.iter().zip(&back) {
            let mut b = b.clone();
            b.meta.turn = a.meta.turn;
            assert_eq!(*a, b);
            assert_eq!(canonical_bytes(a), canonical_bytes(&b));
        }
        let (r, c) = (&back[1], &back[2]);
        assert!(Arc::ptr_eq(
            r.meta.envelope.as_ref().unwrap(),
            c.meta.envelope.as_ref().unwrap()
        ));
    }

    #[test]
    fn the_sample_writes_the_bytes_of_its_value() {
        for item in sample() {
            let reference = serde_json::to_vec(&encode_item(&item)).unwrap();
            assert_eq!(canonical_bytes(&item), reference);
        }
    }

    mod generated {
        use super::*;
        use proptest::prelude::*;

        /// Text with quotes, escapes, control characters, non-ASCII and astral characters.
        fn text() -> BoxedStrategy<String> {
            prop_oneof![
                "[a-z ]{0,8}",
                "[\\\"\\\\/\\x00-\\x1f\\x7f\u{80}-\u{7ff}\u{2028}\u{e000}\u{1f600}a]{0,12}",
                any::<String>(),
            ]
            .boxed()
        }

        fn json() -> BoxedStrategy<Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|n| json!(n)),
                any::<u64>().prop_map(|n| json!(n)),
                any::<f64>().prop_map(|f| json!(f)),
                (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
                text().prop_map(Value::String),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::vec((text(), inner), 0..4)
                        .prop_map(|kv| Value::Object(kv.into_iter().collect())),
                ]
            })
            .boxed()
        }

        fn extra() -> BoxedStrategy<Extra> {
            prop::collection::vec((text(), json()), 0..3)
                .prop_map(|kv| kv.into_iter().collect())
                .boxed()
        }

        fn opt_text() -> BoxedStrategy<Option<String>> {
            prop::option::of(text()).boxed()
        }

        fn role() -> BoxedStrategy<Role> {
            prop::sample::select(vec![
                Role::System,
                Role::Developer,
                Role::User,
                Role::Assistant,
                Role::Tool,
            ])
            .boxed()
        }

        fn format() -> BoxedStrategy<Format> {
            let every: Vec<Format> = Format::ALL.into_iter().chain([Format::Native]).collect();
            prop::sample::select(every).boxed()
        }

        fn call_kind() -> BoxedStrategy<ToolCallKind> {
            prop::sample::select(vec![
                ToolCallKind::Function,
                ToolCallKind::Custom,
                ToolCallKind::LocalShell,
                ToolCallKind::Server,
            ])
            .boxed()
        }

        fn media() -> BoxedStrategy<Media> {
            let source = prop_oneof![
                text().prop_map(MediaSource::Url),
                text().prop_map(MediaSource::Base64),
                text().prop_map(MediaSource::FileId),
                text().prop_map(MediaSource::Text),
                Just(MediaSource::None),
            ];
            (
                source,
                opt_text(),
                opt_text(),
                opt_text(),
                prop::option::of(any::<(u32, u32)>()),
            )
                .prop_map(|(source, mime, name, detail, size)| Media {
                    source,
                    mime,
                    name,
                    detail,
                    size,
                })
                .boxed()
        }

        fn parts() -> BoxedStrategy<Vec<Part>> {
            let kind = prop_oneof![
                text().prop_map(PartKind::Text),
                media().prop_map(PartKind::Image),
                media().prop_map(PartKind::File),
                media().prop_map(PartKind::Audio),
                json().prop_map(PartKind::Opaque),
            ];
            prop::collection::vec(
                (kind, extra()).prop_map(|(kind, extra)| Part { kind, extra }),
                0..4,
            )
            .boxed()
        }

        fn body() -> BoxedStrategy<ItemBody> {
            let args = prop_oneof![
                json().prop_map(Arguments::Json),
                text().prop_map(Arguments::Text),
            ];
            let wire = prop::sample::select(vec![
                CompactionWire::AnthropicBlock,
                CompactionWire::OpenAiItem,
                CompactionWire::OpenAiTrigger,
            ]);
            prop_oneof![
                (role(), parts())
                    .prop_map(|(role, parts)| ItemBody::Message(Message { role, parts })),
                (text(), text(), args, call_kind(), extra()).prop_map(
                    |(call_id, name, arguments, kind, extra)| ItemBody::ToolCall(ToolCall {
                        call_id,
                        name,
                        arguments,
                        kind,
                        extra,
                    })
                ),
                (
                    text(),
                    opt_text(),
                    parts(),
                    any::<bool>(),
                    call_kind(),
                    any::<bool>(),
                    extra()
                )
                    .prop_map(
                        |(call_id, tool_name, parts, is_error, kind, content_was_string, extra)| {
                            ItemBody::ToolResult(ToolResult {
                                call_id,
                                tool_name,
                                parts,
                                is_error,
                                kind,
                                content_was_string,
                                extra,
                            })
                        }
                    ),
                (
                    opt_text(),
                    prop::collection::vec(text(), 0..3),
                    opt_text(),
                    opt_text(),
                    any::<bool>(),
                    extra()
                )
                    .prop_map(
                        |(text, summary, signature, encrypted, redacted, extra)| {
                            ItemBody::Reasoning(Reasoning {
                                text,
                                summary,
                                signature,
                                encrypted,
                                redacted,
                                extra,
                            })
                        }
                    ),
                (
                    text(),
                    any::<u32>(),
                    prop::collection::vec(text(), 0..3),
                    extra()
                )
                    .prop_map(|(text, generation, covers, extra)| {
                        ItemBody::Checkpoint(Checkpoint {
                            text,
                            generation,
                            covers: covers.into_iter().map(ItemId::new).collect(),
                            extra,
                        })
                    }),
                (text(), prop::option::of(role()), json()).prop_map(|(label, role, value)| {
                    ItemBody::Opaque(Opaque { label, role, value })
                }),
                (wire, json()).prop_map(|(wire, value)| ItemBody::ProviderCompaction(
                    ProviderCompaction::new(wire, value)
                )),
            ]
            .boxed()
        }

        fn envelope() -> BoxedStrategy<Envelope> {
            (
                prop::option::of(format()),
                any::<u32>(),
                extra(),
                any::<bool>(),
                prop::option::of(prop::sample::select(SLOTS.to_vec())),
            )
                .prop_map(
                    |(format, message, extra, content_was_string, slot)| Envelope {
                        format,
                        message,
                        extra,
                        content_was_string,
                        slot,
                    },
                )
                .boxed()
        }

        fn item() -> BoxedStrategy<Item> {
            (
                body(),
                text(),
                any::<(bool, bool, bool)>(),
                opt_text(),
                prop::option::of(format()),
                prop::option::of(envelope()),
            )
                .prop_map(|(body, id, (protected, model, user), ts, origin, env)| {
                    let mut item = Item::new(body);
                    item.meta.id = ItemId::new(id);
                    item.meta.protected = protected;
                    item.meta.visibility = Visibility { model, user };
                    item.meta.timestamp = ts;
                    item.meta.origin = origin;
                    item.meta.envelope = env.map(Arc::new);
                    item
                })
                .boxed()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            /// The direct writer's bytes are those of the `Value` document, for every body and
            /// part variant, envelopes, nested extras and awkward text.
            #[test]
            fn canonical_bytes_are_the_bytes_of_the_value_document(item in item()) {
                let reference = serde_json::to_vec(&encode_item(&item)).unwrap();
                prop_assert_eq!(canonical_bytes(&item), reference);
            }
        }
    }

    #[test]
    fn malformed_documents_name_the_field() {
        let mut doc = encode_item(&sample()[0]);
        doc["body"]["role"] = json!("robot");
        let err = decode_item(&doc).unwrap_err();
        assert!(err.message.contains("robot"), "{err}");
        assert!(decode_item(&json!({"id": "x"})).is_err());
        assert!(decode_item(&json!(null)).is_err());
    }
}
