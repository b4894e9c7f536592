//! The compaction backend per model route: two models behind one proxy, one routed to Anthropic's
//! own on-demand compaction (the `anthropic-compaction` summariser, built as `compactctl serve`
//! builds it), the other to Compact's deterministic checkpoint. Each model's compactions go
//! through its own backend only (the simulator records the on-demand calls and the session log
//! names the summariser that wrote each checkpoint), and with the provider forced to fail (empty
//! content, 529 `compaction_unavailable`) the session goes on through Compact's own compaction with
//! zero client errors.

use crate::support::{script_tool_call, tool_output, Harness, Options, Wire};
use compact_core::policy::StrategyName;
use compact_llm::{build_without_fallback, ProviderKind, RetryPolicy, SummarizerConfig};
use compact_proxy::{Backend, ModelRoute, ProxyConfig};
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::Store;
use compact_sim::{Fault, RecordedRequest};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// The model whose sessions Anthropic compacts.
const PROVIDER_MODEL: &str = "claude-provider-compacts";
/// The model whose sessions Compact compacts with its deterministic checkpoint.
const OWN_MODEL: &str = "claude-compact-compacts";
/// Steps of each session; with outputs of [`OUTPUT_LINES`] lines several windows of history.
const STEPS: usize = 30;
const OUTPUT_LINES: usize = 40;

/// A harness whose first model route compacts through the simulator's on-demand compaction.
async fn two_routes() -> Harness {
    Harness::with(Options {
        adjust: Some(Arc::new(|config: &mut ProxyConfig| {
            // A strategy whose every compaction writes a checkpoint, so that each one asks the
            // backend (tiered often reaches the target by references alone).
            config.session.policy.strategy = StrategyName::Codex;
            let mut llm = SummarizerConfig::new(ProviderKind::AnthropicCompaction);
            llm.model = PROVIDER_MODEL.into();
            llm.base_url = config.anthropic.base_url.clone();
            llm.api_key_env = "COMPACT_TEST_UNSET_ANTHROPIC_KEY".into();
            llm.timeout = Duration::from_secs(10);
            // One call per compaction: a failure falls back at once (and each queued fault
            // meets exactly one call).
            llm.retries = RetryPolicy {
                max_retries: 0,
                ..RetryPolicy::default()
            };
            let provider = build_without_fallback(llm).unwrap();
            let window = config.anthropic.context_window;
            config.models.push(ModelRoute {
                name: PROVIDER_MODEL.into(),
                base_url: None,
                context_window: window,
                backend: Some(Backend::new("anthropic-compaction", provider)),
            });
            config.models.push(ModelRoute {
                name: OWN_MODEL.into(),
                base_url: None,
                context_window: window,
                backend: None,
            });
        })),
        ..Options::default()
    })
    .await
}

/// Runs a tool-using Anthropic session on `model` for [`STEPS`] steps; with `fault`, every
/// upstream request meets it (the summariser asks twice when a reply has no summary, so the queue
/// holds more faults than requests): a compaction fault fails every on-demand call and changes
/// nothing in a normal reply. Every reply must reach the client whole.
async fn drive(h: &Harness, model: &str, fault: Option<&Fault>) {
    let wire = Wire::Anthropic;
    let headers = [("x-compact-session", model)];
    let mut request = wire.first_request(model, "Fix the failing tests in src/.", false);
    if let Some(f) = fault {
        for _ in 0..STEPS * 4 {
            h.sim.push_fault(f.clone());
        }
    }
    for step in 0..STEPS {
        script_tool_call(&h.sim, step);
        let reply = h.post(wire.path(), &headers, &request).await;
        assert_eq!(reply.status, 200, "{model} step {step}: {}", reply.text());
        let turn = wire.read(false, &reply.body);
        assert!(
            turn.errors.is_empty(),
            "{model} step {step}: {:?}",
            turn.errors
        );
        assert_eq!(turn.calls.len(), 1, "{model} step {step}: {}", reply.text());
        let output = tool_output(&format!("src/file_{step}.rs"), step, OUTPUT_LINES);
        wire.extend(&mut request, &turn, &[output]);
    }
}

