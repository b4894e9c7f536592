//! The provider backend: Anthropic's on-demand compaction as the summariser
//! (`ProviderKind::AnthropicCompaction`) against the simulator. Its readable summary becomes the
//! checkpoint text; no summary (empty content, a refusal) or a 529 `compaction_unavailable` makes the
//! compactor fall back to Compact's own checkpoint, and the window is still kept.

use crate::summarize::{config, request, session};
use compact_core::model::{Conversation, Item, Role};
use compact_core::policy::{Policy, StrategyName};
use compact_core::tokens::{Encoding, TokenCounter};
use compact_engine::Compactor;
use compact_llm::{build_without_fallback, ProviderKind, StreamMode};
use compact_sim::{Fault, SimConfig, Simulator};

/// A session long enough that a 4k window needs a checkpoint.
fn long_session() -> Conversation {
    let mut c = session();
    for k in 0..30 {
        c.push(Item::text(
            Role::User,
            format!("Step {k}: also check src/module_{k}.rs for the same parse error."),
        ));
        c.push(Item::text(
            Role::Assistant,
            format!(
                "module_{k}: {}",
                "the parser rejects trailing commas here ".repeat(12)
            ),
        ));
    }
    c
}

#[tokio::test]
async fn the_providers_summary_is_the_checkpoint_text() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let conv = session();
    for stream in [StreamMode::Off, StreamMode::On] {
        let mut c = config(ProviderKind::AnthropicCompaction, &sim);
        c.stream = stream;
        let s = build_without_fallback(c).unwrap();
        let summary = s.summarize(request(&conv.items, 400)).await.unwrap();
        assert_eq!(summary.produced_by, "anthropic-compaction");
        assert!(
            summary.text.contains("earlier conversation"),
            "{}",
            summary.text
        );
        let r = sim.requests().last().unwrap().clone();
        assert_eq!(r.header("anthropic-beta"), Some("compact-2026-09-04"));
        assert_eq!(r.body["compaction"]["type"], "summarize");
        assert!(r.body["compaction"]["instructions"]
            .as_str()
            .is_some_and(|i| !i.is_empty()));
        assert!(r.body.get("system").is_none());
        // The cost is the compaction pass (the top-level counts are 0).
        assert!(summary.usage.input_tokens > 0 && summary.usage.output_tokens > 0);
    }
}

#[tokio::test]
async fn no_summary_or_unavailable_falls_back_to_compacts_own_checkpoint() {
    let sim = Simulator::spawn(SimConfig::default()).await.unwrap();
    let conv = long_session();
    let counter = TokenCounter::new(Encoding::O200kBase);
    let mut c = config(ProviderKind::AnthropicCompaction, &sim);
    c.retries.max_retries = 1;
    let compactor = Compactor::new(
        Policy::for_window(4_000),
        build_without_fallback(c).unwrap(),
        counter,
    )
    .unwrap()
    .with_strategy(StrategyName::Tiered);

    // It works: the provider's summary is the checkpoint.
    let done = compactor.compact(&conv).await.unwrap();
    assert_eq!(
        done.report.summarizer.as_deref(),
        Some("anthropic-compaction")
    );

    let failures = [
        vec![
            Fault::CompactionEmpty {
                stop: "end_turn".into()
            };
            3
        ],
        vec![
            Fault::CompactionEmpty {
                stop: "refusal".into()
            };
            3
        ],
        vec![
            Fault::CompactionEmpty {
                stop: "max_tokens".into()
            };
            3
        ],
        vec![Fault::CompactionUnavailable; 3],
    ];
    for faults in failures {
        sim.clear();
        for f in &faults {
            sim.push_fault(f.clone());
        }
        let done = compactor.compact(&conv).await;
        assert!(done.is_ok(), "{faults:?}: {:?}", done.err());
        let done = done.unwrap();
        assert_ne!(
            done.report.summarizer.as_deref(),
            Some("anthropic-compaction"),
            "{faults:?}"
        );
        assert!(
            done.report
                .warnings
                .iter()
                .any(|w| w.contains("deterministic checkpoint")),
            "{faults:?}: {:?}",
            done.report.warnings
        );
        assert!(done.report.tokens_after <= done.report.usable, "{faults:?}");
        assert!(!sim.requests().is_empty(), "the provider was asked");
    }
}
