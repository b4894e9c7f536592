//! A long tool-using conversation (several times the window) through the proxy in each wire
//! format, streaming and not: every reply reaches the client intact, no overflow error does, and
//! once the proxy has compacted, consecutive upstream requests share the compacted prefix byte
//! for byte (the provider's prompt cache keeps hitting).

use crate::support::{script_tool_call, tokens_of, tool_output, Harness, Options, Wire, WINDOW};
use compact_session::event::EventKind;
use compact_session::record::Record;
use compact_session::{MemoryStore, Store};
use compact_sim::RecordedRequest;
use serde_json::json;

/// Steps of the conversation; with outputs of [`OUTPUT_LINES`] lines it reaches more than three
/// windows of history.
const STEPS: usize = 40;
const OUTPUT_LINES: usize = 40;

async fn long_session(wire: Wire, stream: bool) {
    long_session_archived(wire, stream, None).await;
}

/// The long session, archiving compactions in `archive` when given.
async fn long_session_archived(
    wire: Wire,
    stream: bool,
    archive: Option<std::sync::Arc<compact_session::FsArchive>>,
) {
    let h = match &archive {
        None => Harness::start().await,
        Some(a) => {
            let a = std::sync::Arc::clone(a);
            Harness::with(Options {
                adjust: Some(std::sync::Arc::new(
                    move |c: &mut compact_proxy::ProxyConfig| {
                        c.archive = Some(a.clone() as std::sync::Arc<dyn compact_session::Archive>);
                    },
                )),
                ..Options::default()
            })
            .await
        }
    };
    let store = h.store.clone();
    let mut request = wire.first_request("sim-model", "Fix the failing tests in src/.", stream);
    let mut compacted = Vec::new();
    for step in 0..STEPS {
        script_tool_call(&h.sim, step);
        let before = h.proxy.metrics().compactions();
        let reply = h.post(wire.path(), &[], &request).await;
        assert_eq!(
            reply.status,
            200,
            "{wire:?} stream={stream} step {step}: {}",
            reply.text()
        );
        let turn = wire.read(stream, &reply.body);
        assert!(
            turn.errors.is_empty(),
            "{wire:?} step {step}: {:?}",
            turn.errors
        );
        assert!(turn.complete, "{wire:?} step {step}: the reply ended early");
        assert!(
            turn.text.contains(&format!("Step {step}:")),
            "{wire:?} step {step}: {}",
            turn.text
        );
        assert_eq!(turn.calls.len(), 1, "{wire:?} step {step}");
        assert_eq!(turn.calls[0].1, "read_file");
        let args: serde_json::Value = serde_json::from_str(&turn.calls[0].2).unwrap();
        assert_eq!(args, json!({"path": format!("src/file_{step}.rs")}));
        compacted.push(h.proxy.metrics().compactions() > before);
        let output = tool_output(&format!("src/file_{step}.rs"), step, OUTPUT_LINES);
        wire.extend(&mut request, &turn, &[output]);
    }
    let history = tokens_of(&request);
    assert!(
        history >= 3 * WINDOW,
        "{wire:?}: the history is only {history} tokens"
    );
    assert!(
        compacted.iter().any(|c| *c),
        "{wire:?}: no compaction happened"
    );

    let upstream = h.sim.requests();
    let overflowed = upstream.iter().filter(|r| r.status != 200).count();
    assert_eq!(
        overflowed, 0,
        "{wire:?}: the proxy's own count should keep every request inside the window"
    );
    assert_eq!(upstream.len(), STEPS);
    for r in &upstream {
        // Unknown request fields survive compaction and re-encoding.
        assert_eq!(
            r.body["x_client_tag"],
            json!({"keep": [1, 2]}),
            "{wire:?} request {}",
            r.seq
        );
        assert_eq!(r.body["stream"].as_bool().unwrap_or(false), stream);
        assert!(r.input_tokens.unwrap() as usize <= WINDOW);
    }
    let stable = assert_prefix_stability(wire, &upstream, &compacted);
    assert!(
        stable >= 5,
        "{wire:?}: only {stable} consecutive requests without a compaction between them"
    );
    // With an archive, every compaction left its transcript there.
    if let Some(a) = &archive {
        use compact_session::archive::ObjectKind;
        let transcripts = compact_session::Archive::list(a.as_ref(), None)
            .unwrap()
            .iter()
            .filter(|o| o.key.kind == ObjectKind::Transcript)
            .count() as u64;
        assert_eq!(transcripts, h.proxy.metrics().compactions(), "{wire:?}");
    }
    h.stop().await;
    // Every reply's usage (streamed or not) calibrated the session.
    let calibrations = h_store_events(&store, EventKind::Calibration);
    assert!(
        calibrations >= STEPS - 1,
        "{wire:?}: {calibrations} usages recorded for {STEPS} replies"
    );
}

/// For every request after the first compaction that did not compact again, the bytes sent
/// upstream start with the previous request's bytes up to the end of its history. Returns the
/// number of pairs checked.
pub(crate) fn assert_prefix_stability(
    wire: Wire,
    upstream: &[RecordedRequest],
    compacted: &[bool],
) -> usize {
    let key = wire.list_key();
    let mut checked = 0;
    let mut seen_compaction = false;
    for i in 0..upstream.len() {
        let had = seen_compaction;
        seen_compaction |= compacted[i];
        if i == 0 || !had || compacted[i] {
            continue;
        }
        let (prev, cur) = (&upstream[i - 1], &upstream[i]);
        let list = serde_json::to_string(&prev.body[key]).unwrap();
        let start = find(&prev.raw, list.as_bytes())
            .unwrap_or_else(|| panic!("{wire:?}: request {} is not compact JSON", prev.seq));
        // Everything up to the history's closing bracket.
        let end = start + list.len() - 1;
        assert!(
            cur.raw.len() > end,
            "{wire:?}: request {} is shorter than {}",
            cur.seq,
            prev.seq
        );
        assert!(
            cur.raw[..end] == prev.raw[..end],
            "{wire:?}: request {} does not extend request {} byte for byte (first difference at byte {})",
            cur.seq,
            prev.seq,
            cur.raw.iter().zip(prev.raw.iter()).position(|(a, b)| a != b).unwrap_or(end)
        );
        checked += 1;
    }
    checked
}

/// Events of `kind` in every session of `store`.
fn h_store_events(store: &MemoryStore, kind: EventKind) -> usize {
    let mut n = 0;
    for id in store.sessions().unwrap() {
        for s in store.read(&id, 0).unwrap() {
            if matches!(&s.record, Record::Event(e) if e.kind == kind) {
                n += 1;
            }
        }
    }
    n
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_long_session() {
    long_session(Wire::Chat, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_long_session_streaming() {
    long_session(Wire::Chat, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_long_session() {
    long_session(Wire::Responses, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_long_session_streaming() {
    long_session(Wire::Responses, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_long_session() {
    // This one also archives its compactions (`ProxyConfig::archive`).
    let dir = std::env::temp_dir().join(format!("compact-proxy-archive-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let archive = std::sync::Arc::new(compact_session::FsArchive::open(&dir).unwrap());
    long_session_archived(Wire::Anthropic, false, Some(archive)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_long_session_streaming() {
    long_session(Wire::Anthropic, true).await;
}
