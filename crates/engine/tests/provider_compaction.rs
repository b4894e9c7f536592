//! The engine and provider-side compaction: a provider compaction call is never compacted, every
//! strategy keeps the provider's last compaction byte for byte and puts its own checkpoint after
//! it, and what the provider's last compaction already stands for is dropped first, at no loss.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use compact_core::model::{Conversation, Format, ItemBody, ItemKind};
use compact_core::plan::Action;
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::{block_on, CompactError, Compactor, DeterministicSummarizer};
use compact_formats::validate::validate_against;
use compact_formats::wire::{decode, encode};
use serde_json::{json, Value};
use std::sync::Arc;

fn compactor(window: usize, strategy: StrategyName) -> Compactor {
    Compactor::new(
        Policy::for_window(window),
        Arc::new(DeterministicSummarizer),
        TokenCounter::new(Encoding::O200kBase),
    )
    .unwrap()
    .with_strategy(strategy)
}

/// A tool output of about `words` tokens (varied words, so counting is realistic).
fn output(seed: usize, words: usize) -> String {
    (0..words)
        .map(|k| format!("w{}", (seed * 7919 + k * 104_729) % 9973))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Anthropic threshold-mode session: `before` tool turns, a signed readable compaction block, then
/// `after` tool turns.
fn anthropic(before: usize, after: usize, words: usize) -> Value {
    let mut messages =
        vec![json!({"role": "user", "content": "Make the importer stream its input."})];
    let turn = |t: usize, block: Option<Value>| {
        let mut content: Vec<Value> = block.into_iter().collect();
        content.push(json!({"type": "tool_use", "id": format!("toolu_{t}"), "name": "Bash", "input": {"command": format!("run {t}")}}));
        [
            json!({"role": "assistant", "content": content}),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("toolu_{t}"), "content": output(t, words)}]}),
        ]
    };
    for t in 0..before {
        messages.extend(turn(t, None));
    }
    let block = json!({"type": "compaction", "content": "The importer reads the whole file; streaming via BufReader is planned in importer.rs.", "signature": "c2lnbmVk", "x_extra": [1, {"a": null}]});
    for t in before..before + after {
        messages.extend(turn(t, (t == before).then(|| block.clone())));
    }
    messages.push(json!({"role": "user", "content": "Continue."}));
    json!({"model": "claude-sonnet-4-5", "max_tokens": 1024,
        "context_management": {"edits": [{"type": "compact_20260112"}]}, "messages": messages})
}

/// A Responses session: `before` tool turns, `[user message, compaction item]` as the compact
/// endpoint returns them, then `after` tool turns.
fn responses(before: usize, after: usize, words: usize, trigger: bool) -> Value {
    let mut input = vec![json!({"role": "user", "content": "Make the importer stream its input."})];
    let turn = |t: usize| {
        [
            json!({"type": "function_call", "call_id": format!("call_{t}"), "name": "shell", "arguments": format!("{{\"cmd\":\"run {t}\"}}")}),
            json!({"type": "function_call_output", "call_id": format!("call_{t}"), "output": output(t, words)}),
        ]
    };
    for t in 0..before {
        input.extend(turn(t));
    }
    input.push(json!({"role": "user", "content": "Keep the public API unchanged."}));
    input.push(json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "ZW5jcnlwdGVk", "created_by": "compact_endpoint"}));
    for t in before..before + after {
        input.extend(turn(t));
    }
    if trigger {
        input.push(json!({"type": "compaction_trigger"}));
    }
    json!({"model": "gpt-5-codex", "store": false, "stream": true, "input": input})
}

