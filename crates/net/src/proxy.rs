//! [`ProxyRules`]: which proxy, if any, a destination goes through; [`ProxyServer`]: one proxy's
//! address and credentials.

use crate::env::ProxyEnv;
use crate::error::NetError;
use crate::no_proxy::NoProxy;
use base64::Engine as _;
use hyper::http::{HeaderValue, Uri};
use percent_encoding::percent_decode_str;

/// The value of `network.proxy` that turns proxies off whatever the environment says.
pub const PROXY_OFF: &str = "off";

/// An HTTP proxy: where it listens and the `Proxy-Authorization` its URL's credentials make.
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyServer {
    host: String,
    port: u16,
    authorization: Option<HeaderValue>,
}

impl std::fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the credentials.
        f.debug_struct("ProxyServer")
            .field("address", &self.address())
            .field("authenticated", &self.authorization.is_some())
            .finish()
    }
}

impl ProxyServer {
    /// Parses `http://[user[:password]@]host[:port][/]` (the scheme may be left out; the port is
    /// 80 when it is). `what` names the setting in errors, which never repeat the URL (it may hold
    /// a password).
    pub fn parse(url: &str, what: &str) -> Result<ProxyServer, NetError> {
        let bad = |why: &str| NetError::Config(format!("{what}: {why}"));
        let url = url.trim();
        let rest = match url.split_once("://") {
            None => url,
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) => {
                return Err(bad(&format!(
                    "a {scheme}:// proxy is not supported; give the proxy's http:// URL (https destinations are tunnelled through it with CONNECT)"
                )))
            }
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let (userinfo, host_port) = match authority.rsplit_once('@') {
            Some((userinfo, host_port)) => (Some(userinfo), host_port),
            None => (None, authority),
        };
        let uri: Uri = format!("http://{host_port}/")
            .parse()
            .map_err(|_| bad("not a proxy URL such as http://proxy.example:3128"))?;
        let host = uri
            .host()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("the proxy URL has no host"))?;
        let authorization = match userinfo {
            None => None,
            Some(userinfo) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
                let token = base64::engine::general_purpose::STANDARD.encode(format!(
                    "{}:{}",
                    decode(user),
                    decode(password)
                ));
                let mut value = HeaderValue::from_str(&format!("Basic {token}"))
                    .map_err(|_| bad("the proxy's credentials are not a valid header value"))?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(ProxyServer {
            host: host.to_owned(),
            port: uri.port_u16().unwrap_or(80),
            authorization,
        })
    }

    /// `host:port` (what logs and errors name; never the credentials).
    pub fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// The proxy's own URL, without credentials (what the connector dials).
    pub(crate) fn uri(&self) -> Result<Uri, NetError> {
        format!("http://{}/", self.address())
            .parse()
            .map_err(|_| NetError::Config(format!("bad proxy address {}", self.address())))
    }

    /// `Proxy-Authorization` to send, when the URL had credentials (marked sensitive).
    pub fn authorization(&self) -> Option<&HeaderValue> {
        self.authorization.as_ref()
    }
}

/// Which proxy each destination goes through: one for `http://`, one for `https://`, and the
/// destinations reached directly.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyRules {
    http: Option<ProxyServer>,
    https: Option<ProxyServer>,
    no_proxy: NoProxy,
}

impl ProxyRules {
    /// No proxy at all.
    pub fn direct() -> ProxyRules {
        ProxyRules::default()
    }

