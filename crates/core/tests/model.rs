//! Integration tests of the conversation model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::model::{Checkpoint, Conversation, Item, Role};

#[test]
fn checkpoint_wire_text_round_trips() {
    let cp = Checkpoint {
        text: "## Goal\n- fix it".into(),
        generation: 3,
        ..Checkpoint::default()
    };
    let text = cp.wire_text();
    assert!(text.starts_with("<compact-checkpoint generation=\"3\">\n"));
    let back = Checkpoint::from_wire_text(&text).expect("recognised");
    assert_eq!(back.text, cp.text);
    assert_eq!(back.generation, 3);
    assert!(Checkpoint::from_wire_text("hello").is_none());
}

#[test]
fn push_assigns_ids_and_turns() {
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, "sys"));
    conv.push(Item::text(Role::User, "a"));
    conv.push(Item::text(Role::Assistant, "b"));
    conv.push(Item::text(Role::User, "c"));
    let turns: Vec<u32> = conv.items.iter().map(|i| i.meta.turn).collect();
    assert_eq!(turns, vec![0, 1, 1, 2]);
    assert_eq!(conv.items[3].meta.id.as_str(), "i3");
    conv.renumber_turns();
    let turns: Vec<u32> = conv.items.iter().map(|i| i.meta.turn).collect();
    assert_eq!(turns, vec![0, 1, 1, 2]);
}