fn provider_compactions(conv: &Conversation) -> Vec<String> {
    conv.items
        .iter()
        .filter(|i| i.meta.visibility.model)
        .filter_map(|i| match i.body() {
            ItemBody::ProviderCompaction(p) => Some(p.wire_text()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_provider_compaction_call_is_never_compacted() {
    let trigger = responses(10, 10, 400, true);
    let mut summarize = anthropic(0, 20, 400);
    summarize
        .as_object_mut()
        .unwrap()
        .remove("context_management");
    summarize["compaction"] = json!({"type": "summarize"});
    for (request, format) in [
        (trigger, Format::OpenAiResponses),
        (summarize, Format::Anthropic),
    ] {
        let conv = decode(format, &request).unwrap();
        let compactor = compactor(16_000, StrategyName::Tiered);
        assert!(
            compactor.counter().total(&conv) > 16_000,
            "the call must be over the window"
        );
        let err = block_on(compactor.compact(&conv)).unwrap_err();
        assert!(
            matches!(err, CompactError::ProviderCompactionCall(_)),
            "{err}"
        );
        let sent = block_on(compactor.preflight(&conv)).unwrap();
        assert!(sent.report.is_none());
        assert_eq!(encode(&sent.conversation, format).unwrap().value, request);
        assert!(matches!(
            compactor.plan(&conv),
            Err(CompactError::ProviderCompactionCall(_))
        ));
    }
}

#[test]
fn every_strategy_keeps_the_provider_compaction_exact_and_its_checkpoint_after_it() {
    for (request, format) in [
        (anthropic(6, 30, 300), Format::Anthropic),
        (responses(6, 30, 300, false), Format::OpenAiResponses),
    ] {
        let conv = decode(format, &request).unwrap();
        let expected: Vec<String> = provider_compactions(&conv);
        assert_eq!(expected.len(), 1);
        for &strategy in StrategyName::ALL {
            let done = block_on(compactor(16_000, strategy).compact(&conv))
                .unwrap_or_else(|e| panic!("{format} / {strategy}: {e}"));
            let out = &done.conversation;
            assert_eq!(
                provider_compactions(out),
                expected,
                "{format} / {strategy}: the provider's compaction changed"
            );
            let at = out
                .items
                .iter()
                .position(|i| i.kind() == ItemKind::ProviderCompaction)
                .unwrap();
            // Anthropic reads nothing before its block (threshold) or refuses it (on demand).
            if let Some(cp) = out
                .items
                .iter()
                .position(|i| i.kind() == ItemKind::Checkpoint)
                .filter(|_| format == Format::Anthropic)
            {
                assert!(
                    cp > at,
                    "{format} / {strategy}: our checkpoint before the provider's"
                );
            }
            let sent = encode(out, format).unwrap().value;
            let found = validate_against(&sent, &request, format);
            assert!(found.is_empty(), "{format} / {strategy}: {found:?}");
        }
    }
}

#[test]
fn what_the_provider_compaction_stands_for_goes_first_without_a_summary() {
    // Heavy history before the block, light after it: dropping the superseded part is enough.
    let conv = decode(Format::Anthropic, &anthropic(30, 3, 300)).unwrap();
    let done = block_on(compactor(16_000, StrategyName::Tiered).compact(&conv)).unwrap();
    assert!(done.plan.checkpoint.is_none(), "nothing needed summarising");
    let dropped = done
        .plan
        .items
        .iter()
        .filter(|p| p.action == Action::Drop)
        .count();
    assert_eq!(
        dropped,
        1 + 30 * 2,
        "the task and every turn before the block"
    );
    assert!(done
        .plan
        .items
        .iter()
        .all(|p| p.action == Action::Drop || p.action == Action::Keep));
    assert_eq!(
        done.conversation.items.first().map(|i| i.kind()),
        Some(ItemKind::ProviderCompaction)
    );
    assert!(done.report.tokens_after <= done.report.target);

    // OpenAI: the user messages the compact endpoint returned beside its item stay.
    let conv = decode(Format::OpenAiResponses, &responses(30, 3, 300, false)).unwrap();
    let done = block_on(compactor(16_000, StrategyName::Tiered).compact(&conv)).unwrap();
    assert!(done.plan.checkpoint.is_none());
    let kinds: Vec<&str> = done
        .conversation
        .items
        .iter()
        .take(2)
        .map(|i| i.kind().as_str())
        .collect();
    assert_eq!(kinds, ["user", "provider_compaction"]);
}
