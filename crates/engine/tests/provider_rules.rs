//! Every request Compact sends must pass the provider-rules validator
//! ([`compact_formats::validate`]), which reads only the wire JSON:
//!
//! - the corpus sweep: every transcript of the shared corpus (imported once, leniently), compacted by
//!   every strategy at 8k / 16k / 32k / 128k and written as Anthropic, Chat and Responses requests,
//!   exactly as `compactctl compact --to <format>` writes them (skipped, with a note, when the corpus
//!   is absent): zero violations;
//! - a property over generated conversations with parallel tool calls, unanswered calls, results
//!   without a call, items hidden from the model and reasoning.
//!
//! Counting uses the calibrated estimator (the counter Compact uses for Claude models): which items
//! a strategy keeps depends on the counts, but the shape rules checked here do not, and exact counting
//! is tested elsewhere. Development aids: `COMPACT_SWEEP_ONLY=<text>` sweeps only the files whose path
//! contains it; `COMPACT_SWEEP_REPORT=<path>` writes every violation found there as JSON lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{
    Arguments, Conversation, Envelope, Format, Item, ItemBody, Part, Reasoning, Role, ToolCall,
    ToolCallKind, ToolResult,
};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{block_on, CompactError, Compactor, DeterministicSummarizer};
use compact_formats::import::{import, ImportMode, ImportOptions};
use compact_formats::validate::{validate_against, Violation};
use compact_formats::wire::encode;
use proptest::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The output formats.
const TARGETS: [Format; 3] = [
    Format::Anthropic,
    Format::OpenAiChat,
    Format::OpenAiResponses,
];

fn counter() -> TokenCounter {
    TokenCounter::new(Encoding::Estimate)
}

// ---- What `compactctl compact` sends ----------------------------------------------------------------

/// What the compactor made of a conversation.
enum Outcome {
    /// Compacted (normalised for the input's provider).
    Compacted(Conversation),
    /// Already fitting: sent unchanged but normalised.
    Unchanged(Conversation),
    /// The typed refusal: the pinned floor does not fit the budget.
    Refused,
    /// Any other error: a failure of the sweep.
    Failed(String),
}

/// Compacts `conv` as `compactctl compact` does: an input that already fits (no progress possible) is
/// sent unchanged, normalised.
fn compact(compactor: &Compactor, conv: &Conversation) -> Outcome {
    match block_on(compactor.compact(conv)) {
        Ok(done) => Outcome::Compacted(done.conversation),
        Err(CompactError::NoProgress { before, .. }) if compactor.budget().fits(before) => {
            match block_on(compactor.preflight(conv)) {
                Ok(sent) => Outcome::Unchanged(sent.conversation),
                Err(e) => Outcome::Failed(e.to_string()),
            }
        }
        Err(CompactError::InsufficientBudget { .. }) => Outcome::Refused,
        // The provider's own compaction call is sent as it is.
        Err(CompactError::ProviderCompactionCall(_)) => match block_on(compactor.preflight(conv)) {
            Ok(sent) => Outcome::Unchanged(sent.conversation),
            Err(e) => Outcome::Failed(e.to_string()),
        },
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// The request `compactctl compact --to target` writes for `out`, the compactor's result for `input`:
/// normalised again for the target's provider when its rules differ from the input's.
fn request(
    compactor: &Compactor,
    input: &Conversation,
    out: &Conversation,
    target: Format,
) -> Value {
    let rules = ProviderRules::for_format(target);
    if rules == compactor.rules_for(input) {
        encode(out, target).unwrap().value
    } else {
        encode(&normalize(out, &rules).conversation, target)
            .unwrap()
            .value
    }
}

fn compactor(window: usize, strategy: StrategyName) -> Compactor {
    Compactor::new(
        Policy::for_window(window),
        Arc::new(DeterministicSummarizer),
        counter(),
    )
    .unwrap()
    .with_strategy(strategy)
}

// ---- The corpus sweep ------------------------------------------------------------------------------

#[path = "../../core/tests/fixtures/corpus.rs"]
mod corpus;
#[path = "../../core/tests/fixtures/strategy/parse.rs"]
mod fixture;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");

/// Windows swept: from tight (every strategy must summarise or drop) to roomy (most inputs fit).
const WINDOWS: [usize; 4] = [8_000, 16_000, 32_000, 128_000];

/// Threads: CI machines have two cores.
const THREADS: usize = 2;

/// Violations printed in full per (input format, target, rule) group.
const EXAMPLES: usize = 2;

/// One imported corpus file.
struct Source {
    /// Path under the corpus directory.
    name: String,
    format: Format,
    conversation: Conversation,
    /// The uncompacted conversation written for each target: compaction may drop reasoning but never
    /// change it, so every thinking block sent must be found here unchanged.
    originals: Vec<Value>,
}

/// One violation and the run that produced it.
struct Finding {
    file: String,
    input: Format,
    strategy: StrategyName,
    window: usize,
    target: Format,
    violation: Violation,
}

/// What part of the sweep produced.
#[derive(Default)]
struct Tally {
    runs: usize,
    compacted: usize,
    unchanged: usize,
    refused: usize,
    failures: Vec<String>,
    findings: Vec<Finding>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.runs += other.runs;
        self.compacted += other.compacted;
        self.unchanged += other.unchanged;
        self.refused += other.refused;
        self.failures.extend(other.failures);
        self.findings.extend(other.findings);
    }
}

/// Every file of the corpus's format directories, largest first.
fn corpus_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = corpus::files(dir);
    files.sort_by_key(|p| std::cmp::Reverse(std::fs::metadata(p).map_or(0, |m| m.len())));
    if let Ok(only) = std::env::var("COMPACT_SWEEP_ONLY") {
        files.retain(|p| p.to_string_lossy().contains(&only));
    }
    files
}

