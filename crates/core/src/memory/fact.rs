//! The data of memory: a [`Fact`] (kind, text, provenance, confidence, evidence, lifecycle), the
//! [`Candidate`] it starts as, and the reason codes of every decision about one.

use std::fmt;

/// What a fact is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FactKind {
    /// A constraint the user stated ("never push to main").
    Constraint,
    /// A preference the user stated ("I prefer small commits").
    Preference,
    /// A decision the assistant stated ("I'll use serde_yaml_ng instead of serde_yaml").
    Decision,
    /// A dependency added (`cargo add`, `npm install`, ...).
    Dependency,
    /// Where a file or directory is and what happened to it.
    FileState,
    /// A failure: what was attempted, the line that says why, whether it was resolved.
    Error,
}

impl FactKind {
    /// Every kind, in the order the memory block writes them (what binds the agent first).
    pub const ALL: [FactKind; 6] = [
        FactKind::Constraint,
        FactKind::Preference,
        FactKind::Decision,
        FactKind::Dependency,
        FactKind::FileState,
        FactKind::Error,
    ];

    /// The stable name (`decision`, `file_state`, ...), as stored and configured.
    pub fn as_str(self) -> &'static str {
        match self {
            FactKind::Constraint => "constraint",
            FactKind::Preference => "preference",
            FactKind::Decision => "decision",
            FactKind::Dependency => "dependency",
            FactKind::FileState => "file_state",
            FactKind::Error => "error",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<FactKind> {
        FactKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Position in [`FactKind::ALL`].
    pub fn index(self) -> usize {
        FactKind::ALL
            .iter()
            .position(|k| *k == self)
            .unwrap_or_default()
    }

    /// The heading of the kind's section in the memory block.
    pub fn title(self) -> &'static str {
        match self {
            FactKind::Constraint => "Constraints",
            FactKind::Preference => "Preferences",
            FactKind::Decision => "Decisions",
            FactKind::Dependency => "Dependencies",
            FactKind::FileState => "Files and paths",
            FactKind::Error => "Errors and failed approaches",
        }
    }

    /// Whether facts of this kind outlive the session: they may be promoted to the project's memory
    /// (what the user asked for and what was decided holds for the next session; which file was
    /// edited last and which command failed rarely does).
    pub fn durable(self) -> bool {
        matches!(
            self,
            FactKind::Constraint | FactKind::Preference | FactKind::Decision | FactKind::Dependency
        )
    }
}

impl fmt::Display for FactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a fact stands. Transitions: `active -> stale | superseded | forgotten | pinned`,
/// `pinned -> active | forgotten`, `stale -> active` (seen again), `superseded -> forgotten`,
/// `stale -> forgotten`. `forgotten` is final: a forgotten fact is never injected or revived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lifecycle {
    /// Trusted and injected.
    Active,
    /// Trusted, injected first, never evicted by a cap.
    Pinned,
    /// Evicted by its kind's cap: kept for the record, not injected; seen again, it is active again.
    Stale,
    /// A newer fact with the same subject replaced it (`superseded_by`).
    Superseded,
    /// The user asked to forget it: never injected again, and the same statement is never admitted
    /// again.
    Forgotten,
}

impl Lifecycle {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Active => "active",
            Lifecycle::Pinned => "pinned",
            Lifecycle::Stale => "stale",
            Lifecycle::Superseded => "superseded",
            Lifecycle::Forgotten => "forgotten",
        }
    }

    /// The lifecycle named `name`.
    pub fn from_name(name: &str) -> Option<Lifecycle> {
        [
            Lifecycle::Active,
            Lifecycle::Pinned,
            Lifecycle::Stale,
            Lifecycle::Superseded,
            Lifecycle::Forgotten,
        ]
        .into_iter()
        .find(|l| l.as_str() == name)
    }

    /// Trusted facts (active, pinned) are the only ones injected and the only ones the pre-tool
    /// gate reads.
    pub fn trusted(self) -> bool {
        matches!(self, Lifecycle::Active | Lifecycle::Pinned)
    }

    /// Whether `self -> to` is a transition of the lifecycle (see the type's documentation).
    pub fn can_move_to(self, to: Lifecycle) -> bool {
        use Lifecycle::{Active, Forgotten, Pinned, Stale, Superseded};
        matches!(
            (self, to),
            (Active, Stale | Superseded | Forgotten | Pinned)
                | (Pinned, Active | Forgotten)
                | (Stale, Active | Forgotten)
                | (Superseded, Forgotten)
        )
    }
}

impl fmt::Display for Lifecycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a candidate came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Structured tool-call fields and message text of the session ([`crate::facts::extract`]).
    Items,
    /// A checkpoint or a provider's / agent's summary, read back by [`crate::checkpoint::parse`].
    Summary,
    /// The project's memory, loaded into a new session.
    Project,
}

