//! The compaction proxy's settings ([`ProxySettings`], the `proxy:` section and the
//! `COMPACT_PROXY_*` variables), validated here and handed as plain data to `compact-proxy`, which
//! owns the defaults: an unset value means "the proxy's default".

use std::net::SocketAddr;

/// Where requests of one provider family go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSettings {
    /// `http://` or `https://` origin, optionally with a path prefix (`https://api.openai.com`).
    pub base_url: String,
    /// The context window of the models behind it, when it is not the configured model's.
    pub context_window: Option<usize>,
}

/// A model with its own upstream or window (`proxy.models:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyModelSettings {
    /// The `model` field of requests it applies to (exact match).
    pub name: String,
    /// Its upstream, when not the route's.
    pub base_url: Option<String>,
    /// Its context window, when not the registry's.
    pub context_window: Option<usize>,
    /// `proxy.models[].summarizer`: the compaction backend of its sessions, when not the
    /// configuration's `summarizer.kind` (e.g. `anthropic-compaction` on one model, the
    /// deterministic checkpoint on another).
    pub summarizer: Option<crate::SummarizerKind>,
}

/// The `proxy:` section with the environment applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxySettings {
    /// `proxy.listen` / `COMPACT_PROXY_LISTEN`.
    pub listen: Option<SocketAddr>,
    /// `proxy.max_body_bytes`: the largest request body accepted.
    pub max_body_bytes: Option<usize>,
    /// `proxy.upstream_timeout_secs`: how long to wait for an upstream's response headers.
    pub upstream_timeout_secs: Option<u64>,
    /// `proxy.stream_idle_timeout_secs`: how long a streamed response may stay silent.
    pub stream_idle_timeout_secs: Option<u64>,
    /// `proxy.openai` / `COMPACT_PROXY_OPENAI_BASE_URL`: Chat Completions and Responses.
    pub openai: Option<UpstreamSettings>,
    /// `proxy.anthropic` / `COMPACT_PROXY_ANTHROPIC_BASE_URL`: Messages.
    pub anthropic: Option<UpstreamSettings>,
    /// `proxy.models`.
    pub models: Vec<ProxyModelSettings>,
    /// `proxy.admin_token_env`: the variable holding the admin API's bearer token (the token
    /// itself is never in the file).
    pub admin_token_env: Option<String>,
    /// `proxy.recall` (`on`/`off`): whether the proxy offers the model its `compact_recall` tool
    /// when a request holds reference stubs.
    pub recall: Option<bool>,
    /// `proxy.recall_max_detours`: the most recall round trips per client request (0: the tool is
    /// offered but every recall-only reply ends the detours at once).
    pub recall_max_detours: Option<u32>,
    /// `proxy.max_in_flight` / `COMPACT_PROXY_MAX_IN_FLIGHT` / `--max-in-flight`: requests the
    /// proxy works on at once (`off`: no bound; 0 is the default, as unset).
    pub max_in_flight: Option<InFlightLimit>,
    /// `proxy.max_queue` / `COMPACT_PROXY_MAX_QUEUE` / `--max-queue`: requests that may wait for a
    /// slot before the next is shed (0: none waits).
    pub max_queue: Option<usize>,
    /// `proxy.queue_timeout_ms` / `COMPACT_PROXY_QUEUE_TIMEOUT_MS` / `--queue-timeout-ms`: the
    /// longest wait for a slot (at least 1).
    pub queue_timeout_ms: Option<u64>,
}

/// `proxy.max_in_flight`: a bound on the requests the proxy works on at once, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InFlightLimit {
    /// `off`: every request is admitted; nothing is shed.
    Off,
    /// At most this many (at least 1).
    Max(usize),
}

impl InFlightLimit {
    /// Parses a number or `off`; `None` for 0 (the default, as if unset).
    pub(crate) fn parse(text: &str) -> Result<Option<InFlightLimit>, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("off") {
            return Ok(Some(InFlightLimit::Off));
        }
        match text.parse::<usize>() {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(InFlightLimit::Max(n))),
            Err(_) => Err("expected a number of requests, or off (no bound)".to_owned()),
        }
    }
}

/// Checks that `url` is an `http://` or `https://` URL with a host.
pub(crate) fn check_base_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| "expected an http:// or https:// URL".to_owned())?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("the URL has no host".to_owned());
    }
    if url.contains('?') || url.contains('#') {
        return Err("a base URL takes no query or fragment".to_owned());
    }
    Ok(())
}