fn load(path: &Path) -> Result<Source, String> {
    let name = path
        .strip_prefix(CORPUS)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    let bytes = std::fs::read(path).unwrap();
    let options = ImportOptions {
        format: None,
        mode: ImportMode::Lenient,
    };
    let imported = import(&bytes, &name, &options).map_err(|e| format!("{name}: {e}"))?;
    let conversation = imported.conversation;
    // Fill the items' token memos once, so every run's copies start counted.
    counter().total(&conversation);
    let originals = TARGETS
        .iter()
        .map(|&t| encode(&conversation, t).unwrap().value)
        .collect();
    Ok(Source {
        name,
        format: imported.format,
        conversation,
        originals,
    })
}

/// Runs `f` on every element of `items` on [`THREADS`] threads, taking them in order; results in
/// the order of `items`.
fn parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new(items.iter().map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(k) else { break };
                let r = f(item);
                results.lock().unwrap()[k] = Some(r);
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

/// Every window and target of one strategy on one file.
fn sweep(source: &Source, strategy: StrategyName) -> Tally {
    let mut tally = Tally::default();
    for window in WINDOWS {
        let compactor = compactor(window, strategy);
        tally.runs += 1;
        let out = match compact(&compactor, &source.conversation) {
            Outcome::Compacted(out) => {
                tally.compacted += 1;
                out
            }
            Outcome::Unchanged(out) => {
                tally.unchanged += 1;
                out
            }
            Outcome::Refused => {
                tally.refused += 1;
                continue;
            }
            Outcome::Failed(e) => {
                let at = format!("{} / {strategy} / {window}", source.name);
                tally.failures.push(format!("{at}: {e}"));
                continue;
            }
        };
        for (&target, original) in TARGETS.iter().zip(&source.originals) {
            let sent = request(&compactor, &source.conversation, &out, target);
            for violation in validate_against(&sent, original, target) {
                tally.findings.push(Finding {
                    file: source.name.clone(),
                    input: source.format,
                    strategy,
                    window,
                    target,
                    violation,
                });
            }
        }
    }
    tally
}

fn report(total: &Tally, files: usize) {
    println!(
        "swept {files} files: {} runs ({} compacted, {} already fitting, {} refused for insufficient budget), {} requests validated, {} violations",
        total.runs,
        total.compacted,
        total.unchanged,
        total.refused,
        (total.compacted + total.unchanged) * TARGETS.len(),
        total.findings.len()
    );
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Finding>> = BTreeMap::new();
    for f in &total.findings {
        let key = (f.input.name(), f.target.name(), f.violation.rule.as_str());
        groups.entry(key).or_default().push(f);
    }
    for ((input, target, rule), list) in &groups {
        let files: BTreeSet<&str> = list.iter().map(|f| f.file.as_str()).collect();
        println!(
            "  {input} -> {target}: {rule}: {} in {} files",
            list.len(),
            files.len()
        );
        for f in list.iter().take(EXAMPLES) {
            println!(
                "      {} [{} @ {}] {}",
                f.file, f.strategy, f.window, f.violation
            );
        }
    }
    if let Ok(path) = std::env::var("COMPACT_SWEEP_REPORT") {
        let lines: Vec<String> = total
            .findings
            .iter()
            .map(|f| {
                serde_json::json!({
                    "file": f.file, "input": f.input.name(), "strategy": f.strategy.as_str(),
                    "window": f.window, "target": f.target.name(), "path": f.violation.path,
                    "rule": f.violation.rule.as_str(), "message": f.violation.message,
                })
                .to_string()
            })
            .collect();
        std::fs::write(path, lines.join("\n")).unwrap();
    }
}

#[test]
fn every_compacted_corpus_request_passes_the_provider_rules() {
    if corpus::dir().is_none() {
        return;
    }
    let files = corpus_files(Path::new(CORPUS));
    let mut sources = Vec::new();
    for loaded in parallel(&files, |p| load(p)) {
        match loaded {
            Ok(source) => sources.push(source),
            // Detection and the Claude Code importer are being fixed separately: a file that does not
            // import is not swept, and is named.
            Err(e) => println!("not swept: {e}"),
        }
    }
    // One unit of work per (file, strategy): a large file does not leave a thread idle.
    let units: Vec<(usize, StrategyName)> = (0..sources.len())
        .flat_map(|s| StrategyName::ALL.iter().map(move |&n| (s, n)))
        .collect();
    let mut total = Tally::default();
    for tally in parallel(&units, |&(s, strategy)| sweep(&sources[s], strategy)) {
        total.add(tally);
    }
    report(&total, sources.len());
    assert!(
        total.failures.is_empty(),
        "compaction failed:\n{}",
        total.failures.join("\n")
    );

    let violations: Vec<String> = total
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} {} {}",
                f.file,
                f.target.name(),
                f.violation.rule.as_str()
            )
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(
        violations.is_empty(),
        "provider-rule violations (see the report above):\n{}",
        violations.join("\n")
    );
}

