//! [`Proxy`]: the shared state, the accept loop and graceful shutdown. On shutdown the proxy stops
//! accepting, answers `/readyz` with 503, lets in-flight requests (streams included) finish for up
//! to the drain timeout, then returns.

use crate::config::ProxyConfig;
use crate::log::{emit, Level, LogSink};
use crate::managers::Managers;
use crate::metrics::Metrics;
use crate::upstream::{TlsError, UpstreamClient};
use compact_session::Store;
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use serde_json::json;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Why the proxy could not start or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The listening socket could not be bound or read.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The TLS client could not be set up.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The session runtime refused the configuration.
    #[error(transparent)]
    Session(#[from] compact_session::SessionError),
}

/// What every request handler shares.
pub(crate) struct Shared {
    pub config: ProxyConfig,
    pub managers: Arc<Managers>,
    /// Per session, the last request decoded (the next is decoded from its first new message).
    pub decoders: crate::decoders::Decoders,
    /// The web view under `/admin/ui/`, with its review desk (proposals waiting to be applied).
    pub ui: compact_ui::Ui,
    pub client: UpstreamClient,
    pub metrics: Arc<Metrics>,
    pub log: Arc<dyn LogSink>,
    /// The bound on proxied requests in flight and waiting ([`crate::admission`]).
    pub admission: crate::admission::Gate,
    pub draining: AtomicBool,
    /// (session, parent) links this process has logged or found (so a subagent's requests read its
    /// log for the link once); cleared past [`MAX_LINKED_CACHED`].
    pub linked: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
}

/// Most sessions remembered as linked before the set is cleared.
pub(crate) const MAX_LINKED_CACHED: usize = 65_536;

/// The compaction proxy. Build it with [`Proxy::new`], then [`Proxy::serve`] on a listener.
#[derive(Clone)]
pub struct Proxy {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("config", &self.shared.config)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// A proxy with `config`, keeping session logs in `store` and writing logs to `log`.
    pub fn new(
        config: ProxyConfig,
        store: Arc<dyn Store>,
        log: Arc<dyn LogSink>,
    ) -> Result<Self, ProxyError> {
        let managers = Arc::new(
            Managers::new(config.session.clone(), store)
                .with_backends(
                    config
                        .models
                        .iter()
                        .filter_map(|m| m.backend.clone().map(|b| (m.name.clone(), b))),
                )
                .with_archive(config.archive.clone())
                .with_exports(config.exports.clone()),
        );
        // Fail at start-up, not on the first request, when the policy cannot be used.
        managers.default_manager()?;
        // A reviewed compaction runs through the manager the session's calls go through.
        let desk = {
            let managers = Arc::clone(&managers);
            compact_ui::Review::new(move |session: &str| managers.for_session(session))
        };
        let ui = compact_ui::Ui::new(crate::admin::UI_BASE).with_review(Arc::new(desk));
        let metrics = Arc::new(Metrics::default());
        let admission =
            crate::admission::Gate::new(config.admission, Arc::clone(&metrics), Arc::clone(&log));
        Ok(Proxy {
            shared: Arc::new(Shared {
                decoders: crate::decoders::Decoders::new(config.session.max_cached_sessions),
                config,
                managers,
                ui,
                client: UpstreamClient::new()?,
                metrics,
                log,
                admission,
                draining: AtomicBool::new(false),
                linked: std::sync::Mutex::new(std::collections::HashSet::new()),
            }),
        })
    }

    /// The proxy's counters.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }

    /// Binds the configured address.
    pub async fn bind(&self) -> Result<TcpListener, ProxyError> {
        let addr = self.shared.config.listen;
        TcpListener::bind(addr)
            .await
            .map_err(|source| ProxyError::Bind { addr, source })
    }

    /// Serves connections from `listener` until `shutdown` completes, then drains.
    pub async fn serve(
        &self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ProxyError> {
        let addr = listener.local_addr().map_err(|source| ProxyError::Bind {
            addr: self.shared.config.listen,
            source,
        })?;
        emit(
            self.shared.log.as_ref(),
            Level::Info,
            "listening",
            json!({"addr": addr.to_string(),
                   "admin_api": self.shared.config.admin_token.is_some(),
                   "recall": self.shared.config.recall.enabled,
                   "max_in_flight": self.shared.config.admission.max_in_flight,
                   "max_queue": self.shared.config.admission.max_queue,
                   "queue_timeout_ms": self.shared.config.admission.queue_timeout.as_millis() as u64,
                   "summarizer": self.shared.config.session.summarizer.name(),
                   "backends": self.shared.config.models.iter()
                       .filter_map(|m| m.backend.as_ref().map(|b| (m.name.clone(), json!(b.summarizer().name()))))
                       .collect::<serde_json::Map<_, _>>()}),
        );
        let graceful = GracefulShutdown::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    let shared = Arc::clone(&self.shared);
                    let service = hyper::service::service_fn(move |req| {
                        crate::handler::handle(Arc::clone(&shared), req)
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    let watched = graceful.watch(conn);
                    tokio::spawn(async move {
                        let _ = watched.await;
                    });
                }
                () = &mut shutdown => break,
            }
        }
        drop(listener);
        self.shared.draining.store(true, Ordering::SeqCst);
        emit(self.shared.log.as_ref(), Level::Info, "draining", json!({}));
        let drained =
            tokio::time::timeout(self.shared.config.drain_timeout, graceful.shutdown()).await;
        emit(
            self.shared.log.as_ref(),
            Level::Info,
            "stopped",
            json!({"drained": drained.is_ok()}),
        );
        Ok(())
    }
}
