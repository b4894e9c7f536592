//! Two proxies on one store, one upstream, the turns of a long conversation alternating between
//! them as a round-robin balancer sends them: every request is prepared (none passes through
//! untouched, none reaches the upstream over the window), compaction happens when due, the
//! compacted prefix stays byte-stable across replicas, and every item and every usage is logged
//! once.

use crate::long_session::assert_prefix_stability;
use crate::support::{script_tool_call, tool_output, Harness, Options, Wire, WINDOW};

use compact_session::event::EventKind;
use compact_session::record::{ItemSource, Record};
use compact_session::{MemoryStore, Store};
use std::collections::HashSet;
use std::sync::Arc;

const PASSTHROUGH_HEADER: &str = "x-compact-passthrough";
const STEPS: usize = 36;
const OUTPUT_LINES: usize = 40;

async fn alternating(wire: Wire, stream: bool) {
    let first = Harness::start().await;
    let second = Harness::with(Options {
        store: Some(Arc::clone(&first.store)),
        upstream: Some(first.sim.base_url()),
        ..Options::default()
    })
    .await;
    let replicas = [&first, &second];
    let mut request = wire.first_request("sim-model", "Fix the failing tests in src/.", stream);
    let mut compacted = Vec::new();
    let compactions = || first.proxy.metrics().compactions() + second.proxy.metrics().compactions();
    for step in 0..STEPS {
        script_tool_call(&first.sim, step);
        let before = compactions();
        let reply = replicas[step % 2].post(wire.path(), &[], &request).await;
        assert_eq!(reply.status, 200, "{wire:?} step {step}: {}", reply.text());
        assert!(
            reply.headers.get(PASSTHROUGH_HEADER).is_none(),
            "{wire:?} step {step}: passed through ({:?})",
            reply.headers.get(PASSTHROUGH_HEADER)
        );
        let turn = wire.read(stream, &reply.body);
        assert!(
            turn.complete && turn.errors.is_empty(),
            "{wire:?} step {step}"
        );
        compacted.push(compactions() > before);
        let output = tool_output(&format!("src/file_{step}.rs"), step, OUTPUT_LINES);
        wire.extend(&mut request, &turn, &[output]);
    }
    assert!(compacted.iter().filter(|c| **c).count() >= 2, "{wire:?}");
    let upstream = first.sim.requests();
    assert_eq!(upstream.len(), STEPS);
    for r in &upstream {
        assert_eq!(r.status, 200, "{wire:?} request {}", r.seq);
        assert!(r.input_tokens.unwrap() as usize <= WINDOW);
    }
    let stable = assert_prefix_stability(wire, &upstream, &compacted);
    assert!(stable >= 5, "{wire:?}: {stable} stable pairs");
    let store: Arc<MemoryStore> = Arc::clone(&first.store);
    second.stop().await;
    first.stop().await;
    let sessions = store.sessions().unwrap();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let mut links = HashSet::new();
    let (mut sent, mut usages) = (0, 0);
    for r in store.read(&sessions[0], 0).unwrap() {
        match r.record {
            Record::Item(i) if i.source == ItemSource::Received => {
                assert!(links.insert(i.hash), "{wire:?}: an item logged twice");
            }
            Record::Event(e) if e.kind == EventKind::Sent => sent += 1,
            Record::Event(e) if e.kind == EventKind::Calibration => usages += 1,
            _ => {}
        }
    }
    assert_eq!(sent, STEPS, "{wire:?}: calls logged");
    assert_eq!(usages, STEPS, "{wire:?}: usages logged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_turns_alternating_between_two_proxies() {
    alternating(Wire::Chat, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_streamed_turns_alternating_between_two_proxies() {
    alternating(Wire::Anthropic, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_streamed_turns_alternating_between_two_proxies() {
    alternating(Wire::Responses, true).await;
}