// ---- Provider compaction in every place the providers allow ----------------------------------------

/// Deterministic filler text: `words` words from a small vocabulary of agent output.
fn filler(seed: usize, words: usize) -> String {
    const VOCABULARY: [&str; 16] = [
        "error",
        "src/lib.rs",
        "warning:",
        "fn",
        "parse_config",
        "line",
        "42",
        "cargo",
        "test",
        "passed",
        "failed",
        "Result<()>",
        "let",
        "=",
        "match",
        "None",
    ];
    let mut state =
        (seed as u64).wrapping_mul(6_364_136_223_846_793_005) ^ 1_442_695_040_888_963_407;
    let mut out = Vec::with_capacity(words);
    for k in 0..words {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        out.push(VOCABULARY[(state >> 60) as usize]);
        if k % 12 == 11 {
            out.push("\n");
        }
    }
    out.join(" ")
}

/// Turns of tool use in a generated session (about 9k tokens: compacted at 8k and 16k).
const TURNS: usize = 24;
/// Words of each tool output.
const OUTPUT_WORDS: usize = 260;

fn anthropic_block(k: usize, readable: bool) -> Value {
    if readable {
        serde_json::json!({"type": "compaction", "content": format!("Summary {k}: {}", filler(900 + k, 40)), "signature": format!("c2lnLXt7{k}")})
    } else {
        serde_json::json!({"type": "compaction", "content": null, "encrypted_content": format!("ZW5j{k}"), "signature": format!("c2ln{k}"), "x_new": {"k": k}})
    }
}

