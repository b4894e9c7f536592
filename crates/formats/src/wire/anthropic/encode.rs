//! Encoding a conversation as an Anthropic Messages request.
//!
//! Same-format messages are rebuilt from their envelope. Items from elsewhere become canonical blocks
//! in messages of their own, which are then merged with their neighbours of the same role (the API
//! wants alternating roles), with `tool_result` blocks first in a merged user message.

use super::blocks::MCP_TOOL_RESULT;
use super::decode::implied_role;
use super::parts::encode_part;
use crate::wire::common::{
    carry_extra, checkpoint_part_extra, checkpoint_text, content_value, dialect, is_native, units,
    Keep, LegacyIds, Unit,
};
use crate::wire::json::{merge, obj};
use crate::wire::request::{tools, top_level};
use crate::wire::{Loss, LossKind};
use compact_core::model::{
    Arguments, CompactionWire, Conversation, Extra, Format, Item, ItemBody, Part, PartKind,
    Reasoning, Role, ToolCall, ToolCallKind, ToolResult,
};
use serde_json::Value;

const FORMAT: Format = Format::Anthropic;

/// Text of the user message put first when a request would otherwise open with an assistant turn
/// (the Messages API requires the first turn to be the user's). This happens when compaction removed
/// the messages before the first assistant message kept, or when a conversation from another format
/// starts with the assistant.
pub const LEADING_USER_TEXT: &str = "(continuing the conversation)";

/// A message being built.
struct Msg {
    role: &'static str,
    blocks: Vec<Value>,
    was_string: bool,
    extra: Extra,
    /// Built (at least partly) from items of another format: may be merged with its neighbours.
    canonical: bool,
    /// Starts with the first message of the Anthropic request its items were decoded from (not of
    /// a transcript imported record by record).
    opens_source: bool,
}

/// Encoding state.
struct Enc<'a> {
    losses: &'a mut Vec<Loss>,
    ids: LegacyIds,
}

/// Encodes `conv`.
pub(crate) fn encode_request(conv: &Conversation, losses: &mut Vec<Loss>) -> Value {
    let mut enc = Enc {
        losses,
        ids: LegacyIds::default(),
    };
    let mut system: Vec<Value> = Vec::new();
    let mut system_was_string = true;
    let mut msgs: Vec<Msg> = Vec::new();
    for unit in units(&conv.items, FORMAT) {
        match unit {
            Unit::Wire { env, items } if env.slot == Some("system") => {
                system_was_string = env.content_was_string && system.is_empty();
                for (idx, item) in items {
                    enc.item_blocks(idx, item, Keep::Extra, &mut system);
                }
            }
            Unit::Wire { env, items } => {
                let role = match env.extra.get("role").and_then(Value::as_str) {
                    Some("user") => "user",
                    Some("assistant") => "assistant",
                    Some("system") => "system",
                    _ => items.first().map_or("user", |(_, i)| wire_role(i)),
                };
                let decoded = items
                    .first()
                    .is_some_and(|(_, i)| i.meta.origin == Some(FORMAT));
                let mut blocks = Vec::new();
                for (idx, item) in items {
                    enc.item_blocks(idx, item, Keep::Extra, &mut blocks);
                }
                msgs.push(Msg {
                    role,
                    blocks,
                    was_string: env.content_was_string,
                    extra: env.extra.clone(),
                    canonical: false,
                    // Only a decoded request has a first message to keep: a transcript imported
                    // record by record (Claude Code's, origin `claude-code`) is no request, and
                    // its opening assistant record gets the leading user turn.
                    opens_source: env.message == 0 && decoded,
                });
            }
            Unit::Loose { idx, item, keep } => {
                let mut blocks = Vec::new();
                if let ItemBody::Message(m) = item.body() {
                    if matches!(m.role, Role::System | Role::Developer) {
                        if m.role == Role::Developer {
                            enc.losses.push(Loss::item(
                                idx,
                                LossKind::RoleChanged,
                                "developer message became system",
                            ));
                        }
                        if msgs.is_empty() {
                            system_was_string = system_was_string && system.is_empty();
                            enc.item_blocks(idx, item, keep, &mut system);
                            continue;
                        }
                        enc.losses.push(Loss::item(
                            idx,
                            LossKind::MovedToUser,
                            "system message after the start became a user message",
                        ));
                        enc.item_blocks(idx, item, keep, &mut blocks);
                        msgs.push(Msg {
                            role: "user",
                            blocks,
                            was_string: false,
                            extra: Extra::new(),
                            canonical: true,
                            opens_source: false,
                        });
                        continue;
                    }
                }
                enc.item_blocks(idx, item, keep, &mut blocks);
                if !blocks.is_empty() {
                    msgs.push(Msg {
                        role: wire_role(item),
                        blocks,
                        was_string: false,
                        extra: Extra::new(),
                        canonical: true,
                        opens_source: false,
                    });
                }
            }
        }
    }
    let mut out = top_level(conv, FORMAT, enc.losses);
    if let Some(system) = content_value(system, system_was_string, "text") {
        out.insert("system".into(), system);
    }
    let mut msgs = merge_roles(msgs);
    lead_with_user(&mut msgs, enc.losses);
    let messages: Vec<Value> = msgs.into_iter().map(render).collect();
    out.insert("messages".into(), Value::Array(messages));
    if let Some(t) = tools(conv, FORMAT, enc.losses) {
        out.insert("tools".into(), t);
    }
    Value::Object(out)
}

