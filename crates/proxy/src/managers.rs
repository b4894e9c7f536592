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
            idle: Mutex::new(Vec::new()),
        }
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
    /// the window the session last ran at (from its log), else the configured window's: where a
    /// manual or reviewed compaction of the session runs.
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
            None => match compact_session::last_window(self.store.as_ref(), session)? {
                Some(window) => self.for_window(window),
                None => self.default_manager(),
            },
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
