//! Incremental preflight: a resent history reuses the view sent last time byte for byte; counts
//! stay exact; an edited history is a branch, never mixed in.

use crate::common::{counter, manager, wire_messages, Agent};
use compact_core::model::{Format, ItemBody};
use compact_core::normalize::{diagnose, ProviderRules};
use compact_session::EventKind;
use std::collections::HashSet;

#[test]
fn resent_history_reuses_the_last_request_byte_for_byte() {
    let manager = manager(16_000);
    let mut agent = Agent::new(7, Format::OpenAiChat);
    let mut previous: Option<Vec<String>> = None;
    let mut previous_items = 0;
    let (mut compactions, mut reused_calls) = (0, 0);
    for _ in 0..60 {
        agent.step();
        let prepared = manager.preflight("s", &agent.history).unwrap();
        let messages = wire_messages(&prepared.conversation);
        if prepared.report.compaction.is_some() {
            compactions += 1;
        } else if let Some(prev) = &previous {
            assert_eq!(
                &messages[..prev.len()],
                &prev[..],
                "the previous request is a prefix"
            );
            assert_eq!(prepared.report.reused_items, previous_items);
            reused_calls += 1;
        }
        previous_items = prepared.conversation.items.len();
        previous = Some(messages);
    }
    assert!(
        compactions >= 2,
        "the session was compacted {compactions} times"
    );
    assert_eq!(
        reused_calls + compactions,
        59,
        "every call without a compaction reused the last request"
    );
}

#[test]
fn a_compaction_summarises_only_what_is_new_since_the_last_one() {
    let manager = manager(16_000);
    let mut agent = Agent::new(11, Format::OpenAiChat);
    let mut generations = Vec::new();
    for _ in 0..60 {
        agent.step();
        let prepared = manager.preflight("s", &agent.history).unwrap();
        if prepared.report.compaction.is_some() {
            let generation = prepared
                .conversation
                .items
                .iter()
                .find_map(|i| match i.body() {
                    ItemBody::Checkpoint(c) => Some(c.generation),
                    _ => None,
                });
            generations.push(generation);
        }
    }
    // Each compaction folds the previous checkpoint into the next generation (or, when it only cuts
    // or references outputs, keeps it as it is): generations never go back or skip, so no item is
    // summarised twice from scratch.
    let gens: Vec<u32> = generations.iter().map(|g| g.unwrap_or(0)).collect();
    for pair in gens.windows(2) {
        assert!(pair[1] == pair[0] || pair[1] == pair[0] + 1, "{gens:?}");
    }
    assert!(gens.last().copied().unwrap_or(0) >= 2, "{gens:?}");
}

#[test]
fn incremental_counts_equal_a_full_recount() {
    let manager = manager(16_000);
    for format in [
        Format::OpenAiChat,
        Format::Anthropic,
        Format::OpenAiResponses,
    ] {
        let session = format.name();
        let mut agent = Agent::new(3, format);
        for _ in 0..40 {
            agent.step();
            let prepared = manager.preflight(session, &agent.history).unwrap();
            let conv = &prepared.conversation;
            assert_eq!(prepared.report.tokens, counter().total(conv), "{session}");
            assert!(diagnose(conv, &ProviderRules::for_format(format)).is_empty());
        }
    }
}

