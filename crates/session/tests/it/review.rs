//! Review before a compaction applies: a proposal changes nothing; applying it with an edited
//! checkpoint sends that text next; a proposal made before the session moved on is refused.

use crate::common::{manager, Agent};
use compact_core::model::{Format, ItemBody};
use compact_session::SessionError;

fn checkpoint_text(conv: &compact_core::model::Conversation) -> Option<String> {
    conv.items.iter().find_map(|i| match i.body() {
        ItemBody::Checkpoint(c) => Some(c.text.clone()),
        _ => None,
    })
}

#[test]
fn a_proposal_changes_nothing_and_applies_with_the_user_s_edit() {
    let m = manager(16_000);
    let mut agent = Agent::new(11, Format::OpenAiChat);
    for _ in 0..12 {
        agent.step();
    }
    let before = m.preflight("s", &agent.history).unwrap();
    let version = m.store().version("s").unwrap();

    let proposal = m.propose("s").unwrap();
    assert_eq!(
        m.store().version("s").unwrap(),
        version,
        "proposing logs nothing"
    );
    let proposed = proposal
        .checkpoint
        .clone()
        .expect("the compaction writes a checkpoint");
    assert!(proposal.report.tokens_after < proposal.report.tokens_before);
    assert_eq!(proposal.actions.len(), before.conversation.items.len());
    assert!(proposal.actions.iter().any(|(_, a)| *a == "summarize"));
    // The next request is still the uncompacted one.
    let again = m.preflight("s", &agent.history).unwrap();
    assert_eq!(again.conversation.items, before.conversation.items);

    // That preflight moved the session on: the old proposal is refused, and nothing changes.
    let err = m.apply(&proposal, None).unwrap_err();
    assert!(
        matches!(err, SessionError::ProposalOutdated { .. }),
        "{err}"
    );

    let proposal = m.propose("s").unwrap();
    let edited = format!("{proposed}\n- Reviewer's note: the parser module is off limits.");
    let applied = m.apply(&proposal, Some(&edited)).unwrap();
    assert_eq!(
        checkpoint_text(&applied.conversation).as_deref(),
        Some(edited.as_str())
    );
    assert!(applied.tokens_after < applied.tokens_before);
    assert!(applied
        .events
        .iter()
        .any(|e| e.get("trigger").and_then(|t| t.as_str()) == Some("review")));
    // The next preflight sends the edited checkpoint and what is new.
    agent.step();
    let next = m.preflight("s", &agent.history).unwrap();
    assert!(checkpoint_text(&next.conversation)
        .unwrap()
        .contains("the parser module is off limits"));

    // An edit that cannot fit is refused and changes nothing.
    let proposal = m.propose("s").unwrap();
    let huge = "word ".repeat(40_000);
    let version = m.store().version("s").unwrap();
    let err = m.apply(&proposal, Some(&huge)).unwrap_err();
    assert!(err.to_string().contains("over the usable budget"), "{err}");
    assert_eq!(m.store().version("s").unwrap(), version);
    let err = m.apply(&proposal, Some("  ")).unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
}
