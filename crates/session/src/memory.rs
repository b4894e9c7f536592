//! Structured fact memory in the session runtime ([`compact_core::memory`] is the pure model):
//! candidates read from every new item of a preflight, each decision logged as an event
//! (`compact.memory_candidate`, `compact.memory_lifecycle`: the log stays append-only and the
//! memory is rebuilt from it), the memory block injected right after the system prompt, and the
//! project's memory (durable facts shared by the sessions of one project) kept as one more log in
//! the same store, under [`project_session`].
//!
//! When the block changes: at a session's first call, a branch, a reload, a compaction, and after
//! a fact was forgotten or pinned through the manager. Between those the view is extended as
//! always and the block stays byte for byte what it was, so the provider's prompt cache keeps
//! hitting; facts learnt meanwhile are in the history the model sees, and join the block at the
//! next compaction (which rewrites the prompt from the checkpoint on anyway).

use crate::event::{Event, EventKind};
use crate::record::Record;
use crate::store::{Store, StoreError};
use compact_config::MemorySettings;
use compact_core::memory::{
    Candidate, Change, FactKind, Lifecycle, Limits, Memory, Origin, Outcome, Reason,
};
use compact_core::model::{Conversation, Item, ItemBody, ItemId, Role};
use compact_core::redact::Redactor;
use serde_json::{json, Value};

/// Default size of the memory block, in tokens: a few dozen facts, under 1% of a 128k window.
pub const DEFAULT_MEMORY_BUDGET: usize = 800;

/// Prefix of the session id under which a project's memory is logged.
pub const PROJECT_PREFIX: &str = "project-memory:";

/// Attempts at appending to a project's memory when another session appended first.
const PROJECT_APPEND_ATTEMPTS: usize = 3;

/// The memory settings of a manager (`memory:` in the configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    /// Largest memory block, in tokens.
    pub budget_tokens: usize,
    /// Caps per kind and the confidence floor.
    pub limits: Limits,
    /// The project whose memory new sessions load and durable facts are promoted to (`None`: no
    /// project memory).
    pub project: Option<String>,
    /// Whether the project's memory is used (`memory.project_store`).
    pub project_store: bool,
    /// Whether the pre-tool gate is on (read by the agent integrations).
    pub gate: bool,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            budget_tokens: DEFAULT_MEMORY_BUDGET,
            limits: Limits::default(),
            project: None,
            project_store: true,
            gate: false,
        }
    }
}

impl MemoryConfig {
    /// The settings a configuration's `memory:` section names; `project` is the project the host
    /// runs in (the CLI passes the canonical working directory), used when the section names none
    /// and `project_store` is on.
    pub fn from_settings(settings: &MemorySettings, project: Option<String>) -> MemoryConfig {
        let mut limits = Limits::default();
        for (name, cap) in &settings.caps {
            if let Some(kind) = FactKind::from_name(name) {
                limits.caps[kind.index()] = *cap;
            }
        }
        if let Some(c) = settings.min_confidence {
            limits.min_confidence = c;
        }
        MemoryConfig {
            budget_tokens: settings.budget_tokens.unwrap_or(DEFAULT_MEMORY_BUDGET),
            limits,
            project: settings.project.clone().or(project),
            project_store: settings.project_store,
            gate: settings.gate,
        }
    }
}

impl MemoryConfig {
    /// The project whose memory is used, if any.
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref().filter(|_| self.project_store)
    }
}

/// The session id of `project`'s memory log.
pub fn project_session(project: &str) -> String {
    format!("{PROJECT_PREFIX}{project}")
}

/// Whether a session id is a project's memory log (not a conversation).
pub fn is_project_session(session: &str) -> bool {
    session.starts_with(PROJECT_PREFIX)
}

/// The event logging `change`.
pub fn change_event(change: &Change) -> Event {
    match change {
        Change::Candidate {
            candidate: c,
            outcome,
            reason,
            fact,
        } => Event::new(
            EventKind::MemoryCandidate,
            json!({"outcome": outcome.as_str(), "reason": reason.as_str(), "fact": fact,
                   "kind": c.kind.as_str(), "subject": c.subject, "text": c.text, "path": c.path,
                   "confidence": c.confidence, "sources": c.sources, "origin": c.origin.as_str()}),
        ),
        Change::Moved {
            fact,
            to,
            reason,
            by,
        } => Event::new(
            EventKind::MemoryLifecycle,
            json!({"fact": fact, "to": to.as_str(), "reason": reason.as_str(), "by": by}),
        ),
    }
}

