//! `compactctl mcp --http ADDR`: the same server over MCP's streamable HTTP transport.
//!
//! rmcp's [`StreamableHttpService`] speaks the protocol (stateful sessions with
//! `Mcp-Session-Id`, SSE streams, `Host` and `Origin` checks against DNS rebinding, a bounded
//! request body); this module serves it on the workspace's one accept loop
//! ([`compact_net::server`]) on one path, [`MCP_PATH`], and adds what a local
//! server needs around it:
//! - it listens on a loopback address only, unless [`HttpOptions::allow_remote`] says otherwise:
//!   the server hands out the whole history of a session;
//! - an optional bearer token every request must carry (`Authorization: Bearer TOKEN`);
//! - request bodies of at most [`HttpOptions::max_body_bytes`] (`413` beyond);
//! - graceful shutdown: when the caller's shutdown future completes, the sessions end, no new
//!   connection is accepted, and the open ones get [`DRAIN_TIMEOUT`] to finish.

use super::server::CompactServer;
use super::source::Source;
use crate::error::AgentsError;
use bytes::Bytes;
use compact_net::server::ServeOptions;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{header, Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// The path the MCP endpoint is served on (every other path is `404`).
pub const MCP_PATH: &str = "/mcp";

/// Default largest request body: tool calls are a few hundred bytes; 1 MiB leaves room for any
/// honest client and none for a memory exhaustion.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// How long open connections get to finish after shutdown is asked for.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a client may take to send a request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

type HttpResponse = Response<BoxBody<Bytes, Infallible>>;
type Mcp = StreamableHttpService<CompactServer, LocalSessionManager>;

/// How the HTTP server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpOptions {
    /// The address to listen on (port 0: any free port, see [`HttpServer::local_addr`]).
    pub addr: SocketAddr,
    /// Listen on an address that is not loopback (the `Host` check is then off: remote clients
    /// name the server as they will). Off by default.
    pub allow_remote: bool,
    /// The bearer token every request must carry, if any.
    pub token: Option<String>,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
}

impl HttpOptions {
    /// Loopback-only options for `addr`, no token, the default body limit.
    pub fn new(addr: SocketAddr) -> HttpOptions {
        HttpOptions {
            addr,
            allow_remote: false,
            token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// Refuses a non-loopback address unless allowed, an empty token and a zero body limit.
    pub fn check(&self) -> Result<(), AgentsError> {
        if !self.addr.ip().is_loopback() && !self.allow_remote {
            return Err(AgentsError::NotLoopback { addr: self.addr });
        }
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(AgentsError::HttpOption(
                "the bearer token is empty".to_owned(),
            ));
        }
        if self.max_body_bytes == 0 {
            return Err(AgentsError::HttpOption(
                "the largest request body must be at least one byte".to_owned(),
            ));
        }
        Ok(())
    }

    fn config(&self) -> StreamableHttpServerConfig {
        let config =
            StreamableHttpServerConfig::default().with_max_request_body_bytes(self.max_body_bytes);
        if self.allow_remote {
            config.disable_allowed_hosts()
        } else {
            // rmcp's default `Host` allow-list is the loopback names; browsers' requests must come
            // from a loopback page too.
            config.with_allowed_origins([
                "http://localhost:*",
                "http://127.0.0.1:*",
                "http://[::1]:*",
            ])
        }
    }
}

/// A bound, not yet serving, HTTP MCP server.
pub struct HttpServer {
    listener: TcpListener,
    addr: SocketAddr,
    options: HttpOptions,
}

impl HttpServer {
    /// Checks `options` ([`HttpOptions::check`]) and binds. Must run inside a Tokio runtime.
    pub async fn bind(options: HttpOptions) -> Result<HttpServer, AgentsError> {
        options.check()?;
        let listener =
            TcpListener::bind(options.addr)
                .await
                .map_err(|source| AgentsError::Bind {
                    addr: options.addr,
                    source,
                })?;
        let addr = listener.local_addr().map_err(|source| AgentsError::Bind {
            addr: options.addr,
            source,
        })?;
        Ok(HttpServer {
            listener,
            addr,
            options,
        })
    }

    /// The address it listens on (the port chosen when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL of the MCP endpoint, as a client is given it.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_PATH}", self.addr)
    }

    /// Serves `server` (one clone per MCP session) until `shutdown` completes, then drains.
    pub async fn serve(
        self,
        server: CompactServer,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), AgentsError> {
        let config = self.options.config();
        let cancel = config.cancellation_token.clone();
        let mcp: Mcp = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let token: Option<Arc<str>> = self.options.token.as_deref().map(Arc::from);
        let service = hyper::service::service_fn(move |request| {
            let mcp = mcp.clone();
            let token = token.clone();
            async move { Ok::<_, Infallible>(route(&mcp, token.as_deref(), request).await) }
        });
        let options = ServeOptions {
            drain_timeout: DRAIN_TIMEOUT,
            header_read_timeout: Some(HEADER_READ_TIMEOUT),
        };
        // Ending every MCP session and its event streams lets their connections close.
        let ending = async {
            shutdown.await;
            cancel.cancel();
        };
        compact_net::server::serve(self.listener, service, &options, ending).await;
        Ok(())
    }
}

/// One request: the token, then the path, then rmcp.
async fn route(mcp: &Mcp, token: Option<&str>, request: Request<Incoming>) -> HttpResponse {
    if let Some(token) = token {
        if !authorized(&request, token) {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: a bearer token is required",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
    }
    let path = request.uri().path();
    if path != MCP_PATH && path != "/mcp/" {
        return plain(StatusCode::NOT_FOUND, "Not Found: the MCP endpoint is /mcp");
    }
    mcp.handle(request).await
}

/// Whether `request` carries `Authorization: Bearer <token>` (compared in time independent of
/// where the first difference is).
fn authorized(request: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
    else {
        return false;
    };
    compact_core::redact::same_secret(given.trim().as_bytes(), token.as_bytes())
}

fn plain(status: StatusCode, text: &'static str) -> HttpResponse {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// Serves `source` over streamable HTTP until `shutdown` completes; `recall` also finds the
/// outputs `compactctl run` kept in `runs`. `listening` is called with the endpoint's URL once
/// the socket is bound (before, nothing is served; a bind error is returned).
pub fn serve_http_with_runs(
    source: Source,
    runs: Option<Arc<dyn compact_session::Store>>,
    options: HttpOptions,
    listening: impl FnOnce(&str),
    shutdown: impl Future<Output = ()>,
) -> Result<(), AgentsError> {
    options.check()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| AgentsError::io("<tokio runtime>", e))?;
    runtime.block_on(async {
        let http = HttpServer::bind(options).await?;
        listening(&http.url());
        let mut server = CompactServer::new(source);
        if let Some(runs) = runs {
            server = server.with_runs(runs);
        }
        http.serve(server, shutdown).await
    })
}
