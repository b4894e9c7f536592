//! One [`CompactManager`] per context window and compaction backend, all over one store: the
//! session runtime compacts for one window with one summariser, and requests through the proxy
//! name models with different windows and, per model route, different backends
//! ([`crate::Backend`]: e.g. Anthropic's own compaction for one model, the deterministic
//! checkpoint for another). Managers are created on first use and kept for the life of the proxy
//! (`compactctl ui` reviews through them too).

use crate::config::Backend;
use compact_session::{
    Archive, CompactManager, ExportQueue, IdleCompactor, SessionConfig, SessionError, Store,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A window smaller than the configured output reserve keeps this share of itself for the reply
/// (a 16k-token local model behind a config written for a 200k one still gets room for input).
const RESERVE_SHARE_OF_SMALL_WINDOW: usize = 4;

/// What a manager is kept under: its window and its backend's name (`None`: the base
/// configuration's summariser).
type Key = (usize, Option<String>);

/// The managers, by window and backend.
pub struct Managers {
    base: SessionConfig,
    store: Arc<dyn Store>,
    archive: Option<Arc<dyn Archive>>,
    exports: Option<Arc<ExportQueue>>,
    by_key: Mutex<HashMap<Key, Arc<CompactManager>>>,
    /// The backend of each model route that names one, by model name: where a session no
    /// manager holds is compacted (its last call's model decides).
    backends: Vec<(String, Backend)>,
    /// The idle-time compactor of each manager, when the configuration turns it on (stopped when
    /// the managers are dropped).
    idle: Mutex<Vec<IdleCompactor>>,
}

impl std::fmt::Debug for Managers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Managers")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl Managers {
    /// Managers built from `base` (its policy's window is replaced per manager) over `store`.
    pub fn new(base: SessionConfig, store: Arc<dyn Store>) -> Self {
        Managers {
            base,
            store,
            archive: None,
            exports: None,
            by_key: Mutex::new(HashMap::new()),
            backends: Vec::new(),
            idle: Mutex::new(Vec::new()),
        }
    }

    /// The same managers, knowing each model route's backend (model name, backend), so that
    /// [`Managers::for_session`] compacts a session no manager holds with the backend of the
    /// model its last call named.
    #[must_use]
    pub fn with_backends(mut self, backends: impl IntoIterator<Item = (String, Backend)>) -> Self {
        self.backends = backends.into_iter().collect();
        self
    }

    /// The same managers, archiving every compaction in `archive`.
    #[must_use]
    pub fn with_archive(mut self, archive: Option<Arc<dyn Archive>>) -> Self {
        self.archive = archive;
        self
    }

    /// The same managers, exporting their events through `exports`.
    #[must_use]
    pub fn with_exports(mut self, exports: Option<Arc<ExportQueue>>) -> Self {
        self.exports = exports;
        self
    }

    /// The store all managers share.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The manager for `window` tokens with the base configuration's summariser. Fails when no
    /// valid policy fits the window.
    pub fn for_window(&self, window: usize) -> Result<Arc<CompactManager>, SessionError> {
        self.for_route(window, None)
    }

    /// The manager for `window` tokens whose checkpoints `backend` writes (`None`: the base
    /// configuration's summariser). Fails when no valid policy fits the window.
    pub fn for_route(
        &self,
        window: usize,
        backend: Option<&Backend>,
    ) -> Result<Arc<CompactManager>, SessionError> {
        let key: Key = (window, backend.map(|b| b.name().to_owned()));
        let mut map = self
            .by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(m) = map.get(&key) {
            return Ok(Arc::clone(m));
        }
        let mut config = self.base.clone();
        config.policy.max_context_tokens = window;
        if let Some(backend) = backend {
            config.summarizer = Arc::clone(backend.summarizer());
        }
        if config.policy.validate().is_err() {
            config.policy.reserved_output_tokens = config
                .policy
                .reserved_output_tokens
                .min(window / RESERVE_SHARE_OF_SMALL_WINDOW);
        }
        let mut manager = CompactManager::open(config, Arc::clone(&self.store))?;
        if let Some(archive) = &self.archive {
            manager = manager.with_archive(Arc::clone(archive));
        }
        if let Some(exports) = &self.exports {
            manager = manager.with_exports(Arc::clone(exports));
        }
        let manager = Arc::new(manager);
        if let Some(settings) = self.base.idle {
            // Without its thread the proxy still works, compacting at the next call as usual.
            if let Ok(idle) = IdleCompactor::start(&manager, settings) {
                self.idle
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(idle);
            }
        }
        map.insert(key, Arc::clone(&manager));
        Ok(manager)
    }

    /// The manager that holds `session` in memory (the one its calls go through), else the one of
    /// the window the session last ran at (from its log; else the configured window) and of the
    /// backend of the model its last call named (else the base summariser): where a manual or
    /// reviewed compaction of the session runs.
    pub fn for_session(&self, session: &str) -> Result<Arc<CompactManager>, SessionError> {
        let holding = self
            .by_key
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .find(|m| m.holds(session))
            .cloned();
        match holding {
            Some(m) => Ok(m),
            None => {
                let last = compact_session::last_call(self.store.as_ref(), session)?;
                let backend = last.model.and_then(|model| {
                    self.backends
                        .iter()
                        .find(|(name, _)| *name == model)
                        .map(|(_, b)| b)
                });
                self.for_route(
                    last.window.unwrap_or(self.base.policy.max_context_tokens),
                    backend,
                )
            }
        }
    }

    /// Quiet sessions the idle-time compactors looked at, and those they compacted, so far (0
    /// and 0 when they are off).
    pub fn idle_counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .fold((0, 0), |(checked, compacted), i| {
                let s = i.stats();
                (
                    checked + s.checked.load(Relaxed),
                    compacted + s.compacted.load(Relaxed),
                )
            })
    }

    /// The manager of the configured policy's window (admin recall reads the log through it).
    pub fn default_manager(&self) -> Result<Arc<CompactManager>, SessionError> {
        self.for_window(self.base.policy.max_context_tokens)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use compact_core::model::Format;
    use compact_engine::{BoxFuture, SummarizeError, Summarizer, Summary, SummaryRequest};
    use compact_session::MemoryStore;

    /// A summariser known by its name alone (never called here).
    struct Named(&'static str);

    impl Summarizer for Named {
        fn name(&self) -> &str {
            self.0
        }

        fn summarize<'a>(
            &'a self,
            _request: SummaryRequest<'a>,
        ) -> BoxFuture<'a, Result<Summary, SummarizeError>> {
            Box::pin(async { Ok(Summary::default()) })
        }
    }

    fn call(manager: &CompactManager, session: &str, model: &str) {
        let request = serde_json::json!({"model": model, "max_tokens": 64,
            "messages": [{"role": "user", "content": "Read src/lib.rs."}]});
        let conv = compact_formats::wire::decode(Format::Anthropic, &request).unwrap();
        manager.preflight(session, &conv).unwrap();
    }

    #[test]
    fn a_session_no_manager_holds_is_compacted_with_its_last_models_backend() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let routed = Backend::new("routed", Arc::new(Named("routed-summarizer")));
        let managers = || {
            Managers::new(
                SessionConfig::new(
                    compact_core::policy::Policy::for_window(32_000),
                    compact_core::tokens::TokenCounter::new(
                        compact_core::tokens::Encoding::O200kBase,
                    ),
                ),
                Arc::clone(&store),
            )
            .with_backends([("claude-routed".to_owned(), routed.clone())])
        };
        // Calls through the proxy: one session per model, at a window of their own.
        let running = managers();
        call(
            &running.for_route(64_000, Some(&routed)).unwrap(),
            "a",
            "claude-routed",
        );
        call(
            &running.for_route(48_000, None).unwrap(),
            "b",
            "claude-other",
        );
        // After a restart (or in `compactctl ui`) no manager holds them: each is compacted at
        // the window its calls used and with the backend of the model they named.
        let fresh = managers();
        let a = fresh.for_session("a").unwrap();
        assert_eq!(a.config().summarizer.name(), "routed-summarizer");
        assert_eq!(a.config().policy.max_context_tokens, 64_000);
        let b = fresh.for_session("b").unwrap();
        assert_eq!(b.config().summarizer.name(), "deterministic");
        assert_eq!(b.config().policy.max_context_tokens, 48_000);
        // A session the store does not know is an error naming it.
        let unknown = fresh.for_session("never").unwrap_err();
        assert!(unknown.to_string().contains("never"), "{unknown}");
    }
}