/// The change an event logged, if it is a memory event.
pub fn event_change(event: &Event) -> Option<Change> {
    let s = |k: &str| event.get(k).and_then(Value::as_str);
    let opt = |k: &str| s(k).map(str::to_owned);
    match event.kind {
        EventKind::MemoryCandidate => Some(Change::Candidate {
            candidate: Candidate {
                kind: FactKind::from_name(s("kind")?)?,
                subject: opt("subject")?,
                text: opt("text")?,
                path: opt("path"),
                confidence: event.get("confidence").and_then(Value::as_f64)?,
                sources: event
                    .get("sources")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                origin: Origin::from_name(s("origin")?)?,
            },
            outcome: Outcome::from_name(s("outcome")?)?,
            reason: Reason::from_name(s("reason")?)?,
            fact: opt("fact"),
        }),
        EventKind::MemoryLifecycle => Some(Change::Moved {
            fact: opt("fact")?,
            to: Lifecycle::from_name(s("to")?)?,
            reason: Reason::from_name(s("reason")?)?,
            by: opt("by"),
        }),
        _ => None,
    }
}

/// A memory change as logged: its record's sequence number and time.
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedChange {
    /// The record's sequence number in its log.
    pub seq: u64,
    /// When it was logged (milliseconds since the Unix epoch).
    pub at_ms: u64,
    /// The change.
    pub change: Change,
}

/// The memory changes of a session's log (or a project's), oldest first.
pub fn read_changes(store: &dyn Store, session: &str) -> Result<Vec<LoggedChange>, StoreError> {
    Ok(store
        .read(session, 0)?
        .into_iter()
        .filter_map(|s| match &s.record {
            Record::Event(e) => event_change(e).map(|change| LoggedChange {
                seq: s.seq,
                at_ms: e.at_ms,
                change,
            }),
            _ => None,
        })
        .collect())
}

/// The memory a log holds (replayed from its changes). An unknown session has an empty memory.
pub fn read_memory(store: &dyn Store, session: &str) -> Result<Memory, StoreError> {
    let mut memory = Memory::new();
    match read_changes(store, session) {
        Ok(changes) => {
            for c in &changes {
                memory.apply(&c.change);
            }
            Ok(memory)
        }
        Err(StoreError::UnknownSession(_)) => Ok(memory),
        Err(e) => Err(e),
    }
}

/// `candidates` with their secrets redacted (salted by the session id, as its log is).
pub(crate) fn redact_candidates(
    redactor: Option<&Redactor>,
    session: &str,
    candidates: &mut [Candidate],
) {
    let Some(r) = redactor else {
        return;
    };
    for c in candidates {
        r.redact_string(session, &mut c.subject);
        r.redact_string(session, &mut c.text);
        if let Some(p) = &mut c.path {
            r.redact_string(session, p);
        }
    }
}

/// The candidates in a request's new items: what [`compact_core::facts::extract`] finds, and what
/// the checkpoints and provider summaries among them state. The memory block itself is skipped.
pub fn candidates_of(items: &[Item]) -> Vec<Candidate> {
    let items: Vec<Item> = items
        .iter()
        .filter(|i| !is_block_item(i))
        .cloned()
        .collect();
    if items.is_empty() {
        return Vec::new();
    }
    let facts = compact_core::facts::extract(&items);
    let mut out = compact_core::memory::from_facts(&facts);
    for item in &items {
        let text = match item.body() {
            ItemBody::Checkpoint(c) => c.text.clone(),
            ItemBody::ProviderCompaction(_) => item.plain_text(),
            _ => continue,
        };
        if !text.trim().is_empty() {
            out.extend(compact_core::memory::from_summary(
                &text,
                item.meta.id.as_str(),
            ));
        }
    }
    out
}

/// Whether `item` is a memory block this runtime injected.
pub fn is_block_item(item: &Item) -> bool {
    match item.body() {
        ItemBody::Message(m) if m.role == Role::System => {
            compact_core::memory::render::is_block(&item.plain_text())
        }
        _ => false,
    }
}

