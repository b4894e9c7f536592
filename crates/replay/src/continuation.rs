//! Continuation probes: *could the agent go on?* At a few cut points of a session, the anchors (file
//! paths, identifiers, URLs) that the agent's next tool calls use and that it had already seen before
//! the cut; a compacted request scores the share of them it still holds.
//!
//! The rule is the transcript's own and never looks at the engine: anchors come from the arguments of
//! the next [`NEXT_CALLS`] tool calls (path fields, commands, search patterns, the old side of edits and
//! patch context; never text the agent is writing now, such as file contents, an edit's new text or a
//! patch's added lines) and from code spans and paths in the assistant text between them. An anchor
//! counts only when it occurs, as a whole word, somewhere in the history before the cut. Generic tokens
//! are dropped twice: by a short built-in list of shell and language words, and, over a replay of
//! several projects, by [`prune_generic`] (a token used in sessions of [`GENERIC_PROJECTS`] or more
//! projects says nothing about one session's working set).
//!
//! Cut points are the model calls nearest [`CUT_SHARES`] of a session's tool calls that have at least
//! [`NEXT_CALLS`] calls after them and whose history does not fit the usable budget (so it had to be
//! compacted). At every cut, a replay scores the strategy's request and two baselines built from the
//! original history: a *tail* of the same size (the system prompt and the first user message, then the
//! newest whole items) and a *window* that fills the usable budget the same way.

use aho_corasick::AhoCorasick;
use compact_core::model::{Conversation, Item, ItemBody, Role};
use compact_core::partition::is_user_message;
use compact_core::tokens::TokenCounter;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Tool calls after a cut whose anchors are collected.
pub const NEXT_CALLS: usize = 15;
/// Where cuts are taken, as shares of a session's tool calls.
pub const CUT_SHARES: [f64; 3] = [0.5, 0.7, 0.9];
/// A token used in sessions of this many different projects is generic.
pub const GENERIC_PROJECTS: usize = 3;
/// Shortest anchor, in bytes.
const MIN_ANCHOR_BYTES: usize = 4;
/// Longest anchor, in bytes.
const MAX_ANCHOR_BYTES: usize = 200;
/// Shortest plain lowercase word taken as an identifier (shorter ones must look like code).
const MIN_PLAIN_WORD: usize = 6;

/// Argument keys whose values are text the agent is writing now, not references to existing things.
const WRITING_KEYS: &[&str] = &[
    "content",
    "new_string",
    "new_str",
    "newstring",
    "file_text",
    "new_source",
    "insert_text",
    "text",
    "todos",
    "description",
    "prompt",
    "plan",
    "explanation",
    "message",
    "commit_message",
    "body",
    "title",
    "thought",
    "reasoning",
];

/// File extensions that make a dotted token a file name rather than an attribute access.
const FILE_EXTENSIONS: &[&str] = &[
    "c", "cc", "cfg", "cjs", "conf", "cpp", "cs", "css", "csv", "dart", "env", "ex", "exs", "go",
    "gradle", "graphql", "h", "hpp", "html", "ini", "ipynb", "java", "jl", "js", "json", "jsonl",
    "jsx", "kt", "lock", "log", "lua", "md", "mjs", "php", "pl", "proto", "py", "pyi", "r", "rb",
    "rs", "scala", "scss", "sh", "sql", "svelte", "swift", "tf", "toml", "ts", "tsx", "txt", "vue",
    "xml", "yaml", "yml", "zig",
];

/// Words too common in commands and code to say anything about one session.
const GENERIC_WORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "allow",
    "append",
    "assert",
    "async",
    "await",
    "before",
    "break",
    "build",
    "bytes",
    "cargo",
    "catch",
    "check",
    "class",
    "clean",
    "clone",
    "close",
    "commit",
    "config",
    "const",
    "continue",
    "count",
    "create",
    "debug",
    "default",
    "define",
    "delete",
    "description",
    "dirname",
    "docker",
    "double",
    "echo",
    "elif",
    "else",
    "enum",
    "error",
    "errors",
    "event",
    "except",
    "export",
    "extends",
    "false",
    "fetch",
    "field",
    "file",
    "filename",
    "files",
    "filter",
    "final",
    "finally",
    "first",
    "float",
    "format",
    "found",
    "from",
    "function",
    "global",
    "grep",
    "head",
    "help",
    "import",
    "index",
    "info",
    "input",
    "install",
    "instance",
    "interface",
    "items",
    "json",
    "kwargs",
    "lambda",
    "length",
    "limit",
    "line",
    "lines",
    "list",
    "local",
    "main",
    "match",
    "message",
    "method",
    "module",
    "name",
    "node",
    "none",
    "null",
    "number",
    "object",
    "option",
    "options",
    "order",
    "output",
    "package",
    "params",
    "parse",
    "path",
    "paths",
    "print",
    "println",
    "private",
    "process",
    "public",
    "push",
    "python",
    "python3",
    "raise",
    "range",
    "read",
    "readme",
    "remove",
    "replace",
    "request",
    "require",
    "response",
    "result",
    "return",
    "right",
    "run",
    "script",
    "search",
    "select",
    "self",
    "server",
    "setup",
    "should",
    "show",
    "source",
    "start",
    "state",
    "static",
    "status",
    "stderr",
    "stdin",
    "stdout",
    "string",
    "struct",
    "super",
    "switch",
    "system",
    "table",
    "tail",
    "target",
    "test",
    "tests",
    "their",
    "there",
    "these",
    "this",
    "throw",
    "true",
    "type",
    "types",
    "undefined",
    "update",
    "usage",
    "user",
    "using",
    "value",
    "values",
    "version",
    "void",
    "which",
    "while",
    "with",
    "write",
];

