//! The structure-aware target: conversations generated from fuzz bytes with `arbitrary` (messages,
//! tool calls with results, parallel calls, reasoning, orphans, items hidden from the model,
//! checkpoints, opaque items), compacted by every strategy as `compactctl compact` does.
//!
//! Checked: no panic; a plan is applied without error (an `ApplyError` is a bug by its own
//! documentation); and, for every wire format the input passes the provider-rules validator in,
//! the request written from the compacted result passes it too (`validate_against`: thinking sent
//! back unchanged).

use arbitrary::Arbitrary;
use compact_core::model::{
    Arguments, Checkpoint, Conversation, Envelope, Format, Item, ItemBody, Opaque, Part, Reasoning,
    Role, ToolCall, ToolCallKind, ToolResult,
};
use compact_core::normalize::{normalize, ProviderRules};
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{block_on, CompactError, Compactor, DeterministicSummarizer};
use compact_formats::validate::{validate, validate_against};
use compact_formats::wire::encode;
use serde_json::{json, Value};
use std::sync::Arc;

/// Turns per conversation and calls per turn, at most (bounded so one input stays fast).
const MAX_TURNS: usize = 16;
const MAX_CALLS: usize = 6;

/// A generated conversation.
#[derive(Debug, Arbitrary)]
pub struct Spec {
    format: WireFormat,
    window: Window,
    /// Every item gets a wire message of its own, as if decoded from a transcript that logs one
    /// block per record.
    wire_messages: bool,
    system: bool,
    turns: Vec<Turn>,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum WireFormat {
    Chat,
    Responses,
    Anthropic,
}

impl WireFormat {
    fn format(self) -> Format {
        match self {
            WireFormat::Chat => Format::OpenAiChat,
            WireFormat::Responses => Format::OpenAiResponses,
            WireFormat::Anthropic => Format::Anthropic,
        }
    }
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Window {
    Tiny,
    Small,
    Medium,
    Large,
}

impl Window {
    fn tokens(self) -> usize {
        match self {
            Window::Tiny => 4_000,
            Window::Small => 8_000,
            Window::Medium => 16_000,
            Window::Large => 64_000,
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Turn {
    /// The user message opening the turn (`None`: the assistant goes on without one).
    user: Option<Text>,
    user_hidden: bool,
    /// A developer message (mid-conversation instructions).
    developer: bool,
    thinking: Option<Thinking>,
    text: Option<Text>,
    /// The assistant text and reasoning come after the first call (interleaved thinking).
    between_calls: bool,
    calls: Vec<Call>,
    /// Results come in the reverse order of their calls.
    reversed: bool,
    /// Results come only after the next turn's user message.
    late: bool,
    /// A result for a call that was never made follows.
    stray_result: bool,
    /// A second result for the first call follows.
    duplicate_result: bool,
    /// A checkpoint (a previous compaction's summary) precedes the turn.
    checkpoint: bool,
    /// An opaque item (a provider item the model knows nothing about) follows.
    opaque: bool,
    protected: bool,
}

/// Text of a size drawn from a few orders of magnitude.
#[derive(Debug, Clone, Copy, Arbitrary)]
struct Text {
    lines: u8,
    long: bool,
    seed: u8,
}

impl Text {
    fn render(self, what: &str) -> String {
        // Up to about 500 lines (some 7k tokens): over the small windows, cheap enough to keep
        // every strategy's run fast.
        let lines = if self.long {
            usize::from(self.lines) * 2
        } else {
            usize::from(self.lines % 8)
        };
        let mut s = format!("{what} {}", self.seed);
        for l in 0..lines {
            s.push_str(&format!(
                "\n{what} line {l}: fn step_{l}() -> u32 {{ {} }}",
                l * usize::from(self.seed)
            ));
        }
        s
    }
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Thinking {
    Signed,
    Unsigned,
    Redacted,
    Summarised,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
struct Call {
    tool: Tool,
    answered: bool,
    output: Text,
    hidden: bool,
    error: bool,
    /// Arguments as a JSON value rather than text.
    json_arguments: bool,
    /// Reuses the id of the previous call of the turn (a duplicate id).
    reuse_id: bool,
}

/// Tools of the vocabularies the fact extraction reads.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Tool {
    Bash,
    Read,
    Edit,
    Write,
    Shell,
    ApplyPatch,
    TodoWrite,
    Custom,
}

impl Tool {
    fn call(self, id: &str, json_arguments: bool, n: usize) -> ToolCall {
        let file = format!("src/module_{}.rs", n % 5);
        let (name, args, kind) = match self {
            Tool::Bash => (
                "Bash",
                json!({"command": format!("cargo test -p m{}", n % 3)}),
                ToolCallKind::Function,
            ),
            Tool::Read => ("Read", json!({"file_path": file}), ToolCallKind::Function),
            Tool::Edit => (
                "Edit",
                json!({"file_path": file, "old_string": "a", "new_string": "b"}),
                ToolCallKind::Function,
            ),
            Tool::Write => (
                "Write",
                json!({"file_path": file, "content": "fn main() {}"}),
                ToolCallKind::Function,
            ),
            Tool::Shell => (
                "shell",
                json!({"command": ["bash", "-lc", format!("cat {file}")]}),
                ToolCallKind::Function,
            ),
            Tool::ApplyPatch => (
                "apply_patch",
                json!({"input": format!("*** Begin Patch\n*** Update File: {file}\n*** End Patch")}),
                ToolCallKind::Function,
            ),
            Tool::TodoWrite => (
                "TodoWrite",
                json!({"todos": [{"content": "fix the build", "status": "in_progress"}]}),
                ToolCallKind::Function,
            ),
            Tool::Custom => ("grep", json!({"pattern": "TODO"}), ToolCallKind::Custom),
        };
        ToolCall {
            call_id: id.to_owned(),
            name: name.to_owned(),
            arguments: if json_arguments {
                Arguments::Json(args)
            } else {
                Arguments::Text(args.to_string())
            },
            kind,
            extra: Default::default(),
        }
    }
}

fn result(id: &str, name: Option<&str>, text: String, is_error: bool) -> Item {
    Item::new(ItemBody::ToolResult(ToolResult {
        call_id: id.to_owned(),
        tool_name: name.map(str::to_owned),
        parts: vec![Part::text(text)],
        is_error,
        kind: ToolCallKind::Function,
        content_was_string: true,
        extra: Default::default(),
    }))
}

fn hidden(mut item: Item, hide: bool) -> Item {
    item.meta.visibility.model = !hide;
    item
}

fn reasoning(thinking: Thinking, t: usize) -> Item {
    let text = format!("I should read module {t} first.");
    let r = match thinking {
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
        Thinking::Summarised => Reasoning {
            summary: vec![text],
            encrypted: Some(format!("enc-{t}")),
            ..Reasoning::default()
        },
    };
    Item::new(ItemBody::Reasoning(r))
}

impl Spec {
    /// The input format.
    pub fn format(&self) -> Format {
        self.format.format()
    }

    /// The conversation.
    pub fn conversation(&self) -> Conversation {
        let format = self.format();
        let mut conv = Conversation {
            format: Some(format),
            ..Conversation::default()
        };
        if self.system {
            conv.push(Item::text(Role::System, "You are a careful coding agent."));
        }
        let mut late: Vec<Item> = Vec::new();
        let turns = &self.turns[..self.turns.len().min(MAX_TURNS)];
        for (t, turn) in turns.iter().enumerate() {
            if turn.checkpoint {
                conv.push(Item::new(ItemBody::Checkpoint(Checkpoint {
                    text: format!("## Task\nFix module {t}.\n## Files\n- src/module_{t}.rs"),
                    generation: 1,
                    ..Checkpoint::default()
                })));
            }
            let last = t + 1 == turns.len();
            if let Some(user) = turn.user {
                let mut item = hidden(
                    Item::text(Role::User, user.render("Please look at")),
                    turn.user_hidden && !last,
                );
                item.meta.protected = turn.protected;
                conv.push(item);
            }
            if turn.developer {
                conv.push(Item::text(Role::Developer, format!("Keep step {t} small.")));
            }
            for item in late.drain(..) {
                conv.push(item);
            }
            let calls = &turn.calls[..turn.calls.len().min(MAX_CALLS)];
            let thinking = turn.thinking.map(|k| reasoning(k, t));
            let text = turn
                .text
                .map(|x| Item::text(Role::Assistant, x.render("Reading")));
            let mut interleaved = Vec::new();
            for item in [thinking, text].into_iter().flatten() {
                if turn.between_calls && !calls.is_empty() {
                    interleaved.push(item);
                } else {
                    conv.push(item);
                }
            }
            let mut ids: Vec<String> = Vec::new();
            for (k, call) in calls.iter().enumerate() {
                let id = match ids.last() {
                    Some(prev) if call.reuse_id => prev.clone(),
                    _ => format!("c{t}_{k}"),
                };
                let item = Item::new(ItemBody::ToolCall(call.tool.call(
                    &id,
                    call.json_arguments,
                    t + k,
                )));
                conv.push(hidden(item, call.hidden));
                ids.push(id);
                if k == 0 {
                    for item in interleaved.drain(..) {
                        conv.push(item);
                    }
                }
            }
            let mut answers: Vec<(usize, &Call)> = calls
                .iter()
                .enumerate()
                .filter(|(_, c)| c.answered)
                .collect();
            if turn.reversed {
                answers.reverse();
            }
            for (k, call) in answers {
                let name = conv.items.iter().rev().find_map(|i| match i.body() {
                    ItemBody::ToolCall(c) if c.call_id == ids[k] => Some(c.name.clone()),
                    _ => None,
                });
                let item = hidden(
                    result(
                        &ids[k],
                        name.as_deref(),
                        call.output.render(&ids[k]),
                        call.error,
                    ),
                    call.hidden,
                );
                if turn.late {
                    late.push(item);
                } else {
                    conv.push(item);
                }
            }
            if turn.duplicate_result {
                if let Some(first) = ids.first() {
                    conv.push(result(first, None, "again".to_owned(), false));
                }
            }
            if turn.stray_result {
                conv.push(result(
                    &format!("ghost{t}"),
                    None,
                    "stray".to_owned(),
                    false,
                ));
            }
            if turn.opaque {
                conv.push(hidden(
                    Item::new(ItemBody::Opaque(Opaque {
                        label: "web_search_call".to_owned(),
                        role: None,
                        value: json!({"type": "web_search_call", "id": format!("ws{t}")}),
                    })),
                    t % 2 == 0,
                ));
            }
        }
        for item in late {
            conv.push(item);
        }
        if self.wire_messages {
            one_message_per_item(&mut conv, format);
        }
        conv
    }
}

/// Gives every item a wire message of its own in `format` (see the provider-rules test in
/// `crates/engine/tests/provider_rules.rs`): only items a request of `format` can hold that way.
fn one_message_per_item(conv: &mut Conversation, format: Format) {
    if format == Format::OpenAiChat {
        conv.items
            .retain(|i| !matches!(i.body(), ItemBody::Reasoning(_)));
    }
    for (i, item) in conv.items.iter_mut().enumerate() {
        let decodable = match item.body() {
            ItemBody::Message(m) => m.role != Role::System,
            ItemBody::Reasoning(r) => match format {
                Format::Anthropic => r.signature.is_some() || r.redacted,
                _ => r.encrypted.is_some() || r.text.is_none(),
            },
            ItemBody::Checkpoint(_) | ItemBody::Opaque(_) => false,
            _ => true,
        };
        if !decodable {
            continue;
        }
        item.meta.origin = Some(format);
        item.meta.envelope = Some(Arc::new(Envelope {
            format: Some(format),
            message: u32::try_from(i).unwrap_or(u32::MAX),
            ..Envelope::default()
        }));
    }
}

/// Compacts the conversation of `spec` with every strategy and checks each result.
pub fn run(spec: &Spec) {
    let conv = spec.conversation();
    if !conv.items.iter().any(|i| i.meta.visibility.model) {
        return;
    }
    let originals: Vec<(Format, Value, bool)> = crate::WIRE
        .iter()
        .map(|&target| {
            let original = match encode(&conv, target) {
                Ok(e) => e.value,
                Err(e) => panic!("a conversation does not encode to {target}: {e}"),
            };
            let valid = validate(&original, target).is_empty();
            (target, original, valid)
        })
        .collect();
    let counter = TokenCounter::new(Encoding::Estimate);
    let window = spec.window.tokens();
    for &strategy in StrategyName::ALL {
        let Ok(compactor) = Compactor::new(
            Policy::for_window(window),
            Arc::new(DeterministicSummarizer),
            counter,
        ) else {
            return;
        };
        let compactor = compactor.with_strategy(strategy);
        let out = match block_on(compactor.compact(&conv)) {
            Ok(done) => done.conversation,
            // Already fitting: `compactctl compact` sends it unchanged, through preflight.
            Err(CompactError::NoProgress { before, .. }) if compactor.budget().fits(before) => {
                match block_on(compactor.preflight(&conv)) {
                    Ok(sent) => sent.conversation,
                    Err(e) => {
                        let _ = e.to_string();
                        continue;
                    }
                }
            }
            Err(CompactError::Apply(e)) => {
                panic!("{strategy} @ {window}: a plan did not apply: {e}")
            }
            Err(e) => {
                let _ = e.to_string();
                continue;
            }
        };
        for (target, original, valid) in &originals {
            if !valid {
                continue;
            }
            let sent = request(&compactor, &conv, &out, *target);
            let violations = validate_against(&sent, original, *target);
            assert!(
                violations.is_empty(),
                "{} -> {target} ({strategy} @ {window}): the input passes the provider rules, \
                 the compacted request does not:\n{}\n{}",
                spec.format(),
                violations
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n"),
                serde_json::to_string_pretty(&sent).unwrap_or_default()
            );
        }
    }
}

/// The request `compactctl compact --to target` writes for `out`, the compactor's result for
/// `input`: normalised again for the target's provider when its rules differ from the input's.
fn request(
    compactor: &Compactor,
    input: &Conversation,
    out: &Conversation,
    target: Format,
) -> Value {
    let rules = ProviderRules::for_format(target);
    let conv = if rules == compactor.rules_for(input) {
        encode(out, target)
    } else {
        encode(&normalize(out, &rules).conversation, target)
    };
    match conv {
        Ok(e) => e.value,
        Err(e) => panic!("a compacted conversation does not encode to {target}: {e}"),
    }
}