/// An Anthropic session of [`TURNS`] tool turns with a compaction block opening the assistant
/// message of each turn in `blocks_at`; threshold mode when `threshold`, else one on-demand block
/// opens the request (`blocks_at` ignored).
fn anthropic_session(blocks_at: &[usize], threshold: bool, in_user: bool) -> Value {
    let mut messages = Vec::new();
    if threshold {
        messages
            .push(serde_json::json!({"role": "user", "content": "Fix the failing config tests."}));
    } else if in_user {
        messages.push(serde_json::json!({"role": "user", "content": [anthropic_block(0, true), {"type": "text", "text": "Fix the failing config tests."}]}));
    } else {
        messages
            .push(serde_json::json!({"role": "assistant", "content": [anthropic_block(0, true)]}));
        messages
            .push(serde_json::json!({"role": "user", "content": "Fix the failing config tests."}));
    }
    for t in 0..TURNS {
        let mut content = Vec::new();
        if threshold && blocks_at.contains(&t) {
            content.push(anthropic_block(t + 1, t % 2 == 0));
        }
        content.push(serde_json::json!({"type": "text", "text": format!("Step {t}.")}));
        content.push(serde_json::json!({"type": "tool_use", "id": format!("toolu_{t}"), "name": "Bash", "input": {"command": format!("cargo test case_{t}")}}));
        messages.push(serde_json::json!({"role": "assistant", "content": content}));
        messages.push(serde_json::json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{t}"), "content": filler(t, OUTPUT_WORDS)}]}));
    }
    messages.push(serde_json::json!({"role": "user", "content": "Continue."}));
    let mut request = serde_json::json!({"model": "claude-sonnet-4-5", "max_tokens": 2048, "system": "You are a coding agent.", "messages": messages});
    if threshold {
        request["context_management"] = serde_json::json!({"edits": [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50000}}]});
    }
    request
}

