//! What the simulator received: one record per request, for tests to assert on.

use serde_json::Value;

/// The endpoint a request addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Api {
    /// `POST /v1/chat/completions` (also unversioned, and at Azure OpenAI's
    /// `/openai/v1/chat/completions` and `/openai/deployments/{deployment}/chat/completions`).
    ChatCompletions,
    /// `POST /v1/responses` (also unversioned, and at Azure OpenAI's `/openai/v1/responses` and
    /// `/openai/responses`).
    Responses,
    /// `POST /v1/responses/compact` (the standalone compact endpoint).
    ResponsesCompact,
    /// `POST /v1/messages`.
    Messages,
    /// `POST /v1/messages/count_tokens`.
    CountTokens,
    /// Anything else (answered 404).
    Unknown,
}

/// One received request and how it was answered.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// Sequence number (1-based).
    pub seq: u64,
    /// Endpoint.
    pub api: Api,
    /// Request path.
    pub path: String,
    /// Request query string (after `?`), when there was one.
    pub query: Option<String>,
    /// Request headers (lower-case names), in order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when it was not JSON or too large).
    pub body: Value,
    /// Body size in bytes.
    pub body_bytes: usize,
    /// The body exactly as received (empty when it was too large), for byte-level comparisons
    /// such as prompt-cache prefix stability.
    pub raw: bytes::Bytes,
    /// Input tokens counted, when the body could be counted.
    pub input_tokens: Option<u64>,
    /// `max_tokens` (or equivalent) requested.
    pub max_output: Option<u64>,
    /// The request asked for a stream.
    pub stream: bool,
    /// Status sent (0 when the connection was reset).
    pub status: u16,
    /// The fault applied, if any (its debug form).
    pub fault: Option<String>,
    /// The usage reported, for a request answered with a reply.
    pub usage: Option<crate::reply::Usage>,
}

impl RecordedRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
