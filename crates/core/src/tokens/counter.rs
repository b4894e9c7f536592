//! [`TokenCounter`]: counts items and conversations with one encoding and one provider framing,
//! memoising each item's content count in the item itself.

use super::media::{audio_tokens, image_tokens, MediaModel, DOCUMENT_UNKNOWN_TOKENS};
use super::Encoding;
use crate::model::{Conversation, Item, ItemBody, ItemKind, Part, PartKind, Role, ToolSpec};
use std::collections::BTreeMap;

/// Per-message framing overhead of a provider: the tokens a provider adds around content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framing {
    /// Tokens added per message (role markers, separators).
    pub per_message: u32,
    /// Tokens added once per request (reply priming).
    pub per_request: u32,
    /// Tokens added per tool declaration, on top of its name, description and schema.
    pub per_tool: u32,
}

impl Framing {
    /// OpenAI chat framing: `<|start|>role<|message|>...<|end|>` is 3 tokens per message, and every
    /// reply is primed with 3 tokens (`<|start|>assistant<|message|>`), as OpenAI's cookbook documents.
    pub const OPENAI: Framing = Framing {
        per_message: 3,
        per_request: 3,
        per_tool: 8,
    };
    /// Anthropic does not publish its framing; `count_tokens` responses on short messages show about
    /// 4 tokens per message and 7 for the request.
    pub const ANTHROPIC: Framing = Framing {
        per_message: 4,
        per_request: 7,
        per_tool: 10,
    };
    /// Gemini does not publish its framing either; `countTokens` on multi-turn `contents` adds a
    /// couple of tokens per turn (role and turn markers) and nothing per request. An estimate.
    pub const GEMINI: Framing = Framing {
        per_message: 2,
        per_request: 0,
        per_tool: 8,
    };
    /// Open-weight chat templates (Llama 3 `<|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>`,
    /// ChatML `<|im_start|>role\n...<|im_end|>\n`): about 5 tokens per message, and the assistant
    /// header that primes the reply (3 tokens) once per request.
    pub const CHAT_TEMPLATE: Framing = Framing {
        per_message: 5,
        per_request: 3,
        per_tool: 8,
    };
    /// No framing (raw text counting).
    pub const NONE: Framing = Framing {
        per_message: 0,
        per_request: 0,
        per_tool: 0,
    };
}

/// Token totals of a conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConversationCount {
    /// Everything the request costs: items, framing and tool declarations.
    pub total: usize,
    /// Tokens of the tool declarations.
    pub tools: usize,
    /// Per item, in order (content + framing).
    pub per_item: Vec<u32>,
    /// By role.
    pub by_role: BTreeMap<Role, usize>,
    /// By item kind.
    pub by_kind: BTreeMap<ItemKind, usize>,
    /// Tool-result and tool-call tokens by tool name.
    pub by_tool: BTreeMap<String, usize>,
}

/// Counts tokens with one encoding, one framing and one media cost model. `Copy`, `Send` and `Sync`:
/// share it freely across threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCounter {
    encoding: Encoding,
    framing: Framing,
    media: MediaModel,
}

/// Encrypted reasoning is base64 of roughly the reasoning tokens' text: 4 bytes of payload per token.
const ENCRYPTED_BYTES_PER_TOKEN: usize = 4;

impl TokenCounter {
    /// A counter with OpenAI framing for exact encodings and Anthropic framing for estimates.
    pub fn new(encoding: Encoding) -> Self {
        let framing = if encoding.is_exact() {
            Framing::OPENAI
        } else {
            Framing::ANTHROPIC
        };
        TokenCounter {
            encoding,
            framing,
            media: MediaModel::default(),
        }
    }

    /// A counter with an explicit framing.
    pub fn with_framing(encoding: Encoding, framing: Framing) -> Self {
        TokenCounter {
            encoding,
            framing,
            media: MediaModel::default(),
        }
    }

    /// The same counter with another media cost model (default: OpenAI's).
    pub fn with_media(self, media: MediaModel) -> Self {
        TokenCounter { media, ..self }
    }

    /// The media cost model.
    pub fn media(&self) -> MediaModel {
        self.media
    }

    /// The encoding.
    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The framing.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// Tokens of raw text.
    pub fn count_text(&self, text: &str) -> usize {
        self.encoding.count(text)
    }

    /// Tokens of one item: content (memoised in the item) plus per-message framing.
    pub fn count_item(&self, item: &Item) -> usize {
        self.content_tokens(item) + self.framing.per_message as usize
    }

    /// Content tokens of one item, from its memo when present.
    pub fn content_tokens(&self, item: &Item) -> usize {
        if let Some(n) = item.memo().get_keyed(self.encoding, self.media) {
            return n as usize;
        }
        let n = self.count_body(item.body());
        let stored = u32::try_from(n).unwrap_or(u32::MAX);
        item.memo().set_keyed(self.encoding, self.media, stored);
        n
    }

    /// Tokens of the tool declarations.
    pub fn count_tools(&self, tools: &[ToolSpec]) -> usize {
        tools
            .iter()
            .map(|t| {
                self.count_text(&t.name)
                    + t.description.as_deref().map_or(0, |d| self.count_text(d))
                    + if t.schema.is_null() {
                        0
                    } else {
                        self.count_text(&t.schema.to_string())
                    }
                    + self.framing.per_tool as usize
            })
            .sum()
    }

