//! Errors: every Rust error becomes an instance of one of the exception classes of
//! `compact.errors` (a hierarchy under `CompactError`, written in Python so that classes can also
//! derive from `ValueError` or `LookupError`), with `kind` set to the Rust error's kind
//! (`insufficient_budget`, `conflict`, ...) and `details` to its fields.

use compact_engine::CompactError;
use compact_session::{RecoveryError, SessionError, StoreError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyModule};
use serde_json::{json, Value};

/// The module holding the exception classes.
const ERRORS_MODULE: &str = "compact.errors";

static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// Nothing to register: the classes live in `compact.errors` (imported on first error).
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}

/// A Rust-side error before it becomes a Python exception: the class name in `compact.errors`,
/// the kind, the message and the details (boxed: errors are rare, results stay small).
#[derive(Debug, Clone)]
pub struct Failure(Box<FailureData>);

/// What a [`Failure`] holds.
#[derive(Debug, Clone)]
pub struct FailureData {
    /// Class name in `compact.errors`.
    pub class: &'static str,
    /// The Rust error's kind, snake case.
    pub kind: &'static str,
    /// The message.
    pub message: String,
    /// Fields of the error (a JSON object).
    pub details: Value,
}

impl Failure {
    /// A failure of `class` / `kind` with no details.
    pub fn new(class: &'static str, kind: &'static str, message: impl Into<String>) -> Failure {
        Failure(Box::new(FailureData {
            class,
            kind,
            message: message.into(),
            details: json!({}),
        }))
    }

    /// Bad input from the caller (`InvalidInputError`, a `ValueError`).
    pub fn input(kind: &'static str, message: impl Into<String>) -> Failure {
        Failure::new("InvalidInputError", kind, message)
    }

    /// The same failure with details.
    #[must_use]
    pub fn with(mut self, details: Value) -> Failure {
        self.0.details = details;
        self
    }

    /// What it holds.
    pub fn data(&self) -> &FailureData {
        &self.0
    }

    /// The Python exception.
    pub fn into_py_err(self, py: Python<'_>) -> PyErr {
        match self.build(py) {
            Ok(err) => err,
            Err(e) => e,
        }
    }

    fn build(self, py: Python<'_>) -> PyResult<PyErr> {
        let data = *self.0;
        let module = MODULE.get_or_try_init(py, || {
            PyModule::import(py, ERRORS_MODULE).map(Bound::unbind)
        })?;
        let class = module.bind(py).getattr(data.class)?;
        let exc = class.call1((data.message,))?;
        exc.setattr("kind", data.kind)?;
        let details = crate::convert::value_to_py(py, &data.details)?;
        exc.setattr("details", details.cast_into::<PyDict>()?)?;
        Ok(PyErr::from_value(exc))
    }
}

/// `Result<T, Failure>` into a Python result.
pub fn raise<T>(py: Python<'_>, r: Result<T, Failure>) -> PyResult<T> {
    r.map_err(|f| f.into_py_err(py))
}

impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Failure {
        let message = e.to_string();
        match e {
            SessionError::InvalidSessionId(id) => {
                Failure::input("invalid_session_id", message).with(json!({"session_id": id}))
            }
            SessionError::InvalidParent {
                session, parent, ..
            } => Failure::input("invalid_parent", message)
                .with(json!({"session_id": session, "parent_id": parent})),
            SessionError::Memory { session, .. } => {
                Failure::input("memory", message).with(json!({"session_id": session}))
            }
            SessionError::EmptyRequest => Failure::input("empty_request", message),
            SessionError::MalformedRequest(_) => Failure::input("malformed_request", message),
            SessionError::UnknownSession(id) => {
                Failure::new("UnknownSessionError", "unknown_session", message)
                    .with(json!({"session_id": id}))
            }
            SessionError::UnknownReference { session, reference } => {
                Failure::new("UnknownReferenceError", "unknown_reference", message)
                    .with(json!({"session_id": session, "reference": reference}))
            }
            SessionError::NothingPrepared(id) => {
                Failure::new("StateError", "nothing_prepared", message)
                    .with(json!({"session_id": id}))
            }
            SessionError::NotLastPrepared(id) => {
                Failure::new("StateError", "not_last_prepared", message)
                    .with(json!({"session_id": id}))
            }
            SessionError::Compact(e) => Failure::from(e),
            SessionError::Archive(_) => Failure::new("ArchiveError", "archive", message),
            SessionError::Store(e) => Failure::from(e),
            SessionError::Inconsistent { session, .. } => {
                Failure::new("CorruptLogError", "inconsistent", message)
                    .with(json!({"session_id": session}))
            }
            SessionError::Codec(_) => Failure::new("CorruptLogError", "codec", message),
            _ => Failure::new("CompactError", "other", message),
        }
    }
}

impl From<CompactError> for Failure {
    fn from(e: CompactError) -> Failure {
        let message = e.to_string();
        match e {
            CompactError::InsufficientBudget { floor, budget, .. } => {
                Failure::new("InsufficientBudgetError", "insufficient_budget", message)
                    .with(json!({"floor": floor, "budget": budget}))
            }
            CompactError::NoProgress { before, after } => {
                Failure::new("CompactionError", "no_progress", message)
                    .with(json!({"before": before, "after": after}))
            }
            CompactError::StillOverBudget { after, usable } => {
                Failure::new("CompactionError", "still_over_budget", message)
                    .with(json!({"after": after, "usable": usable}))
            }
            CompactError::Summarizer(_) => Failure::new("SummarizerError", "summarizer", message),
            CompactError::Policy(_) => Failure::new("ConfigError", "policy", message),
            CompactError::Strategy(_) => Failure::new("CompactionError", "strategy", message),
            CompactError::Apply(_) => Failure::new("CompactionError", "apply", message),
            _ => Failure::new("CompactionError", "other", message),
        }
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Failure {
        let message = e.to_string();
        let kind = match &e {
            StoreError::UnknownSession(id) => {
                return Failure::new("UnknownSessionError", "unknown_session", message)
                    .with(json!({"session_id": id}));
            }
            StoreError::Conflict { .. } => "conflict",
            StoreError::Corrupt { .. } => "corrupt",
            StoreError::Backend(_) => "backend",
            _ => "other",
        };
        Failure::new("StoreError", kind, message)
    }
}

impl From<RecoveryError> for Failure {
    fn from(e: RecoveryError) -> Failure {
        let message = e.to_string();
        let (kind, details) = match e {
            RecoveryError::NotAnOverflow { status } => {
                ("not_an_overflow", json!({"status": status}))
            }
            RecoveryError::AttemptsExhausted { attempts } => {
                ("attempts_exhausted", json!({"attempts": attempts}))
            }
            RecoveryError::NoProgress { tokens } => ("no_progress", json!({"tokens": tokens})),
            RecoveryError::Hopeless { floor, usable } => {
                ("hopeless", json!({"floor": floor, "usable": usable}))
            }
            _ => ("other", json!({})),
        };
        Failure::new("RecoveryError", kind, message).with(details)
    }
}

impl From<compact_config::ConfigError> for Failure {
    fn from(e: compact_config::ConfigError) -> Failure {
        Failure::new("ConfigError", "config", e.to_string())
    }
}
