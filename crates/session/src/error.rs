//! [`SessionError`]: every way a manager call can fail, typed so callers can branch on it. A failed
//! call never loses a received item: what arrived is logged before anything else is attempted,
//! or the call fails before anything changes.

use crate::codec::CodecError;
use crate::store::StoreError;
use compact_engine::CompactError;

/// Why a [`crate::CompactManager`] call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The session id is empty, too long or holds control characters.
    #[error("invalid session id {0:?}: ids are 1 to 256 characters without control characters")]
    InvalidSessionId(String),
    /// No session with this id has been seen (only `preflight` starts a session).
    #[error("unknown session `{0}`: call preflight first")]
    UnknownSession(String),
    /// The request holds no item.
    #[error("the request has no items")]
    EmptyRequest,
    /// A subagent session cannot be linked to this parent: itself, a session below it (a cycle),
    /// or another parent than the one it is already linked to.
    #[error("session `{session}` cannot be linked to parent `{parent}`: {why}")]
    InvalidParent {
        /// The session being linked.
        session: String,
        /// The parent asked for.
        parent: String,
        /// Why not.
        why: String,
    },
    /// The request is not usable (an item without an id, a reused id, ...).
    #[error("malformed request: {0}")]
    MalformedRequest(String),
    /// `recover` was given a request that is not the one the last `preflight` of the session returned.
    #[error("the request to recover is not the last request prepared for session `{0}`")]
    NotLastPrepared(String),
    /// Nothing was prepared for the session yet (`record_usage`, `manual_compact` before any preflight).
    #[error("nothing has been prepared for session `{0}` yet")]
    NothingPrepared(String),
    /// No item in the session's log has this id.
    #[error("session `{session}` has no item `{reference}`")]
    UnknownReference {
        /// The session.
        session: String,
        /// The id asked for.
        reference: String,
    },
    /// The request cannot be sent: it is over the budget and compaction failed (or the summariser
    /// failed under a `fail` policy). The received items are logged.
    #[error(transparent)]
    Compact(#[from] CompactError),
    /// A reviewed compaction was applied after the session moved on (a call logged something since
    /// the proposal): propose again.
    #[error("the proposal for session `{session}` was made at log version {proposed_at}, and the session is at {now}: propose again")]
    ProposalOutdated {
        /// The session.
        session: String,
        /// The version the proposal was made at.
        proposed_at: u64,
        /// The session's version now.
        now: u64,
    },
    /// The archive failed (reading an archived transcript for `recall`).
    #[error(transparent)]
    Archive(#[from] crate::archive::ArchiveError),
    /// The store failed; nothing of this call was written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session's log holds something this program cannot read back.
    #[error("session `{session}` log is inconsistent: {message}")]
    Inconsistent {
        /// The session.
        session: String,
        /// What is wrong.
        message: String,
    },
    /// A stored item could not be read.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// A memory operation was refused: no such fact, or a transition the lifecycle does not have.
    #[error("session `{session}`: {source}")]
    Memory {
        /// The session (or project memory log).
        session: String,
        /// Why.
        source: compact_core::memory::MemoryError,
    },
}
