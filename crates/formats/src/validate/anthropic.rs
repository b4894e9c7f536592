//! Anthropic Messages rules: turns as the API sees them (consecutive messages of one role merged), then
//! tool_use / tool_result pairing between each assistant turn and the user turn after it.
//!
//! A `system` message among the messages (Claude Code sends one after the first user message) is
//! transparent to turns: the messages around it are merged and paired as if it were not there. It
//! must not open the request, must not be empty, and holds no tool or thinking blocks.

use super::{id_field, type_name, Found, Rule};
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};

/// Who speaks a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaker {
    User,
    Assistant,
}

impl Speaker {
    fn as_str(self) -> &'static str {
        match self {
            Speaker::User => "user",
            Speaker::Assistant => "assistant",
        }
    }
}

/// What a content block is, as far as the rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind<'a> {
    /// A client tool call (`tool_use`) with its id.
    Call(&'a str),
    /// A provider-run call (`server_tool_use`, `mcp_tool_use`), answered inside the assistant turn.
    ServerCall(&'a str),
    /// A `tool_result` answering the call with this id.
    Result(&'a str),
    /// `thinking` or `redacted_thinking`.
    Thinking,
    /// A provider `compaction` block.
    Compaction,
    /// Anything else (text, images, documents, server tool results, unknown types), or a block whose
    /// shape was already reported as malformed.
    Other,
}

/// A content block and where it is.
#[derive(Debug)]
struct Block<'a> {
    path: String,
    kind: Kind<'a>,
}

/// Consecutive messages of one role, merged as the API merges them.
#[derive(Debug)]
struct Turn<'a> {
    speaker: Speaker,
    /// Index of its first message.
    first: usize,
    blocks: Vec<Block<'a>>,
}

impl Turn<'_> {
    fn calls(&self) -> impl Iterator<Item = (&str, &Block<'_>)> {
        self.blocks.iter().filter_map(|b| match b.kind {
            Kind::Call(id) => Some((id, b)),
            _ => None,
        })
    }
}

/// Checks an Anthropic Messages request.
pub(super) fn check(request: &Value, found: &mut Found) {
    let Some(messages) = super::messages_of(request, found) else {
        return;
    };
    let scope = super::compaction::anthropic(request, messages, found);
    let (turns, opened_by_system) = turns(messages, scope, found);
    if let (Some(first), false) = (turns.first(), opened_by_system) {
        // A compaction block may open the request (on-demand mode: it must).
        let opens_with_compaction = first.blocks.first().map(|b| b.kind) == Some(Kind::Compaction);
        if first.speaker != Speaker::User && !opens_with_compaction {
            found.push(
                format!("/messages/{}", first.first),
                Rule::FirstTurnNotUser,
                "the first turn must be a user turn",
            );
        }
    }
    unique_ids(&turns, found);
    for (k, turn) in turns.iter().enumerate() {
        match turn.speaker {
            Speaker::Assistant => answered_in_next(turn, turns.get(k + 1), found),
            Speaker::User => {
                let previous = k.checked_sub(1).and_then(|p| turns.get(p));
                results_of_previous(turn, previous, found);
            }
        }
        misplaced_blocks(turn, found);
    }
}

/// Reads the messages from `scope` on into merged turns, reporting what cannot be read and empty
/// content; checks `system` messages on the way (they are no turn). True when a system message
/// comes before any turn (reported as [`Rule::FirstTurnNotUser`]).
fn turns<'a>(
    messages: &'a [Value],
    scope: super::compaction::Scope,
    found: &mut Found,
) -> (Vec<Turn<'a>>, bool) {
    let mut turns: Vec<Turn<'a>> = Vec::new();
    let mut opened_by_system = false;
    for (i, message) in messages.iter().enumerate().skip(scope.message) {
        let path = format!("/messages/{i}");
        let Some(message) = super::object_at(message, &path, "a message", found) else {
            continue;
        };
        let speaker = match message.get("role") {
            Some(Value::String(r)) if r == "user" => Speaker::User,
            Some(Value::String(r)) if r == "assistant" => Speaker::Assistant,
            Some(Value::String(r)) if r == "system" => {
                if turns.is_empty() && !opened_by_system {
                    opened_by_system = true;
                    found.push(
                        &path,
                        Rule::FirstTurnNotUser,
                        "a system message opens the request: the first turn must be a user turn",
                    );
                }
                system_message(message, &path, found);
                continue;
            }
            Some(Value::String(r)) => {
                found.push(
                    format!("{path}/role"),
                    Rule::InvalidRole,
                    format!("role `{r}` is not `user`, `assistant` or `system`"),
                );
                continue;
            }
            Some(other) => {
                found.push(
                    format!("{path}/role"),
                    Rule::InvalidRole,
                    format!("the role is {}, not a string", type_name(other)),
                );
                continue;
            }
            None => {
                found.push(path, Rule::InvalidRole, "the message has no `role`");
                continue;
            }
        };
        // A final assistant message is a prefill: it may be empty.
        let may_be_empty = speaker == Speaker::Assistant && i + 1 == messages.len();
        let mut blocks = content_blocks(message, &path, may_be_empty, found);
        if i == scope.message && scope.block > 0 {
            blocks = blocks.split_off(scope.block.min(blocks.len()));
        }
        match turns.last_mut() {
            Some(last) if last.speaker == speaker => last.blocks.extend(blocks),
            _ => turns.push(Turn {
                speaker,
                first: i,
                blocks,
            }),
        }
    }
    (turns, opened_by_system)
}

