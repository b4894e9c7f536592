//! The item documents written straight from the items (`codec::canonical_bytes`,
//! `Record::to_json_string`) are byte for byte those of the `Value` encoding the log had before
//! (`codec::encode_item`, `Record::to_json`), over every item of the real transcripts of
//! `../shared/corpus`: the chain's links and the log's documents do not change.

use compact_core::model::Item;
use compact_formats::import::{import, ImportMode, ImportOptions};
use compact_session::chain::ChainHash;
use compact_session::codec::{canonical_bytes, encode_item};
use compact_session::event::{Event, EventKind};
use compact_session::record::{ItemRecord, ItemSource, Record, ViewEntry, ViewRecord};
use serde_json::json;

use crate::memory_corpus::corpus;

/// Every record form an item can be written in, with the text `to_json` gave it.
fn records_of(items: &[Item]) -> Vec<Record> {
    let mut records = Vec::with_capacity(items.len() + 2);
    let mut tip = ChainHash::GENESIS;
    let mut entries = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let parent = tip;
        tip = tip.next_item(item);
        let source = if i % 7 == 3 {
            ItemSource::TruncatedOriginal
        } else {
            ItemSource::Received
        };
        records.push(Record::Item(ItemRecord {
            source,
            hash: tip,
            parent,
            item: item.clone(),
        }));
        entries.push(if i % 2 == 0 {
            ViewEntry::Logged(tip)
        } else {
            ViewEntry::Inline(item.clone())
        });
    }
    records.push(Record::View(ViewRecord {
        tip,
        covers: items.len(),
        trigger: "auto \"quoted\" \u{1f600}".into(),
        entries,
    }));
    records.push(Record::Event(Event::new(
        EventKind::Sent,
        json!({"tip": tip.to_string(), "note": "line\nbreak \u{7}", "n": 1.5}),
    )));
    records
}

#[test]
fn corpus_items_and_records_write_the_bytes_of_their_values() {
    let Some(dir) = corpus::dir() else {
        return;
    };
    let options = ImportOptions {
        format: None,
        mode: ImportMode::Lenient,
    };
    let (mut files, mut items) = (0usize, 0usize);
    for path in corpus::files(&dir) {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.to_string_lossy().into_owned();
        let Ok(imported) = import(&bytes, &name, &options) else {
            continue;
        };
        files += 1;
        let conv = &imported.conversation.items;
        for (i, item) in conv.iter().enumerate() {
            let reference = serde_json::to_vec(&encode_item(item)).unwrap();
            assert!(
                canonical_bytes(item) == reference,
                "{name}: item {i} encodes differently"
            );
        }
        items += conv.len();
        for (i, record) in records_of(conv).iter().enumerate() {
            let value = record.to_json().to_string();
            assert!(
                record.to_json_string() == value,
                "{name}: record {i} ({}) is written differently",
                record.kind()
            );
        }
    }
    println!("{files} files, {items} items: every document byte-identical");
    assert!(files > 0, "no corpus file imported");
}
