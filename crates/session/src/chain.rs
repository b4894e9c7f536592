//! The hash chain over the items a session received: the hash of item `i` is
//! `H(hash of item i-1, chain bytes of item i)` (the first item chains from
//! [`ChainHash::GENESIS`]), so one hash names an item *and* the whole history before it. Two
//! requests share a prefix of `k` items exactly when their first `k` chain hashes are equal; a
//! history edited or forked at item `k` gets new hashes from `k` on.
//!
//! The chain bytes ([`crate::codec::chain_bytes`]) are the item's canonical bytes without its
//! per-call annotations ([`crate::annotation`]: Anthropic's `cache_control`, which clients move to
//! the newest message on every call): a moved marker changes nothing the model reads, so it is
//! not an edit of the history. An item is logged once per link, as first received (with the
//! annotations it had then); the request sent carries the client's current ones.
//!
//! `H` is 128-bit FNV-1a: fixed by its specification (stored hashes must not change between builds,
//! platforms or versions of the standard library), dependency-free, and wide enough that an
//! accidental collision between two histories of one session is not a practical concern. It is not
//! a defence against a host crafting collisions on purpose: the host owns the history anyway.

use crate::codec::chain_bytes;
use compact_core::model::Item;
use std::fmt;

/// A link of the chain: names an item and every item before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ChainHash(pub u128);

impl ChainHash {
    /// The hash "before the first item".
    pub const GENESIS: ChainHash = ChainHash(0);

    /// FNV-1a 128-bit offset basis.
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    /// FNV-1a 128-bit prime.
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

    /// The link after `self` for an item with these canonical bytes.
    pub fn next(self, bytes: &[u8]) -> ChainHash {
        let mut h = Self::OFFSET;
        for b in self.0.to_le_bytes().iter().chain(bytes) {
            h ^= u128::from(*b);
            h = h.wrapping_mul(Self::PRIME);
        }
        ChainHash(h)
    }

    /// The link after `self` for `item` (its annotations left out).
    pub fn next_item(self, item: &Item) -> ChainHash {
        self.next(&chain_bytes(item))
    }

    /// Reads the 32-hex-digit form written by `Display`.
    pub fn parse(text: &str) -> Option<ChainHash> {
        (text.len() == 32)
            .then(|| u128::from_str_radix(text, 16).ok())
            .flatten()
            .map(ChainHash)
    }
}

impl fmt::Display for ChainHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use compact_core::model::Role;

    #[test]
    fn a_link_depends_on_the_item_and_everything_before_it() {
        let a = Item::text(Role::User, "a");
        let b = Item::text(Role::User, "b");
        let ab = ChainHash::GENESIS.next_item(&a).next_item(&b);
        let bb = ChainHash::GENESIS.next_item(&b).next_item(&b);
        let ba = ChainHash::GENESIS.next_item(&b).next_item(&a);
        assert_ne!(ab, bb);
        assert_ne!(ab, ba);
        assert_eq!(ab, ChainHash::GENESIS.next_item(&a).next_item(&b));
        assert_eq!(ChainHash::parse(&ab.to_string()), Some(ab));
        assert_eq!(ChainHash::parse("xyz"), None);
    }

    #[test]
    fn a_link_leaves_out_cache_control_and_nothing_else() {
        use compact_core::model::{Extra, ItemBody, Message, Part};
        let text = |t: &str, marked: bool| {
            let mut extra = Extra::new();
            if marked {
                extra.insert(
                    "cache_control".into(),
                    serde_json::json!({"type": "ephemeral"}),
                );
            }
            Item::new(ItemBody::Message(Message {
                role: Role::User,
                parts: vec![Part {
                    kind: compact_core::model::PartKind::Text(t.into()),
                    extra,
                }],
            }))
        };
        let g = ChainHash::GENESIS;
        assert_eq!(
            g.next_item(&text("a", true)),
            g.next_item(&text("a", false))
        );
        assert_ne!(g.next_item(&text("a", true)), g.next_item(&text("b", true)));
        // An item without annotations links over its canonical bytes, as before they were left out.
        assert_eq!(
            g.next_item(&text("a", false)),
            g.next(&crate::codec::canonical_bytes(&text("a", false)))
        );
    }
}