/// A `system` message holds content (text): no tool calls, results, thinking or compaction. One
/// that carries per-turn controls besides (Claude Code 2.1.328 after a resumed compaction sends
/// `{"role": "system", "content": [], "output_config": {"effort": "medium"}}`, the
/// per-turn-control beta) may hold none.
fn system_message(message: &Map<String, Value>, path: &str, found: &mut Found) {
    let controls = message.keys().any(|k| k != "role" && k != "content");
    for block in content_blocks(message, path, controls, found) {
        let what = match block.kind {
            Kind::Call(_) => "a tool_use block",
            Kind::ServerCall(_) => "a server tool call",
            Kind::Result(_) => "a tool_result block",
            Kind::Thinking => "a thinking block",
            Kind::Compaction => "a compaction block",
            Kind::Other => continue,
        };
        found.push(
            &block.path,
            Rule::BlockInWrongRole,
            format!("{what} cannot appear in a system message"),
        );
    }
}

/// The blocks of one message (a string content is one text block).
fn content_blocks<'a>(
    message: &'a Map<String, Value>,
    path: &str,
    may_be_empty: bool,
    found: &mut Found,
) -> Vec<Block<'a>> {
    let at = format!("{path}/content");
    match message.get("content") {
        Some(Value::String(text)) => {
            if text.trim().is_empty() && !may_be_empty {
                found.push(&at, Rule::EmptyContent, blank(text, "the content"));
            }
            vec![Block {
                path: at,
                kind: Kind::Other,
            }]
        }
        Some(Value::Array(blocks)) => {
            if blocks.is_empty() && !may_be_empty {
                found.push(&at, Rule::EmptyContent, "the content is an empty list");
            }
            blocks
                .iter()
                .enumerate()
                .map(|(j, b)| {
                    let path = format!("{at}/{j}");
                    Block {
                        kind: block_kind(b, &path, found),
                        path,
                    }
                })
                .collect()
        }
        Some(other) => {
            found.push(
                at,
                Rule::Malformed,
                format!(
                    "the content is {}, not a string or a list",
                    type_name(other)
                ),
            );
            Vec::new()
        }
        None => {
            found.push(path, Rule::Malformed, "the message has no `content`");
            Vec::new()
        }
    }
}

/// "... is empty" or "... is only whitespace".
fn blank(text: &str, what: &str) -> String {
    if text.is_empty() {
        format!("{what} is empty")
    } else {
        format!("{what} is only whitespace")
    }
}

/// Classifies one block, reporting a shape the API would not parse.
fn block_kind<'a>(block: &'a Value, path: &str, found: &mut Found) -> Kind<'a> {
    let Some(o) = super::object_at(block, path, "a content block", found) else {
        return Kind::Other;
    };
    let Some(ty) = o.get("type").and_then(Value::as_str) else {
        found.push(
            path,
            Rule::Malformed,
            "the content block has no string `type`",
        );
        return Kind::Other;
    };
    let malformed = |found: &mut Found, why: String| {
        found.push(path, Rule::Malformed, format!("`{ty}` block: {why}"));
        Kind::Other
    };
    match ty {
        "text" => match o.get("text") {
            Some(Value::String(t)) if t.trim().is_empty() => {
                found.push(path, Rule::EmptyContent, blank(t, "the text block"));
                Kind::Other
            }
            Some(Value::String(_)) => Kind::Other,
            Some(other) => malformed(found, format!("`text` is {}", type_name(other))),
            None => malformed(found, "`text` is missing".to_owned()),
        },
        "tool_use" => match id_field(o, "id") {
            Err(why) => malformed(found, why),
            Ok(_) if !o.get("input").is_some_and(Value::is_object) => {
                malformed(found, "`input` must be an object".to_owned())
            }
            Ok(id) => Kind::Call(id),
        },
        "server_tool_use" | "mcp_tool_use" => match id_field(o, "id") {
            Ok(id) => Kind::ServerCall(id),
            Err(why) => malformed(found, why),
        },
        "tool_result" => match id_field(o, "tool_use_id") {
            Ok(id) => Kind::Result(id),
            Err(why) => malformed(found, why),
        },
        "thinking" => {
            if !nonempty_str(o, "signature") {
                found.push(
                    path,
                    Rule::UnsignedThinking,
                    "the thinking block has no signature",
                );
            }
            Kind::Thinking
        }
        super::compaction::COMPACTION => match super::compaction::block_shape(o) {
            Some(why) => malformed(found, why),
            None => Kind::Compaction,
        },
        "redacted_thinking" => {
            if !nonempty_str(o, "data") {
                found.push(
                    path,
                    Rule::UnsignedThinking,
                    "the redacted_thinking block has no data",
                );
            }
            Kind::Thinking
        }
        _ => Kind::Other,
    }
}

