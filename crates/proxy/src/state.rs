//! [`Shared`]: what every request handler of the proxy shares (configuration, session managers,
//! decoders, the web view, the upstream client, metrics, admission), built once at start-up.
//! The handlers and the server import it; it imports none of them.

use crate::config::ProxyConfig;
use crate::error::ProxyError;
use crate::managers::Managers;
use crate::metrics::Metrics;
use crate::upstream::UpstreamClient;
use compact_session::Store;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Where the web view is mounted.
pub(crate) const UI_BASE: &str = "/admin/ui";

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
    /// The bound on proxied requests in flight and waiting ([`crate::admission`]).
    pub admission: crate::admission::Gate,
    pub draining: AtomicBool,
    /// (session, parent) links this process has logged or found (so a subagent's requests read its
    /// log for the link once); cleared past [`MAX_LINKED_CACHED`].
    pub linked: std::sync::Mutex<std::collections::HashSet<(String, String)>>,
}

/// Most sessions remembered as linked before the set is cleared.
pub(crate) const MAX_LINKED_CACHED: usize = 65_536;

impl Shared {
    /// The state of a proxy with `config`, keeping session logs in `store`; fails at start-up, not
    /// on the first request, when the policy cannot be used.
    pub(crate) fn new(config: ProxyConfig, store: Arc<dyn Store>) -> Result<Self, ProxyError> {
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
        let ui = compact_ui::Ui::new(UI_BASE).with_review(Arc::new(desk));
        let metrics = Arc::new(Metrics::default());
        let admission = crate::admission::Gate::new(config.admission, Arc::clone(&metrics));
        let client = match config.client.clone() {
            Some(client) => UpstreamClient::over(client),
            None => UpstreamClient::new()?,
        };
        Ok(Shared {
            decoders: crate::decoders::held_decodes(
                config.session.max_cached_sessions,
                crate::decoders::DEFAULT_MAX_HELD_BYTES,
            ),
            config,
            managers,
            ui,
            client,
            metrics,
            admission,
            draining: AtomicBool::new(false),
            linked: std::sync::Mutex::new(std::collections::HashSet::new()),
        })
    }
}
