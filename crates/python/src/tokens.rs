//! Token counting with the engine's counter: exact `o200k_base` / `cl100k_base`, or the calibrated
//! estimate for models whose tokenizer is not public; a model name picks its encoding from the
//! model registry.

use crate::errors::{raise, Failure};
use crate::messages::{messages_from_py, resolve_format, Parts, Request};
use compact_core::registry::ModelRegistry;
use compact_core::tokens::{Encoding, TokenCounter};
use pyo3::prelude::*;

/// The counter for `encoding` (a name) or `model` (looked up in the registry), `o200k_base` when
/// neither is given.
pub fn counter(encoding: Option<&str>, model: Option<&str>) -> Result<TokenCounter, Failure> {
    if let Some(name) = encoding {
        return name
            .parse::<Encoding>()
            .map(TokenCounter::new)
            .map_err(|e| Failure::input("bad_encoding", format!("encoding: {e}")));
    }
    if let Some(model) = model {
        return ModelRegistry::builtin()
            .lookup(model)
            .map(|m| m.counter())
            .ok_or_else(|| {
                Failure::input(
                    "unknown_model",
                    format!(
                        "model: {model:?} is not in the model registry; pass encoding= instead"
                    ),
                )
            });
    }
    Ok(TokenCounter::new(Encoding::O200kBase))
}

/// Tokens of `text`.
#[pyfunction]
#[pyo3(signature = (text, encoding=None, model=None))]
pub fn count_tokens(
    py: Python<'_>,
    text: &str,
    encoding: Option<&str>,
    model: Option<&str>,
) -> PyResult<usize> {
    let counter = raise(py, counter(encoding, model))?;
    Ok(py.detach(|| counter.count_text(text)))
}

/// Tokens of a request made of `messages` (with its system prompt and tools), framing included,
/// as preflight counts it.
#[pyfunction]
#[pyo3(signature = (messages, format=None, system=None, tools=None, encoding=None, model=None))]
pub fn count_messages(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    format: Option<&str>,
    system: Option<&Bound<'_, PyAny>>,
    tools: Option<&Bound<'_, PyAny>>,
    encoding: Option<&str>,
    model: Option<&str>,
) -> PyResult<usize> {
    let counter = raise(py, counter(encoding, model))?;
    let values = raise(py, messages_from_py(messages))?;
    let format = raise(py, resolve_format(format, &values))?;
    let parts = raise(py, Parts::from_py(system, tools, model))?;
    let request = Request::build(format, values, &parts);
    let total = py.detach(|| request.decode().map(|c| counter.total(&c)));
    raise(py, total)
}
