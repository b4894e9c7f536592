//! Idle-time compaction: a session that has been quiet for a while (no preflight, no usage report)
//! and whose next call is expected to reach the trigger is compacted now, so that the next
//! preflight finds the work done and only appends what is new.
//!
//! [`CompactManager::idle_compact`] does one session:
//! 1. Under the session's lock (never waited for: a session in a call is `Busy`), it checks that
//!    the view sent last plus the largest growth of its last calls reaches the trigger, and takes a
//!    snapshot: the view, its log version, the calibrated policy.
//! 2. It compacts the snapshot *without* the lock (a model summariser may take seconds; calls on
//!    the session are not held up meanwhile).
//! 3. Under the lock again, it adopts the result only if the log is still at the snapshot's
//!    version: a call that came in the meantime wins and the result is dropped (`Superseded`).
//!    The view and its event are appended to the log as one batch before the state changes, as a
//!    manual compaction's are; a failed compaction or append changes nothing.
//!
//! [`IdleCompactor`] runs it on a thread of its own for every session that has been quiet for
//! [`IdleSettings::after`] since its last call (debounced: once per quiet spell).

use crate::commit::FinishedCompaction;
use crate::error::SessionError;
use crate::event::CompactedEvent;
use crate::limits::MAX_STRIKES;
use crate::manager::{items_compressed, CompactManager};
use compact_core::budget::{Budget, MIN_TARGET_SHARE};
use compact_core::policy::Mode;
use compact_engine::block_on;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// `share` of `usable`, rounded down.
fn share(usable: usize, share: f64) -> usize {
    (usable as f64 * share) as usize
}

pub use crate::config::{IdleSettings, DEFAULT_IDLE_AFTER};

/// What [`CompactManager::idle_compact`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum IdleOutcome {
    /// The manager does not hold the session in memory, or nothing was prepared in it yet.
    NotHeld,
    /// A call holds the session: nothing is waited for.
    Busy,
    /// The next call is not expected to reach the trigger.
    NotDue {
        /// Our count of what was sent last, times the calibration ratio.
        tokens: usize,
        /// The largest growth of the last calls, if any call extended the request yet.
        expected_growth: Option<usize>,
        /// The trigger.
        trigger: usize,
    },
    /// A call came in while the compaction ran: its result was dropped.
    Superseded,
    /// The compaction failed (nothing changed; the next preflight compacts as usual).
    Failed(String),
    /// The view was compacted; the next preflight extends the compacted view.
    Compacted {
        /// Our count of the view before.
        tokens_before: usize,
        /// Our count of the view after.
        tokens_after: usize,
    },
}