    /// The rules of the configuration's `proxy` (one proxy for both schemes, or [`PROXY_OFF`])
    /// and `no_proxy`, each replacing what `env` says when set.
    pub fn resolve(
        proxy: Option<&str>,
        no_proxy: Option<&str>,
        env: &ProxyEnv,
    ) -> Result<ProxyRules, NetError> {
        let no_proxy = NoProxy::parse(no_proxy.or(env.no_proxy.as_deref()).unwrap_or(""));
        if let Some(proxy) = proxy.map(str::trim) {
            if proxy.eq_ignore_ascii_case(PROXY_OFF) {
                return Ok(ProxyRules::direct());
            }
            let server = ProxyServer::parse(proxy, "network.proxy")?;
            return Ok(ProxyRules {
                http: Some(server.clone()),
                https: Some(server),
                no_proxy,
            });
        }
        let all = env
            .all_proxy
            .as_deref()
            .map(|u| ProxyServer::parse(u, "ALL_PROXY"))
            .transpose()?;
        let http = match env.http_proxy.as_deref() {
            Some(u) => Some(ProxyServer::parse(u, "HTTP_PROXY")?),
            None => all.clone(),
        };
        let https = match env.https_proxy.as_deref() {
            Some(u) => Some(ProxyServer::parse(u, "HTTPS_PROXY")?),
            None => all,
        };
        Ok(ProxyRules {
            http,
            https,
            no_proxy,
        })
    }

    /// The proxy `uri` goes through, if any.
    pub fn proxy_for(&self, uri: &Uri) -> Option<&ProxyServer> {
        let https = uri.scheme_str() == Some("https");
        let server = if https {
            self.https.as_ref()
        } else {
            self.http.as_ref()
        }?;
        let host = uri.host()?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        (!self.no_proxy.matches(host, port)).then_some(server)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn proxy_urls_parse_with_and_without_scheme_and_credentials() {
        let p =
            ProxyServer::parse("http://alice:s%40cret@proxy.corp:3128/", "HTTPS_PROXY").unwrap();
        assert_eq!(p.address(), "proxy.corp:3128");
        // base64("alice:s@cret")
        assert_eq!(
            p.authorization().unwrap().to_str().unwrap(),
            "Basic YWxpY2U6c0BjcmV0"
        );
        assert!(p.authorization().unwrap().is_sensitive());
        assert!(!format!("{p:?}").contains("cret"));
        let bare = ProxyServer::parse("proxy.corp", "HTTP_PROXY").unwrap();
        assert_eq!(bare.address(), "proxy.corp:80");
        assert!(bare.authorization().is_none());
        let v6 = ProxyServer::parse("http://[::1]:8080", "HTTP_PROXY").unwrap();
        assert_eq!(v6.address(), "[::1]:8080");
    }

    #[test]
    fn unsupported_or_broken_proxy_urls_are_errors_without_the_password() {
        for url in [
            "socks5://u:hunter2@p:1080",
            "https://u:hunter2@p:443",
            "http://u:hunter2@",
            "http://u:hunter2@bad host:1",
        ] {
            let e = ProxyServer::parse(url, "HTTPS_PROXY")
                .unwrap_err()
                .to_string();
            assert!(e.contains("HTTPS_PROXY"), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn environment_by_scheme_with_all_proxy_as_fallback_and_no_proxy() {
        let env = ProxyEnv::from_vars([
            ("HTTPS_PROXY", "http://s:1"),
            ("ALL_PROXY", "http://a:1"),
            ("NO_PROXY", "internal.test,127.0.0.1"),
        ]);
        let rules = ProxyRules::resolve(None, None, &env).unwrap();
        let via = |u: &str| rules.proxy_for(&uri(u)).map(ProxyServer::address);
        assert_eq!(via("https://api.openai.com/v1").as_deref(), Some("s:1"));
        assert_eq!(via("http://api.openai.com/v1").as_deref(), Some("a:1"));
        assert_eq!(via("https://x.internal.test/"), None);
        assert_eq!(via("http://127.0.0.1:9000/"), None);
    }

    #[test]
    fn configuration_replaces_the_environment() {
        let env = ProxyEnv::from_vars([("HTTPS_PROXY", "http://s:1"), ("NO_PROXY", "*")]);
        let rules = ProxyRules::resolve(Some("http://c:2"), Some("skip.test"), &env).unwrap();
        let via = |u: &str| rules.proxy_for(&uri(u)).map(ProxyServer::address);
        assert_eq!(via("https://api.example/").as_deref(), Some("c:2"));
        assert_eq!(via("http://api.example/").as_deref(), Some("c:2"));
        assert_eq!(via("https://skip.test/"), None);
        let off = ProxyRules::resolve(Some("off"), None, &env).unwrap();
        assert_eq!(off, ProxyRules::direct());
    }
}
