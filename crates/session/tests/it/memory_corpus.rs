//! Memory over the real transcripts of `../shared/corpus`: every file's items read in slices (as
//! successive preflights would bring them), every candidate decided with a reason, the caps held,
//! ids unique, the block within its budget; the figures printed (`--no-capture`).

use crate::common::counter;
use compact_core::memory::{from_facts, render, Change, FactKind, Limits, Memory, DEFAULT_CAPS};
use compact_formats::import::{import, ImportMode, ImportOptions};
use std::collections::HashSet;

#[path = "../../../core/tests/fixtures/corpus.rs"]
pub(crate) mod corpus;

/// Items per slice: about what one agent step brings (a reply, a few calls and results).
const SLICE: usize = 12;

#[test]
fn memory_over_the_corpus_holds_its_invariants() {
    let Some(dir) = corpus::dir() else {
        return;
    };
    let limits = Limits::default();
    let c = counter();
    let options = ImportOptions {
        format: None,
        mode: ImportMode::Lenient,
    };
    let (mut sessions, mut total_facts, mut total_candidates) = (0usize, 0usize, 0usize);
    let mut block_tokens = Vec::new();
    let mut rejected = std::collections::BTreeMap::<&str, usize>::new();
    let mut moved = std::collections::BTreeMap::<&str, usize>::new();
    for path in corpus::files(&dir) {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.to_string_lossy().into_owned();
        let Ok(imported) = import(&bytes, &name, &options) else {
            continue;
        };
        let items = &imported.conversation.items;
        let mut memory = Memory::new();
        for slice in items.chunks(SLICE) {
            let candidates = from_facts(&compact_core::facts::extract(slice));
            let n = candidates.len();
            total_candidates += n;
            let changes = memory.admit(candidates, &limits);
            for change in &changes {
                if let Change::Moved { reason, .. } = change {
                    *moved.entry(reason.as_str()).or_default() += 1;
                }
            }
            let decided: Vec<&Change> = changes
                .iter()
                .filter(|c| matches!(c, Change::Candidate { .. }))
                .collect();
            assert_eq!(decided.len(), n, "{name}: every candidate is decided");
            for change in decided {
                if let Change::Candidate {
                    outcome, reason, ..
                } = change
                {
                    if *outcome == compact_core::memory::Outcome::Rejected {
                        *rejected.entry(reason.as_str()).or_default() += 1;
                    }
                }
            }
            for kind in FactKind::ALL {
                assert!(
                    memory.trusted_count(kind) <= DEFAULT_CAPS[kind.index()],
                    "{name}: the cap of {kind} held"
                );
            }
        }
        let ids: HashSet<&str> = memory.facts().iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids.len(), memory.facts().len(), "{name}: unique ids");
        assert!(
            memory.facts().iter().all(|f| !f.sources.is_empty()),
            "{name}: provenance"
        );
        if let Some(block) = render::render(&memory, compact_session::DEFAULT_MEMORY_BUDGET, &c) {
            let tokens = c.count_text(&block);
            assert!(tokens <= compact_session::DEFAULT_MEMORY_BUDGET, "{name}");
            block_tokens.push(tokens);
        }
        sessions += 1;
        total_facts += memory.trusted().count();
    }
    assert!(sessions > 0, "the corpus yielded sessions");
    block_tokens.sort_unstable();
    println!(
        "memory over {sessions} corpus sessions: {total_candidates} candidates, {:.1} trusted facts per session, block tokens median {} max {}, rejected by reason {rejected:?}, moved by reason {moved:?}",
        total_facts as f64 / sessions as f64,
        block_tokens.get(block_tokens.len() / 2).copied().unwrap_or(0),
        block_tokens.last().copied().unwrap_or(0),
    );
}
