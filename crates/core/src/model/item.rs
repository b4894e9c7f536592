//! Items: the units a conversation is made of, with their metadata and a per-item token memo.

use super::{Envelope, Extra, Format, Part, ProviderCompaction};
use crate::tokens::TokenMemo;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// Who speaks an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// System prompt.
    System,
    /// Developer instructions (OpenAI).
    Developer,
    /// The user (or the harness speaking as the user).
    User,
    /// The model.
    Assistant,
    /// A tool's output.
    Tool,
}

impl Role {
    /// Lower-case name as used on most wires.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stable item id, unique within its conversation: the source's record id when it has one (a
/// Claude Code uuid, a Responses item id, a transcript line), else the item's content id (see
/// [`super::content_id`]), so an item keeps its id through compactions and re-imports.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ItemId(String);

impl ItemId {
    /// Wraps a string id.
    pub fn new(id: impl Into<String>) -> Self {
        ItemId(id.into())
    }
    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id as a checkpoint cites it: a UUID (Claude Code record ids, possibly with a `.k`
    /// suffix naming one of the record's items) shortened to its first eight hex digits plus the
    /// suffix; any other id unchanged. [`super::Conversation::find_cited`] reads it back.
    pub fn cited(&self) -> String {
        const UUID_LEN: usize = 36;
        const SHORT_LEN: usize = 8;
        let is_uuid = |s: &str| {
            s.len() == UUID_LEN
                && s.char_indices().all(|(i, c)| {
                    if matches!(i, 8 | 13 | 18 | 23) {
                        c == '-'
                    } else {
                        c.is_ascii_hexdigit()
                    }
                })
        };
        match self.0.get(..UUID_LEN) {
            Some(head) if is_uuid(head) => {
                format!("{}{}", &self.0[..SHORT_LEN], &self.0[UUID_LEN..])
            }
            _ => self.0.clone(),
        }
    }
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who can see an item. Compaction hides items from the model; nothing is ever deleted from the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Visibility {
    /// Sent to the model.
    pub model: bool,
    /// Shown to the user.
    pub user: bool,
}

impl Default for Visibility {
    fn default() -> Self {
        Visibility {
            model: true,
            user: true,
        }
    }
}

/// Per-item metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ItemMeta {
    /// Stable id.
    pub id: ItemId,
    /// Never pruned, truncated or summarised.
    pub protected: bool,
    /// Who sees it.
    pub visibility: Visibility,
    /// Turn index: a turn opens at each real user message.
    pub turn: u32,
    /// Timestamp as recorded by the source (RFC 3339 when known), verbatim.
    pub timestamp: Option<String>,
    /// Format the item was decoded from (`None` when built in memory).
    pub origin: Option<Format>,
    /// The wire message that held it, shared with its siblings.
    pub envelope: Option<Arc<Envelope>>,
}

/// What an item is, without its data: for counting and reporting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ItemKind {
    /// System message.
    System,
    /// Developer message.
    Developer,
    /// User message.
    User,
    /// Assistant text (or media).
    Assistant,
    /// A tool call made by the assistant.
    ToolCall,
    /// A tool's result.
    ToolResult,
    /// Reasoning / thinking.
    Reasoning,
    /// A compaction checkpoint (summary of earlier items).
    Checkpoint,
    /// An opaque provider item.
    Opaque,
    /// A compaction the provider made (or is asked to make) on its side: pinned, opaque.
    ProviderCompaction,
}

impl ItemKind {
    /// Lower-case name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::System => "system",
            ItemKind::Developer => "developer",
            ItemKind::User => "user",
            ItemKind::Assistant => "assistant",
            ItemKind::ToolCall => "tool_call",
            ItemKind::ToolResult => "tool_result",
            ItemKind::Reasoning => "reasoning",
            ItemKind::Checkpoint => "checkpoint",
            ItemKind::Opaque => "opaque",
            ItemKind::ProviderCompaction => "provider_compaction",
        }
    }
}

/// A system, developer, user or assistant message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Speaker (never [`Role::Tool`]: tool output is a [`ToolResult`]).
    pub role: Role,
    /// Content parts.
    pub parts: Vec<Part>,
}

