//! [`Proxy`]: the shared state ([`crate::state`]) served on the workspace's one accept loop
//! ([`compact_net::server`]). On shutdown the proxy stops accepting, answers `/readyz` with 503,
//! lets in-flight requests (streams included) finish for up to the drain timeout, then returns.

use crate::config::ProxyConfig;
use crate::error::ProxyError;
use crate::log::{emit, Level};
use crate::metrics::Metrics;
use crate::state::Shared;
use compact_net::server::ServeOptions;
use compact_session::Store;
use serde_json::json;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpListener;

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
    /// A proxy with `config`, keeping session logs in `store`. Its logs are `tracing` events
    /// ([`crate::log`]).
    pub fn new(config: ProxyConfig, store: Arc<dyn Store>) -> Result<Self, ProxyError> {
        Ok(Proxy {
            shared: Arc::new(Shared::new(config, store)?),
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
        let shared = Arc::clone(&self.shared);
        let service =
            hyper::service::service_fn(move |req| crate::handler::handle(Arc::clone(&shared), req));
        let options = ServeOptions {
            drain_timeout: self.shared.config.drain_timeout,
            ..ServeOptions::default()
        };
        // `/readyz` answers 503 from the moment shutdown is asked for, while requests drain.
        let draining = async {
            shutdown.await;
            self.shared.draining.store(true, Ordering::SeqCst);
            emit(Level::Info, "draining", json!({}));
        };
        let stopped = compact_net::server::serve(listener, service, &options, draining).await;
        let drained = stopped.drained;
        emit(Level::Info, "stopped", json!({"drained": drained}));
        Ok(())
    }
}
