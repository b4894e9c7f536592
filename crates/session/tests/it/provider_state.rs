//! What the provider holds of a session: a reply that compacted and a request that carries a
//! provider compaction both update the session's state (a `compact.provider_state` event, read
//! back after a restart and by `provider_state`), and the next preflight counts only what the
//! provider still reads.

use crate::common::{counter, manager_with};
use compact_core::model::Format;
use compact_formats::wire::decode;
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::{provider_state, HeldSource, MemoryStore, Store, Usage};
use compact_session::{CompactionPass, ProviderHeld};
use serde_json::{json, Value};
use std::sync::Arc;

/// A window large enough that nothing here is compacted by us.
const WINDOW: usize = 200_000;

/// An Anthropic request: a system prompt and `turns` long user/assistant exchanges.
fn history(turns: usize) -> Value {
    let mut messages = Vec::new();
    for t in 0..turns {
        messages.push(json!({"role": "user", "content": format!("Step {t}: read src/mod_{t}.rs and explain it. {}", "context ".repeat(60))}));
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": format!("mod_{t}: {}", "the parser keeps state here ".repeat(40))}]}));
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are a coding agent.",
           "messages": messages})
}

fn conv(request: &Value) -> compact_core::model::Conversation {
    decode(Format::Anthropic, request).unwrap()
}

fn state_events(store: &dyn Store, session: &str) -> Vec<Value> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if e.kind == EventKind::ProviderState => Some(e.to_json()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_provider_compaction_updates_the_sessions_state_and_its_count() {
    let store = Arc::new(MemoryStore::new());
    let manager = manager_with(WINDOW, store.clone());
    let mut request = history(20);
    let first = manager.preflight("s", &conv(&request)).unwrap();
    let sent_tokens = first.report.tokens;
    assert_eq!(manager.provider_held("s").unwrap(), None);

    // The reply says the provider compacted: it now stands for everything that was sent.
    let pass = CompactionPass {
        input_tokens: sent_tokens as u64,
        output_tokens: 300,
        billed_input_tokens: sent_tokens as u64,
        billed_output_tokens: 400,
    };
    manager
        .record_usage(
            "s",
            &Usage {
                input_tokens: sent_tokens as u64,
                provider_compaction: Some(pass),
                ..Usage::default()
            },
        )
        .unwrap();
    let announced = manager.provider_held("s").unwrap().unwrap();
    // The usage's records are logged with the next turn, or by a flush.
    manager.flush().unwrap();
    assert_eq!(announced.source, HeldSource::Response);
    assert_eq!(announced.superseded_tokens, sent_tokens);
    assert_eq!(announced.superseded_items, 40);
    assert_eq!(
        provider_state(store.as_ref(), "s").unwrap(),
        Some(announced)
    );

    // The client sends the block back (threshold mode: at the head of the assistant's turn).
    let summary = "Summary of steps 0-19: the parser keeps state in each module.";
    request["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": [{"type": "compaction", "content": summary},
                                                 {"type": "text", "text": "Continuing."}]}),
        json!({"role": "user", "content": "Now fix mod_3."}),
    ]);
    let second = manager.preflight("s", &conv(&request)).unwrap();
    let held = manager.provider_held("s").unwrap().unwrap();
    assert_eq!(held.source, HeldSource::Request);
    assert_eq!(held.wire, Some("anthropic_block"));
    assert_eq!(
        held.index,
        Some(41),
        "the block follows the system prompt and 40 messages"
    );
    assert!(held.item_id.is_some());
    assert_eq!(held.superseded_items, 40);
    let counter = counter();
    let before_block: usize = conv(&request).items[1..41]
        .iter()
        .map(|i| counter.count_item(i))
        .sum();
    assert_eq!(held.superseded_tokens, before_block);
    // What is before the block is gone on the provider's side: the count is of what it reads.
    assert!(
        second.report.tokens < sent_tokens / 4,
        "counted {} tokens of a request whose first {} the provider no longer reads",
        second.report.tokens,
        sent_tokens
    );
    assert_eq!(
        provider_state(store.as_ref(), "s").unwrap(),
        Some(held.clone())
    );

    // The next call extends the session: nothing new is held, nothing more is logged.
    request["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": "Fixed."}),
        json!({"role": "user", "content": "Thanks."}),
    ]);
    let third = manager.preflight("s", &conv(&request)).unwrap();
    assert!(third.report.tokens < sent_tokens / 4);
    let events = state_events(store.as_ref(), "s");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["source"], "response");
    assert_eq!(events[1]["source"], "request");

    // After a restart the state is read back from the log.
    let reopened = manager_with(WINDOW, store.clone());
    assert_eq!(reopened.provider_held("s").unwrap(), Some(held));
}

