//! Per-item memoised counts: recounting after an append counts only the new item, and edits
//! invalidate exactly the edited item.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::model::{Conversation, Item, ItemBody, Message, Part, Role};
use compact_core::tokens::{Encoding, Framing, TokenCounter};

/// A fake memo value no real item here could have: if an old item were recounted, the total
/// would lose it.
const SENTINEL: u32 = 1_000_000;

fn conversation(n: usize) -> Conversation {
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "You are a careful coding agent."));
    for i in 0..n {
        let role = if i % 2 == 0 {
            Role::User
        } else {
            Role::Assistant
        };
        conv.push(Item::text(
            role,
            format!("message {i}: run the tests and report what failed"),
        ));
    }
    conv
}

#[test]
fn recount_after_append_counts_only_the_new_item() {
    for enc in [
        Encoding::O200kBase,
        Encoding::Cl100kBase,
        Encoding::Estimate,
    ] {
        let counter = TokenCounter::with_framing(enc, Framing::OPENAI);
        let mut conv = conversation(50);
        let first = counter.total(&conv);
        assert!(first > 0);
        // Every item now carries its count for this encoding.
        for item in &conv.items {
            assert!(item.memo().get(enc).is_some(), "{enc}: item not memoised");
        }
        // Replace every memo with a sentinel: a recount that re-read old content would not see it.
        let old = conv.items.len();
        for item in &conv.items {
            item.memo().set(enc, SENTINEL);
        }
        let new = Item::text(Role::User, "one more message with some words in it");
        let new_tokens = enc.count("one more message with some words in it");
        conv.push(new);
        assert!(conv.items.last().unwrap().memo().get(enc).is_none());
        let second = counter.total(&conv);
        let framing = Framing::OPENAI;
        let want = old * (SENTINEL as usize + framing.per_message as usize)
            + new_tokens
            + framing.per_message as usize
            + framing.per_request as usize;
        assert_eq!(
            second, want,
            "{enc}: old items were recounted or the new one was not counted"
        );
        assert_eq!(
            conv.items.last().unwrap().memo().get(enc),
            Some(new_tokens as u32)
        );
    }
}

/// The same items with empty memos.
fn fresh_copy(conv: &Conversation) -> Conversation {
    let mut c = Conversation::default();
    for item in &conv.items {
        c.items.push(Item::new(item.body().clone()));
    }
    c
}

#[test]
fn memo_matches_a_cold_count_and_edits_invalidate_one_item() {
    let counter = TokenCounter::new(Encoding::O200kBase);
    let mut conv = conversation(20);
    let warm_first = counter.count_conversation(&conv);
    let cold = counter.count_conversation(&fresh_copy(&conv));
    assert_eq!(warm_first, cold);
    // Edit one item: only its memo is cleared, and the total follows the edit.
    conv.items[5].set_body(ItemBody::Message(Message {
        role: Role::User,
        parts: vec![Part::text("short")],
    }));
    let cleared: Vec<usize> = conv
        .items
        .iter()
        .enumerate()
        .filter(|(_, i)| i.memo().get(Encoding::O200kBase).is_none())
        .map(|(n, _)| n)
        .collect();
    assert_eq!(cleared, vec![5]);
    let after = counter.count_conversation(&conv);
    let fresh = counter.count_conversation(&fresh_copy(&conv));
    assert_eq!(after.total, fresh.total);
    assert_ne!(after.total, warm_first.total);
}

#[test]
fn memo_is_per_encoding() {
    let conv = conversation(3);
    let o200k = TokenCounter::new(Encoding::O200kBase).total(&conv);
    // A counter with another encoding must not reuse the o200k memo.
    let est = TokenCounter::with_framing(Encoding::Estimate, Framing::OPENAI).total(&conv);
    let est_cold =
        TokenCounter::with_framing(Encoding::Estimate, Framing::OPENAI).total(&conversation(3));
    assert_eq!(est, est_cold);
    assert_eq!(
        TokenCounter::new(Encoding::O200kBase).total(&conversation(3)),
        o200k
    );
}
