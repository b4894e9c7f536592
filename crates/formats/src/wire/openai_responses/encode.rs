//! Encoding a conversation as a Responses request.
//!
//! Every item is one input item. Same-format items are rebuilt with their fields; `instructions` and a
//! plain-string `input` come back from their envelope slots.

use super::decode::{INPUT, INSTRUCTIONS};
use super::parts::{encode_part, INPUT_TEXT, OUTPUT_TEXT};
use crate::wire::common::{
    carry_extra, checkpoint_part_extra, checkpoint_text, content_value, dialect, is_native, units,
    Keep, LegacyIds, Unit,
};
use crate::wire::json::{merge, obj};
use crate::wire::request::{tools, top_level};
use crate::wire::{Loss, LossKind};
use compact_core::model::{
    Arguments, Checkpoint, CompactionWire, Conversation, Envelope, Extra, Format, Item, ItemBody,
    Message, Opaque, PartKind, ProviderCompaction, Reasoning, Role, ToolCall, ToolCallKind,
    ToolResult,
};
use serde_json::Value;
use std::collections::HashMap;

const FORMAT: Format = Format::OpenAiResponses;

struct Enc<'a> {
    losses: &'a mut Vec<Loss>,
    ids: LegacyIds,
    /// Kind of each call by id, so results from another format get the matching output type.
    call_kinds: HashMap<&'a str, ToolCallKind>,
}

/// Encodes `conv`.
pub(crate) fn encode_request(conv: &Conversation, losses: &mut Vec<Loss>) -> Value {
    let call_kinds = conv
        .items
        .iter()
        .filter_map(|i| i.as_tool_call())
        .map(|c| (c.call_id.as_str(), c.kind))
        .collect();
    let mut enc = Enc {
        losses,
        ids: LegacyIds::default(),
        call_kinds,
    };
    let units = units(&conv.items, FORMAT);
    let is_slot =
        |u: &Unit<'_>, slot: &str| matches!(u, Unit::Wire { env, .. } if env.slot == Some(slot));
    let main: Vec<&Unit<'_>> = units.iter().filter(|u| !is_slot(u, INSTRUCTIONS)).collect();
    let string_input = matches!(main.as_slice(), [u] if is_slot(u, INPUT));
    let mut instructions: Option<String> = None;
    let mut input: Vec<Value> = Vec::new();
    let mut input_text: Option<String> = None;
    for unit in &units {
        match unit {
            Unit::Wire { env, items } if env.slot == Some(INSTRUCTIONS) => {
                let text: Vec<String> = items.iter().map(|(_, i)| i.plain_text()).collect();
                instructions = Some(text.join("\n"));
            }
            Unit::Wire { env, items } if env.slot == Some(INPUT) && string_input => {
                let text: Vec<String> = items.iter().map(|(_, i)| slot_text(i)).collect();
                input_text = Some(text.join("\n"));
            }
            Unit::Wire { env, items } => {
                for (idx, item) in items {
                    // Every Responses item is its own wire item: use its own envelope even when a
                    // caller numbered two items alike and they were grouped.
                    let own = item.meta.envelope.as_deref().unwrap_or(env);
                    if let Some(v) = enc.item(*idx, item, Keep::Extra, Some(own)) {
                        input.push(v);
                    }
                }
            }
            Unit::Loose { idx, item, keep } => {
                if let Some(v) = enc.item(*idx, item, *keep, None) {
                    input.push(v);
                }
            }
        }
    }
    let mut out = top_level(conv, FORMAT, enc.losses);
    if let Some(i) = instructions {
        out.insert(INSTRUCTIONS.into(), Value::String(i));
    }
    match input_text {
        Some(t) => {
            out.insert(INPUT.into(), Value::String(t));
        }
        None if !input.is_empty() || conv.format != Some(FORMAT) => {
            out.insert(INPUT.into(), Value::Array(input));
        }
        None => {}
    }
    if let Some(t) = tools(conv, FORMAT, enc.losses) {
        out.insert("tools".into(), t);
    }
    Value::Object(out)
}

/// The text of an item sent as a plain-string `input`.
fn slot_text(item: &Item) -> String {
    match item.body() {
        ItemBody::Checkpoint(cp) => checkpoint_text(cp),
        _ => item.plain_text(),
    }
}

/// A message item; the long form (`type: "message"`) when built for an item from elsewhere.
fn message(role: &str, content: Value, long_form: bool) -> Extra {
    let mut o = Extra::new();
    if long_form {
        o.insert("type".into(), "message".into());
    }
    o.insert("role".into(), role.into());
    o.insert("content".into(), content);
    o
}

