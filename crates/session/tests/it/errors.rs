//! Bad input gives typed errors and changes nothing.

use crate::common::{manager, Agent};
use compact_core::model::{Conversation, Format, Item, Role};
use compact_session::{SessionError, Usage};

#[test]
fn bad_input_gives_typed_errors() {
    let manager = manager(16_000);
    let mut agent = Agent::new(1, Format::OpenAiChat);
    agent.step();
    for bad in ["", "a\nb", &"x".repeat(300)] {
        assert!(matches!(
            manager.preflight(bad, &agent.history),
            Err(SessionError::InvalidSessionId(_))
        ));
    }
    assert!(matches!(
        manager.preflight("s", &Conversation::default()),
        Err(SessionError::EmptyRequest)
    ));
    let mut no_id = agent.history.clone();
    no_id.items.push(Item::text(
        Role::User,
        "an item built without push has no id",
    ));
    assert!(matches!(
        manager.preflight("s", &no_id),
        Err(SessionError::MalformedRequest(_))
    ));
    assert!(
        manager.store().sessions().unwrap().is_empty(),
        "nothing was created"
    );

    assert!(matches!(
        manager.recall("nope", "x"),
        Err(SessionError::UnknownSession(_))
    ));
    assert!(matches!(
        manager.record_usage("nope", &Usage::default()),
        Err(SessionError::UnknownSession(_))
    ));
    assert!(matches!(
        manager.manual_compact("nope", ""),
        Err(SessionError::UnknownSession(_))
    ));
    assert!(matches!(
        manager.recover("nope", &agent.history, 400, "{}"),
        Err(SessionError::UnknownSession(_))
    ));
    assert!(matches!(
        manager.truncate_tool_output("nope", "c", "out"),
        Err(SessionError::UnknownSession(_))
    ));

    manager.preflight("s", &agent.history).unwrap();
    assert!(matches!(
        manager.recall("s", "missing"),
        Err(SessionError::UnknownReference { .. })
    ));
}