/// Path prefixes of the machine rather than of a project.
const SYSTEM_PATHS: &[&str] = &[
    "/dev/", "/proc/", "/tmp", "/usr/", "/bin/", "/sbin/", "/etc/",
];

/// What an anchor stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AnchorKind {
    /// A file path or file name.
    Path,
    /// An identifier: a function, class, type, field, test name, config key or search term.
    Identifier,
    /// A URL or `host:port`.
    Url,
}

/// One anchor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    /// The text looked for (as a whole word).
    pub text: String,
    /// What it stands for.
    pub kind: AnchorKind,
}

/// A point where the session is cut: the model call before item `at`, and the anchors its
/// continuation uses that the history before it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// Index of the original item the call produced first.
    pub at: usize,
    /// Anchors expected, as indices into [`ContinuationSet::anchors`].
    pub anchors: Vec<u32>,
}

/// A compaction the transcript itself recorded (a Claude Code compact boundary, a Codex `compacted`
/// record): where it happened and the summary the agent's own compaction wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceBoundary {
    /// Index, in the restored history, of the first item after the compaction.
    pub at: usize,
    /// The summary text the agent's compaction produced.
    pub summary: String,
}

/// The cuts and anchors of one session, with a matcher that finds every anchor in one pass.
#[derive(Debug, Clone, Default)]
pub struct ContinuationSet {
    anchors: Vec<Anchor>,
    cuts: Vec<Cut>,
    boundaries: Vec<(Cut, String)>,
    project: Option<String>,
    matcher: Option<AhoCorasick>,
}

/// The share of a cut's anchors one context holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Held {
    /// Anchors expected.
    pub expected: u32,
    /// Of those, present.
    pub present: u32,
}

impl Held {
    /// `present / expected` (1 when nothing is expected).
    pub fn share(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            f64::from(self.present) / f64::from(self.expected)
        }
    }
}

/// One cut of a replayed session: the strategy's request and the two baselines.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CutScore {
    /// Tokens of the strategy's request.
    pub tokens: usize,
    /// Anchors the strategy's request holds.
    pub strategy: Held,
    /// Anchors the same-size tail holds.
    pub tail: Held,
    /// Anchors the window filling the usable budget holds.
    pub window: Held,
    /// Anchors the strategy's request holds or can get back: those in the items of the history
    /// whose id the request names (a reference stub's or a marker's `recall` id), which the model
    /// can fetch with the recall tool. What a replayed agent, which never calls the tool, would
    /// have recalled at best.
    pub recallable: Held,
}

/// One source compaction scored: the agent's own summary against a deterministic checkpoint and a
/// tail, both of the summary's size.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BoundaryScore {
    /// Tokens of the agent's summary.
    pub summary_tokens: usize,
    /// Tokens of the checkpoint built for the comparison.
    pub checkpoint_tokens: usize,
    /// Anchors the agent's summary holds.
    pub summary: Held,
    /// Anchors the checkpoint holds.
    pub checkpoint: Held,
    /// Anchors a tail of the summary's size holds.
    pub tail: Held,
    /// Tokens of the checkpoint built with the summary's size as its budget (an upper bound the
    /// builder stays under: the comparison before checkpoints were sized to the summary).
    pub budgeted_tokens: usize,
    /// Anchors that checkpoint holds.
    pub budgeted: Held,
}