/// The simulator's on-demand compaction calls (a top-level `compaction` asks for one).
fn on_demand(requests: &[RecordedRequest]) -> Vec<&RecordedRequest> {
    requests
        .iter()
        .filter(|r| r.body.get("compaction").is_some_and(|c| !c.is_null()))
        .collect()
}

/// The `summarizer` of every `compact.compacted` event in `session`'s log (`null` when the
/// compaction summarised nothing).
fn summarizers(store: &dyn Store, session: &str) -> Vec<Value> {
    store
        .read(session, 0)
        .unwrap()
        .into_iter()
        .filter_map(|s| match s.record {
            Record::Event(e) if e.kind == EventKind::Compacted => {
                Some(e.data.get("summarizer").cloned().unwrap_or(Value::Null))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_model_route_compacts_through_its_own_backend() {
    let h = two_routes().await;
    drive(&h, PROVIDER_MODEL, None).await;
    let after_provider = h.sim.requests();
    drive(&h, OWN_MODEL, None).await;
    let all = h.sim.requests();
    let later = &all[after_provider.len()..];

    // The provider's model: its compactions asked Anthropic, with its own model, and the
    // provider's summaries became the checkpoints.
    let asked = on_demand(&after_provider);
    assert!(!asked.is_empty(), "the provider was never asked to compact");
    assert!(asked.iter().all(|r| r.body["model"] == PROVIDER_MODEL
        && r.status == 200
        && r.header("anthropic-beta") == Some("compact-2026-09-04")));
    let provider = summarizers(h.store.as_ref(), PROVIDER_MODEL);
    assert!(
        provider.contains(&Value::from("anthropic-compaction")),
        "no checkpoint came from the provider: {provider:?}"
    );
    // The other model: compacted too, never through the provider.
    assert!(
        on_demand(later).is_empty(),
        "the deterministic route asked the provider to compact"
    );
    let own = summarizers(h.store.as_ref(), OWN_MODEL);
    assert!(!own.is_empty(), "the second model never compacted");
    assert!(
        !own.contains(&Value::from("anthropic-compaction")),
        "{own:?}"
    );
    // Every upstream call was answered, and every forwarded request fit the window.
    assert!(all.iter().all(|r| r.status == 200));
    assert!(all
        .iter()
        .all(|r| r.input_tokens.unwrap() as usize <= crate::support::WINDOW));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_backend_falls_back_to_compacts_own_compaction() {
    for fault in [
        Fault::CompactionEmpty {
            stop: "end_turn".into(),
        },
        Fault::CompactionEmpty {
            stop: "refusal".into(),
        },
        Fault::CompactionUnavailable,
    ] {
        let h = two_routes().await;
        drive(&h, PROVIDER_MODEL, Some(&fault)).await;
        let requests = h.sim.requests();
        let asked = on_demand(&requests);
        assert!(!asked.is_empty(), "{fault:?}: the provider was never asked");
        // Every call met the fault: no on-demand call produced a summary.
        assert!(
            requests.iter().all(|r| r.fault.is_some()),
            "{fault:?}: a request went unfaulted"
        );
        assert!(h.sim.issued_compactions().is_empty(), "{fault:?}");
        let compacted = summarizers(h.store.as_ref(), PROVIDER_MODEL);
        // Compact wrote every checkpoint itself.
        assert!(
            !compacted.is_empty(),
            "{fault:?}: the session never compacted"
        );
        assert!(
            compacted.iter().all(|s| s == "deterministic"),
            "{fault:?}: {compacted:?}"
        );
        // What went to the model (everything but the failed compaction calls) was answered and
        // fit the window.
        for r in requests
            .iter()
            .filter(|r| r.body.get("compaction").is_none())
        {
            assert_eq!(r.status, 200, "{fault:?}: #{}", r.seq);
            assert!(
                r.input_tokens.unwrap() as usize <= crate::support::WINDOW,
                "{fault:?}: #{} over the window",
                r.seq
            );
        }
        h.stop().await;
    }
}
