//! [`Route`]: which endpoint a request addresses, and which provider family serves it.

use compact_core::model::Format;
use hyper::header::HeaderMap;
use hyper::Method;

/// The endpoints the proxy knows. Every other path is forwarded untouched.
///
/// Each is matched with or without its `/v1` prefix (LiteLLM and most OpenAI-compatible servers
/// accept both), and the OpenAI ones also at Azure OpenAI's paths; the upstream gets the path the
/// client used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// `POST /v1/chat/completions` (OpenAI Chat Completions); on Azure OpenAI
    /// `/openai/v1/chat/completions` and `/openai/deployments/{deployment}/chat/completions`.
    ChatCompletions,
    /// `POST /v1/responses` (OpenAI Responses); on Azure OpenAI `/openai/v1/responses` and
    /// `/openai/responses` (the preview API, with `?api-version=`).
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

/// Where Azure OpenAI's paths start.
const AZURE_PREFIX: &str = "/openai";

/// `/deployments/{deployment}{endpoint}`, split into the deployment and the endpoint.
fn deployment_endpoint(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/deployments/")?;
    let slash = rest.find('/')?;
    let (deployment, endpoint) = rest.split_at(slash);
    (!deployment.is_empty()).then_some((deployment, endpoint))
}

impl Route {
    /// The route of a request.
    pub fn of(method: &Method, path: &str) -> Route {
        if method != Method::POST {
            return Route::Other;
        }
        let path = path.trim_end_matches('/');
        if let Some(azure) = path.strip_prefix(AZURE_PREFIX) {
            return Route::of_azure(azure);
        }
        match path.strip_prefix("/v1").unwrap_or(path) {
            "/chat/completions" => Route::ChatCompletions,
            "/responses" => Route::Responses,
            "/messages" => Route::Messages,
            "/messages/count_tokens" => Route::CountTokens,
            _ => Route::Other,
        }
    }

    /// The route of an Azure OpenAI path, after `/openai`: the v1 API, the preview Responses API,
    /// and a deployment's Chat Completions (its other endpoints are forwarded untouched).
    fn of_azure(path: &str) -> Route {
        match path {
            "/v1/chat/completions" => Route::ChatCompletions,
            "/v1/responses" | "/responses" => Route::Responses,
            _ => match deployment_endpoint(path) {
                Some((_, "/chat/completions")) => Route::ChatCompletions,
                _ => Route::Other,
            },
        }
    }

    /// The Azure OpenAI deployment a request path names
    /// (`/openai/deployments/{deployment}/...`): it stands for the model when the body names none.
    pub fn deployment(path: &str) -> Option<&str> {
        path.strip_prefix(AZURE_PREFIX)
            .and_then(deployment_endpoint)
            .map(|(deployment, _)| deployment)
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
                    || path.starts_with("/messages/")
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
        assert_eq!(
            Route::of(&Method::POST, "/v1chat/completions"),
            Route::Other
        );
        let mut headers = HeaderMap::new();
        assert_eq!(Route::Other.family("/v1/models", &headers), Family::OpenAi);
        headers.insert("anthropic-version", "2023-06-01".parse().unwrap());
        assert_eq!(
            Route::Other.family("/v1/models", &headers),
            Family::Anthropic
        );
    }

    #[test]
    fn unversioned_paths_are_the_same_routes() {
        for (path, route) in [
            ("/chat/completions", Route::ChatCompletions),
            ("/responses/", Route::Responses),
            ("/messages", Route::Messages),
            ("/messages/count_tokens", Route::CountTokens),
            ("/embeddings", Route::Other),
        ] {
            assert_eq!(Route::of(&Method::POST, path), route, "{path}");
        }
        let headers = HeaderMap::new();
        assert_eq!(
            Route::Other.family("/messages/batches", &headers),
            Family::Anthropic
        );
    }

    #[test]
    fn azure_paths_and_their_deployment() {
        for (path, route) in [
            ("/openai/v1/chat/completions", Route::ChatCompletions),
            ("/openai/v1/responses", Route::Responses),
            ("/openai/responses", Route::Responses),
            (
                "/openai/deployments/gpt-4o-prod/chat/completions",
                Route::ChatCompletions,
            ),
            ("/openai/deployments/gpt-4o-prod/embeddings", Route::Other),
            ("/openai/deployments//chat/completions", Route::Other),
            ("/openai/chat/completions", Route::Other),
            ("/openai/v1/messages", Route::Other),
            ("/openai/v1/responses/compact", Route::Other),
        ] {
            assert_eq!(Route::of(&Method::POST, path), route, "{path}");
        }
        assert_eq!(
            Route::deployment("/openai/deployments/gpt-4o-prod/chat/completions"),
            Some("gpt-4o-prod")
        );
        assert_eq!(Route::deployment("/openai/v1/chat/completions"), None);
        assert_eq!(Route::deployment("/v1/chat/completions"), None);
        let headers = HeaderMap::new();
        assert_eq!(
            Route::of(&Method::POST, "/openai/v1/responses")
                .family("/openai/v1/responses", &headers),
            Family::OpenAi
        );
    }
}