/// A Responses session of [`TURNS`] tool turns with a `compaction` item before the turns in
/// `items_at` (a compact-endpoint shape `[user messages..., compaction]` when `items_at` holds 0),
/// ending in a `compaction_trigger` when `trigger`.
fn responses_session(items_at: &[usize], trigger: bool) -> Value {
    let mut input = vec![
        serde_json::json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox: workspace-write."}]}),
        serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Fix the failing config tests."}]}),
    ];
    for t in 0..TURNS {
        if items_at.contains(&t) {
            input.push(serde_json::json!({"type": "compaction", "id": format!("cmp_{t}"), "encrypted_content": format!("Z0FBQU{t}{}", "x".repeat(40))}));
        }
        input.push(serde_json::json!({"type": "function_call", "call_id": format!("call_{t}"), "name": "shell", "arguments": format!("{{\"command\":[\"cargo\",\"test\",\"case_{t}\"]}}")}));
        input.push(serde_json::json!({"type": "function_call_output", "call_id": format!("call_{t}"), "output": filler(t, OUTPUT_WORDS)}));
    }
    input.push(serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Continue."}]}));
    if trigger {
        input.push(serde_json::json!({"type": "compaction_trigger"}));
    }
    serde_json::json!({"model": "gpt-5-codex", "instructions": "You are Codex.", "store": false, "stream": true, "input": input})
}

/// The generated sessions: every place a provider allows its compactions.
fn provider_sessions() -> Vec<(String, Format, Value)> {
    let mut out = Vec::new();
    for at in [0, TURNS / 2, TURNS - 1] {
        out.push((
            format!("anthropic threshold block at turn {at}"),
            Format::Anthropic,
            anthropic_session(&[at], true, false),
        ));
        out.push((
            format!("responses item at turn {at}"),
            Format::OpenAiResponses,
            responses_session(&[at], false),
        ));
    }
    out.push((
        "anthropic threshold blocks at three turns".into(),
        Format::Anthropic,
        anthropic_session(&[1, TURNS / 2, TURNS - 2], true, false),
    ));
    out.push((
        "anthropic on-demand block in its own message".into(),
        Format::Anthropic,
        anthropic_session(&[], false, false),
    ));
    out.push((
        "anthropic on-demand block opening the first user message".into(),
        Format::Anthropic,
        anthropic_session(&[], false, true),
    ));
    out.push((
        "responses items at three turns".into(),
        Format::OpenAiResponses,
        responses_session(&[0, TURNS / 2, TURNS - 2], false),
    ));
    out.push((
        "responses in-band trigger".into(),
        Format::OpenAiResponses,
        responses_session(&[TURNS / 2], true),
    ));
    let mut call = anthropic_session(&[], false, false);
    call["compaction"] = serde_json::json!({"type": "summarize"});
    out.push((
        "anthropic on-demand compaction call".into(),
        Format::Anthropic,
        call,
    ));
    out
}

#[test]
fn provider_compactions_in_every_allowed_place_pass_the_provider_rules() {
    let mut sources = Vec::new();
    for (name, format, request) in provider_sessions() {
        assert!(
            compact_formats::validate::validate(&request, format).is_empty(),
            "{name}: the generated request itself breaks a rule: {:?}",
            compact_formats::validate::validate(&request, format)
        );
        let conversation = compact_formats::wire::decode(format, &request).unwrap();
        let originals = TARGETS
            .iter()
            .map(|&t| encode(&conversation, t).unwrap().value)
            .collect();
        sources.push(Source {
            name,
            format,
            conversation,
            originals,
        });
    }
    let units: Vec<(usize, StrategyName)> = (0..sources.len())
        .flat_map(|s| StrategyName::ALL.iter().map(move |&n| (s, n)))
        .collect();
    let mut total = Tally::default();
    for tally in parallel(&units, |&(s, strategy)| sweep(&sources[s], strategy)) {
        total.add(tally);
    }
    report(&total, sources.len());
    assert!(total.failures.is_empty(), "{}", total.failures.join("\n"));
    assert!(
        total.compacted > 0,
        "nothing was compacted: the sweep proves nothing"
    );
    let violations: Vec<String> = total
        .findings
        .iter()
        .map(|f| {
            format!(
                "{} [{} @ {}] -> {}: {}",
                f.file,
                f.strategy,
                f.window,
                f.target.name(),
                f.violation
            )
        })
        .collect();
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

// ---- Claude Code's system message among the messages -----------------------------------------------

/// A request as Claude Code (2.1.328, claude-opus-5-5) sends it: the first user message (system
/// reminders, then the prompt), a `system` message with the environment right after it, then
/// [`TURNS`] turns of signed thinking and a Bash call answered by the user's `tool_result`, the last
/// one marked for caching.
fn claude_code_session() -> Value {
    let mut messages = vec![
        serde_json::json!({"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\nContents of /home/dev/app/CLAUDE.md:\n- Run `cargo test` before committing.\n</system-reminder>\n"},
            {"type": "text", "text": "<system-reminder>\nThe user opened src/config.rs in the IDE.\n</system-reminder>"},
            {"type": "text", "text": "Fix the failing config tests."}
        ]}),
        serde_json::json!({"role": "system", "content": [
            {"type": "text", "text": "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /home/dev/app\n - Is a git repository: true\n - Platform: linux\n", "cache_control": {"type": "ephemeral"}}
        ]}),
    ];
    for t in 0..TURNS {
        messages.push(serde_json::json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("Case {t} next."), "signature": format!("RXFNQ0NrWUlDeGdDS2tE{t}")},
            {"type": "tool_use", "id": format!("toolu_{t:02}"), "name": "Bash",
                "input": {"command": format!("cargo test case_{t}"), "description": format!("Run test case {t}")}}
        ]}));
        messages.push(serde_json::json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("toolu_{t:02}"), "content": filler(t, OUTPUT_WORDS)}
        ]}));
    }
    let last = messages.last_mut().unwrap();
    last["content"][0]["cache_control"] = serde_json::json!({"type": "ephemeral"});
    serde_json::json!({
        "model": "claude-opus-5-5", "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude.", "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
        "tools": [{"name": "Bash", "description": "Executes a bash command.", "input_schema": {"type": "object",
            "properties": {"command": {"type": "string"}, "description": {"type": "string"}}, "required": ["command"]}}],
        "thinking": {"type": "enabled", "budget_tokens": 31999}, "stream": true
    })
}