impl Enc<'_> {
    /// One input item; `None` (with a loss) when Responses cannot carry it.
    fn item(
        &mut self,
        idx: usize,
        item: &Item,
        keep: Keep,
        env: Option<&Envelope>,
    ) -> Option<Value> {
        let mut o = match item.body() {
            ItemBody::Message(m) => self.message_item(idx, m, keep, env),
            ItemBody::Checkpoint(cp) => checkpoint(cp, env),
            ItemBody::ToolCall(c) => self.tool_call(idx, c, keep)?,
            ItemBody::ToolResult(r) => self.tool_result(idx, r, keep)?,
            ItemBody::Reasoning(r) => self.reasoning(idx, item, r, keep)?,
            // Both come back as they were received, without an envelope's fields.
            ItemBody::ProviderCompaction(p) => return self.provider_compaction(idx, p),
            ItemBody::Opaque(op) => return self.opaque(idx, op, keep),
        };
        if let Some(env) = env {
            merge(&mut o, &env.extra);
        }
        Some(Value::Object(o))
    }

    /// A message; a tool-role message goes as a user one (Responses has no tool role).
    fn message_item(
        &mut self,
        idx: usize,
        m: &Message,
        keep: Keep,
        env: Option<&Envelope>,
    ) -> Extra {
        let was_string = env.is_some_and(|e| e.content_was_string);
        let role = if m.role == Role::Tool {
            Role::User
        } else {
            m.role
        };
        let text_type = if role == Role::Assistant {
            OUTPUT_TEXT
        } else {
            INPUT_TEXT
        };
        let mut parts: Vec<Value> = Vec::new();
        for p in &m.parts {
            let text = matches!(p.kind, PartKind::Text(_));
            if role == Role::Assistant && !text && keep == Keep::Canonical {
                // Assistant messages carry output text only.
                self.losses.push(Loss::item(
                    idx,
                    LossKind::PartDropped,
                    "non-text assistant content",
                ));
                continue;
            }
            parts.extend(encode_part(p, text_type, keep, idx, self.losses));
        }
        let content = content_value(parts, was_string || env.is_none(), text_type)
            .unwrap_or_else(|| Value::String(String::new()));
        message(role.as_str(), content, env.is_none())
    }

    /// A tool call as a function, custom tool or local shell call; `None` for a server tool's
    /// call, which only its provider runs.
    fn tool_call(&mut self, idx: usize, c: &ToolCall, keep: Keep) -> Option<Extra> {
        // Taken before the kind is read: a dropped server call still counts as the latest call.
        let call_id = Value::String(self.ids.call(&c.call_id, idx, self.losses));
        let mut o = match (c.kind, keep) {
            (ToolCallKind::Server, _) => {
                self.losses.push(Loss::item(
                    idx,
                    LossKind::ServerToolDropped,
                    format!("server tool call `{}`", c.name),
                ));
                return None;
            }
            (ToolCallKind::Custom, _) => obj([
                ("type", "custom_tool_call".into()),
                ("call_id", call_id),
                ("name", Value::String(c.name.clone())),
                ("input", Value::String(c.arguments.to_text())),
            ]),
            (ToolCallKind::LocalShell, Keep::Extra) => {
                let action = c.arguments.to_value().unwrap_or(Value::Null);
                obj([
                    ("type", "local_shell_call".into()),
                    ("call_id", call_id),
                    ("action", action),
                ])
            }
            (kind, _) => self.function_call(idx, c, kind, keep, call_id),
        };
        carry_extra(&mut o, &c.extra, keep, idx, "tool call", self.losses);
        Some(o)
    }

    /// A `function_call`, also for a local shell call from elsewhere (with a loss).
    fn function_call(
        &mut self,
        idx: usize,
        c: &ToolCall,
        kind: ToolCallKind,
        keep: Keep,
        call_id: Value,
    ) -> Extra {
        if kind == ToolCallKind::LocalShell {
            self.losses.push(Loss::item(
                idx,
                LossKind::ToolKindChanged,
                "local shell call became a function call",
            ));
        }
        let arguments = match (&c.arguments, keep) {
            (Arguments::Json(v), Keep::Extra) => v.clone(),
            (args, _) => Value::String(args.to_text()),
        };
        obj([
            ("type", "function_call".into()),
            ("call_id", call_id),
            ("name", Value::String(c.name.clone())),
            ("arguments", arguments),
        ])
    }

    /// A tool result as the output type of its call's kind; `None` for a server tool's result.
    fn tool_result(&mut self, idx: usize, r: &ToolResult, keep: Keep) -> Option<Extra> {
        let kind = match keep {
            Keep::Extra => r.kind,
            // A result from elsewhere takes the kind of the call it answers.
            Keep::Canonical => self
                .call_kinds
                .get(r.call_id.as_str())
                .copied()
                .unwrap_or(r.kind),
        };
        let ty = self.output_type(idx, kind, keep)?;
        let parts: Vec<Value> = r
            .parts
            .iter()
            .filter_map(|p| encode_part(p, INPUT_TEXT, keep, idx, self.losses))
            .collect();
        let was_string = r.content_was_string || keep == Keep::Canonical;
        let output = content_value(parts, was_string, INPUT_TEXT)
            .unwrap_or_else(|| Value::String(String::new()));
        let call_id = self.ids.result(&r.call_id);
        let mut o = obj([("type", ty.into())]);
        let id_in_extra = r.extra.get("id").and_then(Value::as_str) == Some(call_id.as_str());
        if !(kind == ToolCallKind::LocalShell && keep == Keep::Extra && id_in_extra) {
            o.insert("call_id".into(), Value::String(call_id));
        }
        o.insert("output".into(), output);
        if r.is_error {
            self.losses.push(Loss::item(
                idx,
                LossKind::ErrorFlagDropped,
                "tool result error flag",
            ));
        }
        carry_extra(&mut o, &r.extra, keep, idx, "tool result", self.losses);
        Some(o)
    }

    /// The output item type for a call of `kind`; `None` (with a loss) for a server tool.
    fn output_type(&mut self, idx: usize, kind: ToolCallKind, keep: Keep) -> Option<&'static str> {
        Some(match kind {
            ToolCallKind::Function => "function_call_output",
            ToolCallKind::Custom => "custom_tool_call_output",
            ToolCallKind::LocalShell if keep == Keep::Extra => "local_shell_call_output",
            ToolCallKind::LocalShell => {
                self.losses.push(Loss::item(
                    idx,
                    LossKind::ToolKindChanged,
                    "local shell output became a function output",
                ));
                "function_call_output"
            }
            ToolCallKind::Server => {
                self.losses.push(Loss::item(
                    idx,
                    LossKind::ServerToolDropped,
                    "server tool result",
                ));
                return None;
            }
        })
    }

    /// A reasoning item; `None` (with a loss) for another provider's reasoning or a redacted one,
    /// which Responses cannot read.
    fn reasoning(&mut self, idx: usize, item: &Item, r: &Reasoning, keep: Keep) -> Option<Extra> {
        let writable = keep == Keep::Extra || (is_native(item) && !r.redacted);
        if !writable {
            let what = match dialect(item) {
                Some(f) => format!("reasoning from {f} (thinking, signatures)"),
                None => "redacted reasoning".to_owned(),
            };
            self.losses
                .push(Loss::item(idx, LossKind::ReasoningDropped, what));
            return None;
        }
        let summary: Vec<Value> = r
            .summary
            .iter()
            .map(|s| {
                Value::Object(obj([
                    ("type", "summary_text".into()),
                    ("text", Value::String(s.clone())),
                ]))
            })
            .collect();
        let mut o = obj([
            ("type", "reasoning".into()),
            ("summary", Value::Array(summary)),
        ]);
        if let Some(e) = &r.encrypted {
            o.insert("encrypted_content".into(), Value::String(e.clone()));
        }
        carry_extra(&mut o, &r.extra, keep, idx, "reasoning", self.losses);
        Some(o)
    }

    /// A provider's compaction: OpenAI's own goes back unchanged; Anthropic's block is dropped.
    fn provider_compaction(&mut self, idx: usize, p: &ProviderCompaction) -> Option<Value> {
        if p.wire() != CompactionWire::AnthropicBlock {
            // Always OpenAI's own, whatever the envelope: sent back exactly as received.
            return Some(p.value().clone());
        }
        self.losses.push(Loss::item(
            idx,
            LossKind::OpaqueItemDropped,
            "Anthropic `compaction` block",
        ));
        None
    }

    /// An opaque item: kept as received in the same format, dropped (with a loss) otherwise.
    fn opaque(&mut self, idx: usize, op: &Opaque, keep: Keep) -> Option<Value> {
        if keep == Keep::Extra {
            return Some(op.value.clone());
        }
        self.losses.push(Loss::item(
            idx,
            LossKind::OpaqueItemDropped,
            format!("`{}` item", op.label),
        ));
        None
    }
}

/// A checkpoint as a user message: its text, as a part carrying the checkpoint's part fields
/// unless the envelope's content was a plain string (or there is no envelope).
fn checkpoint(cp: &Checkpoint, env: Option<&Envelope>) -> Extra {
    let was_string = env.is_some_and(|e| e.content_was_string);
    let text = Value::String(checkpoint_text(cp));
    let content = if env.is_none() || was_string {
        text
    } else {
        let mut part = obj([("type", INPUT_TEXT.into()), ("text", text)]);
        merge(&mut part, &checkpoint_part_extra(cp));
        Value::Array(vec![Value::Object(part)])
    };
    message("user", content, env.is_none())
}