#[test]
fn an_openai_compaction_item_in_the_history_is_recorded_with_what_it_supersedes() {
    let store = Arc::new(MemoryStore::new());
    let manager = manager_with(WINDOW, store.clone());
    let mut input = vec![json!({"type": "message", "role": "developer", "content": "Be brief."})];
    for t in 0..10 {
        input.push(json!({"type": "message", "role": "user", "content": format!("Step {t}: {}", "look ".repeat(30))}));
        input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("done {t} {}", "ok ".repeat(30))}]}));
    }
    let request = |input: &[Value]| json!({"model": "gpt-5", "input": input});
    manager
        .preflight("o", &conv_of(Format::OpenAiResponses, &request(&input)))
        .unwrap();
    assert_eq!(manager.provider_held("o").unwrap(), None);
    // What the compact endpoint returns, appended by the client: the last user message and the item.
    input.push(json!({"type": "message", "role": "user", "content": "Keep going."}));
    input.push(json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAopaque"}));
    manager
        .preflight("o", &conv_of(Format::OpenAiResponses, &request(&input)))
        .unwrap();
    let held = manager.provider_held("o").unwrap().unwrap();
    assert_eq!(held.source, HeldSource::Request);
    assert_eq!(held.wire, Some("openai_item"));
    assert_eq!(held.index, Some(22));
    // The 20 exchanges before it; not the developer message, not the user message beside it.
    assert_eq!(held.superseded_items, 20);
    assert!(held.superseded_tokens > 0);
    let _: Option<ProviderHeld> = provider_state(store.as_ref(), "o").unwrap();
    assert_eq!(state_events(store.as_ref(), "o").len(), 1);
}

fn conv_of(format: Format, request: &Value) -> compact_core::model::Conversation {
    decode(format, request).unwrap()
}

#[test]
fn a_rewind_to_a_history_without_a_provider_compaction_clears_the_state() {
    let store = Arc::new(MemoryStore::new());
    let manager = manager_with(WINDOW, store.clone());
    let base = history(12);
    manager.preflight("r", &conv(&base)).unwrap();
    let full = manager.preflight("r", &conv(&base)).unwrap().report.tokens;

    // The client sends a threshold-mode block back: the provider holds the first 24 messages.
    let mut compacted = base.clone();
    compacted["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": [{"type": "compaction", "content": "Summary of steps 0-11."},
                                                 {"type": "text", "text": "Continuing."}]}),
        json!({"role": "user", "content": "Now fix mod_3."}),
    ]);
    manager.preflight("r", &conv(&compacted)).unwrap();
    assert!(manager.provider_held("r").unwrap().is_some());

    // The user rewinds to before the block and edits the last turn: the provider reads that
    // request whole, so nothing is held any more, and the count is of the whole request again.
    let mut rewound = base.clone();
    let messages = rewound["messages"].as_array_mut().unwrap();
    messages.truncate(20);
    messages.push(json!({"role": "user", "content": "Start over from step 10, differently."}));
    let after = manager.preflight("r", &conv(&rewound)).unwrap();
    assert!(
        after.report.branched,
        "a shorter, edited history is a branch"
    );
    assert_eq!(manager.provider_held("r").unwrap(), None);
    assert_eq!(provider_state(store.as_ref(), "r").unwrap(), None);
    assert!(
        after.report.tokens > full * 3 / 4,
        "counted {} of a {full}-token-sized history the provider reads whole",
        after.report.tokens
    );
    let events = state_events(store.as_ref(), "r");
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[1]["source"], "none");

    // Read back after a restart; a further call on the same branch logs nothing more.
    let reopened = manager_with(WINDOW, store.clone());
    assert_eq!(reopened.provider_held("r").unwrap(), None);
    reopened.preflight("r", &conv(&rewound)).unwrap();
    assert_eq!(state_events(store.as_ref(), "r").len(), 2);

    // Going forward again to the compacted history holds the block once more.
    reopened.preflight("r", &conv(&compacted)).unwrap();
    assert!(reopened.provider_held("r").unwrap().is_some());
    assert_eq!(state_events(store.as_ref(), "r").len(), 3);
}

/// After a threshold-mode block, the calls that extend the history are counted incrementally
/// (only their new items), and what they send and count equals what a manager that loads the
/// session afresh at each call computes by counting everything.
#[test]
fn calls_after_a_provider_compaction_are_counted_incrementally_and_exactly() {
    let store = Arc::new(MemoryStore::new());
    let manager = manager_with(WINDOW, store.clone());
    let mut request = history(15);
    manager.preflight("t", &conv(&request)).unwrap();
    request["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": [{"type": "compaction", "content": "Summary of steps 0-14."},
                                                 {"type": "text", "text": "Continuing."}]}),
        json!({"role": "user", "content": "Now fix mod_3."}),
    ]);
    let with_block = manager.preflight("t", &conv(&request)).unwrap();
    assert!(
        with_block.report.counted_whole,
        "the block's call is recounted"
    );
    for step in 0..6 {
        request["messages"].as_array_mut().unwrap().extend([
            json!({"role": "assistant", "content": format!("Step {step} done: {}", "edited ".repeat(20))}),
            json!({"role": "user", "content": format!("Go on with step {step}.")}),
        ]);
        let incremental = manager.preflight("t", &conv(&request)).unwrap();
        assert!(
            !incremental.report.counted_whole,
            "step {step}: an appended call after the block was counted whole"
        );
        // A fresh manager over a copy of the log counts the same request from scratch.
        let copy = Arc::new(MemoryStore::new());
        copy.create("t").unwrap();
        let records: Vec<Record> = store
            .read("t", 0)
            .unwrap()
            .into_iter()
            .map(|s| s.record)
            .collect();
        copy.append("t", 0, records).unwrap();
        let fresh = manager_with(WINDOW, copy);
        let whole = fresh.preflight("t", &conv(&request)).unwrap();
        assert_eq!(
            incremental.report.tokens, whole.report.tokens,
            "step {step}"
        );
        assert_eq!(
            *incremental.conversation, *whole.conversation,
            "step {step}: what is sent differs"
        );
    }
}
