//! Stable item ids for items whose source gives them none (wire requests, programs that build
//! conversations): the id is derived from the item's content, so the same item has the same id in
//! the original request, in a compacted copy of it, and after any number of re-imports; items added
//! after a compaction can never take an id that a surviving item already has.
//!
//! A content id is `i` followed by ten hex digits of a 64-bit FNV-1a hash of the item's kind, role,
//! call id, tool name, arguments (as JSON when they parse, so a Chat string and an Anthropic object
//! agree), and text. Two items with the same content in one conversation (a repeated "continue", say)
//! get `~2`, `~3`, ... in order: content and order, not position, tell them apart. Metadata
//! (timestamps, envelopes, visibility) is not content.

use super::{Conversation, Item, ItemBody, ItemId, MediaSource, Part, PartKind};
use std::collections::HashSet;

/// FNV-1a, 64 bits: small, fast, and fixed by its specification (ids must not change between
/// builds, platforms or versions of the standard library).
struct Fnv(u64);

impl Fnv {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// A field: its bytes then a separator no UTF-8 text contains, so `("ab", "c")` and
    /// `("a", "bc")` differ.
    fn field(&mut self, text: &str) {
        self.bytes(text.as_bytes());
        self.bytes(&[0xff]);
    }
}

fn parts(h: &mut Fnv, parts: &[Part]) {
    for part in parts {
        match &part.kind {
            PartKind::Text(t) => h.field(t),
            PartKind::Image(m) | PartKind::File(m) | PartKind::Audio(m) => match &m.source {
                MediaSource::Url(s)
                | MediaSource::Base64(s)
                | MediaSource::FileId(s)
                | MediaSource::Text(s) => h.field(s),
                MediaSource::None => h.field("media"),
            },
            PartKind::Opaque(v) => h.field(&v.to_string()),
        }
    }
}

/// The content id of `item` (without a duplicate suffix).
pub fn content_id(item: &Item) -> ItemId {
    let mut h = Fnv(Fnv::OFFSET);
    h.field(item.kind().as_str());
    h.field(item.role().as_str());
    match item.body() {
        ItemBody::Message(m) => parts(&mut h, &m.parts),
        ItemBody::ToolCall(c) => {
            h.field(&c.call_id);
            h.field(&c.name);
            match c.arguments.to_value() {
                Some(v) => h.field(&v.to_string()),
                None => h.field(&c.arguments.to_text()),
            }
        }
        ItemBody::ToolResult(r) => {
            h.field(&r.call_id);
            h.field(if r.is_error { "error" } else { "ok" });
            parts(&mut h, &r.parts);
        }
        ItemBody::Reasoning(r) => {
            h.field(r.text.as_deref().unwrap_or(""));
            for s in &r.summary {
                h.field(s);
            }
            h.field(r.signature.as_deref().unwrap_or(""));
            h.field(r.encrypted.as_deref().unwrap_or(""));
        }
        ItemBody::Checkpoint(c) => h.field(&c.text),
        ItemBody::Opaque(o) => {
            h.field(&o.label);
            h.field(&o.value.to_string());
        }
        ItemBody::ProviderCompaction(p) => {
            h.field(p.wire().type_tag());
            h.field(&p.wire_text());
        }
    }
    // Ten hex digits (40 bits): short enough to cite, wide enough that a clash among the items of
    // one session is rare (and a clash is resolved by a suffix like a duplicate).
    ItemId::new(format!("i{:010x}", h.0 >> 24))
}

/// `base`, or `base~2`, `base~3`, ... : the first that `taken` does not hold.
pub(crate) fn unique(base: ItemId, taken: impl Fn(&ItemId) -> bool) -> ItemId {
    if !taken(&base) {
        return base;
    }
    (2u64..)
        .map(|k| ItemId::new(format!("{}~{k}", base.as_str())))
        .find(|id| !taken(id))
        .unwrap_or(base)
}

impl Conversation {
    /// Appends items, giving each one without an id its content id, and renaming (with a `~k`
    /// suffix) any whose id an earlier item already has: ids are unique afterwards, in time linear
    /// in the conversation's length. Turns are assigned as by [`Conversation::push`].
    pub fn extend_unique(&mut self, items: impl IntoIterator<Item = Item>) {
        for item in items {
            self.append(item);
        }
        self.make_ids_unique();
    }

    /// Renames (with a `~k` suffix) every item whose id an earlier item already has, and gives
    /// items without an id their content id. For importers whose sources may repeat a record id
    /// (a resumed transcript copies records, ids and all). Linear in the conversation's length.
    pub fn make_ids_unique(&mut self) {
        let mut taken: HashSet<ItemId> = HashSet::with_capacity(self.items.len());
        for item in &mut self.items {
            let base = if item.meta.id.as_str().is_empty() {
                content_id(item)
            } else {
                std::mem::take(&mut item.meta.id)
            };
            let id = unique(base, |id| taken.contains(id));
            taken.insert(id.clone());
            item.meta.id = id;
        }
    }

    /// [`Conversation::extend_unique`] for a conversation whose items already went through it
    /// (their ids are unique, none empty: the result of an earlier `extend_unique` or
    /// [`Conversation::make_ids_unique`]): the same ids and turns, but only the new items are
    /// renamed or given their content id, checked against every earlier item without copying
    /// the earlier items' ids (a decoder that keeps the items of a request's unchanged start).
    pub fn extend_unique_after(&mut self, items: impl IntoIterator<Item = Item>) {
        let start = self.items.len();
        for item in items {
            self.append(item);
        }
        self.make_ids_unique_from(start);
    }

