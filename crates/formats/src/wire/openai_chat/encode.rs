//! Encoding a conversation as a Chat Completions request.
//!
//! Same-format messages are rebuilt from their envelope. Items from elsewhere become canonical
//! messages; consecutive assistant text and tool calls from elsewhere share one assistant message.

use super::parts::encode_part;
use crate::wire::common::{
    checkpoint_part_extra, checkpoint_text, content_value, note_fields, units, Keep, LegacyIds,
    Unit,
};
use crate::wire::json::{merge, obj};
use crate::wire::request::{tools, top_level};
use crate::wire::{Loss, LossKind};
use compact_core::model::{
    Arguments, Conversation, Envelope, Extra, Format, Item, ItemBody, Part, PartKind, Role,
    ToolCall, ToolCallKind, ToolResult,
};
use serde_json::Value;

const FORMAT: Format = Format::OpenAiChat;

/// An assistant message being assembled from items of another format.
#[derive(Default)]
struct Pending {
    content: Vec<Value>,
    calls: Vec<Value>,
}

struct Enc<'a> {
    losses: &'a mut Vec<Loss>,
    ids: LegacyIds,
    out: Vec<Value>,
    pending: Option<Pending>,
}

/// Encodes `conv`.
pub(crate) fn encode_request(conv: &Conversation, losses: &mut Vec<Loss>) -> Value {
    let mut enc = Enc {
        losses,
        ids: LegacyIds::default(),
        out: Vec::new(),
        pending: None,
    };
    for unit in units(&conv.items, FORMAT) {
        match unit {
            Unit::Wire { env, items } => {
                enc.flush();
                enc.wire_message(env, &items);
            }
            Unit::Loose { idx, item, keep } => enc.loose(idx, item, keep),
        }
    }
    enc.flush();
    let mut out = top_level(conv, FORMAT, enc.losses);
    out.insert(
        "messages".into(),
        Value::Array(std::mem::take(&mut enc.out)),
    );
    if let Some(t) = tools(conv, FORMAT, enc.losses) {
        out.insert("tools".into(), t);
    }
    Value::Object(out)
}

