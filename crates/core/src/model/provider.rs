//! [`ProviderCompaction`]: a compaction the provider made on its own side (an Anthropic `compaction`
//! block, an OpenAI Responses `compaction` item) or is asked to make (a Responses
//! `compaction_trigger` item), carried as the exact wire object it came in.
//!
//! Invariants: the wire object is never edited (the provider checks it byte for byte: a changed
//! Anthropic block is refused with `compaction_content_mismatch` or `compaction_signature_invalid`),
//! so the model exposes it read-only; no strategy edits, reorders, truncates or summarises it (the
//! partition pins it); only the readable summary of an Anthropic block ([`ProviderCompaction::summary`])
//! may feed Compact's own checkpoint, encrypted content never does.

use serde_json::Value;

/// Which wire shape a provider compaction has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompactionWire {
    /// An Anthropic `compaction` content block (threshold or on-demand mode), inside a message.
    AnthropicBlock,
    /// An OpenAI Responses `compaction` input item (server-side mode, the compact endpoint or the
    /// in-band trigger's output).
    OpenAiItem,
    /// An OpenAI Responses `compaction_trigger` input item: this request asks the provider to compact.
    OpenAiTrigger,
}

impl CompactionWire {
    /// The wire `type` tag.
    pub fn type_tag(self) -> &'static str {
        match self {
            CompactionWire::AnthropicBlock | CompactionWire::OpenAiItem => "compaction",
            CompactionWire::OpenAiTrigger => "compaction_trigger",
        }
    }
}

/// A provider compaction: its wire shape and the whole wire object, verbatim (unknown fields, key
/// order and all). Built only by decoders (or tests) through [`ProviderCompaction::new`]; there is no
/// way to change it afterwards.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderCompaction {
    wire: CompactionWire,
    value: Value,
}

impl ProviderCompaction {
    /// Wraps the wire object `value` (a JSON object whose `type` matches `wire`; decoders check it).
    pub fn new(wire: CompactionWire, value: Value) -> Self {
        ProviderCompaction { wire, value }
    }

    /// The wire shape.
    pub fn wire(&self) -> CompactionWire {
        self.wire
    }

    /// The wire object, exactly as it was received.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// True for a `compaction_trigger` (a request for a compaction, not a compaction).
    pub fn is_trigger(&self) -> bool {
        self.wire == CompactionWire::OpenAiTrigger
    }

    /// The readable summary: the `content` string of an Anthropic block (`None` when it is `null`,
    /// absent, or the item is an OpenAI one, whose payload is encrypted).
    pub fn summary(&self) -> Option<&str> {
        match self.wire {
            CompactionWire::AnthropicBlock => self.value.get("content").and_then(Value::as_str),
            CompactionWire::OpenAiItem | CompactionWire::OpenAiTrigger => None,
        }
    }

    /// True when the item carries an encrypted payload (`encrypted_content`), which only the
    /// provider can read.
    pub fn is_encrypted(&self) -> bool {
        self.value
            .get("encrypted_content")
            .is_some_and(|v| !v.is_null())
    }

    /// The compact JSON text of the wire object (what is counted, and what is sent).
    pub fn wire_text(&self) -> String {
        self.value.to_string()
    }
}