/// How a tool call is expressed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolCallKind {
    /// A JSON-argument function call (Chat `tool_calls`, Responses `function_call`, Anthropic `tool_use`).
    Function,
    /// A free-form input call (Responses `custom_tool_call`).
    Custom,
    /// Responses `local_shell_call`.
    LocalShell,
    /// A call the provider runs itself (Anthropic `server_tool_use`, web search...).
    Server,
}

/// Tool call arguments as they were on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// A JSON value (Anthropic `input`, Responses `action`).
    Json(Value),
    /// A string (a JSON document for Chat/Responses function calls, free text for custom tools).
    Text(String),
}

impl Arguments {
    /// The arguments as JSON: `Json` as is, `Text` parsed when it is a JSON document.
    pub fn to_value(&self) -> Option<Value> {
        match self {
            Arguments::Json(v) => Some(v.clone()),
            Arguments::Text(s) => serde_json::from_str(s).ok(),
        }
    }

    /// The string form sent to the model (JSON text or free text).
    pub fn to_text(&self) -> String {
        match self {
            Arguments::Json(v) => v.to_string(),
            Arguments::Text(s) => s.clone(),
        }
    }
}

/// A tool call made by the assistant.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// Call id that the result answers.
    pub call_id: String,
    /// Tool name.
    pub name: String,
    /// Arguments.
    pub arguments: Arguments,
    /// Wire shape.
    pub kind: ToolCallKind,
    /// Unmodelled fields of the call object.
    pub extra: Extra,
}

/// A tool's result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The call this answers.
    pub call_id: String,
    /// Name of the tool, resolved from the call when the wire does not carry it.
    pub tool_name: Option<String>,
    /// Output parts (usually one text part).
    pub parts: Vec<Part>,
    /// The tool reported failure.
    pub is_error: bool,
    /// Wire shape of the call this answers.
    pub kind: ToolCallKind,
    /// The output was a plain string on the wire (rather than parts).
    pub content_was_string: bool,
    /// Unmodelled fields of the result object.
    pub extra: Extra,
}

impl ToolCall {
    /// A JSON-argument function call (the shape every provider has).
    pub fn function(call_id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            call_id: call_id.into(),
            name: name.into(),
            arguments: Arguments::Json(arguments),
            kind: ToolCallKind::Function,
            extra: Extra::default(),
        }
    }
}

impl ToolResult {
    /// A successful function-call result holding one text part, sent as a plain string.
    pub fn text(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        ToolResult {
            call_id: call_id.into(),
            tool_name: None,
            parts: vec![Part::text(text)],
            is_error: false,
            kind: ToolCallKind::Function,
            content_was_string: true,
            extra: Extra::default(),
        }
    }
}

/// Model reasoning: visible thinking, summaries, signatures, encrypted payloads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reasoning {
    /// Visible reasoning text (Anthropic `thinking`), if any.
    pub text: Option<String>,
    /// Summary texts (Responses `summary[]`).
    pub summary: Vec<String>,
    /// Signature that must be returned unmodified (Anthropic).
    pub signature: Option<String>,
    /// Encrypted payload (Responses `encrypted_content`, Anthropic `redacted_thinking.data`).
    pub encrypted: Option<String>,
    /// Anthropic `redacted_thinking`.
    pub redacted: bool,
    /// Unmodelled fields.
    pub extra: Extra,
}

/// A compaction checkpoint: a record of earlier work standing in for the items it covers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Checkpoint {
    /// The checkpoint text as the model will see it.
    pub text: String,
    /// How many compactions this checkpoint folds in (1 for the first).
    pub generation: u32,
    /// Ids of the items it stands for.
    pub covers: Vec<ItemId>,
    /// Unmodelled fields, when decoded from a transcript.
    pub extra: Extra,
}

/// Opening of a checkpoint's wire text: `<compact-checkpoint generation="N">`. A user-role text message
/// that starts with this marker is decoded as a [`Checkpoint`], so re-compaction folds it in.
pub const CHECKPOINT_OPEN: &str = "<compact-checkpoint";
/// Closing line of a checkpoint's wire text.
pub const CHECKPOINT_CLOSE: &str = "</compact-checkpoint>";

impl Checkpoint {
    /// The text sent to the model: the body wrapped in the checkpoint marker.
    pub fn wire_text(&self) -> String {
        format!(
            "{CHECKPOINT_OPEN} generation=\"{}\">\n{}\n{CHECKPOINT_CLOSE}",
            self.generation,
            self.text.trim_end()
        )
    }

