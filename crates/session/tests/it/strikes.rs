//! The two-strike breaker: when a pinned floor (here a system prompt) keeps the request above the
//! trigger, two automatic compactions in a row fail to get under it; the third is not attempted
//! within the same user turn while the request fits (it goes out unchanged); once it no longer
//! fits it is compacted anyway (sent as it is, the provider would refuse it); a new user turn and a
//! manual compaction run again.

use crate::common::counter;
use compact_core::budget::Budget;
use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall, ToolResult};
use compact_core::policy::Policy;
use compact_session::{
    CompactManager, EventKind, MemoryStore, SessionConfig, SessionError, MAX_STRIKES,
};
use std::sync::Arc;

fn skipped_reason(prepared: &compact_session::Prepared) -> Option<String> {
    prepared
        .events
        .iter()
        .find(|e| e.kind == EventKind::CompactionSkipped)
        .and_then(|e| e.get("reason"))
        .map(|r| r.as_str().unwrap_or_default().to_owned())
}

#[test]
fn two_compactions_above_the_trigger_stop_automatic_compaction() {
    let policy = Policy::for_window(8_000);
    let budget = Budget::new(&policy);
    let c = counter();
    let manager =
        CompactManager::open(SessionConfig::new(policy, c), Arc::new(MemoryStore::new())).unwrap();
    // A system prompt (pinned) halfway between the trigger and the usable budget.
    let aim = budget.trigger + (budget.usable - budget.trigger) / 2;
    let mut system = String::new();
    let mut n = 0;
    while c.count_item(&Item::text(Role::System, &system)) < aim {
        n += 1;
        system.push_str(&format!(
            "Rule {n}: keep the build green and the logs tidy. "
        ));
    }
    let mut conv = Conversation::default();
    conv.push(Item::text(Role::System, &system));
    let mut attempts = 0;
    let mut turn = 0;
    conv.push(Item::text(Role::User, "Tidy the logs, step by step."));
    // One model call of the agent's loop: a tool call and its result, no new user message.
    let mut next_turn = |conv: &mut Conversation| {
        turn += 1;
        let id = format!("call_{turn}");
        conv.push(Item::new(ItemBody::ToolCall(ToolCall::function(
            &id,
            "bash",
            serde_json::json!({"command": format!("ls logs/{turn}")}),
        ))));
        conv.push(Item::new(ItemBody::ToolResult(ToolResult::text(
            &id,
            format!("app-{turn}.log"),
        ))));
    };
    // Every request is above the trigger: the first two attempt a compaction that cannot get under it.
    while attempts < MAX_STRIKES {
        next_turn(&mut conv);
        let prepared = manager.preflight("s", &conv).unwrap();
        let attempted = prepared.report.compaction.is_some()
            || skipped_reason(&prepared).is_some_and(|r| r != "two_strikes");
        assert!(attempted, "turn {turn}: the request is above the trigger");
        attempts += 1;
    }
    // The third is not attempted; the request fits, so it goes out with a warning.
    next_turn(&mut conv);
    let prepared = manager.preflight("s", &conv).unwrap();
    assert_eq!(skipped_reason(&prepared).as_deref(), Some("two_strikes"));
    assert!(prepared.report.compaction.is_none());
    assert!(prepared
        .report
        .warnings
        .iter()
        .any(|w| w.contains("automatic compaction stopped")));
    assert_eq!(
        prepared.conversation.items.len(),
        conv.items.len(),
        "sent unchanged"
    );
    // Grown past the usable budget: compacted anyway, back under it, and said so.
    let compacted = loop {
        next_turn(&mut conv);
        let prepared = manager.preflight("s", &conv).unwrap();
        if prepared.report.compaction.is_some() {
            break prepared;
        }
        assert_eq!(skipped_reason(&prepared).as_deref(), Some("two_strikes"));
        assert!(prepared.report.effective_tokens <= budget.usable);
    };
    assert!(compacted.report.effective_tokens > budget.usable);
    assert!(
        compacted.report.tokens <= budget.usable,
        "{:?}",
        compacted.report
    );
    assert!(compacted
        .report
        .warnings
        .iter()
        .any(|w| w.contains("compacted anyway")));
    // A new user turn runs compaction again.
    conv.push(Item::text(Role::User, "Next: rotate the logs."));
    match manager.preflight("s", &conv) {
        Ok(p) => assert_ne!(skipped_reason(&p).as_deref(), Some("two_strikes")),
        Err(SessionError::Compact(_)) => {}
        Err(other) => panic!("a new turn must attempt a compaction: {other}"),
    }
    // So does a manual compaction (it is not stopped by the breaker).
    conv.push(Item::text(Role::User, "/compact"));
    match manager.preflight("s", &conv) {
        Ok(p) => {
            assert!(p.report.manual);
            assert_ne!(skipped_reason(&p).as_deref(), Some("two_strikes"));
        }
        Err(SessionError::Compact(_)) => {} // attempted, and the floor is too big even so
        Err(other) => panic!("a manual compaction must be attempted: {other}"),
    }
}