/// Claude Code's system message is kept like the agent's own instructions: every strategy sends it
/// unchanged, second after the first user message (or what stands for it), in a request that
/// passes the provider rules in every format at every window.
#[test]
fn claude_code_system_message_survives_every_compaction() {
    let input = claude_code_session();
    let env = &input["messages"][1];
    assert_eq!(
        compact_formats::validate::validate(&input, Format::Anthropic),
        vec![]
    );
    let conversation = compact_formats::wire::decode(Format::Anthropic, &input).unwrap();
    let originals = TARGETS
        .iter()
        .map(|&t| encode(&conversation, t).unwrap().value)
        .collect();
    let source = Source {
        name: "claude code session".into(),
        format: Format::Anthropic,
        conversation,
        originals,
    };
    let mut total = Tally::default();
    for tally in parallel(StrategyName::ALL, |&strategy| sweep(&source, strategy)) {
        total.add(tally);
    }
    assert!(total.failures.is_empty(), "{}", total.failures.join("\n"));
    let violations: Vec<String> = total
        .findings
        .iter()
        .map(|f| {
            format!(
                "[{} @ {}] -> {}: {}",
                f.strategy,
                f.window,
                f.target.name(),
                f.violation
            )
        })
        .collect();
    assert!(violations.is_empty(), "{}", violations.join("\n"));
    let bytes = |v: &Value| serde_json::to_string(v).unwrap();
    // Compacted at 8k (it fits the larger windows).
    let window = WINDOWS[0];
    for &strategy in StrategyName::ALL {
        let compactor = compactor(window, strategy);
        let out = match compact(&compactor, &source.conversation) {
            Outcome::Compacted(out) => out,
            Outcome::Refused => continue,
            _ => panic!("{strategy} @ {window}: not compacted"),
        };
        let sent = request(&compactor, &source.conversation, &out, Format::Anthropic);
        let messages = sent["messages"].as_array().unwrap();
        let systems = messages.iter().filter(|m| m["role"] == "system").count();
        assert_eq!(systems, 1, "{strategy}: {sent}");
        assert_eq!(bytes(&messages[1]), bytes(env), "{strategy}");
        assert_eq!(sent["system"], input["system"]);
        assert_ne!(sent, source.originals[0], "{strategy}");
    }
}

// ---- The property over generated conversations -----------------------------------------------------

/// One tool call of a generated turn.
#[derive(Debug, Clone)]
struct CallSpec {
    /// Its result was recorded.
    answered: bool,
    /// Lines of output (outputs are bulky enough to make compaction work).
    lines: usize,
    /// The call and its result are hidden from the model (as before a compaction boundary).
    hidden: bool,
}

/// The reasoning of a generated turn.
#[derive(Debug, Clone, Copy)]
enum Thinking {
    Signed,
    Unsigned,
    Redacted,
}

/// One generated turn: a user message, then the assistant's reasoning, text and parallel calls.
#[derive(Debug, Clone)]
struct TurnSpec {
    user_hidden: bool,
    thinking: Option<Thinking>,
    text: bool,
    /// The assistant text and the reasoning come after the first call rather than before the calls
    /// (interleaved thinking).
    between_calls: bool,
    calls: Vec<CallSpec>,
    /// Results come in the reverse order of their calls.
    reversed: bool,
    /// Results come only after the next user message (as when the user spoke before they arrived).
    late: bool,
    /// A result for a call that was never made follows.
    stray_result: bool,
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (any::<bool>(), 1..120usize, prop::bool::weighted(0.15)).prop_map(
        |(answered, lines, hidden)| CallSpec {
            answered,
            lines,
            hidden,
        },
    )
}

