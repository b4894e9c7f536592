//! Integration tests of normalisation: repairs per provider, and invariants as properties.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "fixtures/strategy/parse.rs"]
mod fixture;

use compact_core::model::{
    Arguments, Conversation, Envelope, Item, ItemBody, Pairing, Part, Reasoning, Role, ToolCall,
    ToolCallKind, ToolResult,
};
use compact_core::normalize::{diagnose, normalize, Diagnostic, ProviderRules};
use proptest::prelude::*;
use std::sync::Arc;

const ALL_RULES: [ProviderRules; 3] = [
    ProviderRules::Anthropic,
    ProviderRules::OpenAiChat,
    ProviderRules::OpenAiResponses,
];

fn call(id: &str, kind: ToolCallKind) -> Item {
    Item::new(ItemBody::ToolCall(ToolCall {
        call_id: id.into(),
        name: "Bash".into(),
        arguments: Arguments::Json(serde_json::json!({"command": "ls"})),
        kind,
        extra: Default::default(),
    }))
}

fn result(id: &str, kind: ToolCallKind) -> Item {
    Item::new(ItemBody::ToolResult(ToolResult {
        call_id: id.into(),
        tool_name: Some("Bash".into()),
        parts: vec![Part::text(format!("output of {id}"))],
        is_error: false,
        kind,
        content_was_string: true,
        extra: Default::default(),
    }))
}

fn thinking(text: &str) -> Item {
    Item::new(ItemBody::Reasoning(Reasoning {
        text: Some(text.into()),
        signature: Some(format!("sig-{text}")),
        ..Reasoning::default()
    }))
}

fn conv(items: Vec<Item>) -> Conversation {
    let mut c = Conversation::default();
    for item in items {
        c.push(item);
    }
    c
}

/// A compact picture of a conversation: `u` user, `a` assistant text, `t` thinking, `c:<id>` call,
/// `r:<id>` result.
fn shape(c: &Conversation) -> Vec<String> {
    c.items
        .iter()
        .map(|i| match i.body() {
            ItemBody::ToolCall(c) => format!("c:{}", c.call_id),
            ItemBody::ToolResult(r) => format!("r:{}", r.call_id),
            ItemBody::Reasoning(_) => "t".into(),
            ItemBody::Message(m) if m.role == Role::User => "u".into(),
            _ => "a".into(),
        })
        .collect()
}

const F: ToolCallKind = ToolCallKind::Function;

#[test]
fn missing_result_gets_synthetic_before_next_user_text() {
    let c = conv(vec![
        Item::text(Role::User, "run it"),
        thinking("plan"),
        call("a", F),
        call("b", F),
        result("a", F),
        Item::text(Role::User, "stop"),
    ]);
    let out = normalize(&c, &ProviderRules::Anthropic);
    assert_eq!(
        shape(&out.conversation),
        ["u", "t", "c:a", "c:b", "r:a", "r:b", "u"]
    );
    assert_eq!(out.diagnostics.len(), 1);
    match &out.diagnostics[0] {
        Diagnostic::InsertedSyntheticResult {
            call_id,
            result_item,
            ..
        } => {
            assert_eq!(call_id, "b");
            assert_eq!(result_item.as_str(), "synthetic-b");
        }
        other => panic!("unexpected {other:?}"),
    }
    let synthetic = out.conversation.items[5].as_tool_result().unwrap();
    assert!(synthetic.parts[0]
        .as_text()
        .unwrap()
        .contains("interrupted"));
    assert!(diagnose(&out.conversation, &ProviderRules::Anthropic).is_empty());
}