/// The role of the wire message an item belongs in.
fn wire_role(item: &Item) -> &'static str {
    match implied_role(item.body()) {
        Role::User => "user",
        Role::System => "system",
        _ => "assistant",
    }
}

/// Merges adjacent messages of one role when either was built from another format.
fn merge_roles(msgs: Vec<Msg>) -> Vec<Msg> {
    let mut out: Vec<Msg> = Vec::with_capacity(msgs.len());
    for m in msgs {
        if let Some(last) = out.last_mut() {
            if last.role == m.role && (last.canonical || m.canonical) {
                last.blocks.extend(m.blocks);
                last.was_string = false;
                last.canonical = true;
                merge(&mut last.extra, &m.extra);
                continue;
            }
        }
        out.push(m);
    }
    for m in &mut out {
        if m.canonical && m.role == "user" {
            // The API wants the answers to the previous turn's tool calls before anything else.
            let (mut results, rest): (Vec<Value>, Vec<Value>) = std::mem::take(&mut m.blocks)
                .into_iter()
                .partition(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
            results.extend(rest);
            m.blocks = results;
        }
    }
    out
}

/// Puts a placeholder user message first when the request would open with an assistant or system
/// message that was not already the first message of its source request (a source that broke the
/// rule is written back as it was, so that same-format encoding stays exact), or would have no
/// message at all. (Claude Code's system message follows the first user message: when compaction
/// removed that one, the placeholder takes its place.)
fn lead_with_user(msgs: &mut Vec<Msg>, losses: &mut Vec<Loss>) {
    match msgs.first() {
        // Nothing but system text is left (compaction dropped every message): the API requires a
        // message.
        None => losses.push(Loss::request(
            LossKind::PlaceholderAdded,
            "a user message is the only message: Anthropic requires at least one",
        )),
        Some(first) if first.role == "user" || first.opens_source => return,
        // A provider compaction block must be the first content of the request (on-demand mode);
        // in threshold mode the provider ignores whatever would come before it.
        Some(first) if first.blocks.first().is_some_and(is_compaction_block) => return,
        Some(_) => losses.push(Loss::request(
            LossKind::PlaceholderAdded,
            "a user message opens the request: Anthropic requires the first turn to be the user's",
        )),
    }
    msgs.insert(
        0,
        Msg {
            role: "user",
            blocks: vec![Value::Object(obj([
                ("type", "text".into()),
                ("text", LEADING_USER_TEXT.into()),
            ]))],
            was_string: true,
            extra: Extra::new(),
            canonical: true,
            opens_source: false,
        },
    );
}

/// True for an Anthropic `compaction` block.
fn is_compaction_block(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("compaction")
}

fn render(m: Msg) -> Value {
    let mut o = obj([("role", m.role.into())]);
    if let Some(content) = content_value(m.blocks, m.was_string, "text") {
        o.insert("content".into(), content);
    }
    merge(&mut o, &m.extra);
    Value::Object(o)
}

impl Enc<'_> {
    /// Appends the blocks of one item.
    fn item_blocks(&mut self, idx: usize, item: &Item, keep: Keep, out: &mut Vec<Value>) {
        match item.body() {
            ItemBody::Message(m) => {
                for p in &m.parts {
                    if let Some(b) = encode_part(p, keep, idx, self.losses) {
                        out.push(b);
                    }
                }
            }
            ItemBody::Checkpoint(cp) => {
                let mut b = obj([
                    ("type", "text".into()),
                    ("text", Value::String(checkpoint_text(cp))),
                ]);
                if keep == Keep::Extra {
                    merge(&mut b, &checkpoint_part_extra(cp));
                }
                out.push(Value::Object(b));
            }
            ItemBody::ToolCall(c) => {
                if let Some(b) = self.tool_call(idx, c, keep) {
                    out.push(b);
                }
            }
            ItemBody::ToolResult(r) => {
                if let Some(b) = self.tool_result(idx, r, keep) {
                    out.push(b);
                }
            }
            ItemBody::Reasoning(r) => {
                if let Some(b) = self.reasoning(idx, item, r, keep) {
                    out.push(b);
                }
            }
            ItemBody::ProviderCompaction(p) => match p.wire() {
                // Always Anthropic's own, whatever the envelope: sent back exactly as received.
                CompactionWire::AnthropicBlock => out.push(p.value().clone()),
                CompactionWire::OpenAiItem | CompactionWire::OpenAiTrigger => {
                    self.losses.push(Loss::item(
                        idx,
                        LossKind::OpaqueItemDropped,
                        format!("OpenAI `{}` item", p.wire().type_tag()),
                    ));
                }
            },
            ItemBody::Opaque(o) => {
                if keep == Keep::Extra {
                    out.push(o.value.clone());
                } else {
                    self.losses.push(Loss::item(
                        idx,
                        LossKind::OpaqueItemDropped,
                        format!("`{}` item", o.label),
                    ));
                }
            }
        }
    }

    fn tool_call(&mut self, idx: usize, c: &ToolCall, keep: Keep) -> Option<Value> {
        if c.kind == ToolCallKind::Server && keep == Keep::Canonical {
            self.losses.push(Loss::item(
                idx,
                LossKind::ServerToolDropped,
                format!("server tool call `{}`", c.name),
            ));
            return None;
        }
        let ty = match c.kind {
            ToolCallKind::Server => "server_tool_use",
            _ => "tool_use",
        };
        let input = match (&c.arguments, keep) {
            (Arguments::Json(v), Keep::Extra) => v.clone(),
            (args, _) => self.object_input(idx, args),
        };
        if keep == Keep::Canonical && c.kind != ToolCallKind::Function {
            self.losses.push(Loss::item(
                idx,
                LossKind::ToolKindChanged,
                format!("{} call became tool_use", kind_name(c.kind)),
            ));
        }
        let id = self.ids.call(&c.call_id, idx, self.losses);
        let mut o = Extra::new();
        if !c.extra.contains_key("type") || keep == Keep::Canonical {
            o.insert("type".into(), ty.into());
        }
        o.insert("id".into(), Value::String(id));
        o.insert("name".into(), Value::String(c.name.clone()));
        o.insert("input".into(), input);
        carry_extra(&mut o, &c.extra, keep, idx, "tool call", self.losses);
        Some(Value::Object(o))
    }

    /// Tool input as the JSON object Anthropic requires; anything else is wrapped as `{"input": ...}`.
    fn object_input(&mut self, idx: usize, args: &Arguments) -> Value {
        match args.to_value() {
            Some(v @ Value::Object(_)) => v,
            _ => {
                self.losses.push(Loss::item(
                    idx,
                    LossKind::ArgumentsWrapped,
                    "arguments are not a JSON object",
                ));
                Value::Object(obj([("input", Value::String(args.to_text()))]))
            }
        }
    }

    fn tool_result(&mut self, idx: usize, r: &ToolResult, keep: Keep) -> Option<Value> {
        let server = r.kind == ToolCallKind::Server;
        if server && keep == Keep::Canonical {
            self.losses.push(Loss::item(
                idx,
                LossKind::ServerToolDropped,
                "server tool result",
            ));
            return None;
        }
        let id = self.ids.result(&r.call_id);
        let mut o = Extra::new();
        if !server {
            o.insert("type".into(), "tool_result".into());
        }
        o.insert("tool_use_id".into(), Value::String(id));
        let raw_content =
            server && r.extra.get("type").and_then(Value::as_str) != Some(MCP_TOOL_RESULT);
        let content = match r.parts.as_slice() {
            [Part {
                kind: PartKind::Opaque(v),
                ..
            }] if raw_content => Some(v.clone()),
            _ => {
                let blocks: Vec<Value> = r
                    .parts
                    .iter()
                    .filter_map(|p| encode_part(p, keep, idx, self.losses))
                    .collect();
                let was_string = r.content_was_string || keep == Keep::Canonical;
                content_value(blocks, was_string, "text")
            }
        };
        if let Some(c) = content {
            o.insert("content".into(), c);
        }
        if r.is_error {
            o.insert("is_error".into(), Value::Bool(true));
        }
        carry_extra(&mut o, &r.extra, keep, idx, "tool result", self.losses);
        Some(Value::Object(o))
    }

    fn reasoning(&mut self, idx: usize, item: &Item, r: &Reasoning, keep: Keep) -> Option<Value> {
        let writable = keep == Keep::Extra || is_native(item);
        let mut o = match (r.redacted, &r.encrypted, &r.text, &r.signature) {
            (true, Some(data), _, _) if writable => obj([
                ("type", "redacted_thinking".into()),
                ("data", Value::String(data.clone())),
            ]),
            (false, _, Some(text), sig) if writable && (sig.is_some() || keep == Keep::Extra) => {
                let mut o = obj([
                    ("type", "thinking".into()),
                    ("thinking", Value::String(text.clone())),
                ]);
                if let Some(s) = sig {
                    o.insert("signature".into(), Value::String(s.clone()));
                }
                o
            }
            _ => {
                let what = match dialect(item) {
                    Some(f) => format!("reasoning from {f} (summaries, encrypted content)"),
                    None => "reasoning without a thinking signature".to_owned(),
                };
                self.losses
                    .push(Loss::item(idx, LossKind::ReasoningDropped, what));
                return None;
            }
        };
        carry_extra(&mut o, &r.extra, keep, idx, "reasoning", self.losses);
        Some(Value::Object(o))
    }
}

/// Wire-neutral name of a call kind, for loss details.
fn kind_name(kind: ToolCallKind) -> &'static str {
    match kind {
        ToolCallKind::Function => "function",
        ToolCallKind::Custom => "custom",
        ToolCallKind::LocalShell => "local shell",
        ToolCallKind::Server => "server",
    }
}