impl ContinuationSet {
    /// Derives the cuts of `conv` (the original transcript, source compactions undone): cuts whose
    /// request (with `fixed_tokens` for tool schemas and framing) exceeds `usable` tokens.
    pub fn derive(
        conv: &Conversation,
        counter: &TokenCounter,
        fixed_tokens: usize,
        usable: usize,
    ) -> ContinuationSet {
        let items = &conv.items;
        let calls: Vec<usize> = tool_calls(items);
        let mut prefix = Vec::with_capacity(items.len() + 1);
        let mut running = fixed_tokens;
        prefix.push(running);
        for item in items {
            if item.meta.visibility.model {
                running += counter.count_item(item);
            }
            prefix.push(running);
        }
        let points = crate::calls::call_points(items);
        let mut chosen: Vec<(usize, usize)> = Vec::new();
        for share in CUT_SHARES {
            let Some((at, before)) = nearest_point(&points, &calls, share) else {
                continue;
            };
            if before == 0 || before + NEXT_CALLS > calls.len() || prefix[at] <= usable {
                continue;
            }
            if !chosen.iter().any(|&(a, _)| a == at) {
                chosen.push((at, before));
            }
        }
        let mut set = ContinuationSet {
            project: project_of(conv),
            ..ContinuationSet::default()
        };
        let mut table = AnchorTable::default();
        let mut candidates = Vec::new();
        for &(at, before) in &chosen {
            let last = calls[before + NEXT_CALLS - 1];
            candidates.push((at, table.collect(&items[at..=last])));
        }
        set.cuts = set
            .seen_before(items, &table, candidates)
            .into_iter()
            .flatten()
            .collect();
        set
    }

    /// Adds the compactions the transcript recorded, each scored against the tool calls after it
    /// (up to [`NEXT_CALLS`]; a boundary with fewer than five calls after it is left out).
    pub fn with_boundaries(mut self, conv: &Conversation, boundaries: &[SourceBoundary]) -> Self {
        let items = &conv.items;
        let calls = tool_calls(items);
        let mut table = AnchorTable::from_anchors(&self.anchors);
        let mut candidates: Vec<(usize, Vec<u32>)> = self
            .cuts
            .iter()
            .map(|c| (c.at, c.anchors.clone()))
            .collect();
        let n_cuts = candidates.len();
        let mut summaries = Vec::new();
        for b in boundaries {
            let after: Vec<usize> = calls.iter().copied().filter(|&c| c >= b.at).collect();
            if after.len() < 5 || b.at == 0 {
                continue;
            }
            let last = after[after.len().min(NEXT_CALLS) - 1];
            candidates.push((b.at, table.collect(&items[b.at..=last])));
            summaries.push(b.summary.clone());
        }
        // The matcher is rebuilt with the new anchors, so every cut is checked again.
        let checked = self.seen_before(items, &table, candidates);
        let mut checked = checked.into_iter();
        self.cuts = checked.by_ref().take(n_cuts).flatten().collect();
        self.boundaries = checked
            .zip(summaries)
            .filter_map(|(cut, summary)| cut.map(|c| (c, summary)))
            .collect();
        self
    }

    /// Keeps, for each candidate cut, the anchors that occur before it (`None` when none do), with the
    /// anchor list and matcher rebuilt from `table`.
    fn seen_before(
        &mut self,
        items: &[Item],
        table: &AnchorTable,
        candidates: Vec<(usize, Vec<u32>)>,
    ) -> Vec<Option<Cut>> {
        self.anchors = table.anchors.clone();
        self.matcher = build_matcher(&self.anchors);
        let last_cut = candidates.iter().map(|(at, _)| *at).max().unwrap_or(0);
        let mut first_seen = vec![usize::MAX; self.anchors.len()];
        for (idx, item) in items.iter().enumerate().take(last_cut) {
            if !item.meta.visibility.model {
                continue;
            }
            for a in self.find_in(&item.plain_text()) {
                let slot = &mut first_seen[a as usize];
                *slot = (*slot).min(idx);
            }
        }
        candidates
            .into_iter()
            .map(|(at, anchors)| {
                let anchors: Vec<u32> = anchors
                    .into_iter()
                    .filter(|&a| first_seen[a as usize] < at)
                    .collect();
                (!anchors.is_empty()).then_some(Cut { at, anchors })
            })
            .collect()
    }

    /// The anchors.
    pub fn anchors(&self) -> &[Anchor] {
        &self.anchors
    }

    /// The cuts, in order.
    pub fn cuts(&self) -> &[Cut] {
        &self.cuts
    }

    /// The source compactions kept for scoring, with their summaries.
    pub fn boundaries(&self) -> impl Iterator<Item = (&Cut, &str)> {
        self.boundaries.iter().map(|(c, s)| (c, s.as_str()))
    }

    /// The cut at item `at`, if any.
    pub fn cut_at(&self, at: usize) -> Option<&Cut> {
        self.cuts.iter().find(|c| c.at == at)
    }

    /// The session's project (its working directory, or the common root of its absolute paths).
    pub fn project(&self) -> Option<&str> {
        self.project.as_deref()
    }

