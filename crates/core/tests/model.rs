//! Integration tests of the conversation model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use compact_core::model::{content_id, Checkpoint, Conversation, Item, ItemId, Role};

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
    assert_eq!(conv.items[3].meta.id, content_id(&conv.items[3]));
    conv.renumber_turns();
    let turns: Vec<u32> = conv.items.iter().map(|i| i.meta.turn).collect();
    assert_eq!(turns, vec![0, 1, 1, 2]);
}

#[test]
fn ids_survive_removal_and_new_items_never_take_an_existing_id() {
    let mut conv = Conversation::default();
    for text in ["sys", "a", "b", "c", "d", "e"] {
        conv.push(Item::text(Role::User, text));
    }
    let before: Vec<ItemId> = conv.items.iter().map(|i| i.meta.id.clone()).collect();
    // A compaction removes the middle; the survivors keep their ids.
    conv.items.drain(1..4);
    assert_eq!(conv.items[1].meta.id, before[4]);
    // Items added afterwards (one a repeat of a survivor) get ids no item has.
    conv.push(Item::text(Role::User, "f"));
    conv.push(Item::text(Role::User, "e"));
    conv.push(Item::text(Role::User, "b"));
    let ids: std::collections::HashSet<&ItemId> = conv.items.iter().map(|i| &i.meta.id).collect();
    assert_eq!(ids.len(), conv.len());
    // A removed item's content comes back with the same id: the id names the content.
    assert_eq!(conv.items.last().unwrap().meta.id, before[2]);
}

#[test]
fn a_checkpoint_is_a_checkpoint_item_or_a_user_message_opening_with_the_marker() {
    use compact_core::model::CHECKPOINT_OPEN;
    use compact_core::partition::{is_checkpoint, is_user_message};
    let marked = format!("  {CHECKPOINT_OPEN} generation=\"1\">\nrecord\n</compact-checkpoint>");
    let user = Item::text(Role::User, marked.clone());
    assert!(is_checkpoint(&user));
    assert!(!is_user_message(&user));
    // The same text from the assistant (quoting one, say) is not a checkpoint.
    let assistant = Item::text(Role::Assistant, marked.clone());
    assert!(!is_checkpoint(&assistant));
    // The marker must open the message, not appear inside it.
    let quoted = Item::text(Role::User, format!("what is this? {marked}"));
    assert!(!is_checkpoint(&quoted));
    assert!(is_user_message(&quoted));
}