    /// Recognises checkpoint wire text (see [`Checkpoint::wire_text`]); `None` for any other text.
    pub fn from_wire_text(text: &str) -> Option<Checkpoint> {
        let rest = text.strip_prefix(CHECKPOINT_OPEN)?;
        let (attrs, body) = rest.split_once(">\n").or_else(|| rest.split_once('>'))?;
        let generation = attrs
            .split_once("generation=\"")
            .and_then(|(_, g)| g.split('"').next())
            .and_then(|g| g.parse().ok())
            .unwrap_or(1);
        let body = body.trim_end();
        let body = body
            .strip_suffix(CHECKPOINT_CLOSE)
            .unwrap_or(body)
            .trim_end();
        Some(Checkpoint {
            text: body.to_owned(),
            generation,
            ..Checkpoint::default()
        })
    }
}

/// A provider item the model does not understand, carried through untouched.
#[derive(Debug, Clone, PartialEq)]
pub struct Opaque {
    /// The item's type tag on the wire (e.g. `compaction`, `web_search_call`).
    pub label: String,
    /// The role it speaks with, if it has one.
    pub role: Option<Role>,
    /// The whole wire object.
    pub value: Value,
}

/// The data of an item.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemBody {
    /// A provider's own compaction (see [`ProviderCompaction`]).
    ProviderCompaction(ProviderCompaction),
    /// A message.
    Message(Message),
    /// A tool call.
    ToolCall(ToolCall),
    /// A tool result.
    ToolResult(ToolResult),
    /// Reasoning.
    Reasoning(Reasoning),
    /// A checkpoint.
    Checkpoint(Checkpoint),
    /// An opaque provider item.
    Opaque(Opaque),
}

/// One item of a conversation.
///
/// The body is reachable only through [`Item::body`] and [`Item::body_mut`], so that the cached token
/// count ([`TokenMemo`]) is invalidated whenever the content can change.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Metadata (does not affect the token count).
    pub meta: ItemMeta,
    body: ItemBody,
    memo: TokenMemo,
    wire: WireDigest,
}

/// A fingerprint of the wire JSON an item was decoded from: the wire message (or request field) and
/// the item's place among that message's items, hashed by the decoder. Two decoded items with equal
/// fingerprints came from byte-for-byte equal wire JSON at the same place, so (in the same prefix of
/// a request) they are the same item; comparing fingerprints is how a resent history is recognised
/// without reading it twice. Kept in memory only, never serialised; cleared whenever the body may
/// change; like the token memo it is a cache, not data, and equal to any other fingerprint.
#[derive(Debug, Clone, Copy, Default)]
pub struct WireDigest(Option<u128>);

impl PartialEq for WireDigest {
    fn eq(&self, _: &WireDigest) -> bool {
        true
    }
}

impl Item {
    /// An item with default metadata.
    pub fn new(body: ItemBody) -> Self {
        Item {
            meta: ItemMeta::default(),
            body,
            memo: TokenMemo::default(),
            wire: WireDigest::default(),
        }
    }

