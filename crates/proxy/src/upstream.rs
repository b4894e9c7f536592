//! The client side: one pooled HTTP/1.1 client (plain HTTP and TLS through rustls), the upstream
//! URL of a request, and the wait for response headers bounded by the configured timeout.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::HeaderMap;
use hyper::{Method, Request, Response};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
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
    /// Connecting or sending failed, or the connection closed before an answer.
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
#[derive(Clone)]
pub struct UpstreamClient {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl std::fmt::Debug for UpstreamClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UpstreamClient")
    }
}

impl UpstreamClient {
    /// A client trusting the web PKI roots.
    pub fn new() -> Result<Self, TlsError> {
        // An explicit crypto provider: the process default would panic if two were enabled.
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| TlsError(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(UpstreamClient {
            client: Client::builder(TokioExecutor::new()).build(https),
        })
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
        match tokio::time::timeout(timeout, self.client.request(request)).await {
            Err(_) => Err(UpstreamError::Timeout(timeout)),
            Ok(Err(e)) => Err(UpstreamError::Connect(describe(&e))),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// The error and its causes, one line (no URL credentials: base URLs carry none).
fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
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
