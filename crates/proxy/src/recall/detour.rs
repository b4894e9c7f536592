//! The proxy's side of a detour: answering a recall-only turn's calls from the session log
//! within the request limit, the detour request built from them, the request without the tool
//! for a fallback, and a held stream read until it is known to be the client's or a recall-only
//! turn. `compacting.rs` drives the detours with these.

use super::sniff::{Sniffer, Verdict};
use super::{Answer, Outcome, RecallCall, RecallTurn};
use crate::config::KeptOutputs;
use crate::route::Route;
use bytes::Bytes;
use compact_session::CompactManager;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{json, Value};
use std::sync::Arc;

/// Bytes a recall answer takes besides its text (the tool result's JSON around it), counted
/// generously so a detour request stays within the proxy's request limit.
pub const ANSWER_FRAMING_BYTES: usize = 256;

/// What the recall detours of one client request did (its log line's `recall` field).
#[derive(Debug, Default)]
pub struct Detours {
    /// The tool was added to the request.
    pub offered: bool,
    /// Recall-only replies answered and sent again.
    pub detours: u32,
    /// Calls answered.
    pub calls: u32,
    /// The bound was reached, or a detour overflowed: the request went out again without the tool.
    pub gave_up: Option<&'static str>,
    /// Input tokens of the replies the client never saw.
    pub input_tokens: u64,
    /// Output tokens of the replies the client never saw.
    pub output_tokens: u64,
}

impl Detours {
    /// The log line's `recall` field.
    pub fn to_json(&self) -> Value {
        json!({"detours": self.detours, "calls": self.calls, "gave_up": self.gave_up,
               "detour_input_tokens": self.input_tokens,
               "detour_output_tokens": self.output_tokens})
    }
}

/// Answers every call of `turn` (asked by the model on top of `request`) from the session's log,
/// else from the outputs `compactctl run` kept (`kept`: where, and the client's own session id),
/// in order: each answer, its outcome, and the error text when the log could not be read. The
/// originals returned take at most what keeps the detour request within `limit` bytes and within
/// the session's usable budget (by the provider's count of the turn); one that would not fit is
/// answered with an error result.
pub async fn answer_turn(
    manager: &Arc<CompactManager>,
    kept: Option<(&KeptOutputs, Option<&str>)>,
    session: &str,
    turn: &RecallTurn,
    request: &Value,
    limit: usize,
) -> Vec<(Answer, Outcome, Option<String>)> {
    // The tokens the window still has room for: what the session's budget may use, less what the
    // provider counted of the request and its reply (unknown when the reply reported no usage).
    let usable = compact_core::budget::Budget::new(&manager.config().policy).usable;
    let mut tokens = turn
        .usage
        .map(|(input, output)| usable.saturating_sub((input + output) as usize));
    // What the turn and the results' framing take besides the originals themselves.
    let framing: usize = turn
        .history
        .iter()
        .map(|v| v.to_string().len())
        .sum::<usize>()
        + turn.calls.len() * ANSWER_FRAMING_BYTES;
    let mut room = limit.saturating_sub(request.to_string().len() + framing);
    let mut answers = Vec::with_capacity(turn.calls.len());
    for call in &turn.calls {
        answers.push(answer(manager, kept, session, call, &mut room, &mut tokens).await);
    }
    answers
}

/// The detour request: `request`, the model's turn and the answers (`None` when the request has
/// no list to append them to).
pub fn append(
    route: Route,
    mut request: Value,
    turn: &RecallTurn,
    answers: &[Answer],
) -> Option<Value> {
    super::reply::append(route, &mut request, turn, answers).then_some(request)
}

