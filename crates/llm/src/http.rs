//! The HTTP transport: one JSON POST with a timeout over the workspace's outbound client
//! (`compact-net`: proxies, trusted roots, HTTP/2 where offered), with retries, response size
//! bounds, and overflow classification of error responses.

use crate::error::{excerpt, LlmError};
use crate::overflow::classify;
use crate::retry::{parse_retry_after, RetryPolicy};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::HeaderValue;
use hyper::Request;
use std::fmt;
use std::time::Duration;

/// Largest response body read (a summary is small; an SSE stream of one is a few hundred kB at most).
pub const MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A secret header value that never appears in `Debug` output or errors.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: String) -> Self {
        Secret(value)
    }
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// A successful (2xx) response.
#[derive(Debug, Clone)]
pub struct HttpReply {
    /// Status code.
    pub status: u16,
    /// Body text.
    pub body: String,
}

/// One header to send: a plain name and either a plain or a secret value.
#[derive(Debug, Clone)]
pub enum HeaderSpec {
    /// A non-secret header.
    Plain(&'static str, String),
    /// A header carrying a credential (marked sensitive, never logged).
    Secret(&'static str, Secret),
}

/// A pooled HTTP(S) client.
#[derive(Clone)]
pub struct HttpClient {
    client: compact_net::Client,
    timeout: Duration,
    retry: RetryPolicy,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient")
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .finish()
    }
}

/// What a caller learns about each retry (for warnings).
#[derive(Debug, Clone, Default)]
pub struct RetryLog {
    /// One line per retried failure.
    pub retries: Vec<String>,
}

impl HttpClient {
    /// A client with this per-attempt timeout and retry policy, connecting directly and trusting
    /// the system's roots (hosts pass their configured client to [`HttpClient::with_client`]).
    pub fn new(timeout: Duration, retry: RetryPolicy) -> Result<Self, LlmError> {
        let client = compact_net::Client::direct().map_err(|e| LlmError::Config(e.to_string()))?;
        Ok(HttpClient::with_client(client, timeout, retry))
    }

    /// The same over `client` (the host's, with its proxies and trusted roots).
    pub fn with_client(client: compact_net::Client, timeout: Duration, retry: RetryPolicy) -> Self {
        HttpClient {
            client,
            timeout,
            retry,
        }
    }

    /// POSTs `body` as JSON, retrying retryable failures. Error statuses that classify as a context
    /// overflow become [`LlmError::Overflow`] (never retried).
    pub async fn post_json(
        &self,
        url: &str,
        headers: &[HeaderSpec],
        body: &str,
        log: &mut RetryLog,
    ) -> Result<HttpReply, LlmError> {
        let mut attempt = 0u32;
        loop {
            let (result, retry_after) = self.attempt(url, headers, body).await;
            match result {
                Ok(reply) => return Ok(reply),
                Err(e) if e.is_retryable() && attempt < self.retry.max_retries => {
                    let wait = self.retry.delay(attempt, retry_after);
                    log.retries.push(format!(
                        "attempt {} failed ({e}); retrying in {} ms",
                        attempt + 1,
                        wait.as_millis()
                    ));
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn attempt(
        &self,
        url: &str,
        headers: &[HeaderSpec],
        body: &str,
    ) -> (Result<HttpReply, LlmError>, Option<Duration>) {
        let mut builder = Request::post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for h in headers {
            match h {
                HeaderSpec::Plain(name, value) => builder = builder.header(*name, value.as_str()),
                HeaderSpec::Secret(name, secret) => {
                    let Ok(mut value) = HeaderValue::from_str(secret.expose()) else {
                        return (
                            Err(LlmError::Config(format!(
                                "the {name} credential is not a valid header value"
                            ))),
                            None,
                        );
                    };
                    value.set_sensitive(true);
                    builder = builder.header(*name, value);
                }
            }
        }
        let request = match builder.body(Full::new(Bytes::from(body.to_owned()))) {
            Ok(r) => r,
            Err(e) => {
                return (
                    Err(LlmError::Config(format!("bad request for {url}: {e}"))),
                    None,
                )
            }
        };
        let exchange = async {
            let response = self
                .client
                .send(request, self.timeout)
                .await
                .map_err(|e| match e {
                    compact_net::NetError::Timeout { .. } => LlmError::Timeout(self.timeout),
                    other => LlmError::Connection(other.to_string()),
                })?;
            let status = response.status().as_u16();
            let header = |n: &str| {
                response
                    .headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            let retry_after = parse_retry_after(
                header("retry-after").as_deref(),
                header("retry-after-ms").as_deref(),
            );
            let bytes = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| LlmError::Connection(format!("reading the response body: {e}")))?
                .to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            Ok::<_, LlmError>((status, retry_after, text))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Err(_) => (Err(LlmError::Timeout(self.timeout)), None),
            Ok(Err(e)) => (Err(e), None),
            Ok(Ok((status, retry_after, text))) => {
                if (200..300).contains(&status) {
                    return (Ok(HttpReply { status, body: text }), None);
                }
                if let Some(overflow) = classify(status, &text) {
                    return (Err(LlmError::Overflow(overflow)), None);
                }
                (
                    Err(LlmError::Status {
                        status,
                        body: excerpt(&text),
                    }),
                    retry_after,
                )
            }
        }
    }
}
