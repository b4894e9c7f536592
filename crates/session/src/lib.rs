//! The session runtime of Compact: a [`CompactManager`] sits between an agent loop and its model and
//! keeps every session's context inside the window, call after call, for many sessions at once,
//! without ever losing an item.
//!
//! - [`CompactManager::preflight`] before every model call: counts (system prompt, tool
//!   declarations, history and pending input), decides with the calibrated count, compacts when due,
//!   normalises, and returns the request to send with a report and events. It is **incremental**:
//!   a resent history is recognised by a hash chain over its items ([`chain`]) and the view sent last
//!   time is reused byte for byte with only the new items appended, so the provider's prompt cache
//!   keeps hitting and nothing is summarised twice. A history that forks is a new branch.
//! - [`CompactManager::manual_compact`], and manual trigger phrases (`/compact`, ...) in the latest
//!   user message ([`trigger`]).
//! - [`CompactManager::record_usage`] after each response: the provider's count calibrates ours
//!   ([`calibration`]).
//! - [`CompactManager::recover`] after a context-overflow error: compact harder and retry, at most
//!   three times per turn, then a typed [`RecoveryError`] telling the caller to start afresh.
//! - [`CompactManager::truncate_tool_output`] when a tool output arrives, and
//!   [`CompactManager::recall`] to get any original back by the id a marker, stub or checkpoint names.
//!
//! Everything is written to an append-only **session log** in a [`Store`] ([`MemoryStore`],
//! [`SqliteStore`], and `PostgresStore` with the `postgres` feature): every item received (with its
//! visibility), every original a truncation replaced, every view a compaction produced and every
//! event. Compaction changes the view, never the log. An optional [`Archive`]
//! ([`CompactManager::with_archive`]; [`FsArchive`], and `S3Archive` with the `s3` feature) keeps a
//! copy of every compaction's full transcript and checkpoint, and of the events logged before it,
//! with retention by age and size
//! ([`archive`]).
//!
//! Architecture invariants: the log is append-only and written before the in-memory state changes
//! (a failed call loses nothing and changes nothing it did not log); the manager reads no file,
//! environment or global state of its own (its configuration is passed in, resolved once); the
//! only I/O is the store's; the summariser is driven with [`compact_engine::block_on`].
//!
//! ```
//! use compact_core::model::{Conversation, Item, ItemBody, Role, ToolCall, ToolResult};
//! use compact_core::policy::Policy;
//! use compact_core::tokens::{Encoding, TokenCounter};
//! use compact_session::{CompactManager, MemoryStore, SessionConfig};
//! use std::sync::Arc;
//!
//! let config = SessionConfig::new(Policy::for_window(16_000), TokenCounter::new(Encoding::O200kBase));
//! let manager = CompactManager::open(config, Arc::new(MemoryStore::new()))?;
//!
//! let mut history = Conversation::default();
//! history.push(Item::text(Role::System, "You are a coding agent."));
//! history.push(Item::text(Role::User, "Fix the failing test."));
//! let first = manager.preflight("s1", &history)?;
//!
//! // The model called a tool; the host appends the call and its (possibly truncated) output and
//! // resends the whole history.
//! history.push(Item::new(ItemBody::ToolCall(ToolCall::function("c1", "bash", serde_json::json!({"cmd": "cargo test"})))));
//! let output = manager.truncate_tool_output("s1", "c1", "test result: FAILED. 1 failed")?;
//! history.push(Item::new(ItemBody::ToolResult(ToolResult::text("c1", output))));
//! let second = manager.preflight("s1", &history)?;
//! assert_eq!(second.report.new_items, 2);
//! assert_eq!(second.report.reused_items, first.conversation.len());
//! assert_eq!(second.conversation.items[..2], first.conversation.items[..]);
//! # Ok::<(), compact_session::SessionError>(())
//! ```
//!
//! # Concurrency
//! Calls on different sessions run in parallel. Calls on one session are serialised by a
//! per-session lock held for the whole call, compaction included: of two concurrent preflights on
//! one session, the second sees the state the first left. If it sends the same history it gets the
//! same request back (nothing new is logged but its events); if it sends that history plus more,
//! it extends the first's view; if it sends a different history, it is a branch. Stores are shared
//! safely between managers: every append names the log version it extends, and a store refuses an
//! append to a log that moved on ([`StoreError::Conflict`]), so two managers on one session never
//! interleave or lose records.
//!
//! Managers in several processes may share one store (proxies behind a load balancer on one
//! PostgreSQL): every call on a session held in memory first reads the session's version (one
//! indexed read) and, when another writer appended since, takes in only the records appended
//! since (a reload of the whole log only when they cannot be applied to what is held). An append
//! that still meets a conflict (two managers on one session at the same moment) catches up and
//! tries again, [`CONFLICT_RETRIES`] times. Usage is recorded for the call the recording manager
//! prepared, whoever appended since; a request its host sends on untouched is still logged
//! ([`CompactManager::record_passthrough`]).

pub mod annotation;
pub mod archive;
pub mod calibration;
pub mod chain;
pub mod codec;
mod commit;
mod config;
mod error;
pub mod event;
pub mod export;
mod facts;
mod history;
pub mod idle;
mod limits;
pub mod link;
pub mod lru;
mod manager;
mod manual;
pub mod memory;
#[cfg(feature = "otlp")]
pub mod otlp;
mod passthrough;
mod preflight;
pub mod provider;
mod recall;
pub mod record;
mod recover;
pub mod redacting;
mod reported;
mod review;
mod state;
pub mod store;
pub mod trigger;
mod usage;

pub use archive::{Archive, ArchiveError, FsArchive};
#[cfg(feature = "s3")]
pub use archive::{S3Archive, S3Config};
pub use calibration::{Calibration, CalibrationUpdate};
pub use config::{
    archive_retention, net_settings, open_archive, open_archive_with, open_client, open_exports,
    open_exports_with, open_storage, open_store, SessionConfig, DEFAULT_MAX_CACHED_SESSIONS,
    DEFAULT_OVERFLOW_MAX_RETRIES,
};
pub use error::SessionError;
pub use event::{
    BranchEvent, CalibrationEvent, CompactedEvent, DecisionEvent, EstimateEvent, Event, EventData,
    EventKind, LinkedEvent, SentEvent, SkippedEvent,
};
pub use export::{
    CallbackExporter, ConsoleExporter, ExportError, ExportQueue, ExportStats, Exporter,
    JsonlExporter,
};
pub use history::{last_call, last_window, LastCall};
pub use idle::{IdleCompactor, IdleOutcome, IdleSettings, IdleStats, DEFAULT_IDLE_AFTER};
pub use limits::{CONFLICT_RETRIES, MAX_SESSION_ID_LEN, MAX_STRIKES};
pub use lru::SessionCache;
pub use manager::{CompactManager, PreflightReport, Prepared};
pub use manual::ManualCompaction;
pub use memory::{MemoryConfig, DEFAULT_MEMORY_BUDGET};
#[cfg(feature = "otlp")]
pub use otlp::{OtlpError, OtlpExporter};
pub use provider::{provider_state, HeldSource, ProviderHeld};
pub use recall::{Recalled, KEEP_ATTEMPTS};
pub use recover::{Recovery, RecoveryError, RECOVERY_SHRINK};
pub use reported::{CompactionPass, Usage};
pub use review::Proposal;
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
pub use store::{MemoryStore, SessionSummary, SqliteStore, Store, StoreError};