impl Enc<'_> {
    fn parts(&mut self, idx: usize, parts: &[Part], keep: Keep) -> Vec<Value> {
        parts
            .iter()
            .filter_map(|p| encode_part(p, keep, idx, self.losses))
            .collect()
    }

    /// Assistant content from elsewhere: Chat assistant messages carry text only.
    fn assistant_parts(&mut self, idx: usize, parts: &[Part], keep: Keep) -> Vec<Value> {
        let mut out = Vec::new();
        for p in parts {
            match &p.kind {
                PartKind::Text(_) => out.extend(encode_part(p, keep, idx, self.losses)),
                _ if keep == Keep::Extra => out.extend(encode_part(p, keep, idx, self.losses)),
                _ => self.losses.push(Loss::item(
                    idx,
                    LossKind::PartDropped,
                    "non-text assistant content",
                )),
            }
        }
        out
    }

    fn checkpoint_part(cp: &compact_core::model::Checkpoint, keep: Keep) -> Value {
        let mut o = obj([
            ("type", "text".into()),
            ("text", Value::String(checkpoint_text(cp))),
        ]);
        if keep == Keep::Extra {
            merge(&mut o, &checkpoint_part_extra(cp));
        }
        Value::Object(o)
    }

    /// One message of this format, rebuilt from its envelope.
    fn wire_message(&mut self, env: &Envelope, items: &[(usize, &Item)]) {
        let Some((_, first)) = items.first() else {
            return;
        };
        if let ItemBody::ToolResult(r) = first.body() {
            let mut o = self.result_head(r);
            let idx = items[0].0;
            let parts = self.parts(idx, &r.parts, Keep::Extra);
            if let Some(c) = content_value(parts, env.content_was_string, "text") {
                o.insert("content".into(), c);
            }
            merge(&mut o, &env.extra);
            self.out.push(Value::Object(o));
            for (idx, _) in &items[1..] {
                self.losses.push(Loss::item(
                    *idx,
                    LossKind::PartDropped,
                    "item grouped with a tool message",
                ));
            }
            return;
        }
        let role = match first.body() {
            ItemBody::Message(m) => m.role.as_str(),
            ItemBody::Checkpoint(_) => "user",
            _ => "assistant",
        };
        let mut content: Option<Vec<Value>> = None;
        let mut calls = Vec::new();
        let mut function_call = None;
        for (idx, item) in items {
            match item.body() {
                ItemBody::Message(m) => {
                    let parts = self.parts(*idx, &m.parts, Keep::Extra);
                    content.get_or_insert_with(Vec::new).extend(parts);
                }
                ItemBody::Checkpoint(cp) => content
                    .get_or_insert_with(Vec::new)
                    .push(Self::checkpoint_part(cp, Keep::Extra)),
                ItemBody::ToolCall(c) if c.call_id.is_empty() => {
                    let mut f = obj([
                        ("name", Value::String(c.name.clone())),
                        ("arguments", arguments(c, Keep::Extra)),
                    ]);
                    merge(&mut f, &c.extra);
                    function_call = Some(Value::Object(f));
                }
                ItemBody::ToolCall(c) => {
                    if let Some(v) = self.tool_call(*idx, c, Keep::Extra) {
                        calls.push(v);
                    }
                }
                _ => self.unsupported(*idx, item),
            }
        }
        let mut o = obj([("role", role.into())]);
        if let Some(parts) = content {
            if let Some(c) = content_value(parts, env.content_was_string, "text") {
                o.insert("content".into(), c);
            }
        }
        if !calls.is_empty() {
            o.insert("tool_calls".into(), Value::Array(calls));
        }
        if let Some(fc) = function_call {
            o.insert("function_call".into(), fc);
        }
        merge(&mut o, &env.extra);
        self.out.push(Value::Object(o));
    }

    /// `{role: tool, tool_call_id}` or, for a legacy result, `{role: function, name}`.
    fn result_head(&mut self, r: &ToolResult) -> Extra {
        if r.call_id.is_empty() {
            let name = r.tool_name.clone().unwrap_or_default();
            obj([("role", "function".into()), ("name", Value::String(name))])
        } else {
            obj([
                ("role", "tool".into()),
                ("tool_call_id", Value::String(r.call_id.clone())),
            ])
        }
    }

    /// Reports an item Chat cannot carry.
    fn unsupported(&mut self, idx: usize, item: &Item) {
        let (kind, what) = match item.body() {
            ItemBody::Reasoning(_) => (
                LossKind::ReasoningDropped,
                "reasoning (Chat requests carry none)".to_owned(),
            ),
            ItemBody::Opaque(o) => (LossKind::OpaqueItemDropped, format!("`{}` item", o.label)),
            ItemBody::ProviderCompaction(p) => (
                LossKind::OpaqueItemDropped,
                format!("provider `{}` (Chat has none)", p.wire().type_tag()),
            ),
            ItemBody::ToolCall(c) => (
                LossKind::ServerToolDropped,
                format!("server tool call `{}`", c.name),
            ),
            ItemBody::ToolResult(_) => {
                (LossKind::ServerToolDropped, "server tool result".to_owned())
            }
            _ => (LossKind::PartDropped, "item".to_owned()),
        };
        self.losses.push(Loss::item(idx, kind, what));
    }

    /// A `tool_calls` entry; `None` for server tool calls.
    fn tool_call(&mut self, idx: usize, c: &ToolCall, keep: Keep) -> Option<Value> {
        let id = Value::String(self.ids.call(&c.call_id, idx, self.losses));
        let mut o = match c.kind {
            ToolCallKind::Custom => {
                let inner = obj([
                    ("name", Value::String(c.name.clone())),
                    ("input", Value::String(c.arguments.to_text())),
                ]);
                obj([("id", id), ("custom", Value::Object(inner))])
            }
            ToolCallKind::Function | ToolCallKind::LocalShell => {
                if c.kind == ToolCallKind::LocalShell {
                    self.losses.push(Loss::item(
                        idx,
                        LossKind::ToolKindChanged,
                        "local shell call became a function call",
                    ));
                }
                let inner = obj([
                    ("name", Value::String(c.name.clone())),
                    ("arguments", arguments(c, keep)),
                ]);
                obj([("id", id), ("function", Value::Object(inner))])
            }
            ToolCallKind::Server => {
                self.losses.push(Loss::item(
                    idx,
                    LossKind::ServerToolDropped,
                    format!("server tool call `{}`", c.name),
                ));
                return None;
            }
        };
        if keep == Keep::Extra {
            // The decoder leaves `type` in extra (clients omit it); re-emitting it from there keeps it exact.
            merge(&mut o, &c.extra);
        } else {
            let ty = if c.kind == ToolCallKind::Custom {
                "custom"
            } else {
                "function"
            };
            o.insert("type".into(), ty.into());
            note_fields(self.losses, idx, "tool call", &c.extra);
        }
        Some(Value::Object(o))
    }

    /// An item with no envelope of this format.
    fn loose(&mut self, idx: usize, item: &Item, keep: Keep) {
        match item.body() {
            ItemBody::Message(m) if m.role == Role::Assistant => {
                let parts = self.assistant_parts(idx, &m.parts, keep);
                self.pending
                    .get_or_insert_with(Pending::default)
                    .content
                    .extend(parts);
                return;
            }
            ItemBody::ToolCall(c) => {
                if let Some(v) = self.tool_call(idx, c, keep) {
                    self.pending
                        .get_or_insert_with(Pending::default)
                        .calls
                        .push(v);
                }
                return;
            }
            // What Chat cannot carry is dropped where it stands, without closing the assistant
            // message being built: interleaved reasoning or a server tool between two calls must not
            // split one assistant turn in two (its calls are answered after the whole turn).
            ItemBody::Reasoning(_) | ItemBody::Opaque(_) | ItemBody::ProviderCompaction(_) => {
                self.unsupported(idx, item);
                return;
            }
            ItemBody::ToolResult(r) if r.kind == ToolCallKind::Server => {
                self.unsupported(idx, item);
                return;
            }
            _ => {}
        }
        self.flush();
        match item.body() {
            ItemBody::Message(m) => {
                let role = if m.role == Role::Tool {
                    "user"
                } else {
                    m.role.as_str()
                };
                let parts = self.parts(idx, &m.parts, keep);
                let content = content_value(parts, true, "text")
                    .unwrap_or_else(|| Value::String(String::new()));
                self.out.push(Value::Object(obj([
                    ("role", role.into()),
                    ("content", content),
                ])));
            }
            ItemBody::Checkpoint(cp) => {
                let content = Value::String(checkpoint_text(cp));
                self.out.push(Value::Object(obj([
                    ("role", "user".into()),
                    ("content", content),
                ])));
            }
            ItemBody::ToolResult(r) if r.kind != ToolCallKind::Server => {
                let mut o = if r.call_id.is_empty() {
                    self.result_head(r)
                } else {
                    obj([
                        ("role", "tool".into()),
                        ("tool_call_id", Value::String(self.ids.result(&r.call_id))),
                    ])
                };
                o.insert("content".into(), self.result_content(idx, r));
                if r.is_error {
                    self.losses.push(Loss::item(
                        idx,
                        LossKind::ErrorFlagDropped,
                        "tool result error flag",
                    ));
                }
                if r.kind != ToolCallKind::Function && r.kind != ToolCallKind::Custom {
                    self.losses.push(Loss::item(
                        idx,
                        LossKind::ToolKindChanged,
                        "local shell output became a tool message",
                    ));
                }
                note_fields(self.losses, idx, "tool result", &r.extra);
                self.out.push(Value::Object(o));
            }
            _ => self.unsupported(idx, item),
        }
    }

    /// Tool message content: text only (a string when there is one text part).
    fn result_content(&mut self, idx: usize, r: &ToolResult) -> Value {
        let mut texts = Vec::new();
        for p in &r.parts {
            match &p.kind {
                PartKind::Text(t) => texts.push(t.clone()),
                _ => self.losses.push(Loss::item(
                    idx,
                    LossKind::PartDropped,
                    "non-text tool output",
                )),
            }
            note_fields(self.losses, idx, "part", &p.extra);
        }
        match texts.as_slice() {
            [one] => Value::String(one.clone()),
            [] => Value::String(String::new()),
            _ => Value::Array(
                texts
                    .into_iter()
                    .map(|t| {
                        Value::Object(obj([("type", "text".into()), ("text", Value::String(t))]))
                    })
                    .collect(),
            ),
        }
    }

    /// Emits the pending assistant message.
    fn flush(&mut self) {
        let Some(p) = self.pending.take() else { return };
        let content = if p.content.is_empty() && !p.calls.is_empty() {
            Value::Null
        } else {
            content_value(p.content, true, "text").unwrap_or_else(|| Value::String(String::new()))
        };
        let mut o = obj([("role", "assistant".into()), ("content", content)]);
        if !p.calls.is_empty() {
            o.insert("tool_calls".into(), Value::Array(p.calls));
        }
        self.out.push(Value::Object(o));
    }
}

/// Function call arguments: a string (JSON text); a JSON value only when it came as one from Chat.
fn arguments(c: &ToolCall, keep: Keep) -> Value {
    match (&c.arguments, keep) {
        (Arguments::Json(v), Keep::Extra) => v.clone(),
        (args, _) => Value::String(args.to_text()),
    }
}