    /// Indices of the anchors present in `text` as whole words, ascending, without duplicates.
    pub fn find_in(&self, text: &str) -> Vec<u32> {
        let Some(matcher) = &self.matcher else {
            return Vec::new();
        };
        let hay = text.as_bytes();
        let mut hits: Vec<u32> = matcher
            .find_overlapping_iter(text)
            .filter(|m| {
                let kind = self.anchors[m.pattern().as_usize()].kind;
                bounded(hay, m.start(), m.end(), kind)
            })
            .map(|m| m.pattern().as_u32())
            .collect();
        hits.sort_unstable();
        hits.dedup();
        hits
    }

    /// How many of `cut`'s anchors the visible `items` hold.
    pub fn held_by<'a>(&self, cut: &Cut, items: impl IntoIterator<Item = &'a Item>) -> Held {
        let mut present = HashSet::new();
        for item in items {
            if item.meta.visibility.model {
                present.extend(self.find_in(&item.plain_text()));
            }
        }
        self.held_in(cut, &present)
    }

    /// How many of `cut`'s anchors the visible `request` items hold, or the items of `history`
    /// whose id the request's text names (what the model can recall by id).
    pub fn held_with_recall(&self, cut: &Cut, request: &[Item], history: &[Item]) -> Held {
        let mut present = HashSet::new();
        let mut named: HashSet<&str> = HashSet::new();
        let texts: Vec<String> = request
            .iter()
            .filter(|i| i.meta.visibility.model)
            .map(Item::plain_text)
            .collect();
        for text in &texts {
            present.extend(self.find_in(text));
            named.extend(
                text.split(|c: char| {
                    !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '~')
                })
                .filter(|w| w.len() >= 6),
            );
        }
        for item in history {
            if named.contains(item.meta.id.as_str()) {
                present.extend(self.find_in(&item.plain_text()));
            }
        }
        self.held_in(cut, &present)
    }

    /// How many of `cut`'s anchors the set `present` holds.
    pub fn held_in(&self, cut: &Cut, present: &HashSet<u32>) -> Held {
        Held {
            expected: cut.anchors.len() as u32,
            present: cut.anchors.iter().filter(|a| present.contains(a)).count() as u32,
        }
    }

    /// Removes the anchors in `generic` (by text) from every cut; cuts left with none are dropped.
    fn drop_anchors(&mut self, generic: &HashSet<String>) {
        let dropped: HashSet<u32> = self
            .anchors
            .iter()
            .enumerate()
            .filter(|(_, a)| generic.contains(&a.text))
            .map(|(i, _)| i as u32)
            .collect();
        if dropped.is_empty() {
            return;
        }
        for c in &mut self.cuts {
            c.anchors.retain(|a| !dropped.contains(a));
        }
        self.cuts.retain(|c| !c.anchors.is_empty());
        for (c, _) in &mut self.boundaries {
            c.anchors.retain(|a| !dropped.contains(a));
        }
        self.boundaries.retain(|(c, _)| !c.anchors.is_empty());
    }
}

/// Drops, from every set, the anchors used in sessions of [`GENERIC_PROJECTS`] or more different
/// projects. A session whose project is unknown counts as a project of its own (`fallback` names it).
pub fn prune_generic<'a>(sets: impl IntoIterator<Item = (&'a mut ContinuationSet, &'a str)>) {
    let mut sets: Vec<(&mut ContinuationSet, &str)> = sets.into_iter().collect();
    let mut projects: HashMap<String, HashSet<String>> = HashMap::new();
    for (set, fallback) in &sets {
        let project = set
            .project
            .clone()
            .unwrap_or_else(|| format!("#{fallback}"));
        let used: HashSet<u32> = set
            .cuts
            .iter()
            .chain(set.boundaries.iter().map(|(c, _)| c))
            .flat_map(|c| c.anchors.iter().copied())
            .collect();
        for a in used {
            projects
                .entry(set.anchors[a as usize].text.clone())
                .or_default()
                .insert(project.clone());
        }
    }
    let generic: HashSet<String> = projects
        .into_iter()
        .filter(|(_, p)| p.len() >= GENERIC_PROJECTS)
        .map(|(a, _)| a)
        .collect();
    for (set, _) in &mut sets {
        set.drop_anchors(&generic);
    }
}