fn turn_spec() -> impl Strategy<Value = TurnSpec> {
    let thinking = prop_oneof![
        2 => Just(None),
        1 => Just(Some(Thinking::Signed)),
        1 => Just(Some(Thinking::Unsigned)),
        1 => Just(Some(Thinking::Redacted)),
    ];
    (
        prop::bool::weighted(0.1),
        thinking,
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(call_spec(), 0..4),
        (any::<bool>(), prop::bool::weighted(0.15)),
        prop::bool::weighted(0.15),
    )
        .prop_map(
            |(
                user_hidden,
                thinking,
                text,
                between_calls,
                calls,
                (reversed, late),
                stray_result,
            )| {
                TurnSpec {
                    user_hidden,
                    thinking,
                    text,
                    between_calls,
                    calls,
                    reversed,
                    late,
                    stray_result,
                }
            },
        )
}

fn tool_call(id: &str) -> Item {
    Item::new(ItemBody::ToolCall(ToolCall {
        call_id: id.to_owned(),
        name: "shell".to_owned(),
        arguments: Arguments::Text(format!("{{\"command\":\"cat src/{id}.rs\"}}")),
        kind: ToolCallKind::Function,
        extra: Default::default(),
    }))
}

fn tool_result(id: &str, lines: usize) -> Item {
    let text: String = (0..lines)
        .map(|l| format!("{id} line {l}: let value_{l} = compute({l}); // checked\n"))
        .collect();
    Item::new(ItemBody::ToolResult(ToolResult {
        call_id: id.to_owned(),
        tool_name: Some("shell".to_owned()),
        parts: vec![Part::text(text)],
        // Some outputs report a failure (their error lines matter to truncation and checkpoints).
        is_error: lines > 100,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Default::default(),
    }))
}

fn hidden(mut item: Item, hide: bool) -> Item {
    item.meta.visibility.model = !hide;
    item
}

/// Gives every item a wire message of its own in `format`, as a transcript that logs one block per
/// record does (Claude Code): consecutive assistant messages the provider may merge or not. Chat has
/// no reasoning, so a Chat conversation loses its reasoning items; other items a request of `format`
/// could not have held that way stay built in memory: the system prompt (a request field of its own
/// in Anthropic and Responses) and unsigned thinking in Anthropic (which requires a signature).
fn one_message_per_item(conv: &mut Conversation, format: Format) {
    if format == Format::OpenAiChat {
        conv.items
            .retain(|i| !matches!(i.body(), ItemBody::Reasoning(_)));
    }
    for (i, item) in conv.items.iter_mut().enumerate() {
        let decodable = match item.body() {
            ItemBody::Message(m) => m.role != Role::System,
            ItemBody::Reasoning(r) => {
                format != Format::Anthropic || r.signature.is_some() || r.redacted
            }
            _ => true,
        };
        if !decodable {
            continue;
        }
        item.meta.origin = Some(format);
        item.meta.envelope = Some(Arc::new(Envelope {
            format: Some(format),
            message: u32::try_from(i).unwrap(),
            ..Envelope::default()
        }));
    }
}

