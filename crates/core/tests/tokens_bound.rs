//! Upper bounds of counts from lengths: `count(text) <= count_upper_bound(text.len())` for every
//! encoding (an `o200k_base` / `cl100k_base` token is at least one byte; the estimate is at most
//! 1.2145 per byte plus one), and the same for items and whole requests with framing, tools, media
//! and encrypted payloads, on generated text built to be dense in tokens.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::model::{
    Conversation, Item, ItemBody, Media, MediaSource, Message, Part, PartKind, Reasoning, Role,
    ToolCall, ToolResult, ToolSpec,
};
use compact_core::tokens::{Encoding, Framing, MediaModel, TokenCounter};
use proptest::prelude::*;
use serde_json::json;

const ENCODINGS: [Encoding; 3] = [
    Encoding::O200kBase,
    Encoding::Cl100kBase,
    Encoding::Estimate,
];

/// Characters that make many tokens per byte: lone digits between symbols, single letters, line
/// breaks, CJK, accented letters, emoji, control characters, spaces.
fn dense_char() -> impl Strategy<Value = char> {
    prop_oneof![
        proptest::sample::select(vec![
            '1', '7', '0', '!', '#', '{', '"', ':', 'a', 'Z', ' ', '\n', '\r', '\t', '\u{1}',
            '\u{7f}', 'é', 'ß', 'Ж', '中', '文', 'の', '한', '😀', '\u{200b}', '\u{3000}',
        ]),
        any::<char>(),
    ]
}

fn dense_text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(dense_char(), 0..max).prop_map(|c| c.into_iter().collect())
}

fn counters() -> Vec<TokenCounter> {
    let mut out = Vec::new();
    for enc in ENCODINGS {
        for framing in [
            Framing::OPENAI,
            Framing::ANTHROPIC,
            Framing::GEMINI,
            Framing::NONE,
        ] {
            for media in [
                MediaModel::OpenAi,
                MediaModel::Anthropic,
                MediaModel::Gemini,
            ] {
                out.push(TokenCounter::with_framing(enc, framing).with_media(media));
            }
        }
    }
    out
}

fn message(role: Role, parts: Vec<Part>) -> Item {
    Item::new(ItemBody::Message(Message { role, parts }))
}

fn part(kind: PartKind) -> Part {
    Part {
        kind,
        extra: Default::default(),
    }
}

/// A request of every item kind whose texts are `texts` (cycled).
fn request(texts: &[String]) -> Conversation {
    let t = |i: usize| {
        texts
            .get(i % texts.len().max(1))
            .cloned()
            .unwrap_or_default()
    };
    let image = Media {
        size: Some((1500, 900)),
        ..Media::default()
    };
    let audio = Media {
        source: MediaSource::Base64("QUJD".repeat(9_000)),
        ..Media::default()
    };
    let items = vec![
        Item::text(Role::System, t(0)),
        message(
            Role::User,
            vec![
                Part::text(t(1)),
                part(PartKind::Image(image)),
                part(PartKind::Image(Media::default())),
                part(PartKind::Audio(audio)),
                part(PartKind::File(Media {
                    source: MediaSource::Text(t(2)),
                    ..Media::default()
                })),
                part(PartKind::File(Media::default())),
                part(PartKind::Opaque(json!({"type": "x", "v": t(3)}))),
            ],
        ),
        Item::new(ItemBody::ToolCall(ToolCall::function(
            "c1",
            t(4),
            json!({"path": t(5), "n": [1, 2, 3]}),
        ))),
        Item::new(ItemBody::ToolResult(ToolResult::text("c1", t(6)))),
        Item::new(ItemBody::Reasoning(Reasoning {
            text: Some(t(7)),
            summary: vec![t(8), t(9)],
            encrypted: Some("gAAAA".repeat(40)),
            ..Reasoning::default()
        })),
        Item::text(Role::Assistant, t(10)),
    ];
    Conversation {
        items,
        tools: vec![ToolSpec {
            name: t(11),
            description: Some(t(12)),
            schema: json!({"type": "object", "properties": {"q": {"type": "string", "description": t(13)}}}),
            raw: serde_json::Value::Null,
        }],
        ..Conversation::default()
    }
}

#[test]
fn the_densest_estimate_texts_stay_under_the_bound() {
    // A digit starting a run is the heaviest byte (1.691); between symbols it starts a run every
    // other byte, the densest the estimate gets.
    for pattern in ["1!", "1 ", "1a", "1\n", "1  ", "1中", "1é", "12!"] {
        for len in 0..300 {
            let text: String = pattern.chars().cycle().take(len).collect();
            let n = Encoding::Estimate.count(&text);
            assert!(
                n <= Encoding::Estimate.count_upper_bound(text.len()),
                "{pattern:?} x {len}: {n} tokens over the bound of {} bytes",
                text.len()
            );
        }
    }
    // The bound is near what the estimate can reach: over 1.2 tokens a byte.
    let worst: String = "1!".repeat(500);
    assert!(Encoding::Estimate.count(&worst) > 1_200);
}

#[test]
fn an_exact_token_is_at_least_one_byte_on_real_text() {
    let text = "fn main() {\n    println!(\"{}\", 1 + 2);\n}\n日本語のテキスト 😀😀 <|endoftext|> 0123456789";
    for enc in [Encoding::O200kBase, Encoding::Cl100kBase] {
        for end in 0..=text.len() {
            if let Some(t) = text.get(..end) {
                assert!(enc.count(t) <= t.len(), "{enc}: {t:?}");
            }
        }
    }
}

#[test]
fn an_item_with_a_memo_is_bounded_by_its_memo() {
    let c = TokenCounter::new(Encoding::O200kBase);
    let item = Item::text(Role::User, "hello world, ".repeat(50));
    let bound = c.item_upper_bound(&item);
    let exact = c.count_item(&item);
    assert!(exact < bound);
    assert_eq!(
        c.item_upper_bound(&item),
        exact,
        "a counted item's bound is its count"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn every_encoding_counts_at_most_its_bound(text in dense_text(200)) {
        for enc in ENCODINGS {
            let n = enc.count(&text);
            prop_assert!(n <= enc.count_upper_bound(text.len()), "{enc}: {n} > bound of {:?}", text);
            prop_assert_eq!(n, enc.count_uncached(&text));
        }
    }

    #[test]
    fn every_request_counts_at_most_its_bound(texts in proptest::collection::vec(dense_text(60), 1..14)) {
        for c in counters() {
            // A fresh copy per counter: no memo from another counter's run.
            let conv = request(&texts);
            let bound = c.total_upper_bound(&conv);
            for item in &conv.items {
                prop_assert!(c.count_item(item) <= c.item_upper_bound(item));
            }
            let conv = request(&texts);
            prop_assert!(c.count_tools(&conv.tools) <= c.tools_upper_bound(&conv.tools));
            let exact = c.total(&conv);
            prop_assert!(exact <= bound, "{:?}: {exact} > {bound}", c);
        }
    }
}
