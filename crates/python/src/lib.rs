//! `compact._native`: the PyO3 extension module behind the Python package `compact` (built by
//! maturin as one stable-ABI wheel, `abi3-py310`).
//!
//! Glue only: it owns no compaction logic. A Python call is converted into the Rust types of the
//! session runtime ([`compact_session::CompactManager`]), decoded with the wire codecs of
//! `compact-formats`, run with the GIL released, and the result is encoded back into the caller's
//! wire shape. The Python package (`python/compact`) adds the seed 003 API on top: dataclasses for
//! the configuration, `Message`, exporters, and the Agents SDK and LangChain glue.
//!
//! - [`manager`] — `Manager`: preflight, manual compaction, usage, recovery, recall, history.
//! - [`convert`] — Python objects to JSON values and back, with the path of anything refused.
//! - [`messages`] — a message list (with its system prompt and tools) to a wire request and back.
//! - [`reuse`] — per session, the last call's converted messages and decoded items, reused for the
//!   unchanged leading messages of the next call.
//! - [`identity`] — the objects a message was converted from, to see by identity that it is
//!   unchanged.
//! - [`summarizer`] — a Python summariser (sync or async) behind the engine's `Summarizer`.
//! - [`errors`] — the exception hierarchy (`CompactError` and one subclass per error kind).
//! - [`tokens`] — token counting.

use pyo3::prelude::*;

pub mod config;
pub mod convert;
pub mod errors;
pub mod identity;
pub mod manager;
pub mod messages;
pub mod reuse;
pub mod summarizer;
pub mod tokens;

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<manager::Manager>()?;
    m.add_function(wrap_pyfunction!(tokens::count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(tokens::count_messages, m)?)?;
    m.add_function(wrap_pyfunction!(messages::detect_format, m)?)?;
    m.add_function(wrap_pyfunction!(messages::round_trip, m)?)?;
    m.add_function(wrap_pyfunction!(config::default_policy, m)?)?;
    m.add_function(wrap_pyfunction!(config::check_config, m)?)?;
    m.add_function(wrap_pyfunction!(config::templates, m)?)?;
    Ok(())
}
