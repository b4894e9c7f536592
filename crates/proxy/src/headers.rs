//! Which headers cross the proxy: hop-by-hop headers (RFC 9110 section 7.6.1) never do, the
//! proxy's own `x-compact-*` headers stop here, and secret headers pass through to the upstream
//! but are never logged, stored or echoed.

use hyper::header::{HeaderMap, HeaderName, CONNECTION, CONTENT_ENCODING};

/// Headers that describe one connection, not the message: never forwarded.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Headers that carry credentials. Forwarded (the upstream needs them), never written anywhere.
pub const SECRET_HEADERS: [&str; 6] = [
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
    "proxy-authorization",
];

/// Prefix of the proxy's own request headers (`x-compact-session`), not forwarded.
const OWN_PREFIX: &str = "x-compact-";

/// True when `name` carries a credential.
pub fn is_secret(name: &str) -> bool {
    SECRET_HEADERS.iter().any(|s| name.eq_ignore_ascii_case(s))
}

/// Names listed in `Connection` (also hop-by-hop).
fn connection_listed(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

fn copy_except(src: &HeaderMap, skip: impl Fn(&HeaderName) -> bool) -> HeaderMap {
    let listed = connection_listed(src);
    let mut out = HeaderMap::with_capacity(src.len());
    for (name, value) in src {
        let n = name.as_str();
        if HOP_BY_HOP.contains(&n) || listed.iter().any(|l| l == n) || skip(name) {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}

/// The headers sent upstream for a client request. `Host` and `Content-Length` are set anew for
/// the upstream request; when `inspect_reply` is set the reply must be readable (its usage is
/// recorded), so `Accept-Encoding` is dropped and the upstream answers uncompressed.
pub fn upstream_request(src: &HeaderMap, inspect_reply: bool) -> HeaderMap {
    copy_except(src, |name| {
        let n = name.as_str();
        n == "host"
            || n == "content-length"
            || n.starts_with(OWN_PREFIX)
            || (inspect_reply && n == "accept-encoding")
    })
}

/// The headers sent upstream for a request the proxy compacted: as [`upstream_request`] with the
/// reply inspected, less `Content-Encoding` (the proxy decoded the client's body and sends the JSON
/// it prepared uncompressed; `Content-Length` is set anew for it).
pub fn upstream_compacted(src: &HeaderMap) -> HeaderMap {
    let mut headers = upstream_request(src, true);
    headers.remove(CONTENT_ENCODING);
    headers
}

/// The headers returned to the client for an upstream reply (`Content-Length` is set by the
/// server from the body the client gets).
pub fn client_response(src: &HeaderMap) -> HeaderMap {
    copy_except(src, |name| name.as_str() == "content-length")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn drops_hop_by_hop_and_own_headers() {
        let mut h = HeaderMap::new();
        h.insert("connection", "keep-alive, x-custom-hop".parse().unwrap());
        h.insert("x-custom-hop", "1".parse().unwrap());
        h.insert("keep-alive", "timeout=5".parse().unwrap());
        h.insert("host", "proxy".parse().unwrap());
        h.insert("authorization", "Bearer k".parse().unwrap());
        h.insert("x-compact-session", "s1".parse().unwrap());
        h.insert("accept-encoding", "gzip".parse().unwrap());
        h.insert("anthropic-beta", "a,b".parse().unwrap());
        let out = upstream_request(&h, true);
        let names: Vec<&str> = out.keys().map(HeaderName::as_str).collect();
        assert_eq!(names, ["authorization", "anthropic-beta"]);
        assert!(upstream_request(&h, false).contains_key("accept-encoding"));
        h.insert("content-encoding", "gzip".parse().unwrap());
        assert!(upstream_request(&h, false).contains_key("content-encoding"));
        let names: Vec<String> = upstream_compacted(&h)
            .keys()
            .map(|k| k.as_str().to_owned())
            .collect();
        assert_eq!(names, ["authorization", "anthropic-beta"]);
        assert!(is_secret("X-Api-Key") && !is_secret("anthropic-beta"));
    }
}
