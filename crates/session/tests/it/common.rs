//! A synthetic tool-using agent session, generated deterministically, and helpers.

use compact_core::model::{Conversation, Format, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use compact_formats::validate::validate;
use compact_formats::wire::encode;
use compact_session::{CompactManager, MemoryStore, SessionConfig, Store};
use serde_json::json;
use std::sync::Arc;

/// A small deterministic generator (xorshift64*): tests must not depend on a random seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

pub fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::O200kBase)
}

pub fn manager_with(window: usize, store: Arc<dyn Store>) -> CompactManager {
    CompactManager::open(
        SessionConfig::new(Policy::for_window(window), counter()),
        store,
    )
    .unwrap()
}

pub fn manager(window: usize) -> CompactManager {
    manager_with(window, Arc::new(MemoryStore::new()))
}

/// Runs `steps` steps of the agent seeded with `seed` through `manager` (every preflight must
/// succeed); returns the compactions seen.
pub fn drive(manager: &CompactManager, session: &str, steps: usize, seed: u64) -> usize {
    let mut agent = Agent::new(seed, Format::OpenAiChat);
    let mut compactions = 0;
    for _ in 0..steps {
        agent.step();
        let prepared = manager.preflight(session, &agent.history).unwrap();
        compactions += usize::from(prepared.report.compaction.is_some());
    }
    compactions
}

/// Output text of about `lines` lines naming `topic`.
pub fn output(rng: &mut Rng, topic: &str, lines: usize) -> String {
    (0..lines)
        .map(|i| match rng.below(20) {
            0 => format!(
                "error[E{:04}]: mismatched types in {topic} line {i}",
                rng.below(999)
            ),
            _ => format!(
                "{topic}: line {i} value={} ok hash={:x}",
                rng.below(100_000),
                rng.next()
            ),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A growing tool-using session: [`Agent::step`] appends one turn (a user message, then a few
/// assistant tool calls with their outputs and an assistant reply).
pub struct Agent {
    pub history: Conversation,
    rng: Rng,
    turn: usize,
    calls: usize,
}

impl Agent {
    pub fn new(seed: u64, format: Format) -> Self {
        let mut history = Conversation {
            format: Some(format),
            ..Conversation::default()
        };
        history.extra.insert("model".into(), json!("test-model"));
        history.push(Item::text(
            Role::System,
            "You are a careful coding agent working in the repository at /work/app.",
        ));
        Agent {
            history,
            rng: Rng::new(seed),
            turn: 0,
            calls: 0,
        }
    }

    /// Appends the user message opening a turn.
    pub fn user(&mut self, text: &str) {
        self.history.push(Item::text(Role::User, text));
    }

    /// Appends one tool call and its output of about `lines` lines.
    pub fn tool(&mut self, lines: usize) {
        self.calls += 1;
        let id = format!("call_{}", self.calls);
        let path = format!("src/module_{}.rs", self.rng.below(40));
        let (name, args) = if self.rng.below(2) == 0 {
            ("read_file", json!({"path": path}))
        } else {
            (
                "bash",
                json!({"command": format!("cargo test -p m{}", self.rng.below(9))}),
            )
        };
        self.history
            .push(Item::new(ItemBody::ToolCall(ToolCall::function(
                &id, name, args,
            ))));
        let text = output(&mut self.rng, &path, lines);
        let mut result = ToolResult::text(&id, text);
        result.tool_name = Some(name.to_owned());
        self.history.push(Item::new(ItemBody::ToolResult(result)));
    }

    /// One whole turn.
    pub fn step(&mut self) {
        self.turn += 1;
        let n = self.turn;
        self.user(&format!(
            "Step {n}: please continue with the refactor of module {n} and run the tests."
        ));
        let calls = 1 + self.rng.below(3) as usize;
        for _ in 0..calls {
            let lines = 10 + self.rng.below(60) as usize;
            self.tool(lines);
        }
        self.history.push(Item::text(
            Role::Assistant,
            format!("Done with step {n}: module {n} compiles and its tests pass."),
        ));
    }
}

/// The provider-rules violations of `conv` encoded for its format.
pub fn violations(conv: &Conversation) -> Vec<String> {
    let format = conv.format.unwrap_or(Format::OpenAiChat);
    let request = encode(conv, format).unwrap().value;
    validate(&request, format)
        .into_iter()
        .map(|v| v.to_string())
        .collect()
}

/// The wire messages of `conv`, each serialised.
pub fn wire_messages(conv: &Conversation) -> Vec<String> {
    let format = conv.format.unwrap_or(Format::OpenAiChat);
    let request = encode(conv, format).unwrap().value;
    let key = if format == Format::OpenAiResponses {
        "input"
    } else {
        "messages"
    };
    request[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| serde_json::to_string(m).unwrap())
        .collect()
}

/// A memory store that counts what is done to it: appends, whole-log reads (`read` from the
/// start) and the records read back.
pub struct CountingStore {
    inner: MemoryStore,
    pub appends: std::sync::atomic::AtomicUsize,
    pub whole_reads: std::sync::atomic::AtomicUsize,
    pub records_read: std::sync::atomic::AtomicUsize,
    /// The sessions of each `append_many` call, in order.
    pub batches: std::sync::Mutex<Vec<Vec<String>>>,
}

impl CountingStore {
    pub fn new() -> CountingStore {
        CountingStore {
            inner: MemoryStore::new(),
            appends: Default::default(),
            whole_reads: Default::default(),
            records_read: Default::default(),
            batches: Default::default(),
        }
    }
}

impl Store for CountingStore {
    fn create(&self, session: &str) -> Result<bool, compact_session::StoreError> {
        self.inner.create(session)
    }
    fn version(&self, session: &str) -> Result<u64, compact_session::StoreError> {
        self.inner.version(session)
    }
    fn append(
        &self,
        session: &str,
        expected: u64,
        records: Vec<compact_session::record::Record>,
    ) -> Result<u64, compact_session::StoreError> {
        self.appends
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.append(session, expected, records)
    }
    fn append_many(
        &self,
        appends: Vec<(String, u64, Vec<compact_session::record::Record>)>,
    ) -> Vec<Result<u64, compact_session::StoreError>> {
        self.batches
            .lock()
            .unwrap()
            .push(appends.iter().map(|(s, _, _)| s.clone()).collect());
        self.inner.append_many(appends)
    }
    fn read(
        &self,
        session: &str,
        after: u64,
    ) -> Result<Vec<compact_session::record::Stored>, compact_session::StoreError> {
        if after == 0 {
            self.whole_reads
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let records = self.inner.read(session, after)?;
        self.records_read
            .fetch_add(records.len(), std::sync::atomic::Ordering::SeqCst);
        Ok(records)
    }
    fn find_items(
        &self,
        session: &str,
        item_id: &str,
    ) -> Result<Vec<compact_session::record::Stored>, compact_session::StoreError> {
        self.inner.find_items(session, item_id)
    }
    fn sessions(&self) -> Result<Vec<String>, compact_session::StoreError> {
        self.inner.sessions()
    }
    fn list_sessions(
        &self,
    ) -> Result<Vec<compact_session::SessionSummary>, compact_session::StoreError> {
        self.inner.list_sessions()
    }
    fn delete_session(&self, session: &str) -> Result<bool, compact_session::StoreError> {
        self.inner.delete_session(session)
    }
}
