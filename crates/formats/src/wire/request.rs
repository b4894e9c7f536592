//! Request-level conversion between wire formats: top-level fields (`model`, token limits, sampling)
//! and declared tools. Same-format encodes copy both verbatim. Also the request-level steps the
//! decoders share (the `messages` array, the finished conversation).

use super::json::{elem, obj, unexpected, Fields};
use super::{Loss, LossKind};
use crate::error::DecodeError;
use compact_core::model::{Conversation, Extra, Format, Item, ToolSpec};
use serde_json::Value;

/// One request field and its name in each format (`None`: the format has no such field).
struct FieldName {
    chat: &'static [&'static str],
    responses: &'static [&'static str],
    anthropic: &'static [&'static str],
}

/// Request fields with a counterpart in another format. The first name is the one written.
const FIELDS: &[FieldName] = &[
    FieldName {
        chat: &["model"],
        responses: &["model"],
        anthropic: &["model"],
    },
    FieldName {
        chat: &["stream"],
        responses: &["stream"],
        anthropic: &["stream"],
    },
    FieldName {
        chat: &["temperature"],
        responses: &["temperature"],
        anthropic: &["temperature"],
    },
    FieldName {
        chat: &["top_p"],
        responses: &["top_p"],
        anthropic: &["top_p"],
    },
    FieldName {
        chat: &["max_completion_tokens", "max_tokens"],
        responses: &["max_output_tokens"],
        anthropic: &["max_tokens"],
    },
    FieldName {
        chat: &["stop"],
        responses: &[],
        anthropic: &["stop_sequences"],
    },
    FieldName {
        chat: &["parallel_tool_calls"],
        responses: &["parallel_tool_calls"],
        anthropic: &[],
    },
    FieldName {
        chat: &["store"],
        responses: &["store"],
        anthropic: &[],
    },
];

fn names(f: &FieldName, format: Format) -> &'static [&'static str] {
    match format {
        Format::OpenAiChat => f.chat,
        Format::OpenAiResponses => f.responses,
        _ => f.anthropic,
    }
}

/// The top-level fields of the encoded request (besides messages / input / system / tools).
pub(crate) fn top_level(conv: &Conversation, target: Format, losses: &mut Vec<Loss>) -> Extra {
    // Transcripts that embed a wire format (Claude Code, Codex) count as that format; other
    // transcripts have no request fields of their own and are read with Chat names.
    let source = match conv.format {
        None => return conv.extra.clone(),
        Some(Format::ClaudeCode) => Format::Anthropic,
        Some(Format::CodexRollout) => Format::OpenAiResponses,
        Some(f) if f.is_wire() => f,
        Some(_) => Format::OpenAiChat,
    };
    if source == target && conv.format.is_some_and(|f| f.wire_target() == target) {
        return conv.extra.clone();
    }
    let mut rest = conv.extra.clone();
    let mut out = Extra::new();
    for field in FIELDS {
        let Some(value) = names(field, source).iter().find_map(|k| rest.remove(*k)) else {
            continue;
        };
        if value.is_null() {
            // An explicit `null` asks for the default, which is what leaving the field out means.
            continue;
        }
        let Some(to) = names(field, target).first() else {
            rest.insert(names(field, source)[0].to_owned(), value);
            continue;
        };
        let value = match (*to, value) {
            ("stop_sequences", Value::String(s)) => Value::Array(vec![Value::String(s)]),
            (_, v) => v,
        };
        out.insert((*to).to_owned(), value);
    }
    if !rest.is_empty() {
        let keys: Vec<&str> = rest.keys().map(String::as_str).collect();
        losses.push(Loss::request(
            LossKind::RequestFieldDropped,
            keys.join(", "),
        ));
    }
    out
}