#[test]
fn hidden_items_keep_their_place_around_repairs() {
    let hidden = |text: &str| {
        let mut item = Item::text(Role::Assistant, text);
        item.meta.visibility.model = false;
        item
    };
    let c = conv(vec![
        Item::text(Role::User, "go"),
        hidden("h1"),
        result("zz", F),
        hidden("h2"),
        call("a", F),
        result("a", F),
        hidden("h3"),
    ]);
    let out = normalize(&c, &ProviderRules::OpenAiChat);
    let picture: Vec<String> = out
        .conversation
        .items
        .iter()
        .map(|i| {
            if i.meta.visibility.model {
                shape(&conv(vec![i.clone()])).remove(0)
            } else {
                i.plain_text()
            }
        })
        .collect();
    // The orphan result goes; the hidden items before it move with the next visible survivor, and
    // the hidden item at the end stays at the end. Nothing hidden is lost or reordered.
    assert_eq!(picture, ["u", "h1", "h2", "c:a", "r:a", "h3"]);
    assert_eq!(out.diagnostics.len(), 1);
}

#[test]
fn rules_follow_the_wire_format_a_conversation_is_sent_in() {
    use compact_core::model::Format;
    let cases = [
        (Format::Anthropic, ProviderRules::Anthropic),
        (Format::ClaudeCode, ProviderRules::Anthropic),
        (Format::OpenAiResponses, ProviderRules::OpenAiResponses),
        (Format::CodexRollout, ProviderRules::OpenAiResponses),
        (Format::OpenAiChat, ProviderRules::OpenAiChat),
        (Format::SweAgent, ProviderRules::OpenAiChat),
        (Format::Native, ProviderRules::OpenAiChat),
    ];
    for (format, rules) in cases {
        assert_eq!(ProviderRules::for_format(format), rules, "{format}");
    }
}

#[test]
fn orphan_and_duplicate_results_are_removed() {
    let c = conv(vec![
        Item::text(Role::User, "go"),
        result("zz", F),
        call("a", F),
        result("a", F),
        result("a", F),
    ]);
    let out = normalize(&c, &ProviderRules::OpenAiChat);
    assert_eq!(shape(&out.conversation), ["u", "c:a", "r:a"]);
    let codes: Vec<&str> = out.diagnostics.iter().map(Diagnostic::code).collect();
    assert_eq!(codes, ["removed_orphan_result", "removed_duplicate_result"]);
}

#[test]
fn late_result_moves_for_anthropic_but_not_for_responses() {
    let items = vec![
        Item::text(Role::User, "go"),
        call("a", F),
        Item::text(Role::User, "hurry"),
        result("a", F),
    ];
    let c = conv(items);
    let anthropic = normalize(&c, &ProviderRules::Anthropic);
    assert_eq!(shape(&anthropic.conversation), ["u", "c:a", "r:a", "u"]);
    assert!(matches!(
        &anthropic.diagnostics[..],
        [Diagnostic::MovedResult { .. }]
    ));
    let responses = normalize(&c, &ProviderRules::OpenAiResponses);
    assert!(responses.diagnostics.is_empty());
    assert_eq!(responses.conversation, c);
}

#[test]
fn result_before_its_call_moves_after_it() {
    let c = conv(vec![
        Item::text(Role::User, "go"),
        result("a", F),
        call("a", F),
    ]);
    for rules in ALL_RULES {
        let out = normalize(&c, &rules);
        assert_eq!(shape(&out.conversation), ["u", "c:a", "r:a"], "{rules:?}");
    }
}

#[test]
fn server_pairs_stay_together() {
    let s = ToolCallKind::Server;
    let c = conv(vec![
        Item::text(Role::User, "search"),
        call("srv", s),
        Item::text(Role::Assistant, "found"),
        result("srv", s),
        call("b", F),
    ]);
    let out = normalize(&c, &ProviderRules::Anthropic);
    assert_eq!(
        shape(&out.conversation),
        ["u", "c:srv", "r:srv", "a", "c:b", "r:b"]
    );
}

#[test]
fn duplicate_call_ids_are_renamed() {
    let c = conv(vec![
        Item::text(Role::User, "go"),
        call("x", F),
        result("x", F),
        call("x", F),
        result("x", F),
    ]);
    let out = normalize(&c, &ProviderRules::Anthropic);
    assert_eq!(
        shape(&out.conversation),
        ["u", "c:x", "r:x", "c:x-2", "r:x-2"]
    );
    assert_eq!(Pairing::of(&out.conversation.items).orphan_count(), 0);
    assert!(diagnose(&out.conversation, &ProviderRules::Anthropic).is_empty());
}