impl CompactManager {
    /// Compacts `session`'s current view now if its next call is expected to reach the trigger
    /// (see the module documentation). Errors only when the log cannot be appended to; every
    /// other case is an [`IdleOutcome`] and leaves the session as it was.
    pub fn idle_compact(&self, session: &str) -> Result<IdleOutcome, SessionError> {
        let Some(handle) = self.held_handle(session) else {
            return Ok(IdleOutcome::NotHeld);
        };
        // 1. The snapshot, under the lock, if nobody holds it.
        let (version, current, policy, min_gain) = {
            let mut slot = match handle.try_lock() {
                Ok(slot) => slot,
                Err(std::sync::TryLockError::WouldBlock) => return Ok(IdleOutcome::Busy),
                Err(std::sync::TryLockError::Poisoned(_)) => return Ok(IdleOutcome::NotHeld),
            };
            let Some(state) = slot.as_mut() else {
                return Ok(IdleOutcome::NotHeld);
            };
            if !state.prepared || state.stale || state.fresh {
                return Ok(IdleOutcome::NotHeld);
            }
            let budget = Budget::new(&self.policy_for(state));
            let tokens = state.calibration.effective(&state.model, state.sent_tokens);
            let expected_growth = state.growth.expected();
            // Only where the next call would compact by itself: `auto` mode, and the two-strike
            // breaker not tripped.
            let due = self.config().policy.mode == Mode::Auto
                && state.strikes < MAX_STRIKES
                && expected_growth.is_some_and(|g| tokens.saturating_add(g) >= budget.trigger);
            if !due {
                return Ok(IdleOutcome::NotDue {
                    tokens,
                    expected_growth,
                    trigger: budget.trigger,
                });
            }
            let (current, _) = self.current_with_block(state);
            let ratio = state.calibration.ratio(&state.model);
            // Aim where the call that would have compacted would land: the target less the growth
            // expected of that call, so that compactions come no more often than without idle
            // time; and free what reaching that target frees (the policy's minimum gain assumes a
            // count at the trigger).
            let mut policy = self.calibrated_policy(state, ratio);
            let ahead = Budget::new(&policy);
            let g = expected_growth.unwrap_or(0);
            let target = ahead
                .target
                .saturating_sub(g)
                .max(share(ahead.usable, MIN_TARGET_SHARE));
            policy.target_pct = policy
                .target_pct
                .min(target as f64 / ahead.usable.max(1) as f64);
            let min_gain = tokens.saturating_sub(target);
            (state.version, current, policy, min_gain)
        };
        // 2. The compaction, without the lock.
        let done = match self
            .compactor(session, policy)
            .and_then(|c| block_on(c.compact_ahead(&current, min_gain)))
        {
            Ok(done) => done,
            Err(e) => return Ok(IdleOutcome::Failed(e.to_string())),
        };
        let view = crate::manual::view_of(&done, &current);
        // 3. Adopted only if nothing happened meanwhile.
        let mut slot = Self::lock(&handle);
        let Some(state) = slot.as_mut() else {
            return Ok(IdleOutcome::Superseded);
        };
        if state.version != version || state.stale {
            return Ok(IdleOutcome::Superseded);
        }
        let saved = self.commit_compaction(
            session,
            state,
            FinishedCompaction {
                view: &view,
                tokens: done.report.tokens_after,
                trigger: "idle",
                event: Some(CompactedEvent::of(
                    "idle",
                    &done.report,
                    items_compressed(&done),
                )),
                before: Vec::new(),
                after: Vec::new(),
            },
        );
        match saved {
            Ok(_) => {}
            // Another process sharing the store served the session meanwhile.
            Err(SessionError::Store(crate::store::StoreError::Conflict { .. })) => {
                return Ok(IdleOutcome::Superseded)
            }
            Err(e) => return Err(e),
        }
        Ok(IdleOutcome::Compacted {
            tokens_before: done.report.tokens_before,
            tokens_after: done.report.tokens_after,
        })
    }
}

/// Counts of what an [`IdleCompactor`] did.
#[derive(Debug, Default)]
pub struct IdleStats {
    /// Quiet sessions looked at.
    pub checked: AtomicU64,
    /// Sessions compacted.
    pub compacted: AtomicU64,
    /// Compactions dropped because a call came in.
    pub superseded: AtomicU64,
    /// Compactions that failed or could not be logged (nothing changed).
    pub failed: AtomicU64,
}

/// A thread that runs [`CompactManager::idle_compact`] on every session quiet for
/// [`IdleSettings::after`]. Stops when dropped (or when the manager is gone).
#[derive(Debug)]
pub struct IdleCompactor {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<IdleStats>,
}

impl IdleCompactor {
    /// Starts the thread. It holds only a weak reference to the manager.
    pub fn start(manager: &Arc<CompactManager>, settings: IdleSettings) -> std::io::Result<Self> {
        let (stop, stopped) = mpsc::channel::<()>();
        let stats = Arc::new(IdleStats::default());
        let weak: Weak<CompactManager> = Arc::downgrade(manager);
        let counts = Arc::clone(&stats);
        // Looks four times per quiet period: a session is compacted at most a quarter late.
        let poll = (settings.after / 4).max(Duration::from_millis(10));
        let thread = std::thread::Builder::new()
            .name("compact-idle".to_owned())
            .spawn(move || loop {
                match stopped.recv_timeout(poll) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                let Some(manager) = weak.upgrade() else {
                    return;
                };
                for session in manager.quiet_sessions(settings.after) {
                    counts.checked.fetch_add(1, Ordering::Relaxed);
                    let counter = match manager.idle_compact(&session) {
                        Ok(IdleOutcome::Compacted { .. }) => &counts.compacted,
                        Ok(IdleOutcome::Superseded) => &counts.superseded,
                        Ok(IdleOutcome::Failed(_)) | Err(_) => &counts.failed,
                        Ok(_) => continue,
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })?;
        Ok(IdleCompactor {
            stop: Some(stop),
            thread: Some(thread),
            stats,
        })
    }

    /// What the thread did so far (shared: readable after the compactor is dropped, when the
    /// thread has finished what it was doing).
    pub fn stats(&self) -> Arc<IdleStats> {
        Arc::clone(&self.stats)
    }
}

impl Drop for IdleCompactor {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
