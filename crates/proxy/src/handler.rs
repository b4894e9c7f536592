//! The request entry point: operations endpoints, the admin API, admission (a slot, or 503 at
//! once: [`crate::admission`]), the body limit, then the compacting routes (their body decoded
//! when compressed: [`crate::content_encoding`]; [`crate::compacting`]) or plain forwarding of
//! everything else.

use crate::log::{emit, Level};
use crate::reply::{error_response, text_response, ErrorKind, ProxyBody};
use crate::route::{Family, Route};
use crate::state::Shared;
use crate::stream::StreamBody;
use crate::upstream::upstream_url;
use crate::{admin, admission, compacting, content_encoding, headers};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::http::request::Parts;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;
use std::convert::Infallible;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// Handles one request. Never fails: every error is a response.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Infallible> {
    let started = Instant::now();
    let path = req.uri().path().to_owned();
    match (req.method(), path.as_str()) {
        (&Method::GET, "/healthz") => {
            return Ok(text_response(StatusCode::OK, "text/plain", "ok\n".into()))
        }
        (&Method::GET, "/readyz") => return Ok(readyz(&shared).await),
        (&Method::GET, "/metrics") => {
            return Ok(text_response(
                StatusCode::OK,
                "text/plain; version=0.0.4",
                shared
                    .metrics
                    .render_with_idle(shared.managers.idle_counts()),
            ))
        }
        _ => {}
    }
    if path == "/admin" || path.starts_with("/admin/") {
        return Ok(admin::handle(&shared, req).await);
    }
    let route = Route::of(req.method(), &path);
    let family = route.family(&path, req.headers());
    // Admitted before its body is read: a request waiting for a slot holds no memory.
    let permit = match shared.admission.admit().await {
        Ok(permit) => permit,
        Err(shed) => {
            let response = shared.admission.shed(route.label(), family, shed);
            discard_body(req.into_body(), shared.config.max_body_bytes).await;
            return Ok(response);
        }
    };
    let (parts, body) = req.into_parts();
    let (response, mut detail) = match read_body(body, shared.config.max_body_bytes).await {
        Ok(body) => match route.format() {
            // A compacting route reads the JSON: a compressed body is decoded, within the limit.
            Some(format) => {
                match content_encoding::decode(&parts.headers, body, shared.config.max_body_bytes) {
                    Ok(body) => {
                        compacting::handle(&shared, route, family, format, &parts, body, started)
                            .await
                    }
                    Err(e) => (error_response(family, e.kind(), &e.to_string()), None),
                }
            }
            None => (
                forward_untouched(&shared, route, family, None, &parts, body, started).await,
                None,
            ),
        },
        Err(kind) => {
            let message = match kind {
                ErrorKind::TooLarge => format!(
                    "the request body is larger than the proxy's limit of {} bytes",
                    shared.config.max_body_bytes
                ),
                _ => "the request body could not be read".to_owned(),
            };
            (error_response(family, kind, &message), None)
        }
    };
    if let Some(waited) = permit.waited {
        // A request that waited for its slot says how long in its log line.
        if let Some(fields) = detail.get_or_insert_with(|| json!({})).as_object_mut() {
            fields.insert("queued_ms".into(), json!(waited.as_secs_f64() * 1000.0));
        }
    }
    finish(&shared, route, &response, started, detail);
    Ok(admission::hold(response, permit))
}

/// Counts and logs an answered request.
fn finish(
    shared: &Shared,
    route: Route,
    response: &Response<ProxyBody>,
    started: Instant,
    detail: Option<serde_json::Value>,
) {
    let status = response.status().as_u16();
    shared.metrics.request(route.label(), status);
    let mut fields = json!({"route": route.label(), "status": status,
                            "ms_to_headers": started.elapsed().as_secs_f64() * 1000.0});
    if let (Some(serde_json::Value::Object(extra)), serde_json::Value::Object(map)) =
        (detail, &mut fields)
    {
        map.extend(extra);
    }
    let level = if status >= 500 {
        Level::Warn
    } else {
        Level::Info
    };
    emit(level, "request", fields);
}

async fn readyz(shared: &Shared) -> Response<ProxyBody> {
    if shared.draining.load(Ordering::SeqCst) {
        return text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "draining\n".into(),
        );
    }
    let store = Arc::clone(shared.managers.store());
    let reachable = tokio::task::spawn_blocking(move || store.sessions().is_ok())
        .await
        .unwrap_or(false);
    if reachable {
        text_response(StatusCode::OK, "text/plain", "ready\n".into())
    } else {
        text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "session store unreachable\n".into(),
        )
    }
}

/// Reads a shed request's body (at most `limit` bytes) and drops it, so that a client still
/// sending reads the answer rather than a reset, and the connection stays usable.
async fn discard_body(mut body: Incoming, limit: usize) {
    let mut read = 0;
    while let Some(Ok(frame)) = body.frame().await {
        read += frame.data_ref().map_or(0, Bytes::len);
        if read > limit {
            break;
        }
    }
}

/// The whole body, at most `limit` bytes.
async fn read_body(body: Incoming, limit: usize) -> Result<Bytes, ErrorKind> {
    match Limited::new(body, limit).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ErrorKind::TooLarge),
        Err(_) => Err(ErrorKind::InvalidRequest),
    }
}

/// The upstream URL of a request.
pub(crate) fn url_for(
    shared: &Shared,
    family: Family,
    model: Option<&str>,
    parts: &Parts,
) -> String {
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", hyper::http::uri::PathAndQuery::as_str);
    upstream_url(shared.config.base_url_for(family, model), path_and_query)
}

/// Sends a request upstream as it came and streams the reply back as it arrives.
pub(crate) async fn forward_untouched(
    shared: &Shared,
    route: Route,
    family: Family,
    model: Option<&str>,
    parts: &Parts,
    body: Bytes,
    started: Instant,
) -> Response<ProxyBody> {
    let url = url_for(shared, family, model, parts);
    let headers = headers::upstream_request(&parts.headers, false);
    shared.metrics.added_latency(started.elapsed());
    let sent = shared
        .client
        .send(
            parts.method.clone(),
            &url,
            &headers,
            body,
            shared.config.upstream_timeout,
        )
        .await;
    match sent {
        Ok(reply) => {
            let (reply_parts, incoming) = reply.into_parts();
            if reply_parts.status.is_server_error() {
                shared.metrics.upstream_error("status_5xx");
            }
            let body = StreamBody::new(
                Vec::new(),
                Some(incoming),
                shared.config.stream_idle_timeout,
            );
            let mut response = Response::new(BodyExt::boxed_unsync(body));
            *response.status_mut() = reply_parts.status;
            *response.headers_mut() = headers::client_response(&reply_parts.headers);
            response
        }
        Err(e) => {
            shared.metrics.upstream_error(e.kind());
            emit(
                Level::Warn,
                "upstream_error",
                json!({"route": route.label(), "kind": e.kind(), "error": e.to_string()}),
            );
            let kind = match e {
                crate::upstream::UpstreamError::Timeout(_) => ErrorKind::Timeout,
                _ => ErrorKind::BadGateway,
            };
            error_response(family, kind, &e.to_string())
        }
    }
}