/// Answers one call, taking its text out of `room` (bytes the request may still grow by).
async fn answer(
    manager: &Arc<CompactManager>,
    kept: Option<(&KeptOutputs, Option<&str>)>,
    session: &str,
    call: &RecallCall,
    room: &mut usize,
    tokens: &mut Option<usize>,
) -> (Answer, Outcome, Option<String>) {
    let Some(id) = call.id.clone() else {
        let answer = Answer::failed(&call.call_id, None, Outcome::Invalid, "");
        return (answer, Outcome::Invalid, None);
    };
    let recalled = {
        let manager = Arc::clone(manager);
        // Where `compactctl run` may have kept it: the client's own session (the hooks keep each
        // output under the agent's session id), then the configured ones.
        let kept = kept.map(|(k, client)| {
            let sessions: Vec<String> = client
                .map(str::to_owned)
                .into_iter()
                .chain(k.sessions.iter().cloned())
                .collect();
            (Arc::clone(&k.manager), sessions)
        });
        let session = session.to_owned();
        let id = id.clone();
        tokio::task::spawn_blocking(move || {
            let mut found = manager.recall_for_model(&session, &id)?;
            // An id the conversation's log does not know may name an output `compactctl run`
            // kept.
            if let (None, Some((kept, sessions))) = (&found.item, kept) {
                found.item = sessions.iter().find_map(|s| kept.recall(s, &id).ok());
                if let Some(item) = &found.item {
                    found.tokens = manager.config().counter.count_text(&item.plain_text());
                }
            }
            Ok::<_, compact_session::SessionError>(found)
        })
        .await
    };
    let failed = |outcome, detail: &str| Answer::failed(&call.call_id, Some(&id), outcome, detail);
    match recalled {
        Ok(Ok(found)) => match found.item {
            Some(item) => {
                let text = item.plain_text();
                // A JSON string can take up to six bytes per byte of text (`\u0001`).
                let size = serde_json::to_string(&text).map_or(usize::MAX, |t| t.len());
                if size > *room {
                    let detail = format!("{} bytes, {} tokens", text.len(), found.tokens);
                    return (failed(Outcome::TooLarge, &detail), Outcome::TooLarge, None);
                }
                if let Some(left) = tokens.as_mut() {
                    if found.tokens > *left {
                        let detail = format!(
                            "{} tokens, and the context window has room for {left} more",
                            found.tokens
                        );
                        return (failed(Outcome::TooLarge, &detail), Outcome::TooLarge, None);
                    }
                    *left -= found.tokens;
                }
                *room -= size;
                (Answer::found(&call.call_id, text), Outcome::Found, None)
            }
            None => (failed(Outcome::NotFound, ""), Outcome::NotFound, None),
        },
        Ok(Err(e)) => (
            failed(Outcome::Error, ""),
            Outcome::Error,
            Some(e.to_string()),
        ),
        Err(_) => (failed(Outcome::Error, ""), Outcome::Error, None),
    }
}

/// The bytes of `request` without the `compact_recall` tool (and without `tools` when the tool
/// created it).
pub fn without_tool(request: &Value, created_tools: bool) -> Bytes {
    let mut request = request.clone();
    super::tool::remove(&mut request, created_tools);
    Bytes::from(request.to_string())
}

/// Reads a held stream (the chunks of `head` first, then more of `incoming`, kept in `head`) until
/// it is known whether it is a recall-only turn. Returns the verdict, and whether the stream broke.
/// A silent upstream ends the wait with [`Verdict::Forward`]: the forwarded body times it out.
pub async fn hold(
    incoming: &mut Incoming,
    head: &mut Vec<Bytes>,
    route: Route,
    idle: std::time::Duration,
) -> (Verdict, bool) {
    let mut sniffer = Sniffer::new(route);
    for chunk in head.iter() {
        match sniffer.push(chunk) {
            Verdict::Undecided => {}
            decided => return (decided, false),
        }
    }
    loop {
        let frame = match tokio::time::timeout(idle, incoming.frame()).await {
            Err(_) => return (Verdict::Forward, false),
            Ok(None) => return (sniffer.end(), false),
            Ok(Some(Err(_))) => return (Verdict::Forward, true),
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let verdict = sniffer.push(&data);
        head.push(data);
        if verdict != Verdict::Undecided {
            return (verdict, false);
        }
    }
}