impl Origin {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Items => "items",
            Origin::Summary => "summary",
            Origin::Project => "project",
        }
    }

    /// The origin named `name`.
    pub fn from_name(name: &str) -> Option<Origin> {
        [Origin::Items, Origin::Summary, Origin::Project]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

/// A statement that may become a fact.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its kind.
    pub kind: FactKind,
    /// What it is about: two candidates with the same subject and different texts are two states
    /// of one thing (the newer supersedes the older); with the same text, one fact seen twice.
    pub subject: String,
    /// The statement, one line.
    pub text: String,
    /// The absolute path it names, when it is about a file or directory (what the pre-tool gate
    /// reads).
    pub path: Option<String>,
    /// How sure the source is, 0..=1.
    pub confidence: f64,
    /// The ids of the items it came from.
    pub sources: Vec<String>,
    /// Where it came from.
    pub origin: Origin,
}

/// A remembered fact.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// Stable id: `f` and ten hex digits of a hash of kind, subject and text.
    pub id: String,
    /// Its kind.
    pub kind: FactKind,
    /// See [`Candidate::subject`].
    pub subject: String,
    /// The statement.
    pub text: String,
    /// See [`Candidate::path`].
    pub path: Option<String>,
    /// The highest confidence any of its sightings had.
    pub confidence: f64,
    /// How many times it was seen (candidates merged into it, plus one).
    pub evidence: u32,
    /// Ids of the items it came from, oldest first (provenance).
    pub sources: Vec<String>,
    /// Where it first came from.
    pub origin: Origin,
    /// Where it stands.
    pub lifecycle: Lifecycle,
    /// The fact that replaced it, when superseded.
    pub superseded_by: Option<String>,
    /// Order of first admission in its memory (render order within a section: a new fact never
    /// moves an older one).
    pub first_seen: u64,
    /// Order of the latest sighting (ties of strength go to the more recent).
    pub last_seen: u64,
}

impl Fact {
    /// The fact as JSON, the shape `compactctl memory list --json` prints and the Python binding
    /// returns: id, kind, lifecycle, text, subject, path, confidence, evidence, sources, origin,
    /// superseded_by.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "id": self.id, "kind": self.kind.as_str(), "lifecycle": self.lifecycle.as_str(),
            "text": self.text, "subject": self.subject, "path": self.path,
            "confidence": self.confidence, "evidence": self.evidence, "sources": self.sources,
            "origin": self.origin.as_str(), "superseded_by": self.superseded_by,
        })
    }

    /// What the cap compares: evidence weighted by confidence. Pinned facts are never compared.
    pub fn strength(&self) -> f64 {
        self.confidence * f64::from(self.evidence)
    }
}

/// Why a candidate was accepted or rejected, or why a fact moved. Stable names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A new fact.
    New,
    /// The same statement as a fact already held: merged (evidence + 1).
    DuplicateMerged,
    /// The same statement as a stale fact: merged and active again.
    Revived,
    /// A newer statement about the same subject: the older fact is superseded.
    Superseded,
    /// Empty once trimmed.
    Empty,
    /// A date or a time alone (log noise such as `2024/7/19`).
    DateOnly,
    /// Too short or without words (punctuation, numbers, a lone path separator).
    Noise,
    /// Below the confidence floor.
    LowConfidence,
    /// Its kind is at its cap and every fact held is stronger.
    CapReached,
    /// Evicted by a stronger fact of its kind at the cap.
    Evicted,
    /// The same statement was forgotten: it is not admitted again.
    Forgotten,
    /// The same statement was superseded already: an older state is not taken back.
    Outdated,
    /// The user asked (forget, pin, unpin).
    User,
    /// Copied to the project's memory.
    Promoted,
}

impl Reason {
    /// The stable code (`duplicate_merged`, `date_only`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::New => "new",
            Reason::DuplicateMerged => "duplicate_merged",
            Reason::Revived => "revived",
            Reason::Superseded => "superseded",
            Reason::Empty => "empty",
            Reason::DateOnly => "date_only",
            Reason::Noise => "noise",
            Reason::LowConfidence => "low_confidence",
            Reason::CapReached => "cap_reached",
            Reason::Evicted => "evicted",
            Reason::Forgotten => "forgotten",
            Reason::Outdated => "outdated",
            Reason::User => "user",
            Reason::Promoted => "promoted",
        }
    }

    /// The reason named `name`.
    pub fn from_name(name: &str) -> Option<Reason> {
        use Reason::*;
        [
            New,
            DuplicateMerged,
            Revived,
            Superseded,
            Empty,
            DateOnly,
            Noise,
            LowConfidence,
            CapReached,
            Evicted,
            Forgotten,
            Outdated,
            User,
            Promoted,
        ]
        .into_iter()
        .find(|r| r.as_str() == name)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The id of a fact of `kind` about `subject` saying `text`: `f` and ten hex digits of an FNV-1a
/// hash (stable across sessions, so a project's fact keeps its id in every session).
pub fn fact_id(kind: FactKind, subject: &str, text: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for part in [kind.as_str(), subject, text] {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(PRIME);
        }
    }
    format!("f{:010x}", h & 0xff_ffff_ffff)
}
