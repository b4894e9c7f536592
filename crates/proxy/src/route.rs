//! [`Route`]: which endpoint a request addresses, and which provider family serves it.

use compact_core::model::Format;
use hyper::header::HeaderMap;
use hyper::Method;

/// The endpoints the proxy knows. Every other path is forwarded untouched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `POST /v1/chat/completions` (OpenAI Chat Completions).
    ChatCompletions,
    /// `POST /v1/responses` (OpenAI Responses).
    Responses,
    /// `POST /v1/messages` (Anthropic Messages).
    Messages,
    /// `POST /v1/messages/count_tokens`: forwarded untouched (the upstream counts what it is
    /// given; the compacted size shows in the usage of every reply).
    CountTokens,
    /// Anything else: forwarded untouched.
    Other,
}

/// Which upstream serves a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// OpenAI-compatible (Chat Completions, Responses, everything else by default).
    OpenAi,
    /// Anthropic (Messages, and any request carrying Anthropic's headers).
    Anthropic,
}

impl Route {
    /// The route of a request.
    pub fn of(method: &Method, path: &str) -> Route {
        if method != Method::POST {
            return Route::Other;
        }
        match path.trim_end_matches('/') {
            "/v1/chat/completions" => Route::ChatCompletions,
            "/v1/responses" => Route::Responses,
            "/v1/messages" => Route::Messages,
            "/v1/messages/count_tokens" => Route::CountTokens,
            _ => Route::Other,
        }
    }

    /// The wire format the proxy decodes and compacts, for the compacting routes.
    pub fn format(self) -> Option<Format> {
        match self {
            Route::ChatCompletions => Some(Format::OpenAiChat),
            Route::Responses => Some(Format::OpenAiResponses),
            Route::Messages => Some(Format::Anthropic),
            Route::CountTokens | Route::Other => None,
        }
    }

    /// The label used in metrics and logs.
    pub fn label(self) -> &'static str {
        match self {
            Route::ChatCompletions => "chat_completions",
            Route::Responses => "responses",
            Route::Messages => "messages",
            Route::CountTokens => "count_tokens",
            Route::Other => "other",
        }
    }

    /// The upstream family: Anthropic for its endpoints and for any request that carries
    /// Anthropic's headers (`anthropic-version`, `x-api-key`), OpenAI otherwise.
    pub fn family(self, path: &str, headers: &HeaderMap) -> Family {
        match self {
            Route::Messages | Route::CountTokens => Family::Anthropic,
            Route::ChatCompletions | Route::Responses => Family::OpenAi,
            Route::Other => {
                if path.starts_with("/v1/messages")
                    || headers.contains_key("anthropic-version")
                    || headers.contains_key("x-api-key")
                {
                    Family::Anthropic
                } else {
                    Family::OpenAi
                }
            }
        }
    }

    /// True when errors are written in Anthropic's shape.
    pub fn anthropic_errors(self, family: Family) -> bool {
        family == Family::Anthropic
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn routes_by_method_and_path() {
        assert_eq!(
            Route::of(&Method::POST, "/v1/chat/completions"),
            Route::ChatCompletions
        );
        assert_eq!(Route::of(&Method::POST, "/v1/responses/"), Route::Responses);
        assert_eq!(Route::of(&Method::POST, "/v1/messages"), Route::Messages);
        assert_eq!(
            Route::of(&Method::POST, "/v1/messages/count_tokens"),
            Route::CountTokens
        );
        assert_eq!(Route::of(&Method::GET, "/v1/messages"), Route::Other);
        assert_eq!(Route::of(&Method::POST, "/v1/embeddings"), Route::Other);
        let mut headers = HeaderMap::new();
        assert_eq!(Route::Other.family("/v1/models", &headers), Family::OpenAi);
        headers.insert("anthropic-version", "2023-06-01".parse().unwrap());
        assert_eq!(
            Route::Other.family("/v1/models", &headers),
            Family::Anthropic
        );
    }
}
