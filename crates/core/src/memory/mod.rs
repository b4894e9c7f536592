//! Structured fact memory (seeds 001 and 004): facts that survive every compaction and, when durable,
//! the session itself.
//!
//! - [`fact`] — a [`Fact`] has a kind ([`FactKind`]: constraint, preference, decision, dependency,
//!   file_state, error), a subject, a text, provenance (item ids), a confidence, an evidence count
//!   and a [`Lifecycle`] (active, pinned, stale, superseded, forgotten).
//! - [`candidate`] — candidates from [`crate::facts::extract`] (tool-call fields and message text)
//!   and from checkpoints and provider summaries ([`crate::checkpoint::parse`]).
//! - [`book`] — [`Memory::admit`]: every candidate is accepted, merged (a duplicate: evidence + 1)
//!   or rejected, with a [`Reason`] code; a newer statement about the same subject supersedes the
//!   older; each kind is capped, the weakest evicted (stale). Every decision is a [`Change`] a log
//!   can keep and [`Memory::apply`] replay.
//! - [`render`] — the memory block: trusted facts within a token budget, byte-identical for the
//!   same facts.
//! - [`mod@gate`] — the pre-tool gate: known-folder probes rewritten to remembered absolute paths.
//!
//! Pure: no I/O, no clock, no randomness. Secrets are the caller's to redact before admission.
//!
//! ```
//! use compact_core::memory::{Candidate, FactKind, Limits, Memory, Origin, Outcome, Change, render};
//! use compact_core::tokens::{Encoding, TokenCounter};
//!
//! let said = |text: &str, id: &str| Candidate {
//!     kind: FactKind::Constraint, subject: text.to_lowercase(), text: text.to_owned(), path: None,
//!     confidence: 0.9, sources: vec![id.to_owned()], origin: Origin::Items,
//! };
//! let mut memory = Memory::new();
//! let changes = memory.admit([said("Never push to main", "i1"), said("Never push to main", "i7")], &Limits::default());
//! assert!(matches!(changes[1], Change::Candidate { outcome: Outcome::Merged, .. }));
//! assert_eq!(memory.facts()[0].evidence, 2);
//! let block = render::render(&memory, 500, &TokenCounter::new(Encoding::O200kBase)).unwrap();
//! assert!(block.contains("Never push to main"));
//! ```

pub mod book;
pub mod candidate;
pub mod fact;
pub mod gate;
pub mod render;

pub use book::{
    from_project, low_value, promotable, Change, Limits, Memory, MemoryError, Outcome,
    DEFAULT_CAPS, DEFAULT_MIN_CONFIDENCE,
};
pub use candidate::{from_facts, from_summary};
pub use fact::{fact_id, Candidate, Fact, FactKind, Lifecycle, Origin, Reason};
pub use gate::{gate, GateDecision, KnownPaths, Rewrite, Skip};

#[cfg(test)]
mod tests;
