//! [`Memory`]: the facts of a session (or a project) and every decision about them, as a sequence of
//! [`Change`]s. [`Memory::admit`] decides about candidates and returns the changes it made;
//! [`Memory::apply`] replays a change read back from a log. Both go through the same code, so a
//! memory rebuilt from its changes equals the memory that made them.

use super::fact::{fact_id, Candidate, Fact, FactKind, Lifecycle, Origin, Reason};
use std::collections::HashMap;

/// Facts of each kind held trusted (active or pinned) at most, by default: enough for a long
/// session's constraints and decisions, few enough that the memory block stays a small share of
/// its budget's candidates (in [`FactKind::ALL`] order: constraint, preference, decision,
/// dependency, file_state, error).
pub const DEFAULT_CAPS: [usize; 6] = [24, 16, 24, 24, 48, 24];

/// Candidates below this confidence are rejected (`low_confidence`): summaries' statements sit at
/// 0.5, guesses below.
pub const DEFAULT_MIN_CONFIDENCE: f64 = 0.3;

/// Shortest statement with meaning, in alphanumeric characters (`ok`, `1.`, `—` are noise).
const MIN_WORD_CHARS: usize = 4;

/// At most this many source ids are kept per fact (the first ones and the latest).
pub const MAX_SOURCES: usize = 16;

/// Caps and floors of a memory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Trusted facts held per kind, in [`FactKind::ALL`] order.
    pub caps: [usize; 6],
    /// Candidates below this confidence are rejected.
    pub min_confidence: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            caps: DEFAULT_CAPS,
            min_confidence: DEFAULT_MIN_CONFIDENCE,
        }
    }
}

impl Limits {
    /// The cap of `kind`.
    pub fn cap(&self, kind: FactKind) -> usize {
        self.caps[kind.index()]
    }
}

/// What became of a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// A new fact.
    Accepted,
    /// Merged into a fact held (evidence + 1 when it brought a new source).
    Merged,
    /// Not admitted.
    Rejected,
}

impl Outcome {
    /// The stable name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Accepted => "accepted",
            Outcome::Merged => "merged",
            Outcome::Rejected => "rejected",
        }
    }

    /// The outcome named `name`.
    pub fn from_name(name: &str) -> Option<Outcome> {
        [Outcome::Accepted, Outcome::Merged, Outcome::Rejected]
            .into_iter()
            .find(|o| o.as_str() == name)
    }
}

/// One change of a memory: what a log records (append-only) and [`Memory::apply`] replays.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A candidate and the decision about it.
    Candidate {
        /// The candidate (already redacted by the caller).
        candidate: Candidate,
        /// Accepted, merged or rejected.
        outcome: Outcome,
        /// Why.
        reason: Reason,
        /// The fact it became or was merged into.
        fact: Option<String>,
    },
    /// A fact moved in its lifecycle.
    Moved {
        /// The fact.
        fact: String,
        /// Where it goes.
        to: Lifecycle,
        /// Why.
        reason: Reason,
        /// The fact that replaced it (superseded) or evicted it.
        by: Option<String>,
    },
}

/// Why [`Memory::set_lifecycle`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MemoryError {
    /// No fact has this id.
    #[error("no fact `{0}`")]
    UnknownFact(String),
    /// The lifecycle has no such transition.
    #[error("fact `{fact}` is {from}: it cannot become {to}")]
    Transition {
        /// The fact.
        fact: String,
        /// Where it stands.
        from: Lifecycle,
        /// Where it was asked to go.
        to: Lifecycle,
    },
}

/// Facts and their order of admission.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Memory {
    facts: Vec<Fact>,
    index: HashMap<String, usize>,
    tick: u64,
}

impl Memory {
    /// An empty memory.
    pub fn new() -> Memory {
        Memory::default()
    }

    /// Every fact, in order of first admission.
    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    /// The fact with this id.
    pub fn get(&self, id: &str) -> Option<&Fact> {
        self.index.get(id).map(|&i| &self.facts[i])
    }

    /// Trusted facts (active, pinned): what is injected and what the gate reads.
    pub fn trusted(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter().filter(|f| f.lifecycle.trusted())
    }

    /// Trusted facts of `kind`.
    pub fn trusted_count(&self, kind: FactKind) -> usize {
        self.trusted().filter(|f| f.kind == kind).count()
    }

    /// Decides about each candidate in turn and returns what changed (one
    /// [`Change::Candidate`] per candidate, and the moves its admission caused), already applied.
    pub fn admit(
        &mut self,
        candidates: impl IntoIterator<Item = Candidate>,
        limits: &Limits,
    ) -> Vec<Change> {
        let mut out = Vec::new();
        for c in candidates {
            let changes = self.decide(c, limits);
            for change in &changes {
                self.apply(change);
            }
            out.extend(changes);
        }
        out
    }

