//! The records of the append-only session log: every item ever received ([`ItemRecord`]), the
//! originals that write-time truncation replaced, every view compaction produced ([`ViewRecord`]),
//! and every [`Event`]. Compaction appends a view; it never changes or removes a record.
//!
//! A record's JSON form ([`Record::to_json`]) is what stores persist; it carries
//! [`crate::codec::ITEM_FORMAT_VERSION`] so later versions can read older logs.

use crate::chain::ChainHash;
use crate::codec::{decode_item, encode_item, CodecError, ItemDoc, ITEM_FORMAT_VERSION};
use crate::event::Event;
use compact_core::model::Item;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};

/// Where a logged item came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemSource {
    /// Part of a request the host sent (its position in the history is its chain link).
    Received,
    /// The full output a write-time truncation replaced (the model saw the truncated text; its
    /// marker names this item's id).
    TruncatedOriginal,
}

impl ItemSource {
    fn as_str(self) -> &'static str {
        match self {
            ItemSource::Received => "received",
            ItemSource::TruncatedOriginal => "truncated_original",
        }
    }
}

/// A logged item.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRecord {
    /// Where it came from.
    pub source: ItemSource,
    /// Its chain link (received items) or the hash of its content alone (originals).
    pub hash: ChainHash,
    /// The link before it (received items; [`ChainHash::GENESIS`] for the first, and for originals).
    pub parent: ChainHash,
    /// The item, with the visibility it had (model-visible and user-visible flags).
    pub item: Item,
}

/// One entry of a compacted view.
// Most entries of a view are `Logged`; boxing `Inline` would cost an allocation for each made item
// and win nothing on the few per view.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ViewEntry {
    /// A received item sent unchanged, named by its chain link.
    Logged(ChainHash),
    /// An item the compaction made (checkpoint, reference stub, truncated copy, synthetic result).
    Inline(Item),
}

/// A view a compaction produced: what the model is sent in place of the received items up to `tip`.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewRecord {
    /// The chain link of the last received item the view stands for.
    pub tip: ChainHash,
    /// Received items the view stands for (the chain's length at `tip`).
    pub covers: usize,
    /// Why it was made (`auto`, `manual`, `recovery`).
    pub trigger: String,
    /// Its items, in order.
    pub entries: Vec<ViewEntry>,
}

/// A record of the session log.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// An item.
    Item(ItemRecord),
    /// A compacted view.
    View(ViewRecord),
    /// An event.
    Event(Event),
}

/// A record as stored: its sequence number in the session (1, 2, ...) and the record.
#[derive(Debug, Clone, PartialEq)]
pub struct Stored {
    /// Position in the session's log, from 1, without gaps.
    pub seq: u64,
    /// The record.
    pub record: Record,
}