#[test]
fn an_edited_history_is_a_branch_and_never_mixed_in() {
    let manager = manager(16_000);
    let mut a = Agent::new(1, Format::OpenAiChat);
    for _ in 0..30 {
        a.step();
        manager.preflight("s", &a.history).unwrap();
    }
    // The same session, but the history diverges from the third item on.
    let mut b = Agent::new(2, Format::OpenAiChat);
    for _ in 0..30 {
        b.step();
    }
    assert_eq!(a.history.items[..2], b.history.items[..2]);
    assert_ne!(a.history.items[2], b.history.items[2]);
    let prepared = manager.preflight("s", &b.history).unwrap();
    assert!(prepared.report.branched);
    assert!(prepared.events.iter().any(|e| e.kind == EventKind::Branch));
    assert_eq!(prepared.report.new_items, b.history.len() - 2);

    let b_items: HashSet<(String, String)> = b
        .history
        .items
        .iter()
        .map(|i| (i.meta.id.to_string(), format!("{:?}", i.body())))
        .collect();
    let b_ids: HashSet<String> = b
        .history
        .items
        .iter()
        .map(|i| i.meta.id.to_string())
        .collect();
    for item in &prepared.conversation.items {
        match item.body() {
            ItemBody::Checkpoint(c) => {
                for id in &c.covers {
                    assert!(
                        b_ids.contains(id.as_str()),
                        "checkpoint covers {id}, not in the branch"
                    );
                }
                let a_only: Vec<&str> = a
                    .history
                    .items
                    .iter()
                    .filter(|i| !b_ids.contains(i.meta.id.as_str()))
                    .filter_map(|i| i.as_tool_result())
                    .filter_map(|r| r.parts.first().and_then(|p| p.as_text()))
                    .filter(|t| t.len() > 60)
                    .collect();
                for text in a_only {
                    assert!(
                        !c.text.contains(text),
                        "the old branch leaked into the checkpoint"
                    );
                }
            }
            _ => assert!(
                b_ids.contains(item.meta.id.as_str()),
                "item {} is not from the branch",
                item.meta.id
            ),
        }
        if !matches!(
            item.body(),
            ItemBody::Checkpoint(_) | ItemBody::ToolResult(_)
        ) {
            assert!(b_items.contains(&(item.meta.id.to_string(), format!("{:?}", item.body()))));
        }
    }
    // The next call extends the branch (not a branch again).
    b.step();
    let next = manager.preflight("s", &b.history).unwrap();
    assert!(!next.report.branched);
    assert_eq!(
        next.conversation.items[..prepared.conversation.len()],
        prepared.conversation.items[..]
    );
    // Going back to the first history is a branch again.
    assert!(manager.preflight("s", &a.history).unwrap().report.branched);
}

#[test]
fn a_retried_request_gets_the_same_request_back() {
    let manager = manager(16_000);
    let mut agent = Agent::new(5, Format::Anthropic);
    for _ in 0..25 {
        agent.step();
    }
    let first = manager.preflight("s", &agent.history).unwrap();
    let again = manager.preflight("s", &agent.history).unwrap();
    assert_eq!(first.conversation, again.conversation);
    assert_eq!(again.report.new_items, 0);
    assert!(again.report.compaction.is_none());
}

/// A Chat Completions request of `turns` tool-using turns, as a host would send it.
fn chat_request(turns: usize) -> serde_json::Value {
    let mut messages =
        vec![serde_json::json!({"role": "system", "content": "You are a coding agent."})];
    for t in 0..turns {
        let id = format!("call_{t}");
        messages
            .push(serde_json::json!({"role": "user", "content": format!("Look at module {t}.")}));
        messages.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function",
             "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/m{t}.rs\"}}")}}]}));
        let body: String = (0..20)
            .map(|l| format!("fn f{t}_{l}() -> u32 {{ {l} }}\n"))
            .collect();
        messages.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": body}));
        messages.push(
            serde_json::json!({"role": "assistant", "content": format!("Module {t} is fine.")}),
        );
    }
    serde_json::json!({"model": "gpt-4o", "messages": messages})
}