    /// [`Conversation::make_ids_unique`] for the items from `start` on, the ones before already
    /// unique.
    fn make_ids_unique_from(&mut self, start: usize) {
        let start = start.min(self.items.len());
        let (done, new) = self.items.split_at_mut(start);
        let bases: Vec<ItemId> = new
            .iter_mut()
            .map(|item| {
                if item.meta.id.as_str().is_empty() {
                    content_id(item)
                } else {
                    std::mem::take(&mut item.meta.id)
                }
            })
            .collect();
        // Every id `unique` may try for a base starts with that base: only the earlier ids that
        // do can be taken. A few new items (an agent's turn) are looked for by comparing bytes,
        // many (a first request after a branch) with a set of every earlier id.
        let taken: HashSet<&str> = if bases.len() <= 8 {
            done.iter()
                .map(|i| i.meta.id.as_str())
                .filter(|id| bases.iter().any(|b| id.starts_with(b.as_str())))
                .collect()
        } else {
            done.iter().map(|i| i.meta.id.as_str()).collect()
        };
        let mut added: HashSet<ItemId> = HashSet::with_capacity(new.len());
        for (item, base) in new.iter_mut().zip(bases) {
            let id = unique(base, |id| taken.contains(id.as_str()) || added.contains(id));
            added.insert(id.clone());
            item.meta.id = id;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Role, ToolCall, ToolResult};
    use serde_json::json;

    #[test]
    fn same_content_same_id_and_duplicates_are_numbered() {
        let a = Item::text(Role::User, "continue");
        let b = Item::text(Role::User, "continue");
        let c = Item::text(Role::Assistant, "continue");
        assert_eq!(content_id(&a), content_id(&b));
        assert_ne!(content_id(&a), content_id(&c));
        let mut conv = Conversation::default();
        conv.extend_unique([a, c, b]);
        let ids: Vec<&str> = conv.items.iter().map(|i| i.meta.id.as_str()).collect();
        assert_eq!(ids[2], format!("{}~2", ids[0]));
        assert!(ids[0].starts_with('i') && ids[0].len() == 11, "{ids:?}");
    }

    #[test]
    fn arguments_as_text_or_json_agree_and_call_ids_distinguish() {
        let text = Item::new(ItemBody::ToolCall(ToolCall {
            arguments: crate::model::Arguments::Text(r#"{"path":"a.rs"}"#.into()),
            ..ToolCall::function("c1", "read", json!({}))
        }));
        let value = Item::new(ItemBody::ToolCall(ToolCall::function(
            "c1",
            "read",
            json!({"path": "a.rs"}),
        )));
        assert_eq!(content_id(&text), content_id(&value));
        let other = Item::new(ItemBody::ToolResult(ToolResult::text("c2", "ok")));
        let same = Item::new(ItemBody::ToolResult(ToolResult::text("c3", "ok")));
        assert_ne!(content_id(&other), content_id(&same));
    }

    #[test]
    fn fields_are_separated() {
        let a = Item::new(ItemBody::ToolCall(ToolCall::function(
            "ab",
            "c",
            json!(null),
        )));
        let b = Item::new(ItemBody::ToolCall(ToolCall::function(
            "a",
            "bc",
            json!(null),
        )));
        assert_ne!(content_id(&a), content_id(&b));
    }

    #[test]
    fn given_ids_are_kept_unless_repeated() {
        let mut conv = Conversation::default();
        conv.extend_unique([
            Item::text(Role::User, "a").with_id("r1"),
            Item::text(Role::User, "b").with_id("r1"),
            Item::text(Role::User, "c").with_id("r1~2"),
        ]);
        let ids: Vec<&str> = conv.items.iter().map(|i| i.meta.id.as_str()).collect();
        assert_eq!(ids, ["r1", "r1~2", "r1~2~2"]);
    }

    #[test]
    fn ids_made_unique_from_a_finished_prefix_are_those_of_the_whole_pass() {
        let items = || {
            vec![
                Item::text(Role::User, "a").with_id("r1"),
                Item::text(Role::User, "continue"),
                Item::text(Role::User, "b").with_id("r1"),
                Item::text(Role::User, "continue"),
                Item::text(Role::User, "c").with_id("r1~2"),
                Item::text(Role::User, "d").with_id("r1"),
                Item::text(Role::User, "continue"),
                Item::text(Role::Assistant, "continue"),
                Item::text(Role::User, "e").with_id("r1~2~2"),
                Item::text(Role::User, "f").with_id("r1"),
                Item::text(Role::Assistant, "continue"),
                Item::text(Role::User, "g").with_id("r"),
                Item::text(Role::User, "continue"),
            ]
        };
        let mut whole = Conversation::default();
        whole.extend_unique(items());
        // From the start (13 new items: the set of every earlier id) to the end (a few new items:
        // the earlier ids that start with a new item's id).
        for start in 0..=items().len() {
            let mut part = Conversation::default();
            part.extend_unique(items().into_iter().take(start));
            part.extend_unique_after(items().into_iter().skip(start));
            let got: Vec<(&str, u32)> = part
                .items
                .iter()
                .map(|i| (i.meta.id.as_str(), i.meta.turn))
                .collect();
            let want: Vec<(&str, u32)> = whole
                .items
                .iter()
                .map(|i| (i.meta.id.as_str(), i.meta.turn))
                .collect();
            assert_eq!(got, want, "from {start}");
        }
    }
}
