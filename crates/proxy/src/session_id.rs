//! Which session a request belongs to: the `x-compact-session` header when the client sends one;
//! else the client's own session id (Claude Code's `x-claude-code-session-id`, the Codex CLI's
//! `session-id`) joined with a fingerprint of how the conversation starts; else that fingerprint
//! alone (its system prompt and first user message, text only). Agents resend the same opening on
//! every call of a session, so the fingerprint is stable across calls; markers that clients move
//! from message to message (`cache_control`) and ids are left out of it on purpose.
//!
//! The client's id keeps two runs apart that open the same way (two `codex exec` runs in one
//! directory send the same instructions and environment); the fingerprint beside it keeps apart the
//! conversations one client session holds (a Claude Code subagent sends its parent's session id
//! with a conversation of its own).

use crate::route::Route;
use compact_session::chain::ChainHash;
use compact_session::MAX_SESSION_ID_LEN;
use hyper::header::HeaderMap;
use serde_json::Value;

/// The request header naming the session explicitly.
pub const SESSION_HEADER: &str = "x-compact-session";

/// The request header naming the session that started this one: a subagent's session is linked to
/// it ([`compact_session::link`]).
pub const PARENT_HEADER: &str = "x-compact-parent-session";

/// Prefix of fingerprinted session ids.
pub const FINGERPRINT_PREFIX: &str = "fp-";

/// The headers in which clients name their own sessions, and the prefix of the session ids made
/// from them.
pub const CLIENT_SESSION_HEADERS: [(&str, &str); 2] = [
    ("x-claude-code-session-id", "cc-"),
    ("session-id", "codex-"),
];

/// Longest client session id taken (longer ones, or ones with other characters than ASCII
/// letters, digits, `-`, `_`, `.` and `:`, are ignored: the fingerprint is used).
const MAX_CLIENT_ID_LEN: usize = 128;

/// Hex digits of the opening's fingerprint kept beside a client's session id.
const CLIENT_FINGERPRINT_DIGITS: usize = 12;

/// The session header is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {SESSION_HEADER} header must be 1 to {MAX_SESSION_ID_LEN} printable characters")]
pub struct BadSessionHeader;

/// The parent session header is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {PARENT_HEADER} header must be 1 to {MAX_SESSION_ID_LEN} printable characters")]
pub struct BadParentHeader;

/// The parent session a request names ([`PARENT_HEADER`]), if any.
pub fn parent_id(headers: &HeaderMap) -> Result<Option<String>, BadParentHeader> {
    let Some(value) = headers.get(PARENT_HEADER) else {
        return Ok(None);
    };
    let id = value.to_str().map_err(|_| BadParentHeader)?.trim();
    if id.is_empty() || id.len() > MAX_SESSION_ID_LEN || id.chars().any(char::is_control) {
        return Err(BadParentHeader);
    }
    Ok(Some(id.to_owned()))
}

/// The session of a request.
pub fn session_id(
    headers: &HeaderMap,
    route: Route,
    body: &Value,
) -> Result<String, BadSessionHeader> {
    if let Some(value) = headers.get(SESSION_HEADER) {
        let id = value.to_str().map_err(|_| BadSessionHeader)?.trim();
        if id.is_empty() || id.len() > MAX_SESSION_ID_LEN || id.chars().any(char::is_control) {
            return Err(BadSessionHeader);
        }
        return Ok(id.to_owned());
    }
    let print = fingerprint(route, body);
    Ok(match client_session(headers) {
        Some((prefix, id)) => {
            let hash = &print[FINGERPRINT_PREFIX.len()..];
            format!("{prefix}{id}-{}", &hash[..CLIENT_FINGERPRINT_DIGITS])
        }
        None => print,
    })
}

/// The client's own session id, with the prefix of its client ([`CLIENT_SESSION_HEADERS`]).
pub(crate) fn client_session(headers: &HeaderMap) -> Option<(&'static str, &str)> {
    CLIENT_SESSION_HEADERS.iter().find_map(|(name, prefix)| {
        let id = headers.get(*name)?.to_str().ok()?.trim();
        let usable = !id.is_empty()
            && id.len() <= MAX_CLIENT_ID_LEN
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        usable.then_some((*prefix, id))
    })
}

/// `fp-` and the hash of the route, the system text and the first user message's text.
pub fn fingerprint(route: Route, body: &Value) -> String {
    let (system, first_user) = opening(route, body);
    let hash = ChainHash::GENESIS
        .next(route.label().as_bytes())
        .next(system.as_bytes())
        .next(first_user.as_bytes());
    format!("{FINGERPRINT_PREFIX}{hash}")
}

