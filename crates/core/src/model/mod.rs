//! The provider-neutral conversation model: a [`Conversation`] is an ordered list of [`Item`]s plus the
//! request-level data (tools, unknown top-level fields) needed to rebuild the wire request it came from.
//!
//! The model is flat: an assistant turn that on the wire is one message holding text, thinking and two
//! tool calls becomes four items (one [`ItemBody::Reasoning`], one [`ItemBody::Message`], two
//! [`ItemBody::ToolCall`]) that share an [`Envelope`] naming the wire message they came from. Flat items
//! make pairing, dropping and per-item token caching simple; the envelope makes encoding lossless.

mod envelope;
mod ids;
mod item;
mod pairing;
mod part;
mod provider;

pub use envelope::{Envelope, Format};
pub use ids::content_id;
pub use item::{
    Arguments, Checkpoint, Item, ItemBody, ItemId, ItemKind, ItemMeta, Message, Opaque, Reasoning,
    Role, ToolCall, ToolCallKind, ToolResult, Visibility, WireDigest, CHECKPOINT_CLOSE,
    CHECKPOINT_OPEN,
};
pub use pairing::Pairing;
pub use part::{Media, MediaSource, Part, PartKind};
pub use provider::{CompactionWire, ProviderCompaction};

/// Fields of a wire object that the model does not interpret. They are re-emitted verbatim when the
/// object is encoded back to the format it came from, so unknown fields survive a round trip.
pub type Extra = serde_json::Map<String, serde_json::Value>;

/// A tool the model may call, as declared in the request (`tools[]`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// Human description, if any.
    pub description: Option<String>,
    /// The JSON schema of the tool's parameters (or `Null` for tools without one).
    pub schema: serde_json::Value,
    /// The declaration exactly as it appeared on the wire (re-emitted for the same format).
    pub raw: serde_json::Value,
}

/// A conversation: what a model sees, in order, plus request-level data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// The items, oldest first.
    pub items: Vec<Item>,
    /// Declared tools (they cost tokens on every call).
    pub tools: Vec<ToolSpec>,
    /// The wire format this conversation was decoded from, if any.
    pub format: Option<Format>,
    /// Top-level request fields the model does not interpret (`model`, `max_tokens`, `stream`, ...).
    pub extra: Extra,
}

impl Conversation {
    /// Appends an item, giving it its content id (see [`content_id`]; with a `~k` suffix when an
    /// item already has that id) when it has none, and the next turn index when it is a real user
    /// message. The uniqueness check reads the ids present; [`Conversation::extend_unique`] appends
    /// many items in linear time.
    pub fn push(&mut self, mut item: Item) {
        if item.meta.id.as_str().is_empty() {
            let items = &self.items;
            item.meta.id = ids::unique(content_id(&item), |id| {
                items.iter().any(|i| i.meta.id == *id)
            });
        }
        self.append(item);
    }

    /// Appends an item as it is (id untouched), with the turn index [`Conversation::push`] gives.
    fn append(&mut self, mut item: Item) {
        let last_turn = self.items.last().map_or(0, |i| i.meta.turn);
        let opens_turn = item.role() == Role::User && matches!(item.body(), ItemBody::Message(_));
        item.meta.turn = if opens_turn && !self.items.is_empty() {
            last_turn + 1
        } else {
            last_turn
        };
        self.items.push(item);
    }

    /// Number of items.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when the conversation has no items.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The item with this id, if present.
    pub fn find(&self, id: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.meta.id.as_str() == id)
    }

    /// The item with id `id`, or else the only item a checkpoint cites as `id` (see
    /// [`ItemId::cited`]); `None` when there is none or the short form is ambiguous.
    pub fn find_cited(&self, id: &str) -> Option<&Item> {
        if let Some(item) = self.find(id) {
            return Some(item);
        }
        let mut matches = self.items.iter().filter(|i| i.meta.id.cited() == id);
        let first = matches.next()?;
        matches.next().is_none().then_some(first)
    }

    /// Tool call / result pairing by call id (see [`Pairing`]).
    pub fn pairing(&self) -> Pairing {
        Pairing::of(&self.items)
    }

    /// Recomputes every item's turn index the way [`Conversation::push`] assigns it: each real user
    /// message after the first item opens a new turn.
    pub fn renumber_turns(&mut self) {
        let mut turn = 0u32;
        for (idx, item) in self.items.iter_mut().enumerate() {
            if idx > 0 && item.role() == Role::User && matches!(item.body(), ItemBody::Message(_)) {
                turn += 1;
            }
            item.meta.turn = turn;
        }
    }
}