/// The context a naive compaction would keep within `budget` tokens (including `fixed_tokens`):
/// the leading system messages and the first user message, then the newest whole items of
/// `history` that fit, newest first, stopping at the first that does not.
pub fn tail_within<'a>(
    history: &'a [Item],
    counter: &TokenCounter,
    fixed_tokens: usize,
    budget: usize,
) -> Vec<&'a Item> {
    let visible: Vec<&Item> = history.iter().filter(|i| i.meta.visibility.model).collect();
    let mut head = 0;
    while head < visible.len() && is_system(visible[head]) {
        head += 1;
    }
    if let Some(first_user) = visible[head..].iter().position(|i| is_user_message(i)) {
        head += first_user + 1;
    }
    let mut used = fixed_tokens;
    let mut out: Vec<&Item> = Vec::new();
    for item in &visible[..head] {
        let n = counter.count_item(item);
        if used + n > budget {
            break;
        }
        used += n;
        out.push(item);
    }
    for item in visible[head..].iter().rev() {
        let n = counter.count_item(item);
        if used + n > budget {
            break;
        }
        used += n;
        out.push(item);
    }
    out
}

fn is_system(item: &Item) -> bool {
    matches!(item.body(), ItemBody::Message(m) if matches!(m.role, Role::System | Role::Developer))
}

fn tool_calls(items: &[Item]) -> Vec<usize> {
    items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.meta.visibility.model && matches!(i.body(), ItemBody::ToolCall(_)))
        .map(|(idx, _)| idx)
        .collect()
}

/// The call point whose count of earlier tool calls is nearest `share` of all tool calls, with that
/// count.
fn nearest_point(points: &[usize], calls: &[usize], share: f64) -> Option<(usize, usize)> {
    let goal = (share * calls.len() as f64).round() as usize;
    points
        .iter()
        .map(|&p| (p, calls.partition_point(|&c| c < p)))
        .min_by_key(|&(p, before)| (before.abs_diff(goal), p))
}

fn build_matcher(anchors: &[Anchor]) -> Option<AhoCorasick> {
    if anchors.is_empty() {
        None
    } else {
        AhoCorasick::new(anchors.iter().map(|a| a.text.as_str())).ok()
    }
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// True when the match `start..end` of an anchor of `kind` stands as a whole word in `hay`.
fn bounded(hay: &[u8], start: usize, end: usize, kind: AnchorKind) -> bool {
    let before = start.checked_sub(1).map(|i| hay[i]);
    let after = hay.get(end).copied();
    match kind {
        AnchorKind::Identifier => {
            !before.is_some_and(is_word_byte) && !after.is_some_and(is_word_byte)
        }
        // A relative path inside an absolute one counts; a longer file name does not.
        AnchorKind::Path => {
            !before.is_some_and(|b| is_word_byte(b) || b == b'-' || b == b'.')
                && !after.is_some_and(is_word_byte)
        }
        AnchorKind::Url => !after.is_some_and(|b| is_word_byte(b) || b == b'/'),
    }
}

/// Anchors collected so far, deduplicated by text.
#[derive(Default)]
struct AnchorTable {
    anchors: Vec<Anchor>,
    index: HashMap<String, u32>,
}

impl AnchorTable {
    fn from_anchors(anchors: &[Anchor]) -> Self {
        let mut t = AnchorTable::default();
        for a in anchors {
            t.add(a.text.clone(), a.kind);
        }
        t
    }

    fn add(&mut self, text: String, kind: AnchorKind) -> u32 {
        if let Some(&i) = self.index.get(&text) {
            return i;
        }
        let i = self.anchors.len() as u32;
        self.index.insert(text.clone(), i);
        self.anchors.push(Anchor { text, kind });
        i
    }

    /// The anchors used by the tool calls and assistant text of `span`, deduplicated.
    fn collect(&mut self, span: &[Item]) -> Vec<u32> {
        let mut found: Vec<(String, AnchorKind)> = Vec::new();
        for item in span {
            if !item.meta.visibility.model {
                continue;
            }
            match item.body() {
                ItemBody::ToolCall(call) => match call.arguments.to_value() {
                    Some(value @ (Value::Object(_) | Value::Array(_))) => {
                        walk(&value, None, &mut found);
                    }
                    Some(Value::String(s)) => refs_or_patch(&s, &mut found),
                    _ => refs_or_patch(&call.arguments.to_text(), &mut found),
                },
                ItemBody::Message(m) if m.role == Role::Assistant => {
                    assistant_refs(&item.plain_text(), &mut found);
                }
                _ => {}
            }
        }
        let mut out: Vec<u32> = found.into_iter().map(|(t, k)| self.add(t, k)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Walks a JSON argument value, taking references from every string not under a writing key.
fn walk(value: &Value, key: Option<&str>, out: &mut Vec<(String, AnchorKind)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                walk(v, Some(k), out);
            }
        }
        Value::Array(values) => values.iter().for_each(|v| walk(v, key, out)),
        Value::String(s) => {
            let writing =
                key.is_some_and(|k| WRITING_KEYS.contains(&k.to_ascii_lowercase().as_str()));
            if !writing {
                refs_or_patch(s, out);
            }
        }
        _ => {}
    }
}

fn is_patch(s: &str) -> bool {
    s.contains("*** Begin Patch") || s.starts_with("diff --git") || s.contains("\n+++ ")
}

fn refs_or_patch(s: &str, out: &mut Vec<(String, AnchorKind)>) {
    if is_patch(s) {
        patch_refs(s, out);
    } else {
        refs_in(s, false, out);
    }
}

/// A patch: the files it names, and the references on its context and removed lines (its added
/// lines are new text).
fn patch_refs(patch: &str, out: &mut Vec<(String, AnchorKind)>) {
    for line in patch.lines() {
        let header = [
            "*** Update File:",
            "*** Delete File:",
            "*** Add File:",
            "*** Move to:",
            "+++ b/",
            "--- a/",
            "+++ ",
            "--- ",
        ]
        .iter()
        .find_map(|h| line.strip_prefix(h));
        if let Some(path) = header {
            path_anchor(path.trim(), out);
        } else if let Some(rest) = line.strip_prefix("@@") {
            refs_in(rest, false, out);
        } else if line.starts_with('+') || line.starts_with("***") {
            continue;
        } else if let Some(rest) = line.strip_prefix('-').or_else(|| line.strip_prefix(' ')) {
            refs_in(rest, false, out);
        }
    }
}

/// Assistant prose: paths and URLs anywhere, identifiers only inside inline code spans (fenced blocks
/// are code being written).
fn assistant_refs(text: &str, out: &mut Vec<(String, AnchorKind)>) {
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        refs_in(line, true, out);
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 1 {
                refs_in(span, false, out);
            }
        }
    }
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || "\"'`()[]{}<>,;|=&$!*?^\\#%".contains(c)
}

