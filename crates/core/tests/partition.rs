//! The survey of a conversation: turns, units (what is kept or removed together) and pins.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Conversation, Envelope, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::partition::{PinReason, Survey};
use compact_core::policy::Policy;
use compact_core::tokens::{Encoding, TokenCounter};
use serde_json::json;
use std::sync::Arc;

fn call(id: &str, name: &str) -> Item {
    Item::new(ItemBody::ToolCall(ToolCall::function(id, name, json!({}))))
}

fn result(id: &str) -> Item {
    Item::new(ItemBody::ToolResult(ToolResult::text(id, "out")))
}

fn survey(items: Vec<Item>) -> Survey {
    let mut conv = Conversation::default();
    for item in items {
        conv.push(item);
    }
    Survey::of(
        &conv,
        &Policy::for_window(100_000),
        &TokenCounter::new(Encoding::O200kBase),
    )
}

#[test]
fn turns_open_at_each_real_user_message_after_the_first_item() {
    let s = survey(vec![
        Item::text(Role::User, "first"),
        Item::text(Role::Assistant, "a"),
        Item::text(Role::User, "second"),
        call("c1", "Bash"),
        result("c1"),
        Item::text(Role::User, "third"),
    ]);
    assert_eq!(s.turns, [0, 0, 1, 1, 1, 2]);
}

#[test]
fn units_join_a_wire_message_and_each_call_with_its_result() {
    // One assistant wire message holding text and two parallel calls; the results come later, in
    // one message of their own, after an unrelated item.
    let turn = Arc::new(Envelope::default());
    let answers = Arc::new(Envelope::default());
    let with = |mut item: Item, env: &Arc<Envelope>| {
        item.meta.envelope = Some(env.clone());
        item
    };
    let s = survey(vec![
        Item::text(Role::User, "go"),                          // 0
        with(Item::text(Role::Assistant, "two reads"), &turn), // 1
        with(call("a", "Read"), &turn),                        // 2
        with(call("b", "Read"), &turn),                        // 3
        with(result("b"), &answers),                           // 4
        with(result("a"), &answers),                           // 5
        Item::text(Role::Assistant, "done"),                   // 6
        call("c", "Bash"),                                     // 7
        result("c"),                                           // 8
    ]);
    // A unit is named by its first item.
    assert_eq!(s.units, [0, 1, 1, 1, 1, 1, 6, 7, 7]);
    assert_eq!(s.tool_units, [vec![2, 5], vec![3, 4], vec![7, 8]]);
}

/// A system message anywhere (Claude Code sends its environment as one right after the first user
/// message) is pinned like the leading system prompt, in a unit of its own, and opens no turn.
#[test]
fn a_system_message_anywhere_is_pinned_in_a_unit_of_its_own() {
    let s = survey(vec![
        Item::text(Role::System, "You are Claude Code."), // 0
        Item::text(Role::User, "fix it"),                 // 1
        Item::text(Role::System, "# Environment"),        // 2
        call("c1", "Bash"),                               // 3
        result("c1"),                                     // 4
        Item::text(Role::System, "later"),                // 5
        Item::text(Role::User, "next"),                   // 6
    ]);
    let system = Some(PinReason::Role(Role::System));
    for i in [0, 2, 5] {
        assert_eq!(s.pins[i], system, "{i}");
    }
    assert_eq!((&s.pins[3], &s.pins[4], &s.pins[6]), (&None, &None, &None));
    assert_eq!(s.turns, [0, 1, 1, 1, 1, 1, 2]);
    assert_eq!(s.units, [0, 1, 2, 3, 3, 5, 6]);
}

#[test]
fn a_flagged_call_or_result_pins_its_partner_and_protected_tools_pin_even_when_unanswered() {
    let mut flagged = result("a");
    flagged.meta.protected = true;
    let s = survey(vec![
        Item::text(Role::User, "go"),
        call("a", "Bash"),
        flagged,
        call("b", "Bash"),
        result("b"),
        call("t", "manage_todo_list"),
    ]);
    assert_eq!(s.pins[1], Some(PinReason::Protected));
    assert_eq!(s.pins[2], Some(PinReason::Protected));
    assert_eq!(s.pins[3], None);
    assert_eq!(s.pins[4], None);
    assert!(matches!(&s.pins[5], Some(PinReason::ProtectedTool(t)) if t == "manage_todo_list"));
}

#[test]
fn an_unanswered_result_of_a_protected_tool_is_pinned() {
    let mut orphan = result("gone");
    if let ItemBody::ToolResult(r) = orphan.body_mut() {
        r.tool_name = Some("manage_todo_list".into());
    }
    let s = survey(vec![Item::text(Role::User, "go"), orphan]);
    assert!(matches!(&s.pins[1], Some(PinReason::ProtectedTool(t)) if t == "manage_todo_list"));
}

#[test]
fn recent_turns_keep_two_assistant_messages_each_and_checkpoints_have_their_class() {
    use compact_core::budget::Budget;
    use compact_core::model::{Checkpoint, CHECKPOINT_OPEN};
    use compact_core::partition::{Class, Partition, Recency};
    let mut items = vec![
        Item::text(Role::User, "go"),
        Item::new(ItemBody::Checkpoint(Checkpoint {
            text: "record".into(),
            ..Checkpoint::default()
        })),
        Item::text(Role::User, format!("{CHECKPOINT_OPEN}>\nrecord")),
    ];
    items.extend((0..10).map(|k| Item::text(Role::Assistant, format!("step {k}"))));
    let mut conv = Conversation::default();
    for item in items {
        conv.push(item);
    }
    let policy = Policy::for_window(100_000);
    let counter = TokenCounter::new(Encoding::O200kBase);
    let s = Survey::of(&conv, &policy, &counter);
    let p = Partition::of(
        &conv,
        &s,
        &Budget::new(&policy).limits,
        Recency {
            turns: 3,
            tool_pairs: 0,
        },
    );
    assert_eq!(p.classes[1], Class::Checkpoint);
    assert_eq!(p.classes[2], Class::Checkpoint);
    let recent = p.classes.iter().filter(|c| **c == Class::Recent).count();
    assert_eq!(recent, 6, "{:?}", p.classes);
}

#[test]
fn the_opening_user_message_is_pinned_while_it_is_small_beside_the_window() {
    // An agent's opening: its reminders and the task, in one wire message (two items), then work.
    let opening = Arc::new(Envelope::default());
    let with = |mut item: Item| {
        item.meta.envelope = Some(opening.clone());
        item
    };
    let items = || {
        vec![
            Item::text(Role::System, "rules"),
            with(Item::text(
                Role::User,
                "<system-reminder>agent types, deferred tools, skills</system-reminder>",
            )),
            with(Item::text(Role::User, "Fix the parser.")),
            Item::text(Role::Assistant, "Reading it."),
            Item::text(Role::User, "Also the tests."),
        ]
    };
    let s = survey(items());
    assert_eq!(s.pins[1], Some(PinReason::Opening));
    assert_eq!(s.pins[2], Some(PinReason::Opening));
    assert_eq!(s.pins[4], None, "only the opening");
    // An opening larger than an eighth of the window is a user message like any other.
    let mut conv = Conversation::default();
    let mut big = items();
    big[2] = with(Item::text(Role::User, "word ".repeat(2_000)));
    for item in big {
        conv.push(item);
    }
    let s = Survey::of(
        &conv,
        &Policy::for_window(8_000),
        &TokenCounter::new(Encoding::O200kBase),
    );
    assert_eq!(s.pins[1], None);
    assert_eq!(s.pins[2], None);
}