impl Record {
    /// Short kind name (`item`, `view`, `event`), stored beside the document for indexing.
    pub fn kind(&self) -> &'static str {
        match self {
            Record::Item(_) => "item",
            Record::View(_) => "view",
            Record::Event(_) => "event",
        }
    }

    /// The item id, for item records (stores index it for `recall`).
    pub fn item_id(&self) -> Option<&str> {
        match self {
            Record::Item(r) => Some(r.item.meta.id.as_str()),
            _ => None,
        }
    }

    /// The record as its storage document.
    pub fn to_json(&self) -> Value {
        match self {
            Record::Item(r) => json!({
                "v": ITEM_FORMAT_VERSION,
                "type": "item",
                "source": r.source.as_str(),
                "hash": r.hash.to_string(),
                "parent": r.parent.to_string(),
                "item": encode_item(&r.item),
            }),
            Record::View(v) => json!({
                "v": ITEM_FORMAT_VERSION,
                "type": "view",
                "tip": v.tip.to_string(),
                "covers": v.covers,
                "trigger": v.trigger,
                "entries": v.entries.iter().map(|e| match e {
                    ViewEntry::Logged(h) => json!({"logged": h.to_string()}),
                    ViewEntry::Inline(item) => json!({"inline": encode_item(item)}),
                }).collect::<Vec<_>>(),
            }),
            Record::Event(e) => json!({
                "v": ITEM_FORMAT_VERSION,
                "type": "event",
                "event": e.to_json(),
            }),
        }
    }

    /// The storage document as text: the text of [`Record::to_json`], written straight from the
    /// record (its items through [`ItemDoc`]) without building the `Value` first.
    pub fn to_json_string(&self) -> String {
        let mut out = Vec::with_capacity(512);
        // Writing to a `Vec` cannot fail, nor can the document (its map keys are strings).
        let _ = serde_json::to_writer(&mut out, &RecordDoc(self));
        // serde_json writes UTF-8 only.
        String::from_utf8(out).unwrap_or_default()
    }

    /// Reads a storage document.
    pub fn from_json(doc: &Value) -> Result<Record, CodecError> {
        let bad = |path: &str, message: &str| CodecError {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        let version = doc.get("v").and_then(Value::as_u64);
        if version != Some(ITEM_FORMAT_VERSION) {
            return Err(bad("v", "unknown record format version"));
        }
        let hash = |key: &str| {
            doc.get(key)
                .and_then(Value::as_str)
                .and_then(ChainHash::parse)
                .ok_or_else(|| bad(key, "expected a 32-digit hex hash"))
        };
        match doc.get("type").and_then(Value::as_str) {
            Some("item") => {
                let source = match doc.get("source").and_then(Value::as_str) {
                    Some("received") => ItemSource::Received,
                    Some("truncated_original") => ItemSource::TruncatedOriginal,
                    _ => return Err(bad("source", "unknown item source")),
                };
                Ok(Record::Item(ItemRecord {
                    source,
                    hash: hash("hash")?,
                    parent: hash("parent")?,
                    item: decode_item(doc.get("item").unwrap_or(&Value::Null))?,
                }))
            }
            Some("view") => {
                let entries = doc
                    .get("entries")
                    .and_then(Value::as_array)
                    .ok_or_else(|| bad("entries", "expected an array"))?
                    .iter()
                    .map(|e| {
                        if let Some(h) = e.get("logged") {
                            h.as_str()
                                .and_then(ChainHash::parse)
                                .map(ViewEntry::Logged)
                                .ok_or_else(|| bad("entries.logged", "expected a hash"))
                        } else {
                            decode_item(e.get("inline").unwrap_or(&Value::Null))
                                .map(ViewEntry::Inline)
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Record::View(ViewRecord {
                    tip: hash("tip")?,
                    covers: doc
                        .get("covers")
                        .and_then(Value::as_u64)
                        .and_then(|n| usize::try_from(n).ok())
                        .ok_or_else(|| bad("covers", "expected a count"))?,
                    trigger: doc
                        .get("trigger")
                        .and_then(Value::as_str)
                        .unwrap_or("auto")
                        .to_owned(),
                    entries,
                }))
            }
            Some("event") => doc
                .get("event")
                .and_then(Event::from_json)
                .map(Record::Event)
                .ok_or_else(|| bad("event", "not an event")),
            _ => Err(bad("type", "unknown record type")),
        }
    }
}

/// A record's storage document, serialised in the order and form of [`Record::to_json`].
struct RecordDoc<'a>(&'a Record);

/// A chain hash as the string `to_json` writes (its `Display` form).
struct HashDoc(ChainHash);

impl Serialize for HashDoc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

struct EntriesDoc<'a>(&'a [ViewEntry]);

impl Serialize for EntriesDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(EntryDoc))
    }
}

struct EntryDoc<'a>(&'a ViewEntry);

impl Serialize for EntryDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        match self.0 {
            ViewEntry::Logged(h) => m.serialize_entry("logged", &HashDoc(*h))?,
            ViewEntry::Inline(item) => m.serialize_entry("inline", &ItemDoc(item))?,
        }
        m.end()
    }
}

impl Serialize for RecordDoc<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("v", &ITEM_FORMAT_VERSION)?;
        match self.0 {
            Record::Item(r) => {
                m.serialize_entry("type", "item")?;
                m.serialize_entry("source", r.source.as_str())?;
                m.serialize_entry("hash", &HashDoc(r.hash))?;
                m.serialize_entry("parent", &HashDoc(r.parent))?;
                m.serialize_entry("item", &ItemDoc(&r.item))?;
            }
            Record::View(v) => {
                m.serialize_entry("type", "view")?;
                m.serialize_entry("tip", &HashDoc(v.tip))?;
                m.serialize_entry("covers", &v.covers)?;
                m.serialize_entry("trigger", &v.trigger)?;
                m.serialize_entry("entries", &EntriesDoc(&v.entries))?;
            }
            Record::Event(e) => {
                m.serialize_entry("type", "event")?;
                m.serialize_entry("event", &e.to_json())?;
            }
        }
        m.end()
    }
}
