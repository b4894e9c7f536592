//! The client side: the upstream request over the workspace's outbound client (`compact-net`:
//! proxies, trusted roots, HTTP/2 where offered, one pool), the upstream URL of a request, and the
//! wait for response headers bounded by the configured timeout.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, Request, Response};
use std::time::Duration;

/// Why an upstream call failed before a response arrived.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The upstream URL could not be built.
    #[error("invalid upstream URL: {0}")]
    Url(String),
    /// No response headers within the timeout.
    #[error("the upstream did not answer within {0:?}")]
    Timeout(Duration),
    /// Connecting (directly or through the proxy), TLS or sending failed, or the connection closed
    /// before an answer; the message names the host.
    #[error("the upstream could not be reached or closed the connection: {0}")]
    Connect(String),
}

impl UpstreamError {
    /// The metric label.
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamError::Url(_) => "url",
            UpstreamError::Timeout(_) => "timeout",
            UpstreamError::Connect(_) => "connect",
        }
    }
}

/// The TLS setup failed.
#[derive(Debug, thiserror::Error)]
#[error("TLS setup failed: {0}")]
pub struct TlsError(String);

/// The upstream client.
#[derive(Clone, Debug)]
pub struct UpstreamClient {
    client: compact_net::Client,
}

impl UpstreamClient {
    /// Direct connections trusting the system's roots (the Mozilla roots when it has none).
    pub fn new() -> Result<Self, TlsError> {
        compact_net::Client::direct()
            .map(UpstreamClient::over)
            .map_err(|e| TlsError(e.to_string()))
    }

    /// Requests through `client` (the host's, with its proxies and trusted roots).
    pub fn over(client: compact_net::Client) -> Self {
        UpstreamClient { client }
    }

    /// Sends one request and waits for the response headers at most `timeout`.
    pub async fn send(
        &self,
        method: Method,
        url: &str,
        headers: &HeaderMap,
        body: Bytes,
        timeout: Duration,
    ) -> Result<Response<Incoming>, UpstreamError> {
        let mut request = Request::builder()
            .method(method)
            .uri(url)
            .body(Full::new(body))
            .map_err(|e| UpstreamError::Url(e.to_string()))?;
        *request.headers_mut() = headers.clone();
        match self.client.send(request, timeout).await {
            Err(compact_net::NetError::Timeout { .. }) => Err(UpstreamError::Timeout(timeout)),
            Err(compact_net::NetError::Request(e)) => Err(UpstreamError::Url(e)),
            Err(e) => Err(UpstreamError::Connect(e.to_string())),
            Ok(response) => Ok(response),
        }
    }
}

/// Path prefixes that request paths start with and that a base URL copied from a client's
/// settings ends with (`https://api.openai.com/v1`, Azure's
/// `https://RESOURCE.openai.azure.com/openai/v1`), longest first: the base's copy is dropped.
const SHARED_PREFIXES: [&str; 3] = ["/openai/v1", "/openai", "/v1"];

/// `base` joined with the request's path and query, as the client sent them (`/v1/...`,
/// unversioned, Azure's `/openai/...`). A base that ends with the prefix the path starts with
/// does not double it.
pub fn upstream_url(base: &str, path_and_query: &str) -> String {
    let base = base.trim_end_matches('/');
    let starts_with = |prefix: &str| {
        path_and_query
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', '?']))
    };
    let base = SHARED_PREFIXES
        .iter()
        .find_map(|prefix| base.strip_suffix(prefix).filter(|_| starts_with(prefix)))
        .unwrap_or(base);
    format!("{base}{path_and_query}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn joins_without_doubling_v1() {
        assert_eq!(
            upstream_url("https://api.openai.com/v1/", "/v1/chat/completions?x=1"),
            "https://api.openai.com/v1/chat/completions?x=1"
        );
        assert_eq!(
            upstream_url("http://127.0.0.1:9", "/v1/messages"),
            "http://127.0.0.1:9/v1/messages"
        );
        assert_eq!(
            upstream_url("https://gw.example/openai", "/v1/responses"),
            "https://gw.example/openai/v1/responses"
        );
        // Unversioned paths go as they came.
        assert_eq!(
            upstream_url("https://api.example/v1", "/chat/completions"),
            "https://api.example/v1/chat/completions"
        );
        assert_eq!(
            upstream_url("http://127.0.0.1:9", "/responses"),
            "http://127.0.0.1:9/responses"
        );
    }

    #[test]
    fn joins_azure_paths_to_the_resource() {
        let chat = "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21";
        for base in [
            "https://res.openai.azure.com",
            "https://res.openai.azure.com/openai/",
        ] {
            assert_eq!(
                upstream_url(base, chat),
                format!("https://res.openai.azure.com{chat}"),
                "{base}"
            );
        }
        for base in [
            "https://res.openai.azure.com",
            "https://res.openai.azure.com/openai",
            "https://res.openai.azure.com/openai/v1/",
        ] {
            assert_eq!(
                upstream_url(base, "/openai/v1/responses"),
                "https://res.openai.azure.com/openai/v1/responses",
                "{base}"
            );
        }
        // An OpenAI-style path against a v1 base of Azure's.
        assert_eq!(
            upstream_url(
                "https://res.openai.azure.com/openai/v1",
                "/v1/chat/completions"
            ),
            "https://res.openai.azure.com/openai/v1/chat/completions"
        );
        assert_eq!(
            upstream_url("https://gw.example/v1x", "/v1/responses"),
            "https://gw.example/v1x/v1/responses"
        );
        assert_eq!(
            upstream_url("https://gw.example/v1", "/v1x/responses"),
            "https://gw.example/v1/v1x/responses"
        );
    }
}
