//! [`serve`]: the one inbound HTTP/1.1 loop (keep-alive on) the proxy, the web view and the MCP
//! server run their services on. The caller binds (and so chooses the address); the loop accepts,
//! serves each connection on a task of its own, and on shutdown stops accepting, lets the requests
//! in flight finish for at most [`ServeOptions::drain_timeout`], and returns.
//!
//! An accept that fails is the failing connection's problem or a passing shortage (out of file
//! descriptors): it is logged and, for a shortage, retried after [`ACCEPT_RETRY_PAUSE`], never
//! the end of the server.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use compact_net::server::{serve, ServeOptions};
//! use std::convert::Infallible;
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let service = hyper::service::service_fn(|_request| async {
//!     Ok::<_, Infallible>(hyper::Response::new(compact_net::Body::from("hello")))
//! });
//! let (stop, stop_asked) = tokio::sync::oneshot::channel::<()>();
//! # drop(stop);
//! let stopped = serve(listener, service, &ServeOptions::default(), async {
//!     let _ = stop_asked.await;
//! })
//! .await;
//! println!("all requests finished: {}", stopped.drained);
//! # Ok(()) }
//! ```

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use std::error::Error as StdError;
use std::future::Future;
use std::io::ErrorKind;
use std::time::Duration;
use tokio::net::TcpListener;
use tracing::Instrument;

/// How long the loop waits before accepting again after an accept that failed for want of a
/// resource (file descriptors, memory): long enough that a shortage does not spin a core, short
/// enough that a client hardly notices once connections close and free descriptors.
pub const ACCEPT_RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The default drain: how long requests in flight (a streamed answer included) get to finish once
/// shutdown is asked for, before the loop returns without them.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// What differs between the servers that run on [`serve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOptions {
    /// How long open connections get to finish after shutdown is asked for.
    pub drain_timeout: Duration,
    /// How long a client may take to send a request's headers (`None`: as long as it likes); a
    /// slow client past it has its connection closed.
    pub header_read_timeout: Option<Duration>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            header_read_timeout: None,
        }
    }
}

/// How serving ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stopped {
    /// Every open connection finished within the drain timeout.
    pub drained: bool,
    /// Accepts that failed while serving (each was logged).
    pub accept_errors: u64,
}

/// Serves `service` (one clone per connection) on `listener` until `shutdown` completes, then stops
/// accepting (the listener is closed, so new connections are refused) and waits at most
/// `options.drain_timeout` for the open ones.
///
/// Connections' tasks run in the span `serve` is called in, so their events keep its fields.
pub async fn serve<S, B>(
    listener: TcpListener,
    service: S,
    options: &ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Stopped
where
    S: Service<Request<Incoming>, Response = Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn StdError + Send + Sync>>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn StdError + Send + Sync>>,
{
    let graceful = GracefulShutdown::new();
    let mut accept_errors = 0;
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        match accepted {
            Ok((stream, _)) => {
                // Small answers (health checks, JSON) leave at once rather than after Nagle's wait.
                let _ = stream.set_nodelay(true);
                let mut http = hyper::server::conn::http1::Builder::new();
                if let Some(timeout) = options.header_read_timeout {
                    http.timer(TokioTimer::new()).header_read_timeout(timeout);
                }
                let connection = http.serve_connection(TokioIo::new(stream), service.clone());
                let watched = graceful.watch(connection);
                tokio::spawn(
                    async move {
                        let _ = watched.await;
                    }
                    .in_current_span(),
                );
            }
            Err(e) => {
                accept_errors += 1;
                if !pause_after(&e) {
                    tracing::debug!(error = %e, "a connection failed before it was accepted");
                    continue;
                }
                tracing::warn!(error = %e, pause_ms = ACCEPT_RETRY_PAUSE.as_millis() as u64,
                    "cannot accept connections for now; retrying");
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_RETRY_PAUSE) => {}
                    () = &mut shutdown => break,
                }
            }
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(options.drain_timeout, graceful.shutdown())
        .await
        .is_ok();
    Stopped {
        drained,
        accept_errors,
    }
}

/// Whether an accept error is a shortage worth waiting out, as opposed to one connection that
/// went away before it was accepted (which the next accept does not repeat).
fn pause_after(e: &std::io::Error) -> bool {
    !matches!(
        e.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted
    )
}
