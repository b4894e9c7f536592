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

/// `base` joined with the request's path and query. Request paths start with `/v1`, so a base
/// that ends in `/v1` (as OpenAI base URLs usually do) does not double it.
pub fn upstream_url(base: &str, path_and_query: &str) -> String {
    let base = base.trim_end_matches('/');
    let base = match base.strip_suffix("/v1") {
        Some(stripped) if path_and_query.starts_with("/v1/") || path_and_query == "/v1" => stripped,
        _ => base,
    };
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
    }
}
