//! The admin API, under `/admin/`, behind a bearer token (`Authorization: Bearer <token>`); off
//! (404) when no token is configured:
//! - `GET /admin/sessions`: every session with its log version and latest event time;
//! - `GET /admin/sessions/{id}`: the session's log version and what the provider holds of it (its
//!   last provider compaction and what that supersedes, `null` when none: `compact_session::provider`);
//! - `GET /admin/sessions/{id}/events`: the session's `compact.*` events, oldest first;
//! - `GET /admin/sessions/{id}/items/{reference}`: an original item by the id a marker, stub or
//!   checkpoint names (`recall`), in the session log's storage form.
//!
//! Path segments are percent-decoded. Answers are JSON; errors too.
//!
//! The web view (`compact-ui`) is mounted under `/admin/ui/`, behind the same token. A browser
//! cannot send a bearer header when it follows a link, so `/admin/ui/login?token=...` checks the
//! token and sets it as an `HttpOnly`, `SameSite=Strict` cookie for `/admin`, which the UI routes
//! (only they) accept in place of the header; both are compared in constant time. The UI's one form
//! (`POST /admin/ui/s/{id}/review`, a reviewed compaction) must come from the proxy's own origin
//! and carry the key of a proposal the page was shown.

use crate::reply::{json_response, ProxyBody};
use crate::state::{Shared, UI_BASE};
use compact_core::redact::same_secret;
use compact_session::record::Record;
use compact_session::{SessionError, StoreError};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

fn error(status: StatusCode, message: &str) -> Response<ProxyBody> {
    json_response(status, &json!({"error": {"message": message}}))
}

/// Handles a request under `/admin`.
pub(crate) async fn handle(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    let Some(expected) = shared.config.admin_token.as_deref() else {
        return error(
            StatusCode::NOT_FOUND,
            "the admin API is off (no admin token is configured)",
        );
    };
    let path = req.uri().path();
    let ui = path == UI_BASE || path.starts_with("/admin/ui/");
    if ui && path == UI_LOGIN {
        return login(&req, expected);
    }
    let given = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let by_cookie =
        ui && cookie(&req).is_some_and(|c| same_secret(c.as_bytes(), expected.as_bytes()));
    if !by_cookie && !same_secret(given.trim().as_bytes(), expected.as_bytes()) {
        let mut r = error(
            StatusCode::UNAUTHORIZED,
            "a valid admin bearer token is required",
        );
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    if ui {
        return ui_page(shared, req).await;
    }
    if req.method() != Method::GET {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "the admin API only answers GET",
        );
    }
    let segments: Option<Vec<String>> = req
        .uri()
        .path()
        .trim_start_matches("/admin")
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let Some(segments) = segments else {
        return error(
            StatusCode::BAD_REQUEST,
            "the path is not valid percent-encoded UTF-8",
        );
    };
    let shared = Arc::clone(shared);
    let answer = tokio::task::spawn_blocking(move || {
        let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
        route(&shared, &parts)
    })
    .await;
    answer.unwrap_or_else(|_| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the admin request failed",
        )
    })
}

/// The page that trades the token (query `token`) for the cookie.
const UI_LOGIN: &str = "/admin/ui/login";
/// The cookie holding the admin token for the web view.
const COOKIE: &str = "compact_admin";
/// Longest `Cookie` header read.
const MAX_COOKIE_BYTES: usize = 4 * 1024;

/// The admin cookie's value, if the request carries one.
fn cookie(req: &Request<Incoming>) -> Option<String> {
    req.headers()
        .get_all(hyper::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| v.len() <= MAX_COOKIE_BYTES)
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == COOKIE).then(|| v.to_owned())
        })
}

/// `/admin/ui/login?token=...`: a right token sets the cookie and leads to the session list; a
/// wrong one is a 401 (and clears nothing).
fn login(req: &Request<Incoming>, expected: &str) -> Response<ProxyBody> {
    let given = req
        .uri()
        .query()
        .and_then(|q| compact_ui::html::query_param(q, "token"))
        .unwrap_or_default();
    if !same_secret(given.as_bytes(), expected.as_bytes()) {
        return error(StatusCode::UNAUTHORIZED, "a valid admin token is required");
    }
    let mut r = Response::new(crate::reply::full(""));
    *r.status_mut() = StatusCode::SEE_OTHER;
    let headers = r.headers_mut();
    headers.insert(
        hyper::header::LOCATION,
        hyper::header::HeaderValue::from_static("/admin/ui/"),
    );
    // The token is sent back only in the cookie, never in a page; a token that is not a valid
    // header value cannot be set (and was refused by the comparison's caller's config anyway).
    if let Ok(v) = hyper::header::HeaderValue::from_str(&format!(
        "{COOKIE}={given}; HttpOnly; SameSite=Strict; Path=/admin"
    )) {
        headers.insert(hyper::header::SET_COOKIE, v);
    }
    headers.insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    r
}