fn nonempty_str(o: &Map<String, Value>, key: &str) -> bool {
    o.get(key)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// Call ids (client and server) are unique across the request.
fn unique_ids(turns: &[Turn<'_>], found: &mut Found) {
    let mut first_seen: HashMap<&str, &str> = HashMap::new();
    for block in turns.iter().flat_map(|t| &t.blocks) {
        let (Kind::Call(id) | Kind::ServerCall(id)) = block.kind else {
            continue;
        };
        if let Some(first) = first_seen.get(id) {
            found.push(
                &block.path,
                Rule::DuplicateCallId,
                format!("tool call id `{id}` is already used at {first}"),
            );
        } else {
            first_seen.insert(id, &block.path);
        }
    }
}

/// Every `tool_use` of an assistant turn is answered in the user turn after it.
fn answered_in_next(turn: &Turn<'_>, next: Option<&Turn<'_>>, found: &mut Found) {
    let answers: HashSet<&str> = next
        .filter(|n| n.speaker == Speaker::User)
        .map(|n| {
            n.blocks
                .iter()
                .filter_map(|b| match b.kind {
                    Kind::Result(id) => Some(id),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    for (id, block) in turn.calls() {
        if answers.contains(id) {
            continue;
        }
        let message = match next {
            None => format!(
                "tool_use `{id}` is never answered: the request ends with the assistant turn that makes it"
            ),
            Some(n) => format!(
                "tool_use `{id}` has no tool_result in the next user turn (starting at /messages/{})",
                n.first
            ),
        };
        found.push(&block.path, Rule::UnansweredCall, message);
    }
}

/// Every `tool_result` of a user turn answers, once, a `tool_use` of the assistant turn right before
/// it, and all of them come before the turn's other blocks.
fn results_of_previous(turn: &Turn<'_>, previous: Option<&Turn<'_>>, found: &mut Found) {
    let calls: HashSet<&str> = previous
        .filter(|p| p.speaker == Speaker::Assistant)
        .map(|p| p.calls().map(|(id, _)| id).collect())
        .unwrap_or_default();
    let mut answered: HashSet<&str> = HashSet::new();
    let mut other_content: Option<&str> = None;
    for block in &turn.blocks {
        let Kind::Result(id) = block.kind else {
            other_content.get_or_insert(&block.path);
            continue;
        };
        if let Some(before) = other_content {
            found.push(
                &block.path,
                Rule::ResultAfterContent,
                format!("tool_result `{id}` comes after other content of its user turn ({before})"),
            );
        }
        if !calls.contains(id) {
            let message = match previous {
                Some(p) => format!(
                    "tool_result `{id}` answers no tool_use of the previous assistant turn (starting at /messages/{})",
                    p.first
                ),
                None => format!("tool_result `{id}` has no assistant turn before it"),
            };
            found.push(&block.path, Rule::OrphanResult, message);
        } else if !answered.insert(id) {
            found.push(
                &block.path,
                Rule::DuplicateResult,
                format!("tool_use `{id}` is answered more than once"),
            );
        }
    }
}

/// Calls and thinking come from the assistant, results from the user.
fn misplaced_blocks(turn: &Turn<'_>, found: &mut Found) {
    for block in &turn.blocks {
        let what = match (turn.speaker, block.kind) {
            (Speaker::User, Kind::Call(_)) => "a tool_use block",
            (Speaker::User, Kind::ServerCall(_)) => "a server tool call",
            (Speaker::User, Kind::Thinking) => "a thinking block",
            (Speaker::Assistant, Kind::Result(_)) => "a tool_result block",
            _ => continue,
        };
        found.push(
            &block.path,
            Rule::BlockInWrongRole,
            format!("{what} cannot appear in a {} turn", turn.speaker.as_str()),
        );
    }
}
