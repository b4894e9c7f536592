//! [`BlockingClient`]: the same [`Client`] for synchronous callers (the S3 archive, the OTLP
//! exporter's thread), driven by a current-thread runtime on a thread of its own, with whole
//! answers read into memory.

use crate::client::{host_of, Client};
use crate::error::NetError;
use crate::Body;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Limited};
use hyper::http::{HeaderMap, Request, StatusCode};
use std::sync::Arc;
use std::time::Duration;

/// A whole answer.
#[derive(Debug, Clone)]
pub struct Collected {
    /// Its status.
    pub status: StatusCode,
    /// Its headers.
    pub headers: HeaderMap,
    /// Its body.
    pub body: Bytes,
}

/// The runtime thread; it ends when the last [`BlockingClient`] clone is dropped.
struct RuntimeThread {
    handle: tokio::runtime::Handle,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for RuntimeThread {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A [`Client`] usable from synchronous code. Cheap to clone; clones share the runtime thread and
/// the connection pool.
#[derive(Clone)]
pub struct BlockingClient {
    client: Client,
    runtime: Arc<RuntimeThread>,
}

impl std::fmt::Debug for BlockingClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingClient")
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

impl BlockingClient {
    /// Starts the runtime thread `compact-net` that drives `client`'s connections.
    pub fn new(client: Client) -> Result<BlockingClient, NetError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetError::Config(format!("cannot start the HTTP runtime: {e}")))?;
        let handle = runtime.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("compact-net".to_owned())
            .spawn(move || {
                runtime.block_on(async {
                    let _ = stopped.await;
                });
            })
            .map_err(|e| NetError::Config(format!("cannot start the HTTP thread: {e}")))?;
        Ok(BlockingClient {
            client,
            runtime: Arc::new(RuntimeThread {
                handle,
                stop: Some(stop),
            }),
        })
    }

    /// The async client underneath.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Sends `request` and reads its whole answer, at most `max_body` bytes of body, all within
    /// `timeout`. Blocks the calling thread (fine inside a runtime's blocking section).
    pub fn send(
        &self,
        request: Request<Body>,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Collected, NetError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.spawn(request, timeout, max_body, move |result| {
            let _ = tx.send(result);
        });
        rx.recv().unwrap_or_else(|_| Err(stopped()))
    }

    /// Like [`BlockingClient::send`], awaited: the work runs on the client's own thread, so any
    /// executor may await it (the OpenTelemetry SDK polls its exports with a plain one).
    pub async fn send_async(
        &self,
        request: Request<Body>,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Collected, NetError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.spawn(request, timeout, max_body, move |result| {
            let _ = tx.send(result);
        });
        rx.await.unwrap_or_else(|_| Err(stopped()))
    }

    fn spawn(
        &self,
        request: Request<Body>,
        timeout: Duration,
        max_body: usize,
        done: impl FnOnce(Result<Collected, NetError>) + Send + 'static,
    ) {
        let client = self.client.clone();
        self.runtime.handle.spawn(async move {
            let host = match host_of(request.uri()) {
                Ok(host) => host,
                Err(e) => return done(Err(e)),
            };
            let exchange = async {
                let response = client.send(request, timeout).await?;
                let (parts, body) = response.into_parts();
                let body = Limited::new(body, max_body)
                    .collect()
                    .await
                    .map_err(|e| NetError::Connect {
                        host: host.clone(),
                        message: format!("reading the answer (at most {max_body} bytes): {e}"),
                    })?
                    .to_bytes();
                Ok(Collected {
                    status: parts.status,
                    headers: parts.headers,
                    body,
                })
            };
            let result = match tokio::time::timeout(timeout, exchange).await {
                Ok(result) => result,
                Err(_) => Err(NetError::Timeout {
                    host: host.clone(),
                    after: timeout,
                }),
            };
            done(result);
        });
    }
}

fn stopped() -> NetError {
    NetError::Config("the HTTP runtime thread has stopped".to_owned())
}