/// References in free text: URLs, `host:port`, paths and file names, and (unless `paths_only`)
/// identifiers.
fn refs_in(s: &str, paths_only: bool, out: &mut Vec<(String, AnchorKind)>) {
    for raw in s.split(is_separator) {
        let token = raw.trim_matches(|c: char| ".,:;".contains(c));
        if token.len() < MIN_ANCHOR_BYTES || token.len() > MAX_ANCHOR_BYTES {
            continue;
        }
        if let Some(i) = token.find("://") {
            if token[..i].chars().all(|c| c.is_ascii_alphabetic()) && token.len() > i + 4 {
                out.push((token.to_owned(), AnchorKind::Url));
            }
            continue;
        }
        if is_host_port(token) {
            out.push((token.to_owned(), AnchorKind::Url));
            continue;
        }
        if token.starts_with('-') {
            // A flag: its value, if any, follows `=` (already split off).
            continue;
        }
        if token.contains('/') || is_file_name(token) {
            path_anchor(token, out);
            continue;
        }
        if paths_only {
            continue;
        }
        // Hyphenated names (packages, crates, branches, CLI subcommands) are kept whole.
        for part in token.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
            let part = part.trim_matches('-');
            if part.contains('-') {
                if is_hyphenated(part) {
                    out.push((part.to_owned(), AnchorKind::Identifier));
                }
            } else if is_identifier(part) {
                out.push((part.to_owned(), AnchorKind::Identifier));
            }
        }
    }
}

fn path_anchor(raw: &str, out: &mut Vec<(String, AnchorKind)>) {
    let mut p = raw.trim_matches(|c: char| ".,:;'\"`".contains(c) || c.is_whitespace());
    // `file.rs:42` or `file.rs:42:7`: the location is not part of the path.
    while let Some((head, tail)) = p.rsplit_once(':') {
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            p = head;
        } else {
            break;
        }
    }
    let p = p.strip_prefix("./").unwrap_or(p).trim_end_matches('/');
    if p.len() < MIN_ANCHOR_BYTES
        || p.len() > MAX_ANCHOR_BYTES
        || p.contains(char::is_whitespace)
        || p.starts_with("//")
        || !p.bytes().any(|b| b.is_ascii_alphabetic())
        || SYSTEM_PATHS.iter().any(|s| p.starts_with(s))
        || !p.split('/').any(|seg| seg.len() >= 2)
    {
        return;
    }
    out.push((p.to_owned(), AnchorKind::Path));
}

fn is_file_name(token: &str) -> bool {
    let Some((stem, ext)) = token.rsplit_once('.') else {
        return false;
    };
    stem.len() >= 2
        && stem
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        && FILE_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str())
}

fn is_host_port(token: &str) -> bool {
    let Some((host, port)) = token.rsplit_once(':') else {
        return false;
    };
    (2..=5).contains(&port.len())
        && port.bytes().all(|b| b.is_ascii_digit())
        && !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
        && (host == "localhost" || host.contains('.'))
}