    /// Tokens of a whole request. Items hidden from the model are not counted.
    pub fn count_conversation(&self, conv: &Conversation) -> ConversationCount {
        let mut out = ConversationCount {
            tools: self.count_tools(&conv.tools),
            per_item: Vec::with_capacity(conv.items.len()),
            ..ConversationCount::default()
        };
        let mut total = out.tools + self.framing.per_request as usize;
        for item in &conv.items {
            if !item.meta.visibility.model {
                out.per_item.push(0);
                continue;
            }
            let n = self.count_item(item);
            total += n;
            out.per_item.push(u32::try_from(n).unwrap_or(u32::MAX));
            *out.by_role.entry(item.role()).or_default() += n;
            *out.by_kind.entry(item.kind()).or_default() += n;
            let tool = match item.body() {
                ItemBody::ToolCall(c) => Some(c.name.as_str()),
                ItemBody::ToolResult(r) => r.tool_name.as_deref(),
                _ => None,
            };
            if let Some(tool) = tool {
                *out.by_tool.entry(tool.to_owned()).or_default() += n;
            }
        }
        out.total = total;
        out
    }

    /// Total only (no breakdown, no allocation).
    pub fn total(&self, conv: &Conversation) -> usize {
        let items: usize = conv
            .items
            .iter()
            .filter(|i| i.meta.visibility.model)
            .map(|i| self.count_item(i))
            .sum();
        items + self.count_tools(&conv.tools) + self.framing.per_request as usize
    }

    fn count_parts(&self, parts: &[Part]) -> usize {
        parts.iter().map(|p| self.count_part(p)).sum()
    }

    /// Tokens of one content part (text exact; media estimated).
    pub fn count_part(&self, part: &Part) -> usize {
        match &part.kind {
            PartKind::Text(t) => self.count_text(t),
            PartKind::Image(m) => image_tokens(self.media, m),
            PartKind::File(m) => match &m.source {
                crate::model::MediaSource::Text(t) => self.count_text(t),
                _ => DOCUMENT_UNKNOWN_TOKENS,
            },
            PartKind::Audio(m) => audio_tokens(self.media, m),
            PartKind::Opaque(v) => self.count_text(&v.to_string()),
        }
    }

    fn count_body(&self, body: &ItemBody) -> usize {
        match body {
            ItemBody::Message(m) => self.count_parts(&m.parts),
            ItemBody::ToolCall(c) => match &c.arguments {
                crate::model::Arguments::Text(s) => self.count_text(&c.name) + self.count_text(s),
                crate::model::Arguments::Json(v) => {
                    self.count_text(&c.name) + self.count_text(&v.to_string())
                }
            },
            ItemBody::ToolResult(r) => self.count_parts(&r.parts),
            ItemBody::Reasoning(r) => {
                r.text.as_deref().map_or(0, |t| self.count_text(t))
                    + r.summary.iter().map(|s| self.count_text(s)).sum::<usize>()
                    + r.encrypted
                        .as_ref()
                        .map_or(0, |e| e.len() / ENCRYPTED_BYTES_PER_TOKEN)
            }
            ItemBody::Checkpoint(c) => self.count_text(&c.text),
            ItemBody::Opaque(o) => self.count_text(&o.value.to_string()),
            // What the model is given: the readable summary, and the encrypted payload at the rate
            // of encrypted reasoning. A trigger asks for work and carries nothing.
            ItemBody::ProviderCompaction(p) => {
                p.summary().map_or(0, |t| self.count_text(t))
                    + p.value()
                        .get("encrypted_content")
                        .and_then(serde_json::Value::as_str)
                        .map_or(0, |e| e.len() / ENCRYPTED_BYTES_PER_TOKEN)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Media;

    #[test]
    fn exact_counts_known_strings() {
        let c = TokenCounter::new(Encoding::O200kBase);
        assert_eq!(c.count_text("hello world"), 2);
        // Special-token strings are ordinary text, not one special token.
        assert!(c.count_text("<|endoftext|>") > 1);
        assert_eq!(
            TokenCounter::new(Encoding::Cl100kBase).count_text("hello world"),
            2
        );
    }

    #[test]
    fn memo_is_used_and_invalidated() {
        let c = TokenCounter::new(Encoding::O200kBase);
        let mut item = Item::text(Role::User, "one two three");
        let n = c.content_tokens(&item);
        assert_eq!(item.memo().get(Encoding::O200kBase), Some(n as u32));
        assert_eq!(item.memo().get(Encoding::Cl100kBase), None);
        item.set_body(ItemBody::Message(crate::model::Message {
            role: Role::User,
            parts: vec![Part::text("one")],
        }));
        assert_eq!(item.memo().get(Encoding::O200kBase), None);
        assert_eq!(c.content_tokens(&item), 1);
    }

    #[test]
    fn image_estimates_follow_the_media_model() {
        let m = Media {
            size: Some((1024, 1024)),
            ..Media::default()
        };
        let part = Part {
            kind: PartKind::Image(m),
            extra: crate::model::Extra::new(),
        };
        let openai = TokenCounter::new(Encoding::O200kBase);
        assert_eq!(openai.count_part(&part), 85 + 4 * 170);
        let gemini = openai.with_media(MediaModel::Gemini);
        assert_eq!(gemini.count_part(&part), 4 * 258);
        // The memo is keyed by media model too: a Gemini count does not reuse an OpenAI one.
        let item = Item::new(ItemBody::Message(crate::model::Message {
            role: Role::User,
            parts: vec![part],
        }));
        assert_eq!(openai.content_tokens(&item), 765);
        assert_eq!(gemini.content_tokens(&item), 1032);
        assert_eq!(openai.content_tokens(&item), 765);
    }
}