    /// A single-text-part message.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Item::new(ItemBody::Message(Message {
            role,
            parts: vec![Part::text(text)],
        }))
    }

    /// Sets the id (builder style).
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.meta.id = ItemId::new(id);
        self
    }

    /// True when the item is pinned by its owner: [`ItemMeta::protected`] is set, or the wire object
    /// that carried it has `flag: true` (the policy's `protected_flag`, `"protected"` by default) on
    /// its message, its tool call or result block, or one of its content parts.
    pub fn is_protected(&self, flag: &str) -> bool {
        fn set(extra: &super::Extra, flag: &str) -> bool {
            extra.get(flag) == Some(&serde_json::Value::Bool(true))
        }
        if self.meta.protected {
            return true;
        }
        if self
            .meta
            .envelope
            .as_ref()
            .is_some_and(|e| set(&e.extra, flag))
        {
            return true;
        }
        match &self.body {
            ItemBody::Message(m) => m.parts.iter().any(|p| set(&p.extra, flag)),
            ItemBody::ToolCall(c) => set(&c.extra, flag),
            ItemBody::ToolResult(r) => {
                set(&r.extra, flag) || r.parts.iter().any(|p| set(&p.extra, flag))
            }
            _ => false,
        }
    }

    /// The body.
    pub fn body(&self) -> &ItemBody {
        &self.body
    }

    /// The body, mutably; clears the cached token count.
    pub fn body_mut(&mut self) -> &mut ItemBody {
        self.memo.clear();
        self.wire = WireDigest::default();
        &mut self.body
    }

    /// Replaces the body; clears the cached token count.
    pub fn set_body(&mut self, body: ItemBody) {
        self.memo.clear();
        self.wire = WireDigest::default();
        self.body = body;
    }

    /// The fingerprint of the wire JSON this item was decoded from ([`WireDigest`]), if a decoder set
    /// one and the body was not changed since.
    pub fn wire_digest(&self) -> Option<u128> {
        self.wire.0
    }

    /// Sets the wire fingerprint (for decoders: see [`WireDigest`]). A caller that replaces
    /// [`ItemMeta::envelope`] of a decoded item should clear it with [`Item::clear_wire_digest`].
    pub fn set_wire_digest(&mut self, digest: u128) {
        self.wire = WireDigest(Some(digest));
    }

    /// Forgets the wire fingerprint.
    pub fn clear_wire_digest(&mut self) {
        self.wire = WireDigest::default();
    }

    /// The token memo (used by [`crate::tokens::TokenCounter`]).
    pub fn memo(&self) -> &TokenMemo {
        &self.memo
    }

    /// The speaking role.
    pub fn role(&self) -> Role {
        match &self.body {
            ItemBody::Message(m) => m.role,
            ItemBody::ToolCall(_) | ItemBody::Reasoning(_) => Role::Assistant,
            ItemBody::ToolResult(_) => Role::Tool,
            ItemBody::Checkpoint(_) => Role::User,
            ItemBody::Opaque(o) => o.role.unwrap_or(Role::Assistant),
            ItemBody::ProviderCompaction(_) => Role::Assistant,
        }
    }

    /// The kind, for counting and reports.
    pub fn kind(&self) -> ItemKind {
        match &self.body {
            ItemBody::Message(m) => match m.role {
                Role::System => ItemKind::System,
                Role::Developer => ItemKind::Developer,
                Role::User => ItemKind::User,
                Role::Assistant | Role::Tool => ItemKind::Assistant,
            },
            ItemBody::ToolCall(_) => ItemKind::ToolCall,
            ItemBody::ToolResult(_) => ItemKind::ToolResult,
            ItemBody::Reasoning(_) => ItemKind::Reasoning,
            ItemBody::Checkpoint(_) => ItemKind::Checkpoint,
            ItemBody::Opaque(_) => ItemKind::Opaque,
            ItemBody::ProviderCompaction(_) => ItemKind::ProviderCompaction,
        }
    }

    /// The tool call, if this is one.
    pub fn as_tool_call(&self) -> Option<&ToolCall> {
        match &self.body {
            ItemBody::ToolCall(c) => Some(c),
            _ => None,
        }
    }

    /// The tool result, if this is one.
    pub fn as_tool_result(&self) -> Option<&ToolResult> {
        match &self.body {
            ItemBody::ToolResult(r) => Some(r),
            _ => None,
        }
    }

    /// All plain text of the item joined by newlines (text parts, tool output text, reasoning text,
    /// checkpoint text, tool name and arguments). Used for search, probes and summaries.
    pub fn plain_text(&self) -> String {
        fn parts_text(parts: &[Part]) -> String {
            let texts: Vec<&str> = parts.iter().filter_map(Part::as_text).collect();
            texts.join("\n")
        }
        match &self.body {
            ItemBody::Message(m) => parts_text(&m.parts),
            ItemBody::ToolCall(c) => format!("{} {}", c.name, c.arguments.to_text()),
            ItemBody::ToolResult(r) => parts_text(&r.parts),
            ItemBody::Reasoning(r) => {
                let mut out: Vec<&str> = r.text.iter().map(String::as_str).collect();
                out.extend(r.summary.iter().map(String::as_str));
                out.join("\n")
            }
            ItemBody::Checkpoint(c) => c.text.clone(),
            ItemBody::Opaque(_) => String::new(),
            ItemBody::ProviderCompaction(p) => p.summary().unwrap_or_default().to_owned(),
        }
    }
}