/// Whether a declared tool of `source` is a plain function tool (others are provider tools).
fn is_function_tool(spec: &ToolSpec, source: Option<Format>) -> bool {
    let ty = spec.raw.get("type").and_then(Value::as_str);
    match source.map(Format::wire_target) {
        Some(Format::Anthropic) => matches!(ty, None | Some("custom")),
        Some(_) => ty == Some("function"),
        None => true,
    }
}

/// A free-form (`custom`) tool moved between Chat (`{type, custom: {...}}`) and Responses (`{type,
/// name, ...}`), which both support it.
///
/// For Anthropic, which has no free-form tools, it becomes a tool taking `{"input": <text>}`: the
/// shape custom calls are wrapped into (see `LossKind::ArgumentsWrapped`).
fn custom_tool(
    spec: &ToolSpec,
    source: Option<Format>,
    target: Format,
    losses: &mut Vec<Loss>,
) -> Option<Value> {
    let raw = spec.raw.as_object()?;
    if raw.get("type").and_then(Value::as_str) != Some("custom") {
        return None;
    }
    match (source?.wire_target(), target) {
        (Format::OpenAiChat | Format::OpenAiResponses, Format::Anthropic) => {
            losses.push(Loss::request(
                LossKind::ToolKindChanged,
                format!("custom tool `{}` takes {{\"input\": text}}", spec.name),
            ));
            let schema = serde_json::json!({
                "type": "object",
                "properties": {"input": {"type": "string"}},
                "required": ["input"]
            });
            let mut t = obj([("name", Value::String(spec.name.clone()))]);
            if let Some(d) = &spec.description {
                t.insert("description".into(), Value::String(d.clone()));
            }
            t.insert("input_schema".into(), schema);
            Some(Value::Object(t))
        }
        (Format::OpenAiChat, Format::OpenAiResponses) => {
            let mut t = obj([("type", "custom".into())]);
            t.extend(raw.get("custom")?.as_object()?.clone());
            Some(Value::Object(t))
        }
        (Format::OpenAiResponses, Format::OpenAiChat) => {
            let mut inner = raw.clone();
            inner.remove("type");
            Some(Value::Object(obj([
                ("type", "custom".into()),
                ("custom", Value::Object(inner)),
            ])))
        }
        _ => None,
    }
}

/// The `tools` member of the encoded request, if any.
pub(crate) fn tools(conv: &Conversation, target: Format, losses: &mut Vec<Loss>) -> Option<Value> {
    if conv.tools.is_empty() {
        return None;
    }
    if conv.format.map(Format::wire_target) == Some(target) {
        return Some(Value::Array(
            conv.tools.iter().map(|t| t.raw.clone()).collect(),
        ));
    }
    let mut out = Vec::new();
    for spec in &conv.tools {
        if let Some(t) = custom_tool(spec, conv.format, target, losses) {
            out.push(t);
            continue;
        }
        if !is_function_tool(spec, conv.format) {
            losses.push(Loss::request(
                LossKind::ToolSpecDropped,
                format!("provider tool `{}`", spec.name),
            ));
            continue;
        }
        let desc = spec.description.clone().map(Value::String);
        let tool = match target {
            Format::OpenAiChat => {
                let mut f = obj([("name", Value::String(spec.name.clone()))]);
                if let Some(d) = desc {
                    f.insert("description".into(), d);
                }
                if !spec.schema.is_null() {
                    f.insert("parameters".into(), spec.schema.clone());
                }
                obj([("type", "function".into()), ("function", Value::Object(f))])
            }
            Format::OpenAiResponses => {
                let mut t = obj([
                    ("type", "function".into()),
                    ("name", Value::String(spec.name.clone())),
                ]);
                if let Some(d) = desc {
                    t.insert("description".into(), d);
                }
                if !spec.schema.is_null() {
                    t.insert("parameters".into(), spec.schema.clone());
                }
                t
            }
            _ => {
                let mut t = obj([("name", Value::String(spec.name.clone()))]);
                if let Some(d) = desc {
                    t.insert("description".into(), d);
                }
                let schema = if spec.schema.is_null() {
                    Value::Object(obj([("type", "object".into())]))
                } else {
                    spec.schema.clone()
                };
                t.insert("input_schema".into(), schema);
                t
            }
        };
        out.push(Value::Object(tool));
    }
    Some(Value::Array(out))
}