/// The text of the memory block in `view`, if it holds one.
pub(crate) fn block_in(view: &Conversation) -> Option<String> {
    view.items
        .iter()
        .find(|i| is_block_item(i))
        .map(Item::plain_text)
}

/// Puts `block` in `view` right after its leading system and developer messages (replacing the
/// block it held, if any); `None` removes it. Returns whether the view changed.
pub(crate) fn inject(view: &mut Conversation, block: Option<&str>) -> bool {
    let held = view.items.iter().position(is_block_item);
    if let (Some(at), Some(text)) = (held, block) {
        if view.items[at].plain_text() == text {
            return false;
        }
    }
    if held.is_none() && block.is_none() {
        return false;
    }
    view.items.retain(|i| !is_block_item(i));
    if let Some(text) = block {
        let at = view
            .items
            .iter()
            .take_while(|i| {
                matches!(i.body(), ItemBody::Message(m) if matches!(m.role, Role::System | Role::Developer))
            })
            .count();
        let mut item = Item::text(Role::System, text);
        item.meta.id = ItemId::new(block_id(text));
        item.meta.protected = true;
        item.meta.turn = at
            .checked_sub(1)
            .and_then(|i| view.items.get(i))
            .map_or(0, |i| i.meta.turn);
        view.items.insert(at, item);
    }
    true
}

/// The id of a memory block: `memory-` and ten hex digits of an FNV-1a hash of its text (the same
/// block, the same id; never an id a host's item has).
fn block_id(text: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("memory-{:010x}", h & 0xff_ffff_ffff)
}

/// Promotes the durable facts among `touched` (accepted or merged in this call) to `project`'s
/// memory: each is a candidate there, citing `session/<fact id>`. Retries a conflict with another
/// writer a few times. Returns the project's changes.
pub(crate) fn promote(
    store: &dyn Store,
    project: &str,
    session: &str,
    memory: &Memory,
    touched: &[String],
    limits: &Limits,
) -> Result<Vec<Change>, StoreError> {
    let candidates: Vec<Candidate> = touched
        .iter()
        .filter_map(|id| memory.get(id))
        .filter(|f| compact_core::memory::promotable(f))
        .map(|f| Candidate {
            kind: f.kind,
            subject: f.subject.clone(),
            text: f.text.clone(),
            path: f.path.clone(),
            confidence: f.confidence,
            sources: vec![format!("{session}/{}", f.id)],
            origin: f.origin,
        })
        .collect();
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let log = project_session(project);
    store.create(&log)?;
    let mut last = None;
    for _ in 0..PROJECT_APPEND_ATTEMPTS {
        let version = store.version(&log)?;
        let mut held = read_memory(store, &log)?;
        // What the project holds already with this session's source is not logged again.
        let fresh: Vec<Candidate> = candidates
            .iter()
            .filter(|c| {
                let id = compact_core::memory::fact_id(c.kind, &c.subject, &c.text);
                !held
                    .get(&id)
                    .is_some_and(|f| c.sources.iter().all(|s| f.sources.contains(s)))
            })
            .cloned()
            .collect();
        if fresh.is_empty() {
            return Ok(Vec::new());
        }
        let news = held.admit(fresh, limits);
        let records: Vec<Record> = news
            .iter()
            .map(|c| Record::Event(change_event(c)))
            .collect();
        match store.append(&log, version, records) {
            Ok(_) => return Ok(news),
            Err(e @ StoreError::Conflict { .. }) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| StoreError::Backend("project memory: no attempt made".to_owned())))
}

/// The candidates `project`'s memory gives a new session: its trusted facts.
pub(crate) fn project_candidates(
    store: &dyn Store,
    project: &str,
) -> Result<Vec<Candidate>, StoreError> {
    let memory = read_memory(store, &project_session(project))?;
    Ok(memory
        .trusted()
        .map(compact_core::memory::from_project)
        .collect())
}

/// The `compact.memory_gate` event of a rewrite.
pub fn gate_event(tool: &str, rewrite: &compact_core::memory::Rewrite) -> Event {
    Event::new(
        EventKind::MemoryGate,
        json!({"tool": tool, "target": rewrite.target, "path": rewrite.path, "fact": rewrite.fact,
               "original_command": rewrite.original, "rewritten_command": rewrite.rewritten}),
    )
}
