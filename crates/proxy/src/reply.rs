//! The proxy's own answers, in one place: errors in the shape of the provider family the client
//! speaks (so its SDK raises its usual typed error), the SSE event that ends a stream the upstream
//! broke, and plain JSON for the operations endpoints. Messages say what happened, never echo
//! request content.

use crate::route::Family;
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

/// Errors a response body can end with.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// The body of every response the proxy returns.
pub type ProxyBody = UnsyncBoxBody<Bytes, BodyError>;

/// A complete body.
pub fn full(bytes: impl Into<Bytes>) -> ProxyBody {
    Full::new(bytes.into())
        .map_err(|never| -> BodyError { match never {} })
        .boxed_unsync()
}

/// A JSON response.
pub fn json_response(status: StatusCode, value: &Value) -> Response<ProxyBody> {
    let mut response = Response::new(full(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// A plain-text response.
pub fn text_response(
    status: StatusCode,
    content_type: &'static str,
    text: String,
) -> Response<ProxyBody> {
    let mut response = Response::new(full(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

/// What went wrong, for the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request cannot be read (not JSON, bad session header): 400.
    InvalidRequest,
    /// The request body is over the limit: 413.
    TooLarge,
    /// The request body's `Content-Encoding` is one the proxy does not decode: 415.
    UnsupportedEncoding,
    /// The upstream could not be reached or answered something unreadable: 502.
    BadGateway,
    /// The upstream did not answer in time: 504.
    Timeout,
    /// The proxy failed: 500.
    Internal,
    /// The proxy is at capacity and shed the request: 503 (with `Retry-After`, which the
    /// providers' SDKs honour when they retry). Anthropic's own overload is 529; a proxy answering
    /// for itself says 503, which both SDKs retry as well.
    Overloaded,
}

impl ErrorKind {
    fn status(self) -> StatusCode {
        match self {
            ErrorKind::InvalidRequest => StatusCode::BAD_REQUEST,
            ErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            ErrorKind::UnsupportedEncoding => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorKind::BadGateway => StatusCode::BAD_GATEWAY,
            ErrorKind::Timeout => StatusCode::GATEWAY_TIMEOUT,
            ErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            ErrorKind::Overloaded => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn anthropic_type(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest | ErrorKind::UnsupportedEncoding => "invalid_request_error",
            ErrorKind::TooLarge => "request_too_large",
            ErrorKind::BadGateway | ErrorKind::Internal => "api_error",
            ErrorKind::Timeout => "timeout_error",
            ErrorKind::Overloaded => "overloaded_error",
        }
    }

    fn openai_code(self) -> &'static str {
        match self {
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::TooLarge => "request_too_large",
            ErrorKind::UnsupportedEncoding => "unsupported_content_encoding",
            ErrorKind::BadGateway => "upstream_error",
            ErrorKind::Timeout => "upstream_timeout",
            ErrorKind::Internal => "proxy_error",
            ErrorKind::Overloaded => "proxy_overloaded",
        }
    }
}

/// The error body in the family's shape.
pub fn error_body(family: Family, kind: ErrorKind, message: &str) -> Value {
    match family {
        Family::Anthropic => {
            json!({"type": "error", "error": {"type": kind.anthropic_type(), "message": message}})
        }
        Family::OpenAi => {
            let ty = match kind {
                ErrorKind::InvalidRequest
                | ErrorKind::TooLarge
                | ErrorKind::UnsupportedEncoding => "invalid_request_error",
                // OpenAI's own 503 ("The server is overloaded or not ready yet.").
                ErrorKind::Overloaded => "server_error",
                _ => "api_error",
            };
            json!({"error": {"message": message, "type": ty, "param": null, "code": kind.openai_code()}})
        }
    }
}

/// An error response from the proxy itself.
pub fn error_response(family: Family, kind: ErrorKind, message: &str) -> Response<ProxyBody> {
    let mut response = json_response(kind.status(), &error_body(family, kind, message));
    response.headers_mut().insert(
        "x-compact-proxy-error",
        hyper::header::HeaderValue::from_static("1"),
    );
    response
}

/// The last event of a stream the upstream broke or left silent: an error event the client's SDK
/// raises, after which the stream ends cleanly.
pub fn stream_error_event(family: Family, responses: bool, message: &str) -> Bytes {
    let text = match (family, responses) {
        (Family::Anthropic, _) => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "error": {"type": "api_error", "message": message}})
        ),
        (Family::OpenAi, true) => format!(
            "event: error\ndata: {}\n\n",
            json!({"type": "error", "code": "upstream_error", "message": message, "param": null})
        ),
        (Family::OpenAi, false) => format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": "api_error", "param": null, "code": "upstream_error"}})
        ),
    };
    Bytes::from(text)
}