    /// Moves a fact by the user's wish (forget, pin, unpin): the change, applied. Forgetting a
    /// forgotten fact changes nothing (`Ok(None)`).
    pub fn set_lifecycle(
        &mut self,
        id: &str,
        to: Lifecycle,
    ) -> Result<Option<Change>, MemoryError> {
        let fact = self
            .get(id)
            .ok_or_else(|| MemoryError::UnknownFact(id.to_owned()))?;
        if fact.lifecycle == to {
            return Ok(None);
        }
        if !fact.lifecycle.can_move_to(to) {
            return Err(MemoryError::Transition {
                fact: id.to_owned(),
                from: fact.lifecycle,
                to,
            });
        }
        let change = Change::Moved {
            fact: id.to_owned(),
            to,
            reason: Reason::User,
            by: None,
        };
        self.apply(&change);
        Ok(Some(change))
    }

    /// Replays a change (from a log). Changes naming unknown facts are ignored: a log is read
    /// leniently.
    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::Candidate {
                candidate,
                outcome: Outcome::Accepted,
                fact,
                ..
            } => {
                let id = fact.clone().unwrap_or_else(|| {
                    fact_id(candidate.kind, &candidate.subject, &candidate.text)
                });
                if self.index.contains_key(&id) {
                    return;
                }
                self.tick += 1;
                self.index.insert(id.clone(), self.facts.len());
                self.facts.push(Fact {
                    id,
                    kind: candidate.kind,
                    subject: candidate.subject.clone(),
                    text: candidate.text.clone(),
                    path: candidate.path.clone(),
                    confidence: candidate.confidence,
                    evidence: 1,
                    sources: cap_sources(candidate.sources.clone()),
                    origin: candidate.origin,
                    lifecycle: Lifecycle::Active,
                    superseded_by: None,
                    first_seen: self.tick,
                    last_seen: self.tick,
                });
            }
            Change::Candidate {
                candidate,
                outcome: Outcome::Merged,
                reason,
                fact: Some(id),
            } => {
                let Some(&i) = self.index.get(id) else {
                    return;
                };
                self.tick += 1;
                let f = &mut self.facts[i];
                let fresh: Vec<String> = candidate
                    .sources
                    .iter()
                    .filter(|s| !f.sources.contains(s))
                    .cloned()
                    .collect();
                if candidate.sources.is_empty() || !fresh.is_empty() {
                    f.evidence = f.evidence.saturating_add(1);
                }
                let mut sources = std::mem::take(&mut f.sources);
                sources.extend(fresh);
                f.sources = cap_sources(sources);
                f.confidence = f.confidence.max(candidate.confidence);
                f.last_seen = self.tick;
                if *reason == Reason::Revived && f.lifecycle == Lifecycle::Stale {
                    f.lifecycle = Lifecycle::Active;
                }
            }
            Change::Candidate { .. } => {}
            Change::Moved { fact, to, by, .. } => {
                if let Some(&i) = self.index.get(fact) {
                    let f = &mut self.facts[i];
                    if f.lifecycle.can_move_to(*to) {
                        f.lifecycle = *to;
                        if *to == Lifecycle::Superseded {
                            f.superseded_by.clone_from(by);
                        }
                    }
                }
            }
        }
    }

    /// The changes admitting `c` makes (not applied).
    fn decide(&self, c: Candidate, limits: &Limits) -> Vec<Change> {
        let reject = |c: Candidate, reason: Reason, fact: Option<String>| {
            vec![Change::Candidate {
                candidate: c,
                outcome: Outcome::Rejected,
                reason,
                fact,
            }]
        };
        if let Some(reason) = low_value(&c.text) {
            return reject(c, reason, None);
        }
        if c.confidence < limits.min_confidence {
            return reject(c, Reason::LowConfidence, None);
        }
        let id = fact_id(c.kind, &c.subject, &c.text);
        if let Some(held) = self.get(&id) {
            return match held.lifecycle {
                Lifecycle::Forgotten => reject(c, Reason::Forgotten, Some(id)),
                Lifecycle::Superseded => reject(c, Reason::Outdated, Some(id)),
                Lifecycle::Active | Lifecycle::Pinned => vec![Change::Candidate {
                    candidate: c,
                    outcome: Outcome::Merged,
                    reason: Reason::DuplicateMerged,
                    fact: Some(id),
                }],
                Lifecycle::Stale => {
                    // Seen again: active again if the cap has room or a weaker fact can go.
                    let mut out = Vec::new();
                    match self.make_room(c.kind, held.strength() + c.confidence, &[], limits) {
                        Room::Free => {}
                        Room::Evict(weakest) => out.push(evicted(weakest, &id)),
                        Room::Full => return reject(c, Reason::CapReached, Some(id)),
                    }
                    out.insert(
                        0,
                        Change::Candidate {
                            candidate: c,
                            outcome: Outcome::Merged,
                            reason: Reason::Revived,
                            fact: Some(id),
                        },
                    );
                    out
                }
            };
        }
        // A new statement: the facts it replaces (same subject, other text, still standing).
        let replaced: Vec<String> = self
            .facts
            .iter()
            .filter(|f| {
                f.kind == c.kind
                    && f.subject == c.subject
                    && matches!(f.lifecycle, Lifecycle::Active | Lifecycle::Stale)
            })
            .map(|f| f.id.clone())
            .collect();
        let mut out = vec![];
        match self.make_room(c.kind, c.confidence, &replaced, limits) {
            Room::Free => {}
            Room::Evict(weakest) => out.push(evicted(weakest, &id)),
            Room::Full => return reject(c, Reason::CapReached, None),
        }
        out.insert(
            0,
            Change::Candidate {
                candidate: c,
                outcome: Outcome::Accepted,
                reason: Reason::New,
                fact: Some(id.clone()),
            },
        );
        out.extend(replaced.into_iter().map(|old| Change::Moved {
            fact: old,
            to: Lifecycle::Superseded,
            reason: Reason::Superseded,
            by: Some(id.clone()),
        }));
        out
    }

    /// Whether one more trusted fact of `kind` (of `strength`) fits, once the `leaving` facts are
    /// gone: free room, the weakest unpinned fact to evict (weaker than or as strong as the newcomer:
    /// the newer wins a tie), or no room.
    fn make_room(
        &self,
        kind: FactKind,
        strength: f64,
        leaving: &[String],
        limits: &Limits,
    ) -> Room {
        let held: Vec<&Fact> = self
            .trusted()
            .filter(|f| f.kind == kind && !leaving.contains(&f.id))
            .collect();
        if held.len() < limits.cap(kind) {
            return Room::Free;
        }
        let weakest = held
            .iter()
            .filter(|f| f.lifecycle == Lifecycle::Active)
            .min_by(|a, b| {
                a.strength()
                    .total_cmp(&b.strength())
                    .then(a.last_seen.cmp(&b.last_seen))
            });
        match weakest {
            Some(w) if w.strength() <= strength && limits.cap(kind) > 0 => {
                Room::Evict(w.id.clone())
            }
            _ => Room::Full,
        }
    }
}

