//! `compactctl replay --store URL`: every replayed transcript also goes through the session
//! runtime, call by call, as a live session would have sent it: before each model call the
//! history up to that call is preflighted by a `CompactManager` over the store (so the log holds
//! its items, views, compactions and events, and `compactctl ui` and `sessions` can show it).

use crate::cmd::sessions::open_store_url;
use compact_core::model::Conversation;
use compact_replay::{call_points, Job, Setup};
use compact_session::{CompactManager, EventData, SessionConfig, SkippedEvent, MAX_SESSION_ID_LEN};
use std::path::Path;

/// The session id of a transcript: its file name, cut to the longest id a store takes.
fn session_id(name: &str) -> String {
    let base = Path::new(name)
        .file_name()
        .map_or_else(|| name.to_owned(), |f| f.to_string_lossy().into_owned());
    let mut end = base.len().min(MAX_SESSION_ID_LEN);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    base[..end].to_owned()
}

/// Runs every job through a manager over the store at `url`. A call the runtime refuses (its
/// items are logged all the same) is counted and named on stderr; the replay goes on.
pub fn fill(url: &str, jobs: &[Job], setup: &Setup) -> anyhow::Result<()> {
    let store = open_store_url(url, true)?;
    let mut policy = setup.policy.clone();
    if policy.model.is_none() {
        policy.model = Some(setup.model.clone());
    }
    let manager = CompactManager::open(SessionConfig::new(policy, setup.options.counter), store)?;
    for job in jobs {
        let id = session_id(&job.name);
        let items = &job.conversation.items;
        let mut history = Conversation {
            items: Vec::with_capacity(items.len()),
            tools: job.conversation.tools.clone(),
            format: job.conversation.format,
            extra: job.conversation.extra.clone(),
        };
        let (mut calls, mut refused) = (0usize, 0usize);
        let (mut compactions, mut attempted, mut held_back) = (0usize, 0usize, 0usize);
        let mut at = 0;
        for point in call_points(items) {
            history.items.extend_from_slice(&items[at..point]);
            at = point;
            if history.items.is_empty() {
                continue;
            }
            calls += 1;
            match manager.preflight(&id, &history) {
                Ok(prepared) => {
                    let skipped = prepared
                        .events
                        .iter()
                        .find_map(SkippedEvent::from_event)
                        .map(|e| e.reason);
                    let done = prepared.report.compaction.is_some();
                    compactions += usize::from(done);
                    held_back += usize::from(skipped.as_deref() == Some("two_strikes"));
                    attempted += usize::from(done || skipped.is_some_and(|r| r != "two_strikes"));
                }
                Err(e) => {
                    refused += 1;
                    if refused == 1 {
                        eprintln!("compactctl: note: session `{id}`: call {calls}: {e}");
                    }
                }
            }
        }
        eprintln!(
            "compactctl: stored session `{id}`: {calls} calls, {compactions} compactions \
             ({attempted} attempted), {held_back} sent uncompacted by the two-strike breaker, \
             {refused} refused"
        );
    }
    Ok(())
}