fn conversation(turns: &[TurnSpec], format: Format) -> Conversation {
    let mut conv = Conversation {
        format: Some(format),
        ..Conversation::default()
    };
    conv.push(Item::text(Role::System, "You are a careful coding agent."));
    let mut late: Vec<Item> = Vec::new();
    for (t, turn) in turns.iter().enumerate() {
        let ask = format!("Step {t}: look at module {t} and report what it does.");
        // The newest user message is always sent (hidden items are earlier history).
        let last = t + 1 == turns.len();
        conv.push(hidden(
            Item::text(Role::User, ask),
            turn.user_hidden && !last,
        ));
        for item in late.drain(..) {
            conv.push(item);
        }
        let reasoning = turn.thinking.map(|thinking| {
            let text = format!("I should read module {t} first.");
            let reasoning = match thinking {
                Thinking::Signed => Reasoning {
                    text: Some(text),
                    signature: Some(format!("sig-{t}")),
                    ..Reasoning::default()
                },
                Thinking::Unsigned => Reasoning {
                    text: Some(text),
                    ..Reasoning::default()
                },
                Thinking::Redacted => Reasoning {
                    redacted: true,
                    encrypted: Some(format!("opaque-{t}")),
                    ..Reasoning::default()
                },
            };
            Item::new(ItemBody::Reasoning(reasoning))
        });
        let text = turn
            .text
            .then(|| Item::text(Role::Assistant, format!("Reading module {t} now.")));
        let mut interleaved = Vec::new();
        for item in [reasoning, text].into_iter().flatten() {
            if turn.between_calls && !turn.calls.is_empty() {
                interleaved.push(item);
            } else {
                conv.push(item);
            }
        }
        let ids: Vec<String> = (0..turn.calls.len()).map(|k| format!("c{t}_{k}")).collect();
        for (k, (id, spec)) in ids.iter().zip(&turn.calls).enumerate() {
            conv.push(hidden(tool_call(id), spec.hidden));
            if k == 0 {
                for item in interleaved.drain(..) {
                    conv.push(item);
                }
            }
        }
        let mut answers: Vec<(&String, &CallSpec)> = ids
            .iter()
            .zip(&turn.calls)
            .filter(|(_, s)| s.answered)
            .collect();
        if turn.reversed {
            answers.reverse();
        }
        for (id, spec) in answers {
            let result = hidden(tool_result(id, spec.lines), spec.hidden);
            if turn.late {
                late.push(result);
            } else {
                conv.push(result);
            }
        }
        if turn.stray_result {
            conv.push(tool_result(&format!("ghost{t}"), 3));
        }
    }
    for item in late {
        conv.push(item);
    }
    conv
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fixture::proptest_cases(128), ..ProptestConfig::default() })]

    /// Normalised and compacted by any strategy, then written in any wire format, a conversation with
    /// parallel, unanswered, stray, hidden and reasoning items (built in memory, or as if decoded one
    /// wire message per item) gives requests the provider accepts.
    #[test]
    fn compacted_conversations_pass_the_provider_rules(
        turns in prop::collection::vec(turn_spec(), 1..10),
        format in prop::sample::select(TARGETS.to_vec()),
        window in prop::sample::select(vec![6_000usize, 8_000, 12_000, 64_000]),
        wire_messages in any::<bool>(),
    ) {
        let mut conv = conversation(&turns, format);
        if wire_messages {
            one_message_per_item(&mut conv, format);
        }
        for &strategy in StrategyName::ALL {
            check_strategy(&conv, format, strategy, window)?;
        }
    }
}

/// The requests `strategy` sends for `conv` in every target format pass the provider rules.
fn check_strategy(
    conv: &Conversation,
    format: Format,
    strategy: StrategyName,
    window: usize,
) -> Result<(), TestCaseError> {
    let compactor = compactor(window, strategy);
    let out = match compact(&compactor, conv) {
        Outcome::Compacted(out) | Outcome::Unchanged(out) => out,
        Outcome::Refused => return Ok(()),
        Outcome::Failed(e) => return Err(TestCaseError::fail(e)),
    };
    for target in TARGETS {
        let original = encode(conv, target).unwrap().value;
        let sent = request(&compactor, conv, &out, target);
        let violations = validate_against(&sent, &original, target);
        prop_assert!(
            violations.is_empty(),
            "{} -> {target} ({strategy} @ {window}):\n{}\n{}",
            format,
            violations
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
            serde_json::to_string_pretty(&sent).unwrap()
        );
    }
    Ok(())
}