enum Room {
    Free,
    Evict(String),
    Full,
}

fn evicted(fact: String, by: &str) -> Change {
    Change::Moved {
        fact,
        to: Lifecycle::Stale,
        reason: Reason::Evicted,
        by: Some(by.to_owned()),
    }
}

/// Keeps the first half and the latest of the sources when there are too many.
fn cap_sources(mut sources: Vec<String>) -> Vec<String> {
    if sources.len() > MAX_SOURCES {
        let head = MAX_SOURCES / 2;
        let tail = sources.split_off(sources.len() - (MAX_SOURCES - head));
        sources.truncate(head);
        sources.extend(tail);
    }
    sources
}

/// Why a statement is worth nothing: empty, a date or time alone, or noise (too few letters and
/// digits, or no letter at all).
pub fn low_value(text: &str) -> Option<Reason> {
    let t = text.trim();
    if t.is_empty() {
        return Some(Reason::Empty);
    }
    let dateish = t.chars().any(|c| c.is_ascii_digit())
        && t.chars()
            .all(|c| c.is_ascii_digit() || " /-.:,TZ+".contains(c));
    if dateish {
        return Some(Reason::DateOnly);
    }
    let words = t.chars().filter(|c| c.is_alphanumeric()).count();
    if words < MIN_WORD_CHARS || !t.chars().any(char::is_alphabetic) {
        return Some(Reason::Noise);
    }
    None
}

/// A candidate for what a project's fact says, to load it into a new session.
pub fn from_project(fact: &Fact) -> Candidate {
    Candidate {
        kind: fact.kind,
        subject: fact.subject.clone(),
        text: fact.text.clone(),
        path: fact.path.clone(),
        confidence: fact.confidence,
        sources: vec![format!("project:{}", fact.id)],
        origin: Origin::Project,
    }
}

/// Whether a fact is worth promoting to the project's memory: trusted, confident (a summary's
/// statement alone is not enough), and of a durable kind or a directory a command entered (where a
/// folder is outlives the session: what the pre-tool gate reads).
pub fn promotable(fact: &Fact) -> bool {
    let directory = fact.kind == FactKind::FileState
        && fact.path.is_some()
        && fact
            .subject
            .starts_with(super::candidate::DIRECTORY_SUBJECT);
    fact.lifecycle.trusted()
        && (fact.kind.durable() || directory)
        && fact.confidence >= PROMOTE_MIN_CONFIDENCE
}

/// Confidence a fact needs to be promoted: what the user or the assistant stated, not what a
/// summary (0.5) or injected context (0.6) says.
pub const PROMOTE_MIN_CONFIDENCE: f64 = 0.7;
