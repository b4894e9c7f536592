//! Real data: the Responses items of every Codex rollout in the shared corpus, sent as one Responses
//! request, round-trip exactly and convert to the other formats with every client tool pair intact.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::Format;
use compact_formats::wire::{decode, encode};
use serde_json::{json, Value};

#[path = "../../core/tests/fixtures/corpus.rs"]
mod corpus;

#[test]
fn codex_rollout_items_round_trip_as_responses_requests() {
    let Some(root) = corpus::dir() else {
        return;
    };
    let dir = root.join("codex-rollout");
    let entries = std::fs::read_dir(&dir).unwrap();
    let mut files = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        // Malformed lines belong to the importer's tests; here only well-formed response items count.
        let items: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["type"] == "response_item")
            .map(|r| r["payload"].clone())
            .collect();
        let request = json!({"model": "gpt-5-codex", "input": items});
        let conv = decode(Format::OpenAiResponses, &request)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(conv.len(), items.len());
        let out = encode(&conv, Format::OpenAiResponses).unwrap();
        assert!(
            out.value == request,
            "{}: round trip differs",
            path.display()
        );
        let pairs = conv.pairing().pairs.len();
        for to in [Format::OpenAiChat, Format::Anthropic] {
            let converted = encode(&conv, to).unwrap();
            let back = decode(to, &converted.value)
                .unwrap_or_else(|e| panic!("{} -> {to}: {e}", path.display()));
            assert_eq!(
                back.pairing().pairs.len(),
                pairs,
                "{} -> {to}",
                path.display()
            );
        }
        files += 1;
    }
    assert!(files > 0, "no rollout files in {}", dir.display());
}