#[test]
fn chat_splits_turns_by_wire_message() {
    let env = |n| {
        Some(Arc::new(Envelope {
            message: n,
            ..Envelope::default()
        }))
    };
    let mut c1 = call("a", F);
    c1.meta.envelope = env(1);
    let mut c2 = call("b", F);
    c2.meta.envelope = env(2);
    let c = conv(vec![
        Item::text(Role::User, "go"),
        c1,
        c2,
        result("a", F),
        result("b", F),
    ]);
    let chat = normalize(&c, &ProviderRules::OpenAiChat);
    assert_eq!(shape(&chat.conversation), ["u", "c:a", "r:a", "c:b", "r:b"]);
    // Anthropic merges consecutive assistant messages into one turn: nothing to do.
    assert!(diagnose(&c, &ProviderRules::Anthropic).is_empty());
}

#[test]
fn empty_and_valid_conversations_are_untouched() {
    for rules in ALL_RULES {
        assert!(normalize(&Conversation::default(), &rules)
            .diagnostics
            .is_empty());
        let c = conv(vec![
            Item::text(Role::System, "s"),
            Item::text(Role::User, "u"),
            call("a", F),
            result("a", F),
        ]);
        let out = normalize(&c, &rules);
        assert_eq!(out.conversation, c);
    }
}

/// One generated element: 0 user, 1 assistant text, 2 thinking, 3 call, 4 result, 5 server call,
/// 6 server result, with a call id from a small set so ids collide, are missing and are reused.
fn arb_items() -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    prop::collection::vec((0u8..7, 0u8..5, 0u8..3), 0..40)
}

fn build(spec: &[(u8, u8, u8)]) -> Conversation {
    let mut c = Conversation::default();
    for (i, &(kind, id, env)) in spec.iter().enumerate() {
        let id = format!("k{id}");
        let mut item = match kind {
            0 => Item::text(Role::User, format!("user {i}")),
            1 => Item::text(Role::Assistant, format!("assistant {i}")),
            2 => thinking(&format!("think {i}")),
            3 => call(&id, F),
            4 => result(&id, F),
            5 => call(&id, ToolCallKind::Server),
            _ => result(&id, ToolCallKind::Server),
        };
        if item.role() == Role::Assistant {
            item.meta.envelope = Some(Arc::new(Envelope {
                message: u32::from(env),
                ..Envelope::default()
            }));
        }
        c.push(item);
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: fixture::proptest_cases(300), ..ProptestConfig::default() })]

    #[test]
    fn normalised_output_is_valid_idempotent_and_keeps_thinking(spec in arb_items()) {
        let input = build(&spec);
        for rules in ALL_RULES {
            let out = normalize(&input, &rules);
            // Idempotent: nothing left to repair.
            prop_assert_eq!(diagnose(&out.conversation, &rules), vec![]);
            prop_assert_eq!(&normalize(&out.conversation, &rules).conversation, &out.conversation);
            // diagnose reports what normalize does.
            prop_assert_eq!(&diagnose(&input, &rules), &out.diagnostics);
            // Every call paired, no orphan results.
            let pairing = Pairing::of(&out.conversation.items);
            prop_assert_eq!(pairing.orphan_count(), 0);
            let calls = out.conversation.items.iter().filter(|i| i.as_tool_call().is_some()).count();
            prop_assert_eq!(pairing.pairs.len(), calls);
            // Thinking and assistant items unchanged, in the same order.
            let assistant = |c: &Conversation| -> Vec<Item> {
                c.items.iter().filter(|i| i.as_tool_call().is_none() && i.role() == Role::Assistant).cloned().collect()
            };
            prop_assert_eq!(assistant(&out.conversation), assistant(&input));
            // User messages unchanged, in the same order.
            let users = |c: &Conversation| -> Vec<Item> { c.items.iter().filter(|i| i.role() == Role::User).cloned().collect() };
            prop_assert_eq!(users(&out.conversation), users(&input));
            // Deterministic.
            prop_assert_eq!(&normalize(&input, &rules), &out);
        }
    }
}