/// A page of the web view, rendered on the blocking pool; a `POST` is the review form.
async fn ui_page(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<ProxyBody> {
    let head = req.method() == Method::HEAD;
    let post = req.method() == Method::POST;
    if req.method() != Method::GET && !head && !post {
        return error(
            StatusCode::METHOD_NOT_ALLOWED,
            "the web view answers GET, HEAD and its review form's POST",
        );
    }
    if post && !compact_ui::same_origin(&req) {
        return error(StatusCode::FORBIDDEN, "a form from another origin");
    }
    let path = req.uri().path()[UI_BASE.len()..].to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let form = if post {
        match compact_ui::read_form(req.into_body()).await {
            Ok(text) => Some(text),
            Err((status, why)) => {
                return error(
                    StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                    why,
                )
            }
        }
    } else {
        None
    };
    let shared = Arc::clone(shared);
    let page = tokio::task::spawn_blocking(move || {
        let store = shared.managers.store().as_ref();
        match form {
            Some(form) => shared.ui.handle_post(store, &path, &form),
            None => shared.ui.handle(store, &path, &query),
        }
    })
    .await;
    let Ok(page) = page else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "the page failed");
    };
    compact_ui::http_response(page, head, crate::reply::full)
}

fn route(shared: &Shared, parts: &[&str]) -> Response<ProxyBody> {
    let store = shared.managers.store();
    match parts {
        ["sessions"] => match store.list_sessions() {
            Ok(list) => {
                let sessions: Vec<Value> = list
                    .iter()
                    .map(|s| json!({"id": s.id, "version": s.version, "last_event_ms": s.last_event_ms}))
                    .collect();
                json_response(StatusCode::OK, &json!({"sessions": sessions}))
            }
            Err(e) => store_error(&e),
        },
        ["sessions", id] => match compact_session::provider_state(store.as_ref(), id) {
            Ok(held) => match store.version(id) {
                Ok(version) => json_response(
                    StatusCode::OK,
                    &json!({"id": id, "version": version,
                            "provider": held.map(|h| h.to_json())}),
                ),
                Err(e) => store_error(&e),
            },
            Err(e) => store_error(&e),
        },
        ["sessions", id, "events"] => match store.read(id, 0) {
            Ok(records) => {
                let events: Vec<Value> = records
                    .iter()
                    .filter_map(|s| match &s.record {
                        Record::Event(e) => Some(e.to_json()),
                        _ => None,
                    })
                    .collect();
                json_response(StatusCode::OK, &json!({"session": id, "events": events}))
            }
            Err(e) => store_error(&e),
        },
        ["sessions", id, "items", reference] => {
            let manager = match shared.managers.default_manager() {
                Ok(m) => m,
                Err(e) => return session_error(&e),
            };
            match manager.recall(id, reference) {
                Ok(item) => json_response(
                    StatusCode::OK,
                    &json!({"session": id, "reference": reference,
                            "item": compact_session::codec::encode_item(&item)}),
                ),
                Err(e) => session_error(&e),
            }
        }
        _ => error(StatusCode::NOT_FOUND, "unknown admin path"),
    }
}

fn store_error(e: &StoreError) -> Response<ProxyBody> {
    match e {
        StoreError::UnknownSession(_) => error(StatusCode::NOT_FOUND, &e.to_string()),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn session_error(e: &SessionError) -> Response<ProxyBody> {
    match e {
        SessionError::UnknownSession(_) | SessionError::UnknownReference { .. } => {
            error(StatusCode::NOT_FOUND, &e.to_string())
        }
        SessionError::InvalidSessionId(_) => error(StatusCode::BAD_REQUEST, &e.to_string()),
        SessionError::Store(s) => store_error(s),
        _ => error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

/// `%XX` escapes decoded; `None` when an escape is broken or the result is not UTF-8.
fn percent_decode(segment: &str) -> Option<String> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = segment.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_compares() {
        assert_eq!(percent_decode("a%20b%2Fc").as_deref(), Some("a b/c"));
        assert_eq!(percent_decode("bad%2"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}