/// A hyphenated name such as `compact-core`: word-like pieces, at least one of them not generic.
fn is_hyphenated(part: &str) -> bool {
    (MIN_ANCHOR_BYTES..=80).contains(&part.len())
        && part.as_bytes()[0].is_ascii_alphabetic()
        && part
            .split('-')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

fn is_identifier(part: &str) -> bool {
    let bytes = part.as_bytes();
    if bytes.len() < MIN_ANCHOR_BYTES
        || bytes.len() > 80
        || !(bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        || GENERIC_WORDS.contains(&part.to_ascii_lowercase().as_str())
    {
        return false;
    }
    let code_like = part.contains('_')
        || bytes[1..].iter().any(u8::is_ascii_uppercase)
        || bytes.iter().any(u8::is_ascii_digit);
    code_like || bytes.len() >= MIN_PLAIN_WORD
}

/// The session's project: the working directory a harness announced (`<cwd>` in Codex's environment
/// context, `cwd` in a system prompt line), else the most common three-level root of the absolute
/// paths its tool calls use.
fn project_of(conv: &Conversation) -> Option<String> {
    for item in conv.items.iter().take(50) {
        if let ItemBody::Message(_) = item.body() {
            let text = item.plain_text();
            if let Some(rest) = text.split("<cwd>").nth(1) {
                if let Some(cwd) = rest.split("</cwd>").next() {
                    return Some(cwd.trim().to_owned());
                }
            }
        }
    }
    let mut roots: BTreeMap<String, usize> = BTreeMap::new();
    for item in &conv.items {
        if let ItemBody::ToolCall(call) = item.body() {
            let text = call.arguments.to_text();
            for token in text.split(is_separator) {
                if token.starts_with('/') && !SYSTEM_PATHS.iter().any(|s| token.starts_with(s)) {
                    let root: Vec<&str> = token.split('/').take(4).collect();
                    if root.len() == 4 {
                        *roots.entry(root.join("/")).or_default() += 1;
                    }
                }
            }
        }
    }
    roots
        .into_iter()
        .max_by_key(|(root, n)| (*n, std::cmp::Reverse(root.clone())))
        .map(|(root, _)| root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use compact_core::model::{ToolCall, ToolResult};
    use compact_core::tokens::Encoding;
    use serde_json::json;

    fn call(id: &str, name: &str, args: Value) -> Item {
        Item::new(ItemBody::ToolCall(ToolCall::function(id, name, args)))
    }

    fn result(id: &str, text: &str) -> Item {
        Item::new(ItemBody::ToolResult(ToolResult::text(id, text)))
    }

    fn anchors_of(items: &[Item]) -> Vec<String> {
        let mut t = AnchorTable::default();
        let ids = t.collect(items);
        let mut out: Vec<String> = ids
            .iter()
            .map(|&i| t.anchors[i as usize].text.clone())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn references_are_taken_and_written_text_is_not() {
        let items = vec![
            call(
                "a",
                "Edit",
                json!({"file_path": "/repo/src/budget.rs", "old_string": "fn target_pct(x)", "new_string": "fn brand_new_helper()"}),
            ),
            call("b", "Bash", json!({"command": "cargo nextest run -p compact-core --lib partition_tests"})),
            call("c", "Write", json!({"file_path": "/repo/notes.md", "content": "invented_symbol"})),
            call("d", "WebFetch", json!({"url": "https://docs.rs/aho-corasick/latest/"})),
            call(
                "e",
                "apply_patch",
                json!({"input": "*** Begin Patch\n*** Update File: src/lib.rs\n@@ fn survey_of\n-old_line_name\n+added_only_name\n context_name\n*** End Patch"}),
            ),
            Item::text(Role::Assistant, "Next I check `Survey::of` in crates/core/src/partition.rs and localhost:8080 plainword"),
        ];
        let got = anchors_of(&items);
        for want in [
            "/repo/src/budget.rs",
            "target_pct",
            "compact-core",
            "partition_tests",
            "/repo/notes.md",
            "https://docs.rs/aho-corasick/latest/",
            "src/lib.rs",
            "survey_of",
            "old_line_name",
            "context_name",
            "Survey",
            "crates/core/src/partition.rs",
            "localhost:8080",
        ] {
            assert!(got.iter().any(|g| g == want), "{want} missing from {got:?}");
        }
        for absent in [
            "brand_new_helper",
            "invented_symbol",
            "added_only_name",
            "cargo",
            "plainword",
        ] {
            assert!(!got.iter().any(|g| g == absent), "{absent} taken: {got:?}");
        }
    }

    #[test]
    fn whole_words_only() {
        let mut table = AnchorTable::default();
        table.add("parse_line".into(), AnchorKind::Identifier);
        table.add("src/lib.rs".into(), AnchorKind::Path);
        let set = ContinuationSet {
            matcher: build_matcher(&table.anchors),
            anchors: table.anchors,
            ..ContinuationSet::default()
        };
        assert!(set.find_in("calls parse_lines and xsrc/lib.rsx").is_empty());
        assert_eq!(
            set.find_in("parse_line() in /repo/src/lib.rs:4"),
            vec![0, 1]
        );
    }

    fn long_session(tool_calls: usize) -> Conversation {
        let mut conv = Conversation::default();
        conv.push(Item::text(Role::System, "You are a coding agent."));
        conv.push(Item::text(Role::User, "Fix the parser in src/parser.rs"));
        for i in 0..tool_calls {
            let id = format!("c{i}");
            let file = format!("src/module_{}.rs", i % 7);
            conv.push(call(&id, "Read", json!({"file_path": file})));
            conv.push(result(
                &id,
                &format!("fn helper_{i}() {{}}\n{}", "filler text ".repeat(200)),
            ));
        }
        conv
    }

    #[test]
    fn anchors_in_items_the_request_names_by_id_are_recallable() {
        let counter = TokenCounter::new(Encoding::O200kBase);
        let mut conv = long_session(160);
        for (i, item) in conv.items.iter_mut().enumerate() {
            item.meta.id = compact_core::model::ItemId::new(format!("item-{i:04}"));
        }
        let set = ContinuationSet::derive(&conv, &counter, 0, 4_000);
        let cut = &set.cuts()[0];
        let history = &conv.items[..cut.at];
        let bare = vec![conv.items[0].clone(), conv.items[1].clone()];
        let held = set.held_by(cut, &bare);
        assert!(held.present < held.expected);
        // Naming nothing recalls nothing more.
        assert_eq!(set.held_with_recall(cut, &bare, history), held);
        // A stub naming every earlier item makes every anchor recallable.
        let ids: Vec<String> = history
            .iter()
            .map(|i| format!("recall `{}`", i.meta.id))
            .collect();
        let mut named = bare.clone();
        named.push(Item::text(Role::User, ids.join("; ")));
        assert_eq!(set.held_by(cut, &named), held, "ids are not anchors");
        let recallable = set.held_with_recall(cut, &named, history);
        assert_eq!(recallable.present, recallable.expected);
    }

    #[test]
    fn cuts_need_a_history_over_the_budget_and_calls_after() {
        let counter = TokenCounter::new(Encoding::O200kBase);
        // 160 calls: the last cut (90%) still has 15 calls after it.
        let conv = long_session(160);
        let set = ContinuationSet::derive(&conv, &counter, 0, 4_000);
        assert_eq!(set.cuts().len(), CUT_SHARES.len());
        for cut in set.cuts() {
            let texts: Vec<&str> = cut
                .anchors
                .iter()
                .map(|&a| set.anchors()[a as usize].text.as_str())
                .collect();
            // Every module file was read before the cut, so the next reads are all anchors.
            assert!(
                texts.iter().any(|t| t.starts_with("src/module_")),
                "{texts:?}"
            );
        }
        // A budget the whole session fits: no compaction was needed, so no cut.
        let roomy = ContinuationSet::derive(&conv, &counter, 0, 10_000_000);
        assert!(roomy.cuts().is_empty());
        // Fewer calls than a cut needs after it.
        let short = ContinuationSet::derive(&long_session(12), &counter, 0, 100);
        assert!(short.cuts().is_empty());
    }

    #[test]
    fn tails_keep_the_first_request_and_the_newest_items() {
        let counter = TokenCounter::new(Encoding::O200kBase);
        let conv = long_session(30);
        let kept = tail_within(&conv.items, &counter, 0, 2_000);
        assert!(matches!(kept[0].body(), ItemBody::Message(m) if m.role == Role::System));
        assert!(kept[1].plain_text().contains("Fix the parser"));
        assert!(conv
            .items
            .last()
            .is_some_and(|last| std::ptr::eq(kept[2], last)));
        let total: usize = kept.iter().map(|i| counter.count_item(i)).sum();
        assert!(total <= 2_000);
        assert!(kept.len() < conv.items.len());
    }

    #[test]
    fn generic_anchors_are_pruned_across_projects() {
        let counter = TokenCounter::new(Encoding::O200kBase);
        let mut sets: Vec<ContinuationSet> = (0..3)
            .map(|_| ContinuationSet::derive(&long_session(60), &counter, 0, 4_000))
            .collect();
        let before: usize = sets.iter().map(|s| s.cuts().len()).sum();
        assert!(before > 0);
        let names = ["a", "b", "c"];
        // Same anchors in three sessions without a known project: each is its own project.
        prune_generic(sets.iter_mut().zip(names));
        assert!(sets.iter().all(|s| s.cuts().is_empty()));
    }
}