#[test]
fn a_resent_wire_request_is_recognised_and_an_edit_in_its_middle_is_a_branch() {
    use compact_formats::wire::decode;
    let manager = manager(1_000_000);
    let first = chat_request(12);
    let decoded = decode(Format::OpenAiChat, &first).unwrap();
    assert!(decoded.items.iter().all(|i| i.wire_digest().is_some()));
    manager.preflight("w", &decoded).unwrap();

    // The same history plus one message: everything before is recognised.
    let mut second = first.clone();
    second["messages"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"role": "user", "content": "Now fix module 3."}));
    let prepared = manager
        .preflight("w", &decode(Format::OpenAiChat, &second).unwrap())
        .unwrap();
    assert!(!prepared.report.branched);
    assert_eq!(prepared.report.new_items, 1);
    assert_eq!(prepared.report.reused_items, decoded.len());

    // One character of a tool output in the middle changes (same length, same ids): the request
    // branches at that result, and the edited text is what is sent.
    let mut third = second.clone();
    let output = third["messages"][4 * 5 + 3]["content"]
        .as_str()
        .unwrap()
        .replacen("{ 7 }", "{ 8 }", 1);
    third["messages"][4 * 5 + 3]["content"] = serde_json::json!(output);
    let edited = decode(Format::OpenAiChat, &third).unwrap();
    let at = edited
        .items
        .iter()
        .position(|i| i.as_tool_result().is_some_and(|r| r.call_id == "call_5"))
        .unwrap();
    let prepared = manager.preflight("w", &edited).unwrap();
    assert!(prepared.report.branched);
    assert_eq!(prepared.report.new_items, edited.len() - at);
    let sent = prepared.conversation.items[at].plain_text();
    assert!(sent.contains("fn f5_7() -> u32 { 8 }"), "{sent}");
}

#[test]
fn an_edit_to_an_item_that_keeps_its_wire_id_is_still_a_branch() {
    use compact_formats::wire::decode;
    // Responses items with wire ids keep them as item ids, so only the content tells the edit.
    let request = |answer_5: &str| {
        let mut input = Vec::new();
        for t in 0..10 {
            input.push(serde_json::json!({"role": "user", "content": format!("Question {t}?")}));
            let text = if t == 5 {
                answer_5.to_owned()
            } else {
                format!("Answer {t}.")
            };
            input.push(
                serde_json::json!({"type": "message", "id": format!("msg_{t}"), "role": "assistant",
                "content": [{"type": "output_text", "text": text}]}),
            );
        }
        serde_json::json!({"model": "gpt-4o", "input": input})
    };
    let manager = manager(1_000_000);
    let original = decode(Format::OpenAiResponses, &request("Answer 5.")).unwrap();
    manager.preflight("r", &original).unwrap();
    let edited = decode(Format::OpenAiResponses, &request("Answer 6.")).unwrap();
    let at = edited
        .items
        .iter()
        .position(|i| i.meta.id.as_str() == "msg_5")
        .unwrap();
    assert_eq!(original.items[at].meta, edited.items[at].meta);
    let prepared = manager.preflight("r", &edited).unwrap();
    assert!(prepared.report.branched);
    assert_eq!(prepared.report.new_items, edited.len() - at);
    assert_eq!(prepared.conversation.items[at].plain_text(), "Answer 6.");
}

#[test]
fn idle_sessions_beyond_the_cap_are_dropped_and_reload_to_the_same_request() {
    use compact_core::policy::Policy;
    use compact_session::{CompactManager, MemoryStore, SessionConfig};
    use std::sync::Arc;
    let mut config = SessionConfig::new(Policy::for_window(16_000), counter());
    config.max_cached_sessions = 8;
    let manager = CompactManager::open(config, Arc::new(MemoryStore::new())).unwrap();
    let mut agents: Vec<Agent> = (0..40)
        .map(|i| Agent::new(100 + i, Format::OpenAiChat))
        .collect();
    let mut last: Vec<Vec<String>> = vec![Vec::new(); agents.len()];
    for round in 0..6 {
        for (i, agent) in agents.iter_mut().enumerate() {
            agent.step();
            let prepared = manager.preflight(&format!("s{i}"), &agent.history).unwrap();
            let messages = wire_messages(&prepared.conversation);
            // A session dropped since its last call was reloaded from the log: what it sends still
            // starts with what it sent last time, unless this call compacted.
            if round > 0 && prepared.report.compaction.is_none() {
                assert_eq!(
                    messages[..last[i].len()],
                    last[i][..],
                    "session {i}, round {round}"
                );
            }
            last[i] = messages;
            assert!(
                manager.cached_sessions() <= 8,
                "{}",
                manager.cached_sessions()
            );
        }
    }
    // A session in use is never dropped; an idle one can be, on demand.
    assert!(manager.evict("s39"));
    assert!(!manager.evict("s39"));
}
