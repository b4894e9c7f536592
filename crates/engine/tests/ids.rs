//! Item ids over repeated compactions: a session is compacted, written as a wire request, read back,
//! extended with new turns and compacted again, several times. Throughout, ids are unique in every
//! generation, an id never names two different contents, an item that survives keeps its id, and
//! every reference stub and truncation marker names an id that recalls exactly the item it replaced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../core/tests/fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::model::{Conversation, Format, Item, ItemBody, ItemId};
use compact_core::plan::REFERENCE_PREFIX;
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{block_on, CompactError, Compactor, DeterministicSummarizer};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What the session log holds for an id: the item's kind, call id (for tool items) and text.
#[derive(Debug, Clone, PartialEq)]
struct Logged {
    kind: &'static str,
    call_id: Option<String>,
    text: String,
}

fn logged(item: &Item) -> Logged {
    let call_id = match item.body() {
        ItemBody::ToolCall(c) => Some(c.call_id.clone()),
        ItemBody::ToolResult(r) => Some(r.call_id.clone()),
        _ => None,
    };
    Logged {
        kind: item.kind().as_str(),
        call_id,
        text: item.plain_text(),
    }
}

/// Writes `conv` as a request of `format` and reads it back, as a user re-running the CLI would.
fn reimport(conv: &Conversation, format: Format) -> Conversation {
    let wire = compact_formats::encode(conv, format).unwrap();
    compact_formats::decode(format, &wire.value).unwrap()
}

/// The ids that stubs and truncation markers in `text` name.
fn cited(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (open, close) in [(REFERENCE_PREFIX, ']'), ("compactctl recall ", ']')] {
        let mut rest = text;
        while let Some(at) = rest.find(open) {
            rest = &rest[at + open.len()..];
            let id: String = rest
                .chars()
                .take_while(|&c| c != close && !c.is_whitespace())
                .collect();
            // The checkpoint's own instructions mention `compactctl recall <id>`.
            if !id.starts_with('<') {
                out.push(id);
            }
        }
    }
    out
}

fn check_generation(conv: &Conversation, log: &mut HashMap<ItemId, Logged>, label: &str) {
    let ids: HashSet<&ItemId> = conv.items.iter().map(|i| &i.meta.id).collect();
    assert_eq!(ids.len(), conv.len(), "{label}: duplicate ids");
    // Markers first: they name items of earlier generations (or of this one).
    for item in &conv.items {
        for id in cited(&item.plain_text()) {
            let original = log.get(&ItemId::new(id.as_str())).unwrap_or_else(|| {
                panic!("{label}: marker in {} names unknown id {id}", item.meta.id)
            });
            let replaced = logged(item);
            assert_eq!(
                original.call_id, replaced.call_id,
                "{label}: {id} recalls another call's output"
            );
            assert_ne!(original.text, replaced.text, "{label}: {id}");
        }
    }
    for item in &conv.items {
        let now = logged(item);
        match log.get(&item.meta.id) {
            Some(before) => assert_eq!(
                before, &now,
                "{label}: id {} names two different contents",
                item.meta.id
            ),
            None => {
                log.insert(item.meta.id.clone(), now);
            }
        }
    }
}

#[test]
fn ids_stay_true_over_repeated_compactions_and_reimports() {
    let counter = TokenCounter::new(Encoding::O200kBase);
    for seed in 1..=6u64 {
        for (strategy, format) in [
            (StrategyName::Tiered, Format::OpenAiChat),
            (StrategyName::Tiered, Format::Anthropic),
            (StrategyName::ObservationMasking, Format::OpenAiResponses),
            (StrategyName::Codex, Format::OpenAiChat),
        ] {
            let mut rng = fixture::Rng(seed);
            let mut conv = reimport(&fixture::session(seed, 12, 20), format);
            let window = (counter.total(&conv) * 2 / 3).max(4_000);
            let compactor = Compactor::new(
                Policy {
                    keep_recent_turns: 2,
                    keep_tool_io_pairs: 2,
                    ..Policy::for_window(window)
                },
                Arc::new(DeterministicSummarizer),
                counter,
            )
            .unwrap()
            .with_strategy(strategy);
            let mut log: HashMap<ItemId, Logged> = HashMap::new();
            check_generation(&conv, &mut log, "original");
            let mut compacted = 0;
            for generation in 1..=4 {
                let label = format!("seed {seed} {strategy} {format} generation {generation}");
                match block_on(compactor.compact(&conv)) {
                    Ok(done) => {
                        compacted += 1;
                        // The checkpoint covers items the log holds.
                        for item in &done.conversation.items {
                            if let ItemBody::Checkpoint(cp) = item.body() {
                                for id in &cp.covers {
                                    assert!(log.contains_key(id), "{label}: covers unknown {id}");
                                }
                            }
                        }
                        conv = reimport(&done.conversation, format);
                    }
                    Err(CompactError::NoProgress { .. }) => {}
                    Err(e) => panic!("{label}: {e}"),
                }
                check_generation(&conv, &mut log, &label);
                // New work arrives after the compaction; some of it repeats earlier content.
                for turn in 0..4 {
                    fixture::push_turn(&mut conv, &mut rng, 100 * generation + turn, 20);
                }
                conv = reimport(&conv, format);
                check_generation(&conv, &mut log, &format!("{label} + new turns"));
            }
            assert!(
                compacted >= 2,
                "seed {seed} {strategy} {format}: {compacted} compactions"
            );
        }
    }
}
