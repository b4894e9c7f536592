//! [`Client`]: the pooled outbound client (proxy rules, trusted roots, HTTP/2 over ALPN), built
//! once from [`NetSettings`] and a [`ProxyEnv`], then cloned by everything that sends.

use crate::connect::{ConnectError, ProxyConnector};
use crate::env::ProxyEnv;
use crate::error::{chain, NetError};
use crate::proxy::ProxyRules;
use crate::tls::{self, RootCounts};
use crate::Body;
use hyper::body::Incoming;
use hyper::http::{header, Request, Response, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy;
use hyper_util::rt::TokioExecutor;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The configuration's `network:` settings, as plain data (each replaces what the environment
/// says when set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetSettings {
    /// `network.proxy`: one proxy for `http` and `https` destinations (`http://[user:pass@]host:port`),
    /// or `off` for none; unset: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`.
    pub proxy: Option<String>,
    /// `network.no_proxy`: destinations reached directly (the [`NoProxy`](crate::NoProxy) syntax);
    /// unset: `NO_PROXY`.
    pub no_proxy: Option<String>,
    /// `network.ca_file`: a PEM bundle of roots trusted besides the system's (and besides
    /// `SSL_CERT_FILE`'s).
    pub ca_file: Option<PathBuf>,
}

/// The outbound HTTP client. Cheap to clone; clones share one connection pool.
#[derive(Clone)]
pub struct Client {
    inner: legacy::Client<HttpsConnector<ProxyConnector>, Body>,
    rules: Arc<ProxyRules>,
    roots: RootCounts,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("rules", &self.rules)
            .field("roots", &self.roots)
            .finish()
    }
}

impl Client {
    /// A client with `settings` over `env`: proxies, and the system's roots plus the bundles of
    /// `network.ca_file` and `SSL_CERT_FILE`. Fails on a bad proxy URL or an unusable bundle,
    /// naming the setting.
    pub fn new(settings: &NetSettings, env: &ProxyEnv) -> Result<Client, NetError> {
        let rules =
            ProxyRules::resolve(settings.proxy.as_deref(), settings.no_proxy.as_deref(), env)?;
        let mut bundles: Vec<(&Path, &str)> = Vec::new();
        if let Some(path) = &settings.ca_file {
            bundles.push((path.as_path(), "network.ca_file"));
        }
        if let Some(path) = &env.ssl_cert_file {
            bundles.push((Path::new(path), "SSL_CERT_FILE"));
        }
        let (roots, counts) = tls::roots(&bundles)?;
        Ok(Client::with_parts(
            rules,
            tls::client_config(roots)?,
            counts,
        ))
    }

    /// Direct connections trusting the system's roots (the Mozilla roots when it has none): what a
    /// library uses when its host passed no client.
    pub fn direct() -> Result<Client, NetError> {
        Client::new(&NetSettings::default(), &ProxyEnv::default())
    }

    fn with_parts(rules: ProxyRules, config: rustls::ClientConfig, roots: RootCounts) -> Client {
        let rules = Arc::new(rules);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_or_http()
            .enable_all_versions()
            .wrap_connector(ProxyConnector::new(Arc::clone(&rules)));
        let inner = legacy::Client::builder(TokioExecutor::new()).build(https);
        Client {
            inner,
            rules,
            roots,
        }
    }

    /// The proxy rules in force.
    pub fn rules(&self) -> &ProxyRules {
        &self.rules
    }

    /// How many roots are trusted, and from where.
    pub fn root_counts(&self) -> RootCounts {
        self.roots
    }

    /// Sends `request` (an absolute `http://` or `https://` URL) and waits at most `timeout` for
    /// the response headers; the body is the caller's to read (and to bound in time).
    pub async fn send(
        &self,
        mut request: Request<Body>,
        timeout: Duration,
    ) -> Result<Response<Incoming>, NetError> {
        let host = host_of(request.uri())?;
        if request.uri().scheme_str() == Some("http") {
            // Absolute form to the proxy: its credentials ride on each request.
            if let Some(auth) = self
                .rules
                .proxy_for(request.uri())
                .and_then(|p| p.authorization())
            {
                request
                    .headers_mut()
                    .insert(header::PROXY_AUTHORIZATION, auth.clone());
            }
        }
        match tokio::time::timeout(timeout, self.inner.request(request)).await {
            Err(_) => Err(NetError::Timeout {
                host,
                after: timeout,
            }),
            Ok(Err(e)) => Err(classify(&e, host)),
            Ok(Ok(response)) => Ok(response),
        }
    }
}

/// `host:port` of an absolute URL (the port its scheme implies when absent).
pub(crate) fn host_of(uri: &Uri) -> Result<String, NetError> {
    let host = uri
        .host()
        .ok_or_else(|| NetError::Request(format!("the URL {uri} has no host")))?;
    let port = match (uri.port_u16(), uri.scheme_str()) {
        (Some(p), _) => p,
        (None, Some("https")) => 443,
        (None, Some("http")) => 80,
        _ => {
            return Err(NetError::Request(format!(
                "the URL of {host} is not http:// or https://"
            )))
        }
    };
    Ok(format!("{host}:{port}"))
}

/// What failed: the proxy, TLS (with a hint when the certificate was not trusted), or the rest.
fn classify(e: &legacy::Error, host: String) -> NetError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if let Some(ConnectError::Proxy { proxy, message }) = s.downcast_ref::<ConnectError>() {
            return NetError::Proxy {
                proxy: proxy.clone(),
                host,
                message: message.clone(),
            };
        }
        if let Some(tls) = rustls_error(s) {
            let hint = match tls {
                rustls::Error::InvalidCertificate(_) => {
                    " (the server's certificate is not trusted: add its CA to network.ca_file or SSL_CERT_FILE)"
                }
                _ => "",
            };
            return NetError::Tls {
                host,
                message: format!("{tls}{hint}"),
            };
        }
        source = s.source();
    }
    NetError::Connect {
        host,
        message: chain(e),
    }
}

/// The rustls error in `e`, also inside (nested) I/O errors, whose `source` skips their payload.
fn rustls_error<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = e.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = e.downcast_ref::<std::io::Error>()?.get_ref()?;
    rustls_error(inner)
}