/// Decodes a `tools` array into specs (never fails: unknown shapes keep their raw value and a name
/// taken from wherever the format puts it).
pub(crate) fn decode_tools(tools: &[Value]) -> Vec<ToolSpec> {
    tools
        .iter()
        .map(|raw| {
            // Chat nests the function under `function`/`custom`; Responses and Anthropic are flat.
            let inner = raw
                .get("function")
                .or_else(|| raw.get("custom"))
                .unwrap_or(raw);
            let name = inner
                .get("name")
                .or_else(|| raw.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let description = inner
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let schema = inner
                .get("parameters")
                .or_else(|| inner.get("input_schema"))
                .cloned()
                .unwrap_or(Value::Null);
            ToolSpec {
                name,
                description,
                schema,
                raw: raw.clone(),
            }
        })
        .collect()
}

/// A request decoded from one of its messages on (from the first: all of it), before its items are
/// put together into a conversation.
#[derive(Debug, Default)]
pub(crate) struct Decoded {
    /// The request's format, declared tools and other fields; no items.
    pub(crate) head: Conversation,
    /// The items of the request's own fields (Anthropic `system`, Responses `instructions` or
    /// string `input`), then those of the messages decoded, in order, ids and turns not assigned.
    pub(crate) items: Vec<Item>,
    /// How many of `items` the request's own fields gave.
    pub(crate) leading: usize,
    /// Per message decoded, how many of `items` there are up to its last one.
    pub(crate) ends: Vec<usize>,
}

impl Decoded {
    /// Notes that the request's own fields are decoded (the items so far are theirs).
    pub(crate) fn lead(&mut self) {
        self.leading = self.items.len();
    }

    /// Notes the end of a message's items.
    pub(crate) fn end_message(&mut self) {
        self.ends.push(self.items.len());
    }

    /// The conversation: the head with every item appended (ids made unique, turns assigned).
    pub(crate) fn into_conversation(self) -> Conversation {
        let mut conv = self.head;
        conv.extend_unique(self.items);
        conv
    }
}

/// Decodes the required `messages` array of a request (Chat, Anthropic) from its `from`-th message
/// on with the format's `decode_message(message, index, path, out)`, appending the items to
/// `out.items` (messages before `from` are not read).
pub(crate) fn decode_messages(
    format: Format,
    f: &mut Fields,
    messages: Option<&Vec<Value>>,
    from: usize,
    out: &mut Decoded,
    decode_message: impl Fn(&Value, u32, &str, &mut Vec<Item>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let path = f.at("messages");
    // `messages` is the request's array, left out of `f` ([`Fields::of_request`]).
    let Some(messages) = messages else {
        let other = f.req("messages")?;
        return Err(unexpected(path, "an array", &other));
    };
    f.take("messages");
    for (i, m) in messages.iter().enumerate().skip(from) {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let start = out.items.len();
        decode_message(m, index, &elem(&path, i), &mut out.items)?;
        let digest = super::digest::value_digest(format, &index.to_string(), m);
        super::digest::stamp(&mut out.items[start..], digest);
        out.end_message();
    }
    Ok(())
}

/// The head of a decoded request of `format`: the declared tools (a non-empty `tools` array; any
/// other value stays a plain field) and the fields not taken as extra; no items.
pub(crate) fn decoded_head(format: Format, mut f: Fields) -> Conversation {
    let mut conv = Conversation {
        format: Some(format),
        ..Conversation::default()
    };
    match f.take("tools") {
        Some(Value::Array(tools)) if !tools.is_empty() => conv.tools = decode_tools(&tools),
        Some(other) => f.put("tools", other),
        None => {}
    }
    conv.extra = f.rest();
    conv
}