/// The system text and the first user message's text.
fn opening(route: Route, body: &Value) -> (String, String) {
    let mut system = String::new();
    for key in ["system", "instructions"] {
        text_of(&body[key], &mut system);
    }
    let list = match route {
        Route::Responses => &body["input"],
        _ => &body["messages"],
    };
    let mut first_user = String::new();
    match list {
        // Responses' short form: the input string is the first user message.
        Value::String(_) => text_of(list, &mut first_user),
        Value::Array(items) => {
            for item in items {
                match item.get("role").and_then(Value::as_str) {
                    Some("system" | "developer") => text_of(&item["content"], &mut system),
                    Some("user") => {
                        text_of(&item["content"], &mut first_user);
                        break;
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    (system, first_user)
}

/// Appends the text of a content value (a string, or the `text` of its parts), separated by NUL.
fn text_of(content: &Value, out: &mut String) {
    match content {
        Value::String(s) => {
            out.push_str(s);
            out.push('\0');
        }
        Value::Array(parts) => {
            for part in parts {
                match part {
                    Value::String(s) => {
                        out.push_str(s);
                        out.push('\0');
                    }
                    _ => {
                        if let Some(t) = part.get("text").and_then(Value::as_str) {
                            out.push_str(t);
                            out.push('\0');
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fingerprint_ignores_later_turns_and_cache_markers() {
        let first = json!({"model": "c", "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
        let later = json!({"model": "c", "system": [{"type": "text", "text": "sys"}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                         {"role": "assistant", "content": "x"}, {"role": "user", "content": "more"}]});
        let other = json!({"model": "c", "system": "sys2", "messages": [{"role": "user", "content": "hi"}]});
        let a = fingerprint(Route::Messages, &first);
        assert!(a.starts_with(FINGERPRINT_PREFIX));
        assert_eq!(a, fingerprint(Route::Messages, &later));
        assert_ne!(a, fingerprint(Route::Messages, &other));
        assert_ne!(a, fingerprint(Route::ChatCompletions, &first));
        let short = json!({"model": "m", "input": "hi", "instructions": "sys"});
        let long = json!({"model": "m", "instructions": "sys", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]});
        assert_eq!(
            fingerprint(Route::Responses, &short),
            fingerprint(Route::Responses, &long)
        );
    }

    #[test]
    fn a_client_session_id_keeps_runs_apart_and_conversations_apart() {
        let body = json!({"model": "m", "instructions": "rules", "input": [
            {"role": "user", "content": "<environment_context>cwd</environment_context>"}]});
        let subagent = json!({"model": "m", "instructions": "rules", "input": [
            {"role": "user", "content": "a subagent's own task"}]});
        let run = |id: &str, body: &Value| {
            let mut h = HeaderMap::new();
            h.insert("session-id", id.parse().unwrap());
            session_id(&h, Route::Responses, body).unwrap()
        };
        let a = run("0199-aaaa", &body);
        assert!(a.starts_with("codex-0199-aaaa-"), "{a}");
        assert_eq!(a, run("0199-aaaa", &body), "stable across calls");
        assert_ne!(a, run("0199-bbbb", &body), "two runs in one directory");
        assert_ne!(
            a,
            run("0199-aaaa", &subagent),
            "two conversations of one run"
        );
        let mut h = HeaderMap::new();
        h.insert("x-claude-code-session-id", "e302dd4a-ded9".parse().unwrap());
        assert!(session_id(&h, Route::Messages, &body)
            .unwrap()
            .starts_with("cc-e302dd4a-ded9-"));
        h.insert(SESSION_HEADER, "mine".parse().unwrap());
        assert_eq!(session_id(&h, Route::Messages, &body).unwrap(), "mine");
        let mut odd = HeaderMap::new();
        odd.insert("session-id", "has space/and slash".parse().unwrap());
        assert_eq!(
            session_id(&odd, Route::Responses, &body).unwrap(),
            fingerprint(Route::Responses, &body),
            "an unusable client id falls back to the fingerprint"
        );
    }

    #[test]
    fn header_wins_and_is_checked() {
        let mut h = HeaderMap::new();
        h.insert(SESSION_HEADER, "abc".parse().unwrap());
        assert_eq!(session_id(&h, Route::Messages, &json!({})).unwrap(), "abc");
        h.insert(SESSION_HEADER, " ".parse().unwrap());
        assert_eq!(
            session_id(&h, Route::Messages, &json!({})),
            Err(BadSessionHeader)
        );
        let long = "x".repeat(MAX_SESSION_ID_LEN + 1);
        h.insert(SESSION_HEADER, long.parse().unwrap());
        assert_eq!(
            session_id(&h, Route::Messages, &json!({})),
            Err(BadSessionHeader)
        );
    }
}
